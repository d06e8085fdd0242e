// Barrier insertion for shared memory (wave-facts.md section 5.3): a real analysis over the
// accesses the emitter produced, not a fixed recipe.
//
// The emitter describes its instruction stream as a list of items: shared-memory reads and
// writes (each naming the allocation it touches), the begin and end of loops, explicit
// barriers, and everything else. Two accesses to the same allocation conflict when one reads
// and the other writes (there is no address-range disjointness test: the resource is the
// allocation). Two writes do not conflict: every store phase the emitter produces (a
// cooperative copy) gives each element of a tile one writer, as in Wave's rule. A conflict
// between an access and a later one needs a workgroup barrier between them.
//
// Placement is the greedy solution of the interval-stabbing problem: walking in program order,
// a barrier goes right before the first access that conflicts with an access made since the
// last barrier, as late as possible, so one barrier covers as many hazards as it can. Loop
// bodies are walked again with the state at the end of the body joined into the state at entry
// (iteration i + 1 sees iteration i's pending accesses) until nothing changes; the state after
// a loop joins the state before it (zero trips). Barriers already present count.
//
// Multi-buffered tiles: an access names its buffer relative to the loop's iteration (stage k =
// buffer (i + k) % S), so accesses to different buffers of one iteration do not conflict, and
// the state carried into the next iteration renames stage k to k - 1. Asynchronous writes
// (cp.async) complete only at a wait: a barrier placed while one is pending is preceded by a
// wait for all of them.
#pragma once

#include <vector>

namespace wave {

struct SyncItem {
  enum Kind { Other, Read, Write, LoopBegin, LoopEnd, Barrier } kind = Other;
  int resource = -1; // the allocation of a Read or Write
  // Multi-buffered allocations: a Read/Write inside a loop of `stages` (on its LoopBegin)
  // buffers touches buffer (iteration + stage) % stages; -1 = not multi-buffered.
  int stage = -1;
  bool async = false; // a Write completed by a wait (NVIDIA cp.async), not by the barrier
  int stages = 1;     // LoopBegin only
  // A Read that may run with this many of the newest asynchronous copy groups still in flight
  // (a pipeline's later tiles); the emitter's wait before a barrier at it keeps them.
  int inflight = 0;
};

enum class BarrierPlacement {
  None,
  Barrier,        // a workgroup barrier
  WaitAndBarrier, // wait for this thread's asynchronous copies, then the barrier
};

// For each item, what must be placed right before it. Items inside a loop refer to the loop
// body; LoopBegin/LoopEnd must nest.
std::vector<BarrierPlacement> placeBarriers(const std::vector<SyncItem> &items);

} // namespace wave
