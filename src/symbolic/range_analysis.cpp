// Interval arithmetic over index expressions (see range_analysis.h).
#include "symbolic/range_analysis.h"

#include "symbolic/ginac_functions.h"

#include <algorithm>

namespace wave::sym::detail {

using GiNaC::ex;
using GiNaC::ex_to;
using GiNaC::is_a;
using GiNaC::numeric;

namespace {

constexpr Int128 kInf = Interval::kPosInf;
constexpr Int128 kFiniteLimit = Int128(1) << 62;

bool isInf(Int128 v) { return v >= kInf || v <= -kInf; }

// Anything this large is treated as infinite, so later products cannot overflow 128 bits.
Int128 saturate(Int128 v) {
  if (v >= kFiniteLimit)
    return kInf;
  if (v <= -kFiniteLimit)
    return -kInf;
  return v;
}

Int128 addExt(Int128 a, Int128 b) {
  if (isInf(a))
    return a;
  if (isInf(b))
    return b;
  return saturate(a + b);
}

// 0 times infinity is 0: the bound is approached by finite values only.
Int128 mulExt(Int128 a, Int128 b) {
  if (a == 0 || b == 0)
    return 0;
  if (isInf(a) || isInf(b))
    return ((a < 0) != (b < 0)) ? -kInf : kInf;
  return saturate(a * b);
}

Int128 ceilDivExt(Int128 a, Int128 b) { return -floorDivExt(-a, b); }

Int128 toExt(const numeric &n) {
  if (auto v = toInt64(n))
    return saturate(*v);
  return n.is_negative() ? -kInf : kInf;
}

Interval hull(std::initializer_list<Int128> values) {
  return {std::min(values), std::max(values)};
}

Interval addI(const Interval &x, const Interval &y) {
  return {addExt(x.lo, y.lo), addExt(x.hi, y.hi)};
}

Interval negI(const Interval &x) { return {-x.hi, -x.lo}; }

Interval mulI(const Interval &x, const Interval &y) {
  return hull({mulExt(x.lo, y.lo), mulExt(x.lo, y.hi), mulExt(x.hi, y.lo), mulExt(x.hi, y.hi)});
}

// x * p/q, rounded outward to integers.
Interval scaleI(const Interval &x, const numeric &c) {
  Int128 p = toExt(c.numer()), q = toExt(c.denom());
  if (isInf(p) || isInf(q))
    return Interval::full();
  Interval y = mulI(x, Interval::point(p));
  if (q == 1)
    return y;
  return {floorDivExt(y.lo, q), ceilDivExt(y.hi, q)};
}

Interval ofNumeric(const numeric &n) {
  if (n.is_integer())
    return Interval::point(toExt(n));
  if (!n.is_rational())
    return Interval::full();
  return {toExt(floorDivNum(n.numer(), n.denom())), toExt(ceilDivNum(n.numer(), n.denom()))};
}

// Division by zero has no value, so a divisor range [0, h] acts as [1, h].
Interval excludeZero(Interval y) {
  if (y.lo == 0 && y.hi >= 1)
    y.lo = 1;
  else if (y.hi == 0 && y.lo <= -1)
    y.hi = -1;
  return y;
}

// floor(a / b) is monotone in a, and in b for fixed a: the extremes are at the corners.
Interval floorDivI(const Interval &x, Interval y) {
  y = excludeZero(y);
  if (y.lo >= 1)
    return hull({floorDivExt(x.lo, y.lo), floorDivExt(x.lo, y.hi), floorDivExt(x.hi, y.lo),
                 floorDivExt(x.hi, y.hi)});
  if (y.hi <= -1)
    return floorDivI(negI(x), negI(y));
  return Interval::full();
}

Interval modI(const Interval &x, Interval y) {
  y = excludeZero(y);
  if (y.lo >= 1) {
    if (y.isConstant() && x.finite()) {
      Int128 k = floorDivExt(x.lo, y.lo);
      if (k == floorDivExt(x.hi, y.lo))
        return {x.lo - k * y.lo, x.hi - k * y.lo};
    }
    Int128 hi = isInf(y.hi) ? kInf : y.hi - 1;
    if (x.lo >= 0)
      hi = std::min(hi, x.hi); // a % b <= a for a >= 0
    return {0, hi};
  }
  if (y.hi <= -1) {
    Int128 lo = isInf(y.lo) ? -kInf : y.lo + 1;
    if (x.hi <= 0)
      lo = std::max(lo, x.lo);
    return {lo, 0};
  }
  return Interval::full();
}

// base^n for n >= 0. Past 200 factors |base| >= 2 has saturated, so only the parity matters.
Int128 powExt(Int128 base, long n) {
  if (n > 200)
    n = 200 + n % 2;
  Int128 result = 1;
  for (long i = 0; i < n; ++i)
    result = mulExt(result, base);
  return result;
}

} // namespace

Int128 floorDivExt(Int128 a, Int128 b) {
  if (isInf(b))
    return isInf(a) ? a : (a >= 0 ? 0 : -1);
  if (isInf(a))
    return a;
  Int128 q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0)))
    --q;
  return q;
}

Interval Interval::fromRange(const Range &r) {
  Interval i;
  i.lo = r.boundedBelow() ? saturate(r.lo) : kNegInf;
  i.hi = r.boundedAbove() ? saturate(r.hi) : kPosInf;
  return i;
}

Range Interval::toRange() const {
  Range r;
  r.lo = lo <= kNegInf ? Range::kNegInf : (lo >= kPosInf ? Range::kInf : int64_t(lo));
  r.hi = hi >= kPosInf ? Range::kInf : (hi <= kNegInf ? Range::kNegInf : int64_t(hi));
  return r;
}

Interval RangeAnalysis::of(const ex &e) const {
  if (is_a<numeric>(e))
    return ofNumeric(ex_to<numeric>(e));
  if (is_a<GiNaC::symbol>(e))
    return ofSymbol(e);
  if (is_a<GiNaC::add>(e)) {
    Interval sum = Interval::point(0);
    for (size_t i = 0, n = e.nops(); i < n; ++i)
      sum = addI(sum, of(e.op(i)));
    return sum;
  }
  if (is_a<GiNaC::mul>(e))
    return ofMul(e);
  if (is_a<GiNaC::power>(e))
    return ofPower(e);
  return ofFunction(e);
}

Interval RangeAnalysis::ofSymbol(const ex &e) const {
  if (extra_)
    for (const auto &[sym, range] : *extra_)
      if (sym.is_equal(e))
        return Interval::fromRange(range);
  return Interval::fromRange(facts_.rangeOfSymbol(ex_to<GiNaC::symbol>(e).get_name()));
}

// A rational coefficient is applied last: K/2 for K in [0, 100] is [0, 50], not [0, 1]*[0, 100].
Interval RangeAnalysis::ofMul(const ex &e) const {
  Term term = splitTerm(e);
  Interval product = Interval::point(1);
  if (is_a<GiNaC::mul>(term.rest)) {
    for (size_t i = 0, n = term.rest.nops(); i < n; ++i)
      product = mulI(product, of(term.rest.op(i)));
  } else {
    product = of(term.rest);
  }
  return scaleI(product, term.coeff);
}

Interval RangeAnalysis::ofPower(const ex &e) const {
  const ex &exponent = e.op(1);
  if (!is_a<numeric>(exponent) || !ex_to<numeric>(exponent).is_integer())
    return Interval::full();
  long n = ex_to<numeric>(exponent).to_long();
  Interval base = of(e.op(0));
  if (n < 0) {
    // |x^n| <= 1 for an integer x != 0.
    if (base.lo >= 1)
      return {0, 1};
    if (base.hi <= -1)
      return {-1, 1};
    return Interval::full();
  }
  if (n % 2 == 0 && base.lo < 0 && base.hi > 0)
    return {0, powExt(std::max(-base.lo, base.hi), n)};
  Int128 a = powExt(base.lo, n), b = powExt(base.hi, n);
  return {std::min(a, b), std::max(a, b)};
}

Interval RangeAnalysis::ofFunction(const ex &e) const {
  switch (fnKind(e)) {
  case Fn::FloorDiv:
    return floorDivI(of(e.op(0)), of(e.op(1)));
  case Fn::CeilDiv:
    return negI(floorDivI(negI(of(e.op(0))), of(e.op(1))));
  case Fn::Mod:
    return modI(of(e.op(0)), of(e.op(1)));
  case Fn::Min: {
    Interval a = of(e.op(0)), b = of(e.op(1));
    return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
  }
  case Fn::Max: {
    Interval a = of(e.op(0)), b = of(e.op(1));
    return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
  }
  case Fn::ExactDiv:
  case Fn::None:
    break;
  }
  return Interval::full();
}

} // namespace wave::sym::detail
