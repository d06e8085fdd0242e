// Unit tests of the CPU emulator (runtime/src/emu/): the matrix instructions against a plain
// matrix product on random data, lane exchanges, narrow-float conversions, atomics, the
// detectors (out-of-bounds global access with its .wave location, shared-memory races, reads of
// unwritten shared memory) and the image validator. Images are either hand-built here (a small
// assembler over emu_image.h) or compiled from samples/copy/copy.wave by wavec at build time.
#include "emu/emu.h"
#include "emu/numeric.h"
#include "wave/runtime.h"
#include "internal.h"

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cmath>
#include <functional>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace wave::emu;

namespace {

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

// ---- a tiny assembler for hand-made images -----------------------------------------------------

struct KernelBuilder {
  std::string name;
  uint32_t block[3] = {64, 1, 1};
  uint32_t shared = 0;
  uint32_t frame = 0;
  std::vector<std::array<uint32_t, 3>> args; // slot, offset, size
  std::vector<uint8_t> init;
  std::vector<Inst> code;
  std::vector<uint32_t> extra;

  uint32_t slot(uint32_t bytes) {
    uint32_t s = (frame + 7) & ~7u;
    frame = s + bytes;
    return s;
  }
  template <class T> uint32_t constant(T v) {
    uint32_t s = slot(sizeof(T));
    if (init.size() < s + sizeof(T))
      init.resize(s + sizeof(T));
    std::memcpy(&init[s], &v, sizeof(T));
    return s;
  }
  uint32_t arg(uint32_t offset, uint32_t size) {
    uint32_t s = slot(size);
    args.push_back({s, offset, size});
    return s;
  }
  size_t op(Op o, Type t, uint32_t lanes, uint32_t dst = 0, uint32_t a = 0, uint32_t b = 0,
            uint32_t c = 0, uint32_t imm = 0, uint8_t aux = 0) {
    code.push_back(makeInst(o, t, lanes, dst, a, b, c, imm, aux, 0));
    return code.size() - 1;
  }
  // dst (i64) = the thread's linear id in x (ZExt of the i32 special register).
  uint32_t tid64() {
    uint32_t t32 = slot(4), t64 = slot(8);
    op(Op::Special, Type::I32, 1, t32, 0, 0, 0, uint32_t(Special::TidX));
    op(Op::ZExt, Type::I64, 1, t64, t32, 0, 0, 0, uint8_t(Type::I32));
    return t64;
  }
};

void put32(std::string &o, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    o += char(v >> (8 * i));
}
void putStr(std::string &o, const std::string &s) {
  put32(o, uint32_t(s.size()));
  o += s;
}

// Recomputes the checksum of an image (after the test changed its content on purpose).
void seal(std::string &image) {
  uint64_t sum = imageChecksum(image.data() + kPayloadOffset, image.size() - kPayloadOffset);
  for (int i = 0; i < 8; ++i)
    image[kChecksumOffset + i] = char(sum >> (8 * i));
}

std::string assemble(const std::string &target, uint32_t wave,
                     const std::vector<KernelBuilder> &kernels) {
  std::string o(kImageMagic, 8);
  put32(o, kImageVersion);
  put32(o, 0); // checksum (seal)
  put32(o, 0);
  putStr(o, target);
  put32(o, wave);
  put32(o, 1);
  putStr(o, "handmade.wave");
  put32(o, uint32_t(kernels.size()));
  for (const auto &k : kernels) {
    putStr(o, k.name);
    for (uint32_t b : k.block)
      put32(o, b);
    put32(o, k.shared);
    put32(o, (k.frame + 7) & ~7u);
    put32(o, uint32_t(k.args.size()));
    for (const auto &a : k.args)
      for (uint32_t w : a)
        put32(o, w);
    put32(o, uint32_t(k.init.size()));
    o.append(k.init.begin(), k.init.end());
    put32(o, uint32_t(k.code.size()));
    o.append(reinterpret_cast<const char *>(k.code.data()), k.code.size() * sizeof(Inst));
    put32(o, uint32_t(k.extra.size()));
    for (uint32_t w : k.extra)
      put32(o, w);
    // Location 0 unknown, location 1 handmade.wave:7:3 (every instruction points at it).
    put32(o, 2);
    put32(o, kNoString);
    put32(o, 0);
    put32(o, 0);
    put32(o, 0);
    put32(o, 7);
    put32(o, 3);
  }
  seal(o);
  return o;
}

// Sets every instruction's location to 1 (handmade.wave:7:3).
void locate(KernelBuilder &k) {
  for (auto &i : k.code)
    i.loc = 1;
}

struct Device {
  wave_device_t dev = nullptr;
  explicit Device(const char *uri) { EXPECT_EQ(wave_device_open(uri, &dev), WAVE_SUCCESS) << wave_last_error(); }
  ~Device() { wave_device_close(dev); }
};

// Loads `image` on `uri`, launches `kernel` with the packed `args`; returns the status.
wave_status_t launch(wave_device_t dev, const std::string &image, const char *kernel,
                     uint32_t grid, uint32_t block, const std::vector<uint8_t> &args) {
  wave_module_t m = nullptr;
  if (wave_status_t s = wave_module_load_data(dev, image.data(), image.size(), &m))
    return s;
  wave_kernel_t k = nullptr;
  wave_status_t s = wave_module_get_kernel(m, kernel, &k);
  if (s == WAVE_SUCCESS) {
    uint32_t g[3] = {grid, 1, 1}, b[3] = {block, 1, 1};
    s = wave_launch(dev, nullptr, k, g, b, 0, args.data(), args.size());
  }
  wave_module_unload(m);
  return s;
}

template <class T> void pack(std::vector<uint8_t> &buf, size_t offset, T v) {
  if (buf.size() < offset + sizeof(T))
    buf.resize(offset + sizeof(T));
  std::memcpy(buf.data() + offset, &v, sizeof(T));
}

// ---- GEMM images under seeded bugs ------------------------------------------------------------
// The byte offset of kernel kc's code array inside `image` (found by its content), so that a
// test can patch instructions in a copy of the image.
size_t codeOffset(const std::string &image, const KernelCode &kc) {
  const std::string code(reinterpret_cast<const char *>(kc.code.data()),
                         kc.code.size() * sizeof(Inst));
  return image.find(code);
}

// Sets the immediate of instruction i of the code at `at` in `image`.
void patchImm(std::string &image, size_t at, size_t i, uint32_t imm) {
  std::memcpy(&image[at + i * sizeof(Inst) + offsetof(Inst, imm)], &imm, 4);
}

// C (M x N, f32) = A (M x K) * B (N x K)^T of 16-bit words on an emulator device: the buffers,
// the arguments a, b, c (plus what a test packs after them), runs of a kernel image with C
// poisoned first, and the check of C against the product of the operands' float values.
struct EmuGemm {
  Device d;
  int M, N, K;
  std::vector<float> af, bf;
  void *da = nullptr, *db = nullptr, *dc = nullptr;
  std::vector<uint8_t> args;
  EmuGemm(const char *uri, int m, int n, int k) : d(uri), M(m), N(n), K(k) {}
  ~EmuGemm() {
    for (void *p : {da, db, dc})
      if (p)
        wave_free(d.dev, p);
  }
  // Uploads A and B (their 16-bit words and float values).
  void init(const std::vector<uint16_t> &a, const std::vector<uint16_t> &b,
            std::vector<float> aValues, std::vector<float> bValues) {
    af = std::move(aValues);
    bf = std::move(bValues);
    ASSERT_EQ(wave_malloc(d.dev, a.size() * 2, &da), WAVE_SUCCESS);
    ASSERT_EQ(wave_malloc(d.dev, b.size() * 2, &db), WAVE_SUCCESS);
    ASSERT_EQ(wave_malloc(d.dev, size_t(M) * N * 4, &dc), WAVE_SUCCESS);
    ASSERT_EQ(wave_memcpy_htod(d.dev, da, a.data(), a.size() * 2), WAVE_SUCCESS);
    ASSERT_EQ(wave_memcpy_htod(d.dev, db, b.data(), b.size() * 2), WAVE_SUCCESS);
    pack(args, 0, da);
    pack(args, 8, db);
    pack(args, 16, dc);
  }
  wave_status_t run(const std::string &img, const KernelCode &kc, uint32_t gx, uint32_t gy) {
    if (wave_status_t s = wave_memset(d.dev, dc, 0xff, size_t(M) * N * 4))
      return s;
    wave_module_t m = nullptr;
    wave_status_t s = wave_module_load_data(d.dev, img.data(), img.size(), &m);
    if (s)
      return s;
    wave_kernel_t k = nullptr;
    s = wave_module_get_kernel(m, kc.name.c_str(), &k);
    uint32_t grid[3] = {gx, gy, 1};
    if (!s)
      s = wave_launch(d.dev, nullptr, k, grid, kc.block, 0, args.data(), args.size());
    std::string msg = wave_last_error();
    wave_module_unload(m);
    wave::rt::fail(s, msg);
    return s;
  }
  // C equals the product exactly (small integers: every sum is exact in f32).
  void expectExact() {
    std::vector<float> c(size_t(M) * N);
    ASSERT_EQ(wave_memcpy_dtoh(d.dev, c.data(), dc, c.size() * 4), WAVE_SUCCESS);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        float want = 0;
        for (int kk = 0; kk < K; ++kk)
          want += af[size_t(i) * K + kk] * bf[size_t(j) * K + kk];
        ASSERT_EQ(c[size_t(i) * N + j], want) << i << "," << j;
      }
  }
};

// Small integers as f16 words (and their values): A's pattern (i * 37 % 7 - 3) or B's
// (i * 11 % 5 - 2).
void smallHalfs(size_t n, int mul, int mod, int off, std::vector<uint16_t> &words,
                std::vector<float> &values) {
  words.resize(n);
  values.resize(n);
  for (size_t i = 0; i < n; ++i)
    words[i] = floatToHalf(values[i] = float(int(i * mul % mod) - off));
}

// ---- matrix instructions ---------------------------------------------------------------------

// The per-lane layouts written out again from docs/hardware.md section 3 (independently of
// matrix.cpp): element g of lane l of A is A[m][k], of B is B[k][n], of C/D is C[m][n].
struct TestLayout {
  uint32_t aElems, bElems, cElems;
  std::function<std::pair<int, int>(int, int)> a, b, c; // -> (row, col)
  int operandLanes;
};

TestLayout testLayout(Mma kind) {
  const MmaShape &s = mmaShape(kind);
  if (s.name[0] == 'm' && s.name[1] == 'f') { // MFMA
    int M = int(s.m), kp = int(s.k) * M / 64; // K elements spread over 64 / M lane groups
    int cElems = M == 16 ? 4 : 16;
    auto c = M == 16 ? std::function<std::pair<int, int>(int, int)>(
                           [](int l, int g) { return std::make_pair(4 * (l / 16) + g, l % 16); })
                     : [](int l, int g) {
                         return std::make_pair(8 * (g / 4) + 4 * (l / 32) + g % 4, l % 32);
                       };
    return {uint32_t(kp), uint32_t(kp), uint32_t(cElems),
            [=](int l, int g) { return std::make_pair(l % M, kp * (l / M) + g); },
            [=](int l, int g) { return std::make_pair(kp * (l / M) + g, l % M); }, c, 64};
  }
  if (s.name[0] == 'w') // WMMA gfx1100
    return {16, 16, 8, [](int l, int g) { return std::make_pair(l % 16, g); },
            [](int l, int g) { return std::make_pair(g, l % 16); },
            [](int l, int g) { return std::make_pair(2 * g + l / 16, l % 16); }, 32};
  auto cmap = [](int l, int i) { return std::make_pair(l / 4 + 8 * (i >> 1), 2 * (l % 4) + (i & 1)); };
  if (s.k == 16)
    return {8, 4, 4,
            [](int l, int i) {
              return std::make_pair(l / 4 + 8 * ((i >> 1) & 1), 2 * (l % 4) + (i & 1) + 8 * (i >> 2));
            },
            [](int l, int i) { return std::make_pair(2 * (l % 4) + (i & 1) + 8 * (i >> 1), l / 4); },
            cmap, 32};
  return {4, 2, 4, [](int l, int i) { return std::make_pair(l / 4 + 8 * (i >> 1), 2 * (l % 4) + (i & 1)); },
          [](int l, int i) { return std::make_pair(2 * (l % 4) + i, l / 4); }, cmap, 32};
}

enum class In { F16, BF16, Fp8, Bf8, I8 };
In inputOf(Mma kind) {
  switch (kind) {
  case Mma::Mfma16x16x16BF16: case Mma::Mfma32x32x8BF16: case Mma::Wmma16x16x16BF16:
  case Mma::Mma16x8x16BF16:
    return In::BF16;
  case Mma::Mfma16x16x32Fp8: case Mma::Mfma32x32x16Fp8:
    return In::Fp8;
  case Mma::Mfma16x16x32Bf8: case Mma::Mfma32x32x16Bf8:
    return In::Bf8;
  case Mma::Mfma16x16x16I8: case Mma::Mfma32x32x8I8: case Mma::Mfma16x16x32I8:
  case Mma::Mfma32x32x16I8:
    return In::I8;
  default:
    return In::F16;
  }
}

class MatrixTest : public ::testing::TestWithParam<int> {};

TEST_P(MatrixTest, MatchesAPlainProductOnRandomData) {
  const Mma kind = Mma(GetParam());
  const MmaShape &s = mmaShape(kind);
  const TestLayout L = testLayout(kind);
  const In in = inputOf(kind);
  const bool intAcc = in == In::I8;
  const size_t esize = in == In::F16 || in == In::BF16 ? 2 : 1;
  std::mt19937 rng(1234 + GetParam());
  std::uniform_int_distribution<int> small(-8, 8);
  const int M = int(s.m), N = int(s.n), K = int(s.k);
  // Random exactly representable inputs (small integers / 8, or small integers for i8).
  std::vector<double> A(M * K), B(K * N), C(M * N);
  std::vector<uint8_t> aBits(M * K * esize), bBits(K * N * esize);
  auto encode = [&](double v, uint8_t *out) {
    if (in == In::F16) {
      uint16_t h = floatToHalf(float(v));
      std::memcpy(out, &h, 2);
    } else if (in == In::BF16) {
      uint16_t h = floatToBf16(float(v));
      std::memcpy(out, &h, 2);
    } else if (in == In::Fp8 || in == In::Bf8) {
      *out = floatToFp8(float(v), in == In::Bf8);
    } else {
      *out = uint8_t(int8_t(v));
    }
  };
  for (int i = 0; i < M * K; ++i) {
    A[i] = intAcc ? small(rng) * 15 : small(rng) / 8.0;
    encode(A[i], &aBits[i * esize]);
  }
  for (int i = 0; i < K * N; ++i) {
    B[i] = intAcc ? small(rng) * 15 : small(rng) / 8.0;
    encode(B[i], &bBits[i * esize]);
  }
  for (auto &c : C)
    c = small(rng) * 3;
  // Distribute to lanes.
  const uint32_t W = s.waveSize;
  std::vector<std::vector<uint8_t>> la(W, std::vector<uint8_t>(s.aBytes)),
      lb(W, std::vector<uint8_t>(s.bBytes)), lc(W, std::vector<uint8_t>(s.cBytes)),
      ld(W, std::vector<uint8_t>(s.cBytes, 0xcd));
  for (uint32_t l = 0; l < W; ++l) {
    for (uint32_t g = 0; g < L.aElems; ++g) {
      auto [m, k] = L.a(int(l), int(g));
      std::memcpy(&la[l][g * esize], &aBits[(m * K + k) * esize], esize);
    }
    for (uint32_t g = 0; g < L.bElems; ++g) {
      auto [k, n] = L.b(int(l), int(g));
      std::memcpy(&lb[l][g * esize], &bBits[(k * N + n) * esize], esize);
    }
    for (uint32_t g = 0; g < L.cElems; ++g) {
      auto [m, n] = L.c(int(l), int(g));
      if (intAcc) {
        int32_t v = int32_t(C[m * N + n]);
        std::memcpy(&lc[l][4 * g], &v, 4);
      } else {
        float v = float(C[m * N + n]);
        std::memcpy(&lc[l][4 * g], &v, 4);
      }
    }
  }
  std::vector<const uint8_t *> pa(W), pb(W), pc(W);
  std::vector<uint8_t *> pd(W);
  for (uint32_t l = 0; l < W; ++l) {
    pa[l] = la[l].data();
    pb[l] = lb[l].data();
    pc[l] = lc[l].data();
    pd[l] = ld[l].data();
  }
  executeMma(kind, W, pa.data(), pb.data(), pc.data(), pd.data());
  int checked = 0;
  for (uint32_t l = 0; l < W; ++l)
    for (uint32_t g = 0; g < L.cElems; ++g) {
      auto [m, n] = L.c(int(l), int(g));
      double want = C[m * N + n];
      for (int k = 0; k < K; ++k)
        want += A[m * K + k] * B[k * N + n];
      double got;
      if (intAcc) {
        int32_t v;
        std::memcpy(&v, &ld[l][4 * g], 4);
        got = v;
      } else {
        float v;
        std::memcpy(&v, &ld[l][4 * g], 4);
        got = v;
      }
      ASSERT_NEAR(got, want, 1e-3) << s.name << " lane " << l << " element " << g << " (m " << m
                                   << ", n " << n << ")";
      ++checked;
    }
  EXPECT_EQ(checked, int(W * L.cElems));
}

INSTANTIATE_TEST_SUITE_P(AllKinds, MatrixTest, ::testing::Range(0, int(Mma::Count)),
                         [](const ::testing::TestParamInfo<int> &info) {
                           std::string n = mmaShape(Mma(info.param)).name;
                           for (char &c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c)))
                               c = '_';
                           return n;
                         });

// ---- lane exchanges -----------------------------------------------------------------------------

TEST(EmuShuffle, ShflSyncFollowsThePtxRules) {
  bool in = false;
  for (uint32_t l = 0; l < 32; ++l) {
    // Full-warp butterfly, down, up and idx (c = 0x1f for all but up, which takes c = 0).
    EXPECT_EQ(shflSource(WaveOp::ShflBfly, l, 5, 0x1f, &in), l ^ 5);
    EXPECT_TRUE(in);
    uint32_t down = shflSource(WaveOp::ShflDown, l, 3, 0x1f, &in);
    EXPECT_EQ(in, l + 3 < 32);
    EXPECT_EQ(down, l + 3 < 32 ? l + 3 : l);
    uint32_t up = shflSource(WaveOp::ShflUp, l, 4, 0, &in);
    EXPECT_EQ(in, l >= 4);
    EXPECT_EQ(up, l >= 4 ? l - 4 : l);
    EXPECT_EQ(shflSource(WaveOp::ShflIdx, l, 9, 0x1f, &in), 9u);
    // Width 8: c = ((32 - 8) << 8) | 0x1f; idx 3 reads lane 3 of the lane's own segment.
    EXPECT_EQ(shflSource(WaveOp::ShflIdx, l, 3, (24u << 8) | 0x1f, &in), (l & ~7u) | 3u);
    uint32_t d8 = shflSource(WaveOp::ShflDown, l, 2, (24u << 8) | 0x1f, &in);
    EXPECT_EQ(d8, (l % 8) + 2 < 8 ? l + 2 : l);
  }
}

// Lane exchanges through whole images: ds_bpermute (gfx942, wave64, two waves per block) and
// shfl.sync.bfly (sm_90).
TEST(EmuShuffle, BpermuteAndShflInImages) {
  for (bool nvidia : {false, true}) {
    KernelBuilder k;
    k.name = "xchg";
    k.block[0] = 128;
    uint32_t out = k.arg(0, 8);
    uint32_t t32 = k.slot(4), t64 = k.slot(8), lane = k.slot(4), data = k.slot(4),
             res = k.slot(8), addr = k.slot(4), p = k.slot(8);
    k.op(Op::Special, Type::I32, 1, t32, 0, 0, 0, uint32_t(Special::TidX));
    k.op(Op::ZExt, Type::I64, 1, t64, t32, 0, 0, 0, uint8_t(Type::I32));
    k.op(Op::Mul, Type::I32, 1, data, t32, k.constant<uint32_t>(10));
    if (!nvidia) {
      // addr = (63 - lane) * 4 where lane = tid % 64
      k.op(Op::And, Type::I32, 1, lane, t32, k.constant<uint32_t>(63));
      k.op(Op::Sub, Type::I32, 1, addr, k.constant<uint32_t>(63), lane);
      k.op(Op::Shl, Type::I32, 1, addr, addr, k.constant<uint32_t>(2));
      k.op(Op::Wave, Type::I32, 1, res, addr, data, 0, 0, uint8_t(WaveOp::Bpermute));
    } else {
      k.op(Op::Wave, Type::I32, 1, res, data, k.constant<uint32_t>(6), k.constant<uint32_t>(0x1f),
           0, uint8_t(WaveOp::ShflBfly));
    }
    k.op(Op::PtrAdd, Type::Ptr, 1, p, out, t64, 0, 4);
    k.op(Op::Store, Type::I32, 1, 0, p, res, 0, uint32_t(Space::Global));
    k.op(Op::Ret, Type::I8, 1);
    std::string image = assemble(nvidia ? "sm_90" : "gfx942", nvidia ? 32 : 64, {k});
    Device d(nvidia ? "emu:sm_90" : "emu:gfx942");
    void *buf = nullptr;
    ASSERT_EQ(wave_malloc(d.dev, 128 * 4, &buf), WAVE_SUCCESS);
    std::vector<uint8_t> args;
    pack(args, 0, buf);
    ASSERT_EQ(launch(d.dev, image, "xchg", 1, 128, args), WAVE_SUCCESS) << wave_last_error();
    std::vector<uint32_t> got(128);
    ASSERT_EQ(wave_memcpy_dtoh(d.dev, got.data(), buf, 128 * 4), WAVE_SUCCESS);
    for (uint32_t t = 0; t < 128; ++t) {
      uint32_t src = nvidia ? t ^ 6 : (t & ~63u) + (63 - t % 64);
      EXPECT_EQ(got[t], src * 10) << (nvidia ? "shfl" : "bpermute") << " thread " << t;
    }
    wave_free(d.dev, buf);
  }
}

// ---- conversions --------------------------------------------------------------------------------

TEST(EmuNumeric, HalfAndBf16RoundTripAndRoundToNearestEven) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    float f = halfToFloat(uint16_t(bits));
    if (!std::isnan(f)) {
      ASSERT_EQ(floatToHalf(f), bits) << std::hex << bits;
    }
    float b = bf16ToFloat(uint16_t(bits));
    if (!std::isnan(b)) {
      ASSERT_EQ(floatToBf16(b), bits) << std::hex << bits;
    }
  }
  // Ties go to even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10.
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00); // rounds up to infinity
  EXPECT_EQ(floatToHalf(65519.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000); // tie below the smallest subnormal
  EXPECT_EQ(floatToHalf(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(floatToBf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(floatToBf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
}

TEST(EmuNumeric, Fp8FnuzRoundTripAndLimits) {
  for (bool e5m2 : {false, true})
    for (uint32_t b = 0; b < 256; ++b) {
      float f = fp8ToFloat(uint8_t(b), e5m2);
      if (b == 0x80) {
        EXPECT_TRUE(std::isnan(f));
        continue;
      }
      EXPECT_EQ(floatToFp8(f, e5m2), b) << e5m2 << " " << b << " " << f;
    }
  EXPECT_EQ(fp8ToFloat(0x7f, false), 240.0f);
  EXPECT_EQ(fp8ToFloat(0x7f, true), 57344.0f);
  EXPECT_EQ(floatToFp8(1000.0f, false), 0x80); // no infinity: out of range is NaN
  EXPECT_EQ(floatToFp8(-0.0f, false), 0x00);   // no negative zero
  EXPECT_EQ(floatToFp8(1.0625f, false), floatToFp8(1.0f, false)); // tie to even (1.0)
  EXPECT_EQ(floatToFp8(1.1875f, false), floatToFp8(1.25f, false)); // tie to even (1.25)
}

// ---- atomics ------------------------------------------------------------------------------------

TEST(EmuAtomics, GlobalAndSharedIntAndFloat) {
  KernelBuilder k;
  k.name = "atomics";
  k.block[0] = 256;
  k.shared = 16;
  uint32_t counter = k.arg(0, 8), fsum = k.arg(8, 8), maxOut = k.arg(16, 8), sharedOut = k.arg(24, 8);
  uint32_t t64 = k.tid64();
  uint32_t old = k.slot(8), isZero = k.slot(1), sh = k.constant<uint64_t>(0), v = k.slot(4);
  k.op(Op::AtomicRmw, Type::I32, 1, old, counter, k.constant<uint32_t>(1), 0,
       uint32_t(Space::Global), uint8_t(Rmw::Add));
  k.op(Op::AtomicRmw, Type::F32, 1, old, fsum, k.constant<float>(0.5f), 0,
       uint32_t(Space::Global), uint8_t(Rmw::FAdd));
  k.op(Op::AtomicRmw, Type::I64, 1, old, maxOut, t64, 0, uint32_t(Space::Global),
       uint8_t(Rmw::Max));
  // Shared: thread 0 zeroes, barrier, everyone adds 2, barrier, thread 0 publishes.
  k.op(Op::ICmp, Type::I1, 1, isZero, t64, k.constant<uint64_t>(0), 0, 32, uint8_t(Type::I64));
  size_t br1 = k.op(Op::CondBr, Type::I8, 1, 0, isZero);
  size_t zero = k.op(Op::Store, Type::I32, 1, 0, sh, k.constant<uint32_t>(0), 0, uint32_t(Space::Shared));
  size_t join1 = k.op(Op::Barrier, Type::I8, 1);
  k.code[br1].b = uint32_t(zero);
  k.code[br1].c = uint32_t(join1);
  k.op(Op::AtomicRmw, Type::I32, 1, old, sh, k.constant<uint32_t>(2), 0, uint32_t(Space::Shared),
       uint8_t(Rmw::Add));
  k.op(Op::Barrier, Type::I8, 1);
  size_t br2 = k.op(Op::CondBr, Type::I8, 1, 0, isZero);
  size_t pub = k.op(Op::Load, Type::I32, 1, v, sh, 0, 0, uint32_t(Space::Shared));
  k.op(Op::Store, Type::I32, 1, 0, sharedOut, v, 0, uint32_t(Space::Global));
  size_t end = k.op(Op::Ret, Type::I8, 1);
  k.code[br2].b = uint32_t(pub);
  k.code[br2].c = uint32_t(end);
  std::string image = assemble("gfx942", 64, {k});
  Device d("emu:gfx942");
  void *buf = nullptr;
  ASSERT_EQ(wave_malloc(d.dev, 64, &buf), WAVE_SUCCESS);
  ASSERT_EQ(wave_memset(d.dev, buf, 0, 64), WAVE_SUCCESS);
  char *base = static_cast<char *>(buf);
  std::vector<uint8_t> args;
  pack(args, 0, base);
  pack(args, 8, base + 8);
  pack(args, 16, base + 16);
  pack(args, 24, base + 24);
  ASSERT_EQ(launch(d.dev, image, "atomics", 10, 256, args), WAVE_SUCCESS) << wave_last_error();
  uint8_t host[64];
  ASSERT_EQ(wave_memcpy_dtoh(d.dev, host, buf, 64), WAVE_SUCCESS);
  uint32_t count;
  float sum;
  int64_t max;
  uint32_t sharedSum;
  std::memcpy(&count, host, 4);
  std::memcpy(&sum, host + 8, 4);
  std::memcpy(&max, host + 16, 8);
  std::memcpy(&sharedSum, host + 24, 4);
  EXPECT_EQ(count, 2560u);
  EXPECT_EQ(sum, 1280.0f);
  EXPECT_EQ(max, 255);
  EXPECT_EQ(sharedSum, 512u);
  wave_free(d.dev, buf);
}

// Atomics race only with plain accesses: every thread of a workgroup adds to one shared word
// (clean); a plain load of it in the same barrier epoch after the atomics, or by thread 0
// before the other threads' atomics, is a race.
TEST(EmuAtomics, SharedAtomicsRaceOnlyWithPlainAccesses) {
  for (int plain : {0, 1, 2}) { // none, a load after the atomic, a load before it
    KernelBuilder k;
    k.name = "mixed";
    k.shared = 16;
    uint32_t sh = k.constant<uint64_t>(0), old = k.slot(4), v = k.slot(4), isZero = k.slot(1);
    // Thread 0 zeroes the word, then a barrier.
    k.op(Op::ICmp, Type::I1, 1, isZero, k.tid64(), k.constant<uint64_t>(0), 0, 32,
         uint8_t(Type::I64));
    size_t br = k.op(Op::CondBr, Type::I8, 1, 0, isZero);
    size_t zero =
        k.op(Op::Store, Type::I32, 1, 0, sh, k.constant<uint32_t>(0), 0, uint32_t(Space::Shared));
    size_t join = k.op(Op::Barrier, Type::I8, 1);
    k.code[br].b = uint32_t(zero);
    k.code[br].c = uint32_t(join);
    if (plain == 2) { // thread 0 loads, the others add
      size_t br2 = k.op(Op::CondBr, Type::I8, 1, 0, isZero);
      size_t load = k.op(Op::Load, Type::I32, 1, v, sh, 0, 0, uint32_t(Space::Shared));
      k.op(Op::Ret, Type::I8, 1);
      k.code[br2].b = uint32_t(load);
      k.code[br2].c = uint32_t(load + 2);
    }
    k.op(Op::AtomicRmw, Type::I32, 1, old, sh, k.constant<uint32_t>(1), 0,
         uint32_t(Space::Shared), uint8_t(Rmw::Add));
    if (plain == 1)
      k.op(Op::Load, Type::I32, 1, v, sh, 0, 0, uint32_t(Space::Shared));
    k.op(Op::Ret, Type::I8, 1);
    locate(k);
    Device d("emu");
    wave_status_t s = launch(d.dev, assemble("gfx942", 64, {k}), "mixed", 2, 64, {});
    std::string msg = wave_last_error();
    if (plain == 0) {
      EXPECT_EQ(s, WAVE_SUCCESS) << msg;
      continue;
    }
    EXPECT_EQ(s, WAVE_ERROR_LAUNCH) << plain;
    EXPECT_TRUE(contains(msg, "shared-memory race on a")) << msg;
    EXPECT_TRUE(contains(msg, plain == 1 ? "was written by atomic operations"
                                         : "race on a atomic at handmade.wave:7:3 in workgroup "
                                           "(0,0,0) thread (1,0,0): byte 0 was read by thread "
                                           "(0,0,0)"))
        << msg;
  }
}

// ---- detectors ----------------------------------------------------------------------------------

// Every thread stores to the same shared word: a write-write race between threads 0 and 1.
TEST(EmuDetectors, SharedRaceIsReportedWithLocationWorkgroupAndThread) {
  KernelBuilder k;
  k.name = "racy";
  k.shared = 64;
  k.op(Op::Store, Type::I32, 1, 0, k.constant<uint64_t>(8), k.constant<uint32_t>(7), 0,
       uint32_t(Space::Shared));
  k.op(Op::Ret, Type::I8, 1);
  locate(k);
  Device d("emu");
  wave_status_t s = launch(d.dev, assemble("gfx942", 64, {k}), "racy", 3, 64, {});
  std::string msg = wave_last_error();
  EXPECT_EQ(s, WAVE_ERROR_LAUNCH);
  EXPECT_TRUE(contains(msg, "racy: shared-memory race on a store at handmade.wave:7:3 in "
                            "workgroup (0,0,0) thread (1,0,0)"))
      << msg;
  EXPECT_TRUE(contains(msg, "written by thread (0,0,0) with no barrier in between")) << msg;
}

// The same exchange with a barrier between the writes and the reads is clean; without it, it is
// a race (a read of another thread's write in the same barrier epoch).
TEST(EmuDetectors, BarrierSeparatesWritesFromReads) {
  for (bool withBarrier : {true, false}) {
    KernelBuilder k;
    k.name = "exchange";
    k.shared = 256;
    uint32_t out = k.arg(0, 8);
    uint32_t t64 = k.tid64();
    uint32_t mine = k.slot(8), next = k.slot(8), theirs = k.slot(8), v = k.slot(4), p = k.slot(8);
    uint32_t t32 = k.slot(4);
    k.op(Op::TruncI, Type::I32, 1, t32, t64, 0, 0, 0, uint8_t(Type::I64));
    k.op(Op::PtrAdd, Type::Ptr, 1, mine, k.constant<uint64_t>(0), t64, 0, 4);
    k.op(Op::Store, Type::I32, 1, 0, mine, t32, 0, uint32_t(Space::Shared));
    if (withBarrier)
      k.op(Op::Barrier, Type::I8, 1);
    k.op(Op::Add, Type::I64, 1, next, t64, k.constant<uint64_t>(1));
    k.op(Op::URem, Type::I64, 1, next, next, k.constant<uint64_t>(64));
    k.op(Op::PtrAdd, Type::Ptr, 1, theirs, k.constant<uint64_t>(0), next, 0, 4);
    k.op(Op::Load, Type::I32, 1, v, theirs, 0, 0, uint32_t(Space::Shared));
    k.op(Op::PtrAdd, Type::Ptr, 1, p, out, t64, 0, 4);
    k.op(Op::Store, Type::I32, 1, 0, p, v, 0, uint32_t(Space::Global));
    k.op(Op::Ret, Type::I8, 1);
    locate(k);
    Device d("emu");
    void *buf = nullptr;
    ASSERT_EQ(wave_malloc(d.dev, 256, &buf), WAVE_SUCCESS);
    std::vector<uint8_t> args;
    pack(args, 0, buf);
    wave_status_t s = launch(d.dev, assemble("gfx942", 64, {k}), "exchange", 1, 64, args);
    if (withBarrier) {
      ASSERT_EQ(s, WAVE_SUCCESS) << wave_last_error();
      std::vector<uint32_t> got(64);
      ASSERT_EQ(wave_memcpy_dtoh(d.dev, got.data(), buf, 256), WAVE_SUCCESS);
      for (uint32_t t = 0; t < 64; ++t)
        EXPECT_EQ(got[t], (t + 1) % 64);
    } else {
      EXPECT_EQ(s, WAVE_ERROR_LAUNCH);
      // Thread 0 reads thread 1's word before thread 1 writes it: thread 1's write is the race.
      EXPECT_TRUE(contains(wave_last_error(), "exchange: shared-memory race on a store at "
                                              "handmade.wave:7:3 in workgroup (0,0,0) thread "
                                              "(1,0,0): byte 4 was read by thread (0,0,0)"))
          << wave_last_error();
    }
    wave_free(d.dev, buf);
  }
}

TEST(EmuDetectors, ReadOfUnwrittenSharedMemory) {
  KernelBuilder k;
  k.name = "uninit";
  k.block[0] = 32;
  k.shared = 64;
  uint32_t v = k.slot(4);
  k.op(Op::Load, Type::I32, 1, v, k.constant<uint64_t>(12), 0, 0, uint32_t(Space::Shared));
  k.op(Op::Ret, Type::I8, 1);
  locate(k);
  Device d("emu:sm_90");
  EXPECT_EQ(launch(d.dev, assemble("sm_90", 32, {k}), "uninit", 1, 32, {}), WAVE_ERROR_LAUNCH);
  std::string msg = wave_last_error();
  EXPECT_TRUE(contains(msg, "uninit: read of uninitialized shared memory by a load at "
                            "handmade.wave:7:3 in workgroup (0,0,0) thread (0,0,0): byte 12 was "
                            "never written in this workgroup"))
      << msg;
}

TEST(EmuDetectors, SharedOutOfBounds) {
  KernelBuilder k;
  k.name = "sharedoob";
  k.shared = 64;
  k.op(Op::Store, Type::I32, 1, 0, k.constant<uint64_t>(62), k.constant<uint32_t>(1), 0,
       uint32_t(Space::Shared));
  k.op(Op::Ret, Type::I8, 1);
  Device d("emu");
  EXPECT_EQ(launch(d.dev, assemble("gfx942", 64, {k}), "sharedoob", 1, 64, {}), WAVE_ERROR_LAUNCH);
  EXPECT_TRUE(contains(wave_last_error(), "out-of-bounds shared store of 4 bytes")) << wave_last_error();
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// samples/copy compiled by wavec (--emit=emu) and launched with an output buffer 4 elements too
// short: the store that leaves the allocation is reported with copy.wave's location.
TEST(EmuDetectors, OutOfBoundsGlobalStoreOfACompiledKernel) {
  for (const char *target : {"gfx942", "sm_90"}) {
    std::string image = readFile(std::string(EMU_TEST_IMAGES) + "/copy_" + target + ".wemu");
    ASSERT_FALSE(image.empty()) << target;
    Device d((std::string("emu:") + target).c_str());
    const int64_t M = 20, N = 300; // 2 x 2 workgroups of 16 x 256
    void *a = nullptr, *b = nullptr;
    ASSERT_EQ(wave_malloc(d.dev, M * N * 2, &a), WAVE_SUCCESS);
    ASSERT_EQ(wave_malloc(d.dev, M * N * 2 - 8, &b), WAVE_SUCCESS);
    std::vector<uint8_t> args;
    pack(args, 0, a);
    pack(args, 8, b);
    pack(args, 16, M);
    pack(args, 24, N);
    wave_module_t m = nullptr;
    ASSERT_EQ(wave_module_load_data(d.dev, image.data(), image.size(), &m), WAVE_SUCCESS)
        << wave_last_error();
    wave_kernel_t k = nullptr;
    ASSERT_EQ(wave_module_get_kernel(m, "copy", &k), WAVE_SUCCESS);
    uint32_t block = std::string(target) == "gfx942" ? 64 : 32;
    uint32_t grid[3] = {2, 2, 1}, blk[3] = {block, 1, 1};
    EXPECT_EQ(wave_launch(d.dev, nullptr, k, grid, blk, 0, args.data(), args.size()),
              WAVE_ERROR_LAUNCH);
    std::string msg = wave_last_error();
    EXPECT_TRUE(contains(msg, "copy: out-of-bounds global store of ")) << msg;
    EXPECT_TRUE(contains(msg, " at copy.wave:12:3 in workgroup (1,1,0) thread (")) << msg;
    EXPECT_TRUE(contains(msg, "past the end of a 11992-byte allocation")) << msg;
    // With room for every element the same launch is clean and copies exactly.
    void *b2 = nullptr;
    ASSERT_EQ(wave_malloc(d.dev, M * N * 2, &b2), WAVE_SUCCESS);
    std::vector<uint16_t> in(M * N), out(M * N);
    for (size_t i = 0; i < in.size(); ++i)
      in[i] = uint16_t(i * 2654435761u >> 16);
    ASSERT_EQ(wave_memcpy_htod(d.dev, a, in.data(), M * N * 2), WAVE_SUCCESS);
    ASSERT_EQ(wave_memset(d.dev, b2, 0xff, M * N * 2), WAVE_SUCCESS);
    pack(args, 8, b2);
    ASSERT_EQ(wave_launch(d.dev, nullptr, k, grid, blk, 0, args.data(), args.size()), WAVE_SUCCESS)
        << wave_last_error();
    ASSERT_EQ(wave_memcpy_dtoh(d.dev, out.data(), b2, M * N * 2), WAVE_SUCCESS);
    EXPECT_EQ(in, out);
    wave_module_unload(m);
    wave_free(d.dev, a);
    wave_free(d.dev, b);
    wave_free(d.dev, b2);
  }
}

// ---- AMD raw buffer accesses --------------------------------------------------------------------

// A kernel of `threads` threads: thread t moves `bytes` (as I32 x bytes/4, or one I16 for 2)
// between a buffer (descriptor = argument bytes 0-15, voffset = arg 24 + t * bytes, soffset =
// arg 28) and plain global memory at arg 16 + t * bytes: loads when `store` is false.
KernelBuilder bufferKernel(bool store, uint32_t bytes, uint8_t rules) {
  KernelBuilder k;
  k.name = store ? "bufstore" : "bufload";
  k.block[0] = 8;
  // The descriptor: one 16-byte slot filled by two 8-byte arguments.
  uint32_t rsrc = k.slot(16);
  k.args.push_back({rsrc, 0, 8});
  k.args.push_back({rsrc + 8, 8, 8});
  uint32_t ptr = k.arg(16, 8), voff0 = k.arg(24, 4), soff = k.arg(28, 4);
  uint32_t t64 = k.tid64(), t32 = k.slot(4), step = k.slot(4), voff = k.slot(4), at = k.slot(8),
           data = k.slot(8);
  k.op(Op::TruncI, Type::I32, 1, t32, t64, 0, 0, 0, uint8_t(Type::I64));
  k.op(Op::Mul, Type::I32, 1, step, t32, k.constant<uint32_t>(bytes));
  k.op(Op::Add, Type::I32, 1, voff, voff0, step);
  k.op(Op::PtrAdd, Type::Ptr, 1, at, ptr, t64, 0, bytes);
  const Type type = bytes == 2 ? Type::I16 : Type::I32;
  const uint32_t lanes = bytes == 2 ? 1 : bytes / 4;
  if (store) {
    k.op(Op::Load, type, lanes, data, at, 0, 0, uint32_t(Space::Global));
    k.op(Op::BufferStore, type, lanes, soff, rsrc, data, voff, 0, rules);
  } else {
    k.op(Op::BufferLoad, type, lanes, data, rsrc, voff, soff, 0, rules);
    k.op(Op::Store, type, lanes, 0, at, data, 0, uint32_t(Space::Global));
  }
  k.op(Op::Ret, Type::I8, 1);
  locate(k);
  return k;
}

struct BufferCase {
  const char *target;
  uint8_t rules;
  uint32_t bytes;
};

// Runs one buffer kernel over `mem` (the buffer's bytes, initially 1, 2, 3, ...) and `plain`
// (the other side, poisoned with 0xee); returns the status and both sides afterwards.
wave_status_t runBuffer(const BufferCase &c, bool store, uint64_t memBytes, uint32_t records,
                        uint32_t word3, uint32_t voff0, uint32_t soff, std::vector<uint8_t> &mem,
                        std::vector<uint8_t> &plain, uint32_t stride = 0) {
  Device d((std::string("emu:") + c.target).c_str());
  void *m = nullptr, *p = nullptr;
  EXPECT_EQ(wave_malloc(d.dev, memBytes, &m), WAVE_SUCCESS);
  EXPECT_EQ(wave_malloc(d.dev, 8 * c.bytes, &p), WAVE_SUCCESS);
  mem.resize(memBytes);
  for (size_t i = 0; i < memBytes; ++i)
    mem[i] = uint8_t(i + 1);
  plain.assign(8 * c.bytes, 0xee);
  EXPECT_EQ(wave_memcpy_htod(d.dev, m, mem.data(), memBytes), WAVE_SUCCESS);
  EXPECT_EQ(wave_memcpy_htod(d.dev, p, plain.data(), plain.size()), WAVE_SUCCESS);
  const uint64_t base = reinterpret_cast<uintptr_t>(m);
  std::vector<uint8_t> args;
  pack(args, 0, uint32_t(base));
  pack(args, 4, uint32_t((base >> 32) & 0xffff) | stride << 16);
  pack(args, 8, records);
  pack(args, 12, word3);
  pack(args, 16, p);
  pack(args, 24, voff0);
  pack(args, 28, soff);
  std::string image = assemble(c.target, c.rules ? 32 : 64, {bufferKernel(store, c.bytes, c.rules)});
  wave_status_t s = launch(d.dev, image, store ? "bufstore" : "bufload", 1, 8, args);
  EXPECT_EQ(wave_memcpy_dtoh(d.dev, mem.data(), m, memBytes), WAVE_SUCCESS);
  EXPECT_EQ(wave_memcpy_dtoh(d.dev, plain.data(), p, plain.size()), WAVE_SUCCESS);
  wave_free(d.dev, m);
  wave_free(d.dev, p);
  return s;
}

constexpr uint32_t kGfx9Word3 = 0x27000, kGfx11Word3 = 0x31027000;

// The expected bytes of a load: unit by unit (the whole access when <= 4 bytes, else 32-bit
// words at saturated offsets), in range when the unit ends at or before num_records; the
// address adds soffset, the check does not.
std::vector<uint8_t> expectLoad(uint32_t bytes, uint32_t records, uint32_t voff0, uint32_t soff,
                                bool check = true) {
  std::vector<uint8_t> want(8 * bytes, 0);
  const uint32_t unit = std::min<uint32_t>(bytes, 4);
  for (uint32_t t = 0; t < 8; ++t) {
    const uint32_t voff = voff0 + t * bytes; // the kernel's 32-bit arithmetic wraps
    for (uint32_t at = 0; at < bytes; at += unit) {
      uint64_t off = std::min<uint64_t>(uint64_t(voff) + at, 0xffffffffu);
      if (check && off + unit > records)
        continue;
      for (uint32_t i = 0; i < unit; ++i)
        want[t * bytes + at + i] = uint8_t(uint64_t(voff) + at + i + soff + 1);
    }
  }
  return want;
}

TEST(EmuBuffer, LoadsRangeCheckEachWordAndReadZeroOutOfRange) {
  for (BufferCase c : {BufferCase{"gfx942", 0, 8}, BufferCase{"gfx90a", 0, 16},
                       BufferCase{"gfx1100", 1, 8}, BufferCase{"gfx942", 0, 2}}) {
    const uint32_t w3 = c.rules ? kGfx11Word3 : kGfx9Word3, all = 8 * c.bytes;
    std::vector<uint8_t> mem, plain;
    // In range; partly out of range (the last word, or a word straddling num_records, which
    // counts as out); wholly out (a masked-off voffset of 2^31, and one that saturates at the
    // top of the 32-bit range instead of wrapping to 0); soffset added but not checked.
    struct {
      uint32_t records, voff0, soff;
    } cases[] = {{all, 0, 0}, {all - 4, 0, 0}, {all - 2, 0, 0}, {all - 1, 0, 0},
                 {all, 0x80000000u, 0}, {all, 0xfffffffcu, 0}, {all / 2, 0, all / 2},
                 {0, 0, 0}};
    for (const auto &k : cases) {
      ASSERT_EQ(runBuffer(c, false, 2 * all, k.records, w3, k.voff0, k.soff, mem, plain),
                WAVE_SUCCESS)
          << c.target << " records " << k.records << ": " << wave_last_error();
      EXPECT_EQ(plain, expectLoad(c.bytes, k.records, k.voff0, k.soff))
          << c.target << " " << c.bytes << "-byte loads, records " << k.records << ", voffset "
          << k.voff0 << ", soffset " << k.soff;
    }
  }
}

// The same rules written out for single cases.
TEST(EmuBuffer, AWordStraddlingNumRecordsIsOutOfRange) {
  std::vector<uint8_t> mem, plain;
  // dwordx2 loads, num_records 62: thread 7's first word (bytes 56-59) is in, its second
  // (60-63) straddles the end and reads 0.
  ASSERT_EQ(runBuffer({"gfx942", 0, 8}, false, 64, 62, kGfx9Word3, 0, 0, mem, plain),
            WAVE_SUCCESS);
  EXPECT_EQ(plain[56], 57);
  EXPECT_EQ(plain[59], 60);
  EXPECT_EQ(plain[60], 0);
  EXPECT_EQ(plain[63], 0);
  // 16-bit loads, num_records 15: thread 7 (bytes 14-15) is out, thread 6 (12-13) in.
  ASSERT_EQ(runBuffer({"gfx942", 0, 2}, false, 16, 15, kGfx9Word3, 0, 0, mem, plain),
            WAVE_SUCCESS);
  EXPECT_EQ(plain[12], 13);
  EXPECT_EQ(plain[13], 14);
  EXPECT_EQ(plain[14], 0);
  EXPECT_EQ(plain[15], 0);
  // A store of dwordx2 with num_records 6: bytes 0-3 written, 4-7 left alone.
  ASSERT_EQ(runBuffer({"gfx1100", 1, 8}, true, 64, 6, kGfx11Word3, 0, 0, mem, plain),
            WAVE_SUCCESS);
  EXPECT_EQ(mem[3], 0xee);
  EXPECT_EQ(mem[4], 5);
  EXPECT_EQ(mem[8], 9);
}

TEST(EmuBuffer, OutOfRangeStoresAreDropped) {
  for (BufferCase c : {BufferCase{"gfx942", 0, 8}, BufferCase{"gfx1100", 1, 8},
                       BufferCase{"gfx90a", 0, 2}}) {
    const uint32_t w3 = c.rules ? kGfx11Word3 : kGfx9Word3, all = 8 * c.bytes;
    for (uint32_t records : {all, all - 4, all - 2, 3u, 0u}) {
      std::vector<uint8_t> mem, plain;
      ASSERT_EQ(runBuffer(c, true, all, records, w3, 0, 0, mem, plain), WAVE_SUCCESS)
          << wave_last_error();
      // The stored data is the poison 0xee: a byte changed iff its unit is in range.
      const uint32_t unit = std::min<uint32_t>(c.bytes, 4);
      for (uint32_t i = 0; i < all; ++i) {
        bool in = i / unit * unit + unit <= records;
        EXPECT_EQ(mem[i], in ? 0xee : uint8_t(i + 1))
            << c.target << " records " << records << " byte " << i;
      }
    }
  }
}

TEST(EmuBuffer, InRangeButOutsideTheAllocationIsReported) {
  // num_records (64) covers more than the 40-byte allocation: the hardware would not catch
  // the access, the detector does.
  std::vector<uint8_t> mem, plain;
  EXPECT_EQ(runBuffer({"gfx942", 0, 8}, false, 40, 64, kGfx9Word3, 0, 0, mem, plain),
            WAVE_ERROR_LAUNCH);
  std::string msg = wave_last_error();
  EXPECT_TRUE(contains(msg, "bufload: out-of-bounds global load of 8 bytes at handmade.wave:7:3 "
                            "in workgroup (0,0,0) thread (5,0,0)"))
      << msg;
  EXPECT_EQ(runBuffer({"gfx942", 0, 8}, true, 40, 64, kGfx9Word3, 0, 0, mem, plain),
            WAVE_ERROR_LAUNCH);
  msg = wave_last_error();
  EXPECT_TRUE(contains(msg, "bufstore: out-of-bounds global store of 8 bytes")) << msg;
  // A partly in-range access: its in-range word (bytes 40-43 of thread 5) is still outside.
  EXPECT_EQ(runBuffer({"gfx942", 0, 8}, false, 40, 44, kGfx9Word3, 0, 0, mem, plain),
            WAVE_ERROR_LAUNCH);
  msg = wave_last_error();
  EXPECT_TRUE(contains(msg, "bufload: out-of-bounds global load of 4 bytes")) << msg;
  EXPECT_TRUE(contains(msg, "thread (5,0,0)")) << msg;
  // Cut by num_records at the allocation's end, the same launch is clean.
  EXPECT_EQ(runBuffer({"gfx942", 0, 8}, false, 40, 40, kGfx9Word3, 0, 0, mem, plain),
            WAVE_SUCCESS)
      << wave_last_error();
  EXPECT_EQ(plain, expectLoad(8, 40, 0, 0));
}

TEST(EmuBuffer, DescriptorRulesPerFamily) {
  std::vector<uint8_t> mem, plain;
  // gfx10+: OOB_SELECT 2 checks nothing; 0 and 1 (structured) are not modelled.
  ASSERT_EQ(runBuffer({"gfx1100", 1, 8}, false, 64, 0, (kGfx11Word3 & ~(3u << 28)) | 2u << 28, 0,
                      0, mem, plain),
            WAVE_SUCCESS)
      << wave_last_error();
  EXPECT_EQ(plain, expectLoad(8, 0, 0, 0, /*check=*/false));
  EXPECT_EQ(runBuffer({"gfx1100", 1, 8}, false, 64, 64, kGfx11Word3 & ~(3u << 28), 0, 0, mem,
                      plain),
            WAVE_ERROR_LAUNCH);
  EXPECT_TRUE(contains(wave_last_error(), "unsupported buffer descriptor in a buffer load"))
      << wave_last_error();
  // gfx9: the same word 3 bits are ignored (always checked); a zero data format and a stride
  // are not modelled.
  ASSERT_EQ(runBuffer({"gfx942", 0, 8}, false, 64, 60, kGfx9Word3 | 2u << 28, 0, 0, mem, plain),
            WAVE_SUCCESS);
  EXPECT_EQ(plain, expectLoad(8, 60, 0, 0));
  EXPECT_EQ(runBuffer({"gfx942", 0, 8}, false, 64, 64, 7u << 12, 0, 0, mem, plain),
            WAVE_ERROR_LAUNCH);
  EXPECT_TRUE(contains(wave_last_error(), "data format 0")) << wave_last_error();
  EXPECT_EQ(runBuffer({"gfx942", 0, 8}, true, 64, 64, kGfx9Word3, 0, 0, mem, plain, 16),
            WAVE_ERROR_LAUNCH);
  EXPECT_TRUE(contains(wave_last_error(), "a stride")) << wave_last_error();
}

// ---- image validation ---------------------------------------------------------------------------

TEST(EmuImage, DamagedImagesAreRejectedOrRunSafely) {
  std::string image = readFile(std::string(EMU_TEST_IMAGES) + "/copy_gfx942.wemu");
  ASSERT_GT(image.size(), 1000u);
  Program p;
  ASSERT_EQ(loadProgram(image.data(), image.size(), p), WAVE_SUCCESS) << wave_last_error();
  // Truncations.
  for (size_t n = 0; n < image.size(); n += 1 + n / 7) {
    Program q;
    EXPECT_EQ(loadProgram(image.data(), n, q), WAVE_ERROR_INVALID_IMAGE) << n;
    EXPECT_TRUE(contains(wave_last_error(), "emulator image")) << wave_last_error();
  }
  // Trailing garbage, a bad version.
  std::string longer = image + "x";
  EXPECT_EQ(loadProgram(longer.data(), longer.size(), p), WAVE_ERROR_INVALID_IMAGE);
  EXPECT_TRUE(contains(wave_last_error(), "checksum mismatch")) << wave_last_error();
  seal(longer);
  EXPECT_EQ(loadProgram(longer.data(), longer.size(), p), WAVE_ERROR_INVALID_IMAGE);
  EXPECT_TRUE(contains(wave_last_error(), "trailing")) << wave_last_error();
  std::string v1 = image;
  v1[8] = 1;
  EXPECT_EQ(loadProgram(v1.data(), v1.size(), p), WAVE_ERROR_INVALID_IMAGE);
  EXPECT_TRUE(contains(wave_last_error(), "version 1, this runtime reads version " +
                                              std::to_string(kImageVersion)))
      << wave_last_error();
  v1[8] = char(kImageVersion - 1); // the version before named barriers
  EXPECT_EQ(loadProgram(v1.data(), v1.size(), p), WAVE_ERROR_INVALID_IMAGE);
  // Random byte damage with the checksum recomputed (content that was sealed bad, which the
  // checksum cannot catch): each variant is rejected by validation, or loads and then runs
  // without touching memory outside the emulator's buffers and without hanging (launch errors
  // and the step limit are fine).
  setenv("WAVE_EMU_STEP_LIMIT", "200000", 1);
  std::mt19937 rng(7);
  Device d("emu:gfx942");
  void *a = nullptr, *b = nullptr;
  ASSERT_EQ(wave_malloc(d.dev, 4096, &a), WAVE_SUCCESS);
  ASSERT_EQ(wave_malloc(d.dev, 4096, &b), WAVE_SUCCESS);
  std::vector<uint8_t> args;
  pack(args, 0, a);
  pack(args, 8, b);
  pack(args, 16, int64_t(4));
  pack(args, 24, int64_t(500));
  int rejected = 0, ran = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::string bad = image;
    for (int j = 0; j < 3; ++j)
      bad[std::uniform_int_distribution<size_t>(kPayloadOffset, bad.size() - 1)(rng)] ^=
          char(1 + rng() % 255);
    Program q;
    ASSERT_EQ(loadProgram(bad.data(), bad.size(), q), WAVE_ERROR_INVALID_IMAGE);
    seal(bad);
    if (loadProgram(bad.data(), bad.size(), q) != WAVE_SUCCESS) {
      ++rejected;
      continue;
    }
    ++ran;
    wave_status_t s = launch(d.dev, bad, "copy", 1, 64, args);
    EXPECT_TRUE(s == WAVE_SUCCESS || s == WAVE_ERROR_LAUNCH || s == WAVE_ERROR_NOT_FOUND ||
                s == WAVE_ERROR_INVALID_ARGUMENT || s == WAVE_ERROR_INVALID_IMAGE ||
                s == WAVE_ERROR_STEP_LIMIT)
        << wave_status_name(s);
  }
  unsetenv("WAVE_EMU_STEP_LIMIT");
  EXPECT_GT(rejected, 0);
  EXPECT_GT(ran, 0);
  // A hand-made image with a branch outside the code and one with a slot outside the frame.
  KernelBuilder k;
  k.name = "bad";
  k.op(Op::Br, Type::I8, 1, 0, 5);
  EXPECT_EQ(loadProgram(assemble("gfx942", 64, {k}).data(), assemble("gfx942", 64, {k}).size(), p),
            WAVE_ERROR_INVALID_IMAGE);
  EXPECT_TRUE(contains(wave_last_error(), "kernel 'bad', instruction 0")) << wave_last_error();
  KernelBuilder k2;
  k2.name = "bad2";
  k2.op(Op::Copy, Type::I8, 1, 0, 4096, 0, 0, 8);
  k2.op(Op::Ret, Type::I8, 1);
  std::string img2 = assemble("gfx942", 64, {k2});
  EXPECT_EQ(loadProgram(img2.data(), img2.size(), p), WAVE_ERROR_INVALID_IMAGE);
  // An MFMA in a wave32 image.
  KernelBuilder k3;
  k3.name = "bad3";
  uint32_t s = k3.slot(64);
  k3.op(Op::Mma, Type::I8, 1, s, s, s, s, uint32_t(Mma::Mfma16x16x16F16));
  k3.op(Op::Ret, Type::I8, 1);
  std::string img3 = assemble("sm_90", 32, {k3});
  EXPECT_EQ(loadProgram(img3.data(), img3.size(), p), WAVE_ERROR_INVALID_IMAGE);
  EXPECT_TRUE(contains(wave_last_error(), "needs a wave of 64")) << wave_last_error();
  // Named barriers: an ID above 15, a count that is not a multiple of 32, a bar.arrive without
  // a count; the same barriers with good fields load.
  const uint32_t barFields[][4] = {// op (0 Barrier, 1 BarArrive), aux, imm, loads
                                   {0, 16, 0, 0}, {0, 2, 48, 0}, {1, 3, 0, 0}, {1, 16, 64, 0},
                                   {0, 15, 0, 1}, {0, 2, 256, 1}, {1, 3, 96, 1}};
  for (const auto &f : barFields) {
    KernelBuilder kb;
    kb.name = "bar";
    kb.op(f[0] ? Op::BarArrive : Op::Barrier, Type::I8, 1, 0, 0, 0, 0, f[2], uint8_t(f[1]));
    kb.op(Op::Ret, Type::I8, 1);
    std::string img = assemble("sm_90a", 32, {kb});
    Program q;
    EXPECT_EQ(loadProgram(img.data(), img.size(), q),
              f[3] ? WAVE_SUCCESS : WAVE_ERROR_INVALID_IMAGE)
        << f[0] << " " << f[1] << " " << f[2];
  }
  // Not an emulator image at all, through the public API; and an image of another target.
  const char elf[] = "\x7f" "ELF....";
  wave_module_t m = nullptr;
  EXPECT_EQ(wave_module_load_data(d.dev, elf, sizeof elf, &m), WAVE_ERROR_INVALID_IMAGE);
  EXPECT_TRUE(contains(wave_last_error(), "not an emulator image")) << wave_last_error();
  std::string nv = readFile(std::string(EMU_TEST_IMAGES) + "/copy_sm_90.wemu");
  EXPECT_EQ(wave_module_load_data(d.dev, nv.data(), nv.size(), &m), WAVE_ERROR_INVALID_IMAGE);
  EXPECT_TRUE(contains(wave_last_error(), "compiled for sm_90")) << wave_last_error();
  wave_free(d.dev, a);
  wave_free(d.dev, b);
}


// Single-byte changes of compiled images (every offset of the elementwise image with three
// patterns, every 13th offset of the bigger ones) and random two-byte changes are refused at load
// with WAVE_ERROR_INVALID_IMAGE (the magic, the version, or the checksum); through the public
// API too, with the reason in wave_last_error().
TEST(EmuImage, EveryByteChangeIsRefusedAtLoad) {
  for (const char *name : {"elementwise_gfx942", "copy_gfx942", "gemm_f16_sm_90"}) {
    std::string image = readFile(std::string(EMU_TEST_IMAGES) + "/" + name + ".wemu");
    ASSERT_GT(image.size(), 1000u) << name;
    Program p;
    ASSERT_EQ(loadProgram(image.data(), image.size(), p), WAVE_SUCCESS) << wave_last_error();
    const bool all = std::string(name) == "elementwise_gfx942";
    for (size_t at = 0; at < image.size(); at += all ? 1 : 13)
      for (uint8_t flip : {uint8_t(0x01), uint8_t(0x80), uint8_t(0xff)}) {
        if (!all && flip != 0x01)
          continue;
        std::string bad = image;
        bad[at] = char(uint8_t(bad[at]) ^ flip);
        Program q;
        ASSERT_EQ(loadProgram(bad.data(), bad.size(), q), WAVE_ERROR_INVALID_IMAGE)
            << name << " byte " << at << " ^ " << int(flip);
      }
    std::mt19937 rng(11);
    for (int trial = 0; trial < 300; ++trial) {
      std::string bad = image;
      size_t i = std::uniform_int_distribution<size_t>(0, bad.size() - 2)(rng);
      bad[i] = char(bad[i] ^ char(1 + rng() % 255));
      bad[i + 1] = char(bad[i + 1] ^ char(1 + rng() % 255));
      Program q;
      ASSERT_EQ(loadProgram(bad.data(), bad.size(), q), WAVE_ERROR_INVALID_IMAGE) << i;
    }
  }
  std::string image = readFile(std::string(EMU_TEST_IMAGES) + "/copy_gfx942.wemu");
  Device d("emu:gfx942");
  for (size_t at : {size_t(kChecksumOffset), size_t(kPayloadOffset), size_t(40), image.size() / 2,
                    image.size() - 1}) {
    std::string bad = image;
    bad[at] = char(bad[at] ^ 0x10);
    wave_module_t m = nullptr;
    EXPECT_EQ(wave_module_load_data(d.dev, bad.data(), bad.size(), &m), WAVE_ERROR_INVALID_IMAGE)
        << at;
    EXPECT_TRUE(contains(wave_last_error(), "emulator image: checksum mismatch")) << wave_last_error();
    EXPECT_TRUE(contains(wave_last_error(), "damaged")) << wave_last_error();
  }
}

// ---- step limit --------------------------------------------------------------------------------

// Threads that never end (a loop without and with a barrier in it) fail the launch with
// WAVE_ERROR_STEP_LIMIT, located, once the workgroup ran WAVE_EMU_STEP_LIMIT instructions.
TEST(EmuStepLimit, AnEndlessLoopFailsTheLaunchWithTheStepLimitStatus) {
  for (bool barrier : {false, true}) {
    KernelBuilder k;
    k.name = "spin";
    uint32_t x = k.slot(8);
    k.op(Op::Add, Type::I64, 1, x, x, k.constant<uint64_t>(1));
    if (barrier)
      k.op(Op::Barrier, Type::I8, 1);
    k.op(Op::Br, Type::I8, 1, 0, 0);
    locate(k);
    setenv("WAVE_EMU_STEP_LIMIT", "1000000", 1);
    Device d("emu");
    wave_status_t s = launch(d.dev, assemble("gfx942", 64, {k}), "spin", 4, 64, {});
    unsetenv("WAVE_EMU_STEP_LIMIT");
    std::string msg = wave_last_error();
    EXPECT_EQ(s, WAVE_ERROR_STEP_LIMIT) << wave_status_name(s) << ": " << msg;
    EXPECT_TRUE(contains(msg, "spin: step limit reached at handmade.wave:7:3 in workgroup (0,0,0)"))
        << msg;
    EXPECT_TRUE(contains(msg, "more than 1000000 instructions (WAVE_EMU_STEP_LIMIT)")) << msg;
  }
  // A value that is not a positive count is refused, not ignored.
  for (const char *v : {"lots", "0", "-5", "12x"}) {
    setenv("WAVE_EMU_STEP_LIMIT", v, 1);
    KernelBuilder k;
    k.name = "nop";
    k.op(Op::Ret, Type::I8, 1);
    Device d("emu");
    EXPECT_EQ(launch(d.dev, assemble("gfx942", 64, {k}), "nop", 1, 64, {}),
              WAVE_ERROR_INVALID_ARGUMENT)
        << v;
    EXPECT_TRUE(contains(wave_last_error(), "WAVE_EMU_STEP_LIMIT")) << wave_last_error();
  }
  unsetenv("WAVE_EMU_STEP_LIMIT");
}

// ---- asynchronous copies (cp.async) --------------------------------------------------------------

// 64 threads: each copies its 16 bytes of src into buffer 0 (group 0) and the next 16 bytes into
// buffer 1 (group 1), waits with `wait` (the group count; -1: no wait at all), optionally meets a
// barrier, and stores the 16 bytes its neighbour's copy brought into buffer 0 to out.
// `srcBytes`: the copies' src-size (the rest of the 16 are zeros).
wave_status_t runAsync(int wait, bool barrier, uint32_t srcBytes, std::vector<uint8_t> *out) {
  KernelBuilder k;
  k.name = "async";
  k.block[0] = 64;
  k.shared = 2048;
  uint32_t src = k.arg(0, 8), dst = k.arg(8, 8);
  uint32_t t64 = k.tid64();
  uint32_t sh0 = k.slot(8), sh1 = k.slot(8), g0 = k.slot(8), g1 = k.slot(8), next = k.slot(8),
           r = k.slot(8), o = k.slot(8), v = k.slot(16);
  uint32_t size = k.constant<uint32_t>(srcBytes);
  k.op(Op::PtrAdd, Type::Ptr, 1, sh0, k.constant<uint64_t>(0), t64, 0, 16);
  k.op(Op::PtrAddConst, Type::Ptr, 1, sh1, sh0, 0, 0, 1024);
  k.op(Op::PtrAdd, Type::Ptr, 1, g0, src, t64, 0, 16);
  k.op(Op::PtrAddConst, Type::Ptr, 1, g1, g0, 0, 0, 1024);
  k.op(Op::AsyncCopy, Type::I8, 1, 0, sh0, g0, size, 16);
  k.op(Op::AsyncCommit, Type::I8, 1);
  k.op(Op::AsyncCopy, Type::I8, 1, 0, sh1, g1, size, 16);
  k.op(Op::AsyncCommit, Type::I8, 1);
  if (wait >= 0)
    k.op(Op::AsyncWait, Type::I8, 1, 0, 0, 0, 0, uint32_t(wait));
  if (barrier)
    k.op(Op::Barrier, Type::I8, 1);
  k.op(Op::Add, Type::I64, 1, next, t64, k.constant<uint64_t>(1));
  k.op(Op::URem, Type::I64, 1, next, next, k.constant<uint64_t>(64));
  k.op(Op::PtrAdd, Type::Ptr, 1, r, k.constant<uint64_t>(0), next, 0, 16);
  k.op(Op::Load, Type::I32, 4, v, r, 0, 0, uint32_t(Space::Shared));
  k.op(Op::PtrAdd, Type::Ptr, 1, o, dst, t64, 0, 16);
  k.op(Op::Store, Type::I32, 4, 0, o, v, 0, uint32_t(Space::Global));
  k.op(Op::AsyncWait, Type::I8, 1, 0, 0, 0, 0, 0);
  k.op(Op::Ret, Type::I8, 1);
  locate(k);
  Device d("emu:sm_90");
  void *in = nullptr, *res = nullptr;
  EXPECT_EQ(wave_malloc(d.dev, 2048, &in), WAVE_SUCCESS);
  EXPECT_EQ(wave_malloc(d.dev, 1024, &res), WAVE_SUCCESS);
  std::vector<uint8_t> host(2048);
  for (size_t i = 0; i < host.size(); ++i)
    host[i] = uint8_t(i * 7 + 1);
  EXPECT_EQ(wave_memcpy_htod(d.dev, in, host.data(), host.size()), WAVE_SUCCESS);
  EXPECT_EQ(wave_memset(d.dev, res, 0xee, 1024), WAVE_SUCCESS);
  std::vector<uint8_t> args;
  pack(args, 0, in);
  pack(args, 8, res);
  wave_status_t s = launch(d.dev, assemble("sm_90", 32, {k}), "async", 1, 64, args);
  std::string msg = wave_last_error();
  if (out) {
    out->resize(1024);
    EXPECT_EQ(wave_memcpy_dtoh(d.dev, out->data(), res, 1024), WAVE_SUCCESS);
  }
  wave_free(d.dev, in);
  wave_free(d.dev, res);
  wave::rt::fail(s, msg); // the launch's message again (the frees above succeeded)
  return s;
}

TEST(EmuAsync, CopiesLandAtTheWaitThatCompletesTheirGroup) {
  for (uint32_t srcBytes : {16u, 5u}) {
    std::vector<uint8_t> out;
    ASSERT_EQ(runAsync(1, true, srcBytes, &out), WAVE_SUCCESS) << wave_last_error();
    for (uint32_t t = 0; t < 64; ++t)
      for (uint32_t j = 0; j < 16; ++j) {
        uint32_t from = (t + 1) % 64 * 16 + j;
        EXPECT_EQ(out[t * 16 + j], j < srcBytes ? uint8_t(from * 7 + 1) : 0)
            << "thread " << t << " byte " << j << " src-size " << srcBytes;
      }
  }
}

TEST(EmuAsync, AWaitThatLeavesTheGroupInFlightIsReported) {
  // wait_group 2 leaves both groups in flight: the read of buffer 0 after the barrier races
  // with the copy (on a GPU it may read the old bytes).
  EXPECT_EQ(runAsync(2, true, 16, nullptr), WAVE_ERROR_LAUNCH);
  std::string msg = wave_last_error();
  EXPECT_TRUE(contains(msg, "async: shared-memory race on a load at handmade.wave:7:3 in "
                            "workgroup (0,0,0) thread (0,0,0): byte 16 is the destination of a "
                            "cp.async issued at handmade.wave:7:3 by thread (1,0,0) that is still "
                            "in flight (no cp.async.wait_group of thread (1,0,0) has completed "
                            "its group yet: is a wait count too large?)"))
      << msg;
  // No wait at all.
  EXPECT_EQ(runAsync(-1, true, 16, nullptr), WAVE_ERROR_LAUNCH);
  EXPECT_TRUE(contains(wave_last_error(), "still in flight")) << wave_last_error();
  // The wait without the barrier after it: thread 0 reads thread 1's destination before thread
  // 1's copy (reported at the copy's issue, which meets that read in the same epoch).
  EXPECT_EQ(runAsync(0, false, 16, nullptr), WAVE_ERROR_LAUNCH);
  EXPECT_TRUE(contains(wave_last_error(), "async: shared-memory race on a cp.async store at "
                                          "handmade.wave:7:3 in workgroup (0,0,0) thread (1,0,0): "
                                          "byte 16 was read by thread (0,0,0)"))
      << wave_last_error();
  // wait_group 0 with the barrier is fine too.
  EXPECT_EQ(runAsync(0, true, 16, nullptr), WAVE_SUCCESS) << wave_last_error();
}

// ---- AMD LDS DMA (buffer_load_dword ... lds, Op::BufferLoadLds) ----------------------------------

// One wave of 64 on gfx942: lane l loads the dword at voffset 4 (63 - l) of the descriptor
// (lane 5 at 2^31: out of range) into LDS at the wave-uniform base 256 + 4 l (the lane's index,
// not its voffset), waits with s_waitcnt vmcnt(`wait`) (-1: none), meets a barrier, and stores
// the LDS dword of lane (l + 1) % 64 to out.
wave_status_t runLdsDma(int wait, std::vector<uint32_t> *out) {
  KernelBuilder k;
  k.name = "dma";
  k.block[0] = 64;
  k.shared = 1024;
  uint32_t rsrc = k.slot(16);
  k.args.push_back({rsrc, 0, 8});
  k.args.push_back({rsrc + 8, 8, 8});
  uint32_t dst = k.arg(16, 8);
  uint32_t t64 = k.tid64(), t32 = k.slot(4), rev = k.slot(4), voff = k.slot(4), five = k.slot(1),
           sel = k.slot(4), next = k.slot(8), r = k.slot(8), v = k.slot(4), o = k.slot(8);
  uint32_t base = k.constant<uint64_t>(256), zero = k.constant<uint32_t>(0);
  k.op(Op::TruncI, Type::I32, 1, t32, t64, 0, 0, 0, uint8_t(Type::I64));
  k.op(Op::Sub, Type::I32, 1, rev, k.constant<uint32_t>(63), t32);
  k.op(Op::Mul, Type::I32, 1, voff, rev, k.constant<uint32_t>(4));
  k.op(Op::ICmp, Type::I1, 1, five, t32, k.constant<uint32_t>(5), 0, 32, uint8_t(Type::I32));
  k.op(Op::Select, Type::I32, 1, sel, five, k.constant<uint32_t>(0x80000000u), voff);
  k.op(Op::BufferLoadLds, Type::I8, 1, zero, rsrc, base, sel, 4, 0);
  if (wait >= 0)
    k.op(Op::AsyncWait, Type::I8, 1, 0, 0, 0, 0, uint32_t(wait));
  k.op(Op::Barrier, Type::I8, 1);
  k.op(Op::Add, Type::I64, 1, next, t64, k.constant<uint64_t>(1));
  k.op(Op::URem, Type::I64, 1, next, next, k.constant<uint64_t>(64));
  k.op(Op::PtrAdd, Type::Ptr, 1, r, base, next, 0, 4);
  k.op(Op::Load, Type::I32, 1, v, r, 0, 0, uint32_t(Space::Shared));
  k.op(Op::PtrAdd, Type::Ptr, 1, o, dst, t64, 0, 4);
  k.op(Op::Store, Type::I32, 1, 0, o, v, 0, uint32_t(Space::Global));
  k.op(Op::Ret, Type::I8, 1);
  locate(k);
  Device d("emu:gfx942");
  void *in = nullptr, *res = nullptr;
  EXPECT_EQ(wave_malloc(d.dev, 256, &in), WAVE_SUCCESS);
  EXPECT_EQ(wave_malloc(d.dev, 256, &res), WAVE_SUCCESS);
  std::vector<uint32_t> host(64);
  for (uint32_t i = 0; i < 64; ++i)
    host[i] = 1000 + i;
  EXPECT_EQ(wave_memcpy_htod(d.dev, in, host.data(), 256), WAVE_SUCCESS);
  EXPECT_EQ(wave_memset(d.dev, res, 0xee, 256), WAVE_SUCCESS);
  const uint64_t addr = reinterpret_cast<uintptr_t>(in);
  std::vector<uint8_t> args;
  pack(args, 0, uint32_t(addr));
  pack(args, 4, uint32_t((addr >> 32) & 0xffff));
  pack(args, 8, uint32_t(256)); // num_records
  pack(args, 12, kGfx9Word3);
  pack(args, 16, res);
  wave_status_t s = launch(d.dev, assemble("gfx942", 64, {k}), "dma", 1, 64, args);
  std::string msg = wave_last_error();
  if (out) {
    out->resize(64);
    EXPECT_EQ(wave_memcpy_dtoh(d.dev, out->data(), res, 256), WAVE_SUCCESS);
  }
  wave_free(d.dev, in);
  wave_free(d.dev, res);
  wave::rt::fail(s, msg);
  return s;
}

TEST(EmuLdsDma, LaneDwordsLandAtTheBasePlusFourTimesTheLaneAtTheWait) {
  std::vector<uint32_t> out;
  ASSERT_EQ(runLdsDma(0, &out), WAVE_SUCCESS) << wave_last_error();
  for (uint32_t t = 0; t < 64; ++t) {
    const uint32_t lane = (t + 1) % 64; // the LDS dword read: lane `lane`'s DMA
    EXPECT_EQ(out[t], lane == 5 ? 0u : 1000 + (63 - lane)) << "thread " << t;
  }
  // vmcnt(1) still lands the one DMA of each lane but the newest: it stays in flight.
  EXPECT_EQ(runLdsDma(1, nullptr), WAVE_ERROR_LAUNCH);
  EXPECT_TRUE(contains(wave_last_error(), "is the destination of a buffer_load ... lds issued at "
                                          "handmade.wave:"))
      << wave_last_error();
  EXPECT_TRUE(contains(wave_last_error(), "(no s_waitcnt vmcnt of thread (1,0,0) has completed "
                                          "it yet)"))
      << wave_last_error();
  EXPECT_EQ(runLdsDma(-1, nullptr), WAVE_ERROR_LAUNCH);
  EXPECT_TRUE(contains(wave_last_error(), "still in flight")) << wave_last_error();
}

// A thread reading (or writing) its own copy's destination before its wait, and two copies in
// flight to the same bytes.
TEST(EmuAsync, OwnDestinationAndOverlappingCopies) {
  for (int variant = 0; variant < 3; ++variant) {
    KernelBuilder k;
    k.name = "own";
    k.block[0] = 32;
    k.shared = 512;
    uint32_t src = k.arg(0, 8);
    uint32_t t64 = k.tid64();
    uint32_t sh = k.slot(8), g = k.slot(8), v = k.slot(4);
    k.op(Op::PtrAdd, Type::Ptr, 1, sh, k.constant<uint64_t>(0), t64, 0, 16);
    k.op(Op::PtrAdd, Type::Ptr, 1, g, src, t64, 0, 16);
    k.op(Op::AsyncCopy, Type::I8, 1, 0, sh, g, k.constant<uint32_t>(16), 16);
    k.op(Op::AsyncCommit, Type::I8, 1);
    if (variant == 0)
      k.op(Op::Load, Type::I32, 1, v, sh, 0, 0, uint32_t(Space::Shared));
    else if (variant == 1)
      k.op(Op::Store, Type::I32, 1, 0, sh, k.constant<uint32_t>(3), 0, uint32_t(Space::Shared));
    else
      k.op(Op::AsyncCopy, Type::I8, 1, 0, sh, g, k.constant<uint32_t>(16), 16);
    k.op(Op::AsyncWait, Type::I8, 1, 0, 0, 0, 0, 0);
    k.op(Op::Ret, Type::I8, 1);
    locate(k);
    Device d("emu:sm_90");
    void *in = nullptr;
    ASSERT_EQ(wave_malloc(d.dev, 512, &in), WAVE_SUCCESS);
    std::vector<uint8_t> args;
    pack(args, 0, in);
    EXPECT_EQ(launch(d.dev, assemble("sm_90", 32, {k}), "own", 1, 32, args), WAVE_ERROR_LAUNCH)
        << variant;
    std::string msg = wave_last_error();
    static const char *const ops[] = {"load", "store", "cp.async store"};
    EXPECT_TRUE(contains(msg, std::string("own: shared-memory race on a ") + ops[variant] +
                                  " at handmade.wave:7:3 in workgroup (0,0,0) thread (0,0,0): "
                                  "byte 0 is the destination of a cp.async"))
        << msg;
    EXPECT_TRUE(contains(msg, "by thread (0,0,0) that is still in flight")) << msg;
    wave_free(d.dev, in);
  }
}

// tests/e2e/kernels/gemm_f16.wave compiled for sm_90 (M = N = 128, K = 160: the cp.async
// pipeline) runs clean and exact; the same image with every cp.async.wait_group count one larger
// (the group a tile's reads need is left in flight, a race on a GPU) is reported; with a low
// WAVE_EMU_STEP_LIMIT the launch stops with WAVE_ERROR_STEP_LIMIT.
TEST(EmuAsync, PipelinedGemmWithAWrongWaitCountIsReported) {
  const std::string image = readFile(std::string(EMU_TEST_IMAGES) + "/gemm_f16_sm_90.wemu");
  ASSERT_FALSE(image.empty());
  Program p;
  ASSERT_EQ(loadProgram(image.data(), image.size(), p), WAVE_SUCCESS) << wave_last_error();
  ASSERT_EQ(p.kernels.size(), 1u);
  const KernelCode &kc = p.kernels[0];
  ASSERT_EQ(kc.argsSize, 24u); // a, b, c
  // The waits, patched in the image bytes.
  const size_t at = codeOffset(image, kc);
  ASSERT_NE(at, std::string::npos);
  std::string wrong = image;
  int waits = 0, copies = 0;
  for (size_t i = 0; i < kc.code.size(); ++i) {
    copies += kc.code[i].op == uint16_t(Op::AsyncCopy);
    if (kc.code[i].op != uint16_t(Op::AsyncWait))
      continue;
    ++waits;
    patchImm(wrong, at, i, kc.code[i].imm + 1);
  }
  ASSERT_GT(copies, 0);
  ASSERT_GT(waits, 0);
  seal(wrong);

  EmuGemm g("emu:sm_90", 128, 128, 160);
  std::vector<uint16_t> a, b;
  std::vector<float> af, bf;
  smallHalfs(size_t(g.M) * g.K, 37, 7, 3, a, af);
  smallHalfs(size_t(g.N) * g.K, 11, 5, 2, b, bf);
  ASSERT_NO_FATAL_FAILURE(g.init(a, b, af, bf));
  ASSERT_EQ(g.run(image, kc, g.M / 64, g.N / 64), WAVE_SUCCESS) << wave_last_error();
  ASSERT_NO_FATAL_FAILURE(g.expectExact());

  EXPECT_EQ(g.run(wrong, kc, g.M / 64, g.N / 64), WAVE_ERROR_LAUNCH);
  std::string msg = wave_last_error();
  EXPECT_TRUE(contains(msg, kc.name + ": shared-memory race on a")) << msg;
  EXPECT_TRUE(contains(msg, "is the destination of a cp.async issued at ")) << msg;
  EXPECT_TRUE(contains(msg, "is a wait count too large?")) << msg;

  setenv("WAVE_EMU_STEP_LIMIT", "2000", 1);
  EXPECT_EQ(g.run(image, kc, g.M / 64, g.N / 64), WAVE_ERROR_STEP_LIMIT) << wave_last_error();
  EXPECT_TRUE(contains(wave_last_error(), "step limit reached")) << wave_last_error();
  unsetenv("WAVE_EMU_STEP_LIMIT");
  EXPECT_EQ(g.run(image, kc, g.M / 64, g.N / 64), WAVE_SUCCESS) << wave_last_error();
}

} // namespace

// ---- code-object selection (multi-target stubs) ---------------------------------------------------

#include "internal.h"

namespace {

TEST(EmuPick, EachDeviceArchGetsItsOwnCodeObject) {
  static const unsigned char amd[] = "\x7f" "ELF", ptx[] = "// ptx\n.version 8.0", emu[] = "WAVEEMU1";
  const wave_code_object_t objects[] = {
      {"gfx942", amd, sizeof amd, nullptr},    {"emu:gfx942", emu, sizeof emu, nullptr},
      {"gfx90a", amd, sizeof amd, nullptr},    {"emu:gfx90a", emu, sizeof emu, nullptr},
      {"sm_80", ptx, sizeof ptx, nullptr},     {"emu:sm_80", emu, sizeof emu, nullptr},
      {"sm_90a", amd, sizeof amd, nullptr},
  };
  const size_t n = sizeof objects / sizeof objects[0];
  struct Want {
    const char *arch;
    int index; // -1: none
  };
  for (Want w : {Want{"gfx942", 0}, Want{"emu:gfx942", 1}, Want{"gfx90a", 2},
                 Want{"emu:gfx90a", 3}, Want{"sm_80", 4}, Want{"emu:sm_80", 5},
                 Want{"sm_90a", 6}, Want{"sm_90", 6} /* its arch-specific flavour */,
                 Want{"sm_86", 4} /* the newest older PTX */,
                 Want{"emu:sm_90", -1}, Want{"gfx1100", -1}, Want{"emu:gfx1100", -1}}) {
    const wave_code_object_t *got = wave::rt::pickCodeObject(w.arch, objects, n);
    if (w.index < 0)
      EXPECT_EQ(got, nullptr) << w.arch;
    else
      EXPECT_EQ(got, &objects[w.index]) << w.arch;
  }
}

} // namespace

namespace {

// samples/elementwise (c = a * alpha + broadcast(b)) compiled by wavec for gfx942 and sm_90 and
// run on the emulator at an unaligned shape: every element against the host's float result,
// outputs poisoned first.
TEST(EmuSamples, ElementwiseMatchesTheHost) {
  for (const char *target : {"gfx942", "sm_90"}) {
    std::string image = readFile(std::string(EMU_TEST_IMAGES) + "/elementwise_" + target + ".wemu");
    ASSERT_FALSE(image.empty());
    Device d((std::string("emu:") + target).c_str());
    const int64_t M = 37, N = 1000;
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(-2, 2);
    std::vector<float> a(M * N), b(N), c(M * N);
    for (auto &x : a)
      x = u(rng);
    for (auto &x : b)
      x = u(rng);
    const float alpha = 0.75f;
    void *da, *db, *dc;
    ASSERT_EQ(wave_malloc(d.dev, a.size() * 4, &da), WAVE_SUCCESS);
    ASSERT_EQ(wave_malloc(d.dev, b.size() * 4, &db), WAVE_SUCCESS);
    ASSERT_EQ(wave_malloc(d.dev, c.size() * 4, &dc), WAVE_SUCCESS);
    ASSERT_EQ(wave_memcpy_htod(d.dev, da, a.data(), a.size() * 4), WAVE_SUCCESS);
    ASSERT_EQ(wave_memcpy_htod(d.dev, db, b.data(), b.size() * 4), WAVE_SUCCESS);
    ASSERT_EQ(wave_memset(d.dev, dc, 0xff, c.size() * 4), WAVE_SUCCESS);
    std::vector<uint8_t> args;
    pack(args, 0, da);
    pack(args, 8, db);
    pack(args, 16, alpha);
    pack(args, 24, dc);
    pack(args, 32, M);
    pack(args, 40, N);
    wave_module_t m = nullptr;
    ASSERT_EQ(wave_module_load_data(d.dev, image.data(), image.size(), &m), WAVE_SUCCESS);
    wave_kernel_t k = nullptr;
    ASSERT_EQ(wave_module_get_kernel(m, "elementwise", &k), WAVE_SUCCESS);
    uint32_t grid[3] = {uint32_t((N + 255) / 256), uint32_t((M + 3) / 4), 1};
    uint32_t block[3] = {std::string(target) == "gfx942" ? 64u : 32u, 1, 1};
    ASSERT_EQ(wave_launch(d.dev, nullptr, k, grid, block, 0, args.data(), args.size()),
              WAVE_SUCCESS)
        << wave_last_error();
    ASSERT_EQ(wave_memcpy_dtoh(d.dev, c.data(), dc, c.size() * 4), WAVE_SUCCESS);
    size_t wrong = 0;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        float p = a[i * N + j] * alpha;
        float want = p + b[j];
        wrong += std::fabs(c[i * N + j] - want) > 1e-6f * (1 + std::fabs(want));
      }
    EXPECT_EQ(wrong, 0u) << target;
    wave_module_unload(m);
    wave_free(d.dev, da);
    wave_free(d.dev, db);
    wave_free(d.dev, dc);
  }
}

} // namespace

namespace {

// gfx1100 WMMA through an image: lanes load A and B rows from global memory; with lanes 16-31
// repeating lanes 0-15 the product is right, without it the launch fails naming the lane.
TEST(EmuMatrix, WmmaInAnImageAndItsReplicationRule) {
  for (bool replicated : {true, false}) {
    KernelBuilder k;
    k.name = "wmma";
    k.block[0] = 32;
    uint32_t pa = k.arg(0, 8), pb = k.arg(8, 8), pd = k.arg(16, 8);
    uint32_t t64 = k.tid64();
    uint32_t row = k.slot(8), ap = k.slot(8), bp = k.slot(8), dp = k.slot(8);
    uint32_t av = k.slot(32), bv = k.slot(32), c = k.slot(32), d = k.slot(32);
    if (replicated)
      k.op(Op::And, Type::I64, 1, row, t64, k.constant<uint64_t>(15));
    else
      k.op(Op::Copy, Type::I8, 1, row, t64, 0, 0, 8);
    k.op(Op::PtrAdd, Type::Ptr, 1, ap, pa, row, 0, 32);
    k.op(Op::PtrAdd, Type::Ptr, 1, bp, pb, row, 0, 32);
    k.op(Op::Load, Type::F16, 16, av, ap, 0, 0, uint32_t(Space::Global));
    k.op(Op::Load, Type::F16, 16, bv, bp, 0, 0, uint32_t(Space::Global));
    k.op(Op::Mma, Type::I8, 1, d, av, bv, c, uint32_t(Mma::Wmma16x16x16F16));
    k.op(Op::PtrAdd, Type::Ptr, 1, dp, pd, t64, 0, 32);
    k.op(Op::Store, Type::F32, 8, 0, dp, d, 0, uint32_t(Space::Global));
    k.op(Op::Ret, Type::I8, 1);
    locate(k);
    Device dev("emu:gfx1100");
    std::vector<uint16_t> a(32 * 16), b(32 * 16);
    std::vector<float> af(32 * 16), bf(32 * 16);
    for (int i = 0; i < 32 * 16; ++i) {
      af[i] = float((i * 7) % 9 - 4) / 4;
      bf[i] = float((i * 5) % 7 - 3) / 2;
      a[i] = floatToHalf(af[i]);
      b[i] = floatToHalf(bf[i]);
    }
    void *da, *db, *dd;
    ASSERT_EQ(wave_malloc(dev.dev, 1024, &da), WAVE_SUCCESS);
    ASSERT_EQ(wave_malloc(dev.dev, 1024, &db), WAVE_SUCCESS);
    ASSERT_EQ(wave_malloc(dev.dev, 1024, &dd), WAVE_SUCCESS);
    ASSERT_EQ(wave_memcpy_htod(dev.dev, da, a.data(), 1024), WAVE_SUCCESS);
    ASSERT_EQ(wave_memcpy_htod(dev.dev, db, b.data(), 1024), WAVE_SUCCESS);
    std::vector<uint8_t> args;
    pack(args, 0, da);
    pack(args, 8, db);
    pack(args, 16, dd);
    wave_status_t s = launch(dev.dev, assemble("gfx1100", 32, {k}), "wmma", 1, 32, args);
    if (!replicated) {
      EXPECT_EQ(s, WAVE_ERROR_LAUNCH);
      EXPECT_TRUE(contains(wave_last_error(), "WMMA operand A not replicated at handmade.wave:7:3 "
                                              "in workgroup (0,0,0) thread (16,0,0): lane 16 "
                                              "differs from lane 0"))
          << wave_last_error();
      continue;
    }
    ASSERT_EQ(s, WAVE_SUCCESS) << wave_last_error();
    std::vector<float> got(256);
    ASSERT_EQ(wave_memcpy_dtoh(dev.dev, got.data(), dd, 1024), WAVE_SUCCESS);
    // Lane l: A row l%16 (k = g), B column l%16 (k = g), D rows 2g + l/16 of column l%16.
    for (int l = 0; l < 32; ++l)
      for (int g = 0; g < 8; ++g) {
        int m = 2 * g + l / 16, n = l % 16;
        float want = 0;
        for (int kk = 0; kk < 16; ++kk)
          want += af[m * 16 + kk] * bf[n * 16 + kk];
        EXPECT_EQ(got[l * 8 + g], want) << "lane " << l << " g " << g;
      }
  }
}

} // namespace

// ---- mbarriers (sm_90a: Op::MbarInit / MbarArrive / MbarWait) ---------------------------------

namespace {

// Thread 0 makes an mbarrier of `count` arrivals at shared offset 0, then every thread passes a
// workgroup barrier. Returns (tid slot, offset-0 slot, the i1 "tid == 0" slot).
std::array<uint32_t, 3> mbarPrologue(KernelBuilder &k, uint32_t count) {
  k.shared = 8;
  const uint32_t tid = k.slot(4), zero = k.constant<uint32_t>(0), isZero = k.slot(1);
  k.op(Op::Special, Type::I32, 1, tid, 0, 0, 0, uint32_t(Special::TidX));
  k.op(Op::ICmp, Type::I1, 1, isZero, tid, zero, 0, 32, uint8_t(Type::I32));
  const size_t br = k.op(Op::CondBr, Type::I8, 1, 0, isZero, 0, 0);
  k.code[br].b = uint32_t(k.code.size());
  k.op(Op::MbarInit, Type::I8, 1, 0, zero, 0, 0, count);
  k.code[br].c = uint32_t(k.code.size());
  k.op(Op::Barrier, Type::I8, 1);
  return {tid, zero, isZero};
}

} // namespace

// The waiting warp yields: warp 0 blocks on the phase until thread 32 (warp 1, scheduled after
// it) has published a value and arrived; then thread 0 reads the value.
TEST(EmuMbarrier, AWaitingWarpYieldsToTheArrivingOne) {
  KernelBuilder k;
  k.name = "mbar_order";
  const uint32_t out = k.arg(0, 8);
  auto [tid, zero, isZero] = mbarPrologue(k, 1);
  const uint32_t c32 = k.constant<uint32_t>(32), is32 = k.slot(1), seven = k.constant<uint32_t>(7),
                 one = k.constant<uint32_t>(1), p4 = k.slot(8), v = k.slot(4);
  k.op(Op::ICmp, Type::I1, 1, is32, tid, c32, 0, 32, uint8_t(Type::I32));
  k.op(Op::PtrAddConst, Type::Ptr, 1, p4, out, 0, 0, 4);
  const size_t br = k.op(Op::CondBr, Type::I8, 1, 0, is32, 0, 0);
  k.code[br].b = uint32_t(k.code.size()); // thread 32: publish, arrive
  k.op(Op::Store, Type::I32, 1, 0, p4, seven, 0, uint32_t(Space::Global));
  k.op(Op::MbarArrive, Type::I8, 1, 0, zero, 0, 0, 0);
  k.op(Op::Ret, Type::I8, 1);
  k.code[br].c = uint32_t(k.code.size()); // the others: wait for phase 0, thread 0 reads
  k.op(Op::MbarWait, Type::I8, 1, 0, zero, zero);
  const size_t br2 = k.op(Op::CondBr, Type::I8, 1, 0, isZero, 0, 0);
  k.code[br2].b = uint32_t(k.code.size());
  k.op(Op::Load, Type::I32, 1, v, p4, 0, 0, uint32_t(Space::Global));
  k.op(Op::Add, Type::I32, 1, v, v, one);
  k.op(Op::Store, Type::I32, 1, 0, out, v, 0, uint32_t(Space::Global));
  k.code[br2].c = uint32_t(k.code.size());
  k.op(Op::Ret, Type::I8, 1);
  locate(k);
  const std::string image = assemble("sm_90a", 32, {k});
  Device d("emu:sm_90a");
  void *buf = nullptr;
  ASSERT_EQ(wave_malloc(d.dev, 8, &buf), WAVE_SUCCESS);
  const uint32_t poison[2] = {0xdeadbeef, 0xdeadbeef};
  ASSERT_EQ(wave_memcpy_htod(d.dev, buf, poison, 8), WAVE_SUCCESS);
  std::vector<uint8_t> args;
  pack(args, 0, buf);
  ASSERT_EQ(launch(d.dev, image, "mbar_order", 1, 64, args), WAVE_SUCCESS) << wave_last_error();
  uint32_t got[2] = {0, 0};
  ASSERT_EQ(wave_memcpy_dtoh(d.dev, got, buf, 8), WAVE_SUCCESS);
  EXPECT_EQ(got[1], 7u);
  EXPECT_EQ(got[0], 8u); // read after the arrival, never before
  wave_free(d.dev, buf);
}

// Rank-3 TMA (Op::TmaLoad / TmaStore with 3 coordinates, maps of wave_tensor_map): thread 0
// loads a box of [2, 16, 64] f16 of a [3, 37, 56] tensor at coordinates (column, row, batch)
// into 128-byte-swizzled shared memory, waits on the mbarrier, and stores the box whole into a
// [2, 16, 64] tensor. Boxes past every edge (batch 2..3, rows 30..45, columns 32..95) and before
// every edge (-1.., -3.., -8..): the elements outside the tensor arrive as zeros. A 2-d
// instruction with the rank-3 map is a fault with a message.
TEST(EmuTma, Rank3BoxesAreZeroFilledPastEveryEdge) {
  constexpr int B = 3, R = 37, C = 56, BB = 2, BR = 16, BC = 64;
  constexpr uint32_t boxBytes = BB * BR * BC * 2;
  for (int variant = 0; variant < 3; ++variant) {
    KernelBuilder k;
    k.name = "tma_rank3";
    k.block[0] = 32;
    const uint32_t in = k.arg(0, 8), out = k.arg(8, 8), coords = k.slot(12);
    for (uint32_t i = 0; i < 3; ++i) // the coordinates, consecutive in the frame
      k.op(Op::Copy, Type::I8, 1, coords + 4 * i, k.arg(16 + 4 * i, 4), 0, 0, 4);
    auto [tid, zero, isZero] = mbarPrologue(k, 1);
    k.shared = 1024 + boxBytes;
    const uint32_t dst = k.constant<uint32_t>(1024), origin = k.constant<std::array<int32_t, 3>>({0, 0, 0});
    const uint32_t dims = variant == 2 ? 2 : 3;
    const size_t br = k.op(Op::CondBr, Type::I8, 1, 0, isZero, 0, 0);
    k.code[br].b = uint32_t(k.code.size());
    k.op(Op::MbarArrive, Type::I8, 1, 0, zero, 0, 0, boxBytes);
    k.op(Op::TmaLoad, Type::I8, 1, zero, dst, in, coords, dims);
    k.op(Op::MbarWait, Type::I8, 1, 0, zero, zero);
    k.op(Op::TmaStore, Type::I8, 1, 0, dst, out, origin, 3);
    k.code[br].c = uint32_t(k.code.size());
    k.op(Op::Ret, Type::I8, 1);
    locate(k);
    const std::string image = assemble("sm_90a", 32, {k});
    Device d("emu:sm_90a");
    std::vector<uint16_t> host(B * R * C), got(BB * BR * BC, 0xdead);
    for (size_t i = 0; i < host.size(); ++i)
      host[i] = uint16_t(1 + (i * 7919) % 30000); // never 0: a zero is the fill
    void *din = nullptr, *dout = nullptr;
    ASSERT_EQ(wave_malloc(d.dev, host.size() * 2, &din), WAVE_SUCCESS);
    ASSERT_EQ(wave_malloc(d.dev, got.size() * 2, &dout), WAVE_SUCCESS);
    ASSERT_EQ(wave_memcpy_htod(d.dev, din, host.data(), host.size() * 2), WAVE_SUCCESS);
    ASSERT_EQ(wave_memcpy_htod(d.dev, dout, got.data(), got.size() * 2), WAVE_SUCCESS);
    const wave_dtype_t f16 = {2, 16, 1};
    const uint64_t inDims[3] = {B, R, C}, inStrides[2] = {R * C * 2, C * 2};
    const uint64_t outDims[3] = {BB, BR, BC}, outStrides[2] = {BR * BC * 2, BC * 2};
    const uint32_t box[3] = {BB, BR, BC};
    uint64_t mapIn = 0, mapOut = 0;
    ASSERT_EQ(wave_tensor_map(d.dev, din, f16, 3, inDims, inStrides, box, 128, &mapIn),
              WAVE_SUCCESS)
        << wave_last_error();
    ASSERT_EQ(wave_tensor_map(d.dev, dout, f16, 3, outDims, outStrides, box, 128, &mapOut),
              WAVE_SUCCESS)
        << wave_last_error();
    const int32_t c[3] = {variant == 1 ? -8 : 32, variant == 1 ? -3 : 30, variant == 1 ? -1 : 2};
    std::vector<uint8_t> args;
    pack(args, 0, mapIn);
    pack(args, 8, mapOut);
    pack(args, 16, c[0]);
    pack(args, 20, c[1]);
    pack(args, 24, c[2]);
    const wave_status_t s = launch(d.dev, image, "tma_rank3", 1, 32, args);
    if (variant == 2) {
      EXPECT_EQ(s, WAVE_ERROR_LAUNCH);
      EXPECT_TRUE(contains(wave_last_error(), "a 2-d TMA instruction with the tensor map at"))
          << wave_last_error();
      EXPECT_TRUE(contains(wave_last_error(), "of rank 3")) << wave_last_error();
      continue;
    }
    ASSERT_EQ(s, WAVE_SUCCESS) << wave_last_error();
    ASSERT_EQ(wave_memcpy_dtoh(d.dev, got.data(), dout, got.size() * 2), WAVE_SUCCESS);
    int inside = 0;
    for (int b = 0; b < BB; ++b)
      for (int r = 0; r < BR; ++r)
        for (int col = 0; col < BC; ++col) {
          const int gb = c[2] + b, gr = c[1] + r, gc = c[0] + col;
          const bool in = gb >= 0 && gb < B && gr >= 0 && gr < R && gc >= 0 && gc < C;
          inside += in;
          const uint16_t want = in ? host[(size_t(gb) * R + gr) * C + gc] : 0;
          ASSERT_EQ(got[(size_t(b) * BR + r) * BC + col], want)
              << "variant " << variant << " at " << b << ", " << r << ", " << col;
        }
    EXPECT_EQ(inside, variant == 1 ? 1 * 13 * 56 : 1 * 7 * 24);
    wave_free(d.dev, din);
    wave_free(d.dev, dout);
  }
}

// A phase that never completes is a reported deadlock, not a hang.
TEST(EmuMbarrier, APhaseThatNeverCompletesIsADeadlock) {
  KernelBuilder k;
  k.name = "mbar_deadlock";
  k.block[0] = 32;
  auto [tid, zero, isZero] = mbarPrologue(k, 2);
  const size_t br = k.op(Op::CondBr, Type::I8, 1, 0, isZero, 0, 0);
  k.code[br].b = uint32_t(k.code.size());
  k.op(Op::MbarArrive, Type::I8, 1, 0, zero, 0, 0, 0); // one arrival of two
  k.code[br].c = uint32_t(k.code.size());
  k.op(Op::MbarWait, Type::I8, 1, 0, zero, zero);
  k.op(Op::Ret, Type::I8, 1);
  locate(k);
  const std::string image = assemble("sm_90a", 32, {k});
  Device d("emu:sm_90a");
  EXPECT_EQ(launch(d.dev, image, "mbar_deadlock", 1, 32, {}), WAVE_ERROR_LAUNCH);
  const std::string msg = wave_last_error();
  EXPECT_TRUE(contains(msg, "deadlock at handmade.wave:7:3")) << msg;
  EXPECT_TRUE(contains(msg, "never completes (phase 0, 1 of 2 arrivals")) << msg;
  EXPECT_TRUE(contains(msg, "32 threads blocked on mbarriers")) << msg;
}

// An arrival on a barrier nobody initialized, and an arrival past the count of a phase that still
// waits for transaction bytes, fail the launch.
TEST(EmuMbarrier, UninitializedAndExtraArrivalsAreReported) {
  for (int extra = 0; extra < 2; ++extra) {
    KernelBuilder k;
    k.name = "mbar_bad";
    k.block[0] = 32;
    k.shared = 16;
    const uint32_t off = k.constant<uint32_t>(extra ? 0 : 8);
    if (extra) {
      k.op(Op::MbarInit, Type::I8, 1, 0, off, 0, 0, 1);
      k.op(Op::MbarArrive, Type::I8, 1, 0, off, 0, 0, 16); // expects 16 bytes: phase stays open
    }
    k.op(Op::MbarArrive, Type::I8, 1, 0, off, 0, 0, 0);
    k.op(Op::Ret, Type::I8, 1);
    locate(k);
    const std::string image = assemble("sm_90a", 32, {k});
    Device d("emu:sm_90a");
    EXPECT_EQ(launch(d.dev, image, "mbar_bad", 1, 32, {}), WAVE_ERROR_LAUNCH);
    const std::string msg = wave_last_error();
    EXPECT_TRUE(contains(msg, extra ? "too many arrivals on an mbarrier (mbarrier.arrive)"
                                    : "mbarrier.arrive on an uninitialized mbarrier"))
        << msg;
  }
}

// A barrier with a thread count (bar.sync 1, 32) opens for the warp waiting at it while another
// warp is blocked on an mbarrier, whose phase the first warp then completes.
TEST(EmuMbarrier, ACountedBarrierOpensWhileAnotherWarpIsBlocked) {
  KernelBuilder k;
  k.name = "mbar_named";
  auto [tid, zero, isZero] = mbarPrologue(k, 1);
  const uint32_t c32 = k.constant<uint32_t>(32), below = k.slot(1);
  k.op(Op::ICmp, Type::I1, 1, below, tid, c32, 0, 36, uint8_t(Type::I32)); // ult
  const size_t br = k.op(Op::CondBr, Type::I8, 1, 0, below, 0, 0);
  k.code[br].b = uint32_t(k.code.size()); // warp 0: the counted barrier, then thread 0 arrives
  k.op(Op::Barrier, Type::I8, 1, 0, 0, 0, 0, 32, 1);
  const size_t br2 = k.op(Op::CondBr, Type::I8, 1, 0, isZero, 0, 0);
  k.code[br2].b = uint32_t(k.code.size());
  k.op(Op::MbarArrive, Type::I8, 1, 0, zero, 0, 0, 0);
  k.code[br2].c = uint32_t(k.code.size());
  k.op(Op::Ret, Type::I8, 1);
  k.code[br].c = uint32_t(k.code.size()); // warp 1: waits for the phase
  k.op(Op::MbarWait, Type::I8, 1, 0, zero, zero);
  k.op(Op::Ret, Type::I8, 1);
  locate(k);
  const std::string image = assemble("sm_90a", 32, {k});
  Device d("emu:sm_90a");
  EXPECT_EQ(launch(d.dev, image, "mbar_named", 1, 64, {}), WAVE_SUCCESS) << wave_last_error();
}

// ---- wgmma (sm_90a: Op::Wgmma, WgmmaCommit, WgmmaWait) -----------------------------------------

// tests/e2e/kernels/gemm_wgmma_async.wave compiled for sm_90a (M = 128, N = 256, K = 320: cp.async
// into 64-byte-swizzled buffers read by wgmma m64n256k16 through descriptors) runs clean and
// exact against a product computed here; the same image with every wgmma.wait_group count one
// larger (a tile's products still read it when the next copy into its buffer is issued) is
// reported as a race naming the wgmma and the wait.
TEST(EmuWgmma, PipelinedGemmWithAWrongWaitCountIsReported) {
  const std::string image =
      readFile(std::string(EMU_TEST_IMAGES) + "/gemm_wgmma_async_sm_90a.wemu");
  ASSERT_FALSE(image.empty());
  Program p;
  ASSERT_EQ(loadProgram(image.data(), image.size(), p), WAVE_SUCCESS) << wave_last_error();
  ASSERT_EQ(p.kernels.size(), 1u);
  const KernelCode &kc = p.kernels[0];
  ASSERT_EQ(kc.argsSize, 24u); // a, b, c
  const size_t at = codeOffset(image, kc);
  ASSERT_NE(at, std::string::npos);
  std::string wrong = image;
  int waits = 0, products = 0;
  for (size_t i = 0; i < kc.code.size(); ++i) {
    products += kc.code[i].op == uint16_t(Op::Wgmma);
    if (kc.code[i].op != uint16_t(Op::WgmmaWait))
      continue;
    ++waits;
    patchImm(wrong, at, i, kc.code[i].imm + 1);
  }
  ASSERT_GT(products, 0);
  ASSERT_GT(waits, 0);
  seal(wrong);

  EmuGemm g("emu:sm_90a", 128, 256, 320);
  auto bf16 = [](float f) { // small integers: exact in bf16
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return uint16_t(u >> 16);
  };
  std::vector<uint16_t> a(size_t(g.M) * g.K), b(size_t(g.N) * g.K);
  std::vector<float> af(a.size()), bf(b.size());
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = bf16(af[i] = float(int(i * 37 % 7) - 3));
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = bf16(bf[i] = float(int(i * 11 % 5) - 2));
  ASSERT_NO_FATAL_FAILURE(g.init(a, b, af, bf));
  ASSERT_EQ(g.run(image, kc, g.M / 128, g.N / 256), WAVE_SUCCESS) << wave_last_error();
  ASSERT_NO_FATAL_FAILURE(g.expectExact());

  EXPECT_EQ(g.run(wrong, kc, g.M / 128, g.N / 256), WAVE_ERROR_LAUNCH);
  const std::string msg = wave_last_error();
  EXPECT_TRUE(contains(msg, kc.name + ": shared-memory race on a")) << msg;
  EXPECT_TRUE(contains(msg, "is read by a wgmma issued at ")) << msg;
  EXPECT_TRUE(contains(msg, "is a wait count too large?")) << msg;
}

// tests/e2e/kernels/gemm_wgmma_tma.wave for sm_90a (M = 128, N = 256, K = 320): a producer
// warpgroup's TMA loads on full/empty mbarriers, two consumer warpgroups of wgmma, C staged
// through shared memory and written by TMA stores, launched with the emulator's tensor maps
// (wave_tensor_map_2d) after the 24 bytes of arguments: exact. With the producer expecting 16
// transaction bytes more than its boxes bring, no phase completes: a reported deadlock. (The
// loop's wgmma.wait_group count one larger goes unreported here: the consumers run ahead until
// they block, so their later waits have retired the group before the producer refills the
// buffer; docs/internals.md.)
TEST(EmuWgmma, WarpSpecializedTmaGemmAndItsSeededBugs) {
  const std::string image = readFile(std::string(EMU_TEST_IMAGES) + "/gemm_wgmma_tma_sm_90a.wemu");
  ASSERT_FALSE(image.empty());
  Program p;
  ASSERT_EQ(loadProgram(image.data(), image.size(), p), WAVE_SUCCESS) << wave_last_error();
  const KernelCode &kc = p.kernels[0];
  ASSERT_EQ(kc.block[0], 384u); // 256 consumers + the producer warpgroup
  const size_t at = codeOffset(image, kc);
  ASSERT_NE(at, std::string::npos);
  std::string wrongBytes = image;
  int loads = 0, stores = 0, expects = 0;
  for (size_t i = 0; i < kc.code.size(); ++i) {
    loads += kc.code[i].op == uint16_t(Op::TmaLoad);
    stores += kc.code[i].op == uint16_t(Op::TmaStore);
    if (kc.code[i].op == uint16_t(Op::MbarArrive) && kc.code[i].imm > 0) { // arrive.expect_tx
      ++expects;
      patchImm(wrongBytes, at, i, kc.code[i].imm + 16);
    }
  }
  ASSERT_GT(loads, 0);
  ASSERT_GT(stores, 0);
  ASSERT_GT(expects, 0);
  seal(wrongBytes);

  EmuGemm g("emu:sm_90a", 128, 256, 320);
  const int M = g.M, N = g.N, K = g.K;
  std::vector<uint16_t> a, b;
  std::vector<float> af, bf;
  smallHalfs(size_t(M) * K, 37, 7, 3, a, af);
  smallHalfs(size_t(N) * K, 11, 5, 2, b, bf);
  ASSERT_NO_FATAL_FAILURE(g.init(a, b, af, bf));
  const wave_dtype_t f16 = {2, 16, 1}, f32 = {2, 32, 1};
  uint64_t ma = 0, mb = 0, mc = 0;
  ASSERT_EQ(wave_tensor_map_2d(g.d.dev, g.da, f16, M, K, K * 2, 128, 64, 128, &ma), WAVE_SUCCESS);
  ASSERT_EQ(wave_tensor_map_2d(g.d.dev, g.db, f16, N, K, K * 2, 256, 64, 128, &mb), WAVE_SUCCESS);
  ASSERT_EQ(wave_tensor_map_2d(g.d.dev, g.dc, f32, M, N, N * 4, 128, 32, 128, &mc), WAVE_SUCCESS);
  pack(g.args, 24, ma);
  pack(g.args, 32, mb);
  pack(g.args, 40, mc);
  ASSERT_EQ(g.run(image, kc, 1, 1), WAVE_SUCCESS) << wave_last_error();
  ASSERT_NO_FATAL_FAILURE(g.expectExact());

  EXPECT_EQ(g.run(wrongBytes, kc, 1, 1), WAVE_ERROR_LAUNCH);
  const std::string msg = wave_last_error();
  EXPECT_TRUE(contains(msg, kc.name + ": deadlock at ")) << msg;
  EXPECT_TRUE(contains(msg, "which never completes (phase 0, 0 of 1 arrivals and 16 transaction "
                            "bytes pending)"))
      << msg;
}

// ---- wgmma register hazards (runtime/src/emu/regcheck.cpp) -------------------------------------

namespace {

// The seeded instruction of runRegWgmma.
enum class RegSeed {
  None,
  WriteA,      // an add writes A's register a0 (the next iteration's conversion of the bug)
  MoveOntoA,   // a copy (a move) writes A's register a1
  ReadAcc,     // an fadd reads the second product's D
  ReadAccCopy, // D copied (a move: no report), then an fadd reads the copy
  WriteAcc,    // an fadd writes the first product's D, the second's C (its chain)
};
enum class At { BeforeCommit, BeforeWait, AfterWait };

// One warp on sm_90a: B (8 x 16 f16 ones) in shared memory, A (16 x 16 f16 ones) from the
// registers a0..a3, gathered the way the translator does it (emu_translate_asm.cpp: four
// 4-byte copies right before the wgmma); two m64n8k16 wgmmas, the second accumulating into the
// first's D moved into its C, one commit, a wait_group 0, and `seed` at `at`. out: the second
// D per lane (4 floats; 32 each).
wave_status_t runRegWgmma(RegSeed seed, At at, std::vector<float> *out) {
  KernelBuilder k;
  k.name = "regs";
  k.block[0] = 32;
  k.shared = 256;
  const uint32_t dst = k.arg(0, 8), t64 = k.tid64();
  const uint32_t sh = k.slot(8), o = k.slot(8), aSlot = k.slot(16), c1 = k.slot(16),
                 d1 = k.slot(16), c2 = k.slot(16), d2 = k.slot(16), copy = k.slot(16),
                 x = k.slot(4);
  uint32_t a[4];
  for (uint32_t &r : a)
    r = k.slot(4);
  const uint32_t ones = k.constant<uint64_t>(0x3c003c003c003c00ull), one32 = k.constant<uint32_t>(0x3c003c00u),
                 two32 = k.constant<uint32_t>(0x40004000u), zero32 = k.constant<uint32_t>(0),
                 one = k.constant<float>(1.0f),
                 descB = k.constant<uint64_t>(3ull << 62); // 32-byte swizzle, start 0
  k.op(Op::PtrAdd, Type::Ptr, 1, sh, k.constant<uint64_t>(0), t64, 0, 8);
  k.op(Op::Store, Type::I64, 1, 0, sh, ones, 0, uint32_t(Space::Shared));
  k.op(Op::Barrier, Type::I8, 1);
  for (uint32_t r : a)
    k.op(Op::Copy, Type::I8, 1, r, one32, 0, 0, 4);
  auto wgmma = [&](uint32_t d, uint32_t c, uint32_t flags) {
    for (uint32_t r = 0; r < 4; ++r)
      k.op(Op::Copy, Type::I8, 1, aSlot + 4 * r, a[r], 0, 0, 4);
    k.op(Op::Wgmma, Type::F32, 1, d, aSlot, descB, c, 8 | (kWgmmaRegA | flags) << 12,
         uint8_t(WgmmaElem::F16));
  };
  auto seeded = [&] {
    switch (seed) {
    case RegSeed::None: break;
    case RegSeed::WriteA: k.op(Op::Add, Type::I32, 1, a[0], a[0], zero32); break;
    case RegSeed::MoveOntoA: k.op(Op::Copy, Type::I8, 1, a[1], two32, 0, 0, 4); break;
    case RegSeed::ReadAcc: k.op(Op::FAdd, Type::F32, 1, x, d2 + 4, one); break;
    case RegSeed::ReadAccCopy:
      k.op(Op::Copy, Type::I8, 1, copy, d2, 0, 0, 16);
      k.op(Op::FAdd, Type::F32, 1, x, copy + 8, one);
      break;
    case RegSeed::WriteAcc: k.op(Op::FAdd, Type::F32, 1, d1 + 12, one, one); break;
    }
  };
  wgmma(d1, c1, kWgmmaZeroC);
  k.op(Op::Copy, Type::I8, 1, c2, d1, 0, 0, 16); // the chain: a move of D into the next C
  wgmma(d2, c2, 0);
  if (at == At::BeforeCommit)
    seeded();
  k.op(Op::WgmmaCommit, Type::I8, 1);
  if (at == At::BeforeWait)
    seeded();
  k.op(Op::WgmmaWait, Type::I8, 1, 0, 0, 0, 0, 0);
  if (at == At::AfterWait)
    seeded();
  k.op(Op::PtrAdd, Type::Ptr, 1, o, dst, t64, 0, 16);
  k.op(Op::Store, Type::F32, 4, 0, o, d2, 0, uint32_t(Space::Global));
  k.op(Op::Ret, Type::I8, 1);
  locate(k);
  Device d("emu:sm_90a");
  void *res = nullptr;
  EXPECT_EQ(wave_malloc(d.dev, 32 * 16, &res), WAVE_SUCCESS);
  EXPECT_EQ(wave_memset(d.dev, res, 0xff, 32 * 16), WAVE_SUCCESS);
  std::vector<uint8_t> args;
  pack(args, 0, res);
  wave_status_t s = launch(d.dev, assemble("sm_90a", 32, {k}), "regs", 1, 32, args);
  std::string msg = wave_last_error();
  if (out) {
    out->resize(32 * 4);
    EXPECT_EQ(wave_memcpy_dtoh(d.dev, out->data(), res, 32 * 16), WAVE_SUCCESS);
  }
  wave_free(d.dev, res);
  wave::rt::fail(s, msg);
  return s;
}

// Each seeded instruction after the wait: clean, and D is the chained product (2 x 16 ones).
TEST(EmuWgmma, RegisterOperandsAfterTheWaitAreClean) {
  for (RegSeed seed : {RegSeed::None, RegSeed::WriteA, RegSeed::MoveOntoA, RegSeed::ReadAcc,
                       RegSeed::ReadAccCopy, RegSeed::WriteAcc}) {
    std::vector<float> out;
    ASSERT_EQ(runRegWgmma(seed, At::AfterWait, &out), WAVE_SUCCESS)
        << int(seed) << ": " << wave_last_error();
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_EQ(out[i], 32.0f) << int(seed) << " element " << i;
  }
  // Reads of A's registers and the chain's moves of D before the wait are fine too.
  EXPECT_EQ(runRegWgmma(RegSeed::None, At::BeforeWait, nullptr), WAVE_SUCCESS)
      << wave_last_error();
}

// A's registers written (by an add, or by a move) before the wait that retires the wgmma.
TEST(EmuWgmma, ARegistersWrittenInFlightAreReported) {
  for (RegSeed seed : {RegSeed::WriteA, RegSeed::MoveOntoA}) {
    EXPECT_EQ(runRegWgmma(seed, At::BeforeWait, nullptr), WAVE_ERROR_LAUNCH) << int(seed);
    const std::string msg = wave_last_error();
    EXPECT_TRUE(contains(msg, "regs: wgmma register hazard: a write to an A operand register of "
                              "a wgmma in flight at handmade.wave:7:3 in workgroup (0,0,0) "
                              "thread (0,0,0): frame bytes "))
        << msg;
    EXPECT_TRUE(contains(msg, "hold a register that the wgmma issued at handmade.wave:7:3 by "
                              "warp 0 of its warpgroup reads as its A operand, which is still "
                              "in flight (no wgmma.wait_group of this thread has retired its "
                              "group yet: a wait is missing before this instruction, or its "
                              "count is too large)"))
        << msg;
  }
  EXPECT_EQ(runRegWgmma(RegSeed::WriteA, At::BeforeCommit, nullptr), WAVE_ERROR_LAUNCH);
  EXPECT_TRUE(contains(wave_last_error(), "(its group was not committed and waited for yet)"))
      << wave_last_error();
}

// The accumulators read (directly, or through a move) or written before the wait.
TEST(EmuWgmma, AccumulatorsTouchedInFlightAreReported) {
  for (RegSeed seed : {RegSeed::ReadAcc, RegSeed::ReadAccCopy}) {
    EXPECT_EQ(runRegWgmma(seed, At::BeforeWait, nullptr), WAVE_ERROR_LAUNCH) << int(seed);
    const std::string msg = wave_last_error();
    EXPECT_TRUE(contains(msg, "regs: wgmma register hazard: a read of an accumulator register "
                              "of a wgmma in flight at handmade.wave:7:3 in workgroup (0,0,0) "
                              "thread (0,0,0): frame bytes "))
        << msg;
    EXPECT_TRUE(contains(msg, "hold an accumulator (D) of the wgmma issued at handmade.wave:7:3 "
                              "by warp 0 of its warpgroup, which is still in flight"))
        << msg;
  }
  EXPECT_EQ(runRegWgmma(RegSeed::WriteAcc, At::BeforeWait, nullptr), WAVE_ERROR_LAUNCH);
  EXPECT_TRUE(contains(wave_last_error(), "a write to an accumulator register of a wgmma in "
                                          "flight"))
      << wave_last_error();
}

namespace {

// Sets an environment variable for a scope and puts the old value back.
struct ScopedEnv {
  std::string name, old;
  bool had;
  ScopedEnv(const char *n, const char *v) : name(n) {
    const char *o = std::getenv(n);
    had = o != nullptr;
    if (had)
      old = o;
    setenv(n, v, 1);
  }
  ~ScopedEnv() {
    if (had)
      setenv(name.c_str(), old.c_str(), 1);
    else
      unsetenv(name.c_str());
  }
};

// Two warps on sm_90a, a loop of 1 + (workgroup id x) steps (a trip count per workgroup, as
// causal attention's): each step writes the registers p0..p3, issues a register-A m64n8k16
// wgmma P from them, writes q0..q3, issues Q from those (B: 8 x 16 f16 ones in shared memory),
// then one commit and, with `waitInLoop`, a wait_group 0 (else the only wait follows the loop).
// Two workgroups run on one host thread, so the second starts on the frames (and register tags)
// the first left. out: Q's D per workgroup and thread (4 floats; 16 each).
wave_status_t runRegWgmmaLoop(bool waitInLoop, std::vector<float> *out) {
  KernelBuilder k;
  k.name = "regloop";
  k.block[0] = 64;
  k.shared = 512;
  const uint32_t dst = k.arg(0, 8), t64 = k.tid64();
  const uint32_t sh = k.slot(8), o = k.slot(8), o2 = k.slot(8), aSlot = k.slot(16),
                 dP = k.slot(16), dQ = k.slot(16), c0 = k.slot(16), wg32 = k.slot(4),
                 wg64 = k.slot(8), n = k.slot(4), i = k.slot(4), more = k.slot(1);
  uint32_t p[4], q[4];
  for (uint32_t r = 0; r < 4; ++r)
    p[r] = k.slot(4), q[r] = k.slot(4);
  const uint32_t ones = k.constant<uint64_t>(0x3c003c003c003c00ull),
                 one32 = k.constant<uint32_t>(0x3c003c00u), zero32 = k.constant<uint32_t>(0),
                 inc = k.constant<uint32_t>(1),
                 descB = k.constant<uint64_t>(3ull << 62); // 32-byte swizzle, start 0
  k.op(Op::PtrAdd, Type::Ptr, 1, sh, k.constant<uint64_t>(0), t64, 0, 8);
  k.op(Op::Store, Type::I64, 1, 0, sh, ones, 0, uint32_t(Space::Shared));
  k.op(Op::Barrier, Type::I8, 1);
  k.op(Op::Special, Type::I32, 1, wg32, 0, 0, 0, uint32_t(Special::WgX));
  k.op(Op::Add, Type::I32, 1, n, wg32, inc);
  k.op(Op::Copy, Type::I8, 1, i, zero32, 0, 0, 4);
  const uint32_t loop = uint32_t(k.code.size());
  auto wgmma = [&](const uint32_t (&regs)[4], uint32_t d) {
    for (uint32_t r = 0; r < 4; ++r)
      k.op(Op::Copy, Type::I8, 1, regs[r], one32, 0, 0, 4); // writes the A registers
    for (uint32_t r = 0; r < 4; ++r)
      k.op(Op::Copy, Type::I8, 1, aSlot + 4 * r, regs[r], 0, 0, 4);
    k.op(Op::Wgmma, Type::F32, 1, d, aSlot, descB, c0, 8 | (kWgmmaRegA | kWgmmaZeroC) << 12,
         uint8_t(WgmmaElem::F16));
  };
  wgmma(p, dP);
  wgmma(q, dQ);
  k.op(Op::WgmmaCommit, Type::I8, 1);
  if (waitInLoop)
    k.op(Op::WgmmaWait, Type::I8, 1, 0, 0, 0, 0, 0);
  k.op(Op::Add, Type::I32, 1, i, i, inc);
  k.op(Op::ICmp, Type::I1, 1, more, i, n, 0, 36, uint8_t(Type::I32)); // ult
  const size_t br = k.op(Op::CondBr, Type::I8, 1, 0, more, loop, 0);
  k.code[br].c = uint32_t(k.code.size());
  if (!waitInLoop)
    k.op(Op::WgmmaWait, Type::I8, 1, 0, 0, 0, 0, 0);
  k.op(Op::ZExt, Type::I64, 1, wg64, wg32, 0, 0, 0, uint8_t(Type::I32));
  k.op(Op::PtrAdd, Type::Ptr, 1, o, dst, t64, 0, 16);
  k.op(Op::PtrAdd, Type::Ptr, 1, o2, o, wg64, 0, 64 * 16);
  k.op(Op::Store, Type::F32, 4, 0, o2, dQ, 0, uint32_t(Space::Global));
  k.op(Op::Ret, Type::I8, 1);
  locate(k);
  ScopedEnv oneHostThread("WAVE_EMU_THREADS", "1");
  Device d("emu:sm_90a");
  void *res = nullptr;
  EXPECT_EQ(wave_malloc(d.dev, 2 * 64 * 16, &res), WAVE_SUCCESS);
  EXPECT_EQ(wave_memset(d.dev, res, 0xff, 2 * 64 * 16), WAVE_SUCCESS);
  std::vector<uint8_t> args;
  pack(args, 0, res);
  wave_status_t s = launch(d.dev, assemble("sm_90a", 32, {k}), "regloop", 2, 64, args);
  std::string msg = wave_last_error();
  if (out) {
    out->resize(2 * 64 * 4);
    EXPECT_EQ(wave_memcpy_dtoh(d.dev, out->data(), res, 2 * 64 * 16), WAVE_SUCCESS);
  }
  wave_free(d.dev, res);
  wave::rt::fail(s, msg);
  return s;
}

} // namespace

// The tags a workgroup leaves in the frames name nothing of the next one. Workgroup 0 runs one
// step; warp 1's q registers keep the A tags of its Q. Workgroup 1 runs two steps, warp 0 first
// (its second step's Q is then the workgroup's as many-th A record as warp 1's Q was in
// workgroup 0, on the same registers), then warp 1 writes q0 with its P in flight: when the A
// indices restarted with every workgroup, that old tag named warp 0's Q of this workgroup and
// was reported as "a write to an A operand register ... issued ... by warp 0" (causal attention
// with TMA, samples/attention/attention_causal.wave -DSCORE_AHEAD=0). The same loop with the
// only wait after it still reports the second step's write of p0 in workgroup 1.
TEST(EmuWgmma, RegisterTagsOfAnEarlierWorkgroupAreRetired) {
  std::vector<float> out;
  ASSERT_EQ(runRegWgmmaLoop(true, &out), WAVE_SUCCESS) << wave_last_error();
  for (size_t e = 0; e < out.size(); ++e)
    ASSERT_EQ(out[e], 16.0f) << "element " << e;
  EXPECT_EQ(runRegWgmmaLoop(false, nullptr), WAVE_ERROR_LAUNCH);
  const std::string msg = wave_last_error();
  EXPECT_TRUE(contains(msg, "regloop: wgmma register hazard: a write to an A operand register "
                            "of a wgmma in flight at handmade.wave:7:3 in workgroup (1,0,0) "
                            "thread (0,0,0): frame bytes "))
      << msg;
  EXPECT_TRUE(contains(msg, "by warp 0 of its warpgroup reads as its A operand, which is still "
                            "in flight (no wgmma.wait_group of this thread has retired its "
                            "group yet"))
      << msg;
}

// samples/attention/attention_wgmma.wave for sm_90a with -DTMA=0 (B = 1, M = 128, K2 = 192: the prologue's
// scores, the loop, the epilogue), whose products take Q and P as register A operands and whose
// P*V accumulators stay in flight through the next tile's softmax. Unchanged it runs clean;
// with any one of its wgmma.wait_group counts raised by one, an accumulator that wait should
// have retired (the scores read by the softmax, O rescaled or divided) is read while in flight.
TEST(EmuWgmma, AttentionWithAWaitTooLateIsReported) {
  const std::string image =
      readFile(std::string(EMU_TEST_IMAGES) + "/attention_wgmma_sm_90a.wemu");
  ASSERT_FALSE(image.empty());
  Program p;
  ASSERT_EQ(loadProgram(image.data(), image.size(), p), WAVE_SUCCESS) << wave_last_error();
  ASSERT_EQ(p.kernels.size(), 1u);
  const KernelCode &kc = p.kernels[0];
  ASSERT_GE(kc.argsSize, 36u); // q, k, v, o, scale
  const size_t at = codeOffset(image, kc);
  ASSERT_NE(at, std::string::npos);
  Device d("emu:sm_90a");
  const size_t qBytes = size_t(128) * 128 * 2, kBytes = size_t(192) * 128 * 2;
  void *buf[4] = {};
  std::vector<uint8_t> args;
  for (int i = 0; i < 4; ++i) {
    const size_t bytes = i == 0 || i == 3 ? qBytes : kBytes;
    ASSERT_EQ(wave_malloc(d.dev, bytes, &buf[i]), WAVE_SUCCESS);
    std::vector<uint16_t> h(bytes / 2);
    for (size_t j = 0; j < h.size(); ++j)
      h[j] = floatToHalf(float(int((j * (7 + i)) % 9) - 4) / 8.0f);
    ASSERT_EQ(wave_memcpy_htod(d.dev, buf[i], h.data(), bytes), WAVE_SUCCESS);
    pack(args, 8 * i, buf[i]);
  }
  pack(args, 32, 0.125f);
  args.resize(kc.argsSize);
  auto run = [&](const std::string &img) {
    wave_module_t m = nullptr;
    wave_status_t s = wave_module_load_data(d.dev, img.data(), img.size(), &m);
    wave_kernel_t k = nullptr;
    if (!s)
      s = wave_module_get_kernel(m, kc.name.c_str(), &k);
    const uint32_t grid[3] = {1, 1, 1};
    if (!s)
      s = wave_launch(d.dev, nullptr, k, grid, kc.block, 0, args.data(), args.size());
    std::string msg = wave_last_error();
    wave_module_unload(m);
    wave::rt::fail(s, msg);
    return s;
  };
  EXPECT_EQ(run(image), WAVE_SUCCESS) << wave_last_error();
  int waits = 0, products = 0;
  for (size_t i = 0; i < kc.code.size(); ++i) {
    products += kc.code[i].op == uint16_t(Op::Wgmma) &&
                ((kc.code[i].imm >> 12) & kWgmmaRegA);
    if (kc.code[i].op != uint16_t(Op::WgmmaWait))
      continue;
    ++waits;
    std::string wrong = image;
    patchImm(wrong, at, i, kc.code[i].imm + 1);
    seal(wrong);
    EXPECT_EQ(run(wrong), WAVE_ERROR_LAUNCH) << "wait at instruction " << i;
    const std::string msg = wave_last_error();
    EXPECT_TRUE(contains(msg, "attention: wgmma register hazard: a read of an accumulator "
                              "register of a wgmma in flight at "))
        << msg;
    EXPECT_TRUE(contains(msg, "hold an accumulator (D) of the wgmma issued at ")) << msg;
    EXPECT_TRUE(contains(msg, "attention_wgmma.wave:")) << msg;
  }
  EXPECT_GE(waits, 3);
  EXPECT_GT(products, 0); // register A: Q and P
  for (void *b : buf)
    wave_free(d.dev, b);
}

} // namespace
