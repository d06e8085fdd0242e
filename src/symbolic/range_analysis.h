// Interval arithmetic over index expressions: a conservative integer range for any expression,
// given the ranges of its symbols. Internal to src/symbolic; Facts::rangeOf is the public entry.
//
// Bounds are kept in 128-bit integers and anything at or beyond 2^62 in magnitude counts as
// infinite, so no operation on int64-sized bounds can overflow; losing precision that way only
// widens a range, which keeps every answer sound.
#pragma once

#include "symbolic/facts.h"

#include <ginac/ginac.h>

#include <utility>
#include <vector>

namespace wave::sym::detail {

using Int128 = __int128;

struct Interval {
  static constexpr Int128 kPosInf = Int128(1) << 63;
  static constexpr Int128 kNegInf = -kPosInf;
  Int128 lo = kNegInf, hi = kPosInf;

  static Interval full() { return {}; }
  static Interval point(Int128 v) { return {v, v}; }
  static Interval fromRange(const Range &r);
  Range toRange() const;
  bool finite() const { return lo != kNegInf && hi != kPosInf; }
  bool isConstant() const { return finite() && lo == hi; }
};

// Floor/ceil division of extended integers by a positive divisor (both may be infinite).
Int128 floorDivExt(Int128 a, Int128 b);

class RangeAnalysis {
public:
  // `extra` gives ranges for symbols that Facts does not know (the simplifier's fresh symbols).
  explicit RangeAnalysis(const Facts &facts,
                         const std::vector<std::pair<GiNaC::ex, Range>> *extra = nullptr)
      : facts_(facts), extra_(extra) {}

  Interval of(const GiNaC::ex &e) const;

private:
  Interval ofSymbol(const GiNaC::ex &e) const;
  Interval ofMul(const GiNaC::ex &e) const;
  Interval ofPower(const GiNaC::ex &e) const;
  Interval ofFunction(const GiNaC::ex &e) const;

  const Facts &facts_;
  const std::vector<std::pair<GiNaC::ex, Range>> *extra_;
};

} // namespace wave::sym::detail
