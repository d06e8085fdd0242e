// The barrier-insertion analysis (src/passes/barrier_insertion.h) on hand-made access streams.
#include "passes/barrier_insertion.h"

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

SyncItem atom(int res) { return {K::Atomic, res}; }
SyncItem exclusiveWr(int res) {
  SyncItem s = wr(res);
  s.exclusive = true;
  return s;
}

TEST(Barriers, AtomicsConflictWithReadsAndWritesButNotEachOther) {
  // write; atomic (after the write: barrier); atomic; atomic (none among atomics); read
  // (after atomics: barrier); atomic (after the read: barrier); atomic of another tile (none).
  auto b = placeBarriers({wr(0), atom(0), atom(0), atom(0), rd(0), atom(0), atom(1)});
  EXPECT_EQ(b, (std::vector<P>{P::None, P::Barrier, P::None, P::None, P::Barrier, P::Barrier,
                               P::None}));
  // A write after atomics waits for them too.
  EXPECT_EQ(placeBarriers({atom(0), wr(0)}), (std::vector<P>{P::None, P::Barrier}));
}

TEST(Barriers, ExclusiveWritesConflictWithEarlierWrites) {
  // An allocated tile's second store op (its first item exclusive) waits for the first; the
  // store's own further items do not; cooperative-copy writes (not exclusive) never do.
  auto b = placeBarriers({exclusiveWr(0), wr(0), exclusiveWr(0), wr(0), wr(1), wr(1)});
  EXPECT_EQ(b, (std::vector<P>{P::None, P::None, P::Barrier, P::None, P::None, P::None}));
  // Inside a loop, the previous trip's store counts as earlier.
  auto l = placeBarriers({loop(), exclusiveWr(0), end()});
  EXPECT_EQ(l, (std::vector<P>{P::None, P::Barrier, P::None}));
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
  std::vector<int> keep;
  auto b = placeBarriers({wr(0, 0, true), wr(0, 1, true), loop(3), rd(0, 0), wr(0, 2, true),
                          end()},
                         &keep);
  EXPECT_EQ(b, (std::vector<P>{P::None, P::None, P::None, P::WaitAndBarrier, P::None, P::None}));
  EXPECT_EQ(keep[3], 1); // tile i + 1 may still be in flight
  // A shallower schedule on three buffers (copy into buffer i + 1): buffer i + 1 was last read
  // in iteration i - 2, before iteration i's barrier, so one barrier still suffices.
  auto c = placeBarriers({wr(0, 0, true), loop(3), rd(0, 0), wr(0, 1, true), end()});
  EXPECT_EQ(count(c), 1);
}

TEST(Barriers, WaitKeepsTheNewerCopiesInFlight) {
  // Three tiles copied, one commit group each; the read of tile 0 needs only the oldest group.
  std::vector<int> keep;
  auto b = placeBarriers({wr(0, 0, true), wr(0, 1, true), wr(0, 2, true), rd(0, 0)}, &keep);
  EXPECT_EQ(b[3], P::WaitAndBarrier);
  EXPECT_EQ(keep[3], 2);
  // Copies of several allocations in one tile are one group: still two newer groups.
  b = placeBarriers({wr(0, 0, true), wr(1, 0, true), wr(0, 1, true), wr(1, 1, true),
                     wr(0, 2, true), wr(1, 2, true), rd(1, 0)},
                    &keep);
  EXPECT_EQ(b[6], P::WaitAndBarrier);
  EXPECT_EQ(keep[6], 2);
  // The newest copy needed: nothing may stay in flight.
  b = placeBarriers({wr(0, 0, true), wr(0, 1, true), rd(0, 1)}, &keep);
  EXPECT_EQ(keep[2], 0);
}

TEST(Barriers, ABarrierDoesNotCompleteACopy) {
  // read buffer 0; copy into it (WAR: a barrier, no wait needed); read it again: the copy is
  // still in flight past that barrier, so the second read needs a wait and another barrier.
  std::vector<int> keep;
  auto b = placeBarriers({rd(0, 0), wr(0, 0, true), other(), rd(0, 0)}, &keep);
  EXPECT_EQ(b, (std::vector<P>{P::None, P::Barrier, P::None, P::WaitAndBarrier}));
  EXPECT_EQ(keep[3], 0);
}

TEST(Barriers, FragmentPipelinedLoopNeedsOneMidIteration) {
  // The fragment-pipelined schedule of three buffers (docs/internals.md): tiles 0-2 copied,
  // step 0 of tile 0 read before the loop; in iteration i: step 1 of tile i (no barrier: tile i
  // landed before iteration i - 1's barrier), MMAs, step 0 of tile i + 1 (wait for it, keeping
  // tile i + 2 in flight, and the barrier), the copy of tile i + 3 into tile i's buffer (its
  // reads are before that barrier).
  std::vector<int> keep;
  auto b = placeBarriers({wr(0, 0, true), wr(0, 1, true), wr(0, 2, true), rd(0, 0), loop(3),
                          rd(0, 0), other(), rd(0, 1), wr(0, 3, true), other(), end(), other()},
                         &keep);
  EXPECT_EQ(b, (std::vector<P>{P::None, P::None, P::None, P::WaitAndBarrier, P::None, P::None,
                               P::None, P::WaitAndBarrier, P::None, P::None, P::None, P::None}));
  EXPECT_EQ(keep[3], 2);
  EXPECT_EQ(keep[7], 1);
  // Without the prologue's read (and barrier) the first top read needs tile 0 too.
  b = placeBarriers({wr(0, 0, true), wr(0, 1, true), wr(0, 2, true), loop(3), rd(0, 0),
                     rd(0, 1), wr(0, 3, true), end()},
                    &keep);
  EXPECT_EQ(b[4], P::WaitAndBarrier);
  EXPECT_EQ(keep[4], 2);
}

TEST(Barriers, WgmmaPipelineNeedsOneBarrierAndTheProxyFence) {
  // wgmma on 4 buffers (docs/internals.md): tiles 0 and 1 copied; in iteration i the products
  // read tile i at issue (async proxy) and retire the reads of tile i - 1 (buffer stage 3) at
  // their wait, then the copy of tile i + 2 goes into the buffer tile i - 2 used. One barrier,
  // before the products, waiting for tile i with tile i + 1 in flight, after the proxy fence.
  SyncItem issue = rd(0, 0);
  issue.asyncProxy = true;
  std::vector<int> keep;
  std::vector<bool> fence;
  auto b = placeBarriers({wr(0, 0, true), wr(0, 1, true), loop(4), other(), issue, other(),
                          rd(0, 3), wr(0, 2, true), end()},
                         &keep, &fence);
  EXPECT_EQ(b, (std::vector<P>{P::None, P::None, P::None, P::None, P::WaitAndBarrier, P::None,
                               P::None, P::None, P::None}));
  EXPECT_EQ(keep[4], 1);
  EXPECT_EQ(fence, (std::vector<bool>{false, false, false, false, true, false, false, false,
                                      false}));
  // Retiring tile i's reads only at the next iteration's wait while copying into tile i - 1's
  // buffer (i + S - 1) would overwrite a buffer the products may still read: a second barrier.
  b = placeBarriers({wr(0, 0, true), wr(0, 1, true), wr(0, 2, true), loop(4), issue, rd(0, 3),
                     wr(0, 3, true), end()});
  EXPECT_EQ(count(b), 2);
}

TEST(Barriers, WaitedWritesNeedABarrierOnlyBeforeThem) {
  // The wgmma loop with TMA copies (tensor_copy.cpp): tiles 0 and 1 copied before the loop; at
  // the top of iteration i the copy of tile i + 2 into the buffer tile i - 2 used, then the
  // products read tile i (their readers wait on its mbarrier) and retire tile i - 1's reads.
  // One barrier, before the copy (after the retirement of tile i - 2 in the last iteration);
  // none before the products, no wait, no proxy fence.
  SyncItem issue = rd(0, 0);
  issue.asyncProxy = true;
  auto waited = [](int stage) {
    SyncItem w = wr(0, stage);
    w.waited = true;
    return w;
  };
  std::vector<int> keep;
  std::vector<bool> fence;
  auto b = placeBarriers({waited(0), waited(1), loop(4), waited(2), other(), issue, other(),
                          rd(0, 3), end()},
                         &keep, &fence);
  EXPECT_EQ(b, (std::vector<P>{P::None, P::None, P::None, P::Barrier, P::None, P::None, P::None,
                               P::None, P::None}));
  EXPECT_EQ(fence, std::vector<bool>(9, false));
  // The same writes without `waited` also need a barrier before the products (read after
  // write of the prologue's tile 0): two.
  b = placeBarriers({wr(0, 0), wr(0, 1), loop(4), wr(0, 2), other(), issue, other(), rd(0, 3),
                     end()});
  EXPECT_EQ(count(b), 2);
  // A waited write after a read of its buffer still needs the barrier.
  EXPECT_EQ(placeBarriers({rd(0), waited(-1)}), (std::vector<P>{P::None, P::Barrier}));
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

TEST(Barriers, AllocationsSharingBytesConflictAsOne) {
  // Tiles 0 and 1 share bytes (the shared-memory plan reused tile 0's for tile 1): writing tile
  // 1 after reading tile 0 is a WAR hazard, and the read of tile 1 then needs its own barrier.
  const std::vector<SyncItem> items = {wr(0), rd(0), wr(1), rd(1)};
  const std::vector<std::vector<bool>> overlap = {{false, true}, {true, false}};
  EXPECT_EQ(placeBarriers(items), (std::vector<P>{P::None, P::Barrier, P::None, P::Barrier}));
  EXPECT_EQ(placeBarriers(items, nullptr, nullptr, &overlap),
            (std::vector<P>{P::None, P::Barrier, P::Barrier, P::Barrier}));
}

TEST(Barriers, WritesToAllocationsSharingBytesConflict) {
  // Two writes to one allocation never conflict (one writer per element), but writes to two
  // tiles that share bytes come from different writers: the second waits for the first.
  const std::vector<std::vector<bool>> overlap = {{false, true}, {true, false}};
  EXPECT_EQ(count(placeBarriers({wr(0), wr(1)})), 0);
  EXPECT_EQ(placeBarriers({wr(0), wr(1)}, nullptr, nullptr, &overlap),
            (std::vector<P>{P::None, P::Barrier}));
}

TEST(Barriers, CopiesInFlightIntoSharedBytesAreWaitedFor) {
  // An async copy into tile 0 still in flight when tile 1 (the same bytes) is written: wait for
  // every copy (keep none in flight), then the barrier.
  const std::vector<std::vector<bool>> overlap = {{false, true}, {true, false}};
  std::vector<int> keep;
  auto b = placeBarriers({wr(0, -1, true), wr(1)}, &keep, nullptr, &overlap);
  EXPECT_EQ(b, (std::vector<P>{P::None, P::WaitAndBarrier}));
  EXPECT_EQ(keep[1], 0);
}

} // namespace
} // namespace wave

namespace wave {
namespace {

SyncItem ifBegin() { return {SyncItem::IfBegin}; }
SyncItem ifElse() { return {SyncItem::IfElse}; }
SyncItem ifEnd() { return {SyncItem::IfEnd}; }

TEST(Barriers, BranchesAreWalkedFromTheStateBeforeTheIf) {
  // write A; if { read A } else { read A }: each branch needs its own barrier (either may run),
  // and the read after the `if` none (both branches ended with a barrier since the write).
  auto b = placeBarriers({wr(0), ifBegin(), rd(0), ifElse(), rd(0), ifEnd(), rd(0)});
  EXPECT_EQ(b, (std::vector<P>{P::None, P::None, P::Barrier, P::None, P::Barrier, P::None,
                               P::None}));
}

TEST(Barriers, WhatABranchLeavesPendingIsOrderedAfterTheIf) {
  // if { write A } (no else): the read after the `if` needs the barrier outside the branch,
  // never inside (a barrier placed only in the branch would not run when it is not taken).
  auto b = placeBarriers({ifBegin(), wr(0), ifEnd(), rd(0)});
  EXPECT_EQ(b, (std::vector<P>{P::None, P::None, P::None, P::Barrier}));
  // if { write A; read A } else { }: the barrier inside the branch; the write after the `if`
  // conflicts with the branch's read (WAR): a barrier before it.
  b = placeBarriers({ifBegin(), wr(0), rd(0), ifElse(), other(), ifEnd(), wr(0)});
  EXPECT_EQ(b, (std::vector<P>{P::None, P::None, P::Barrier, P::None, P::None, P::None,
                               P::Barrier}));
  // A branch that ends with a barrier still joins the other branch's pending write.
  b = placeBarriers({ifBegin(), wr(0), rd(0), ifElse(), wr(0), ifEnd(), rd(0)});
  EXPECT_EQ(b.back(), P::Barrier);
}

TEST(Barriers, IfInsideALoopSeesTheNextIteration) {
  // loop { if { read A } ; write A }: the write follows the read (WAR) and the next
  // iteration's read follows the write (RAW, across the back edge).
  auto b = placeBarriers({loop(), ifBegin(), rd(0), ifEnd(), wr(0), end()});
  EXPECT_EQ(b, (std::vector<P>{P::None, P::None, P::Barrier, P::None, P::Barrier, P::None}));
}

} // namespace
} // namespace wave
