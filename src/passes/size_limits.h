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
// Elements per lane of one value over all its clones (a clone can hold many: a vector, or a
// streamed row's chunk per trip). The unrolled code grows with them, and the MLIR clean-up
// with it superlinearly: 200 clones of 16 elements, five such values, took 140 s.
constexpr int64_t kMaxUnrollElements = 1024; // the repository's kernels need at most 128
// The same summed over all the kernel's register values: 4,608 (six values of 768, a chain of
// transcendental functions) took 15 s per target; the repository's kernels need at most 822.
constexpr int64_t kMaxUnrollKernelElements = 4096;

// Reports `size-overflow` for each parameter whose bound size overflows; false if any did.
bool checkStaticSizes(const ir::Kernel &kernel, DiagnosticEngine &diags);
// Reports `unroll-too-large` at the first op whose value would need more clones than the
// limit, `unroll-too-many-elements` at the first whose clones hold too many elements per
// thread, `unroll-kernel-too-large` at the op whose value takes the kernel's sum over the
// limit; false if one does.
bool checkUnroll(const ir::Kernel &kernel, const Distribution &dist, DiagnosticEngine &diags);

// What the checks found, as --print-ir-after prints it: each parameter's static size in bytes
// (or that it is dynamic), and the value with the most clones against the limit.
std::string printStaticSizes(const ir::Kernel &kernel);
std::string printUnroll(const ir::Kernel &kernel, const Distribution &dist);

} // namespace wave
