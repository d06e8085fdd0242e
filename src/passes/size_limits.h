// Limits that keep code generation bounded on any input (docs/language.md section 5, "Sizes").
//
// checkStaticSizes runs before the distribution: a tensor whose compile-time size in bytes does
// not fit the index arithmetic is `size-overflow` (the distribution and the emitter compute
// with int64 sizes). checkUnroll runs after it: the emitter unrolls one copy of the code per
// expansion clone of a value (distribution.h: ExpansionInfo), so a value with more clones than
// kMaxUnrollClones is `unroll-too-large`, at --check time as well as before code generation.
#pragma once

#include "frontend/diagnostics.h"
#include "ir/graph.h"
#include "passes/distribution.h"

#include <cstdint>
#include <string>

namespace wave {

// A tensor's static size in bytes must be below this (2^62: headroom for index arithmetic).
constexpr int64_t kMaxStaticBytes = int64_t(1) << 62;
// Expansion clones of one value the emitter will unroll. A GEMM's accumulator has tens; a plain
// copy of 256 clones (tests/e2e/kernels/copy_rows.wave -DN=16384) takes ~11 s to compile for
// gfx942 and 1024 clones ~55 s (the AMDGPU back end is superlinear in the unrolled code).
constexpr int64_t kMaxUnrollClones = 256;

// Reports `size-overflow` for each parameter whose bound size overflows; false if any did.
bool checkStaticSizes(const ir::Kernel &kernel, DiagnosticEngine &diags);
// Reports `unroll-too-large` at the first op whose value would need more clones than the
// limit; false if one does.
bool checkUnroll(const ir::Kernel &kernel, const Distribution &dist, DiagnosticEngine &diags);

// What the checks found, as --print-ir-after prints it: each parameter's static size in bytes
// (or that it is dynamic), and the value with the most clones against the limit.
std::string printStaticSizes(const ir::Kernel &kernel);
std::string printUnroll(const ir::Kernel &kernel, const Distribution &dist);

} // namespace wave
