// .wave printing of index expressions (see printer.h).
#include "symbolic/printer.h"

#include "symbolic/ginac_functions.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>
#include <vector>

namespace wave::sym::detail {

using GiNaC::ex;
using GiNaC::ex_to;
using GiNaC::is_a;
using GiNaC::numeric;

namespace {

// Binding strength, loosest first: `+ -`, then `* / // %`, then unary minus, then atoms.
enum Prec { kAdd = 1, kMul = 2, kUnary = 3, kAtom = 4 };

struct Printed {
  std::string text;
  int prec;
  // The text is a bare `a // b` or `a % b`: a unary minus in front would bind to `a` only.
  bool bareInfix = false;
};

Printed print(const ex &e);

std::string wrap(const ex &e, int minPrec) {
  Printed p = print(e);
  if (p.prec >= minPrec)
    return p.text;
  return "(" + p.text + ")";
}

std::string numberText(const numeric &n) {
  std::ostringstream os;
  os << n;
  return os.str();
}

std::string symbolText(const ex &e) {
  std::string name = ex_to<GiNaC::symbol>(e).get_name();
  if (!name.empty() && name[0] == '$')
    name.erase(0, 1);
  return name;
}

Printed printNumeric(const numeric &n) {
  if (n.is_integer())
    return {numberText(n), n.is_negative() ? kUnary : kAtom};
  return {numberText(n.numer()) + " / " + numberText(n.denom()), kMul};
}

// One factor of a product, ready to be joined with '*'.
struct FactorText {
  int rank; // symbols, then calls, then infix operators, then the rest
  std::string text;
  bool infix; // `a // b` or `a % b`: parenthesized next to other factors
  bool operator<(const FactorText &o) const {
    return std::tie(rank, text) < std::tie(o.rank, o.text);
  }
};

FactorText factorText(const ex &base) {
  if (is_a<GiNaC::symbol>(base))
    return {0, symbolText(base), false};
  switch (fnKind(base)) {
  case Fn::FloorDiv:
  case Fn::Mod:
  case Fn::ExactDiv:
    return {2, print(base).text, true};
  case Fn::None:
    return {3, wrap(base, kAtom), false};
  default:
    return {1, print(base).text, false};
  }
}

// Appends `base` |n| times to the numerator (n > 0) or the denominator (n < 0).
void addFactor(const ex &f, std::vector<FactorText> &num, std::vector<FactorText> &den) {
  if (is_a<GiNaC::power>(f) && is_a<numeric>(f.op(1)) && ex_to<numeric>(f.op(1)).is_integer()) {
    long n = ex_to<numeric>(f.op(1)).to_long();
    FactorText base = factorText(f.op(0));
    std::vector<FactorText> &into = n > 0 ? num : den;
    for (long i = 0; i < std::abs(n); ++i)
      into.push_back(base);
    return;
  }
  num.push_back(factorText(f));
}

std::vector<ex> factorsOf(const ex &rest) {
  std::vector<ex> factors;
  if (is_a<GiNaC::mul>(rest)) {
    for (size_t i = 0, n = rest.nops(); i < n; ++i)
      factors.push_back(rest.op(i));
  } else if (!(is_a<numeric>(rest) && ex_to<numeric>(rest).is_equal(1))) {
    factors.push_back(rest);
  }
  return factors;
}

std::string joinFactors(const std::vector<FactorText> &factors, bool parenInfix) {
  std::string out;
  for (const FactorText &f : factors) {
    if (!out.empty())
      out += "*";
    out += (f.infix && parenInfix) ? "(" + f.text + ")" : f.text;
  }
  return out;
}

// coeff * rest with coeff > 0: `3*K*(T0 // 64) / (2*N)`.
Printed printProduct(const numeric &coeff, const ex &rest) {
  std::vector<FactorText> num, den;
  for (const ex &f : factorsOf(rest))
    addFactor(f, num, den);
  std::sort(num.begin(), num.end());
  std::sort(den.begin(), den.end());
  numeric p = coeff.numer(), q = coeff.denom();
  if (!q.is_equal(1))
    den.insert(den.begin(), {-1, numberText(q), false});

  bool hasCoeff = !p.is_equal(1) || num.empty();
  size_t numElems = num.size() + (hasCoeff ? 1 : 0);
  bool alone = numElems == 1 && den.empty();
  std::string text = hasCoeff ? numberText(p) : "";
  if (!num.empty()) {
    if (!text.empty())
      text += "*";
    text += joinFactors(num, !alone);
  }
  if (!den.empty()) {
    std::string d = joinFactors(den, true);
    text += " / " + (den.size() == 1 ? d : "(" + d + ")");
  }
  if (!alone)
    return {text, kMul};
  if (!hasCoeff && num[0].infix)
    return {text, kMul, true};
  return {text, kAtom};
}

// A product keeps a sum factor or its negation, with the coefficient's sign to match, and
// which of the two GiNaC holds depends on its run-to-run operand order. The printed form takes
// every sum factor as the one of the two whose text does not start with '-' (the leading
// printed term is the same for both, with opposite signs), so it is the same on every run.
Term canonicalTerm(Term t) {
  if (!is_a<GiNaC::mul>(t.rest) && !is_a<GiNaC::add>(t.rest))
    return t;
  ex rest = 1;
  for (const ex &f : factorsOf(t.rest)) {
    if (is_a<GiNaC::add>(f) && print(f).text.rfind('-', 0) == 0) {
      rest *= (-f).expand();
      t.coeff = -t.coeff;
    } else {
      rest *= f;
    }
  }
  t.rest = rest;
  return t;
}

Printed printTerm(const Term &t) {
  Printed body = printProduct(abs(t.coeff), t.rest);
  if (!t.coeff.is_negative())
    return body;
  if (body.bareInfix)
    return {"-(" + body.text + ")", kUnary};
  return {"-" + body.text, std::min<int>(body.prec, kUnary)};
}

bool hasFunction(const ex &e) {
  if (fnKind(e) != Fn::None)
    return true;
  for (size_t i = 0, n = e.nops(); i < n; ++i)
    if (hasFunction(e.op(i)))
      return true;
  return false;
}

long degreeOf(const ex &rest) {
  long degree = 0;
  for (const ex &f : factorsOf(rest)) {
    if (is_a<GiNaC::power>(f) && is_a<numeric>(f.op(1)))
      degree += ex_to<numeric>(f.op(1)).to_long();
    else
      degree += 1;
  }
  return degree;
}

int fnRank(Fn kind) {
  switch (kind) {
  case Fn::FloorDiv:
    return 0;
  case Fn::CeilDiv:
    return 1;
  case Fn::Mod:
    return 2;
  case Fn::Min:
    return 3;
  case Fn::Max:
    return 4;
  case Fn::ExactDiv:
  case Fn::None:
    break;
  }
  return 5;
}

// Where a term goes in a sum: monomials (highest degree first), then terms with functions,
// grouped by the first argument of their first function, then the constant.
struct TermKey {
  int group = 0;
  long negDegree = 0;
  std::string primary;
  int rank = 0;
  std::string body;
  Term term;

  bool operator<(const TermKey &o) const {
    if (std::tie(group, negDegree, primary, rank, body) !=
        std::tie(o.group, o.negDegree, o.primary, o.rank, o.body))
      return std::tie(group, negDegree, primary, rank, body) <
             std::tie(o.group, o.negDegree, o.primary, o.rank, o.body);
    return term.coeff < o.term.coeff;
  }
};

TermKey keyOf(const Term &t) {
  TermKey key;
  key.term = t;
  if (is_a<numeric>(t.rest)) {
    key.group = 2;
    return key;
  }
  key.body = printProduct(1, t.rest).text;
  if (!hasFunction(t.rest)) {
    key.negDegree = -degreeOf(t.rest);
    return key;
  }
  key.group = 1;
  bool found = false;
  for (const ex &f : factorsOf(t.rest)) {
    ex base = is_a<GiNaC::power>(f) ? f.op(0) : f;
    Fn kind = fnKind(base);
    if (kind == Fn::None)
      continue;
    std::string primary = print(base.op(0)).text;
    if (!found || std::make_pair(primary, fnRank(kind)) < std::make_pair(key.primary, key.rank)) {
      key.primary = primary;
      key.rank = fnRank(kind);
    }
    found = true;
  }
  return key;
}

std::string joinTerms(std::vector<TermKey> &keys) {
  std::sort(keys.begin(), keys.end());
  std::string out;
  for (const TermKey &k : keys) {
    Printed body = printProduct(abs(k.term.coeff), k.term.rest);
    bool negative = k.term.coeff.is_negative();
    if (out.empty())
      out = negative ? printTerm(k.term).text : body.text;
    else
      out += (negative ? " - " : " + ") + body.text;
  }
  return out;
}

Printed printSum(const ex &sum) {
  std::vector<Term> terms;
  forEachTerm(sum, [&](const ex &t) { terms.push_back(canonicalTerm(splitTerm(t))); });

  // (K + M) / 2 rather than K / 2 + M / 2 when every term has the same denominator.
  numeric denom = terms.front().coeff.denom();
  bool common = !denom.is_equal(1);
  for (const Term &t : terms)
    common = common && t.coeff.denom().is_equal(denom);

  std::vector<TermKey> keys;
  for (Term t : terms) {
    if (common)
      t.coeff = t.coeff * denom;
    keys.push_back(keyOf(t));
  }
  std::string text = joinTerms(keys);
  if (!common)
    return {text, kAdd};
  return {"(" + text + ") / " + numberText(denom), kMul};
}

// The left operand of `//` and `%`. A negative one is parenthesized although unary minus binds
// tighter anyway: `(-w) // 4` says plainly that the floor applies to -w, and a sum never shows
// `+ -w % 4`.
std::string leftOperand(const ex &a) {
  Printed p = print(a);
  if (p.prec < kMul || (!p.text.empty() && p.text[0] == '-'))
    return "(" + p.text + ")";
  return p.text;
}

Printed printFunction(const ex &e) {
  Fn kind = fnKind(e);
  const ex &a = e.op(0), &b = e.op(1);
  switch (kind) {
  case Fn::FloorDiv:
    return {leftOperand(a) + " // " + wrap(b, kAtom), kMul};
  case Fn::Mod:
    return {leftOperand(a) + " % " + wrap(b, kAtom), kMul};
  case Fn::ExactDiv:
    return {leftOperand(a) + " / " + wrap(b, kAtom), kMul};
  case Fn::CeilDiv:
    return {"ceildiv(" + print(a).text + ", " + print(b).text + ")", kAtom};
  case Fn::Min:
  case Fn::Max: {
    std::string x = print(a).text, y = print(b).text;
    if (y < x)
      std::swap(x, y);
    return {std::string(kind == Fn::Min ? "min(" : "max(") + x + ", " + y + ")", kAtom};
  }
  case Fn::None:
    break;
  }
  std::ostringstream os;
  os << e;
  return {os.str(), kAtom};
}

// Printed forms of the subexpressions of the expression being printed. Sorting terms needs the
// text of each subexpression more than once, which without the cache costs time exponential in
// the nesting depth.
using PrintCache = std::map<ex, Printed, GiNaC::ex_is_less>;
PrintCache *activeCache = nullptr;

// Installs a fresh cache for one printExpr call (calls nest through GiNaC's print hooks).
class CacheScope {
public:
  CacheScope() : saved_(activeCache) { activeCache = &cache_; }
  ~CacheScope() { activeCache = saved_; }
  CacheScope(const CacheScope &) = delete;
  CacheScope &operator=(const CacheScope &) = delete;

private:
  PrintCache cache_;
  PrintCache *saved_;
};

Printed printUncached(const ex &e) {
  if (is_a<GiNaC::add>(e))
    return printSum(e);
  if (is_a<GiNaC::mul>(e) || is_a<GiNaC::power>(e))
    return printTerm(canonicalTerm(splitTerm(e)));
  return printFunction(e);
}

Printed print(const ex &e) {
  if (is_a<numeric>(e))
    return printNumeric(ex_to<numeric>(e));
  if (is_a<GiNaC::symbol>(e))
    return {symbolText(e), kAtom};
  if (!activeCache)
    return printUncached(e);
  auto it = activeCache->find(e);
  if (it != activeCache->end())
    return it->second;
  Printed p = printUncached(e);
  activeCache->emplace(e, p);
  return p;
}

} // namespace

std::string printExpr(const ex &e) {
  CacheScope scope;
  return print(e).text;
}

} // namespace wave::sym::detail
