// The reference evaluator: a kernel's whole-tensor meaning, computed on the host straight from
// the kernel graph IR (docs/language.md), independent of constraints, distribution and code
// generation. It is the oracle that device results are checked against (wave-run --check, the
// end-to-end tests). No LLVM, no runtime: plain C++ over the IR.
//
// Semantics in brief (docs/language.md section 11 has the decisions):
//   - every value is a dense tensor over its named dims; an op's float result is computed in
//     float64 and rounded to its element type the way a GPU converts (round to nearest even,
//     f16/bf16/f8 exactly); integer results wrap to their width;
//   - sum and mma accumulate in float64 (exact integers for integer types) and round once;
//   - `iterate D` walks D in tiles of its `tiling` constraint (the last one ragged, holding
//     only in-bounds elements); inside the body every value with dim D is the current tile;
//   - mapped reads outside the tensor give 0, mapped writes and atomics outside do nothing;
//   - reading an `allocate` element never written is an error.
#pragma once

#include "frontend/scalar_type.h"
#include "ir/graph.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace wave::ref {

// A dense host tensor: C order, elements in their storage format (little-endian; f16/bf16/f8
// as their bit patterns). A scalar parameter is a tensor of rank 0 (one element).
struct HostTensor {
  ScalarType dtype = ScalarType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  int64_t numel() const;
  static HostTensor zeros(ScalarType t, std::vector<int64_t> shape);
  // Element access through float64 / int64 (ints), converting like a GPU store would.
  double getFloat(int64_t i) const;
  int64_t getInt(int64_t i) const;
  void setFloat(int64_t i, double v);
  void setInt(int64_t i, int64_t v);
};

// Bytes per element of a storage type (i1 and 8-bit types: 1).
unsigned elementBytes(ScalarType t);
// `v` rounded to float type `t` (round to nearest even; overflow to inf, or NaN for the f8
// types without an infinity).
double roundToFloat(ScalarType t, double v);
// The largest value of float type `t`: infinity, or the largest finite value of an fp8 kind
// without infinities (the identity of max and min over `t`, negated for max).
double largestFloat(ScalarType t);
// `v` wrapped to the width of integer type `t` (sign-extended for signed types, i1: low bit).
int64_t wrapToInt(ScalarType t, int64_t v);
// The storage encoding of a float value in type `t` and back.
uint64_t encodeFloat(ScalarType t, double v);
double decodeFloat(ScalarType t, uint64_t bits);

// Dynamic symbol values: taken from `symbols` or inferred from the tensors' shapes (every
// dynamic symbol that is a whole dim of some parameter). Checks that the given shapes agree
// with the kernel's parameter types and that every `assume` holds. On success `symbols` holds
// every dynamic symbol of the kernel.
bool bindShapes(const ir::Kernel &kernel, const std::vector<HostTensor> &args,
                std::map<std::string, int64_t> &symbols, std::string &error);

// The concrete shape of parameter `param` given the symbol values (all dynamic symbols bound).
bool paramShape(const ir::Kernel &kernel, size_t param, const std::map<std::string, int64_t> &symbols,
                std::vector<int64_t> &shape, std::string &error);

// Evaluates `kernel` on `args` (one per parameter, in order). Output parameters are updated in
// place (only the elements the kernel writes). `symbols` as for bindShapes. Returns false with
// a message (naming the op's source line:col) on a shape mismatch or an evaluation error.
// `written`, when given, receives per parameter how many distinct elements the kernel wrote.
bool evaluate(const ir::Kernel &kernel, std::map<std::string, int64_t> symbols,
              std::vector<HostTensor> &args, std::string &error,
              std::vector<int64_t> *written = nullptr);

} // namespace wave::ref
