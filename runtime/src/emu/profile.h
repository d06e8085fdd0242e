// The emulator's profiler (wave-run --profile): memory-system counters per memory instruction
// site and per kernel, the instruction mix, and occupancy by the target's limits.
//
// Two layers:
//  - Pure counting functions (globalCost, sharedCost, occupancy) over hand-made inputs: one
//    wave's lane accesses of one execution of a memory instruction. tests/unit/profile_test.cpp
//    calls them directly on access patterns with known answers.
//  - A Recorder the interpreter (interp.cpp) feeds while it runs a workgroup, and a Collector
//    that gathers every launch's KernelProfile while it is installed (setCollector). With no
//    collector installed the interpreter's only extra work is a null-pointer test per straight-line
//    run and per memory access.
//
// The rules (sectors, segments, banks, phases, occupancy limits) are described in
// docs/internals.md, "Profiling counters".
#ifndef WAVE_EMU_PROFILE_H
#define WAVE_EMU_PROFILE_H

#include "emu_image.h"
#include "occupancy.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace wave::emu {
struct Program;
struct KernelCode;
} // namespace wave::emu

namespace wave::emu::profile {

// ---- pure counting -------------------------------------------------------------------------

/// One lane's access in one execution of a memory instruction by a wave: `bytes` from `addr`.
struct LaneAccess {
  uint32_t lane;
  uint64_t addr;
  uint32_t bytes;
};

/// Global memory cost of one or more wave executions (fields add up over executions).
struct GlobalCost {
  uint64_t requested = 0;   // bytes the lanes asked for (a byte two lanes read counts twice)
  uint64_t unique = 0;      // distinct bytes among them
  uint64_t sectors = 0;     // distinct aligned 32-byte sectors touched
  uint64_t segments64 = 0;  // distinct aligned 64-byte segments
  uint64_t segments128 = 0; // distinct aligned 128-byte segments
  void add(const GlobalCost &o);
  /// unique / (sectors * 32): 1 when every byte of every sector moved was asked for; 0 with no
  /// sectors.
  double efficiency() const;
};

constexpr uint32_t kSectorBytes = 32;

/// The sectors and segments one wave execution touches.
GlobalCost globalCost(const LaneAccess *accesses, size_t n);

/// Shared memory (LDS) banks: `banks` banks of `bankBytes` bytes; word w (address / bankBytes)
/// is in bank w % banks. A phase serves banks * bankBytes bytes: lanesPerPhase() lanes.
struct BankRules {
  uint32_t banks = 32;
  uint32_t bankBytes = 4;
};

/// Lanes served together in one phase for an access of `width` bytes per lane: all 32 for up to
/// 4 bytes, 16 for 8 bytes (half-warps), 8 for 16 bytes (quarter-warps); widths are rounded up
/// to a power of two.
uint32_t lanesPerPhase(uint32_t width, const BankRules &rules);

/// Shared memory cost of one or more wave executions.
struct SharedCost {
  uint64_t requested = 0;  // bytes the lanes asked for
  uint64_t phases = 0;     // phases with at least one active lane
  uint64_t wavefronts = 0; // per phase: the most distinct words any one bank must serve
  /// Extra wavefronts (bank conflicts): wavefronts - phases.
  uint64_t conflicts() const { return wavefronts - phases; }
  void add(const SharedCost &o);
};

/// One wave execution of a shared access of `width` bytes per lane (the instruction's width;
/// a masked lane may access less). Lanes sharing a word in a phase are served by one broadcast.
SharedCost sharedCost(const LaneAccess *accesses, size_t n, uint32_t width,
                      const BankRules &rules);

/// Register use of the compiled code object (wavec --emit=metadata), -1 where unknown.
// Registers, occupancy: shared with the compiler (runtime/format/occupancy.h).
using occupancy::Occupancy;
using occupancy::Registers;
using occupancy::occupancy;

// ---- what one kernel's launches measured ----------------------------------------------------

/// Instruction classes of the mix.
enum Class : uint8_t { Mma, Alu, GlobalMem, SharedMem, Barrier, Shuffle, Other, kClasses };
const char *className(Class c);
Class classify(const Inst &in);

/// One memory instruction of the image.
struct Site {
  uint32_t pc = 0;
  std::string file; // source location ("" when the image has none)
  uint32_t line = 0, col = 0;
  std::string op;    // "load", "store", "atomic", "buffer_load", "cp.async", "ldmatrix", ...
  bool shared = false;
  uint32_t width = 0;       // bytes per lane of one execution
  uint64_t executions = 0;  // wave executions
  uint64_t laneAccesses = 0;
  GlobalCost global;
  SharedCost lds;
};

struct KernelProfile {
  std::string name, target;
  uint32_t waveSize = 0;
  uint64_t launches = 0;
  uint32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0}; // of the last launch
  uint32_t ldsBytes = 0;                               // static + dynamic, per workgroup
  uint64_t threads = 0, waves = 0;                     // over every launch
  std::array<uint64_t, kClasses> threadInsts{};        // instructions each thread executed, summed
  uint64_t mmaWaveInsts = 0;                           // matrix instructions, per wave execution
  // sm_90a wgmma (per warp execution, as Nsight Compute's smsp__sass_inst_executed_op_shared_gmma
  // counts them) and the operand bytes they read from shared memory: per warpgroup instruction
  // A's 64 rows (when not in registers) and B once; read by the tensor cores, not LSU loads.
  uint64_t wgmmaWaveInsts = 0, wgmmaSharedBytes = 0;
  // TMA loads: per box row, the 32-byte sectors of its part outside the tensor (rounded up),
  // which Nsight Compute counts with the bytes L1 receives from L2 for TMA loads
  // (l1tex__m_xbar2l1tex_read_sectors_mem_global_op_tma_ld; docs/performance.md).
  uint64_t tmaFillSectors = 0;
  std::vector<Site> sites;                             // by pc
  Registers registers;                                 // filled in by the caller (wave-run)
  void merge(const KernelProfile &o);
  GlobalCost globalTotal() const;
  SharedCost sharedTotal() const;
};

/// Gathers the profiles of every launch while installed; launches of one kernel add up.
class Collector {
public:
  void add(const KernelProfile &k);
  std::vector<KernelProfile> kernels() const;

private:
  mutable std::mutex mutex_;
  std::vector<KernelProfile> kernels_;
};

/// Installs (or, with null, removes) the process's collector: launches profile while one is.
void setCollector(Collector *c);
Collector *collector();

/// The target's bank rules (every target: 32 banks of 4 bytes; docs/internals.md).
BankRules bankRules(const std::string &target);

/// Records one workgroup after another for the interpreter (one Recorder per host thread).
class Recorder {
public:
  Recorder(const Program &p, const KernelCode &k, uint32_t threads, uint32_t waveSize,
           const std::string &target);
  /// Thread `thread` accessed memory at instruction `pc`; `first` is false for further pieces
  /// of the same execution (masked elements).
  void access(uint32_t thread, uint32_t pc, uint64_t addr, uint32_t bytes, bool first = true) {
    events_[thread].push_back({pc, bytes, addr, first});
  }
  /// Thread-executed instructions [first, last] (a straight-line run).
  void run(uint32_t first, uint32_t last) {
    const uint32_t *a = &prefix_[size_t(first) * kClasses], *b = &prefix_[size_t(last + 1) * kClasses];
    for (unsigned c = 0; c < kClasses; ++c)
      counts_[c] += b[c] - a[c];
  }
  /// The threads [first, first + count) of one wave have all stopped: their accesses since the
  /// last flush group into wave executions (the k-th execution of a pc by each lane together).
  void flushWave(uint32_t first, uint32_t count);
  /// One wave execution computed by the interpreter itself (ldmatrix, matrix instructions).
  void waveExecution(uint32_t pc, const std::vector<LaneAccess> &lanes);
  void mma() { ++profile_.mmaWaveInsts; }
  void tmaFill(uint64_t sectors) { profile_.tmaFillSectors += sectors; }
  /// One warp's part of a wgmma, which reads `sharedBytes` of the warpgroup's operands.
  void wgmma(uint64_t sharedBytes) {
    ++profile_.mmaWaveInsts;
    ++profile_.wgmmaWaveInsts;
    profile_.wgmmaSharedBytes += sharedBytes;
  }
  void workgroup(uint32_t threads);
  /// The profile so far (instruction counts folded in).
  KernelProfile finish();

private:
  struct Event {
    uint32_t pc, bytes;
    uint64_t addr;
    bool first;
  };
  Site &site(uint32_t pc);
  const KernelCode &k_;
  const std::vector<std::string> *strings_; // the program's file names
  uint32_t wave_;
  BankRules rules_;
  std::vector<uint32_t> prefix_; // per pc and class: instructions of the class before the pc
  std::array<uint64_t, kClasses> counts_{};
  std::vector<std::vector<Event>> events_; // per thread of the workgroup
  std::unordered_map<uint32_t, size_t> sites_;
  KernelProfile profile_;
};

// ---- reports -------------------------------------------------------------------------------

/// The text report (wave-run --profile).
std::string renderText(const std::vector<KernelProfile> &kernels, const std::string &device);
/// The JSON report (wave-run --profile-format=json; docs/user-guide.md lists the fields).
std::string renderJson(const std::vector<KernelProfile> &kernels, const std::string &device);

} // namespace wave::emu::profile

#endif // WAVE_EMU_PROFILE_H
