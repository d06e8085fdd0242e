// Statements and expressions of a kernel body: bindings and scopes, the broadcast rule, literal
// typing, `if` and `iterate` with their yields (docs/language.md section 7).
#include "sema/kernel_checker.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace wave::sema_detail {

using ir::BinaryKind;
using ir::OpKind;

ir::Op *KernelChecker::emit(OpKind kind, SourceRange loc, std::vector<ir::Value *> operands,
                            std::vector<ir::Type> results) {
  auto op = std::make_unique<ir::Op>();
  op->kind = kind;
  op->loc = loc;
  op->operands = std::move(operands);
  op->parent = regions.back();
  for (ir::Value *v : op->operands)
    v->users.push_back(op.get());
  for (auto &t : results) {
    ir::Value *v = kernel->newValue(std::move(t));
    v->def = op.get();
    op->results.push_back(v);
  }
  ir::Op *raw = op.get();
  regions.back()->ops.push_back(std::move(op));
  return raw;
}

void KernelChecker::bind(const ast::Ident &name, ir::Value *v) {
  auto &scope = scopes.back();
  auto it = scope.find(name.name);
  if (it != scope.end() && !it->second.used && it->second.warnIfUnused)
    diags.report(DiagId::UnusedValue, it->second.loc, {name.name});
  scope[name.name] = {v, name.range, false, true};
}

void KernelChecker::popScope() {
  // After an error, unused names are more likely its consequence than a mistake of their own.
  if (diags.errorCount() != errorsAtStart) {
    scopes.pop_back();
    return;
  }
  std::vector<std::pair<SourceRange, std::string>> unused;
  for (const auto &[name, b] : scopes.back())
    if (!b.used && b.warnIfUnused && name[0] != '_')
      unused.push_back({b.loc, name});
  std::sort(unused.begin(), unused.end(),
            [](const auto &a, const auto &b) { return a.first.begin < b.first.begin; });
  for (const auto &[loc, name] : unused)
    diags.report(DiagId::UnusedValue, loc, {name});
  scopes.pop_back();
}

bool KernelChecker::checkBlock(const ast::Block &b, std::vector<EV> *yielded, const char *owner) {
  bool sawYield = false;
  for (size_t i = 0; i < b.stmts.size(); ++i) {
    if (diags.shouldStop())
      return false;
    const ast::Stmt &s = *b.stmts[i];
    if (auto *y = ast::dyn_cast<ast::YieldStmt>(&s)) {
      if (!yielded) {
        diags.report(DiagId::YieldOutside, s.range);
        continue;
      }
      if (i + 1 != b.stmts.size())
        diags.report(DiagId::YieldNotLast, s.range);
      sawYield = true;
      for (const auto &v : y->values)
        yielded->push_back(checkExpr(*v));
      continue;
    }
    checkStmt(s);
  }
  return sawYield;
}

void KernelChecker::checkStmt(const ast::Stmt &s) {
  switch (s.kind) {
  case ast::StmtKind::Assign: {
    auto &a = static_cast<const ast::AssignStmt &>(s);
    EV v = checkExpr(*a.value);
    // On failure the names are bound to nothing, so later uses are not reported again.
    auto poison = [&] {
      for (const auto &t : a.targets)
        scopes.back()[t.name] = {nullptr, t.range, true, false};
    };
    if (!v.ok())
      return poison();
    if (v.isLiteral()) {
      ir::Value *c = asRegister(v, "the value");
      v = EV::of(c, a.value->range);
    }
    if (v.values.size() != a.targets.size()) {
      diags.report(DiagId::AssignCount, s.range,
                   {std::to_string(a.targets.size()), std::to_string(v.values.size())});
      return poison();
    }
    for (size_t i = 0; i < a.targets.size(); ++i) {
      ir::Value *val = v.values[i];
      if (val->name.empty())
        val->name = a.targets[i].name;
      bind(a.targets[i], val);
    }
    return;
  }
  case ast::StmtKind::CompoundAssign: {
    auto &c = static_cast<const ast::CompoundAssignStmt &>(s);
    ast::NameRef ref(c.target.range, c.target.name);
    EV lhs = checkName(ref);
    EV rhs = checkExpr(*c.value);
    if (!lhs.ok() || !rhs.ok()) {
      scopes.back()[c.target.name] = {nullptr, c.target.range, true, false};
      return;
    }
    static const BinaryKind kinds[] = {BinaryKind::Add, BinaryKind::Sub, BinaryKind::Mul,
                                       BinaryKind::Div};
    int idx = c.op == ast::BinaryOp::Add ? 0 : c.op == ast::BinaryOp::Sub ? 1
              : c.op == ast::BinaryOp::Mul ? 2 : 3;
    EV r = binaryOp(kinds[idx], lhs, rhs, s.range, c.opRange, ast::binaryOpSpelling(c.op));
    ir::Value *v = r.ok() ? asRegister(r, "the value") : nullptr;
    if (v)
      bind(c.target, v);
    else
      scopes.back()[c.target.name] = {nullptr, c.target.range, true, false};
    return;
  }
  case ast::StmtKind::Expr: {
    auto &e = static_cast<const ast::ExprStmt &>(s);
    checkExpr(*e.expr);
    return;
  }
  case ast::StmtKind::Yield:
    diags.report(DiagId::YieldOutside, s.range);
    return;
  }
}

EV KernelChecker::checkExpr(const ast::Expr &e) {
  using namespace ast;
  if (diags.shouldStop())
    return EV::invalid();
  switch (e.kind) {
  case ExprKind::Int:
    return {EV::IntLit, {}, static_cast<const IntLit &>(e).value, 0, e.range};
  case ExprKind::Float:
    return {EV::FloatLit, {}, 0, static_cast<const FloatLit &>(e).value, e.range};
  case ExprKind::Bool: {
    EV lit{EV::IntLit, {}, static_cast<const BoolLit &>(e).value ? 1 : 0, 0, e.range};
    return EV::of(materialize(lit, ScalarType::I1, e.range), e.range);
  }
  case ExprKind::Name:
    return checkName(static_cast<const NameRef &>(e));
  case ExprKind::Space:
  case ExprKind::DType:
    diags.report(DiagId::NotAValue, e.range,
                 {exprText(e), e.kind == ExprKind::Space ? "an address space" : "a type"});
    return EV::invalid();
  case ExprKind::Unary:
    return checkUnary(static_cast<const Unary &>(e));
  case ExprKind::Binary:
    return checkBinary(static_cast<const Binary &>(e));
  case ExprKind::Call:
    return checkCall(static_cast<const Call &>(e));
  case ExprKind::List:
  case ExprKind::Dict:
  case ExprKind::Lambda:
    diags.report(DiagId::NotAValue, e.range,
                 {exprText(e), e.kind == ExprKind::List   ? "a list"
                               : e.kind == ExprKind::Dict ? "a dict"
                                                          : "a function"});
    return EV::invalid();
  case ExprKind::RegisterCtor:
    return checkRegisterCtor(static_cast<const RegisterCtor &>(e));
  case ExprKind::If:
    return checkIf(static_cast<const IfExpr &>(e));
  case ExprKind::Iterate:
    return checkIterate(static_cast<const IterateExpr &>(e));
  }
  return EV::invalid();
}

EV KernelChecker::checkName(const ast::NameRef &n) {
  for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
    auto found = it->find(n.name);
    if (found != it->end()) {
      found->second.used = true;
      if (!found->second.value) // its definition failed and was reported
        return EV::invalid();
      return EV::of(found->second.value, n.range);
    }
  }
  auto p = params.find(n.name);
  if (p != params.end())
    return p->second ? EV::of(p->second, n.range) : EV::invalid();
  if (const SymbolInfo *s = S.findSymbol(n.name)) {
    S.resolveSymbol(S.symbolIndex(n.name));
    usedSymbols.insert(n.name);
    if (s->kind == SymbolKind::Float)
      return {EV::FloatLit, {}, 0, s->fvalue, n.range};
    if (s->kind == SymbolKind::Int) {
      if (auto c = facts.simplify(s->value).asInteger())
        return {EV::IntLit, {}, *c, 0, n.range};
      diags.report(DiagId::NotAValue, n.range,
                   {n.name, "a symbol without a compile-time value (use it through self_index "
                            "or apply_expr)"});
      return EV::invalid();
    }
    diags.report(DiagId::NotAValue, n.range,
                 {n.name, s->kind == SymbolKind::Space ? "an address space" : "a matrix kind"});
    return EV::invalid();
  }
  std::vector<std::string> candidates;
  for (const auto &scope : scopes)
    for (const auto &[name, b] : scope)
      candidates.push_back(name);
  for (const auto &[name, v] : params)
    candidates.push_back(name);
  for (const auto &s : S.symbols)
    candidates.push_back(s.name);
  diags.report(DiagId::UnknownName, n.range, {n.name, didYouMean(n.name, candidates)});
  return EV::invalid();
}

namespace {
// An integer literal fits an integer type of n bits when it is an n-bit number, signed or
// unsigned: -2^(n-1) .. 2^n - 1 (docs/language.md section 7; its n-bit pattern is the value, as the
// reference evaluator's wrapping gives it). Float types take any integer (rounded).
bool intLiteralFits(int64_t v, ScalarType t) {
  if (!isInteger(t) || bitWidth(t) >= 64)
    return true;
  unsigned n = bitWidth(t);
  return v >= -(int64_t(1) << (n - 1)) && v <= (int64_t(1) << n) - 1;
}

// A float literal converted to an integer type (only `cast` does that): truncated toward zero,
// saturated at the type's range, NaN as 0, as docs/language.md section 11 says of conversions.
int64_t floatToIntLiteral(double f, ScalarType t) {
  if (std::isnan(f))
    return 0;
  unsigned n = std::min(bitWidth(t), 64u);
  bool sg = isSigned(t) || t == ScalarType::Index || n == 64;
  double lo = sg ? -std::ldexp(1.0, int(n) - 1) : 0.0;
  double hi = sg ? std::ldexp(1.0, int(n) - 1) : std::ldexp(1.0, int(n));
  f = std::trunc(f);
  if (f <= lo)
    return n == 64 ? std::numeric_limits<int64_t>::min() : static_cast<int64_t>(lo);
  if (f >= hi) // the largest value is hi - 1
    return n == 64 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(hi) - 1;
  return static_cast<int64_t>(f);
}
} // namespace

bool KernelChecker::checkLiteralRange(const EV &lit, ScalarType t, SourceRange loc) {
  if (lit.kind == EV::FloatLit || intLiteralFits(lit.i, t))
    return true;
  unsigned n = bitWidth(t);
  diags.report(DiagId::LiteralOutOfRange, loc,
               {exprTextOf(lit), scalarTypeName(t),
                std::to_string(-(int64_t(1) << (n - 1))),
                std::to_string((int64_t(1) << n) - 1)});
  return false;
}

ir::Value *KernelChecker::materialize(const EV &lit, ScalarType t, SourceRange loc) {
  if (!checkLiteralRange(lit, t, loc))
    return nullptr;
  ir::Op *op = emit(OpKind::Constant, loc, {}, {ir::Type::reg({}, t)});
  op->dtype = t;
  if (lit.kind == EV::FloatLit) {
    op->fvalue = lit.f;
    op->ivalue = isFloat(t) ? 0 : floatToIntLiteral(lit.f, t);
  } else {
    op->ivalue = lit.i;
    op->fvalue = static_cast<double>(lit.i);
  }
  return op->results[0];
}

ir::Value *KernelChecker::asRegister(EV v, const std::string &what, ScalarType dflt) {
  if (!v.ok())
    return nullptr;
  if (v.isLiteral())
    return materialize(v, v.kind == EV::FloatLit ? dflt : (isFloat(dflt) ? ScalarType::I32 : dflt),
                       v.loc);
  if (v.values.size() != 1) {
    diags.report(DiagId::AssignCount, v.loc, {"1", std::to_string(v.values.size())});
    return nullptr;
  }
  ir::Value *r = v.values[0];
  if (!r->type.isRegister()) {
    diags.report(DiagId::ExpectedRegister, v.loc, {what, r->type.str()});
    return nullptr;
  }
  return r;
}

ir::Value *KernelChecker::broadcastTo(ir::Value *v, const ir::Shape &shape, SourceRange loc) {
  if (v->type.shape == shape)
    return v;
  ir::Op *op = emit(OpKind::Broadcast, loc, {v}, {ir::Type::reg(shape, v->type.dtype)});
  op->dims = shape;
  return op->results[0];
}

std::optional<ir::Shape> KernelChecker::unifyOperands(EV &a, EV &b, SourceRange opLoc,
                                                      const char *spelling, ir::Value *&va,
                                                      ir::Value *&vb) {
  // A literal takes the element type of the other operand.
  auto adopt = [&](EV &lit, ir::Value *other) -> ir::Value * {
    ScalarType t = other->type.dtype;
    if (lit.kind == EV::FloatLit && !isFloat(t)) {
      diags.report(DiagId::FloatLiteralForInt, lit.loc, {exprTextOf(lit), scalarTypeName(t)});
      return nullptr;
    }
    return materialize(lit, t, lit.loc);
  };
  // Two literals: the first takes its default type (f32 if either is a float, else i32).
  if (a.isLiteral() && b.isLiteral()) {
    bool isF = a.kind == EV::FloatLit || b.kind == EV::FloatLit;
    a = EV::of(materialize(a, isF ? ScalarType::F32 : ScalarType::I32, a.loc), a.loc);
  }
  if (!a.isLiteral()) {
    va = asRegister(a, std::string("the left operand of '") + spelling + "'");
    if (!va)
      return std::nullopt;
  }
  if (!b.isLiteral()) {
    vb = asRegister(b, std::string("the right operand of '") + spelling + "'");
    if (!vb)
      return std::nullopt;
  }
  if (a.isLiteral())
    va = adopt(a, vb);
  if (b.isLiteral())
    vb = adopt(b, va);
  if (!va || !vb)
    return std::nullopt;
  if (va->type.dtype != vb->type.dtype) {
    diags.report(DiagId::TypeMismatch, opLoc,
                 {scalarTypeName(va->type.dtype), scalarTypeName(vb->type.dtype)});
    return std::nullopt;
  }
  const ir::Shape &sa = va->type.shape, &sb = vb->type.shape;
  if (sa == sb)
    return sa;
  // The broadcast rule: one shape's dims include the other's; the larger shape wins. Two shapes
  // with the same dims in a different order are different types until permuted.
  if (sa.size() > sb.size() && ir::containsDims(sa, sb))
    return sa;
  if (sb.size() > sa.size() && ir::containsDims(sb, sa))
    return sb;
  diags.report(DiagId::ShapeMismatch, opLoc, {ir::shapeStr(sa), ir::shapeStr(sb)});
  return std::nullopt;
}

std::string exprTextOf(const EV &lit) {
  if (lit.kind == EV::FloatLit) {
    std::string s = std::to_string(lit.f);
    while (s.size() > 1 && s.back() == '0' && s[s.size() - 2] != '.')
      s.pop_back();
    return s;
  }
  return std::to_string(lit.i);
}

EV KernelChecker::checkUnary(const ast::Unary &u) {
  EV x = checkExpr(*u.operand);
  if (!x.ok())
    return x;
  if (x.isLiteral()) {
    if (u.op == ast::UnaryOp::Neg) {
      x.i = -x.i;
      x.f = -x.f;
    } else if (x.kind == EV::IntLit) {
      x.i = ~x.i;
    } else {
      diags.report(DiagId::IntOpOnFloat, u.range, {"~", "a float literal"});
      return EV::invalid();
    }
    x.loc = u.range;
    return x;
  }
  ir::Value *v = asRegister(x, u.op == ast::UnaryOp::Neg ? "the operand of '-'" : "the operand of '~'");
  if (!v)
    return EV::invalid();
  if (u.op == ast::UnaryOp::BitNot && isFloat(v->type.dtype)) {
    diags.report(DiagId::IntOpOnFloat, u.range, {"~", v->type.str()});
    return EV::invalid();
  }
  ir::Op *op = emit(OpKind::Unary, u.range, {v}, {v->type});
  op->unary = u.op == ast::UnaryOp::Neg ? ir::UnaryKind::Neg : ir::UnaryKind::BitNot;
  return EV::of(op->results[0], u.range);
}

static ir::BinaryKind toBinaryKind(ast::BinaryOp op) {
  return static_cast<ir::BinaryKind>(static_cast<int>(op));
}

EV KernelChecker::checkBinary(const ast::Binary &b) {
  EV l = checkExpr(*b.lhs);
  if (!l.ok())
    return l;
  EV r = checkExpr(*b.rhs);
  if (!r.ok())
    return r;
  return binaryOp(toBinaryKind(b.op), l, r, b.range, b.opRange, ast::binaryOpSpelling(b.op));
}

namespace {
bool isCompare(BinaryKind k) { return k >= BinaryKind::Eq && k <= BinaryKind::Ge; }
bool isBitwise(BinaryKind k) { return k >= BinaryKind::And; }

// Folds an operation on two literals; nullopt when it cannot (division by zero).
std::optional<EV> foldLiterals(BinaryKind k, const EV &a, const EV &b, SourceRange loc) {
  bool isF = a.kind == EV::FloatLit || b.kind == EV::FloatLit;
  double x = a.kind == EV::FloatLit ? a.f : static_cast<double>(a.i);
  double y = b.kind == EV::FloatLit ? b.f : static_cast<double>(b.i);
  EV out{isF ? EV::FloatLit : EV::IntLit, {}, 0, 0, loc};
  auto setI = [&](int64_t v) { out.i = v; out.f = static_cast<double>(v); };
  if (isF) {
    switch (k) {
    case BinaryKind::Add: out.f = x + y; return out;
    case BinaryKind::Sub: out.f = x - y; return out;
    case BinaryKind::Mul: out.f = x * y; return out;
    case BinaryKind::Div: out.f = x / y; return out;
    default: return std::nullopt;
    }
  }
  int64_t p = a.i, q = b.i;
  switch (k) {
  case BinaryKind::Add: setI(p + q); return out;
  case BinaryKind::Sub: setI(p - q); return out;
  case BinaryKind::Mul: setI(p * q); return out;
  case BinaryKind::Div:
    if (q == 0) return std::nullopt;
    setI(p / q);
    return out;
  case BinaryKind::FloorDiv:
  case BinaryKind::Mod: {
    if (q == 0) return std::nullopt;
    int64_t d = p / q;
    if ((p % q != 0) && ((p < 0) != (q < 0)))
      --d;
    setI(k == BinaryKind::FloorDiv ? d : p - d * q);
    return out;
  }
  case BinaryKind::And: setI(p & q); return out;
  case BinaryKind::Or: setI(p | q); return out;
  case BinaryKind::Xor: setI(p ^ q); return out;
  default: return std::nullopt;
  }
}
} // namespace

EV KernelChecker::binaryOp(BinaryKind k, EV lhs, EV rhs, SourceRange loc, SourceRange opLoc,
                           const char *spelling) {
  if (lhs.isLiteral() && rhs.isLiteral()) {
    if (auto folded = foldLiterals(k, lhs, rhs, loc))
      return *folded;
    if ((k == BinaryKind::Div || k == BinaryKind::FloorDiv || k == BinaryKind::Mod) &&
        rhs.kind == EV::IntLit && rhs.i == 0) {
      diags.report(DiagId::DivisionByZero, loc, {"this expression"});
      return EV::invalid();
    }
    // Comparisons and bitwise ops of literals: give the literals their default types.
  }
  ir::Value *a = nullptr, *b = nullptr;
  auto shape = unifyOperands(lhs, rhs, opLoc, spelling, a, b);
  if (!shape)
    return EV::invalid();
  ScalarType t = a->type.dtype;
  if (isBitwise(k) && isFloat(t)) {
    diags.report(DiagId::IntOpOnFloat, opLoc, {spelling, a->type.str()});
    return EV::invalid();
  }
  a = broadcastTo(a, *shape, loc);
  b = broadcastTo(b, *shape, loc);
  ScalarType rt = isCompare(k) ? ScalarType::I1 : t;
  ir::Op *op = emit(OpKind::Binary, loc, {a, b}, {ir::Type::reg(*shape, rt)});
  op->binary = k;
  return EV::of(op->results[0], loc);
}

EV KernelChecker::checkRegisterCtor(const ast::RegisterCtor &r) {
  auto type = checkType(r.type, "a Register type");
  if (!type)
    return EV::invalid();
  EV init = checkExpr(*r.init);
  if (!init.ok())
    return init;
  if (!init.isLiteral()) {
    diags.report(DiagId::ExpectedLiteral, r.init->range,
                 {"the initial value of a Register", "'" + exprText(*r.init) + "'"});
    return EV::invalid();
  }
  if (init.kind == EV::FloatLit && !isFloat(type->dtype)) {
    diags.report(DiagId::FloatLiteralForInt, r.init->range,
                 {exprTextOf(init), scalarTypeName(type->dtype)});
    return EV::invalid();
  }
  if (!checkLiteralRange(init, type->dtype, r.init->range))
    return EV::invalid();
  ir::Op *op = emit(OpKind::Constant, r.range, {}, {*type});
  op->dtype = type->dtype;
  op->fvalue = init.kind == EV::FloatLit ? init.f : static_cast<double>(init.i);
  op->ivalue = init.kind == EV::FloatLit ? 0 : init.i;
  return EV::of(op->results[0], r.range);
}

EV KernelChecker::checkIf(const ast::IfExpr &e) {
  std::optional<sym::Pred> pred;
  std::vector<ir::Value *> operands;
  std::set<std::string> locals;
  for (const auto &scope : scopes)
    for (const auto &[n, b] : scope)
      locals.insert(n);
  for (const auto &[n, v] : params)
    locals.insert(n);
  if (S.isSymbolic(*e.cond, locals)) {
    IndexContext ctx = indexContext();
    pred = S.toPred(*e.cond, ctx);
    if (!pred)
      return EV::invalid();
  } else {
    EV c = checkExpr(*e.cond);
    if (!c.ok())
      return c;
    ir::Value *v = c.isLiteral() ? nullptr : asRegister(c, "the condition");
    if (!v || v->type.dtype != ScalarType::I1 || !v->type.shape.empty()) {
      diags.report(DiagId::CondNotBool, e.cond->range,
                   {v ? v->type.str() : "'" + exprText(*e.cond) + "'"});
      return EV::invalid();
    }
    operands.push_back(v);
  }
  ir::Op *op = emit(OpKind::If, e.range, operands, {});
  op->pred = pred;
  // Checks one branch in its own region and scope; yielded literals take the type of the
  // other branch's value at the same position when known (f32 / i32 otherwise).
  auto checkBranch = [&](const ast::Block &b, const std::vector<ir::Type> *hint,
                         std::vector<ir::Value *> &out) -> std::optional<bool> {
    op->regions.push_back(std::make_unique<ir::Region>());
    regions.push_back(op->regions.back().get());
    scopes.emplace_back();
    std::vector<EV> ys;
    bool sawYield = checkBlock(b, &ys, "if");
    bool ok = true;
    for (size_t i = 0; i < ys.size() && ok; ++i) {
      ScalarType t = ys[i].kind == EV::FloatLit ? ScalarType::F32 : ScalarType::I32;
      if (hint && i < hint->size())
        t = (*hint)[i].dtype;
      ir::Value *v = ys[i].isLiteral() ? materialize(ys[i], t, ys[i].loc)
                                       : asRegister(ys[i], "a yielded value");
      ok = v != nullptr;
      out.push_back(v);
    }
    if (ok && sawYield)
      emit(OpKind::Yield, b.stmts.back()->range, out, {});
    popScope();
    regions.pop_back();
    if (!ok)
      return std::nullopt;
    return sawYield;
  };
  std::vector<ir::Value *> thenVals, elseVals;
  auto thenY = checkBranch(e.thenBlock, nullptr, thenVals);
  if (!thenY)
    return EV::invalid();
  std::vector<ir::Type> thenTypes;
  for (ir::Value *v : thenVals)
    thenTypes.push_back(v->type);
  std::optional<bool> elseY = false;
  if (e.elseBlock)
    elseY = checkBranch(*e.elseBlock, &thenTypes, elseVals);
  if (!elseY)
    return EV::invalid();
  if (!*thenY && !*elseY)
    return {EV::Values, {}, 0, 0, e.range};
  if (!e.elseBlock || *thenY != *elseY) {
    diags.report(DiagId::IfNeedsElse, e.range);
    return EV::invalid();
  }
  if (thenVals.size() != elseVals.size()) {
    diags.report(DiagId::YieldCount, e.elseBlock->range,
                 {"the else branch", std::to_string(elseVals.size()),
                  std::to_string(thenVals.size())});
    return EV::invalid();
  }
  for (size_t i = 0; i < thenVals.size(); ++i) {
    if (!(thenVals[i]->type == elseVals[i]->type)) {
      diags.report(DiagId::IfBranchTypes, e.range,
                   {thenVals[i]->type.str(), elseVals[i]->type.str()});
      return EV::invalid();
    }
    ir::Value *v = kernel->newValue(thenVals[i]->type);
    v->def = op;
    op->results.push_back(v);
  }
  return {EV::Values, op->results, 0, 0, e.range};
}

EV KernelChecker::checkIterate(const ast::IterateExpr &e) {
  auto dim = dimArg(*e.dim, "the iterated dim");
  if (!dim)
    return EV::invalid();
  if (!kernel->tilingFor(*dim)) {
    diags.report(DiagId::IterateNoTiling, e.dim->range, {dim->str()});
    return EV::invalid();
  }
  for (const auto &d : iterateDims)
    if (d == *dim) {
      diags.report(DiagId::NestedIterateSameDim, e.dim->range, {dim->str()});
      return EV::invalid();
    }
  std::vector<ir::Value *> inits;
  for (const auto &c : e.carried) {
    EV v = checkExpr(*c.init);
    ir::Value *r = asRegister(v, "the initial value of '" + c.name.name + "'");
    if (!r)
      return EV::invalid();
    if (ir::hasDim(r->type.shape, *dim)) {
      diags.report(DiagId::CarriedHasTiledDim, c.name.range,
                   {c.name.name, dim->str(), ir::shapeStr(r->type.shape)});
      return EV::invalid();
    }
    inits.push_back(r);
  }
  ir::Op *op = emit(OpKind::Iterate, e.range, inits, {});
  op->dims = {*dim};
  op->regions.push_back(std::make_unique<ir::Region>());
  ir::Region *body = op->regions.back().get();
  scopes.emplace_back();
  for (size_t i = 0; i < inits.size(); ++i) {
    ir::Value *arg = kernel->newValue(inits[i]->type, e.carried[i].name.name);
    arg->owner = body;
    body->args.push_back(arg);
    scopes.back()[e.carried[i].name.name] = {arg, e.carried[i].name.range};
  }
  regions.push_back(body);
  iterateDims.push_back(*dim);
  std::vector<EV> yields;
  bool sawYield = checkBlock(e.body, &yields, "iterate");
  iterateDims.pop_back();
  regions.pop_back();
  popScope();
  if (diags.shouldStop())
    return EV::invalid();
  if (!sawYield && !inits.empty()) {
    diags.report(DiagId::MissingYield, e.body.range, {"the body of an iterate that carries values"});
    return EV::invalid();
  }
  if (sawYield && yields.size() != inits.size()) {
    diags.report(DiagId::YieldCount, e.body.stmts.back()->range,
                 {"this iterate", std::to_string(yields.size()), std::to_string(inits.size())});
    return EV::invalid();
  }
  std::vector<ir::Value *> yielded;
  for (size_t i = 0; i < yields.size(); ++i) {
    EV &y = yields[i];
    if (!y.ok())
      return EV::invalid();
    ir::Value *v = y.isLiteral() ? materialize(y, inits[i]->type.dtype, y.loc)
                                 : asRegister(y, "a yielded value");
    if (!v)
      return EV::invalid();
    if (!(v->type == inits[i]->type)) {
      diags.report(DiagId::YieldType, y.loc,
                   {std::to_string(i + 1), v->type.str(), e.carried[i].name.name,
                    inits[i]->type.str()});
      return EV::invalid();
    }
    yielded.push_back(v);
  }
  if (sawYield) {
    regions.push_back(body);
    emit(OpKind::Yield, e.body.stmts.back()->range, yielded, {});
    regions.pop_back();
  }
  for (ir::Value *init : inits) {
    ir::Value *r = kernel->newValue(init->type);
    r->def = op;
    op->results.push_back(r);
  }
  return {EV::Values, op->results, 0, 0, e.range};
}

} // namespace wave::sema_detail
