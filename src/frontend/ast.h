// The abstract syntax tree of a `.wave` file (docs/language.md). The parser builds it from the ANTLR
// parse tree; every node carries the source range it was written at. Sema reads it and records
// its conclusions (types, resolved names) in its own tables, never in the tree, so the AST stays
// a faithful picture of the text: `--emit=ast` prints it back.
#pragma once

#include "frontend/scalar_type.h"
#include "frontend/source.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace wave::ast {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;

// A name as written, with where it was written.
struct Ident {
  std::string name;
  SourceRange range;
};

// ---- expressions --------------------------------------------------------------------------

enum class ExprKind {
  Int,          // 42, 0x2A, 4_096
  Float,        // 1.0, .5, 1e-6, inf, nan
  Bool,         // true, false
  Name,         // an identifier
  Space,        // global, shared
  DType,        // f16, i32, bool, index ... used as a value (cast(x, f16))
  Unary,        // -x, ~x
  Binary,       // x + y, ...
  Call,         // read(a, mapping = f), max(x, dim = N), workgroup(M, 64, dim = 0)
  List,         // [M, N]
  Dict,         // {M: 1, N: 64}
  Lambda,       // v => v < K   (only as an argument of apply_expr)
  RegisterCtor, // Register[M, N, f32](0.0)
  If,           // if c { ...; yield a; } else { ...; yield b; }
  Iterate,      // iterate K (acc = x) { ...; yield y; }
};

struct Expr {
  ExprKind kind;
  SourceRange range;
  bool parenthesized = false; // written inside ( ... )
  // Levels of nesting at and below this node, as the parser counts them against
  // `expression-too-deep` (parse_state.h: kMaxExprDepth): 0 for a leaf, 1 for `-x` or `a + b`.
  uint32_t depth = 0;
  Expr(ExprKind k, SourceRange r) : kind(k), range(r) {}
  virtual ~Expr() = default;
};

// isa / cast helpers in the LLVM style: each node type names its kind.
template <class T> bool isa(const Expr *e) { return e && e->kind == T::Kind; }
template <class T> T *dyn_cast(Expr *e) { return isa<T>(e) ? static_cast<T *>(e) : nullptr; }
template <class T> const T *dyn_cast(const Expr *e) {
  return isa<T>(e) ? static_cast<const T *>(e) : nullptr;
}

struct IntLit : Expr {
  static constexpr ExprKind Kind = ExprKind::Int;
  int64_t value;
  IntLit(SourceRange r, int64_t v) : Expr(Kind, r), value(v) {}
};

struct FloatLit : Expr {
  static constexpr ExprKind Kind = ExprKind::Float;
  double value;
  std::string spelling; // as written ("1e-6", "inf")
  FloatLit(SourceRange r, double v, std::string s)
      : Expr(Kind, r), value(v), spelling(std::move(s)) {}
};

struct BoolLit : Expr {
  static constexpr ExprKind Kind = ExprKind::Bool;
  bool value;
  BoolLit(SourceRange r, bool v) : Expr(Kind, r), value(v) {}
};

struct NameRef : Expr {
  static constexpr ExprKind Kind = ExprKind::Name;
  std::string name;
  NameRef(SourceRange r, std::string n) : Expr(Kind, r), name(std::move(n)) {}
};

struct SpaceLit : Expr {
  static constexpr ExprKind Kind = ExprKind::Space;
  AddressSpace space;
  SpaceLit(SourceRange r, AddressSpace s) : Expr(Kind, r), space(s) {}
};

struct DTypeLit : Expr {
  static constexpr ExprKind Kind = ExprKind::DType;
  ScalarType type;
  DTypeLit(SourceRange r, ScalarType t) : Expr(Kind, r), type(t) {}
};

enum class UnaryOp { Neg, BitNot };
enum class BinaryOp {
  Add, Sub, Mul, Div, FloorDiv, Mod,
  Eq, Ne, Lt, Le, Gt, Ge,
  And, Xor, Or,
};
const char *unaryOpSpelling(UnaryOp op);
const char *binaryOpSpelling(BinaryOp op);
bool isComparison(BinaryOp op);

struct Unary : Expr {
  static constexpr ExprKind Kind = ExprKind::Unary;
  UnaryOp op;
  ExprPtr operand;
  Unary(SourceRange r, UnaryOp o, ExprPtr x) : Expr(Kind, r), op(o), operand(std::move(x)) {}
};

struct Binary : Expr {
  static constexpr ExprKind Kind = ExprKind::Binary;
  BinaryOp op;
  ExprPtr lhs, rhs;
  SourceRange opRange; // the operator token
  Binary(SourceRange r, BinaryOp o, ExprPtr l, ExprPtr rr, SourceRange opr)
      : Expr(Kind, r), op(o), lhs(std::move(l)), rhs(std::move(rr)), opRange(opr) {}
};

// One argument of a call: positional (name empty) or named (`dim = N`).
struct Arg {
  Ident name; // name.name empty for a positional argument
  ExprPtr value;
  bool isNamed() const { return !name.name.empty(); }
};

struct Call : Expr {
  static constexpr ExprKind Kind = ExprKind::Call;
  Ident callee;
  std::vector<Arg> args;
  Call(SourceRange r, Ident c) : Expr(Kind, r), callee(std::move(c)) {}
};

struct ListExpr : Expr {
  static constexpr ExprKind Kind = ExprKind::List;
  std::vector<ExprPtr> elements;
  explicit ListExpr(SourceRange r) : Expr(Kind, r) {}
};

struct DictEntry {
  ExprPtr key;
  ExprPtr value;
};

struct DictExpr : Expr {
  static constexpr ExprKind Kind = ExprKind::Dict;
  std::vector<DictEntry> entries;
  explicit DictExpr(SourceRange r) : Expr(Kind, r) {}
};

struct Lambda : Expr {
  static constexpr ExprKind Kind = ExprKind::Lambda;
  Ident param;
  ExprPtr body;
  Lambda(SourceRange r, Ident p, ExprPtr b) : Expr(Kind, r), param(std::move(p)), body(std::move(b)) {}
};

// A written type: Memory[dims..., SPACE, T], Register[dims..., T], or a scalar type name.
enum class TypeKind { Memory, Register, Scalar };
struct TypeExpr {
  TypeKind kind = TypeKind::Scalar;
  SourceRange range;
  std::vector<ExprPtr> dims; // Memory / Register only
  ExprPtr space;             // Memory only: SpaceLit or NameRef of a symbol
  ScalarType dtype = ScalarType::F32;
  SourceRange dtypeRange;
};

struct RegisterCtor : Expr {
  static constexpr ExprKind Kind = ExprKind::RegisterCtor;
  TypeExpr type; // kind == Register
  ExprPtr init;
  RegisterCtor(SourceRange r, TypeExpr t, ExprPtr i)
      : Expr(Kind, r), type(std::move(t)), init(std::move(i)) {}
};

struct Block {
  SourceRange range; // from '{' to '}'
  std::vector<StmtPtr> stmts;
};

struct IfExpr : Expr {
  static constexpr ExprKind Kind = ExprKind::If;
  ExprPtr cond;
  Block thenBlock;
  std::optional<Block> elseBlock; // `else if` is an else block holding one ExprStmt(IfExpr)
  IfExpr(SourceRange r, ExprPtr c) : Expr(Kind, r), cond(std::move(c)) {}
};

struct Carried {
  Ident name;
  ExprPtr init;
};

struct IterateExpr : Expr {
  static constexpr ExprKind Kind = ExprKind::Iterate;
  ExprPtr dim; // usually a NameRef; any dim expression is accepted by the grammar
  std::vector<Carried> carried;
  Block body;
  IterateExpr(SourceRange r, ExprPtr d) : Expr(Kind, r), dim(std::move(d)) {}
};

// ---- statements ---------------------------------------------------------------------------

enum class StmtKind { Assign, CompoundAssign, Expr, Yield };

struct Stmt {
  StmtKind kind;
  SourceRange range;
  Stmt(StmtKind k, SourceRange r) : kind(k), range(r) {}
  virtual ~Stmt() = default;
};

// a = e;   a, b = iterate ...;
struct AssignStmt : Stmt {
  static constexpr StmtKind Kind = StmtKind::Assign;
  std::vector<Ident> targets;
  ExprPtr value;
  AssignStmt(SourceRange r) : Stmt(Kind, r) {}
};

// a += e; (-=, *=, /=): op is Add, Sub, Mul or Div.
struct CompoundAssignStmt : Stmt {
  static constexpr StmtKind Kind = StmtKind::CompoundAssign;
  Ident target;
  BinaryOp op;
  SourceRange opRange;
  ExprPtr value;
  CompoundAssignStmt(SourceRange r) : Stmt(Kind, r), op(BinaryOp::Add) {}
};

struct ExprStmt : Stmt {
  static constexpr StmtKind Kind = StmtKind::Expr;
  ExprPtr expr;
  ExprStmt(SourceRange r, ExprPtr e) : Stmt(Kind, r), expr(std::move(e)) {}
};

struct YieldStmt : Stmt {
  static constexpr StmtKind Kind = StmtKind::Yield;
  std::vector<ExprPtr> values;
  YieldStmt(SourceRange r) : Stmt(Kind, r) {}
};

template <class T> bool isa(const Stmt *s) { return s && s->kind == T::Kind; }
template <class T> T *dyn_cast(Stmt *s) { return isa<T>(s) ? static_cast<T *>(s) : nullptr; }
template <class T> const T *dyn_cast(const Stmt *s) {
  return isa<T>(s) ? static_cast<const T *>(s) : nullptr;
}

// ---- declarations -------------------------------------------------------------------------

// One name of a `symbol` declaration (`symbol A, B = 4;` gives two).
struct SymbolDecl {
  Ident name;
  ExprPtr value; // null when no default is given
  SourceRange range;
};

struct MappingEntry {
  ExprPtr key;   // a dim: NameRef, or an expression of one symbol
  ExprPtr value; // an index expression over iterators and symbols
};

struct MappingDecl {
  Ident name;
  std::vector<Ident> iterators;
  std::vector<MappingEntry> inputs, outputs;
  SourceRange inputsRange, outputsRange; // the section keywords; invalid when absent
  SourceRange range;
};

struct Param {
  Ident name;
  TypeExpr type;
};

struct KernelDecl {
  Ident name;
  std::vector<Param> params;
  // Each constraint is written like a call: workgroup(M, 64, dim = 0).
  std::vector<std::unique_ptr<Call>> constraints;
  SourceRange constraintsRange; // the `constraints` keyword; invalid when the block is missing
  Block body;                   // the statements after the constraints block
  SourceRange range;
};

enum class DeclKind { Symbol, Mapping, Kernel };

struct Module {
  // Declarations in source order, each kind in its own list; `order` interleaves them.
  std::vector<SymbolDecl> symbols;
  std::vector<MappingDecl> mappings;
  std::vector<KernelDecl> kernels;
  std::vector<std::pair<DeclKind, size_t>> order;
};

// Prints the tree in an indented, line-per-node form for `--emit=ast` (ranges as line:col).
std::string dump(const Module &m);
// Prints an expression back as source text (used in messages).
std::string toSource(const Expr &e);
// Prints a written type back as source text: Memory[M, K, shared, f16], f32.
std::string toSource(const TypeExpr &t);

} // namespace wave::ast
