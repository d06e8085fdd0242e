// The thread-layout planner (src/passes/thread_layout.h): layouts of the target table's matrix
// kinds and hand-made ones; every plan is checked by replaying it element by element.
#include "target/target_table.h"
#include "passes/thread_layout.h"

#include <gtest/gtest.h>

namespace wave {
namespace {

using sym::IndexExpr;
const IndexExpr T0 = IndexExpr::symbol("$T0");
const IndexExpr G = IndexExpr::symbol("$g");

int64_t value(const IndexExpr &e, int64_t t0, int64_t g, const CloneAssign &clones) {
  std::map<std::string, IndexExpr> subs{{"$T0", IndexExpr(t0)}, {"$g", IndexExpr(g)}};
  for (const auto &[s, v] : clones)
    subs[s] = IndexExpr(v);
  auto v = e.subs(subs).asInteger();
  EXPECT_TRUE(v.has_value()) << e.str();
  return v.value_or(-1);
}

// Replays the plan: every element of every lane of the first wave must get the source element
// at the same coordinates (on the source's dims).
void expectPlanMoves(const RelayoutPlan &plan, const ThreadLayout &src, const ThreadLayout &dst,
                     int64_t waveSize) {
  ASSERT_NE(plan.kind, RelayoutPlan::Impossible) << plan.why;
  for (size_t c = 0; c < plan.dstClones.size(); ++c)
    for (int64_t e = 0; e < dst.elems; ++e)
      for (int64_t l = 0; l < waveSize; ++l) {
        size_t sc = 0;
        int64_t se = e, sl = l;
        if (plan.kind == RelayoutPlan::InLane) {
          sc = plan.inLane[c][e].srcClone;
          se = plan.inLane[c][e].elem;
        } else if (plan.kind == RelayoutPlan::CrossLane) {
          const auto &p = plan.crossLane[c][e];
          sl = p.lane.at(l);
          const auto &pick = p.candidates.at(p.choice.at(l));
          sc = pick.srcClone;
          se = pick.elem;
        } else {
          for (size_t k = 0; k < plan.srcClones.size(); ++k)
            if (plan.srcClones[k] == plan.dstClones[c])
              sc = k;
          if (src.elems == 1)
            se = 0;
        }
        for (const auto &[dim, idx] : src.index)
          EXPECT_EQ(value(idx, sl, se, plan.srcClones[sc]),
                    value(dst.index.at(dim), l, e, plan.dstClones[c]))
              << "dim " << dim << ", lane " << l << ", element " << e;
      }
}

const MmaKind &kind(const char *target, const char *name) {
  const MmaKind *k = findMmaKind(*findTarget(target), name);
  EXPECT_NE(k, nullptr);
  return *k;
}

// Operand `which` (0 A, 1 B, 2 C) of a kind as a layout over (row dim, col dim).
ThreadLayout operand(const MmaKind &k, int which, const std::string &row, const std::string &col,
                     unsigned wave) {
  const LaneLayout &l = which == 0 ? k.a : which == 1 ? k.b : k.c;
  const IndexExpr lane = mod(T0, static_cast<int64_t>(wave));
  ThreadLayout t;
  t.index[row] = l.row(lane, G);
  t.index[col] = l.col(lane, G);
  t.elems = l.elements;
  return t;
}

LayoutMachine machine(unsigned wave) {
  LayoutMachine m;
  m.waveSize = wave;
  m.block[0] = wave;
  return m;
}

TEST(ThreadLayout, MfmaAccumulatorIsTheNextProductsRhs) {
  // S^T = K Q^T in the accumulator layout [K2 rows, M cols] is the B operand [M, K2] of
  // O^T = V^T P^T on CDNA: nothing to move (Wave's attention relies on it).
  const MmaKind &k = kind("gfx942", "F32_16x16x16_F16");
  ThreadLayout acc = operand(k, 2, "K2", "M", 64), rhs = operand(k, 1, "M", "K2", 64);
  RelayoutPlan p = planRelayout(acc, rhs, machine(64), sym::Facts());
  EXPECT_EQ(p.kind, RelayoutPlan::Same);
}

TEST(ThreadLayout, MmaSyncAccumulatorToRhsIsATransposeAcrossLanes) {
  const MmaKind &k = kind("sm_90", "F32_16x8x16_F16");
  ThreadLayout acc = operand(k, 2, "K2", "M", 32), rhs = operand(k, 1, "M", "K2", 32);
  // B covers 16 K2 rows of 8 M columns: one accumulator tile.
  RelayoutPlan p = planRelayout(acc, rhs, machine(32), sym::Facts());
  EXPECT_EQ(p.kind, RelayoutPlan::CrossLane);
  expectPlanMoves(p, acc, rhs, 32);
}

TEST(ThreadLayout, WmmaOperandsReplicateHalfWaves) {
  // RDNA3: B holds a whole K column per lane, lanes 16-31 repeating lanes 0-15; the
  // accumulator interleaves rows between the half-waves.
  const MmaKind &k = kind("gfx1100", "F32_16x16x16_F16");
  ThreadLayout acc = operand(k, 2, "K2", "M", 32), rhs = operand(k, 1, "M", "K2", 32);
  RelayoutPlan p = planRelayout(acc, rhs, machine(32), sym::Facts());
  EXPECT_EQ(p.kind, RelayoutPlan::CrossLane);
  expectPlanMoves(p, acc, rhs, 32);
}

TEST(ThreadLayout, ReversedElementsArePermutedInTheLane) {
  ThreadLayout src, dst;
  src.index["N"] = T0 * 4 + G;
  dst.index["N"] = T0 * 4 + 3 - G;
  src.elems = dst.elems = 4;
  RelayoutPlan p = planRelayout(src, dst, machine(64), sym::Facts());
  ASSERT_EQ(p.kind, RelayoutPlan::InLane);
  EXPECT_EQ(p.inLane[0][0].elem, 3);
  EXPECT_EQ(p.inLane[0][3].elem, 0);
  expectPlanMoves(p, src, dst, 64);
}

TEST(ThreadLayout, ReducedRowsSpreadOverTheAccumulator) {
  // A max over N of an mma.sync accumulator keeps M = grp + 8 g (2 per lane); broadcasting it
  // back to the accumulator (M = grp + 8 (g // 2), N = 2 tig + g % 2) picks element g // 2.
  const IndexExpr grp = floorDiv(T0, 4), tig = mod(T0, 4);
  ThreadLayout red, acc;
  red.index["M"] = grp + 8 * G;
  red.elems = 2;
  acc.index["M"] = grp + 8 * floorDiv(G, 2);
  acc.index["N"] = 2 * tig + mod(G, 2);
  acc.elems = 4;
  RelayoutPlan p = planRelayout(red, acc, machine(32), sym::Facts());
  ASSERT_EQ(p.kind, RelayoutPlan::InLane);
  for (int e = 0; e < 4; ++e)
    EXPECT_EQ(p.inLane[0][e].elem, e / 2);
}

TEST(ThreadLayout, UniformAlongMissingDimsIsTheSameLayout) {
  ThreadLayout row, acc;
  row.index["M"] = mod(T0, 16);
  acc.index["M"] = mod(T0, 16);
  acc.index["K"] = 4 * floorDiv(T0, 16) + G;
  acc.elems = 4;
  EXPECT_EQ(planRelayout(row, acc, machine(64), sym::Facts()).kind, RelayoutPlan::Same);
  // The other way round is not a subset: the destination lacks K.
  EXPECT_EQ(planRelayout(acc, row, machine(64), sym::Facts()).kind, RelayoutPlan::Impossible);
}

TEST(ThreadLayout, ClonesAreMatchedByCoordinates) {
  // Source: 2 clones of 8 consecutive elements; destination: 4 clones of 4.
  ThreadLayout src, dst;
  src.index["N"] = 16 * T0 + 8 * IndexExpr::symbol("$i_a") + G;
  src.elems = 8;
  src.cloneSyms = {"$i_a"};
  dst.index["N"] = 16 * T0 + 4 * IndexExpr::symbol("$i_b") + G;
  dst.elems = 4;
  dst.cloneSyms = {"$i_b"};
  LayoutMachine m = machine(32);
  m.cloneCounts = {{"$i_a", 2}, {"$i_b", 4}};
  RelayoutPlan p = planRelayout(src, dst, m, sym::Facts());
  ASSERT_EQ(p.kind, RelayoutPlan::InLane);
  expectPlanMoves(p, src, dst, 32);
}

TEST(ThreadLayout, ElementsOfAnotherWaveAreImpossible) {
  // Two waves of 64; each lane wants the element the same lane of the other wave holds.
  ThreadLayout src, dst;
  src.index["N"] = T0;
  dst.index["N"] = mod(T0 + 64, 128);
  LayoutMachine m = machine(64);
  m.block[0] = 128;
  RelayoutPlan p = planRelayout(src, dst, m, sym::Facts());
  EXPECT_EQ(p.kind, RelayoutPlan::Impossible);
  EXPECT_NE(p.why.find("no lane of that wave"), std::string::npos) << p.why;
}

TEST(ThreadLayout, ElementsOutsideTheWorkgroupTileAreDead) {
  // A workgroup tile of 16 along N in a wave of 32: the source holds one element per lane (lanes
  // 16..31 overrun the tile), the destination two per lane, so lanes 8..31 would need elements
  // 16..63, which no lane holds. Inside the tile the move is a shuffle; outside, the elements are
  // another workgroup's (every write masks them) and may take any value.
  const IndexExpr wg = IndexExpr::symbol("$WG0");
  ThreadLayout src, dst;
  src.index["N"] = 16 * wg + T0;
  dst.index["N"] = 16 * wg + 2 * T0 + G;
  dst.elems = 2;
  LayoutMachine m = machine(32);
  RelayoutPlan p = planRelayout(src, dst, m, sym::Facts());
  EXPECT_EQ(p.kind, RelayoutPlan::Impossible); // without the tile every element is needed
  m.workgroupTiles["N"] = {"$WG0", 16};
  p = planRelayout(src, dst, m, sym::Facts());
  ASSERT_EQ(p.kind, RelayoutPlan::CrossLane) << p.why;
  const CloneAssign at0 = {{"$WG0", 0}};
  int64_t live = 0;
  for (int64_t e = 0; e < dst.elems; ++e)
    for (int64_t l = 0; l < 32; ++l) {
      const auto &pick = p.crossLane[0][e];
      const int64_t from = pick.lane.at(l);
      ASSERT_GE(from, 0);
      ASSERT_LT(from, 32); // dead lanes still read a lane of the wave
      ASSERT_LT(pick.choice.at(l), static_cast<int64_t>(pick.candidates.size()));
      const int64_t want = value(dst.index["N"], l, e, at0);
      if (want >= 16)
        continue;
      ++live;
      EXPECT_EQ(value(src.index["N"], from, pick.candidates[pick.choice.at(l)].elem, at0), want)
          << "lane " << l << ", element " << e;
    }
  EXPECT_EQ(live, 16);
  // An element inside the tile that no lane holds is still impossible: the source holds only
  // the even places, and lane 1 needs place 1.
  src.index["N"] = 16 * wg + 2 * T0;
  dst.index["N"] = 16 * wg + T0;
  dst.elems = 1;
  p = planRelayout(src, dst, m, sym::Facts());
  EXPECT_EQ(p.kind, RelayoutPlan::Impossible);
  EXPECT_NE(p.why.find("N = 1)"), std::string::npos) << p.why;
}

TEST(ThreadLayout, SharedMoveLoadsOutsideTheTileReadAStoredCell) {
  // Two lanes hold (M, N) = (0, 1) and (1, 0) of a workgroup tile of 2 along N and want them
  // swapped; their second elements lie in the next workgroup's tile (dead). The tile is the box
  // (M 0..1, N 0..1), whose first cell (0, 0) nobody stores: the dead elements' loads (outside
  // the box) read a stored cell instead.
  const IndexExpr wg = IndexExpr::symbol("$WG0");
  ThreadLayout src, dst;
  src.index["M"] = T0;
  src.index["N"] = 2 * wg + 1 - T0;
  dst.index["M"] = 1 - T0;
  dst.index["N"] = 2 * wg + T0 + 2 * G;
  dst.elems = 2;
  LayoutMachine m = machine(2);
  m.workgroupTiles["N"] = {"$WG0", 2};
  // (A shuffle could make this move; the shared-memory planner is asked directly.)
  const SharedRelayout p = planSharedRelayout(src, dst, m, sym::Facts());
  ASSERT_TRUE(p.ok) << p.why;
  ASSERT_EQ(p.dims, (std::vector<std::string>{"M", "N"}));
  EXPECT_EQ(p.extent, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(p.dstOverruns, (std::vector<bool>{false, true}));
  EXPECT_EQ(p.writtenCell, 1); // (0, 1); cells 1 and 2 are stored, cell 0 is a hole
}

TEST(ThreadLayout, WarpgroupKindsMoveWithinTheirWarps) {
  // wgmma's accumulator (lanes numbered over the warpgroup of 128) to its A operand layout on
  // the same M x K coordinates: each warp holds its own 16 rows, so the move stays in the warp.
  const MmaKind &k = kind("sm_90a", "F32_64x16x16_F16");
  EXPECT_EQ(k.groupWaves, 4u);
  ThreadLayout acc = operand(k, 2, "M", "K2", 128), lhs = operand(k, 0, "M", "K2", 128);
  LayoutMachine m = machine(128);
  m.shuffleWidth = 32;
  RelayoutPlan p = planRelayout(acc, lhs, m, sym::Facts());
  ASSERT_NE(p.kind, RelayoutPlan::Impossible) << p.why;
  expectPlanMoves(p, acc, lhs, 128);
  // An element held only by another warp of the group cannot be shuffled.
  ThreadLayout src, dst;
  src.index["N"] = mod(T0, 128);
  dst.index["N"] = 64 * floorDiv(T0, 64) + mod(T0 + 32, 64); // warps 0 <-> 1, 2 <-> 3
  p = planRelayout(src, dst, m, sym::Facts());
  EXPECT_EQ(p.kind, RelayoutPlan::Impossible);
  EXPECT_NE(p.why.find("another hardware wave"), std::string::npos) << p.why;
  m.shuffleWidth = 0; // a wave of 128 lanes would reach it
  EXPECT_EQ(planRelayout(src, dst, m, sym::Facts()).kind, RelayoutPlan::CrossLane);
}

TEST(ThreadLayout, BitLinearLaneFunctions) {
  BitLinear f{3, {1, 0, 4}};
  EXPECT_EQ(f.at(0), 3);
  EXPECT_EQ(f.at(1), 4);
  EXPECT_EQ(f.at(5), 8);
  EXPECT_FALSE(f.isIdentity());
  EXPECT_TRUE((BitLinear{0, {1, 2, 4}}.isIdentity()));
  EXPECT_TRUE((BitLinear{7, {0, 0}}.isConstant()));
}

} // namespace
} // namespace wave
