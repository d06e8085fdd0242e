// The emulator profiler's counting rules (runtime/src/emu/profile.h) on hand-written access
// patterns whose answers are known: global sectors and segments, shared-memory bank conflicts by
// phase, and occupancy by the target's limits (docs/internals.md, "Profiling counters").
#include "emu/profile.h"

#include <gtest/gtest.h>

#include <vector>

using namespace wave::emu::profile;

namespace {

// `lanes` lanes, lane l accessing `bytes` at base + l * stride.
std::vector<LaneAccess> strided(uint32_t lanes, uint64_t base, uint64_t stride, uint32_t bytes) {
  std::vector<LaneAccess> v;
  for (uint32_t l = 0; l < lanes; ++l)
    v.push_back({l, base + l * stride, bytes});
  return v;
}

GlobalCost global(const std::vector<LaneAccess> &v) { return globalCost(v.data(), v.size()); }

SharedCost shared(const std::vector<LaneAccess> &v, uint32_t width) {
  return sharedCost(v.data(), v.size(), width, BankRules{});
}

} // namespace

// ---- global memory ---------------------------------------------------------------------------

TEST(ProfileGlobal, AllLanesOneAddressIsOneSector) {
  GlobalCost c = global(strided(32, 4096, 0, 4));
  EXPECT_EQ(c.requested, 128u);
  EXPECT_EQ(c.unique, 4u);
  EXPECT_EQ(c.sectors, 1u);
  EXPECT_EQ(c.segments64, 1u);
  EXPECT_EQ(c.segments128, 1u);
  EXPECT_DOUBLE_EQ(c.efficiency(), 4.0 / 32.0);
}

TEST(ProfileGlobal, ConsecutiveWordsAreFourSectors) {
  GlobalCost c = global(strided(32, 4096, 4, 4));
  EXPECT_EQ(c.requested, 128u);
  EXPECT_EQ(c.unique, 128u);
  EXPECT_EQ(c.sectors, 4u);
  EXPECT_EQ(c.segments64, 2u);
  EXPECT_EQ(c.segments128, 1u);
  EXPECT_DOUBLE_EQ(c.efficiency(), 1.0);
}

TEST(ProfileGlobal, Stride128BytesIsOneSectorPerLane) {
  GlobalCost c = global(strided(32, 0, 128, 4));
  EXPECT_EQ(c.sectors, 32u);
  EXPECT_EQ(c.segments64, 32u);
  EXPECT_EQ(c.segments128, 32u);
  EXPECT_DOUBLE_EQ(c.efficiency(), 128.0 / (32 * 32));
}

TEST(ProfileGlobal, MisalignedAccessesStraddleSectors) {
  // 32 lanes x 4 bytes starting 16 bytes into a sector: 5 sectors, 3 segments of 64 bytes.
  GlobalCost c = global(strided(32, 16, 4, 4));
  EXPECT_EQ(c.sectors, 5u);
  EXPECT_EQ(c.segments64, 3u);
  EXPECT_EQ(c.segments128, 2u);
  // One lane reading 8 bytes across a sector boundary touches both sectors.
  std::vector<LaneAccess> one{{0, 28, 8}};
  EXPECT_EQ(global(one).sectors, 2u);
}

TEST(ProfileGlobal, WideLanesAndWave64) {
  // 64 lanes x 16 contiguous bytes (a dwordx4 load of a wave64): 1024 bytes, 32 sectors.
  GlobalCost c = global(strided(64, 0, 16, 16));
  EXPECT_EQ(c.sectors, 32u);
  EXPECT_EQ(c.segments128, 8u);
  EXPECT_DOUBLE_EQ(c.efficiency(), 1.0);
  // Inactive lanes (no access) and empty accesses cost nothing.
  EXPECT_EQ(global({}).sectors, 0u);
  EXPECT_DOUBLE_EQ(global({}).efficiency(), 0.0);
}

TEST(ProfileGlobal, CostsAddUp) {
  GlobalCost a = global(strided(32, 0, 4, 4)), b = global(strided(32, 0, 128, 4));
  a.add(b);
  EXPECT_EQ(a.sectors, 36u);
  EXPECT_EQ(a.requested, 256u);
}

// ---- shared memory ---------------------------------------------------------------------------

TEST(ProfileShared, PhaseWidths) {
  BankRules r;
  EXPECT_EQ(lanesPerPhase(1, r), 32u);
  EXPECT_EQ(lanesPerPhase(2, r), 32u);
  EXPECT_EQ(lanesPerPhase(4, r), 32u);
  EXPECT_EQ(lanesPerPhase(8, r), 16u);
  EXPECT_EQ(lanesPerPhase(12, r), 8u);
  EXPECT_EQ(lanesPerPhase(16, r), 8u);
}

TEST(ProfileShared, AllLanesOneAddressIsABroadcast) {
  SharedCost c = shared(strided(32, 64, 0, 4), 4);
  EXPECT_EQ(c.phases, 1u);
  EXPECT_EQ(c.wavefronts, 1u);
  EXPECT_EQ(c.conflicts(), 0u);
  EXPECT_EQ(c.requested, 128u);
}

TEST(ProfileShared, ConsecutiveWordsAreConflictFree) {
  SharedCost c = shared(strided(32, 0, 4, 4), 4);
  EXPECT_EQ(c.phases, 1u);
  EXPECT_EQ(c.conflicts(), 0u);
  // Half words: two lanes share each word (a broadcast), still one wavefront.
  EXPECT_EQ(shared(strided(32, 0, 2, 2), 2).conflicts(), 0u);
}

TEST(ProfileShared, StrideTwoWordsIsTwoWay) {
  SharedCost c = shared(strided(32, 0, 8, 4), 4);
  EXPECT_EQ(c.phases, 1u);
  EXPECT_EQ(c.wavefronts, 2u);
  EXPECT_EQ(c.conflicts(), 1u);
}

TEST(ProfileShared, Stride32WordsIs32Way) {
  SharedCost c = shared(strided(32, 0, 128, 4), 4);
  EXPECT_EQ(c.wavefronts, 32u);
  EXPECT_EQ(c.conflicts(), 31u);
  // Padding the row by one word (stride 33 words) removes every conflict.
  EXPECT_EQ(shared(strided(32, 0, 132, 4), 4).conflicts(), 0u);
}

TEST(ProfileShared, EveryBankTwice) {
  // Lanes 0-15 read words 0-15, lanes 16-31 words 32-47: banks 0-15 each hold two words.
  std::vector<LaneAccess> v;
  for (uint32_t l = 0; l < 32; ++l)
    v.push_back({l, 4ull * (l % 16 + 32 * (l / 16)), 4});
  SharedCost c = shared(v, 4);
  EXPECT_EQ(c.wavefronts, 2u);
  EXPECT_EQ(c.conflicts(), 1u);
  // 64-bit accesses over 256 contiguous bytes touch every bank twice, but in two half-warp
  // phases that are each conflict-free.
  SharedCost d = shared(strided(32, 0, 8, 8), 8);
  EXPECT_EQ(d.phases, 2u);
  EXPECT_EQ(d.wavefronts, 2u);
  EXPECT_EQ(d.conflicts(), 0u);
}

TEST(ProfileShared, Phases128Bit) {
  // 32 lanes x 16 contiguous bytes: four quarter-warp phases, conflict-free.
  SharedCost c = shared(strided(32, 0, 16, 16), 16);
  EXPECT_EQ(c.phases, 4u);
  EXPECT_EQ(c.wavefronts, 4u);
  EXPECT_EQ(c.conflicts(), 0u);
  // A 32-byte stride: within each phase of 8 lanes, lanes l and l + 4 share banks: 2-way.
  SharedCost d = shared(strided(32, 0, 32, 16), 16);
  EXPECT_EQ(d.phases, 4u);
  EXPECT_EQ(d.wavefronts, 8u);
  EXPECT_EQ(d.conflicts(), 4u);
  // A 128-byte stride: all 8 lanes of a phase on the same 4 banks: 8-way per phase.
  SharedCost e = shared(strided(32, 0, 128, 16), 16);
  EXPECT_EQ(e.wavefronts, 32u);
  EXPECT_EQ(e.conflicts(), 28u);
}

TEST(ProfileShared, Wave64HalvesAreSeparatePhases) {
  // A wave64 reading 64 consecutive words: lanes 0-31 and 32-63 are two phases, both clean.
  SharedCost c = shared(strided(64, 0, 4, 4), 4);
  EXPECT_EQ(c.phases, 2u);
  EXPECT_EQ(c.conflicts(), 0u);
  // Only the upper half active: one phase.
  std::vector<LaneAccess> upper;
  for (uint32_t l = 32; l < 64; ++l)
    upper.push_back({l, 4ull * l, 4});
  EXPECT_EQ(shared(upper, 4).phases, 1u);
}

// ---- occupancy -------------------------------------------------------------------------------

TEST(ProfileOccupancy, LdsLimitsGfx942) {
  // 256 threads = 4 waves of 64; 20 KB of LDS: 3 workgroups of a 64 KB CU (12 of 32 waves).
  Occupancy o = occupancy("gfx942", 64, 256, 20 * 1024, Registers{});
  ASSERT_TRUE(o.knownTarget);
  EXPECT_EQ(o.maxWaves, 32u);
  EXPECT_EQ(o.wavesPerBlock, 4u);
  EXPECT_EQ(o.byLds, 3u);
  EXPECT_EQ(o.blocks, 3u);
  EXPECT_EQ(o.waves(), 12u);
  EXPECT_STREQ(o.limitedBy, "lds");
  EXPECT_FALSE(o.registersKnown);
  EXPECT_DOUBLE_EQ(o.fraction(), 12.0 / 32.0);
}

TEST(ProfileOccupancy, RegistersLimitGfx942) {
  // 128 VGPRs + 128 AGPRs: the code object's .vgpr_count is their total, 256 of 512: 2 waves
  // per SIMD, 8 per CU, 2 workgroups of 4 waves.
  Registers r;
  r.vgprs = 256;
  r.agprs = 128;
  Occupancy o = occupancy("gfx942", 64, 256, 0, r);
  EXPECT_TRUE(o.registersKnown);
  EXPECT_EQ(o.byRegisters, 2u);
  EXPECT_EQ(o.blocks, 2u);
  EXPECT_STREQ(o.limitedBy, "registers");
}

TEST(ProfileOccupancy, AgprsAreInTheVgprCountGfx942) {
  // The 256x256x64 GEMM tile: .vgpr_count 504 (248 VGPRs + 256 AGPRs, .amdhsa_accum_offset
  // 248): one wave per SIMD, one workgroup of 4 waves (adding the AGPRs again said none fit).
  Registers r;
  r.vgprs = 504;
  r.agprs = 256;
  Occupancy o = occupancy("gfx942", 64, 256, 65536, r);
  EXPECT_EQ(o.byRegisters, 1u);
  EXPECT_EQ(o.blocks, 1u);
  EXPECT_EQ(o.waves(), 4u);
}

TEST(ProfileOccupancy, NvidiaSharedMemoryAndRegisters) {
  // sm_90: 228 KB per SM, 1 KB reserved per block: 48 KB blocks -> 4 blocks.
  Occupancy o = occupancy("sm_90", 32, 256, 48 * 1024, Registers{});
  EXPECT_EQ(o.maxWaves, 64u);
  EXPECT_EQ(o.byLds, 4u);
  EXPECT_EQ(o.waves(), 32u);
  // 255 registers per thread: 8192 per warp, 8 warps per SM: one block of 8 warps.
  Registers r;
  r.regs = 255;
  Occupancy p = occupancy("sm_90", 32, 256, 0, r);
  EXPECT_EQ(p.byRegisters, 1u);
  EXPECT_EQ(p.waves(), 8u);
  // An unknown target says so instead of guessing.
  EXPECT_FALSE(occupancy("gfx000", 64, 256, 0, Registers{}).knownTarget);
}

// ---- instruction classes and reports ---------------------------------------------------------

TEST(ProfileClasses, MemoryByAddressSpace) {
  wave::emu::Inst load{};
  load.op = uint16_t(wave::emu::Op::Load);
  load.imm = uint32_t(wave::emu::Space::Shared);
  EXPECT_EQ(classify(load), SharedMem);
  load.imm = uint32_t(wave::emu::Space::Global);
  EXPECT_EQ(classify(load), GlobalMem);
  wave::emu::Inst mma{};
  mma.op = uint16_t(wave::emu::Op::Mma);
  EXPECT_EQ(classify(mma), Mma);
  wave::emu::Inst fma{};
  fma.op = uint16_t(wave::emu::Op::Fma);
  EXPECT_EQ(classify(fma), Alu);
  wave::emu::Inst bar{};
  bar.op = uint16_t(wave::emu::Op::Barrier);
  EXPECT_EQ(classify(bar), Barrier);
  bar.op = uint16_t(wave::emu::Op::BarArrive); // bar.arrive: a barrier instruction too
  EXPECT_EQ(classify(bar), Barrier);
}

TEST(ProfileReport, JsonHasTheDocumentedKeys) {
  KernelProfile k;
  k.name = "k\"q";
  k.target = "gfx942";
  k.waveSize = 64;
  k.launches = 1;
  k.block[0] = 256;
  k.block[1] = k.block[2] = 1;
  Site s;
  s.file = "a.wave";
  s.line = 3;
  s.col = 7;
  s.op = "load";
  s.width = 4;
  s.executions = 1;
  auto v = strided(64, 0, 4, 4);
  s.global = globalCost(v.data(), v.size());
  k.sites.push_back(s);
  std::string json = renderJson({k}, "emu:gfx942");
  for (const char *key : {"\"profile_version\": 1", "\"name\": \"k\\\"q\"", "\"occupancy\": {",
                          "\"instructions\": {", "\"per_wave\"", "\"global\": {",
                          "\"shared\": {", "\"sites\": [", "\"location\": \"a.wave:3:7\"",
                          "\"efficiency\": 1.000000", "\"sectors\": 8"})
    EXPECT_NE(json.find(key), std::string::npos) << key << " in " << json;
  std::string text = renderText({k}, "emu:gfx942");
  EXPECT_NE(text.find("a.wave:3:7"), std::string::npos) << text;
  EXPECT_NE(text.find("registers unknown"), std::string::npos) << text;
}
