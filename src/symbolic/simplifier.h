// Range-aware rewriting of index expressions: the engine behind Facts::simplify. Internal to
// src/symbolic.
//
// One run: (1) bottom-up passes expand polynomials and rewrite floordiv/ceildiv/mod/min/max
// with the ranges of their arguments, until nothing changes (at most kMaxPasses); (2) when a
// symbol K of the result is known to be a multiple of c, K is replaced by c*K' with a fresh
// non-negative K' (so K % c, (K // c)*c, ceildiv(K, c)*c fold by plain algebra), the passes run
// again, K' goes back as K // c and products c*(K // c) become K again; that result is kept
// only if it is smaller than the one of step (1).
//
// Every rewrite is an identity for all symbol values the facts allow (where the input has a
// value: an input that divides by zero may come out defined, e.g. (B*x) // B -> x). Each pass is
// one walk of the tree with bounded work per node, and the number of passes is capped, so a run
// always terminates.
#pragma once

#include "symbolic/facts.h"
#include "symbolic/range_analysis.h"

#include <ginac/ginac.h>

#include <map>
#include <utility>
#include <vector>

namespace wave::sym::detail {

class Simplifier {
public:
  explicit Simplifier(const Facts &facts) : facts_(facts), ranges_(facts, &fresh_) {}

  GiNaC::ex run(const GiNaC::ex &e);

private:
  static constexpr int kMaxPasses = 4;

  // Bottom-up passes until nothing changes (at most kMaxPasses).
  GiNaC::ex passes(GiNaC::ex e);
  GiNaC::ex simp(const GiNaC::ex &e);
  GiNaC::ex simpNode(const GiNaC::ex &e);
  GiNaC::ex simpAdd(GiNaC::ex sum);
  GiNaC::ex simpFunction(const GiNaC::ex &e);

  GiNaC::ex floorDiv(const GiNaC::ex &a, const GiNaC::ex &b);
  GiNaC::ex ceilDiv(const GiNaC::ex &a, const GiNaC::ex &b);
  GiNaC::ex mod(const GiNaC::ex &a, const GiNaC::ex &b);
  GiNaC::ex minMax(bool isMin, const GiNaC::ex &a, const GiNaC::ex &b);

  GiNaC::ex floorDivPos(GiNaC::ex a, GiNaC::numeric c, bool ceil);
  GiNaC::ex modPos(GiNaC::ex a, GiNaC::numeric c);
  // a = coarse + fine, where every term of `coarse` has an integer coefficient that is a
  // multiple of some d > 1 dividing c, and 0 <= fine < d: then a // c == coarse // c and
  // a % c == coarse % c + fine (an element offset inside an aligned group: (4*x + g) % 64 with
  // g < 4 is 4*(x % 16) + g). The largest such d is taken; false when there is none.
  bool splitFine(const GiNaC::ex &a, const GiNaC::numeric &c, GiNaC::ex &coarse,
                 GiNaC::ex &fine) const;

  Interval range(const GiNaC::ex &e) const { return ranges_.of(e); }

  GiNaC::ex substituteDivisible(const GiNaC::ex &e, GiNaC::exmap &back,
                                std::map<GiNaC::ex, GiNaC::numeric, GiNaC::ex_is_less> &divisors);
  GiNaC::ex restoreDivisible(const GiNaC::ex &e,
                             const std::map<GiNaC::ex, GiNaC::numeric, GiNaC::ex_is_less> &divisors);

  const Facts &facts_;
  std::vector<std::pair<GiNaC::ex, Range>> fresh_; // ranges of the K' symbols
  RangeAnalysis ranges_;
  std::map<GiNaC::ex, GiNaC::ex, GiNaC::ex_is_less> memo_;
};

} // namespace wave::sym::detail
