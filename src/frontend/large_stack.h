// Runs a function on a thread with a large stack.
//
// The front end bounds every recursion it does (expressions may nest kMaxExprDepth levels, see
// frontend/parse_state.h), but the bound is only as good as every recursive walk's frame sizes.
// The driver (src/driver/main.cpp) and wave-run (tools/wave-run.cpp) therefore run their whole
// work on a thread whose stack is far larger than the limit needs, as a second line of defence:
// a walk that recurses per level of nesting has ~100x the room it needs at the limit.
#pragma once

#include <cstddef>
#include <functional>

namespace wave {

// The stack size the driver and wave-run use: 256 MiB of address space (pages are committed
// only as they are touched).
constexpr size_t kLargeStackBytes = size_t(256) << 20;

// Calls fn() on a new thread with a stack of `bytes` and returns its result; an exception it
// throws is rethrown here. When the thread cannot be created, fn runs on the calling thread.
int runOnLargeStack(const std::function<int()> &fn, size_t bytes = kLargeStackBytes);

} // namespace wave
