// The integer operators GiNaC lacks (floordiv, ceildiv, mod, min, max) as GiNaC functions, and
// small helpers over GiNaC terms shared by the printer, the range analysis and the simplifier.
// Internal to src/symbolic.
//
// The functions are registered lazily (on first use, through a function-local static) rather than
// with REGISTER_FUNCTION: a namespace-scope registration in a static library runs in an
// unspecified order relative to other translation units' static initializers, and an IndexExpr
// built during another file's static initialization would then see serial 0.
//
// Each function has an eval hook that GiNaC runs whenever the node is built (also by subs and
// expand). The hooks only do what is cheap and unconditionally true: fold integer constants
// (floor toward -infinity, non-negative mod for a positive divisor), x // 1 = x, x % 1 = 0,
// (c*x) // c = x, (c*x) % c = 0, (x // a) // b = x // (a*b), (x % a) % b = x % b when b | a,
// min(x, x) = x. Everything that needs ranges lives in the Simplifier.
#pragma once

#include <ginac/ginac.h>

#include <cstdint>
#include <optional>
#include <utility>

namespace wave::sym::detail {

// ExactDiv only holds a division GiNaC cannot represent as a rational (by zero): it prints as
// `a / 0` and never evaluates.
enum class Fn { None, FloorDiv, CeilDiv, Mod, Min, Max, ExactDiv };

GiNaC::ex makeFloorDiv(const GiNaC::ex &a, const GiNaC::ex &b);
GiNaC::ex makeCeilDiv(const GiNaC::ex &a, const GiNaC::ex &b);
GiNaC::ex makeMod(const GiNaC::ex &a, const GiNaC::ex &b);
GiNaC::ex makeMin(const GiNaC::ex &a, const GiNaC::ex &b);
GiNaC::ex makeMax(const GiNaC::ex &a, const GiNaC::ex &b);
// a / b: the rational a * b^-1, or an ExactDiv node when b is zero.
GiNaC::ex makeExactDiv(const GiNaC::ex &a, const GiNaC::ex &b);
GiNaC::ex makeFn(Fn kind, const GiNaC::ex &a, const GiNaC::ex &b);

// Which of our functions `e` is (Fn::None for anything else).
Fn fnKind(const GiNaC::ex &e);

// Floor division / Python modulo of integer numerics (b != 0).
GiNaC::numeric floorDivNum(const GiNaC::numeric &a, const GiNaC::numeric &b);
GiNaC::numeric ceilDivNum(const GiNaC::numeric &a, const GiNaC::numeric &b);

std::optional<int64_t> toInt64(const GiNaC::numeric &n);
// The positive integer value of `e`, if it is one.
std::optional<GiNaC::numeric> positiveInteger(const GiNaC::ex &e);

// True when `e` takes only integer values for integer symbol values: built from integers,
// symbols, our functions, + and * and non-negative integer powers.
bool isIntegerValued(const GiNaC::ex &e);

// A term of a sum as coefficient * rest, where rest has no numeric factor (rest is 1 for a
// constant term).
struct Term {
  GiNaC::numeric coeff;
  GiNaC::ex rest;
};
Term splitTerm(const GiNaC::ex &term);

// Calls f(term) for each term of `e` (the operands of a sum, or `e` itself).
template <typename F> void forEachTerm(const GiNaC::ex &e, F &&f) {
  if (!GiNaC::is_a<GiNaC::add>(e)) {
    f(e);
    return;
  }
  for (size_t i = 0, n = e.nops(); i < n; ++i)
    f(e.op(i));
}

// True when every term of `e` is c times an integer-valued term (so e // c is exact).
bool allTermsDivisible(const GiNaC::ex &e, const GiNaC::numeric &c);

} // namespace wave::sym::detail
