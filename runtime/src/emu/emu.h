// The CPU emulator's internal interface: a loaded (validated) emulator image, and the launch of
// one of its kernels over host memory. backend_emu.cpp wraps this in the runtime's Backend.
#ifndef WAVE_EMU_EMU_H
#define WAVE_EMU_EMU_H

#include "emu_image.h"
#include "wave/runtime.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace wave::emu {

struct KernelCode {
  std::string name;
  uint32_t block[3] = {0, 0, 0};
  uint32_t staticShared = 0;
  uint32_t frameBytes = 0;
  struct Arg {
    uint32_t slot, offset, size;
  };
  std::vector<Arg> args;
  uint32_t argsSize = 0; // bytes the packed argument buffer must have
  std::vector<uint8_t> init;
  std::vector<Inst> code;
  std::vector<uint32_t> extra;
  struct Loc {
    uint32_t file, line, col;
  };
  std::vector<Loc> locs;
  // Global atomics make the result depend on the order of workgroups (float sums, exchanged
  // values): such kernels run their workgroups in order on one host thread, deterministically.
  bool globalAtomics = false;
};

struct Program {
  std::string target;
  uint32_t waveSize = 64;
  std::vector<std::string> strings;
  std::vector<KernelCode> kernels;
};

/// Parses and validates an image (its checksum first); on failure returns
/// WAVE_ERROR_INVALID_IMAGE with the thread's message set. A validated program cannot make the interpreter index out of its
/// buffers, whatever its instructions compute.
wave_status_t loadProgram(const void *image, size_t size, Program &out);

/// True when the bytes start with the emulator image magic.
bool isEmuImage(const void *image, size_t size);

/// A live allocation of the emulated device (host memory).
struct Allocation {
  uintptr_t base;
  size_t size;
};

struct LaunchParams {
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t dynamicShared;
  const void *args;
  size_t argsSize;
  uint32_t waveSize;            // of the emulated device
  const char *archName;         // "gfx942", for messages
  std::vector<Allocation> heap; // sorted by base
  unsigned hostThreads = 1;     // workgroups are spread over this many host threads
  uint64_t stepLimit = 0;       // instructions one workgroup may execute; 0: kDefaultStepLimit
};

/// The default step limit (WAVE_EMU_STEP_LIMIT): instructions one workgroup may execute, all its
/// threads together, before the launch fails with WAVE_ERROR_STEP_LIMIT. About ten seconds of
/// one host thread on scalar code; the emulator tests of the suite all pass with a limit 64
/// times lower (docs/internals.md).
constexpr uint64_t kDefaultStepLimit = uint64_t(1) << 32;

/// Runs every workgroup of `kernel`; returns WAVE_ERROR_LAUNCH with a located message on the
/// first error (by workgroup order): a fault, a detected race, an out-of-bounds access, a trap;
/// WAVE_ERROR_STEP_LIMIT when that error is a workgroup running past the step limit.
wave_status_t runKernel(const Program &program, const KernelCode &kernel,
                        const LaunchParams &params);

// ---- lane semantics shared with the unit tests ----------------------------------------------

/// Executes a matrix instruction for one wave: `a[l]`, `b[l]`, `c[l]` point at lane l's operand
/// bytes (MmaShape sizes), `d[l]` at its result; lanes with a null `d` are inactive (their
/// operands read as zero).
void executeMma(Mma kind, uint32_t waveSize, const uint8_t *const *a, const uint8_t *const *b,
                const uint8_t *const *c, uint8_t *const *d);

/// wgmma (Op::Wgmma): the shared-memory byte offset of element (mn, kk) of an operand read
/// through matrix descriptor `desc`, where mn indexes M (A) or N (B) and kk indexes K;
/// `mnMajor` for a transposed operand (imm-trans-a/b 1: consecutive mn are contiguous), `es`
/// the element bytes. The canonical layouts of the PTX ISA with the swizzle applied to the
/// address bits (16-byte chunk bits 4.. XOR bits 7..): K-major, start + (mn / 8) * SBO +
/// (mn % 8) * W + kk * es; MN-major, start + (mn / (W / es)) * LBO + (kk / 8) * SBO +
/// (kk % 8) * W + (mn % (W / es)) * es, W the swizzle width. False with `why` set for a
/// descriptor the emulator does not model (no swizzle, a base offset).
bool wgmmaAddress(uint64_t desc, bool mnMajor, uint32_t es, uint32_t mn, uint32_t kk,
                  uint64_t &addr, std::string &why);
/// wgmma's f32 accumulator fragment: element i of lane l of warp w holds (row, col) of the
/// 64 x N matrix (row = 16w + l/4 + 8 ((i >> 1) & 1), col = 8 (i >> 2) + 2 (l % 4) + (i & 1)).
void wgmmaAccCoord(uint32_t warp, uint32_t lane, uint32_t i, uint32_t &row, uint32_t &col);
/// A wgmma operand element as f32 (f16, bf16, OCP e4m3 / e5m2 bytes at `p`).
float wgmmaElement(WgmmaElem e, const uint8_t *p);

/// NVIDIA shfl.sync: the source lane of `lane` and whether it is in range (else the lane keeps
/// its own value).
uint32_t shflSource(WaveOp kind, uint32_t lane, uint32_t b, uint32_t c, bool *inRange);

} // namespace wave::emu

#endif
