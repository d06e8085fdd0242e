// Facts: symbol ranges, divisibility, assumptions, and the proofs built on them (see facts.h).
// The rewriting itself is in simplifier.cpp, the interval arithmetic in range_analysis.cpp.
#include "symbolic/facts.h"

#include "symbolic/ginac_functions.h"
#include "symbolic/range_analysis.h"
#include "symbolic/simplifier.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <tuple>

namespace wave::sym {

using GiNaC::ex;
using GiNaC::ex_to;
using GiNaC::is_a;
using GiNaC::numeric;
using detail::Int128;
using detail::Interval;

namespace {

// A comparison of integers as `diff >= 0`, `diff == 0` or `diff != 0`.
struct Normalized {
  enum Kind { NonNegative, Zero, NonZero } kind;
  ex diff;
};

Normalized normalize(const Pred &p) {
  const ex &l = p.lhs.ex(), &r = p.rhs.ex();
  switch (p.op) {
  case Pred::Eq:
    return {Normalized::Zero, (l - r).expand()};
  case Pred::Ne:
    return {Normalized::NonZero, (l - r).expand()};
  case Pred::Ge:
    return {Normalized::NonNegative, (l - r).expand()};
  case Pred::Gt:
    return {Normalized::NonNegative, (l - r - 1).expand()};
  case Pred::Le:
    return {Normalized::NonNegative, (r - l).expand()};
  case Pred::Lt:
    return {Normalized::NonNegative, (r - l - 1).expand()};
  }
  return {Normalized::NonZero, 0};
}

// What each recorded comparison says in the form `f >= 0`.
std::vector<ex> nonNegativeForms(const Pred &p) {
  if (p.kind != Pred::Cmp)
    return {};
  Normalized n = normalize(p);
  switch (n.kind) {
  case Normalized::NonNegative:
    return {n.diff};
  case Normalized::Zero:
    return {n.diff, -n.diff};
  case Normalized::NonZero:
    break;
  }
  return {};
}

Pred::CmpOp inverse(Pred::CmpOp op) {
  switch (op) {
  case Pred::Eq:
    return Pred::Ne;
  case Pred::Ne:
    return Pred::Eq;
  case Pred::Lt:
    return Pred::Ge;
  case Pred::Le:
    return Pred::Gt;
  case Pred::Gt:
    return Pred::Le;
  case Pred::Ge:
    return Pred::Lt;
  }
  return op;
}

struct Bound {
  std::string name;
  int64_t lo, hi;
};

// Bounds on single symbols implied by `d >= 0`: for each symbol S that occurs only in a term
// a*S, a*S >= -rest gives S >= ceil(-hi(rest) / a) (a > 0) or S <= floor(hi(rest) / -a).
std::vector<Bound> boundsFrom(const ex &d, const Facts &facts) {
  std::vector<Bound> bounds;
  detail::RangeAnalysis ranges(facts);
  detail::forEachTerm(d, [&](const ex &t) {
    detail::Term term = detail::splitTerm(t);
    if (!is_a<GiNaC::symbol>(term.rest))
      return;
    std::optional<int64_t> a = detail::toInt64(term.coeff);
    if (!a || *a == 0 || *a == Range::kNegInf)
      return;
    ex rest = (d - t).expand();
    if (rest.has(term.rest))
      return;
    Int128 hi = ranges.of(rest).hi;
    if (hi >= Interval::kPosInf || hi <= Interval::kNegInf)
      return;
    std::string name = ex_to<GiNaC::symbol>(term.rest).get_name();
    if (*a > 0)
      bounds.push_back({name, int64_t(-detail::floorDivExt(hi, *a)), Range::kInf});
    else
      bounds.push_back({name, Range::kNegInf, int64_t(detail::floorDivExt(hi, -*a))});
  });
  return bounds;
}

// `x % c == 0` with x = a*S says S is a multiple of c / gcd(a, c).
std::optional<std::pair<std::string, int64_t>> divisibilityOf(const ex &m, const ex &zero) {
  if (!zero.is_zero() || detail::fnKind(m) != detail::Fn::Mod)
    return std::nullopt;
  auto c = detail::positiveInteger(m.op(1));
  detail::Term term = detail::splitTerm(m.op(0));
  if (!c || !is_a<GiNaC::symbol>(term.rest) || !term.coeff.is_integer() ||
      term.coeff.is_zero())
    return std::nullopt;
  auto factor = detail::toInt64(*c / GiNaC::gcd(abs(term.coeff), *c));
  if (!factor)
    return std::nullopt;
  return std::make_pair(ex_to<GiNaC::symbol>(term.rest).get_name(), *factor);
}

// A fact about other symbols than `goal` cannot help to decide it (ranges already did).
bool sharesSymbol(const IndexExpr &goal, const ex &fact) {
  std::set<std::string> names = goal.freeSymbols();
  for (const std::string &name : IndexExpr(fact).freeSymbols())
    if (names.count(name))
      return true;
  return false;
}

Int128 roundUp(Int128 v, Int128 d) { return -detail::floorDivExt(-v, d) * d; }
Int128 roundDown(Int128 v, Int128 d) { return detail::floorDivExt(v, d) * d; }

} // namespace

void Facts::setRange(const std::string &name, int64_t lo, int64_t hi) {
  auto [it, inserted] = ranges_.try_emplace(name, Range{lo, hi});
  if (inserted)
    return;
  it->second.lo = std::max(it->second.lo, lo);
  it->second.hi = std::min(it->second.hi, hi);
}

void Facts::addDivisibility(const std::string &name, int64_t factor) {
  if (factor <= 1)
    return;
  auto [it, inserted] = divisors_.try_emplace(name, factor);
  if (!inserted)
    it->second = std::lcm(it->second, factor);
}

Range Facts::rangeOfSymbol(const std::string &name) const {
  Range r{0, Range::kInf};
  if (auto it = ranges_.find(name); it != ranges_.end())
    r = it->second;
  auto d = divisors_.find(name);
  if (d == divisors_.end())
    return r;
  // A multiple of d lies between the multiples of d nearest inside the range.
  if (r.boundedBelow()) {
    Int128 lo = roundUp(r.lo, d->second);
    if (lo <= Range::kInf)
      r.lo = int64_t(lo);
  }
  if (r.boundedAbove()) {
    Int128 hi = roundDown(r.hi, d->second);
    if (hi >= Range::kNegInf)
      r.hi = int64_t(hi);
  }
  return r;
}

std::optional<int64_t> Facts::divisorOf(const std::string &name) const {
  auto it = divisors_.find(name);
  if (it == divisors_.end())
    return std::nullopt;
  return it->second;
}

bool Facts::assume(const Pred &p) {
  try {
    if (prove(p) == std::optional<bool>(false))
      return false;
    if (!record(p))
      return false;
    return tighten();
  } catch (...) {
    return true;
  }
}

bool Facts::record(const Pred &p) {
  switch (p.kind) {
  case Pred::Const:
    return p.value;
  case Pred::And:
    for (const Pred &c : p.children)
      if (!record(c))
        return false;
    return true;
  case Pred::Or:
    assumed_.push_back(p);
    return true;
  case Pred::Not: {
    const Pred &c = p.children.front();
    switch (c.kind) {
    case Pred::Cmp:
      return record(Pred::cmp(inverse(c.op), c.lhs, c.rhs));
    case Pred::Not:
      return record(c.children.front());
    case Pred::Const:
      return !c.value;
    case Pred::Or: // !(a | b) == !a & !b
      for (const Pred &cc : c.children)
        if (!record(Pred::negate(cc)))
          return false;
      return true;
    case Pred::And:
      assumed_.push_back(p);
      return true;
    }
    return true;
  }
  case Pred::Cmp:
    if (p.op == Pred::Eq) {
      auto div = divisibilityOf(p.lhs.ex(), p.rhs.ex());
      if (!div)
        div = divisibilityOf(p.rhs.ex(), p.lhs.ex());
      if (div)
        addDivisibility(div->first, div->second);
    }
    assumed_.push_back(p);
    return true;
  }
  return true;
}

bool Facts::narrow(const std::string &name, int64_t lo, int64_t hi) {
  Range cur = rangeOfSymbol(name);
  Range next{std::max(cur.lo, lo), std::min(cur.hi, hi)};
  if (next.lo == cur.lo && next.hi == cur.hi)
    return false;
  ranges_[name] = next;
  return true;
}

// Derives symbol bounds from the recorded comparisons until they settle (a bound can feed
// another: K > 4*B and B >= 32). Returns false when a range became empty.
bool Facts::tighten() {
  for (int round = 0; round < 4; ++round) {
    bool changed = false;
    for (size_t i = 0; i < assumed_.size(); ++i)
      for (const ex &f : nonNegativeForms(assumed_[i]))
        for (const Bound &b : boundsFrom(f, *this))
          changed |= narrow(b.name, b.lo, b.hi);
    if (!changed)
      break;
  }
  for (const auto &[name, r] : ranges_) {
    Range cur = rangeOfSymbol(name);
    if (cur.lo > cur.hi)
      return false;
  }
  return true;
}

Range Facts::rangeOf(const IndexExpr &e) const {
  try {
    return detail::RangeAnalysis(*this).of(e.ex()).toRange();
  } catch (...) {
    return Range{};
  }
}

IndexExpr Facts::simplify(const IndexExpr &e) const {
  try {
    detail::Simplifier simplifier(*this);
    return IndexExpr(simplifier.run(e.ex()));
  } catch (...) {
    return e;
  }
}

std::optional<bool> Facts::prove(const Pred &p) const {
  try {
    switch (p.kind) {
    case Pred::Const:
      return p.value;
    case Pred::Not: {
      auto v = prove(p.children.front());
      return v ? std::optional<bool>(!*v) : std::nullopt;
    }
    case Pred::And:
    case Pred::Or: {
      bool decisive = p.kind == Pred::Or;
      bool unknown = false;
      for (const Pred &c : p.children) {
        auto v = prove(c);
        if (!v)
          unknown = true;
        else if (*v == decisive)
          return decisive;
      }
      return unknown ? std::nullopt : std::optional<bool>(!decisive);
    }
    case Pred::Cmp: {
      Normalized n = normalize(p);
      if (n.kind == Normalized::NonNegative)
        return proveNonNegative(IndexExpr(n.diff));
      auto zero = proveZero(IndexExpr(n.diff));
      if (n.kind == Normalized::Zero || !zero)
        return zero;
      return !*zero;
    }
    }
  } catch (...) {
  }
  return std::nullopt;
}

// d >= 0 from ranges alone, or from one recorded fact f >= 0 with d - f >= 0.
std::optional<bool> Facts::proveNonNegative(const IndexExpr &d) const {
  IndexExpr s = simplify(d);
  Range r = rangeOf(s);
  if (r.lo >= 0)
    return true;
  if (r.hi < 0)
    return false;
  for (const Pred &fact : assumed_) {
    for (const ex &f : nonNegativeForms(fact)) {
      if (!sharesSymbol(s, f))
        continue;
      IndexExpr fe(f);
      if (rangeOf(simplify(s - fe)).lo >= 0)
        return true;
      if (rangeOf(simplify(-s - 1 - fe)).lo >= 0) // d <= -1 - f <= -1
        return false;
    }
  }
  return std::nullopt;
}

std::optional<bool> Facts::proveZero(const IndexExpr &d) const {
  IndexExpr s = simplify(d);
  if (s.ex().is_zero())
    return true;
  Range r = rangeOf(s);
  if (r.lo > 0 || r.hi < 0)
    return false;
  if (r.lo == 0 && r.hi == 0)
    return true;
  for (const Pred &fact : assumed_) {
    if (fact.kind != Pred::Cmp || (fact.op != Pred::Eq && fact.op != Pred::Ne))
      continue;
    IndexExpr f(normalize(fact).diff);
    if (!sharesSymbol(s, f.ex()))
      continue;
    if (simplify(s - f).ex().is_zero() || simplify(s + f).ex().is_zero())
      return fact.op == Pred::Eq;
  }
  if (proveNonNegative(s - 1) == std::optional<bool>(true) ||
      proveNonNegative(-s - 1) == std::optional<bool>(true))
    return false;
  return std::nullopt;
}

bool Facts::provesExact(const IndexExpr &a, const IndexExpr &b) const {
  try {
    IndexExpr divisor = simplify(b);
    if (auto c = divisor.asInteger()) {
      if (*c == 0 || *c == Range::kNegInf)
        return false;
      return simplify(mod(a, IndexExpr(std::abs(*c)))).ex().is_zero();
    }
    if (is_a<GiNaC::symbol>(divisor.ex()) || is_a<GiNaC::mul>(divisor.ex()) ||
        is_a<GiNaC::power>(divisor.ex())) {
      ex q = (a.ex() * GiNaC::pow(divisor.ex(), -1)).expand();
      if (detail::isIntegerValued(q))
        return true;
    }
    return simplify(mod(a, divisor)).ex().is_zero();
  } catch (...) {
    return false;
  }
}

bool Facts::provesEqual(const IndexExpr &a, const IndexExpr &b) const {
  try {
    IndexExpr d = simplify(a - b);
    if (d.ex().is_zero())
      return true;
    Range r = rangeOf(d);
    return r.lo == 0 && r.hi == 0;
  } catch (...) {
    return false;
  }
}

} // namespace wave::sym
