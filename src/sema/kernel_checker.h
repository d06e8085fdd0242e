// The per-kernel part of semantic analysis (private to src/sema): parameters, constraints,
// statements and expressions, building the kernel's graph as it goes.
#pragma once

#include "sema/sema_internal.h"

namespace wave::sema_detail {

// What checking an expression gives: graph values, or a literal whose type is not fixed yet
// (it takes the type of the other operand, docs/language.md section 7).
struct EV {
  enum Kind { Invalid, Values, IntLit, FloatLit } kind = Invalid;
  std::vector<ir::Value *> values;
  int64_t i = 0;
  double f = 0;
  SourceRange loc;
  bool ok() const { return kind != Invalid; }
  bool isLiteral() const { return kind == IntLit || kind == FloatLit; }
  static EV of(ir::Value *v, SourceRange r) { return {Values, {v}, 0, 0, r}; }
  static EV invalid() { return {}; }
};

std::string exprTextOf(const EV &lit);

class KernelChecker {
public:
  // Tiles and vector shapes beyond this are surely mistakes, and bounding them keeps every
  // later product of sizes inside 64 bits.
  static constexpr int64_t kMaxTile = int64_t(1) << 24;

  KernelChecker(Sema &s, const ast::KernelDecl &d);
  std::unique_ptr<ir::Kernel> run();

  // ---- kernel_checker.cpp: parameters, constraints, whole-kernel checks
  void checkAssumptions();
  void checkParams();
  void checkConstraints();
  // The subject dim and constant tile of workgroup / wave / tiling, recorded as constrained.
  std::optional<std::pair<ir::Dim, int64_t>>
  constraintDimTile(const ast::Call &c, const std::vector<const ast::Expr *> &args);
  // Reports a second constraint of the same kind on a dim; true when there was one.
  bool reportDuplicate(const ast::Call &c, const ir::Dim &dim, const SourceRange *prev);
  void checkWorkgroup(const ast::Call &c);
  void checkWave(const ast::Call &c);
  void checkTiling(const ast::Call &c);
  void checkTilingEnds();
  void checkHardware(const ast::Call &c);
  void deriveBlock();
  void finish();
  void constrainExpressionDims(std::set<std::string> &reported);
  void checkIteratedDims(const ir::Region &r, const std::vector<ir::Dim> &loops);
  std::optional<ir::Type> checkType(const ast::TypeExpr &t, const char *what);
  std::optional<int64_t> constantTile(const ast::Expr &e, const std::string &dimName);
  IndexContext indexContext();
  void noteDim(const ir::Dim &d) {
    if (!ir::hasDim(allDims, d))
      allDims.push_back(d);
  }

  // ---- statements.cpp: statements and expressions
  // Checks a block's statements; a final `yield` is returned through `yielded`.
  bool checkBlock(const ast::Block &b, std::vector<EV> *yielded, const char *owner);
  void checkStmt(const ast::Stmt &s);
  EV checkExpr(const ast::Expr &e);
  EV checkName(const ast::NameRef &n);
  EV checkUnary(const ast::Unary &u);
  EV checkBinary(const ast::Binary &b);
  EV checkRegisterCtor(const ast::RegisterCtor &r);
  EV checkIf(const ast::IfExpr &e);
  EV checkIterate(const ast::IterateExpr &e);
  EV binaryOp(ir::BinaryKind k, EV lhs, EV rhs, SourceRange loc, SourceRange opLoc,
              const char *spelling);
  // One register value from an EV (literals become scalar constants of `dflt`).
  ir::Value *asRegister(EV v, const std::string &what, ScalarType dflt = ScalarType::F32);
  // A literal as a constant of type t; null when an integer literal does not fit t
  // (`literal-out-of-range`, reported).
  ir::Value *materialize(const EV &lit, ScalarType t, SourceRange loc);
  bool checkLiteralRange(const EV &lit, ScalarType t, SourceRange loc);
  // Two operands with one element type and broadcast-compatible shapes; returns the result shape.
  std::optional<ir::Shape> unifyOperands(EV &a, EV &b, SourceRange opLoc, const char *spelling,
                                         ir::Value *&va, ir::Value *&vb);
  ir::Value *broadcastTo(ir::Value *v, const ir::Shape &shape, SourceRange loc);

  // ---- builtins.cpp: calls of built-in operations
  EV checkCall(const ast::Call &c);
  struct ArgSpec {
    const char *name;
    bool required;
  };
  // Binds positional and named arguments to the operation's parameters; null slots are
  // optional arguments that were not given.
  std::optional<std::vector<const ast::Expr *>> bindArgs(const ast::Call &c,
                                                         const std::vector<ArgSpec> &spec);
  EV checkRead(const ast::Call &c);
  EV checkWrite(const ast::Call &c, ir::OpKind kind);
  // gather(mem, index, dim = D), scatter / scatter_add(value, mem, index, dim = D): accesses
  // through a data-dependent index (docs/language.md section 8).
  EV checkGather(const ast::Call &c);
  EV checkScatter(const ast::Call &c, bool add);
  // The shared part: the tensor, the index register and the dim; the register shape (the
  // tensor's with D replaced by the index's own dims) and the synthesized mapping.
  std::shared_ptr<const ir::Mapping> dynamicMapping(const ast::Call &c, bool isRead,
                                                    const ast::Expr &memE, const ast::Expr &idxE,
                                                    const ast::Expr &dimE, ir::Value *&mem,
                                                    ir::Value *&index, ir::Shape &regShape);
  EV checkMma(const ast::Call &c);
  // Matrix kinds executed by a group of waves (wgmma): why `k` cannot run an mma over (m, n,
  // kd) with this kernel's tiles and block, or nothing when it can. `forAuto` adds what
  // `mma = auto` needs before it picks such a kind (operands read from shared-memory
  // parameters whose innermost dim is K, a K tile of 32 to 128 bytes, no batch dims, no
  // explicit waves_per_block).
  std::optional<std::string> groupMisfit(const MmaKind &k, const ir::Dim &m, const ir::Dim &n,
                                         const ir::Dim &kd);
  bool groupAutoFits(const ir::Op &mma, const MmaKind &k);
  // After the body: `mma = auto` takes the target's warpgroup kinds when every mma of the
  // kernel was left to auto and fits one; a kernel mixing warpgroup and wave kinds is an error.
  void chooseGroupKinds();
  // Within chooseGroupKinds, on MFMA targets: 32x32 instead of 16x16 where the tiles suit it.
  void chooseMfmaKinds(const std::vector<ir::Op *> &mmas);
  std::vector<ir::Op *> autoMmas; // mma ops whose kind `auto` picked
  EV checkReduce(const ast::Call &c, ir::ReduceKind kind);
  EV checkMath(const ast::Call &c, ir::MathKind kind);
  std::optional<std::pair<ir::Value *, ir::Dim>>
  alongDimOperand(const ast::Call &c, const ast::Expr &xe, const ast::Expr *de);
  EV checkCumsum(const ast::Call &c);
  EV checkTopK(const ast::Call &c);
  EV checkMinMaxElementwise(const ast::Call &c, ir::MathKind kind);
  EV checkSelect(const ast::Call &c);
  EV checkCast(const ast::Call &c);
  EV checkBroadcastOrPermute(const ast::Call &c, bool permute);
  EV checkSelfIndex(const ast::Call &c);
  EV checkApplyExpr(const ast::Call &c);
  EV checkAllocate(const ast::Call &c);
  ir::Value *memoryOperand(const ast::Expr &e, const std::string &what);
  std::optional<ScalarType> scalarTypeArg(const ast::Expr &e, const std::string &what);
  // A dim argument; `note` records it as a dim the kernel has (not for constraint subjects).
  std::optional<ir::Dim> dimArg(const ast::Expr &e, const char *what, bool note = true);
  std::optional<ir::Shape> dimListArg(const ast::Expr &e, const std::string &what);
  std::optional<int64_t> eptArg(const ast::Expr *e);
  std::shared_ptr<const ir::Mapping> resolveMapping(const ast::Expr &e, bool isRead,
                                                    const ir::Type &mem, ir::Shape &regShape);

  // ---- graph building
  ir::Op *emit(ir::OpKind kind, SourceRange loc, std::vector<ir::Value *> operands,
               std::vector<ir::Type> results);

  Sema &S;
  const ast::KernelDecl &decl;
  DiagnosticEngine &diags;
  std::unique_ptr<ir::Kernel> kernel;
  sym::Facts facts;
  std::set<std::string> usedSymbols;
  std::vector<std::string> scalarParamNames;
  ir::Shape allDims;        // every dim some tensor or register of the kernel has
  std::vector<std::pair<ir::Dim, SourceRange>> constrainedDims;
  std::vector<SourceRange> tilingEndLocs; // per kernel->tilings entry: its `end`, else the call
  unsigned waveSize = 0;
  bool hasHardware = false;
  bool wavesGiven = false;
  std::string hardwareMma; // "" or "auto" = pick per op
  bool hardwareMmaFailed = false; // reported already; mma ops stay quiet

  struct Binding {
    ir::Value *value;
    SourceRange loc;
    bool used = false;
    bool warnIfUnused = false; // names bound by assignments (not carried values)
  };
  void bind(const ast::Ident &name, ir::Value *v);
  void popScope();
  std::vector<std::map<std::string, Binding>> scopes;
  std::map<std::string, ir::Value *> params;
  std::vector<ir::Region *> regions;
  std::vector<ir::Dim> iterateDims;
  int yieldDepth = 0;
  int64_t ldsBytes = 0; // explicit allocations so far
  unsigned errorsAtStart = 0;
  bool paramFailed = false;
  std::set<std::string> reportedSymbols;
};

} // namespace wave::sema_detail
