// Index expressions of the source (symbol values, shapes, constraints, mappings, assume,
// apply_expr bodies) converted to sym::IndexExpr / sym::Pred, with exact division proven.
#include "sema/sema_internal.h"

namespace wave::sema_detail {

using sym::IndexExpr;
using sym::Pred;

std::string exprText(const ast::Expr &e) { return ast::toSource(e); }

bool Sema::checkDivision(const PendingDivision &d, const sym::Facts &facts) {
  IndexExpr b = facts.simplify(resolveValues(d.b));
  if (auto c = b.asInteger(); c && *c == 0) {
    diags.report(DiagId::DivisionByZero, d.loc, {d.text});
    return false;
  }
  IndexExpr a = resolveValues(d.a);
  if (facts.provesExact(a, b))
    return true;
  if (facts.simplify(a).isInteger() && b.isInteger()) {
    diags.report(DiagId::InexactConstDivision, d.loc, {facts.simplify(a).str(), b.str()});
    return false;
  }
  diags.report(DiagId::InexactDivision, d.loc, {a.str(), b.str()});
  return false;
}

namespace {
bool isNamedCall(const ast::Call &c, const char *name, size_t arity) {
  return c.callee.name == name && c.args.size() == arity;
}
} // namespace

// toIndex of a name: an iterator or local, else an integer symbol's value (or the symbol
// itself with ctx.keepSymbols).
std::optional<IndexExpr> Sema::nameToIndex(const ast::Expr &e, IndexContext &ctx) {
  using namespace ast;
  const std::string &name = static_cast<const NameRef &>(e).name;
  auto local = ctx.locals.find(name);
  if (local != ctx.locals.end())
    return local->second;
  size_t i = symbolIndex(name);
  if (i == SIZE_MAX) {
    for (const auto &p : ctx.scalarParams)
      if (p == name) {
        diags.report(DiagId::ScalarParamInShape, e.range, {name});
        return std::nullopt;
      }
    std::vector<std::string> candidates = symbolNames();
    for (const auto &[n, v] : ctx.locals)
      candidates.push_back(n);
    diags.report(DiagId::UnknownName, e.range, {name, didYouMean(name, candidates)});
    return std::nullopt;
  }
  if (!resolveSymbol(i))
    return std::nullopt;
  const SymbolInfo &s = symbols[i];
  if (ctx.used)
    ctx.used->insert(name);
  if (s.kind != SymbolKind::Int) {
    static const char *kinds[] = {"is an integer", "names an address space",
                                  "names a matrix kind", "is a float constant"};
    diags.report(DiagId::SymbolKindMismatch, e.range,
                 {name, kinds[static_cast<int>(s.kind)], "an integer"});
    diags.note(DiagId::NoteDeclaredHere, s.loc, {name});
    return std::nullopt;
  }
  return ctx.keepSymbols ? IndexExpr::symbol(name) : s.value;
}

// toIndex of a call: mma_m/mma_n/mma_k of a matrix kind, ceildiv, min and max.
std::optional<IndexExpr> Sema::callToIndex(const ast::Expr &e, IndexContext &ctx) {
  using namespace ast;
  auto &c = static_cast<const Call &>(e);
  for (const auto &a : c.args)
    if (a.isNamed()) {
      diags.report(DiagId::NotIndexExpr, a.name.range, {"a named argument"});
      return std::nullopt;
    }
  if (c.callee.name == "mma_m" || c.callee.name == "mma_n" || c.callee.name == "mma_k") {
    if (c.args.size() != 1) {
      diags.report(DiagId::WrongArity, c.range,
                   {c.callee.name, "1 argument", std::to_string(c.args.size())});
      return std::nullopt;
    }
    auto kind = mmaKindName(*c.args[0].value);
    if (!kind)
      return std::nullopt;
    for (const auto &k : allMmaKinds())
      if (*kind == k.name) {
        const MmaKind *onTarget = findMmaKind(*target, *kind);
        const MmaKind &row = onTarget ? *onTarget : k;
        unsigned v = c.callee.name == "mma_m" ? row.m : c.callee.name == "mma_n" ? row.n : row.k;
        return IndexExpr(static_cast<int64_t>(v));
      }
    return std::nullopt;
  }
  if (c.callee.name == "tile_start" || c.callee.name == "tile_end")
    return tileBoundToIndex(c, ctx);
  bool two = isNamedCall(c, "ceildiv", 2) || isNamedCall(c, "min", 2) || isNamedCall(c, "max", 2);
  if (!two) {
    if (c.callee.name == "ceildiv" || c.callee.name == "min" || c.callee.name == "max") {
      diags.report(DiagId::WrongArity, c.range,
                   {c.callee.name, "2 arguments", std::to_string(c.args.size())});
      return std::nullopt;
    }
    diags.report(DiagId::NotIndexExpr, c.callee.range,
                 {"a call of '" + c.callee.name + "'" +
                  didYouMean(c.callee.name, {"ceildiv", "min", "max", "mma_m", "mma_n", "mma_k"})});
    return std::nullopt;
  }
  auto a = toIndex(*c.args[0].value, ctx);
  auto b = a ? toIndex(*c.args[1].value, ctx) : std::nullopt;
  if (!a || !b)
    return std::nullopt;
  if (c.callee.name == "ceildiv") {
    if (auto z = (ctx.keepSymbols ? resolveValues(*b) : *b).asInteger(); z && *z == 0) {
      diags.report(DiagId::DivisionByZero, e.range, {exprText(e)});
      return std::nullopt;
    }
    return ceilDiv(*a, *b);
  }
  return c.callee.name == "min" ? min(*a, *b) : max(*a, *b);
}

// tile_start(D) / tile_end(D): the workgroup's tile of D, only in a tiling's `end`.
std::optional<IndexExpr> Sema::tileBoundToIndex(const ast::Call &c, IndexContext &ctx) {
  if (!ctx.tileDim) {
    diags.report(DiagId::NotIndexExpr, c.callee.range,
                 {"'" + c.callee.name + "' (only a tiling's `end` may name a workgroup's tile)"});
    return std::nullopt;
  }
  if (c.args.size() != 1) {
    diags.report(DiagId::WrongArity, c.range,
                 {c.callee.name, "1 argument", std::to_string(c.args.size())});
    return std::nullopt;
  }
  auto d = ctx.tileDim(*c.args[0].value);
  if (!d)
    return std::nullopt;
  if (ctx.tileDims && !ir::hasDim(*ctx.tileDims, *d))
    ctx.tileDims->push_back(*d);
  return IndexExpr::symbol(c.callee.name == "tile_start" ? ir::tileStartSymbol(*d)
                                                          : ir::tileEndSymbol(*d));
}

std::optional<IndexExpr> Sema::toIndex(const ast::Expr &e, IndexContext &ctx) {
  using namespace ast;
  switch (e.kind) {
  case ExprKind::Int:
    return IndexExpr(static_cast<const IntLit &>(e).value);
  case ExprKind::Name:
    return nameToIndex(e, ctx);
  case ExprKind::Unary: {
    auto &u = static_cast<const Unary &>(e);
    if (u.op != UnaryOp::Neg)
      break;
    auto x = toIndex(*u.operand, ctx);
    if (!x)
      return std::nullopt;
    return -*x;
  }
  case ExprKind::Binary: {
    auto &b = static_cast<const Binary &>(e);
    if (isComparison(b.op) || b.op == BinaryOp::And || b.op == BinaryOp::Or ||
        b.op == BinaryOp::Xor)
      break;
    auto l = toIndex(*b.lhs, ctx);
    auto r = l ? toIndex(*b.rhs, ctx) : std::nullopt;
    if (!l || !r)
      return std::nullopt;
    switch (b.op) {
    case BinaryOp::Add:
      return *l + *r;
    case BinaryOp::Sub:
      return *l - *r;
    case BinaryOp::Mul:
      return *l * *r;
    case BinaryOp::Div:
    case BinaryOp::FloorDiv:
    case BinaryOp::Mod: {
      PendingDivision d{*l, *r, e.range, exprText(e)};
      IndexExpr rv = ctx.keepSymbols ? resolveValues(*r) : *r;
      if (auto c = rv.asInteger(); c && *c == 0) {
        diags.report(DiagId::DivisionByZero, e.range, {exprText(e)});
        return std::nullopt;
      }
      if (b.op == BinaryOp::FloorDiv)
        return floorDiv(*l, *r);
      if (b.op == BinaryOp::Mod)
        return mod(*l, *r);
      if (ctx.facts) {
        if (!checkDivision(d, *ctx.facts))
          return std::nullopt;
      } else if (ctx.pending) {
        ctx.pending->push_back(d);
      }
      return exactDiv(*l, *r);
    }
    default:
      break;
    }
    break;
  }
  case ExprKind::Call:
    return callToIndex(e, ctx);
  default:
    break;
  }
  std::string what;
  switch (e.kind) {
  case ast::ExprKind::Float:
    what = "a float literal";
    break;
  case ast::ExprKind::Bool:
    what = "a boolean";
    break;
  case ast::ExprKind::Binary:
    what = "the operator '" +
           std::string(binaryOpSpelling(static_cast<const ast::Binary &>(e).op)) +
           "' (a predicate)";
    break;
  case ast::ExprKind::Unary:
    what = "the operator '~'";
    break;
  default:
    what = "'" + exprText(e) + "'";
  }
  diags.report(DiagId::NotIndexExpr, e.range, {what});
  return std::nullopt;
}

std::optional<Pred> Sema::toPred(const ast::Expr &e, IndexContext &ctx) {
  using namespace ast;
  if (auto *b = dyn_cast<Binary>(&e)) {
    if (b->op == BinaryOp::And || b->op == BinaryOp::Or) {
      auto l = toPred(*b->lhs, ctx);
      auto r = l ? toPred(*b->rhs, ctx) : std::nullopt;
      if (!l || !r)
        return std::nullopt;
      return b->op == BinaryOp::And ? Pred::both(*l, *r) : Pred::either(*l, *r);
    }
    if (isComparison(b->op)) {
      auto l = toIndex(*b->lhs, ctx);
      auto r = l ? toIndex(*b->rhs, ctx) : std::nullopt;
      if (!l || !r)
        return std::nullopt;
      static const Pred::CmpOp ops[] = {Pred::Eq, Pred::Ne, Pred::Lt, Pred::Le, Pred::Gt, Pred::Ge};
      return Pred::cmp(ops[static_cast<int>(b->op) - static_cast<int>(BinaryOp::Eq)], *l, *r);
    }
  }
  if (auto *u = dyn_cast<Unary>(&e); u && u->op == UnaryOp::BitNot) {
    auto x = toPred(*u->operand, ctx);
    if (!x)
      return std::nullopt;
    return Pred::negate(*x);
  }
  if (auto *bl = dyn_cast<BoolLit>(&e))
    return Pred::constant(bl->value);
  diags.report(DiagId::NotPredicate, e.range, {"'" + exprText(e) + "'"});
  return std::nullopt;
}

std::optional<ir::Dim> Sema::toDim(const ast::Expr &e, IndexContext &ctx, const char *what) {
  IndexContext named = ctx;
  named.keepSymbols = true;
  named.facts = nullptr; // divisions are checked once, on the extent below
  named.pending = nullptr;
  auto name = toIndex(e, named);
  if (!name)
    return std::nullopt;
  if (name->freeSymbols().size() != 1) {
    diags.report(DiagId::NotADim, e.range, {exprText(e)});
    return std::nullopt;
  }
  // The extent: the same expression with symbol values substituted, exact divisions checked.
  IndexContext sized = ctx;
  sized.keepSymbols = false;
  auto size = toIndex(e, sized);
  if (!size)
    return std::nullopt;
  return ir::Dim{*name, *size};
}

bool Sema::isSymbolic(const ast::Expr &e, const std::set<std::string> &locals) const {
  using namespace ast;
  switch (e.kind) {
  case ExprKind::Int:
  case ExprKind::Bool:
    return true;
  case ExprKind::Name: {
    const auto &n = static_cast<const NameRef &>(e).name;
    if (locals.count(n))
      return false;
    const SymbolInfo *s = findSymbol(n);
    return s && s->kind == SymbolKind::Int;
  }
  case ExprKind::Unary:
    return isSymbolic(*static_cast<const Unary &>(e).operand, locals);
  case ExprKind::Binary: {
    auto &b = static_cast<const Binary &>(e);
    return isSymbolic(*b.lhs, locals) && isSymbolic(*b.rhs, locals);
  }
  case ExprKind::Call: {
    auto &c = static_cast<const Call &>(e);
    if (c.callee.name != "ceildiv" && c.callee.name != "mma_m" && c.callee.name != "mma_n" &&
        c.callee.name != "mma_k")
      return false;
    for (const auto &a : c.args)
      if (!a.value || (!isSymbolic(*a.value, locals) && c.callee.name == "ceildiv"))
        return false;
    return true;
  }
  default:
    return false;
  }
}

std::optional<std::string> Sema::mmaKindName(const ast::Expr &e) {
  auto *n = ast::dyn_cast<ast::NameRef>(&e);
  if (!n) {
    diags.report(DiagId::UnknownMmaKind, e.range, {exprText(e), ""});
    return std::nullopt;
  }
  size_t i = symbolIndex(n->name);
  if (i != SIZE_MAX) {
    if (!resolveSymbol(i))
      return std::nullopt;
    used_.insert(n->name);
    const SymbolInfo &s = symbols[i];
    if (s.kind == SymbolKind::Mma)
      return s.mma;
    if (n->name != "auto") {
      diags.report(DiagId::SymbolKindMismatch, e.range,
                   {n->name, s.kind == SymbolKind::Space ? "names an address space"
                             : s.kind == SymbolKind::Float ? "is a float constant"
                                                           : "is an integer",
                    "a matrix kind"});
      diags.note(DiagId::NoteDeclaredHere, s.loc, {n->name});
      return std::nullopt;
    }
  }
  if (n->name == "auto")
    return std::string("auto");
  if (!isMmaKindName(n->name)) {
    auto names = mmaKindNames();
    names.push_back("auto");
    diags.report(DiagId::UnknownMmaKind, e.range, {n->name, didYouMean(n->name, names)});
    return std::nullopt;
  }
  return n->name;
}

} // namespace wave::sema_detail
