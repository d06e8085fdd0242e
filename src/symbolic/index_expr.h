// Symbolic index expressions on GiNaC (docs/language.md section 9).
//
// An IndexExpr is an integer-valued expression over named symbols: problem sizes (M, K),
// hardware ids ($T0, $WG1, ...), loop induction variables ($IV_K), lane and register indices,
// with + - *, exact division (a rational coefficient), floor division, non-negative modulo,
// ceildiv, min and max. floordiv/mod/ceildiv/min/max are GiNaC functions of our own, because
// GiNaC has none; the range-aware rewriting lives in facts.h.
//
// Semantics: floorDiv rounds toward -infinity, mod(a, b) = a - b*floorDiv(a, b) (so it is
// non-negative for b > 0), ceilDiv(a, b) = -floorDiv(-a, b). Division by zero makes evaluate()
// fail; it never traps.
//
// Symbol names starting with '$' are compiler-internal (hardware ids, loop ivs); the printer
// drops the '$'.
#pragma once

#include <ginac/ginac.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace wave::sym {

class IndexExpr {
public:
  IndexExpr() : e_(0) {}
  IndexExpr(int64_t v);                 // NOLINT: integers convert implicitly
  explicit IndexExpr(GiNaC::ex e) : e_(std::move(e)) {}
  // The symbol of this name. The same name always yields the same GiNaC symbol.
  static IndexExpr symbol(const std::string &name);

  IndexExpr operator+(const IndexExpr &o) const;
  IndexExpr operator-(const IndexExpr &o) const;
  IndexExpr operator*(const IndexExpr &o) const;
  IndexExpr operator-() const;
  IndexExpr &operator+=(const IndexExpr &o) { return *this = *this + o; }

  // The integer value when the expression is a constant integer.
  std::optional<int64_t> asInteger() const;
  bool isInteger() const { return asInteger().has_value(); }
  // A symbol's name when the expression is exactly one symbol.
  std::optional<std::string> asSymbol() const;
  // True when the expression has a non-integer rational part (an unproven exact division).
  bool hasRationalCoefficient() const;

  std::set<std::string> freeSymbols() const;
  bool dependsOn(const std::string &name) const;
  IndexExpr subs(const std::map<std::string, IndexExpr> &bindings) const;
  // Integer value with every free symbol bound; nullopt when one is unbound, on division by
  // zero, or when an exact division leaves a fraction.
  std::optional<int64_t> evaluate(const std::map<std::string, int64_t> &values) const;

  // Structural equality after expansion (no range facts: see Facts::simplify for that).
  bool equals(const IndexExpr &o) const;

  // Readable, deterministic text in .wave syntax: `64*WG0 + 16*(T0 // 64) + T0 % 16`.
  std::string str() const;

  const GiNaC::ex &ex() const { return e_; }

private:
  GiNaC::ex e_;
};

// Integers on the left: 4 * x, 1 + x, 8 - x.
inline IndexExpr operator*(int64_t a, const IndexExpr &b) { return IndexExpr(a) * b; }
inline IndexExpr operator+(int64_t a, const IndexExpr &b) { return IndexExpr(a) + b; }
inline IndexExpr operator-(int64_t a, const IndexExpr &b) { return IndexExpr(a) - b; }

IndexExpr floorDiv(const IndexExpr &a, const IndexExpr &b);
IndexExpr ceilDiv(const IndexExpr &a, const IndexExpr &b);
IndexExpr mod(const IndexExpr &a, const IndexExpr &b);
IndexExpr min(const IndexExpr &a, const IndexExpr &b);
IndexExpr max(const IndexExpr &a, const IndexExpr &b);
// Exact division a / b: a rational result, whose exactness Facts::provesExact must establish.
IndexExpr exactDiv(const IndexExpr &a, const IndexExpr &b);

// A predicate over index expressions (assume(...), conditions, masks).
struct Pred {
  enum Kind { Cmp, And, Or, Not, Const };
  enum CmpOp { Eq, Ne, Lt, Le, Gt, Ge };
  Kind kind = Const;
  CmpOp op = Eq;
  IndexExpr lhs, rhs;         // Cmp
  std::vector<Pred> children; // And / Or: two or more; Not: one
  bool value = true;          // Const

  static Pred cmp(CmpOp op, IndexExpr l, IndexExpr r);
  static Pred both(Pred a, Pred b);
  static Pred either(Pred a, Pred b);
  static Pred negate(Pred a);
  static Pred constant(bool v);

  Pred subs(const std::map<std::string, IndexExpr> &bindings) const;
  std::optional<bool> evaluate(const std::map<std::string, int64_t> &values) const;
  std::set<std::string> freeSymbols() const;
  std::string str() const;
};

} // namespace wave::sym
