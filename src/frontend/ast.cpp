// Printing the AST: `dump` for `wavec --emit=ast`, `toSource` for messages.
#include "frontend/ast.h"

#include <fmt/format.h>

namespace wave::ast {

const char *unaryOpSpelling(UnaryOp op) { return op == UnaryOp::Neg ? "-" : "~"; }

const char *binaryOpSpelling(BinaryOp op) {
  switch (op) {
  case BinaryOp::Add:
    return "+";
  case BinaryOp::Sub:
    return "-";
  case BinaryOp::Mul:
    return "*";
  case BinaryOp::Div:
    return "/";
  case BinaryOp::FloorDiv:
    return "//";
  case BinaryOp::Mod:
    return "%";
  case BinaryOp::Eq:
    return "==";
  case BinaryOp::Ne:
    return "!=";
  case BinaryOp::Lt:
    return "<";
  case BinaryOp::Le:
    return "<=";
  case BinaryOp::Gt:
    return ">";
  case BinaryOp::Ge:
    return ">=";
  case BinaryOp::And:
    return "&";
  case BinaryOp::Xor:
    return "^";
  case BinaryOp::Or:
    return "|";
  }
  return "?";
}

bool isComparison(BinaryOp op) {
  switch (op) {
  case BinaryOp::Eq:
  case BinaryOp::Ne:
  case BinaryOp::Lt:
  case BinaryOp::Le:
  case BinaryOp::Gt:
  case BinaryOp::Ge:
    return true;
  default:
    return false;
  }
}

// ---- toSource -----------------------------------------------------------------------------

namespace {

// Binding strength, loosest first, as in docs/language.md section 1.
enum Precedence {
  kBlockLike = 0, // lambdas, if, iterate: parenthesized when they are operands
  kOr,
  kXor,
  kAnd,
  kCompare,
  kAdd,
  kMul,
  kUnary,
  kPrimary,
};

int precedence(BinaryOp op) {
  switch (op) {
  case BinaryOp::Or:
    return kOr;
  case BinaryOp::Xor:
    return kXor;
  case BinaryOp::And:
    return kAnd;
  case BinaryOp::Add:
  case BinaryOp::Sub:
    return kAdd;
  case BinaryOp::Mul:
  case BinaryOp::Div:
  case BinaryOp::FloorDiv:
  case BinaryOp::Mod:
    return kMul;
  default:
    return kCompare;
  }
}

int precedence(const Expr &e) {
  switch (e.kind) {
  case ExprKind::Binary:
    return precedence(static_cast<const Binary &>(e).op);
  case ExprKind::Unary:
    return kUnary;
  case ExprKind::Lambda:
  case ExprKind::If:
  case ExprKind::Iterate:
    return kBlockLike;
  default:
    return kPrimary;
  }
}

// Operands keep the parentheses they were written with, and get those that precedence needs.
std::string parenthesized(const Expr &e, bool needed) {
  return needed && !e.parenthesized ? "(" + toSource(e) + ")" : toSource(e);
}

std::string join(const std::vector<ExprPtr> &xs) {
  std::string out;
  for (size_t i = 0; i < xs.size(); ++i)
    out += (i ? ", " : "") + (xs[i] ? toSource(*xs[i]) : std::string("?"));
  return out;
}

std::string floatSpelling(const FloatLit &f) {
  return f.spelling.empty() ? fmt::format("{}", f.value) : f.spelling;
}

} // namespace

std::string toSource(const TypeExpr &t) {
  if (t.kind == TypeKind::Scalar)
    return scalarTypeName(t.dtype);
  std::string out = t.kind == TypeKind::Memory ? "Memory[" : "Register[";
  for (const ExprPtr &d : t.dims)
    out += (d ? toSource(*d) : std::string("?")) + ", ";
  if (t.kind == TypeKind::Memory)
    out += (t.space ? toSource(*t.space) : std::string("?")) + ", ";
  return out + scalarTypeName(t.dtype) + "]";
}

// The expression without the parentheses it may have been written in.
static std::string bareSource(const Expr &e) {
  switch (e.kind) {
  case ExprKind::Int:
    return std::to_string(static_cast<const IntLit &>(e).value);
  case ExprKind::Float:
    return floatSpelling(static_cast<const FloatLit &>(e));
  case ExprKind::Bool:
    return static_cast<const BoolLit &>(e).value ? "true" : "false";
  case ExprKind::Name:
    return static_cast<const NameRef &>(e).name;
  case ExprKind::Space:
    return addressSpaceName(static_cast<const SpaceLit &>(e).space);
  case ExprKind::DType:
    return scalarTypeName(static_cast<const DTypeLit &>(e).type);
  case ExprKind::Unary: {
    auto &u = static_cast<const Unary &>(e);
    if (!u.operand)
      return unaryOpSpelling(u.op);
    return unaryOpSpelling(u.op) + parenthesized(*u.operand, precedence(*u.operand) <= kUnary);
  }
  case ExprKind::Binary: {
    auto &b = static_cast<const Binary &>(e);
    int p = precedence(b.op);
    std::string lhs = b.lhs ? parenthesized(*b.lhs, precedence(*b.lhs) < p ||
                                                        (p == kCompare && precedence(*b.lhs) == p))
                            : "?";
    std::string rhs = b.rhs ? parenthesized(*b.rhs, precedence(*b.rhs) <= p) : "?";
    return lhs + " " + binaryOpSpelling(b.op) + " " + rhs;
  }
  case ExprKind::Call: {
    auto &c = static_cast<const Call &>(e);
    std::string out = c.callee.name + "(";
    for (size_t i = 0; i < c.args.size(); ++i) {
      if (i)
        out += ", ";
      if (c.args[i].isNamed())
        out += c.args[i].name.name + " = ";
      out += c.args[i].value ? toSource(*c.args[i].value) : "?";
    }
    return out + ")";
  }
  case ExprKind::List:
    return "[" + join(static_cast<const ListExpr &>(e).elements) + "]";
  case ExprKind::Dict: {
    auto &d = static_cast<const DictExpr &>(e);
    std::string out = "{";
    for (size_t i = 0; i < d.entries.size(); ++i) {
      out += i ? ", " : "";
      out += d.entries[i].key ? toSource(*d.entries[i].key) : "?";
      out += ": ";
      out += d.entries[i].value ? toSource(*d.entries[i].value) : "?";
    }
    return out + "}";
  }
  case ExprKind::Lambda: {
    auto &l = static_cast<const Lambda &>(e);
    return l.param.name + " => " + (l.body ? toSource(*l.body) : "?");
  }
  case ExprKind::RegisterCtor: {
    auto &r = static_cast<const RegisterCtor &>(e);
    return toSource(r.type) + "(" + (r.init ? toSource(*r.init) : "?") + ")";
  }
  case ExprKind::If: {
    auto &i = static_cast<const IfExpr &>(e);
    return "if " + (i.cond ? toSource(*i.cond) : "?") + " {...}" +
           (i.elseBlock ? " else {...}" : "");
  }
  case ExprKind::Iterate: {
    auto &it = static_cast<const IterateExpr &>(e);
    std::string out = "iterate ";
    if (it.dim)
      out += parenthesized(*it.dim, !isa<NameRef>(it.dim.get()) && !isa<IntLit>(it.dim.get()));
    out += " (";
    for (size_t i = 0; i < it.carried.size(); ++i) {
      out += i ? ", " : "";
      out += it.carried[i].name.name + " = ";
      out += it.carried[i].init ? toSource(*it.carried[i].init) : "?";
    }
    return out + ") {...}";
  }
  }
  return "?";
}

std::string toSource(const Expr &e) {
  return e.parenthesized ? "(" + bareSource(e) + ")" : bareSource(e);
}

// ---- dump ---------------------------------------------------------------------------------

namespace {

class Dumper {
public:
  std::string out;

  void module(const Module &m) {
    line(0, "Module", {});
    for (auto [kind, index] : m.order) {
      switch (kind) {
      case DeclKind::Symbol:
        symbol(m.symbols[index]);
        break;
      case DeclKind::Mapping:
        mapping(m.mappings[index]);
        break;
      case DeclKind::Kernel:
        kernel(m.kernels[index]);
        break;
      }
    }
  }

private:
  void line(int depth, const std::string &text, SourceRange r) {
    out.append(2 * depth, ' ');
    out += text;
    if (r.valid())
      out += fmt::format(" @{}:{}", r.begin.line, r.begin.col);
    out += '\n';
  }

  void symbol(const SymbolDecl &s) {
    line(1, "Symbol " + s.name.name, s.name.range);
    if (s.value)
      expr(2, *s.value);
  }

  void mapping(const MappingDecl &m) {
    std::string iterators;
    for (const Ident &i : m.iterators)
      iterators += (iterators.empty() ? "" : ", ") + i.name;
    line(1, "Mapping " + m.name.name + "(" + iterators + ")", m.name.range);
    section(2, "inputs", m.inputsRange, m.inputs);
    section(2, "outputs", m.outputsRange, m.outputs);
  }

  void section(int depth, const char *name, SourceRange r,
               const std::vector<MappingEntry> &entries) {
    line(depth, name, r);
    for (const MappingEntry &e : entries) {
      line(depth + 1, "Entry", e.key ? e.key->range : SourceRange{});
      if (e.key)
        expr(depth + 2, *e.key);
      if (e.value)
        expr(depth + 2, *e.value);
    }
  }

  void kernel(const KernelDecl &k) {
    line(1, "Kernel " + k.name.name, k.name.range);
    for (const Param &p : k.params)
      line(2, "Param " + p.name.name + ": " + toSource(p.type), p.name.range);
    line(2, "Constraints", k.constraintsRange);
    for (const auto &c : k.constraints)
      if (c)
        expr(3, *c);
    block(2, "Body", k.body);
  }

  void block(int depth, const char *name, const Block &b) {
    line(depth, name, b.range);
    for (const StmtPtr &s : b.stmts)
      if (s)
        stmt(depth + 1, *s);
  }

  void stmt(int depth, const Stmt &s) {
    switch (s.kind) {
    case StmtKind::Assign: {
      auto &a = static_cast<const AssignStmt &>(s);
      std::string names;
      for (const Ident &t : a.targets)
        names += (names.empty() ? "" : ", ") + t.name;
      line(depth, "Assign " + names, s.range);
      if (a.value)
        expr(depth + 1, *a.value);
      break;
    }
    case StmtKind::CompoundAssign: {
      auto &c = static_cast<const CompoundAssignStmt &>(s);
      line(depth, "CompoundAssign " + c.target.name + " " + binaryOpSpelling(c.op) + "=",
           s.range);
      if (c.value)
        expr(depth + 1, *c.value);
      break;
    }
    case StmtKind::Expr: {
      line(depth, "ExprStmt", s.range);
      if (auto &e = static_cast<const ExprStmt &>(s).expr)
        expr(depth + 1, *e);
      break;
    }
    case StmtKind::Yield: {
      line(depth, "Yield", s.range);
      for (const ExprPtr &v : static_cast<const YieldStmt &>(s).values)
        if (v)
          expr(depth + 1, *v);
      break;
    }
    }
  }

  void expr(int depth, const Expr &e) {
    std::string paren = e.parenthesized ? " (parenthesized)" : "";
    switch (e.kind) {
    case ExprKind::Int:
    case ExprKind::Float:
    case ExprKind::Bool:
    case ExprKind::Name:
    case ExprKind::Space:
    case ExprKind::DType:
      line(depth, leafKind(e.kind) + " " + toSource(e) + paren, e.range);
      return;
    case ExprKind::Unary: {
      auto &u = static_cast<const Unary &>(e);
      line(depth, std::string("Unary ") + unaryOpSpelling(u.op) + paren, e.range);
      if (u.operand)
        expr(depth + 1, *u.operand);
      return;
    }
    case ExprKind::Binary: {
      auto &b = static_cast<const Binary &>(e);
      line(depth, std::string("Binary ") + binaryOpSpelling(b.op) + paren, e.range);
      if (b.lhs)
        expr(depth + 1, *b.lhs);
      if (b.rhs)
        expr(depth + 1, *b.rhs);
      return;
    }
    case ExprKind::Call: {
      auto &c = static_cast<const Call &>(e);
      line(depth, "Call " + c.callee.name + paren, e.range);
      for (const Arg &a : c.args) {
        if (!a.value)
          continue;
        if (!a.isNamed()) {
          expr(depth + 1, *a.value);
          continue;
        }
        line(depth + 1, "Arg " + a.name.name, a.name.range);
        expr(depth + 2, *a.value);
      }
      return;
    }
    case ExprKind::List:
      line(depth, "List" + paren, e.range);
      for (const ExprPtr &x : static_cast<const ListExpr &>(e).elements)
        if (x)
          expr(depth + 1, *x);
      return;
    case ExprKind::Dict:
      line(depth, "Dict" + paren, e.range);
      for (const DictEntry &d : static_cast<const DictExpr &>(e).entries) {
        line(depth + 1, "Entry", d.key ? d.key->range : SourceRange{});
        if (d.key)
          expr(depth + 2, *d.key);
        if (d.value)
          expr(depth + 2, *d.value);
      }
      return;
    case ExprKind::Lambda: {
      auto &l = static_cast<const Lambda &>(e);
      line(depth, "Lambda " + l.param.name + paren, e.range);
      if (l.body)
        expr(depth + 1, *l.body);
      return;
    }
    case ExprKind::RegisterCtor: {
      auto &r = static_cast<const RegisterCtor &>(e);
      line(depth, "RegisterCtor " + toSource(r.type) + paren, e.range);
      if (r.init)
        expr(depth + 1, *r.init);
      return;
    }
    case ExprKind::If: {
      auto &i = static_cast<const IfExpr &>(e);
      line(depth, "If" + paren, e.range);
      if (i.cond)
        expr(depth + 1, *i.cond);
      block(depth + 1, "Then", i.thenBlock);
      if (i.elseBlock)
        block(depth + 1, "Else", *i.elseBlock);
      return;
    }
    case ExprKind::Iterate: {
      auto &it = static_cast<const IterateExpr &>(e);
      line(depth, "Iterate" + paren, e.range);
      if (it.dim)
        expr(depth + 1, *it.dim);
      for (const Carried &c : it.carried) {
        line(depth + 1, "Carried " + c.name.name, c.name.range);
        if (c.init)
          expr(depth + 2, *c.init);
      }
      block(depth + 1, "Body", it.body);
      return;
    }
    }
  }

  static std::string leafKind(ExprKind k) {
    switch (k) {
    case ExprKind::Int:
      return "Int";
    case ExprKind::Float:
      return "Float";
    case ExprKind::Bool:
      return "Bool";
    case ExprKind::Name:
      return "Name";
    case ExprKind::Space:
      return "Space";
    default:
      return "DType";
    }
  }
};

} // namespace

std::string dump(const Module &m) {
  Dumper d;
  d.module(m);
  return d.out;
}

} // namespace wave::ast
