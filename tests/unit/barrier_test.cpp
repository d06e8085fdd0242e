// The barrier-insertion analysis (src/codegen/barrier_insertion.h) on hand-made access streams.
#include "codegen/barrier_insertion.h"

#include <gtest/gtest.h>

namespace wave {
namespace {

using K = SyncItem::Kind;
using P = BarrierPlacement;
SyncItem rd(int res, int stage = -1) { return {K::Read, res, stage}; }
SyncItem wr(int res, int stage = -1, bool async = false) { return {K::Write, res, stage, async}; }
SyncItem other() { return {}; }
SyncItem loop(int stages = 1) {
  SyncItem s{K::LoopBegin};
  s.stages = stages;
  return s;
}
SyncItem end() { return {K::LoopEnd}; }

int count(const std::vector<P> &v) {
  int n = 0;
  for (P p : v)
    n += p != P::None;
  return n;
}

TEST(Barriers, StraightLineRawAndWar) {
  // write A; read A (RAW: barrier); write A (WAR: barrier); write B (no conflict).
  auto b = placeBarriers({wr(0), other(), rd(0), rd(0), wr(0), wr(1)});
  EXPECT_EQ(b, (std::vector<P>{P::None, P::None, P::Barrier, P::None, P::Barrier, P::None}));
}

TEST(Barriers, DisjointAllocationsAndWritesDoNotConflict) {
  EXPECT_EQ(count(placeBarriers({wr(0), wr(0), rd(1), wr(2), rd(3)})), 0);
}

TEST(Barriers, OneBarrierCoversSeveralHazards) {
  // Both reads follow both writes: one barrier, as late as possible (before the first read).
  auto b = placeBarriers({wr(0), wr(1), other(), rd(0), rd(1)});
  EXPECT_EQ(b, (std::vector<P>{P::None, P::None, P::None, P::Barrier, P::None}));
}

TEST(Barriers, UserBarrierCounts) {
  EXPECT_EQ(count(placeBarriers({wr(0), {K::Barrier}, rd(0)})), 0);
}

TEST(Barriers, SingleBufferedLoopNeedsTwo) {
  // prologue store; loop { read; compute; store next } -> barrier before the reads (RAW, also
  // from the previous iteration's store) and before the store (WAR against this iteration's
  // reads; the loop-carried pass finds it).
  auto b = placeBarriers({wr(0), loop(), rd(0), other(), wr(0), end(), other()});
  EXPECT_EQ(b, (std::vector<P>{P::None, P::None, P::Barrier, P::None, P::Barrier, P::None,
                               P::None}));
}

TEST(Barriers, WraparoundHazardOnlyVisibleOnSecondTrip) {
  // loop { read A; write A } with nothing before: the write needs a barrier after the read in
  // the same trip, and the read of trip i + 1 needs one after the write of trip i.
  auto b = placeBarriers({loop(), rd(0), wr(0), end()});
  EXPECT_EQ(b, (std::vector<P>{P::None, P::Barrier, P::Barrier, P::None}));
}

TEST(Barriers, DoubleBufferedAsyncLoopNeedsOneWithWait) {
  // prologue: async copy into buffer 0; loop { read buffer i; async copy into buffer i + 1 }.
  auto b = placeBarriers(
      {wr(0, 0, true), loop(2), rd(0, 0), wr(0, 1, true), other(), end(), rd(5)});
  EXPECT_EQ(b, (std::vector<P>{P::None, P::None, P::WaitAndBarrier, P::None, P::None, P::None,
                               P::None}));
}

TEST(Barriers, ThreeStagePipelineNeedsOne) {
  // prologue: copies into buffers 0 and 1; loop { read buffer i; copy into buffer i + 2 }.
  auto b = placeBarriers({wr(0, 0, true), wr(0, 1, true), loop(3), rd(0, 0), wr(0, 2, true),
                          end()});
  EXPECT_EQ(b, (std::vector<P>{P::None, P::None, P::None, P::WaitAndBarrier, P::None, P::None}));
  // A shallower schedule on three buffers (copy into buffer i + 1): buffer i + 1 was last read
  // in iteration i - 2, before iteration i's barrier, so one barrier still suffices.
  auto c = placeBarriers({wr(0, 0, true), loop(3), rd(0, 0), wr(0, 1, true), end()});
  EXPECT_EQ(count(c), 1);
}

TEST(Barriers, ReadingTheBufferBeingFilledNeedsASecondBarrier) {
  // loop { read buffer i; copy into buffer i } is a single buffer in disguise: WAR and RAW.
  auto b = placeBarriers({wr(0, 0, true), loop(3), rd(0, 0), wr(0, 0, true), end()});
  EXPECT_EQ(count(b), 2);
}

TEST(Barriers, DoubleBufferWithoutRenamingWouldConflict) {
  // The same stream with a single buffer needs a second barrier before the copy.
  auto b = placeBarriers({wr(0, -1, true), loop(1), rd(0), wr(0, -1, true), end()});
  EXPECT_EQ(count(b), 2);
}

TEST(Barriers, AfterTheLoopBuffersAreUnknown) {
  // A read of buffer 1 after a loop that wrote buffer 0 conflicts: the trip count is unknown.
  auto b = placeBarriers({loop(2), wr(0, 0), end(), rd(0, 1)});
  EXPECT_EQ(b[3], P::Barrier);
}

} // namespace
} // namespace wave
