// Lowering an IndexExpr into another language, bottom-up: one mechanism for every emitter
// (C host code in the generated stub, MLIR arith in the code generator).
//
// An emitter implements IndexLowering<T> for its value type T; lowerIndexExpr walks the
// expression and calls it. Rational coefficients (exact divisions the front end proved exact)
// are cleared by multiplying the whole sum by the lcm L of the denominators and emitting one
// exact division by L at the end, so emitters only ever see integers.
#pragma once

#include "symbolic/index_expr.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace wave::sym {

template <class T> class IndexLowering {
public:
  virtual ~IndexLowering() = default;
  virtual T constant(int64_t v) = 0;
  virtual std::optional<T> symbol(const std::string &name) = 0; // nullopt: unknown symbol
  virtual T add(T a, T b) = 0;
  virtual T mul(T a, T b) = 0;
  virtual T floorDiv(T a, T b) = 0;
  virtual T ceilDiv(T a, T b) = 0;
  virtual T mod(T a, T b) = 0;
  virtual T min(T a, T b) = 0;
  virtual T max(T a, T b) = 0;
  // a / b where a is known to be a multiple of b (b > 0).
  virtual T exactDiv(T a, T b) = 0;
};

namespace lowering_detail {
// Structural pieces of an expression, so that the walk below needs no GiNaC knowledge beyond
// this file's implementation (lowering.cpp).
enum class Kind { Integer, Rational, Symbol, Add, Mul, Power, FloorDiv, CeilDiv, Mod, Min, Max, Other };
Kind kindOf(const IndexExpr &e);
int64_t integerValue(const IndexExpr &e);  // Kind::Integer
std::string symbolName(const IndexExpr &e); // Kind::Symbol
// Operands in a deterministic order (sums and products sorted by their printed form: GiNaC's
// own order depends on hashes that vary from run to run, and generated code must not).
std::vector<IndexExpr> operands(const IndexExpr &e);
// The lcm of the denominators of all rational numbers in e (1 when there are none), or nullopt
// when it does not fit in 63 bits.
std::optional<int64_t> denominatorLcm(const IndexExpr &e);
// factor * e, expanded (so that integer factors reach every term's coefficient).
IndexExpr scaleExpanded(const IndexExpr &e, int64_t factor);
} // namespace lowering_detail

template <class T>
std::optional<T> lowerIndexExprImpl(const IndexExpr &e, IndexLowering<T> &to) {
  using namespace lowering_detail;
  switch (kindOf(e)) {
  case Kind::Integer:
    return to.constant(integerValue(e));
  case Kind::Symbol:
    return to.symbol(symbolName(e));
  case Kind::Add:
  case Kind::Mul: {
    std::optional<T> acc;
    for (const IndexExpr &op : operands(e)) {
      std::optional<T> x = lowerIndexExprImpl(op, to);
      if (!x)
        return std::nullopt;
      acc = !acc ? *x : kindOf(e) == Kind::Add ? to.add(*acc, *x) : to.mul(*acc, *x);
    }
    return acc;
  }
  case Kind::Power: {
    // Non-negative integer powers only (M*M), as repeated products.
    std::vector<IndexExpr> ops = operands(e);
    std::optional<T> base = lowerIndexExprImpl(ops[0], to);
    IndexExpr exponent = ops[1];
    if (!base || kindOf(exponent) != Kind::Integer || integerValue(exponent) < 1 ||
        integerValue(exponent) > 64)
      return std::nullopt;
    T acc = *base;
    for (int64_t i = 1; i < integerValue(exponent); ++i)
      acc = to.mul(acc, *base);
    return acc;
  }
  case Kind::FloorDiv:
  case Kind::CeilDiv:
  case Kind::Mod:
  case Kind::Min:
  case Kind::Max: {
    std::vector<IndexExpr> ops = operands(e);
    std::optional<T> a = lowerIndexExprImpl(ops[0], to);
    std::optional<T> b = a ? lowerIndexExprImpl(ops[1], to) : std::nullopt;
    if (!b)
      return std::nullopt;
    switch (kindOf(e)) {
    case Kind::FloorDiv:
      return to.floorDiv(*a, *b);
    case Kind::CeilDiv:
      return to.ceilDiv(*a, *b);
    case Kind::Mod:
      return to.mod(*a, *b);
    case Kind::Min:
      return to.min(*a, *b);
    default:
      return to.max(*a, *b);
    }
  }
  default:
    return std::nullopt;
  }
}

// Lowers `e`; nullopt when it holds something an emitter cannot express (an unknown symbol,
// a rational that is not an exact division, a huge denominator).
template <class T> std::optional<T> lowerIndexExpr(const IndexExpr &e, IndexLowering<T> &to) {
  std::optional<int64_t> lcm = lowering_detail::denominatorLcm(e);
  if (!lcm)
    return std::nullopt;
  if (*lcm == 1)
    return lowerIndexExprImpl(e, to);
  IndexExpr scaled = lowering_detail::scaleExpanded(e, *lcm);
  if (lowering_detail::denominatorLcm(scaled).value_or(0) != 1)
    return std::nullopt;
  std::optional<T> num = lowerIndexExprImpl(scaled, to);
  if (!num)
    return std::nullopt;
  return to.exactDiv(*num, to.constant(*lcm));
}

} // namespace wave::sym
