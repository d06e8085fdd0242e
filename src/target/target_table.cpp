#include "target/target_table.h"

#include <fmt/format.h>

namespace wave {

using sym::IndexExpr;

namespace {
// Lane layouts of docs/hardware.md section 3, one small function per formula. `l` is the lane,
// `g` the element index in the lane's register vector.
IndexExpr lmod16(const IndexExpr &l, const IndexExpr &) { return mod(l, 16); }
IndexExpr lmod32(const IndexExpr &l, const IndexExpr &) { return mod(l, 32); }
IndexExpr k4x16(const IndexExpr &l, const IndexExpr &g) { return 4 * floorDiv(l, 16) + g; }
IndexExpr k4x32(const IndexExpr &l, const IndexExpr &g) { return 4 * floorDiv(l, 32) + g; }
IndexExpr k8x16(const IndexExpr &l, const IndexExpr &g) { return 8 * floorDiv(l, 16) + g; }
IndexExpr k8x32(const IndexExpr &l, const IndexExpr &g) { return 8 * floorDiv(l, 32) + g; }
IndexExpr k4f8(const IndexExpr &l, const IndexExpr &g) {
  return 16 * floorDiv(g, 4) + 4 * floorDiv(l, 16) + mod(g, 4);
}
// 32x32 accumulators: rows {0-3, 8-11, 16-19, 24-27} + 4*(l // 32).
IndexExpr acc32Row(const IndexExpr &l, const IndexExpr &g) {
  return 8 * floorDiv(g, 4) + 4 * floorDiv(l, 32) + mod(g, 4);
}
// RDNA3 WMMA: operands hold a whole row per lane (replicated across half-waves); C rows
// interleave between half-waves.
IndexExpr gOnly(const IndexExpr &, const IndexExpr &g) { return g; }
IndexExpr wmmaAccRow(const IndexExpr &l, const IndexExpr &g) { return 2 * g + floorDiv(l, 16); }
// NVIDIA mma.sync m16n8k16: grp = l // 4, tig = l % 4.
IndexExpr grp(const IndexExpr &l, const IndexExpr &) { return floorDiv(l, 4); }
IndexExpr syncARow(const IndexExpr &l, const IndexExpr &g) {
  return floorDiv(l, 4) + 8 * mod(floorDiv(g, 2), 2);
}
IndexExpr syncACol(const IndexExpr &l, const IndexExpr &g) {
  return 2 * mod(l, 4) + mod(g, 2) + 8 * floorDiv(g, 4);
}
IndexExpr syncBK16(const IndexExpr &l, const IndexExpr &g) {
  return 2 * mod(l, 4) + mod(g, 2) + 8 * floorDiv(g, 2);
}
IndexExpr syncCRow(const IndexExpr &l, const IndexExpr &g) { return floorDiv(l, 4) + 8 * floorDiv(g, 2); }
IndexExpr syncCCol(const IndexExpr &l, const IndexExpr &g) { return 2 * mod(l, 4) + mod(g, 2); }
IndexExpr syncBK8(const IndexExpr &l, const IndexExpr &g) { return 2 * mod(l, 4) + g; }
// ldmatrix addresses (docs/hardware.md 3.4): A 16x16 with .x4 (lanes 8j..8j+7 address matrix j:
// rows 0-7 / 8-15, cols 0 / 8), B 8x16 (N x K) with .x2 (rows 0-7, cols 0 / 8).
IndexExpr ldARow(const IndexExpr &l) { return mod(l, 16); }
IndexExpr ldACol(const IndexExpr &l) { return 8 * floorDiv(l, 16); }
IndexExpr ldBRow(const IndexExpr &l) { return mod(l, 8); }
IndexExpr ldBCol(const IndexExpr &l) { return 8 * mod(floorDiv(l, 8), 2); }
// .trans: the 8x8 matrices are stored K-major, each lane addressing one K index and 8 row
// elements. A: matrix j covers rows 8 (j % 2) .. + 7 and K 8 (j / 2) .. + 7; B: K 8 j .. + 7.
IndexExpr ldATRow(const IndexExpr &l) { return 8 * mod(floorDiv(l, 8), 2); }
IndexExpr ldATCol(const IndexExpr &l) { return mod(l, 8) + 8 * floorDiv(l, 16); }
IndexExpr ldBTRow(const IndexExpr &) { return IndexExpr(0); }
IndexExpr ldBTCol(const IndexExpr &l) { return mod(l, 16); }
// NVIDIA wgmma m64nNk16 (PTX ISA, "Register fragments and shared memory matrix layouts"): l is
// the thread of the warpgroup (0..127); warp l / 32 holds rows 16 (l / 32) .. + 15, laid out
// within the warp as mma.sync's m16n8k16 fragments. C: the 16 x 8 pattern repeated over the
// N / 8 column blocks (element g in block g / 4). A (the register form of the operand; wavec
// reads A from shared memory): m16n8k16's A with the warp's row offset. B has no register
// form: its nominal layout, N / 8 elements of column l % 16 each, only names which thread
// "holds" what for the distribution (the operand is read through a descriptor).
IndexExpr wgRow(const IndexExpr &l, const IndexExpr &g) {
  return 16 * floorDiv(l, 32) + floorDiv(mod(l, 32), 4) + 8 * mod(floorDiv(g, 2), 2);
}
IndexExpr wgCCol(const IndexExpr &l, const IndexExpr &g) {
  return 8 * floorDiv(g, 4) + 2 * mod(l, 4) + mod(g, 2);
}
IndexExpr wgBRow(const IndexExpr &l, const IndexExpr &g) { return floorDiv(l, 16) + 8 * g; }
// wgmma m64nNk32 on 8-bit floats (PTX ISA, the same section): A's register form holds 16 bytes
// per thread, m16n8k32's 8-bit A with the warp's row offset (rows as wgRow, in pairs of 4
// bytes; K 4 (l % 4) + g % 4 + 16 (g / 8)); B's nominal layout covers K 32: N / 4 elements,
// column l % 16 + 16 (g % 2) of row l / 16 + 8 (g / 2).
IndexExpr wgA8Row(const IndexExpr &l, const IndexExpr &g) {
  return 16 * floorDiv(l, 32) + floorDiv(mod(l, 32), 4) + 8 * mod(floorDiv(g, 4), 2);
}
IndexExpr wgA8Col(const IndexExpr &l, const IndexExpr &g) {
  return 4 * mod(l, 4) + mod(g, 4) + 16 * floorDiv(g, 8);
}
IndexExpr wgB8Row(const IndexExpr &l, const IndexExpr &g) {
  return floorDiv(l, 16) + 8 * floorDiv(g, 2);
}
IndexExpr wgB8Col(const IndexExpr &l, const IndexExpr &g) { return mod(l, 16) + 16 * mod(g, 2); }

using ST = ScalarType;
const std::vector<ST> kF16{ST::F16}, kBF16{ST::BF16}, kI8{ST::I8},
    kF8{ST::F8E4M3FNUZ, ST::F8E5M2FNUZ}, kE4M3{ST::F8E4M3FN}, kE5M2{ST::F8E5M2};

const LaneLayout kA16x4{4, lmod16, k4x16}, kA32x4{4, lmod32, k4x32}, kA16x8{8, lmod16, k8x16},
    kA32x8{8, lmod32, k8x32}, kA16K4F8{8, lmod16, k4f8};
const LaneLayout kC16{4, k4x16, lmod16}, kC32{16, acc32Row, lmod32};
const LaneLayout kWmmaAB{16, lmod16, gOnly}, kWmmaC{8, wmmaAccRow, lmod16};
const LaneLayout kSyncA16{8, syncARow, syncACol, 4, ldARow, ldACol, ldATRow, ldATCol},
    kSyncB16{4, grp, syncBK16, 2, ldBRow, ldBCol, ldBTRow, ldBTCol},
    kSyncC{4, syncCRow, syncCCol};
const LaneLayout kSyncA8{4, syncCRow, syncCCol}, kSyncB8{2, grp, syncBK8};
const LaneLayout kWgA{8, wgRow, syncACol}, kWgA8{16, wgA8Row, wgA8Col};

#define MFMA(NAME, M, N, K, IN, ACC, VIRT, A, C)                                               \
  MmaKind { NAME, MmaFamily::MFMA, M, N, K, IN, ACC, 64, VIRT, A, A, C }

const std::vector<MmaKind> kMmaKinds = {
    MFMA("F32_16x16x16_F16", 16, 16, 16, kF16, ST::F32, false, kA16x4, kC16),
    MFMA("F32_16x16x16_BF16", 16, 16, 16, kBF16, ST::F32, false, kA16x4, kC16),
    MFMA("F32_32x32x8_F16", 32, 32, 8, kF16, ST::F32, false, kA32x4, kC32),
    MFMA("F32_32x32x8_BF16", 32, 32, 8, kBF16, ST::F32, false, kA32x4, kC32),
    MFMA("F32_16x16x32_F8", 16, 16, 32, kF8, ST::F32, false, kA16x8, kC16),
    MFMA("F32_32x32x16_F8", 32, 32, 16, kF8, ST::F32, false, kA32x8, kC32),
    MFMA("I32_16x16x16_I8", 16, 16, 16, kI8, ST::I32, false, kA16x4, kC16),
    MFMA("I32_32x32x8_I8", 32, 32, 8, kI8, ST::I32, false, kA32x4, kC32),
    MFMA("I32_16x16x32_I8", 16, 16, 32, kI8, ST::I32, false, kA16x8, kC16),
    MFMA("I32_32x32x16_I8", 32, 32, 16, kI8, ST::I32, false, kA32x8, kC32),
    MFMA("F32_16x16x32_K8_F16", 16, 16, 32, kF16, ST::F32, true, kA16x8, kC16),
    MFMA("F32_32x32x16_K8_F16", 32, 32, 16, kF16, ST::F32, true, kA32x8, kC32),
    MFMA("F32_16x16x32_K4_F8", 16, 16, 32, kF8, ST::F32, true, kA16K4F8, kC16),
    {"F32_16x16x16_F16", MmaFamily::WMMA, 16, 16, 16, kF16, ST::F32, 32, false, kWmmaAB, kWmmaAB,
     kWmmaC},
    {"F32_16x16x16_BF16", MmaFamily::WMMA, 16, 16, 16, kBF16, ST::F32, 32, false, kWmmaAB,
     kWmmaAB, kWmmaC},
    {"F32_16x8x16_F16", MmaFamily::MmaSync, 16, 8, 16, kF16, ST::F32, 32, false, kSyncA16,
     kSyncB16, kSyncC},
    {"F32_16x8x16_BF16", MmaFamily::MmaSync, 16, 8, 16, kBF16, ST::F32, 32, false, kSyncA16,
     kSyncB16, kSyncC},
    {"F32_16x8x8_F16", MmaFamily::MmaSync, 16, 8, 8, kF16, ST::F32, 32, false, kSyncA8, kSyncB8,
     kSyncC},
#define WGMMA(NAME, N, IN)                                                                     \
  MmaKind {                                                                                    \
    NAME, MmaFamily::Wgmma, 64, N, 16, IN, ST::F32, 32, false, kWgA,                           \
        LaneLayout{N / 8, wgBRow, lmod16}, LaneLayout{N / 2, wgRow, wgCCol}, 4                 \
  }
    WGMMA("F32_64x256x16_F16", 256, kF16),
    WGMMA("F32_64x192x16_F16", 192, kF16),
    WGMMA("F32_64x128x16_F16", 128, kF16),
    WGMMA("F32_64x64x16_F16", 64, kF16),
    WGMMA("F32_64x32x16_F16", 32, kF16),
    WGMMA("F32_64x16x16_F16", 16, kF16),
    WGMMA("F32_64x8x16_F16", 8, kF16),
    WGMMA("F32_64x256x16_BF16", 256, kBF16),
    WGMMA("F32_64x192x16_BF16", 192, kBF16),
    WGMMA("F32_64x128x16_BF16", 128, kBF16),
    WGMMA("F32_64x64x16_BF16", 64, kBF16),
    WGMMA("F32_64x32x16_BF16", 32, kBF16),
    WGMMA("F32_64x16x16_BF16", 16, kBF16),
    WGMMA("F32_64x8x16_BF16", 8, kBF16),
#undef WGMMA
#define WGMMA8(NAME, N, IN)                                                                    \
  MmaKind {                                                                                    \
    NAME, MmaFamily::Wgmma, 64, N, 32, IN, ST::F32, 32, false, kWgA8,                          \
        LaneLayout{N / 4, wgB8Row, wgB8Col}, LaneLayout{N / 2, wgRow, wgCCol}, 4               \
  }
    WGMMA8("F32_64x256x32_E4M3", 256, kE4M3),
    WGMMA8("F32_64x192x32_E4M3", 192, kE4M3),
    WGMMA8("F32_64x128x32_E4M3", 128, kE4M3),
    WGMMA8("F32_64x64x32_E4M3", 64, kE4M3),
    WGMMA8("F32_64x32x32_E4M3", 32, kE4M3),
    WGMMA8("F32_64x16x32_E4M3", 16, kE4M3),
    WGMMA8("F32_64x8x32_E4M3", 8, kE4M3),
    WGMMA8("F32_64x256x32_E5M2", 256, kE5M2),
    WGMMA8("F32_64x192x32_E5M2", 192, kE5M2),
    WGMMA8("F32_64x128x32_E5M2", 128, kE5M2),
    WGMMA8("F32_64x64x32_E5M2", 64, kE5M2),
    WGMMA8("F32_64x32x32_E5M2", 32, kE5M2),
    WGMMA8("F32_64x16x32_E5M2", 16, kE5M2),
    WGMMA8("F32_64x8x32_E5M2", 8, kE5M2),
#undef WGMMA8
};
#undef MFMA

const std::vector<const char *> kCdnaCommon = {
    "F32_16x16x16_F16", "F32_16x16x16_BF16", "F32_32x32x8_F16", "F32_32x32x8_BF16",
    "F32_16x16x32_K8_F16", "F32_32x32x16_K8_F16"};

std::vector<const char *> concat(std::vector<const char *> a, std::vector<const char *> b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

const std::vector<const char *> kSync = {"F32_16x8x16_F16", "F32_16x8x16_BF16", "F32_16x8x8_F16"};
// Largest N first: `mma = auto` takes the first that divides the wave's N tile.
const std::vector<const char *> kWgmma = {
    "F32_64x256x16_F16",  "F32_64x192x16_F16",  "F32_64x128x16_F16",  "F32_64x64x16_F16",
    "F32_64x32x16_F16",   "F32_64x16x16_F16",   "F32_64x8x16_F16",    "F32_64x256x16_BF16",
    "F32_64x192x16_BF16", "F32_64x128x16_BF16", "F32_64x64x16_BF16",  "F32_64x32x16_BF16",
    "F32_64x16x16_BF16",  "F32_64x8x16_BF16",   "F32_64x256x32_E4M3", "F32_64x192x32_E4M3",
    "F32_64x128x32_E4M3", "F32_64x64x32_E4M3",  "F32_64x32x32_E4M3",  "F32_64x16x32_E4M3",
    "F32_64x8x32_E4M3",   "F32_64x256x32_E5M2", "F32_64x192x32_E5M2", "F32_64x128x32_E5M2",
    "F32_64x64x32_E5M2",  "F32_64x32x32_E5M2",  "F32_64x16x32_E5M2",  "F32_64x8x32_E5M2"};

// HIP: grid * block < 2^32 per axis; CUDA: x < 2^31, y and z <= 65535 (docs/hardware.md 1.8).
#define kAmdGrid {0xffffffffull, 0xffffffffull, 0xffffffffull}
#define kNvGrid {0x7fffffffull, 65535ull, 65535ull}
constexpr uint64_t kAmdGridThreads = 0xffffffffull;
// Buffer resource word 3: NUM_FORMAT 7 (bits 12-14), DATA_FORMAT 4 (bits 15-18); gfx10+ also
// bit 24 and OOB_SELECT 3 (bits 28-29). The same words MLIR's amdgpu-to-rocdl lowering uses.
constexpr uint32_t kGfx9Rsrc = (7u << 12) | (4u << 15);
constexpr uint32_t kGfx10Rsrc = kGfx9Rsrc | (1u << 24) | (3u << 28);

const std::vector<TargetInfo> kTargets = {
    {"gfx942", Vendor::AMD, "AMD CDNA3 (MI300)", {64}, 65536, 65536, 1024, MmaFamily::MFMA,
     concat(kCdnaCommon, {"F32_16x16x32_F8", "F32_32x32x16_F8", "F32_16x16x32_K4_F8",
                          "I32_16x16x32_I8", "I32_32x32x16_I8"}),
     "amdgcn-amd-amdhsa", "gfx942", "+wavefrontsize64", kAmdGrid, kAmdGridThreads, kGfx9Rsrc,
     false, false, 0, /*ldsDma=*/true},
    {"gfx90a", Vendor::AMD, "AMD CDNA2 (MI200)", {64}, 65536, 65536, 1024, MmaFamily::MFMA,
     concat(kCdnaCommon, {"I32_16x16x16_I8", "I32_32x32x8_I8"}), "amdgcn-amd-amdhsa", "gfx90a",
     "+wavefrontsize64", kAmdGrid, kAmdGridThreads, kGfx9Rsrc, false, false, 0, /*ldsDma=*/true},
    {"gfx1100", Vendor::AMD, "AMD RDNA3 (RX 7900)", {32, 64}, 65536, 65536, 1024, MmaFamily::WMMA,
     {"F32_16x16x16_F16", "F32_16x16x16_BF16"}, "amdgcn-amd-amdhsa", "gfx1100",
     "+wavefrontsize32", kAmdGrid, kAmdGridThreads, kGfx10Rsrc, true},
    {"sm_80", Vendor::NVIDIA, "NVIDIA Ampere (A100)", {32}, 49152, 166912, 1024,
     MmaFamily::MmaSync, kSync, "nvptx64-nvidia-cuda", "sm_80", "+ptx70", kNvGrid, 0},
    {"sm_90", Vendor::NVIDIA, "NVIDIA Hopper (H100)", {32}, 49152, 232448, 1024,
     MmaFamily::MmaSync, kSync, "nvptx64-nvidia-cuda", "sm_90", "+ptx78", kNvGrid, 0},
    {"sm_90a", Vendor::NVIDIA, "NVIDIA Hopper, arch-specific features (wgmma)", {32}, 49152,
     232448, 1024, MmaFamily::MmaSync, concat(kWgmma, kSync), "nvptx64-nvidia-cuda", "sm_90a",
     "+ptx80", kNvGrid, 0, 0, false, /*warpgroupMma=*/true, /*computeUnits=*/132},
};

#undef kAmdGrid
#undef kNvGrid

const char *familyName(MmaFamily f) {
  switch (f) {
  case MmaFamily::MFMA:
    return "MFMA";
  case MmaFamily::WMMA:
    return "WMMA";
  case MmaFamily::MmaSync:
    return "mma.sync";
  case MmaFamily::Wgmma:
    return "wgmma";
  }
  return "?";
}
} // namespace

const std::vector<TargetInfo> &allTargets() { return kTargets; }

const TargetInfo *findTarget(const std::string &name) {
  for (const auto &t : kTargets)
    if (name == t.name)
      return &t;
  return nullptr;
}

std::vector<std::string> targetNames() {
  std::vector<std::string> names;
  for (const auto &t : kTargets)
    names.push_back(t.name);
  return names;
}

const TargetInfo &defaultTarget() { return kTargets.front(); }

const std::vector<MmaKind> &allMmaKinds() { return kMmaKinds; }

const MmaKind *findMmaKind(const TargetInfo &t, const std::string &name) {
  bool offered = false;
  for (const char *k : t.mmaKinds)
    offered |= name == k;
  if (!offered)
    return nullptr;
  for (const auto &k : kMmaKinds)
    if ((k.family == t.mmaFamily || (t.warpgroupMma && k.family == MmaFamily::Wgmma)) &&
        name == k.name)
      return &k;
  return nullptr;
}

bool isMmaKindName(const std::string &name) {
  for (const auto &k : kMmaKinds)
    if (name == k.name)
      return true;
  return false;
}

std::vector<std::string> mmaKindNames() {
  std::vector<std::string> names;
  for (const auto &k : kMmaKinds)
    names.push_back(k.name);
  return names;
}

const MmaKind *pickMmaKind(const TargetInfo &t, ScalarType in, ScalarType acc,
                           const std::function<bool(const MmaKind &)> &groupFits) {
  for (const char *name : t.mmaKinds) {
    const MmaKind *k = findMmaKind(t, name);
    if (!k || k->isVirtual || k->acc != acc)
      continue;
    if (k->groupWaves > 1 && (!groupFits || !groupFits(*k)))
      continue;
    for (ScalarType s : k->inputs)
      if (s == in)
        return k;
  }
  return nullptr;
}

const MmaKind *wideMfmaKind(const TargetInfo &t, const MmaKind &k) {
  if (k.family != MmaFamily::MFMA || k.m != 16 || k.n != 16 || k.isVirtual || k.k % 2 != 0)
    return nullptr;
  for (const char *name : t.mmaKinds) {
    const MmaKind *w = findMmaKind(t, name);
    if (w && w->family == MmaFamily::MFMA && !w->isVirtual && w->m == 32 && w->n == 32 &&
        w->k * 2 == k.k && w->acc == k.acc && w->inputs == k.inputs &&
        w->waveSize == k.waveSize)
      return w;
  }
  return nullptr;
}

std::string availableKinds(const TargetInfo &t) {
  std::string out;
  for (const char *k : t.mmaKinds)
    out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
}

std::string describeTargets() {
  std::string out;
  for (const auto &t : kTargets) {
    std::string waves;
    for (unsigned w : t.waveSizes)
      waves += (waves.empty() ? "" : "/") + std::to_string(w);
    out += fmt::format("{:<8} {}\n", t.name, t.description);
    const std::string optIn = t.ldsOptInBytes > t.ldsBytes
                                  ? fmt::format(" ({} opt-in)", t.ldsOptInBytes)
                                  : std::string();
    out += fmt::format("         wave size {} (default {}), shared memory {} bytes{}, "
                       "max {} threads per workgroup\n",
                       waves, t.defaultWaveSize(), t.ldsBytes, optIn, t.maxThreadsPerBlock);
    out += fmt::format("         LLVM {} cpu {} {}\n", t.llvmTriple, t.llvmCpu, t.llvmFeatures);
    out += fmt::format("         matrix kinds ({}{}):\n", familyName(t.mmaFamily),
                       t.warpgroupMma ? std::string(", ") + familyName(MmaFamily::Wgmma) : "");
    for (const char *name : t.mmaKinds) {
      const MmaKind *k = findMmaKind(t, name);
      if (!k)
        continue;
      std::string ins;
      for (ScalarType s : k->inputs)
        ins += (ins.empty() ? "" : "|") + std::string(scalarTypeName(s));
      out += fmt::format("           {:<22} {}x{}x{}  {} -> {}{}{}\n", name, k->m, k->n, k->k, ins,
                         scalarTypeName(k->acc), k->isVirtual ? "  (virtual)" : "",
                         k->groupWaves > 1 ? fmt::format("  (a group of {} waves)", k->groupWaves)
                                           : "");
    }
  }
  return out;
}

} // namespace wave
