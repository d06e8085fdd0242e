// Range-aware rewriting of index expressions (see simplifier.h).
#include "symbolic/simplifier.h"

#include "symbolic/ginac_functions.h"

#include <functional>
#include <set>
#include <tuple>

namespace wave::sym::detail {

using GiNaC::ex;
using GiNaC::ex_to;
using GiNaC::is_a;
using GiNaC::numeric;

namespace {

bool isInf(Int128 v) { return v >= Interval::kPosInf || v <= Interval::kNegInf; }

// a = c*quotient + remainder.
struct DivSplit {
  ex quotient;
  ex remainder;
};

// Moves the multiples of c out of `a` (expanded). Terms whose integer coefficient is a multiple
// of c go to the quotient whole; a constant is split as well, to a remainder in [0, c) when
// `nonNegConstant` (mod) and toward zero otherwise (floordiv and ceildiv keep `t - 1` readable).
// With `reduceCoefficients` (mod), 65*x also leaves x behind: only the remainder matters there.
DivSplit splitByDivisor(const ex &a, const numeric &c, bool nonNegConstant,
                        bool reduceCoefficients) {
  GiNaC::exvector quotient, remainder;
  forEachTerm(a, [&](const ex &t) {
    Term term = splitTerm(t);
    if (!term.coeff.is_integer() || !isIntegerValued(term.rest)) {
      remainder.push_back(t);
      return;
    }
    bool constant = is_a<numeric>(term.rest);
    numeric q = (constant && nonNegConstant) ? floorDivNum(term.coeff, c)
                                             : GiNaC::iquo(term.coeff, c);
    numeric r = term.coeff - q * c;
    if (!constant && !r.is_zero() && !reduceCoefficients) {
      remainder.push_back(t);
      return;
    }
    if (!q.is_zero())
      quotient.push_back(q * term.rest);
    if (!r.is_zero())
      remainder.push_back(r * term.rest);
  });
  return {GiNaC::add(quotient), GiNaC::add(remainder)};
}

// gcd of the integer coefficients of `e`, or 1 when a term is not an integer multiple of an
// integer-valued term.
numeric integerContent(const ex &e) {
  numeric g = 0;
  bool ok = true;
  forEachTerm(e, [&](const ex &t) {
    Term term = splitTerm(t);
    if (!term.coeff.is_integer() || !isIntegerValued(term.rest))
      ok = false;
    else
      g = GiNaC::gcd(g, term.coeff);
  });
  return (ok && !g.is_zero()) ? g : numeric(1);
}

// lcm of the coefficient denominators of `e` when every term is rational * integer-valued.
numeric denominatorLcm(const ex &e) {
  numeric l = 1;
  bool ok = true;
  forEachTerm(e, [&](const ex &t) {
    Term term = splitTerm(t);
    if (!term.coeff.is_rational() || !isIntegerValued(term.rest))
      ok = false;
    else
      l = GiNaC::lcm(l, term.coeff.denom());
  });
  return ok ? l : numeric(1);
}

// a / b as an integer polynomial when b is a monomial that divides every term of a.
std::optional<ex> exactQuotient(const ex &a, const ex &b) {
  if (is_a<GiNaC::add>(b) || fnKind(b) != Fn::None || b.is_zero())
    return std::nullopt;
  ex q = (a * GiNaC::pow(b, -1)).expand();
  if (!isIntegerValued(q))
    return std::nullopt;
  return q;
}

// How big an expression is, for deciding whether a rewrite helped: functions count first, and
// ceildiv is a little worse than floordiv (it costs more to compute).
struct Cost {
  int functions = 0, ceilDivs = 0, nodes = 0;
  bool operator<(const Cost &o) const {
    return std::tie(functions, ceilDivs, nodes) < std::tie(o.functions, o.ceilDivs, o.nodes);
  }
};

void addCost(const ex &e, Cost &c) {
  Fn kind = fnKind(e);
  c.functions += kind != Fn::None;
  c.ceilDivs += kind == Fn::CeilDiv;
  c.nodes += 1;
  for (size_t i = 0, n = e.nops(); i < n; ++i)
    addCost(e.op(i), c);
}

Cost cost(const ex &e) {
  Cost c;
  addCost(e, c);
  return c;
}

void collectSymbols(const ex &e, std::set<ex, GiNaC::ex_is_less> &out) {
  if (is_a<GiNaC::symbol>(e)) {
    out.insert(e);
    return;
  }
  for (size_t i = 0, n = e.nops(); i < n; ++i)
    collectSymbols(e.op(i), out);
}

} // namespace

ex Simplifier::run(const ex &e) {
  if (is_a<numeric>(e) || is_a<GiNaC::symbol>(e))
    return e;
  ex plain = passes(e);
  GiNaC::exmap back;
  std::map<ex, numeric, GiNaC::ex_is_less> divisors;
  ex substituted = substituteDivisible(plain, back, divisors);
  if (back.empty())
    return plain;
  // Going through K = c*K' can also make things worse ((K // 16) % 3 for K % 12): keep the
  // plain result unless the detour is strictly smaller.
  ex restored = restoreDivisible(
      passes(substituted).subs(back, GiNaC::subs_options::no_pattern), divisors);
  return cost(restored) < cost(plain) ? restored : plain;
}

ex Simplifier::passes(ex e) {
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    ex next = simp(e);
    if (next.is_equal(e))
      break;
    e = next;
  }
  return e;
}

// K -> c*K' for each symbol K with a divisibility fact; K' ranges over [lo/c, hi/c].
ex Simplifier::substituteDivisible(const ex &e, GiNaC::exmap &back,
                                   std::map<ex, numeric, GiNaC::ex_is_less> &divisors) {
  std::set<ex, GiNaC::ex_is_less> symbols;
  collectSymbols(e, symbols);
  GiNaC::exmap forward;
  for (const ex &sym : symbols) {
    std::string name = ex_to<GiNaC::symbol>(sym).get_name();
    std::optional<int64_t> d = facts_.divisorOf(name);
    if (!d || *d <= 1)
      continue;
    Range r = facts_.rangeOfSymbol(name); // already rounded to multiples of d
    Range scaled;
    scaled.lo = r.boundedBelow() ? r.lo / *d : Range::kNegInf;
    scaled.hi = r.boundedAbove() ? r.hi / *d : Range::kInf;
    ex fresh = GiNaC::symbol(name + "'");
    fresh_.push_back({fresh, scaled});
    forward[sym] = numeric(*d) * fresh;
    back[fresh] = makeFloorDiv(sym, numeric(*d));
    divisors[sym] = numeric(*d);
  }
  if (forward.empty())
    return e;
  return e.subs(forward, GiNaC::subs_options::no_pattern);
}

// Turns k*(K // c) back into (k/c)*K (or a smaller floordiv) when c divides K.
ex Simplifier::restoreDivisible(const ex &e,
                                const std::map<ex, numeric, GiNaC::ex_is_less> &divisors) {
  if (is_a<numeric>(e) || is_a<GiNaC::symbol>(e))
    return e;
  auto divisibleBy = [&](const ex &fd) -> std::optional<numeric> {
    if (fnKind(fd) != Fn::FloorDiv)
      return std::nullopt;
    auto it = divisors.find(fd.op(0));
    auto c = positiveInteger(fd.op(1));
    if (it == divisors.end() || !c || !GiNaC::mod(it->second, *c).is_zero())
      return std::nullopt;
    return c;
  };
  if (is_a<GiNaC::add>(e)) {
    GiNaC::exvector terms;
    for (size_t i = 0, n = e.nops(); i < n; ++i)
      terms.push_back(restoreDivisible(e.op(i), divisors));
    return GiNaC::add(terms);
  }
  if (is_a<GiNaC::mul>(e) || is_a<GiNaC::power>(e)) {
    Term term = splitTerm(e);
    numeric k = term.coeff;
    GiNaC::exvector factors;
    auto addFactor = [&](const ex &f0) {
      // A power is a factor of its own: recurse into its base only.
      ex f = is_a<GiNaC::power>(f0)
                 ? GiNaC::pow(restoreDivisible(f0.op(0), divisors), f0.op(1))
                 : restoreDivisible(f0, divisors);
      if (auto c = divisibleBy(f); c && k.is_integer()) {
        numeric g = GiNaC::gcd(k, *c);
        k = k / g;
        factors.push_back(makeFloorDiv(f.op(0), *c / g));
        return;
      }
      if (is_a<GiNaC::power>(f) && is_a<numeric>(f.op(1)) &&
          ex_to<numeric>(f.op(1)).is_pos_integer()) {
        numeric n = ex_to<numeric>(f.op(1));
        if (auto c = divisibleBy(f.op(0)); c && k.is_integer() &&
                                           GiNaC::mod(k, c->power(n)).is_zero()) {
          k = k / c->power(n);
          factors.push_back(GiNaC::pow(f.op(0).op(0), n));
          return;
        }
      }
      factors.push_back(f);
    };
    if (is_a<GiNaC::mul>(term.rest)) {
      for (size_t i = 0, n = term.rest.nops(); i < n; ++i)
        addFactor(term.rest.op(i));
    } else {
      addFactor(term.rest);
    }
    return k * GiNaC::mul(factors);
  }
  if (fnKind(e) == Fn::None)
    return e;
  ex a = restoreDivisible(e.op(0), divisors), b = restoreDivisible(e.op(1), divisors);
  // ceildiv(K // c, d) == ceildiv(K, c*d) when K // c is exact.
  if (fnKind(e) == Fn::CeilDiv)
    if (auto c = divisibleBy(a))
      if (auto d = positiveInteger(b))
        return makeCeilDiv(a.op(0), *c * *d);
  return makeFn(fnKind(e), a, b);
}

ex Simplifier::simp(const ex &e) {
  if (is_a<numeric>(e) || is_a<GiNaC::symbol>(e))
    return e;
  auto it = memo_.find(e);
  if (it != memo_.end())
    return it->second;
  ex result = simpNode(e);
  memo_.emplace(e, result);
  return result;
}

ex Simplifier::simpNode(const ex &e) {
  if (is_a<GiNaC::add>(e) || is_a<GiNaC::mul>(e)) {
    GiNaC::exvector ops;
    ops.reserve(e.nops());
    for (size_t i = 0, n = e.nops(); i < n; ++i)
      ops.push_back(simp(e.op(i)));
    if (is_a<GiNaC::mul>(e))
      return ex(GiNaC::mul(ops)).expand();
    ex sum = ex(GiNaC::add(ops)).expand();
    return is_a<GiNaC::add>(sum) ? simpAdd(sum) : sum;
  }
  if (is_a<GiNaC::power>(e))
    return GiNaC::pow(simp(e.op(0)), e.op(1)).expand();
  if (fnKind(e) != Fn::None)
    return simpFunction(e);
  return e;
}

// In a sum, k*(x // c) with c | k pairs with x and x % c: c*(x // c) == x - x % c. Rewrites the
// term that way when the result is smaller, which turns `x - c*(x // c)` into `x % c` and
// `c*(x // c) + x % c` into `x`.
ex Simplifier::simpAdd(ex sum) {
  for (int round = 0; round < 8 && is_a<GiNaC::add>(sum); ++round) {
    bool changed = false;
    auto before = cost(sum);
    for (size_t i = 0, n = sum.nops(); i < n && !changed; ++i) {
      Term term = splitTerm(sum.op(i));
      if (fnKind(term.rest) != Fn::FloorDiv || !term.coeff.is_integer())
        continue;
      auto c = positiveInteger(term.rest.op(1));
      if (!c || !GiNaC::mod(term.coeff, *c).is_zero())
        continue;
      numeric m = term.coeff / *c;
      const ex &x = term.rest.op(0);
      ex candidate = (sum - sum.op(i) + m * x - m * modPos(x, *c)).expand();
      if (cost(candidate) < before) {
        sum = candidate;
        changed = true;
      }
    }
    if (!changed)
      break;
  }
  return sum;
}

ex Simplifier::simpFunction(const ex &e) {
  ex a = simp(e.op(0)), b = simp(e.op(1));
  switch (fnKind(e)) {
  case Fn::FloorDiv:
    return floorDiv(a, b);
  case Fn::CeilDiv:
    return ceilDiv(a, b);
  case Fn::Mod:
    return mod(a, b);
  case Fn::Min:
    return minMax(true, a, b);
  case Fn::Max:
    return minMax(false, a, b);
  case Fn::ExactDiv:
    return makeExactDiv(a, b);
  case Fn::None:
    break;
  }
  return e;
}

ex Simplifier::floorDiv(const ex &a, const ex &b) {
  if (is_a<numeric>(b) && ex_to<numeric>(b).is_integer() && !b.is_zero()) {
    const numeric &c = ex_to<numeric>(b);
    if (c.is_negative()) // a // -c == (-a) // c
      return floorDivPos((-a).expand(), -c, false);
    return floorDivPos(a, c, false);
  }
  if (auto q = exactQuotient(a, b))
    return *q;
  ex result = makeFloorDiv(a, b);
  Interval r = range(result);
  if (r.isConstant())
    return numeric(long(r.lo));
  return result;
}

ex Simplifier::ceilDiv(const ex &a, const ex &b) {
  if (is_a<numeric>(b) && ex_to<numeric>(b).is_integer() && !b.is_zero()) {
    const numeric &c = ex_to<numeric>(b);
    if (c.is_negative()) // ceil(a / -c) == -floor(a / c)
      return (-floorDivPos(a, -c, false)).expand();
    return floorDivPos(a, c, true);
  }
  if (auto q = exactQuotient(a, b))
    return *q;
  ex result = makeCeilDiv(a, b);
  Interval r = range(result);
  if (r.isConstant())
    return numeric(long(r.lo));
  return result;
}

ex Simplifier::mod(const ex &a, const ex &b) {
  if (is_a<numeric>(b) && ex_to<numeric>(b).is_integer() && !b.is_zero()) {
    const numeric &c = ex_to<numeric>(b);
    if (c.is_negative()) // a % -c == -((-a) % c)
      return (-modPos((-a).expand(), -c)).expand();
    return modPos(a, c);
  }
  if (exactQuotient(a, b))
    return 0;
  Interval ra = range(a), rb = range(b);
  if (rb.lo >= 1 && ra.lo >= 0 && ra.hi < rb.lo)
    return a;
  return makeMod(a, b);
}

// floor(a / c) (or ceil, with `ceil`) for a positive integer c.
ex Simplifier::floorDivPos(ex a, numeric c, bool ceil) {
  // (K/2) // 4 == K // 8: scaling both sides by the denominators is exact for real division.
  numeric l = denominatorLcm(a);
  if (!l.is_equal(1)) {
    a = (a * l).expand();
    c = c * l;
  }
  DivSplit split = splitByDivisor(a, c, false, false);
  ex q = split.quotient, r = split.remainder;
  if (r.is_zero())
    return q;
  // (g*y) // (g*d) == y // d.
  numeric g = GiNaC::gcd(integerContent(r), c);
  if (!g.is_equal(1)) {
    r = (r * g.inverse()).expand();
    c = c / g;
  }
  if (c.is_equal(1))
    return (q + r).expand();
  // (x // d) // c == x // (d*c), likewise for ceil.
  if (fnKind(r) == (ceil ? Fn::CeilDiv : Fn::FloorDiv))
    if (auto d = positiveInteger(r.op(1)))
      return (q + floorDivPos(r.op(0), *d * c, ceil)).expand();
  Interval rr = range(r);
  std::optional<int64_t> cc = toInt64(c);
  if (ex coarse, fine; !ceil && splitFine(r, c, coarse, fine))
    return (q + floorDivPos(coarse, c, false)).expand();
  if (cc && !isInf(rr.lo) && !isInf(rr.hi)) {
    Int128 lo = ceil ? -floorDivExt(-rr.lo, *cc) : floorDivExt(rr.lo, *cc);
    Int128 hi = ceil ? -floorDivExt(-rr.hi, *cc) : floorDivExt(rr.hi, *cc);
    if (lo == hi)
      return (q + numeric(long(lo))).expand();
  }
  ex rest = ceil ? makeCeilDiv(r, c) : makeFloorDiv(r, c);
  return q.is_zero() ? rest : q + rest;
}

// a % c for a positive integer c.
ex Simplifier::modPos(ex a, numeric c) {
  if (c.is_equal(1) && isIntegerValued(a))
    return 0;
  if (!numeric(denominatorLcm(a)).is_equal(1))
    return makeMod(a, c);
  // k*(x % d) with c | d leaves the same remainder as k*x.
  bool replaced = false;
  GiNaC::exvector terms;
  forEachTerm(a, [&](const ex &t) {
    Term term = splitTerm(t);
    if (fnKind(term.rest) == Fn::Mod && term.coeff.is_integer())
      if (auto d = positiveInteger(term.rest.op(1)); d && GiNaC::mod(*d, c).is_zero()) {
        terms.push_back(term.coeff * term.rest.op(0));
        replaced = true;
        return;
      }
    terms.push_back(t);
  });
  if (replaced)
    a = ex(GiNaC::add(terms)).expand();

  ex r = splitByDivisor(a, c, true, true).remainder;
  if (r.is_zero())
    return 0;
  // (g*y) % (g*d) == g*(y % d).
  numeric g = GiNaC::gcd(integerContent(r), c);
  if (!g.is_equal(1))
    return (g * modPos((r * g.inverse()).expand(), c / g)).expand();
  Interval rr = range(r);
  std::optional<int64_t> cc = toInt64(c);
  if (cc && !isInf(rr.lo) && !isInf(rr.hi)) {
    Int128 k = floorDivExt(rr.lo, *cc);
    if (k == floorDivExt(rr.hi, *cc))
      return (r - numeric(long(k)) * c).expand();
  }
  if (ex coarse, fine; splitFine(r, c, coarse, fine))
    return (modPos(coarse, c) + fine).expand();
  return makeMod(r, c);
}

bool Simplifier::splitFine(const ex &a, const numeric &c, ex &coarse, ex &fine) const {
  // Candidate d: gcd(coefficient, c) of each term, largest first.
  std::set<numeric, std::greater<>> candidates;
  bool ok = true;
  forEachTerm(a, [&](const ex &t) {
    Term term = splitTerm(t);
    if (!term.coeff.is_integer() || !isIntegerValued(term.rest)) {
      ok = false;
      return;
    }
    numeric g = GiNaC::gcd(term.coeff, c);
    if (g > 1 && g < c)
      candidates.insert(g);
  });
  if (!ok)
    return false;
  for (const numeric &d : candidates) {
    GiNaC::exvector big, small;
    forEachTerm(a, [&](const ex &t) {
      (GiNaC::mod(splitTerm(t).coeff, d).is_zero() ? big : small).push_back(t);
    });
    if (small.empty() || big.empty())
      continue;
    ex f = GiNaC::add(small);
    Interval r = range(f);
    auto dd = toInt64(d);
    if (!dd || isInf(r.lo) || isInf(r.hi) || r.lo < 0 || r.hi >= *dd)
      continue;
    coarse = GiNaC::add(big);
    fine = f;
    return true;
  }
  return false;
}

ex Simplifier::minMax(bool isMin, const ex &a, const ex &b) {
  // Returns the smaller of the two when `aSmaller`, for min; the larger for max.
  auto pick = [&](bool aSmaller) { return (aSmaller == isMin) ? a : b; };
  Interval d = range((a - b).expand());
  if (d.hi <= 0)
    return pick(true);
  if (d.lo >= 0)
    return pick(false);
  Interval ra = range(a), rb = range(b);
  if (ra.hi <= rb.lo)
    return pick(true);
  if (rb.hi <= ra.lo)
    return pick(false);
  // min(a, max(a, b)) == a and max(a, min(a, b)) == a.
  Fn kind = isMin ? Fn::Min : Fn::Max, dual = isMin ? Fn::Max : Fn::Min;
  for (const auto &[x, y] : {std::pair(&a, &b), std::pair(&b, &a)})
    if (fnKind(*y) == dual && (y->op(0).is_equal(*x) || y->op(1).is_equal(*x)))
      return *x;
  // min(min(x, c1), c2) == min(x, min(c1, c2)).
  const ex *inner = nullptr, *constant = nullptr;
  if (fnKind(a) == kind && is_a<numeric>(b)) {
    inner = &a;
    constant = &b;
  } else if (fnKind(b) == kind && is_a<numeric>(a)) {
    inner = &b;
    constant = &a;
  }
  if (inner)
    for (int i = 0; i < 2; ++i)
      if (is_a<numeric>(inner->op(i)))
        return makeFn(kind, inner->op(1 - i), makeFn(kind, inner->op(i), *constant));
  return makeFn(kind, a, b);
}

} // namespace wave::sym::detail
