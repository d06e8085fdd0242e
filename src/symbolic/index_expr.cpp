// IndexExpr and Pred (see index_expr.h). GiNaC may throw (division by zero in a substitution,
// for instance); no exception leaves this file: failures give the input back or nullopt.
#include "symbolic/index_expr.h"

#include "symbolic/ginac_functions.h"
#include "symbolic/printer.h"

#include <sstream>

namespace wave::sym {

using GiNaC::ex;
using GiNaC::ex_to;
using GiNaC::is_a;
using GiNaC::numeric;
using detail::Fn;
using detail::fnKind;

namespace {

// Interned symbols. Function-local so that it is ready whenever it is first used, static
// initialization included. Not thread-safe, like GiNaC itself.
std::map<std::string, ex> &symbolTable() {
  static std::map<std::string, ex> table;
  return table;
}

void collectNames(const ex &e, std::set<std::string> &out) {
  if (is_a<GiNaC::symbol>(e)) {
    out.insert(ex_to<GiNaC::symbol>(e).get_name());
    return;
  }
  for (size_t i = 0, n = e.nops(); i < n; ++i)
    collectNames(e.op(i), out);
}

bool hasRational(const ex &e) {
  if (is_a<numeric>(e))
    return !ex_to<numeric>(e).is_integer();
  if (is_a<GiNaC::power>(e) && is_a<numeric>(e.op(1)) && ex_to<numeric>(e.op(1)).is_negative())
    return true;
  if (fnKind(e) == Fn::ExactDiv)
    return true;
  for (size_t i = 0, n = e.nops(); i < n; ++i)
    if (hasRational(e.op(i)))
      return true;
  return false;
}

// Exact evaluation in GiNaC numerics (arbitrary precision, so no intermediate overflow).
// Sums and products may pass through fractions (K/2 + M/2); function arguments must be integers.
std::optional<numeric> evalNumeric(const ex &e, const std::map<std::string, int64_t> &values);

std::optional<numeric> evalFunction(const ex &e, const std::map<std::string, int64_t> &values) {
  Fn kind = fnKind(e);
  if (kind == Fn::None)
    return std::nullopt;
  auto a = evalNumeric(e.op(0), values);
  auto b = evalNumeric(e.op(1), values);
  if (!a || !b || !a->is_integer() || !b->is_integer())
    return std::nullopt;
  switch (kind) {
  case Fn::FloorDiv:
    return b->is_zero() ? std::nullopt : std::optional<numeric>(detail::floorDivNum(*a, *b));
  case Fn::CeilDiv:
    return b->is_zero() ? std::nullopt : std::optional<numeric>(detail::ceilDivNum(*a, *b));
  case Fn::Mod:
    return b->is_zero() ? std::nullopt : std::optional<numeric>(GiNaC::mod(*a, *b));
  case Fn::Min:
    return *a < *b ? *a : *b;
  case Fn::Max:
    return *a < *b ? *b : *a;
  case Fn::ExactDiv:
    return b->is_zero() ? std::nullopt : std::optional<numeric>(*a / *b);
  case Fn::None:
    break;
  }
  return std::nullopt;
}

std::optional<numeric> evalNumeric(const ex &e, const std::map<std::string, int64_t> &values) {
  if (is_a<numeric>(e))
    return ex_to<numeric>(e);
  if (is_a<GiNaC::symbol>(e)) {
    auto it = values.find(ex_to<GiNaC::symbol>(e).get_name());
    if (it == values.end())
      return std::nullopt;
    return numeric(long(it->second));
  }
  if (is_a<GiNaC::add>(e) || is_a<GiNaC::mul>(e)) {
    bool isAdd = is_a<GiNaC::add>(e);
    numeric acc = isAdd ? 0 : 1;
    for (size_t i = 0, n = e.nops(); i < n; ++i) {
      auto v = evalNumeric(e.op(i), values);
      if (!v)
        return std::nullopt;
      acc = isAdd ? acc + *v : acc * *v;
    }
    return acc;
  }
  if (is_a<GiNaC::power>(e)) {
    auto base = evalNumeric(e.op(0), values);
    if (!base || !is_a<numeric>(e.op(1)) || !ex_to<numeric>(e.op(1)).is_integer())
      return std::nullopt;
    const numeric &exponent = ex_to<numeric>(e.op(1));
    if (base->is_zero() && exponent.is_negative())
      return std::nullopt;
    return base->power(exponent);
  }
  return evalFunction(e, values);
}

template <typename F> IndexExpr guarded(F &&f, const IndexExpr &fallback) {
  try {
    return IndexExpr(f());
  } catch (...) {
    return fallback;
  }
}

} // namespace

IndexExpr::IndexExpr(int64_t v) : e_(numeric(long(v))) {}

IndexExpr IndexExpr::symbol(const std::string &name) {
  auto &table = symbolTable();
  auto it = table.find(name);
  if (it == table.end())
    it = table.emplace(name, GiNaC::symbol(name)).first;
  return IndexExpr(it->second);
}

IndexExpr IndexExpr::operator+(const IndexExpr &o) const {
  return guarded([&] { return e_ + o.e_; }, *this);
}
IndexExpr IndexExpr::operator-(const IndexExpr &o) const {
  return guarded([&] { return e_ - o.e_; }, *this);
}
IndexExpr IndexExpr::operator*(const IndexExpr &o) const {
  return guarded([&] { return e_ * o.e_; }, *this);
}
IndexExpr IndexExpr::operator-() const {
  return guarded([&] { return -e_; }, *this);
}

std::optional<int64_t> IndexExpr::asInteger() const {
  if (!is_a<numeric>(e_))
    return std::nullopt;
  return detail::toInt64(ex_to<numeric>(e_));
}

std::optional<std::string> IndexExpr::asSymbol() const {
  if (!is_a<GiNaC::symbol>(e_))
    return std::nullopt;
  return ex_to<GiNaC::symbol>(e_).get_name();
}

bool IndexExpr::hasRationalCoefficient() const { return hasRational(e_); }

std::set<std::string> IndexExpr::freeSymbols() const {
  std::set<std::string> names;
  collectNames(e_, names);
  return names;
}

bool IndexExpr::dependsOn(const std::string &name) const {
  auto &table = symbolTable();
  auto it = table.find(name);
  return it != table.end() && e_.has(it->second);
}

IndexExpr IndexExpr::subs(const std::map<std::string, IndexExpr> &bindings) const {
  GiNaC::exmap map;
  for (const auto &[name, value] : bindings)
    map[symbol(name).ex()] = value.ex();
  return guarded([&] { return e_.subs(map, GiNaC::subs_options::no_pattern); }, *this);
}

std::optional<int64_t> IndexExpr::evaluate(const std::map<std::string, int64_t> &values) const {
  try {
    auto v = evalNumeric(e_, values);
    if (!v || !v->is_integer())
      return std::nullopt;
    return detail::toInt64(*v);
  } catch (...) {
    return std::nullopt;
  }
}

bool IndexExpr::equals(const IndexExpr &o) const {
  try {
    return (e_ - o.e_).expand(GiNaC::expand_options::expand_function_args).is_zero();
  } catch (...) {
    return false;
  }
}

std::string IndexExpr::str() const {
  try {
    return detail::printExpr(e_);
  } catch (...) {
    std::ostringstream os;
    os << e_;
    return os.str();
  }
}

IndexExpr floorDiv(const IndexExpr &a, const IndexExpr &b) {
  return guarded([&] { return detail::makeFloorDiv(a.ex(), b.ex()); }, a);
}
IndexExpr ceilDiv(const IndexExpr &a, const IndexExpr &b) {
  return guarded([&] { return detail::makeCeilDiv(a.ex(), b.ex()); }, a);
}
IndexExpr mod(const IndexExpr &a, const IndexExpr &b) {
  return guarded([&] { return detail::makeMod(a.ex(), b.ex()); }, a);
}
IndexExpr min(const IndexExpr &a, const IndexExpr &b) {
  return guarded([&] { return detail::makeMin(a.ex(), b.ex()); }, a);
}
IndexExpr max(const IndexExpr &a, const IndexExpr &b) {
  return guarded([&] { return detail::makeMax(a.ex(), b.ex()); }, a);
}

IndexExpr exactDiv(const IndexExpr &a, const IndexExpr &b) {
  return guarded([&] { return detail::makeExactDiv(a.ex(), b.ex()); }, a);
}

// ---- Pred ---------------------------------------------------------------------------------

Pred Pred::cmp(CmpOp op, IndexExpr l, IndexExpr r) {
  Pred p;
  p.kind = Cmp;
  p.op = op;
  p.lhs = std::move(l);
  p.rhs = std::move(r);
  return p;
}

// And/Or of two predicates; nested ones of the same kind are flattened, constants folded.
static Pred combine(Pred::Kind kind, Pred a, Pred b) {
  bool absorbing = kind == Pred::Or; // true absorbs an Or, false absorbs an And
  for (const Pred *p : {&a, &b})
    if (p->kind == Pred::Const && p->value == absorbing)
      return Pred::constant(absorbing);
  if (a.kind == Pred::Const)
    return b;
  if (b.kind == Pred::Const)
    return a;
  Pred p;
  p.kind = kind;
  for (Pred *part : {&a, &b}) {
    if (part->kind == kind)
      for (Pred &c : part->children)
        p.children.push_back(std::move(c));
    else
      p.children.push_back(std::move(*part));
  }
  return p;
}

Pred Pred::both(Pred a, Pred b) { return combine(And, std::move(a), std::move(b)); }
Pred Pred::either(Pred a, Pred b) { return combine(Or, std::move(a), std::move(b)); }

Pred Pred::negate(Pred a) {
  if (a.kind == Const)
    return constant(!a.value);
  if (a.kind == Not)
    return std::move(a.children.front());
  Pred p;
  p.kind = Not;
  p.children.push_back(std::move(a));
  return p;
}

Pred Pred::constant(bool v) {
  Pred p;
  p.kind = Const;
  p.value = v;
  return p;
}

Pred Pred::subs(const std::map<std::string, IndexExpr> &bindings) const {
  Pred p = *this;
  p.lhs = lhs.subs(bindings);
  p.rhs = rhs.subs(bindings);
  for (Pred &c : p.children)
    c = c.subs(bindings);
  return p;
}

static std::optional<bool> compare(Pred::CmpOp op, int64_t l, int64_t r) {
  switch (op) {
  case Pred::Eq:
    return l == r;
  case Pred::Ne:
    return l != r;
  case Pred::Lt:
    return l < r;
  case Pred::Le:
    return l <= r;
  case Pred::Gt:
    return l > r;
  case Pred::Ge:
    return l >= r;
  }
  return std::nullopt;
}

std::optional<bool> Pred::evaluate(const std::map<std::string, int64_t> &values) const {
  switch (kind) {
  case Const:
    return value;
  case Cmp: {
    auto l = lhs.evaluate(values), r = rhs.evaluate(values);
    if (!l || !r)
      return std::nullopt;
    return compare(op, *l, *r);
  }
  case Not: {
    auto v = children.front().evaluate(values);
    return v ? std::optional<bool>(!*v) : std::nullopt;
  }
  case And:
  case Or: {
    // Three-valued: one decisive child decides even when another is unknown.
    bool decisive = kind == Or;
    bool unknown = false;
    for (const Pred &c : children) {
      auto v = c.evaluate(values);
      if (!v)
        unknown = true;
      else if (*v == decisive)
        return decisive;
    }
    return unknown ? std::nullopt : std::optional<bool>(!decisive);
  }
  }
  return std::nullopt;
}

std::set<std::string> Pred::freeSymbols() const {
  std::set<std::string> names = lhs.freeSymbols();
  names.merge(rhs.freeSymbols());
  for (const Pred &c : children)
    names.merge(c.freeSymbols());
  return names;
}

static const char *opText(Pred::CmpOp op) {
  switch (op) {
  case Pred::Eq:
    return "==";
  case Pred::Ne:
    return "!=";
  case Pred::Lt:
    return "<";
  case Pred::Le:
    return "<=";
  case Pred::Gt:
    return ">";
  case Pred::Ge:
    return ">=";
  }
  return "?";
}

// Comparisons bind tighter than `&`, which binds tighter than `|`.
std::string Pred::str() const {
  switch (kind) {
  case Const:
    return value ? "true" : "false";
  case Cmp:
    return lhs.str() + " " + opText(op) + " " + rhs.str();
  case Not:
    return "!(" + children.front().str() + ")";
  case And:
  case Or: {
    std::string out;
    for (const Pred &c : children) {
      if (!out.empty())
        out += kind == And ? " & " : " | ";
      bool paren = kind == And && c.kind == Or;
      out += paren ? "(" + c.str() + ")" : c.str();
    }
    return out;
  }
  }
  return "?";
}

} // namespace wave::sym
