// The hardware facts wavec compiles for, as data: one row per target and one row per matrix
// instruction kind (docs/language.md section 8, docs/hardware.md sections 3 and 7). Passes query this
// table; no pass tests a target's name.
#pragma once

#include "frontend/scalar_type.h"
#include "symbolic/index_expr.h"

#include <functional>
#include <string>
#include <vector>

namespace wave {

enum class Vendor { AMD, NVIDIA };
// Which family of matrix instructions a target has; kinds are looked up by (name, family), so
// F32_16x16x16_F16 is an MFMA on CDNA and a WMMA on RDNA3. Wgmma (NVIDIA sm_90a) is executed by
// a warpgroup of 4 consecutive warps, its A and B operands read from shared memory through
// matrix descriptors (docs/language.md section 12); a target offers it beside its own family
// (`TargetInfo::warpgroupMma`).
enum class MmaFamily { MFMA, WMMA, MmaSync, Wgmma };

// Where element g of lane l of one MMA operand sits: (row, col) of the operand's 2-D tile.
// A is M x K, B is N x K (Wave's convention: B stored N x K), C/D is M x N.
// `ldmatrix` (NVIDIA) loads a whole operand fragment from shared memory: `tiles` 8x8 matrices
// of 16-bit elements, lane l supplying the address of (row, col) = (ldRow(l), ldCol(l)) of the
// operand tile; register j of every lane then holds the fragment's elements 2j, 2j + 1. Zero
// tiles: the layout has no ldmatrix form.
struct LaneLayout {
  unsigned elements; // per lane
  sym::IndexExpr (*row)(const sym::IndexExpr &lane, const sym::IndexExpr &g);
  sym::IndexExpr (*col)(const sym::IndexExpr &lane, const sym::IndexExpr &g);
  unsigned ldTiles = 0;
  sym::IndexExpr (*ldRow)(const sym::IndexExpr &lane) = nullptr;
  sym::IndexExpr (*ldCol)(const sym::IndexExpr &lane) = nullptr;
  // The same fragment from a tile stored transposed (the operand's row dim innermost): with
  // `ldmatrix .trans`, lane l supplies the address of (ldTransRow(l), ldTransCol(l)), the first
  // of 8 elements along the row dim; null when there is no such form.
  sym::IndexExpr (*ldTransRow)(const sym::IndexExpr &lane) = nullptr;
  sym::IndexExpr (*ldTransCol)(const sym::IndexExpr &lane) = nullptr;
};

struct MmaKind {
  const char *name; // Wave's MMAType spelling: ACC_MxNxK_IN
  MmaFamily family;
  unsigned m, n, k;
  std::vector<ScalarType> inputs; // operand element types it accepts (lhs and rhs alike)
  ScalarType acc;
  unsigned waveSize;
  bool isVirtual; // implemented by chaining native instructions (K8 kinds)
  LaneLayout a, b, c;
  // Waves (of waveSize threads) that execute one instruction together: 4 for a wgmma warpgroup,
  // whose lane layouts then number the group's 128 threads (lane = thread id % 128). A kernel
  // whose mma uses such a kind distributes over groups: each wave of its constraints stands
  // for a warpgroup (docs/language.md section 12).
  unsigned groupWaves = 1;
};

struct TargetInfo {
  const char *name; // --target spelling
  Vendor vendor;
  const char *description;
  std::vector<unsigned> waveSizes; // supported, first = default
  unsigned ldsBytes;               // shared memory per workgroup (static limit)
  // Shared memory a workgroup may use when the kernel opts in (NVIDIA: dynamic shared memory
  // above 48 KB, cuFuncSetAttribute); equal to ldsBytes where there is no such opt-in.
  unsigned ldsOptInBytes;
  unsigned maxThreadsPerBlock;
  MmaFamily mmaFamily;
  std::vector<const char *> mmaKinds; // available kinds, best first per operand type
  const char *llvmTriple;
  const char *llvmCpu;
  const char *llvmFeatures;
  // Launch limits: workgroups per grid axis, and (AMD) threads per grid axis, 0 = none.
  uint64_t maxGrid[3];
  uint64_t maxGridThreads;
  // AMD buffer instructions (masked global accesses, docs/hardware.md 2.4): word 3 of a raw buffer
  // resource (V#) that range-checks the offset against num_records; 0 = not used. gfx9: data
  // format 32 (must be nonzero), num format float; gfx10+: the same plus bit 24 (reserved, 1)
  // and OOB_SELECT = 3 (raw: check the offset), which the emulator honours when
  // `bufferOobSelect` is set.
  uint32_t bufferRsrcWord3 = 0;
  bool bufferOobSelect = false;
  // Offers the warpgroup kinds (MmaFamily::Wgmma) of `mmaKinds` beside its own family.
  bool warpgroupMma = false;
  // Compute units (NVIDIA: SMs) of the target's reference card, for the workgroup-order model
  // (passes/schedule.cpp, planRaster); 0: not modeled.
  unsigned computeUnits = 0;
  // The LDS-DMA form of the buffer load (`buffer_load_dword ... lds`, LLVM's
  // llvm.amdgcn.raw.buffer.load.lds: 1, 2 or 4 bytes per lane written to LDS at M0 + 4 x lane):
  // CDNA (gfx90a, gfx942); RDNA3 (gfx11) has no LDS DMA.
  bool ldsDma = false;
  unsigned defaultWaveSize() const { return waveSizes.front(); }
};

const std::vector<TargetInfo> &allTargets();
const TargetInfo *findTarget(const std::string &name);
std::vector<std::string> targetNames();
const TargetInfo &defaultTarget();

const std::vector<MmaKind> &allMmaKinds();
// The kind of this name on this target, or null when the target lacks it.
const MmaKind *findMmaKind(const TargetInfo &t, const std::string &name);
// True when some target has a kind of this name (so the name is valid, just maybe unavailable).
bool isMmaKindName(const std::string &name);
std::vector<std::string> mmaKindNames();
// The target's preferred kind for these operand and accumulator types (mma = auto); null when
// the target has none. Kinds executed by a group of waves are skipped unless `groupFits`
// accepts them (they need tiles and operands that suit them: sema decides).
const MmaKind *pickMmaKind(const TargetInfo &t, ScalarType in, ScalarType acc,
                           const std::function<bool(const MmaKind &)> &groupFits = {});
// MFMA only: the target's 32x32 kind that does the work of `k` (a 16x16 kind, as `mma = auto`
// picks it) with the same operand and accumulator types and half its K, so the same operand
// registers per lane per instruction (F32_16x16x16_F16 -> F32_32x32x8_F16, 16x16x32 fp8/i8 ->
// 32x32x16, gfx90a's I32_16x16x16_I8 -> I32_32x32x8_I8); null when there is none. Sema's
// chooseMfmaKinds decides by tile whether `auto` takes it (docs/internals.md "MFMA shape").
const MmaKind *wideMfmaKind(const TargetInfo &t, const MmaKind &k);
// Kind names available on the target, comma-separated, for messages.
std::string availableKinds(const TargetInfo &t);

// `wavec --print-targets`.
std::string describeTargets();

} // namespace wave
