// Prints index expressions in .wave syntax (docs/language.md section 9). Internal to src/symbolic;
// the public entry point is IndexExpr::str().
//
// The text is deterministic: it depends only on the expression's value as a tree, never on
// GiNaC's hash order. Terms of a sum are ordered by what they contain (plain monomials first,
// highest degree first, then terms with floordiv/mod/... grouped by their first argument, the
// constant last); factors of a product put the integer coefficient first, then symbols, then
// calls. Parentheses appear only where precedence needs them, except that a `//` or `%` inside
// a product is always parenthesized: `32*(T0 // 64)`.
#pragma once

#include <ginac/ginac.h>

#include <string>

namespace wave::sym::detail {

std::string printExpr(const GiNaC::ex &e);

} // namespace wave::sym::detail
