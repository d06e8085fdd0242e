// Barrier insertion for shared memory (docs/hardware.md section 5.3): a real analysis over the
// accesses the emitter produced, not a fixed recipe.
//
// The emitter describes its instruction stream as a list of items: shared-memory reads and
// writes (each naming the allocation it touches), the begin and end of loops, explicit
// barriers, and everything else. Two accesses to the same allocation conflict when one reads
// and the other writes (there is no address-range disjointness test within an allocation;
// allocations that share bytes, `overlap` below, conflict as one, writes included). Two writes
// to one allocation do not conflict: every store phase the emitter produces (a cooperative
// copy) gives each element of a tile one writer, as in Wave's rule, unless the later one is
// `exclusive` (a write of the kernel's own to an `allocate`d tile, whose elements an earlier
// write may have given to other lanes). Atomics (read-modify-writes of an allocated tile)
// conflict with reads and writes but not with each other: the hardware orders them. A
// conflict between an access and a later one needs a workgroup barrier between them.
//
// Placement is the greedy solution of the interval-stabbing problem: walking in program order,
// a barrier goes right before the first access that conflicts with an access made since the
// last barrier, as late as possible, so one barrier covers as many hazards as it can. Loop
// bodies are walked again with the state at the end of the body joined into the state at entry
// (iteration i + 1 sees iteration i's pending accesses) until nothing changes; the state after
// a loop joins the state before it (zero trips). Barriers already present count.
//
// Multi-buffered tiles: an access names its tile relative to the loop's iteration (stage k =
// tile i + k, in buffer (i + k) % S), so accesses to different buffers of one iteration do not
// conflict, and the state carried into the next iteration renames tile k to k - 1.
// Asynchronous writes (cp.async) complete only at a wait, not at a barrier: they stay pending
// until a read of their buffer needs them, and the barrier placed there is preceded by a wait
// that completes the copy groups up to the one the read needs and keeps the newer ones in
// flight. The emitter commits one copy group per tile, in tile order, which is what lets the
// analysis count the groups to keep. Writes that their readers wait for themselves (`waited`:
// TMA on mbarriers) only ever need a barrier before them.
#pragma once

#include <vector>

namespace wave {

struct SyncItem {
  // IfBegin / IfElse / IfEnd bracket the branches of an `if` whose condition is the same in
  // every thread of the workgroup (docs/language.md section 15): each branch is walked from
  // the state before the `if`, the state after it joins both (an `if` without IfElse has an
  // empty else branch). A barrier placed inside a branch runs when every thread takes it.
  enum Kind { Other, Read, Write, LoopBegin, LoopEnd, Barrier, Atomic, IfBegin, IfElse, IfEnd } kind =
      Other;
  int resource = -1; // the allocation of a Read, Write or Atomic
  // Multi-buffered allocations: a Read/Write inside a loop of `stages` (on its LoopBegin)
  // buffers touches tile iteration + stage, in buffer (iteration + stage) % stages; before the
  // loop, tile `stage` of iteration 0. -1 = not multi-buffered (any buffer).
  int stage = -1;
  bool async = false; // a Write completed by a wait (NVIDIA cp.async), not by the barrier
  int stages = 1;     // LoopBegin only
  // A Read by the async proxy (NVIDIA wgmma reading shared memory through descriptors): a
  // barrier placed before it is preceded by `fence.proxy.async.shared::cta`, which makes the
  // generic-proxy writes before it (stores, completed cp.async copies) visible to that proxy.
  bool asyncProxy = false;
  // A Write that conflicts with earlier writes of its allocation too (set on the first item
  // of a store op only, so that its own items do not conflict with each other).
  bool exclusive = false;
  // A Write whose readers wait for it themselves (a TMA copy: every reader waits on its
  // mbarrier, which also makes the bytes visible): it needs a barrier before it after earlier
  // reads of its buffer (write after read), but no later read needs a barrier for it.
  bool waited = false;
};

enum class BarrierPlacement {
  None,
  Barrier,        // a workgroup barrier
  WaitAndBarrier, // wait for this thread's asynchronous copies, then the barrier
};

// For each item, what must be placed right before it. Items inside a loop refer to the loop
// body; LoopBegin/LoopEnd and IfBegin/IfElse/IfEnd must nest. `waitKeep` (optional) receives, per WaitAndBarrier, how many
// of the newest copy groups the wait may leave in flight (`cp.async.wait_group N`);
// `proxyFence` (optional), per item, whether its barrier needs the async-proxy fence first.
// `overlap` (optional, indexed by allocation) says which allocations share bytes (the
// shared-memory plan lets tiles with disjoint live spans do so): an access then conflicts with
// any access to an allocation it overlaps, a write too (the two tiles' writers differ), and a
// copy still in flight into an overlapping allocation is waited for, all of them.
std::vector<BarrierPlacement> placeBarriers(const std::vector<SyncItem> &items,
                                            std::vector<int> *waitKeep = nullptr,
                                            std::vector<bool> *proxyFence = nullptr,
                                            const std::vector<std::vector<bool>> *overlap =
                                                nullptr);

} // namespace wave
