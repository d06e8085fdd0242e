// NaN-propagating float min/max on NVIDIA as one PTX instruction each.
//
// The language's `maximum`/`minimum` and max/min reductions propagate NaN (llvm.maximum,
// llvm.minimum, llvm.vector.reduce.fmaximum/fminimum). LLVM 19's NVPTX back end expands each of
// them into a compare, a NaN test and two selects, because IEEE 754-2019 also orders -0 below
// +0, which PTX's `max.NaN.f32` does not promise. Four instructions per max are a large share
// of a softmax or attention loop, so on NVIDIA (sm_80 and later) wavec uses `max.NaN.f32` /
// `min.NaN.f32` (llvm.nvvm.fmax.nan.f / fmin.nan.f) for f32 and leaves the sign of a zero
// result between -0 and +0 to the hardware (docs/language.md section 13).
#pragma once

namespace llvm {
class Module;
}

namespace wave {

// Rewrites f32 llvm.maximum/minimum (scalar or vector) and llvm.vector.reduce.fmaximum/
// fminimum of f32 vectors into llvm.nvvm.fmax.nan.f / fmin.nan.f calls, element by element
// (reductions as a tree). Run after LLVM's optimization pipeline, before code generation.
void useNvptxNaNMinMax(llvm::Module &module);

} // namespace wave
