#include "symbolic/lowering.h"

#include "symbolic/ginac_functions.h"

#include <algorithm>
#include <functional>
#include <numeric>

namespace wave::sym::lowering_detail {

using GiNaC::ex;
using GiNaC::is_a;

Kind kindOf(const IndexExpr &ie) {
  const ex &e = ie.ex();
  if (is_a<GiNaC::numeric>(e)) {
    const auto &n = GiNaC::ex_to<GiNaC::numeric>(e);
    if (n.is_integer())
      return detail::toInt64(n) ? Kind::Integer : Kind::Other;
    return n.is_rational() ? Kind::Rational : Kind::Other;
  }
  if (is_a<GiNaC::symbol>(e))
    return Kind::Symbol;
  if (is_a<GiNaC::add>(e))
    return Kind::Add;
  if (is_a<GiNaC::mul>(e))
    return Kind::Mul;
  if (is_a<GiNaC::power>(e))
    return Kind::Power;
  switch (detail::fnKind(e)) {
  case detail::Fn::FloorDiv:
    return Kind::FloorDiv;
  case detail::Fn::CeilDiv:
    return Kind::CeilDiv;
  case detail::Fn::Mod:
    return Kind::Mod;
  case detail::Fn::Min:
    return Kind::Min;
  case detail::Fn::Max:
    return Kind::Max;
  default:
    return Kind::Other;
  }
}

int64_t integerValue(const IndexExpr &e) {
  return detail::toInt64(GiNaC::ex_to<GiNaC::numeric>(e.ex())).value_or(0);
}

std::string symbolName(const IndexExpr &e) { return GiNaC::ex_to<GiNaC::symbol>(e.ex()).get_name(); }

std::vector<IndexExpr> operands(const IndexExpr &e) {
  std::vector<IndexExpr> ops;
  // In a product, a sum factor and its negation differ only in the coefficient's sign, and
  // which of the two GiNaC keeps depends on its run-to-run operand order: every sum factor is
  // taken as the one whose printed form does not start with '-', the sign going to the numeric
  // factor (as the MLIR emitter's index lowering does, codegen/emitter/index.cpp).
  bool negate = false;
  for (size_t i = 0; i < e.ex().nops(); ++i) {
    ex f = e.ex().op(i);
    if (is_a<GiNaC::mul>(e.ex()) && is_a<GiNaC::add>(f) && IndexExpr(f).str().rfind('-', 0) == 0) {
      f = (-f).expand();
      negate = !negate;
    }
    ops.push_back(IndexExpr(f));
  }
  if (negate) {
    auto num = std::find_if(ops.begin(), ops.end(),
                            [](const IndexExpr &o) { return is_a<GiNaC::numeric>(o.ex()); });
    if (num == ops.end())
      ops.push_back(IndexExpr(ex(-1)));
    else if (num->ex().is_equal(ex(-1)))
      ops.erase(num); // -1 * -1: no factor left, as when GiNaC kept the other signs
    else
      *num = IndexExpr(-num->ex());
  }
  if (is_a<GiNaC::add>(e.ex()) || is_a<GiNaC::mul>(e.ex()))
    std::stable_sort(ops.begin(), ops.end(),
                     [](const IndexExpr &a, const IndexExpr &b) { return a.str() < b.str(); });
  return ops;
}

IndexExpr scaleExpanded(const IndexExpr &e, int64_t factor) {
  return IndexExpr((GiNaC::ex(factor) * e.ex()).expand());
}

std::optional<int64_t> denominatorLcm(const IndexExpr &e) {
  int64_t lcm = 1;
  bool overflow = false;
  std::function<void(const ex &)> visit = [&](const ex &x) {
    if (is_a<GiNaC::numeric>(x)) {
      const auto &n = GiNaC::ex_to<GiNaC::numeric>(x);
      auto den = detail::toInt64(n.denom());
      if (!den) {
        overflow = true;
        return;
      }
      __int128 l = static_cast<__int128>(lcm) / std::gcd(lcm, *den) * *den;
      if (l > INT64_MAX)
        overflow = true;
      else
        lcm = static_cast<int64_t>(l);
      return;
    }
    for (size_t i = 0; i < x.nops(); ++i)
      visit(x.op(i));
  };
  try {
    visit(e.ex());
  } catch (...) {
    return std::nullopt;
  }
  if (overflow)
    return std::nullopt;
  return lcm;
}

} // namespace wave::sym::lowering_detail
