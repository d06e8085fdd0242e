// What is known about the symbols of a kernel, and simplification that uses it.
//
// Facts hold, per symbol, an integer range [lo, hi] (every symbol is non-negative unless told
// otherwise) and divisibility (`K % 64 == 0`). They come from the hardware (0 <= $T0 < block_x),
// from constraints (0 <= $WG0 < ceildiv(M, 64)), from loop bounds, and from `assume`.
// simplify() rewrites an expression into a simpler equal one under these facts, e.g.
//   (64*w + t) // 64 -> w        when 0 <= t < 64
//   (64*w + t) % 64  -> t        when 0 <= t < 64
//   (T0 % 64) // 16  stays       when T0 may reach 64 (it is already exact and minimal)
//   (64*a) % 16      -> 0
//   min(t, 100)      -> t        when t < 64
// and every rewrite preserves the value for all symbol values allowed by the facts.
#pragma once

#include "symbolic/index_expr.h"

#include <limits>
#include <map>
#include <optional>
#include <string>

namespace wave::sym {

// An integer interval; lo/hi may be "unbounded".
struct Range {
  static constexpr int64_t kInf = std::numeric_limits<int64_t>::max();
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
  int64_t lo = kNegInf, hi = kInf; // inclusive
  bool boundedBelow() const { return lo != kNegInf; }
  bool boundedAbove() const { return hi != kInf; }
  bool isConstant() const { return lo == hi && boundedBelow(); }
  bool contains(int64_t v) const { return lo <= v && v <= hi; }
};

class Facts {
public:
  Facts() = default;

  // Sets (intersects) the range of a symbol. Symbols without a range are in [0, +inf); the first
  // call replaces that default, so a symbol can be given negative values.
  void setRange(const std::string &name, int64_t lo, int64_t hi = Range::kInf);
  // name is a multiple of `factor` (factor > 0).
  void addDivisibility(const std::string &name, int64_t factor);
  // Records what an assumption says about single symbols (ranges, divisibility); parts it
  // cannot use are kept for prove(). Returns false if the predicate is provably false.
  bool assume(const Pred &p);

  Range rangeOf(const IndexExpr &e) const;
  Range rangeOfSymbol(const std::string &name) const;
  std::optional<int64_t> divisorOf(const std::string &name) const;

  IndexExpr simplify(const IndexExpr &e) const;
  // true / false when the facts decide the predicate, nullopt when they do not.
  std::optional<bool> prove(const Pred &p) const;
  // True when `a` is a multiple of `b` for every value the facts allow (so a / b is exact).
  bool provesExact(const IndexExpr &a, const IndexExpr &b) const;
  // True when a - b is provably zero.
  bool provesEqual(const IndexExpr &a, const IndexExpr &b) const;

private:
  // assume() helpers: record what `p` says; derive symbol bounds from the recorded comparisons.
  bool record(const Pred &p);
  bool tighten();
  bool narrow(const std::string &name, int64_t lo, int64_t hi);
  std::optional<bool> proveNonNegative(const IndexExpr &d) const;
  std::optional<bool> proveZero(const IndexExpr &d) const;

  std::map<std::string, Range> ranges_;
  std::map<std::string, int64_t> divisors_;
  std::vector<Pred> assumed_;
};

} // namespace wave::sym
