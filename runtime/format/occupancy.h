// Occupancy by a target's limits: how many workgroups (and waves) of a kernel a compute unit
// (AMD CU, RDNA WGP, NVIDIA SM) holds at once, from the kernel's threads per workgroup, wave
// size, shared memory and registers. One definition for the compiler (`wavec --emit=metadata`,
// src/driver/metadata.cpp) and the emulator's profiler (runtime/src/emu/profile.cpp); header
// only, like emu_image.h beside it. docs/internals.md ("Profiling counters") lists the limits.
#ifndef WAVE_FORMAT_OCCUPANCY_H
#define WAVE_FORMAT_OCCUPANCY_H

#include <algorithm>
#include <cstdint>
#include <string>

namespace wave::occupancy {

/// The registers a code object says a kernel uses (-1: not known).
struct Registers {
  int vgprs = -1, agprs = -1, sgprs = -1; // AMD
  int regs = -1;                          // NVIDIA, per thread
  bool known() const { return vgprs >= 0 || regs >= 0; }
};

/// Resident workgroups (and waves) per compute unit.
struct Occupancy {
  bool knownTarget = false;
  uint32_t maxWaves = 0;     // waves a CU/SM holds at most
  uint32_t wavesPerBlock = 0;
  uint32_t blocks = 0;       // resident workgroups by the tightest limit
  uint32_t byWaves = 0, byLds = 0, byRegisters = 0; // workgroups each limit allows (0xffffffff:
                                                    // no limit)
  bool registersKnown = false;
  const char *limitedBy = "";  // "waves", "lds", "registers"
  const char *unit = "";       // "CU", "WGP", "SM"
  uint32_t ldsPerUnit = 0;
  uint32_t waves() const { return blocks * wavesPerBlock; }
  double fraction() const { return maxWaves ? double(waves()) / maxWaves : 0; }
};

/// A compute unit's limits.
struct UnitLimits {
  const char *targets[3];
  const char *unit;
  uint32_t simds, wavesPerSimd; // wave32-equivalent waves per SIMD on RDNA (wavesPerSimd * 32 /
                                // wave size)
  uint32_t maxBlocks, lds, ldsGranule, ldsReserved;
  bool amd, rdna;
  uint32_t regBudget, regGranule; // AMD: VGPRs per lane per SIMD and the allocation granule
                                  // (wave32 on RDNA); NVIDIA: registers per SM, per-warp granule
};

inline constexpr UnitLimits kLimits[] = {
    {{"gfx942", "gfx90a", nullptr}, "CU", 4, 8, 32, 65536, 512, 0, true, false, 512, 8},
    {{"gfx1100", nullptr, nullptr}, "WGP", 4, 16, 32, 131072, 512, 0, true, true, 1536, 24},
    {{"sm_80", nullptr, nullptr}, "SM", 4, 16, 32, 167936, 128, 1024, false, false, 65536, 256},
    {{"sm_90", "sm_90a", nullptr}, "SM", 4, 16, 32, 233472, 128, 1024, false, false, 65536, 256},
};

inline uint32_t roundUp(uint32_t v, uint32_t g) { return g ? (v + g - 1) / g * g : v; }

/// Occupancy of a kernel on `target` with `threads` threads per workgroup in waves of
/// `waveSize`, `ldsBytes` of shared memory per workgroup and the given registers.
inline Occupancy occupancy(const std::string &target, uint32_t waveSize, uint32_t threads,
                           uint32_t ldsBytes, const Registers &regs) {
  Occupancy o;
  const UnitLimits *lim = nullptr;
  for (const UnitLimits &l : kLimits)
    for (const char *t : l.targets)
      if (t && target == t)
        lim = &l;
  if (!lim || !waveSize || !threads)
    return o;
  o.knownTarget = true;
  o.unit = lim->unit;
  o.ldsPerUnit = lim->lds;
  const bool rdna = lim->rdna;
  const uint32_t perSimd = rdna ? lim->wavesPerSimd * 32 / waveSize : lim->wavesPerSimd;
  o.maxWaves = lim->simds * perSimd;
  o.wavesPerBlock = (threads + waveSize - 1) / waveSize;
  o.byWaves = std::min(lim->maxBlocks, o.maxWaves / o.wavesPerBlock);
  o.byLds = UINT32_MAX;
  if (ldsBytes || lim->ldsReserved)
    o.byLds = lim->lds / (roundUp(ldsBytes, lim->ldsGranule) + lim->ldsReserved);
  o.byRegisters = UINT32_MAX;
  if (lim->amd && regs.vgprs >= 0) {
    o.registersKnown = true;
    const uint32_t scale = rdna ? waveSize / 32 : 1; // a wave64 on RDNA takes twice the file
    // The code object's .vgpr_count already counts the AGPRs where the file is unified
    // (gfx90a, gfx942: the VGPRs aligned to 4, then the AGPRs; .amdhsa_next_free_vgpr =
    // .amdhsa_accum_offset + AGPRs in --emit=asm), so they are not added again.
    const uint32_t used = roundUp(uint32_t(regs.vgprs), lim->regGranule / scale);
    const uint32_t budget = lim->regBudget / scale;
    const uint32_t simdWaves = used ? std::min(perSimd, budget / used) : perSimd;
    o.byRegisters = simdWaves * lim->simds / o.wavesPerBlock;
  } else if (!lim->amd && regs.regs >= 0) {
    o.registersKnown = true;
    const uint32_t perWarp = roundUp(uint32_t(std::max(regs.regs, 1)) * 32, lim->regGranule);
    o.byRegisters = (lim->regBudget / perWarp) / o.wavesPerBlock;
  }
  o.blocks = std::min({o.byWaves, o.byLds, o.byRegisters});
  o.limitedBy = o.blocks == o.byWaves ? "waves" : o.blocks == o.byLds ? "lds" : "registers";
  return o;
}

} // namespace wave::occupancy

#endif
