// The kernel ABI: how a compiled kernel receives its arguments. The code generator builds the
// device function's signature from it and the generated host stub packs the argument buffer
// from it, so the two cannot disagree.
//
//   1. every parameter in declared order: a Memory parameter as a global pointer (8 bytes), a
//      scalar by value (its natural size: i1 and 8-bit types 1 byte, 16-bit 2, ...);
//   2. then every dynamic symbol (Distribution::dynamicSymbols order) as an i64;
// each at its natural alignment; explicit arguments only (the runtime passes no hidden ones).
#pragma once

#include "frontend/scalar_type.h"
#include "ir/graph.h"

#include <cstdint>
#include <string>
#include <vector>

namespace wave {

struct Distribution;

struct AbiArg {
  enum Kind { Pointer, Scalar, DynamicDim } kind;
  std::string name;
  ScalarType type; // element type (Pointer), value type (Scalar), i64 (DynamicDim)
  bool isOutput;   // Pointer: the kernel writes through it
  unsigned size, align, offset;
};

struct KernelAbi {
  std::vector<AbiArg> args;
  unsigned size = 0; // bytes of the packed buffer (rounded up to 8)
};

KernelAbi kernelAbi(const ir::Kernel &kernel, const Distribution &dist);

// A TMA tensor map that a kernel compiled for one target takes after its ABI arguments: the
// device address of the map (8 bytes each, in this order, from offset KernelAbi::size), built
// at launch by the generated stub (wave_tensor_map_2d for rank 2, wave_tensor_map otherwise)
// for the Memory parameter `param` (an index into Kernel::params) of `rank` dims (2 to 5, the
// parameter's): boxes of 1 x ... x 1 x boxRows x boxCols elements of `dtype` (extent 1 in every
// dim but the last two), swizzled in shared memory by swizzleBytes. The code generator decides
// them (passes/schedule.cpp, codegen/emitter/tensor_copy.cpp); they differ between the targets
// of one stub.
struct TensorMapArg {
  unsigned param = 0;
  ScalarType dtype = ScalarType::F16;
  uint32_t boxRows = 0, boxCols = 0, swizzleBytes = 0;
  uint32_t rank = 2;
  // The box's extent along dim i of the tensor.
  uint32_t box(uint32_t i) const { return i + 2 == rank ? boxRows : i + 1 == rank ? boxCols : 1; }
  bool operator==(const TensorMapArg &o) const {
    return param == o.param && dtype == o.dtype && boxRows == o.boxRows &&
           boxCols == o.boxCols && swizzleBytes == o.swizzleBytes && rank == o.rank;
  }
};

} // namespace wave
