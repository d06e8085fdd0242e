// The kernel graph IR: what sema makes of a kernel, and what every later pass reads and
// rewrites. Values are whole tensors with symbolic shapes (sets of named dims, in an order);
// ops are the language's operations, with `iterate` and `if` holding nested regions. Shapes,
// element types and resolved attributes are final here: no pass re-checks the source.
#pragma once

#include "frontend/scalar_type.h"
#include "frontend/source.h"
#include "symbolic/index_expr.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace wave {
struct MmaKind;
}

namespace wave::ir {

// A dimension is named by a symbol or an expression of one symbol (`N / 2`); two dims are the
// same dim when their names are equal. `size` is its extent once bindings apply.
struct Dim {
  sym::IndexExpr name;
  sym::IndexExpr size;
  std::string str() const { return name.str(); }
  bool operator==(const Dim &o) const { return name.equals(o.name); }
  bool operator!=(const Dim &o) const { return !(*this == o); }
};
using Shape = std::vector<Dim>;

bool hasDim(const Shape &s, const Dim &d);
// Same dims, any order.
bool sameDimSet(const Shape &a, const Shape &b);
// Every dim of `inner` is in `outer`.
bool containsDims(const Shape &outer, const Shape &inner);
std::string shapeStr(const Shape &s); // [M, N]

struct Type {
  enum Kind { Register, Memory, None } kind = None;
  Shape shape;
  ScalarType dtype = ScalarType::F32;
  AddressSpace space = AddressSpace::Global; // Memory only
  static Type reg(Shape s, ScalarType t) { return {Register, std::move(s), t, AddressSpace::Global}; }
  static Type mem(Shape s, AddressSpace sp, ScalarType t) { return {Memory, std::move(s), t, sp}; }
  bool isRegister() const { return kind == Register; }
  bool isMemory() const { return kind == Memory; }
  bool isScalar() const { return kind == Register && shape.empty(); }
  std::string str() const; // Register[M, N, f32], Memory[M, K, shared, f16], f32
  bool operator==(const Type &o) const;
};

struct Op;
struct Region;

struct Value {
  unsigned id = 0;
  Type type;
  Op *def = nullptr;     // null for kernel parameters and region arguments
  Region *owner = nullptr; // region whose argument this is, when def == nullptr and not a param
  int paramIndex = -1;   // kernel parameter index, or -1
  std::string name;      // the source name it was bound to, for printing; may be empty
  std::vector<Op *> users;
};

enum class OpKind {
  Constant,   // splat of a literal: fvalue/ivalue, type = result type
  Read,       // operands: mem; attrs: mapping, ept
  Write,      // operands: value, mem
  AtomicAdd,  // operands: value, mem; result: old values
  AtomicMin,
  AtomicMax,
  Mma,        // operands: lhs, rhs, acc; attrs: mma kind (null = auto/unresolved)
  Reduce,     // operands: x [, init]; attrs: reduce, dims[0] = reduced dim
  Unary,      // attrs: unary (Neg, BitNot)
  Binary,     // attrs: binary
  Math,       // attrs: math
  Select,     // operands: cond, a, b
  Cast,       // attrs: dtype
  Broadcast,  // attrs: dims = target shape
  Permute,    // attrs: dims = target order
  SelfIndex,  // attrs: dims[0], dtype
  ApplyExpr,  // operands: x; attrs: expr over lambdaVar, pred when a predicate
  Allocate,   // attrs: dims, tile; result: shared Memory
  Barrier,
  Iterate,    // operands: inits; regions[0] args: carried; attrs: dims[0] = iterated dim
  If,         // operands: cond (or none with pred); regions: then, else
  Yield,      // operands: yielded values (terminator of iterate / if regions)
  Cumsum,     // operands: x; attrs: dims[0] = the scanned dim (inclusive prefix sum)
  TopK,       // operands: x; results: values, indices (i32); attrs: dims[0] = the dim searched,
              // dims[1] = the result's k dim (replacing dims[0]), ivalue = k
};
const char *opKindName(OpKind k);

enum class ReduceKind { Sum, Max, Min };
enum class UnaryKind { Neg, BitNot };
enum class BinaryKind { Add, Sub, Mul, Div, FloorDiv, Mod, Eq, Ne, Lt, Le, Gt, Ge, And, Xor, Or };
enum class MathKind { Exp, Exp2, Log, Log2, Sqrt, Rsqrt, Reciprocal, Abs, Tanh, Sin, Cos, Maximum, Minimum };
const char *binaryKindName(BinaryKind k);
const char *mathKindName(MathKind k);

// A resolved index mapping (docs/language.md section 3), at one use.
struct Mapping {
  std::string name;
  std::vector<std::string> iterators; // symbol names: "$it:<mapping>:<i>"
  std::vector<std::pair<Dim, sym::IndexExpr>> inputs, outputs;
  // Data-dependent indices (`gather`, `scatter`, `scatter_add`; docs/language.md section 8):
  // the name of the symbol that stands, in the memory side's expressions, for the element of
  // the op's index register (indexOperand) at the iteration point; empty for other mappings.
  std::string valueSymbol;
  ir::Dim indexedDim; // the tensor dim the index selects (valueSymbol set)
};

struct Region {
  std::vector<Value *> args;
  std::vector<std::unique_ptr<Op>> ops;
};

struct Op {
  OpKind kind;
  SourceRange loc;
  std::vector<Value *> operands;
  std::vector<Value *> results;
  std::vector<std::unique_ptr<Region>> regions;
  Region *parent = nullptr;

  // Attributes; which ones are meaningful depends on `kind`.
  double fvalue = 0;
  int64_t ivalue = 0;
  ScalarType dtype = ScalarType::F32;
  std::vector<Dim> dims;
  std::vector<int64_t> tile;
  const MmaKind *mma = nullptr;
  std::shared_ptr<const Mapping> mapping;
  std::optional<int64_t> ept;
  ReduceKind reduce = ReduceKind::Sum;
  UnaryKind unary = UnaryKind::Neg;
  BinaryKind binary = BinaryKind::Add;
  MathKind math = MathKind::Exp;
  sym::IndexExpr expr;               // ApplyExpr body
  std::optional<sym::Pred> pred;     // ApplyExpr predicate body, If on a symbol predicate
  std::string lambdaVar;             // ApplyExpr variable symbol name
};

struct Param {
  std::string name;
  SourceRange loc;
  Value *value = nullptr;
  bool isOutput = false; // written or updated atomically
};

// The distribution constraints, resolved to constants.
struct WorkgroupConstraint {
  Dim dim;
  int64_t tile;
  unsigned axis;
  bool primary; // the first workgroup constraint on its axis sets the grid
  SourceRange loc;
};
struct WaveConstraint {
  Dim dim;
  int64_t tile;
  SourceRange loc;
};
struct TilingConstraint {
  Dim dim;
  int64_t tile;
  SourceRange loc;
  // `end = E` (docs/language.md section 5): the loop of a workgroup visits only the tiles that
  // start below E, an index expression over symbols and the workgroup's tile bounds of other
  // dims (`tile_start(M)`, `tile_end(M)`: the symbols tileStartSymbol / tileEndSymbol of M).
  // Null: every tile of the dim. endDims names the dims whose bounds E uses.
  std::optional<sym::IndexExpr> end;
  std::vector<Dim> endDims;
};

// The symbols that stand for the workgroup's tile of `d` in a tiling's `end`: its first index
// and one past its last (clamped to the dim's size).
std::string tileStartSymbol(const Dim &d);
std::string tileEndSymbol(const Dim &d);
struct HardwareConstraint {
  unsigned threadsPerWave = 0;
  unsigned wavesPerBlock[3] = {1, 1, 1};
  const MmaKind *mma = nullptr;      // null: pick per op (mma = auto)
  std::vector<std::pair<Dim, sym::IndexExpr>> vectorShapes;
  // warp_specialize = 0 turns off the warp-specialized TMA pipeline the schedule pass would
  // choose (docs/language.md 12); 1 (the default) leaves the choice to the compiler.
  bool warpSpecialize = true;
  // persistent = 1 asks for persistent tiles in a warp-specialized TMA GEMM (one workgroup per
  // SM walking the output tiles, docs/language.md 12); 0 (the default: measured no faster on
  // the H100, docs/performance.md) keeps one output tile per workgroup.
  bool persistent = false;
  // stage_epilogue = 0 keeps a warp-specialized TMA GEMM's final write straight from registers;
  // 1 (the default) lets the schedule pass stage it through shared memory and store it with TMA
  // (docs/language.md 12).
  bool stageEpilogue = true;
  // lds_dma = 1 asks for the AMD LDS-DMA copy of a register-prefetch loop's tiles where the
  // target has it (docs/language.md 12); 0 (the default, docs/performance.md) keeps the copy
  // through registers. Ignored on targets without LDS DMA.
  bool ldsDma = false;
  // score_ahead = 0 keeps a two-product wgmma loop (attention) issuing and waiting for each
  // product in body order; 1 (the default) lets the schedule pass issue the first product of
  // the next tile before the second product of this one (docs/language.md 12).
  bool scoreAhead = true;
  // tma = 0 keeps a wgmma loop's staged tiles on cp.async (and so off the warp-specialized
  // pipeline, with scores ahead where they apply); 1 (the default) lets the schedule pass copy
  // them with TMA where the tensors allow (docs/language.md 12).
  bool tma = true;
  // pingpong = 1 asks the schedule pass to make the consumer warpgroups of a warp-specialized
  // attention loop take turns issuing their products (docs/language.md 12); 0 (the default:
  // measured 3-7 % slower on the H100, docs/performance.md) lets each issue when it is ready.
  bool pingpong = false;
  SourceRange loc;
};

struct Kernel {
  std::string name;
  SourceRange loc;
  std::vector<Param> params;
  std::vector<WorkgroupConstraint> workgroups;
  std::vector<WaveConstraint> waves;
  std::vector<TilingConstraint> tilings;
  HardwareConstraint hardware;
  std::vector<sym::Pred> assumptions;      // with bindings applied
  std::vector<std::string> assumptionText; // as written
  std::vector<std::string> dynamicSymbols; // in declaration order
  Region body;
  std::vector<std::unique_ptr<Value>> values; // owns every value

  Value *newValue(Type t, std::string name = {});
  const WorkgroupConstraint *workgroupFor(const Dim &d) const;
  const WaveConstraint *waveFor(const Dim &d) const;
  const TilingConstraint *tilingFor(const Dim &d) const;
  std::optional<sym::IndexExpr> vectorShapeFor(const Dim &d) const;
};

// The index register of a gather (a Read) or a scatter / scatter_add (a Write / AtomicAdd):
// the operand after the memory, present when the op's mapping has a valueSymbol; else null.
inline const Value *indexOperand(const Op &op) {
  if (!op.mapping || op.mapping->valueSymbol.empty())
    return nullptr;
  const size_t at = op.kind == OpKind::Read ? 1 : 2;
  return op.operands.size() > at ? op.operands[at] : nullptr;
}

// Calls f on every op of the region, nested regions included, in program order.
void walk(const Region &r, const std::function<void(const Op &)> &f);
std::string print(const Kernel &k); // --emit=ir

} // namespace wave::ir
