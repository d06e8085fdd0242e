// Registration and eval hooks of floordiv, ceildiv, mod, min and max (see ginac_functions.h).
#include "symbolic/ginac_functions.h"

#include "symbolic/printer.h"

#include <limits>

namespace wave::sym::detail {

using GiNaC::ex;
using GiNaC::ex_to;
using GiNaC::is_a;
using GiNaC::numeric;

namespace {

unsigned floorDivSerial();
unsigned ceilDivSerial();
unsigned modSerial();
unsigned minSerial();
unsigned maxSerial();
unsigned exactDivSerial();

// A node that GiNaC must not evaluate again (the hook already looked at it).
ex held(unsigned serial, const ex &a, const ex &b) {
  return GiNaC::function(serial, a, b).hold();
}

std::optional<numeric> nonZeroInteger(const ex &e) {
  if (!is_a<numeric>(e))
    return std::nullopt;
  const numeric &n = ex_to<numeric>(e);
  if (!n.is_integer() || n.is_zero())
    return std::nullopt;
  return n;
}

bool isIntegerConstant(const ex &e) {
  return is_a<numeric>(e) && ex_to<numeric>(e).is_integer();
}

ex floorDivEval(const ex &a, const ex &b) {
  if (auto nb = nonZeroInteger(b)) {
    if (isIntegerConstant(a))
      return floorDivNum(ex_to<numeric>(a), *nb);
    if (nb->is_positive()) {
      if (allTermsDivisible(a, *nb))
        return a * nb->inverse();
      // (x // d) // c == x // (d*c) for positive d and c.
      if (fnKind(a) == Fn::FloorDiv)
        if (auto d = positiveInteger(a.op(1)))
          return makeFloorDiv(a.op(0), *d * *nb);
    }
  }
  if (a.is_zero())
    return 0;
  if (a.is_equal(b))
    return 1;
  return held(floorDivSerial(), a, b);
}

ex ceilDivEval(const ex &a, const ex &b) {
  if (auto nb = nonZeroInteger(b)) {
    if (isIntegerConstant(a))
      return ceilDivNum(ex_to<numeric>(a), *nb);
    if (nb->is_positive()) {
      if (allTermsDivisible(a, *nb))
        return a * nb->inverse();
      // ceil(ceil(x/d)/c) == ceil(x/(d*c)) for positive d and c.
      if (fnKind(a) == Fn::CeilDiv)
        if (auto d = positiveInteger(a.op(1)))
          return makeCeilDiv(a.op(0), *d * *nb);
    }
  }
  if (a.is_zero())
    return 0;
  if (a.is_equal(b))
    return 1;
  return held(ceilDivSerial(), a, b);
}

ex modEval(const ex &a, const ex &b) {
  if (auto nb = nonZeroInteger(b)) {
    if (isIntegerConstant(a))
      return GiNaC::mod(ex_to<numeric>(a), *nb); // GiNaC's mod takes the sign of b, like ours
    if (allTermsDivisible(a, abs(*nb)))
      return 0;
    // (x % d) % c == x % c when c divides d: x % d differs from x by a multiple of c.
    if (nb->is_positive() && fnKind(a) == Fn::Mod)
      if (auto d = positiveInteger(a.op(1)))
        if (GiNaC::mod(*d, *nb).is_zero())
          return makeMod(a.op(0), *nb);
  }
  if (a.is_zero() || a.is_equal(b))
    return 0;
  return held(modSerial(), a, b);
}

// min/max: fold constants and equal arguments; otherwise put the arguments in GiNaC's canonical
// order so that min(a, b) and min(b, a) are the same node (the printer sorts by text anyway).
ex minMaxEval(bool isMin, const ex &a, const ex &b) {
  unsigned serial = isMin ? minSerial() : maxSerial();
  if (is_a<numeric>(a) && is_a<numeric>(b) && ex_to<numeric>(a).is_real() &&
      ex_to<numeric>(b).is_real()) {
    bool aLess = ex_to<numeric>(a) < ex_to<numeric>(b);
    return (aLess == isMin) ? a : b;
  }
  if (a.is_equal(b))
    return a;
  if (a.compare(b) > 0)
    return held(serial, b, a);
  return held(serial, a, b);
}

ex exactDivEval(const ex &a, const ex &b) {
  if (b.is_zero())
    return held(exactDivSerial(), a, b);
  return a * GiNaC::pow(b, -1);
}

ex minEval(const ex &a, const ex &b) { return minMaxEval(true, a, b); }
ex maxEval(const ex &a, const ex &b) { return minMaxEval(false, a, b); }

// GiNaC's own printing (debug output, operator<<) shows the .wave form too.
void printInfix(const char *op, const ex &a, const ex &b, const GiNaC::print_context &c) {
  c.s << "(" << printExpr(a) << " " << op << " " << printExpr(b) << ")";
}
void printCall(const char *name, const ex &a, const ex &b, const GiNaC::print_context &c) {
  c.s << name << "(" << printExpr(a) << ", " << printExpr(b) << ")";
}
void floorDivPrint(const ex &a, const ex &b, const GiNaC::print_context &c) {
  printInfix("//", a, b, c);
}
void modPrint(const ex &a, const ex &b, const GiNaC::print_context &c) {
  printInfix("%", a, b, c);
}
void exactDivPrint(const ex &a, const ex &b, const GiNaC::print_context &c) {
  printInfix("/", a, b, c);
}
void ceilDivPrint(const ex &a, const ex &b, const GiNaC::print_context &c) {
  printCall("ceildiv", a, b, c);
}
void minPrint(const ex &a, const ex &b, const GiNaC::print_context &c) {
  printCall("min", a, b, c);
}
void maxPrint(const ex &a, const ex &b, const GiNaC::print_context &c) {
  printCall("max", a, b, c);
}

unsigned registerFn(const char *name, GiNaC::eval_funcp_2 eval, GiNaC::print_funcp_2 print) {
  return GiNaC::function::register_new(GiNaC::function_options(name, 2)
                                           .eval_func(eval)
                                           .print_func<GiNaC::print_context>(print));
}

unsigned floorDivSerial() {
  static const unsigned serial = registerFn("wave_floordiv", floorDivEval, floorDivPrint);
  return serial;
}
unsigned ceilDivSerial() {
  static const unsigned serial = registerFn("wave_ceildiv", ceilDivEval, ceilDivPrint);
  return serial;
}
unsigned modSerial() {
  static const unsigned serial = registerFn("wave_mod", modEval, modPrint);
  return serial;
}
unsigned minSerial() {
  static const unsigned serial = registerFn("wave_min", minEval, minPrint);
  return serial;
}
unsigned maxSerial() {
  static const unsigned serial = registerFn("wave_max", maxEval, maxPrint);
  return serial;
}
unsigned exactDivSerial() {
  static const unsigned serial = registerFn("wave_exactdiv", exactDivEval, exactDivPrint);
  return serial;
}

} // namespace

// Building a GiNaC::function and converting it to ex runs its eval hook.
ex makeFloorDiv(const ex &a, const ex &b) { return GiNaC::function(floorDivSerial(), a, b); }
ex makeCeilDiv(const ex &a, const ex &b) { return GiNaC::function(ceilDivSerial(), a, b); }
ex makeMod(const ex &a, const ex &b) { return GiNaC::function(modSerial(), a, b); }
ex makeMin(const ex &a, const ex &b) { return GiNaC::function(minSerial(), a, b); }
ex makeMax(const ex &a, const ex &b) { return GiNaC::function(maxSerial(), a, b); }
ex makeExactDiv(const ex &a, const ex &b) { return GiNaC::function(exactDivSerial(), a, b); }

ex makeFn(Fn kind, const ex &a, const ex &b) {
  switch (kind) {
  case Fn::FloorDiv:
    return makeFloorDiv(a, b);
  case Fn::CeilDiv:
    return makeCeilDiv(a, b);
  case Fn::Mod:
    return makeMod(a, b);
  case Fn::Min:
    return makeMin(a, b);
  case Fn::Max:
    return makeMax(a, b);
  case Fn::ExactDiv:
    return makeExactDiv(a, b);
  case Fn::None:
    break;
  }
  return a;
}

Fn fnKind(const ex &e) {
  if (!is_a<GiNaC::function>(e))
    return Fn::None;
  unsigned serial = ex_to<GiNaC::function>(e).get_serial();
  if (serial == floorDivSerial())
    return Fn::FloorDiv;
  if (serial == ceilDivSerial())
    return Fn::CeilDiv;
  if (serial == modSerial())
    return Fn::Mod;
  if (serial == minSerial())
    return Fn::Min;
  if (serial == maxSerial())
    return Fn::Max;
  if (serial == exactDivSerial())
    return Fn::ExactDiv;
  return Fn::None;
}

numeric floorDivNum(const numeric &a, const numeric &b) {
  return (a - GiNaC::mod(a, b)) / b;
}

numeric ceilDivNum(const numeric &a, const numeric &b) { return -floorDivNum(-a, b); }

std::optional<int64_t> toInt64(const numeric &n) {
  if (!n.is_integer())
    return std::nullopt;
  static const numeric kMax(std::numeric_limits<long>::max());
  static const numeric kMin(std::numeric_limits<long>::min());
  if (n > kMax || n < kMin)
    return std::nullopt;
  return n.to_long();
}

std::optional<numeric> positiveInteger(const ex &e) {
  if (!is_a<numeric>(e))
    return std::nullopt;
  const numeric &n = ex_to<numeric>(e);
  if (!n.is_pos_integer())
    return std::nullopt;
  return n;
}

bool isIntegerValued(const ex &e) {
  if (is_a<numeric>(e))
    return ex_to<numeric>(e).is_integer();
  if (is_a<GiNaC::symbol>(e))
    return true;
  if (is_a<GiNaC::add>(e) || is_a<GiNaC::mul>(e)) {
    for (size_t i = 0, n = e.nops(); i < n; ++i)
      if (!isIntegerValued(e.op(i)))
        return false;
    return true;
  }
  if (is_a<GiNaC::power>(e)) {
    const ex &exponent = e.op(1);
    return is_a<numeric>(exponent) && ex_to<numeric>(exponent).is_nonneg_integer() &&
           isIntegerValued(e.op(0));
  }
  Fn kind = fnKind(e);
  return kind != Fn::None && kind != Fn::ExactDiv;
}

Term splitTerm(const ex &term) {
  if (is_a<numeric>(term))
    return {ex_to<numeric>(term), 1};
  if (!is_a<GiNaC::mul>(term))
    return {1, term};
  size_t n = term.nops();
  const ex &last = term.op(n - 1);
  if (!is_a<numeric>(last))
    return {1, term};
  if (n == 2)
    return {ex_to<numeric>(last), term.op(0)};
  GiNaC::exvector factors;
  factors.reserve(n - 1);
  for (size_t i = 0; i + 1 < n; ++i)
    factors.push_back(term.op(i));
  return {ex_to<numeric>(last), GiNaC::mul(factors)};
}

bool allTermsDivisible(const ex &e, const numeric &c) {
  bool ok = true;
  forEachTerm(e, [&](const ex &t) {
    if (!ok)
      return;
    Term term = splitTerm(t);
    ok = term.coeff.is_integer() && GiNaC::mod(term.coeff, c).is_zero() &&
         isIntegerValued(term.rest);
  });
  return ok;
}

} // namespace wave::sym::detail
