// Index lowering: IndexExpr and predicates to `arith` on `index`, clone assignments.
#include "codegen/emitter/kernel_emitter.h"

namespace wave::codegen::detail {

std::string KernelEmitter::lowerIndex(const IndexExpr &e) {
  std::string key = e.str();
  auto it = exprCache_.find(key);
  if (it != exprCache_.end())
    return it->second;
  std::string r = lowerEx(e.ex());
  if (!failed_)
    exprCache_[key] = r;
  return r;
}

std::string KernelEmitter::lowerEx(const GiNaC::ex &e) {
  using namespace GiNaC;
  if (is_a<numeric>(e)) {
    const numeric &n = ex_to<numeric>(e);
    auto v = n.is_integer() ? sym::detail::toInt64(n) : std::nullopt;
    if (!v) {
      unsupported("a non-integer index constant", {});
      return "%error";
    }
    return constIndex(*v);
  }
  if (is_a<symbol>(e)) {
    std::string name = ex_to<symbol>(e).get_name();
    auto it = symbols_.find(name);
    if (it == symbols_.end()) {
      unsupported("index symbol '" + name + "'", {});
      return "%error";
    }
    return it->second;
  }
  if (is_a<add>(e) || is_a<mul>(e)) {
    // Rational coefficients (exact divisions proven by sema): scale by the common denominator,
    // then divide exactly.
    numeric den = 1;
    sym::detail::forEachTerm(
        e, [&](const ex &t) { den = lcm(den, sym::detail::splitTerm(t).coeff.denom()); });
    if (den != 1) {
      std::string scaled = lowerEx((e * den).expand());
      return binop("divsi", scaled, constIndex(*sym::detail::toInt64(den)));
    }
  }
  if (is_a<add>(e) || is_a<mul>(e)) {
    // GiNaC orders operands by hashes seeded with type addresses, which vary from run to run;
    // ordering them by their printed form keeps the emitted text deterministic.
    // In a product, a sum factor and its negation differ only in the coefficient's sign, and
    // which of the two GiNaC keeps also depends on that order: every sum factor is taken as
    // the one of the two whose printed form does not start with '-' (the leading printed term
    // is the same for both, with opposite signs), the sign going to the numeric coefficient.
    std::vector<std::pair<std::string, ex>> ops;
    numeric sign = 1;
    for (size_t i = 0; i < e.nops(); ++i) {
      ex f = e.op(i);
      if (is_a<mul>(e) && is_a<add>(f) && IndexExpr(f).str().rfind('-', 0) == 0) {
        f = (-f).expand();
        sign = -sign;
      }
      ops.emplace_back(IndexExpr(f).str(), f);
    }
    if (sign.is_equal(-1)) {
      auto num = std::find_if(ops.begin(), ops.end(),
                              [](const auto &o) { return is_a<numeric>(o.second); });
      if (num != ops.end()) {
        num->second = -num->second;
        num->first = IndexExpr(num->second).str();
      } else {
        ops.emplace_back(IndexExpr(ex(-1)).str(), ex(-1));
      }
    }
    std::stable_sort(ops.begin(), ops.end(),
                     [](const auto &x, const auto &y) { return x.first < y.first; });
    std::string acc;
    for (const auto &op : ops) {
      std::string t = lowerEx(op.second);
      acc = acc.empty() ? t : binop(is_a<add>(e) ? "addi" : "muli", acc, t);
    }
    return acc;
  }
  if (is_a<power>(e)) {
    auto exp = is_a<numeric>(e.op(1)) && ex_to<numeric>(e.op(1)).is_pos_integer()
                   ? sym::detail::toInt64(ex_to<numeric>(e.op(1)))
                   : std::nullopt;
    if (!exp || *exp > 8) {
      unsupported("index power " + IndexExpr(e).str(), {});
      return "%error";
    }
    std::string b = lowerEx(e.op(0)), acc = b;
    for (int64_t i = 1; i < *exp; ++i)
      acc = binop("muli", acc, b);
    return acc;
  }
  using sym::detail::Fn;
  Fn fn = sym::detail::fnKind(e);
  if (fn == Fn::None || fn == Fn::ExactDiv) {
    unsupported("index expression " + IndexExpr(e).str(), {});
    return "%error";
  }
  std::string a = lowerEx(e.op(0)), b = lowerEx(e.op(1));
  switch (fn) {
  case Fn::FloorDiv: return binop("floordivsi", a, b);
  case Fn::CeilDiv: return binop("ceildivsi", a, b);
  case Fn::Min: return binop("minsi", a, b);
  case Fn::Max: return binop("maxsi", a, b);
  case Fn::Mod: {
    // Non-negative modulo for a positive divisor: a - b * floor(a / b).
    std::string q = binop("floordivsi", a, b);
    return binop("subi", a, binop("muli", q, b));
  }
  default: return "%error";
  }
}

std::vector<CloneAssign> KernelEmitter::clonesOver(const std::set<std::string> &syms) {
  std::vector<CloneAssign> out(1);
  for (const auto &s : syms) {
    int64_t count = 1;
    for (const auto &ex : d_.expansion)
      if ("$i_" + ex.dim.str() == s)
        count = std::max<int64_t>(ex.count, 1);
    std::vector<CloneAssign> next;
    for (const auto &a : out)
      for (int64_t i = 0; i < count; ++i) {
        CloneAssign b = a;
        b[s] = i;
        next.push_back(b);
      }
    out = std::move(next);
  }
  return out;
}

std::string KernelEmitter::operandAt(const RegVal &v, const CloneAssign &a, int64_t e) {
  const std::string &ssa = v.clones.at(cloneKey(a, v.cloneSyms));
  if (v.elems == e)
    return ssa;
  // v.elems == 1: a value uniform along the vector dim.
  std::string r = fresh();
  line(r + " = vector.splat " + ssa + " : " + vecType(v.dtype, e));
  return r;
}

std::string KernelEmitter::lowerPred(const sym::Pred &p) {
  std::string r = fresh();
  switch (p.kind) {
  case sym::Pred::Const: line(r + " = arith.constant " + (p.value ? "true" : "false")); break;
  case sym::Pred::Not: {
    std::string x = lowerPred(p.children[0]), one = fresh();
    line(one + " = arith.constant true");
    line(r + " = arith.xori " + x + ", " + one + " : i1");
    break;
  }
  case sym::Pred::And:
  case sym::Pred::Or: {
    std::string acc = lowerPred(p.children[0]);
    for (size_t i = 1; i < p.children.size(); ++i) {
      std::string y = lowerPred(p.children[i]), z = fresh();
      line(z + " = arith." + (p.kind == sym::Pred::And ? "andi " : "ori ") + acc + ", " + y +
           " : i1");
      acc = z;
    }
    return acc;
  }
  case sym::Pred::Cmp: {
    static const char *preds[] = {"eq", "ne", "slt", "sle", "sgt", "sge"};
    std::string a = lowerIndex(p.lhs), b = lowerIndex(p.rhs);
    line(r + " = arith.cmpi " + preds[p.op] + ", " + a + ", " + b + " : index");
    break;
  }
  }
  return r;
}

} // namespace wave::codegen::detail
