// The reference evaluator (reference.h): walks the kernel graph op by op over dense tensors.
//
// Every tensor knows, per named dim, the global range it covers (`lo`, `n`): the whole dim, or
// the current tile of an `iterate`. Operands are always addressed by global position, so a
// value defined outside a loop and used inside is sliced to the current tile by the same
// mechanism that broadcasts a value along dims it lacks (a view: per result dim, the operand's
// stride, 0 when it lacks the dim).
#include "reference/reference.h"

#include "symbolic/compiled_expr.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <unordered_map>

namespace wave::ref {

namespace {

// One element: floats in `f` (already rounded to the element type), integers in `i`.
struct Num {
  double f = 0;
  int64_t i = 0;
};

struct Tensor {
  ScalarType dtype = ScalarType::F32;
  std::vector<std::string> dims;
  std::vector<int64_t> lo, n, stride;
  std::vector<Num> data;
  std::vector<uint8_t> written; // Memory tensors: which elements the kernel wrote
  bool checkUnwritten = false;  // allocate: reading an unwritten element is an error

  void setShape(std::vector<std::string> d, std::vector<int64_t> l, std::vector<int64_t> e) {
    dims = std::move(d);
    lo = std::move(l);
    n = std::move(e);
    stride.assign(dims.size(), 1);
    int64_t s = 1;
    for (size_t k = dims.size(); k-- > 0;) {
      stride[k] = s;
      s *= n[k];
    }
    data.assign(static_cast<size_t>(s), Num{});
  }
  int dimIndex(const std::string &d) const {
    for (size_t k = 0; k < dims.size(); ++k)
      if (dims[k] == d)
        return static_cast<int>(k);
    return -1;
  }
  size_t size() const { return data.size(); }
};
using TensorPtr = std::shared_ptr<Tensor>;

// How an operand is addressed while walking a result's elements in C order.
struct View {
  const Tensor *t = nullptr;
  int64_t base = 0;
  std::vector<int64_t> stride; // per result dim
};

using Expr = sym::CompiledExpr;
using sym::floorDivInt;

// Evaluates a compiled expression; `ok` turns false on division by zero.
int64_t run(const Expr &e, const int64_t *slots, bool &ok) { return sym::evaluate(e, slots, ok); }

// A compiled predicate (apply_expr predicates).
struct PredProgram {
  sym::Pred::Kind kind = sym::Pred::Const;
  sym::Pred::CmpOp op = sym::Pred::Eq;
  const Expr *lhs = nullptr, *rhs = nullptr;
  std::vector<PredProgram> children;
  bool value = true;
};

bool runPred(const PredProgram &p, const int64_t *slots, bool &ok) {
  switch (p.kind) {
  case sym::Pred::Const: return p.value;
  case sym::Pred::Not: return !runPred(p.children[0], slots, ok);
  case sym::Pred::And:
    for (const auto &c : p.children)
      if (!runPred(c, slots, ok))
        return false;
    return true;
  case sym::Pred::Or:
    for (const auto &c : p.children)
      if (runPred(c, slots, ok))
        return true;
    return false;
  case sym::Pred::Cmp: {
    int64_t a = run(*p.lhs, slots, ok), b = run(*p.rhs, slots, ok);
    switch (p.op) {
    case sym::Pred::Eq: return a == b;
    case sym::Pred::Ne: return a != b;
    case sym::Pred::Lt: return a < b;
    case sym::Pred::Le: return a <= b;
    case sym::Pred::Gt: return a > b;
    case sym::Pred::Ge: return a >= b;
    }
  }
  }
  return false;
}

std::string dimKey(const ir::Dim &d) { return d.name.str(); }

class Evaluator {
public:
  Evaluator(const ir::Kernel &k, std::map<std::string, int64_t> symbols, std::string &error)
      : k_(k), symbols_(std::move(symbols)), error_(error) {}

  bool run(std::vector<HostTensor> &args, std::vector<int64_t> *written);

private:
  const ir::Kernel &k_;
  std::map<std::string, int64_t> symbols_;
  std::string &error_;
  std::unordered_map<const ir::Value *, TensorPtr> env_;
  std::map<std::string, std::pair<int64_t, int64_t>> tiles_; // iterated dim -> (lo, n)
  const ir::Op *op_ = nullptr;                                // the op being evaluated
  sym::ExprPool exprPool_;

  bool fail(const std::string &msg) {
    if (op_ && op_->loc.valid())
      error_ = fmt::format("{}:{}: {}: {}", op_->loc.begin.line, op_->loc.begin.col,
                           ir::opKindName(op_->kind), msg);
    else
      error_ = msg;
    return false;
  }

  bool dimSize(const ir::Dim &d, int64_t &out) {
    auto v = d.size.evaluate(symbols_);
    if (!v || *v < 0)
      return fail("the size of dim '" + d.str() + "' (" + d.size.str() +
                  ") cannot be evaluated with the bound symbols");
    out = *v;
    return true;
  }
  // The range a new value covers along `d`: the current tile when `d` is iterated.
  bool range(const ir::Dim &d, int64_t &lo, int64_t &n) {
    auto it = tiles_.find(dimKey(d));
    if (it != tiles_.end()) {
      lo = it->second.first;
      n = it->second.second;
      return true;
    }
    for (const auto &[name, tile] : tiles_) {
      (void)tile;
      if (d.name.dependsOn(name) || d.size.dependsOn(name))
        return fail("dim '" + d.str() + "' is an expression of the iterated dim '" + name +
                    "'; the reference evaluator supports only the dim itself inside the loop");
    }
    lo = 0;
    return dimSize(d, n);
  }
  bool newTensor(const ir::Type &t, TensorPtr &out) {
    std::vector<std::string> dims;
    std::vector<int64_t> lo, n;
    for (const auto &d : t.shape) {
      int64_t l, e;
      if (!range(d, l, e))
        return false;
      dims.push_back(dimKey(d));
      lo.push_back(l);
      n.push_back(e);
    }
    out = std::make_shared<Tensor>();
    out->dtype = t.dtype;
    out->setShape(std::move(dims), std::move(lo), std::move(n));
    return true;
  }
  // A view of `src` over the elements of `dst` (dims of dst that src lacks broadcast; `skip`
  // names a src dim that dst lacks, fixed at position `skipPos`).
  bool view(const Tensor &src, const Tensor &dst, View &v, const std::string &skip = {},
            int64_t skipPos = 0) {
    v.t = &src;
    v.base = 0;
    v.stride.assign(dst.dims.size(), 0);
    for (size_t j = 0; j < src.dims.size(); ++j) {
      if (src.dims[j] == skip) {
        v.base += (skipPos - src.lo[j]) * src.stride[j];
        continue;
      }
      int i = dst.dimIndex(src.dims[j]);
      if (i < 0)
        return fail("operand has dim '" + src.dims[j] + "' that the result lacks");
      if (dst.lo[i] < src.lo[j] || dst.lo[i] + dst.n[i] > src.lo[j] + src.n[j])
        return fail(fmt::format("operand covers [{}, {}) of dim '{}', the result needs [{}, {})",
                                src.lo[j], src.lo[j] + src.n[j], src.dims[j], dst.lo[i],
                                dst.lo[i] + dst.n[i]));
      v.stride[i] = src.stride[j];
      v.base += (dst.lo[i] - src.lo[j]) * src.stride[j];
    }
    return true;
  }
  // Calls f(dstIndex, srcIndices, position) for every element of `dst` in C order, where
  // position[k] is the element's global position along dst dim k.
  template <class F> void forEach(const Tensor &dst, const std::vector<View> &views, F f) {
    const size_t rank = dst.dims.size(), nv = views.size();
    std::vector<int64_t> idx(rank, 0), pos(dst.lo), src(nv);
    for (size_t v = 0; v < nv; ++v)
      src[v] = views[v].base;
    const size_t total = dst.size();
    for (size_t e = 0; e < total; ++e) {
      f(e, src.data(), pos.data());
      for (size_t k = rank; k-- > 0;) {
        ++idx[k];
        ++pos[k];
        for (size_t v = 0; v < nv; ++v)
          src[v] += views[v].stride[k];
        if (idx[k] < dst.n[k])
          break;
        for (size_t v = 0; v < nv; ++v)
          src[v] -= views[v].stride[k] * dst.n[k];
        pos[k] -= dst.n[k];
        idx[k] = 0;
      }
    }
  }

  const Expr *compile(const sym::IndexExpr &e, const std::vector<std::string> &slots) {
    const Expr *r = exprPool_.compile(e, slots, symbols_);
    if (!r)
      fail(exprPool_.unknown.empty() ? "index expression '" + e.str() + "' cannot be evaluated"
                                     : "index expression '" + e.str() + "' uses '" +
                                           exprPool_.unknown + "', which has no value");
    return r;
  }
  bool compilePred(const sym::Pred &p, const std::vector<std::string> &slots, PredProgram &out) {
    out.kind = p.kind;
    out.op = p.op;
    out.value = p.value;
    if (p.kind == sym::Pred::Cmp) {
      out.lhs = compile(p.lhs, slots);
      out.rhs = out.lhs ? compile(p.rhs, slots) : nullptr;
      return out.rhs != nullptr;
    }
    for (const auto &c : p.children) {
      out.children.emplace_back();
      if (!compilePred(c, slots, out.children.back()))
        return false;
    }
    return true;
  }

  TensorPtr get(const ir::Value *v) {
    auto it = env_.find(v);
    return it == env_.end() ? nullptr : it->second;
  }
  bool operands(const ir::Op &op, std::vector<TensorPtr> &out) {
    for (const ir::Value *v : op.operands) {
      TensorPtr t = get(v);
      if (!t)
        return fail("an operand has no value (an op outside its region?)");
      out.push_back(t);
    }
    return true;
  }

  bool region(const ir::Region &r, std::vector<TensorPtr> *yielded);
  bool evalOp(const ir::Op &op, std::vector<TensorPtr> *yielded);
  bool elementwise(const ir::Op &op, const std::vector<TensorPtr> &in, TensorPtr &out);
  bool readOp(const ir::Op &op, const std::vector<TensorPtr> &in, TensorPtr &out);
  bool writeOp(const ir::Op &op, const std::vector<TensorPtr> &in, TensorPtr *old);
  bool mmaOp(const ir::Op &op, const std::vector<TensorPtr> &in, TensorPtr &out);
  bool reduceOp(const ir::Op &op, const std::vector<TensorPtr> &in, TensorPtr &out);
  bool cumsumOp(const ir::Op &op, const std::vector<TensorPtr> &in, TensorPtr &out);
  bool topkOp(const ir::Op &op, const std::vector<TensorPtr> &in);
  bool iterateOp(const ir::Op &op, const std::vector<TensorPtr> &in);
  bool keepEndedRows(const ir::TilingConstraint &tc, int64_t lo, const std::vector<TensorPtr> &before,
                     std::vector<TensorPtr> &after);
  bool ifOp(const ir::Op &op, const std::vector<TensorPtr> &in);
};

// ---- scalar semantics ------------------------------------------------------------------------

Num fromFloat(ScalarType t, double v) {
  Num r;
  if (isFloat(t)) {
    r.f = roundToFloat(t, v);
  } else if (std::isnan(v)) {
    r.i = 0;
  } else {
    // Float to integer: toward zero, saturating at the type's range (as GPU conversions do).
    double lo, hi;
    switch (t) {
    case ScalarType::I1: lo = 0, hi = 1; break;
    case ScalarType::U8: lo = 0, hi = 255; break;
    case ScalarType::U32: lo = 0, hi = 4294967295.0; break;
    default: {
      unsigned w = bitWidth(t);
      lo = -std::ldexp(1.0, static_cast<int>(w) - 1);
      hi = std::ldexp(1.0, static_cast<int>(w) - 1) - 1;
    }
    }
    double x = std::trunc(v);
    if (x <= lo)
      r.i = static_cast<int64_t>(lo);
    else if (x >= hi)
      r.i = bitWidth(t) == 64 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(hi);
    else
      r.i = static_cast<int64_t>(x);
  }
  return r;
}

Num fromInt(ScalarType t, int64_t v) {
  Num r;
  if (isFloat(t))
    r.f = roundToFloat(t, static_cast<double>(v));
  else
    r.i = wrapToInt(t, v);
  return r;
}

// A value of type `from` converted to `to` (cast).
Num convert(ScalarType from, ScalarType to, Num x) {
  if (isFloat(from))
    return fromFloat(to, x.f);
  return fromInt(to, x.i);
}

int64_t wrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t wrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// NaN-propagating maximum/minimum with -0 < +0 (arith.maximumf / minimumf).
double fmaximum(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  if (a == b)
    return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
double fminimum(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  if (a == b)
    return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

// One element of a binary op of kind k on elements x and y of type `t` (`fl`: float, `sg`:
// signed); an integer division by zero sets `divZero` (and gives 0).
Num binaryElement(ir::BinaryKind k, ScalarType t, bool fl, bool sg, Num x, Num y, bool &divZero) {
  using B = ir::BinaryKind;
  bool cmp = false, r = false;
  switch (k) {
  case B::Eq: cmp = true, r = fl ? x.f == y.f : x.i == y.i; break;
  case B::Ne: cmp = true, r = fl ? !(x.f == y.f) : x.i != y.i; break;
  case B::Lt: cmp = true, r = fl ? x.f < y.f : x.i < y.i; break;
  case B::Le: cmp = true, r = fl ? x.f <= y.f : x.i <= y.i; break;
  case B::Gt: cmp = true, r = fl ? x.f > y.f : x.i > y.i; break;
  case B::Ge: cmp = true, r = fl ? x.f >= y.f : x.i >= y.i; break;
  default: break;
  }
  if (cmp)
    return Num{0, r ? 1 : 0};
  if (fl) {
    double v = 0;
    switch (k) {
    case B::Add: v = x.f + y.f; break;
    case B::Sub: v = x.f - y.f; break;
    case B::Mul: v = x.f * y.f; break;
    case B::Div: v = x.f / y.f; break;
    case B::FloorDiv: v = std::floor(roundToFloat(t, x.f / y.f)); break;
    case B::Mod: v = std::fmod(x.f, y.f); break;
    default: break;
    }
    return fromFloat(t, v);
  }
  int64_t v = 0;
  switch (k) {
  case B::Add: v = wrapAdd(x.i, y.i); break;
  case B::Sub: v = wrapSub(x.i, y.i); break;
  case B::Mul: v = wrapMul(x.i, y.i); break;
  case B::And: v = x.i & y.i; break;
  case B::Or: v = x.i | y.i; break;
  case B::Xor: v = x.i ^ y.i; break;
  case B::Div:
  case B::FloorDiv:
  case B::Mod:
    if (y.i == 0) {
      divZero = true;
      break;
    }
    if (y.i == -1 && sg) { // no overflow trap: x / -1 = -x (wrapped), x % -1 = 0
      v = k == B::Mod ? 0 : wrapSub(0, x.i);
      break;
    }
    if (k == B::Div)
      v = x.i / y.i;
    else if (k == B::FloorDiv)
      v = floorDivInt(x.i, y.i);
    else
      v = x.i - y.i * floorDivInt(x.i, y.i); // the sign of the divisor (Python's %)
    break;
  default: break;
  }
  return fromInt(t, v);
}

// One element of a math op of kind m on element x (and y, the second operand of maximum and
// minimum) of type `t` (`fl`: float, `sg`: signed).
Num mathElement(ir::MathKind m, ScalarType t, bool fl, bool sg, Num x, Num y) {
  using M = ir::MathKind;
  if (!fl) {
    int64_t v = x.i;
    if (m == M::Abs)
      v = sg && v < 0 ? wrapSub(0, v) : v;
    else if (m == M::Maximum)
      v = std::max(v, y.i);
    else if (m == M::Minimum)
      v = std::min(v, y.i);
    return fromInt(t, v);
  }
  double v = 0;
  switch (m) {
  case M::Exp: v = std::exp(x.f); break;
  case M::Exp2: v = std::exp2(x.f); break;
  case M::Log: v = std::log(x.f); break;
  case M::Log2: v = std::log2(x.f); break;
  case M::Sqrt: v = std::sqrt(x.f); break;
  case M::Rsqrt: v = 1.0 / std::sqrt(x.f); break;
  case M::Reciprocal: v = 1.0 / x.f; break;
  case M::Abs: v = std::fabs(x.f); break;
  case M::Tanh: v = std::tanh(x.f); break;
  case M::Sin: v = std::sin(x.f); break;
  case M::Cos: v = std::cos(x.f); break;
  case M::Maximum: v = fmaximum(x.f, y.f); break;
  case M::Minimum: v = fminimum(x.f, y.f); break;
  }
  return fromFloat(t, v);
}

// ---- ops ---------------------------------------------------------------------------------------

bool Evaluator::elementwise(const ir::Op &op, const std::vector<TensorPtr> &in, TensorPtr &out) {
  const ir::Type &rt = op.results[0]->type;
  if (!newTensor(rt, out))
    return false;
  std::vector<View> views(in.size());
  for (size_t k = 0; k < in.size(); ++k)
    if (!view(*in[k], *out, views[k]))
      return false;
  const ScalarType t = rt.dtype;
  const ScalarType it = in.empty() ? t : in[0]->dtype;
  const bool fl = isFloat(it), sg = isSigned(it);
  Num *o = out->data.data();
  const Num *a = in.size() > 0 ? in[0]->data.data() : nullptr;
  const Num *b = in.size() > 1 ? in[1]->data.data() : nullptr;
  const Num *c = in.size() > 2 ? in[2]->data.data() : nullptr;
  bool divZero = false;
  switch (op.kind) {
  case ir::OpKind::Unary:
    forEach(*out, views, [&](size_t e, const int64_t *s, const int64_t *) {
      Num x = a[s[0]];
      if (op.unary == ir::UnaryKind::Neg)
        o[e] = fl ? Num{-x.f, 0} : fromInt(t, wrapSub(0, x.i));
      else
        o[e] = fromInt(t, ~x.i);
    });
    return true;
  case ir::OpKind::Binary:
    forEach(*out, views, [&](size_t e, const int64_t *s, const int64_t *) {
      o[e] = binaryElement(op.binary, t, fl, sg, a[s[0]], b[s[1]], divZero);
    });
    if (divZero)
      return fail("integer division by zero");
    return true;
  case ir::OpKind::Math:
    forEach(*out, views, [&](size_t e, const int64_t *s, const int64_t *) {
      o[e] = mathElement(op.math, t, fl, sg, a[s[0]], b ? b[s[1]] : Num{});
    });
    return true;
  case ir::OpKind::Select:
    forEach(*out, views, [&](size_t e, const int64_t *s, const int64_t *) {
      o[e] = a[s[0]].i ? b[s[1]] : c[s[2]];
    });
    return true;
  case ir::OpKind::Cast:
    forEach(*out, views, [&](size_t e, const int64_t *s, const int64_t *) {
      o[e] = convert(it, t, a[s[0]]);
    });
    return true;
  case ir::OpKind::Broadcast:
  case ir::OpKind::Permute:
    forEach(*out, views, [&](size_t e, const int64_t *s, const int64_t *) { o[e] = a[s[0]]; });
    return true;
  case ir::OpKind::Constant: {
    Num v = isFloat(t) ? fromFloat(t, op.fvalue) : fromInt(t, op.ivalue);
    std::fill(out->data.begin(), out->data.end(), v);
    return true;
  }
  case ir::OpKind::SelfIndex:
    forEach(*out, views, [&](size_t e, const int64_t *, const int64_t *pos) {
      o[e] = fromInt(t, pos[0]);
    });
    return true;
  case ir::OpKind::ApplyExpr: {
    std::vector<std::string> slots{op.lambdaVar};
    bool ok = true;
    if (op.pred) {
      PredProgram p;
      if (!compilePred(*op.pred, slots, p))
        return false;
      forEach(*out, views, [&](size_t e, const int64_t *s, const int64_t *) {
        o[e] = Num{0, runPred(p, &a[s[0]].i, ok) ? 1 : 0};
      });
    } else {
      const Expr *x = compile(op.expr, slots);
      if (!x)
        return false;
      forEach(*out, views, [&](size_t e, const int64_t *s, const int64_t *) {
        o[e] = fromInt(t, wave::ref::run(*x, &a[s[0]].i, ok));
      });
    }
    if (!ok)
      return fail("division by zero (or an inexact exact division) in '" +
                  (op.pred ? op.pred->str() : op.expr.str()) + "'");
    return true;
  }
  default: return fail("not an elementwise op");
  }
}

bool Evaluator::readOp(const ir::Op &op, const std::vector<TensorPtr> &in, TensorPtr &out) {
  const Tensor &mem = *in[0];
  if (!newTensor(op.results[0]->type, out))
    return false;
  Num *o = out->data.data();
  const Num *m = mem.data.data();
  bool unwritten = false;
  int64_t badIndex = 0;
  if (!op.mapping) {
    std::vector<View> views(1);
    if (!view(mem, *out, views[0]))
      return false;
    forEach(*out, views, [&](size_t e, const int64_t *s, const int64_t *) {
      if (mem.checkUnwritten && !mem.written[s[0]] && !unwritten) {
        unwritten = true;
        badIndex = s[0];
      }
      o[e] = m[s[0]];
    });
  } else {
    // reg[outputs(it)] = mem[inputs(it)]: iterators are the positions along the output dims.
    const ir::Mapping &map = *op.mapping;
    std::vector<int> slotOfDim(out->dims.size(), -1);
    for (size_t k = 0; k < map.outputs.size(); ++k) {
      auto s = map.outputs[k].second.asSymbol();
      for (size_t it = 0; it < map.iterators.size(); ++it)
        if (s && *s == map.iterators[it])
          if (int d = out->dimIndex(dimKey(map.outputs[k].first)); d >= 0)
            slotOfDim[d] = static_cast<int>(it);
    }
    // A data-dependent index (gather): one more slot, the index register's element at the
    // iteration point (the index is broadcast over the dims it lacks).
    std::vector<std::string> names = map.iterators;
    std::vector<View> views;
    const Tensor *ix = map.valueSymbol.empty() || in.size() < 2 ? nullptr : in[1].get();
    if (ix) {
      names.push_back(map.valueSymbol);
      views.resize(1);
      if (!view(*ix, *out, views[0]))
        return false;
    }
    std::vector<const Expr *> idx;
    std::vector<int> memDim;
    for (const auto &[d, e] : map.inputs) {
      idx.push_back(compile(e, names));
      if (!idx.back())
        return false;
      memDim.push_back(mem.dimIndex(dimKey(d)));
    }
    std::vector<int64_t> slots(names.size(), 0);
    bool ok = true;
    forEach(*out, views, [&](size_t e, const int64_t *s, const int64_t *pos) {
      for (size_t k = 0; k < slotOfDim.size(); ++k)
        if (slotOfDim[k] >= 0)
          slots[slotOfDim[k]] = pos[k];
      if (ix)
        slots.back() = ix->data[s[0]].i;
      int64_t lin = 0;
      for (size_t j = 0; j < idx.size(); ++j) {
        int64_t p = wave::ref::run(*idx[j], slots.data(), ok) - mem.lo[memDim[j]];
        if (p < 0 || p >= mem.n[memDim[j]]) { // masked off: 0
          o[e] = Num{};
          return;
        }
        lin += p * mem.stride[memDim[j]];
      }
      if (mem.checkUnwritten && !mem.written[lin] && !unwritten) {
        unwritten = true;
        badIndex = lin;
      }
      o[e] = m[lin];
    });
    if (!ok)
      return fail("division by zero in the mapping '" + map.name + "'");
  }
  if (unwritten) {
    std::string where;
    for (size_t k = 0; k < mem.dims.size(); ++k)
      where += (k ? ", " : "") + std::to_string(badIndex / mem.stride[k] % mem.n[k]);
    return fail("reads element [" + where + "] of an allocated tensor that was never written");
  }
  return true;
}

// write / atomic_add / atomic_min / atomic_max: `old` receives the old values for atomics.
bool Evaluator::writeOp(const ir::Op &op, const std::vector<TensorPtr> &in, TensorPtr *old) {
  const Tensor &val = *in[0];
  Tensor &mem = *in[1];
  const ScalarType t = mem.dtype;
  const bool fl = isFloat(t);
  Num *o = nullptr;
  if (old) {
    *old = std::make_shared<Tensor>();
    (*old)->dtype = val.dtype;
    (*old)->setShape(val.dims, val.lo, val.n);
    o = (*old)->data.data();
  }
  const Num *v = val.data.data();
  Num *m = mem.data.data();
  auto store = [&](size_t e, int64_t lin) {
    Num cur = m[lin], x = v[e];
    if (o)
      o[e] = cur;
    if (op.kind == ir::OpKind::AtomicAdd)
      x = fl ? fromFloat(t, cur.f + x.f) : fromInt(t, wrapAdd(cur.i, x.i));
    else if (op.kind == ir::OpKind::AtomicMin)
      x = fl ? fromFloat(t, fminimum(cur.f, x.f)) : fromInt(t, std::min(cur.i, x.i));
    else if (op.kind == ir::OpKind::AtomicMax)
      x = fl ? fromFloat(t, fmaximum(cur.f, x.f)) : fromInt(t, std::max(cur.i, x.i));
    m[lin] = x;
    mem.written[lin] = 1;
  };
  if (!op.mapping) {
    std::vector<View> views(1);
    if (!view(mem, val, views[0]))
      return false;
    forEach(val, views, [&](size_t e, const int64_t *s, const int64_t *) { store(e, s[0]); });
    return true;
  }
  // mem[outputs(it)] = reg[inputs(it)]: iterators are the positions along the input dims.
  const ir::Mapping &map = *op.mapping;
  std::vector<int> slotOfDim(val.dims.size(), -1);
  for (size_t k = 0; k < map.inputs.size(); ++k) {
    auto s = map.inputs[k].second.asSymbol();
    for (size_t it = 0; it < map.iterators.size(); ++it)
      if (s && *s == map.iterators[it]) {
        int d = val.dimIndex(dimKey(map.inputs[k].first));
        if (d >= 0)
          slotOfDim[d] = static_cast<int>(it);
      }
  }
  // A data-dependent index (scatter, scatter_add): as in readOp.
  std::vector<std::string> names = map.iterators;
  std::vector<View> views;
  const Tensor *ix = map.valueSymbol.empty() || in.size() < 3 ? nullptr : in[2].get();
  if (ix) {
    names.push_back(map.valueSymbol);
    views.resize(1);
    if (!view(*ix, val, views[0]))
      return false;
  }
  std::vector<const Expr *> idx;
  std::vector<int> memDim;
  for (const auto &[d, e] : map.outputs) {
    idx.push_back(compile(e, names));
    if (!idx.back())
      return false;
    memDim.push_back(mem.dimIndex(dimKey(d)));
  }
  std::vector<int64_t> slots(names.size(), 0);
  bool ok = true;
  forEach(val, views, [&](size_t e, const int64_t *s, const int64_t *pos) {
    for (size_t k = 0; k < slotOfDim.size(); ++k)
      if (slotOfDim[k] >= 0)
        slots[slotOfDim[k]] = pos[k];
    if (ix)
      slots.back() = ix->data[s[0]].i;
    int64_t lin = 0;
    for (size_t j = 0; j < idx.size(); ++j) {
      int64_t p = wave::ref::run(*idx[j], slots.data(), ok) - mem.lo[memDim[j]];
      if (p < 0 || p >= mem.n[memDim[j]]) { // masked off: nothing written, old value 0
        if (o)
          o[e] = Num{};
        return;
      }
      lin += p * mem.stride[memDim[j]];
    }
    store(e, lin);
  });
  if (!ok)
    return fail("division by zero in the mapping '" + map.name + "'");
  return true;
}

bool Evaluator::mmaOp(const ir::Op &op, const std::vector<TensorPtr> &in, TensorPtr &out) {
  const Tensor &lhs = *in[0], &rhs = *in[1], &acc = *in[2];
  const std::string kd = dimKey(op.dims[2]);
  int kl = lhs.dimIndex(kd), kr = rhs.dimIndex(kd);
  if (kl < 0 || kr < 0)
    return fail("the K dim '" + kd + "' is missing from an operand");
  if (lhs.lo[kl] != rhs.lo[kr] || lhs.n[kl] != rhs.n[kr])
    return fail("lhs and rhs cover different ranges of the K dim '" + kd + "'");
  if (!newTensor(op.results[0]->type, out))
    return false;
  std::vector<View> views(3);
  if (!view(lhs, *out, views[0], kd, lhs.lo[kl]) || !view(rhs, *out, views[1], kd, rhs.lo[kr]) ||
      !view(acc, *out, views[2]))
    return false;
  const ScalarType t = out->dtype;
  const bool fl = isFloat(t);
  const int64_t nk = lhs.n[kl], sl = lhs.stride[kl], sr = rhs.stride[kr];
  const Num *a = lhs.data.data(), *b = rhs.data.data(), *c = acc.data.data();
  const bool inFloat = isFloat(lhs.dtype);
  Num *o = out->data.data();
  forEach(*out, views, [&](size_t e, const int64_t *s, const int64_t *) {
    if (fl) {
      double sum = c[s[2]].f;
      for (int64_t k = 0; k < nk; ++k) {
        double x = inFloat ? a[s[0] + k * sl].f : static_cast<double>(a[s[0] + k * sl].i);
        double y = inFloat ? b[s[1] + k * sr].f : static_cast<double>(b[s[1] + k * sr].i);
        sum += x * y;
      }
      o[e] = fromFloat(t, sum);
    } else {
      int64_t sum = c[s[2]].i;
      for (int64_t k = 0; k < nk; ++k)
        sum = wrapAdd(sum, wrapMul(a[s[0] + k * sl].i, b[s[1] + k * sr].i));
      o[e] = fromInt(t, sum);
    }
  });
  return true;
}

bool Evaluator::reduceOp(const ir::Op &op, const std::vector<TensorPtr> &in, TensorPtr &out) {
  const Tensor &x = *in[0];
  const std::string rd = dimKey(op.dims[0]);
  int kx = x.dimIndex(rd);
  if (kx < 0)
    return fail("the reduced dim '" + rd + "' is missing from the operand");
  if (!newTensor(op.results[0]->type, out))
    return false;
  std::vector<View> views(in.size());
  if (!view(x, *out, views[0], rd, x.lo[kx]))
    return false;
  if (in.size() > 1 && !view(*in[1], *out, views[1]))
    return false;
  const ScalarType t = out->dtype;
  const bool fl = isFloat(t), hasInit = in.size() > 1;
  const int64_t nr = x.n[kx], sx = x.stride[kx];
  const Num *a = x.data.data(), *init = hasInit ? in[1]->data.data() : nullptr;
  Num *o = out->data.data();
  const ir::ReduceKind kind = op.reduce;
  forEach(*out, views, [&](size_t e, const int64_t *s, const int64_t *) {
    if (fl) {
      // The identity of max/min is the type's smallest/largest value (docs/language.md section 11).
      double acc = kind == ir::ReduceKind::Sum   ? 0.0
                   : kind == ir::ReduceKind::Max ? -largestFloat(t)
                                                 : largestFloat(t);
      if (hasInit)
        acc = init[s[1]].f;
      for (int64_t k = 0; k < nr; ++k) {
        double y = a[s[0] + k * sx].f;
        acc = kind == ir::ReduceKind::Sum   ? acc + y
              : kind == ir::ReduceKind::Max ? fmaximum(acc, y)
                                            : fminimum(acc, y);
      }
      o[e] = fromFloat(t, acc);
    } else {
      // The identity of max/min is the type's smallest/largest value.
      const bool sgn = isSigned(t) && t != ScalarType::I1;
      const int64_t tmin = !sgn                ? 0
                           : bitWidth(t) == 64 ? std::numeric_limits<int64_t>::min()
                                               : -(int64_t(1) << (bitWidth(t) - 1));
      const int64_t tmax = t == ScalarType::I64 || t == ScalarType::Index
                               ? std::numeric_limits<int64_t>::max()
                               : sgn ? (int64_t(1) << (bitWidth(t) - 1)) - 1
                                     : (int64_t(1) << bitWidth(t)) - 1;
      int64_t acc = kind == ir::ReduceKind::Sum ? 0 : kind == ir::ReduceKind::Max ? tmin : tmax;
      if (hasInit)
        acc = init[s[1]].i;
      for (int64_t k = 0; k < nr; ++k) {
        int64_t y = a[s[0] + k * sx].i;
        acc = kind == ir::ReduceKind::Sum   ? wrapAdd(acc, y)
              : kind == ir::ReduceKind::Max ? std::max(acc, y)
                                            : std::min(acc, y);
      }
      o[e] = fromInt(t, acc);
    }
  });
  return true;
}

// cumsum: element p along D is the sum of the operand's elements 0..p along D (inside the
// current tile when D is iterated), accumulated as sum does (exactly, then rounded once).
bool Evaluator::cumsumOp(const ir::Op &op, const std::vector<TensorPtr> &in, TensorPtr &out) {
  const Tensor &x = *in[0];
  const std::string rd = dimKey(op.dims[0]);
  const int kx = x.dimIndex(rd);
  if (kx < 0)
    return fail("the scanned dim '" + rd + "' is missing from the operand");
  if (!newTensor(op.results[0]->type, out))
    return false;
  const int ko = out->dimIndex(rd);
  std::vector<View> views(1);
  // The view fixes D at the row's first element; the loop below walks the row.
  if (ko < 0 || !view(x, *out, views[0], rd, x.lo[kx]))
    return false;
  const ScalarType t = out->dtype;
  const bool fl = isFloat(t);
  const int64_t sx = x.stride[kx], lo = x.lo[kx];
  const Num *a = x.data.data();
  Num *o = out->data.data();
  forEach(*out, views, [&](size_t e, const int64_t *s, const int64_t *pos) {
    const int64_t last = pos[ko] - lo;
    double facc = 0;
    int64_t iacc = 0;
    for (int64_t k = 0; k <= last; ++k) {
      if (fl)
        facc += a[s[0] + k * sx].f;
      else
        iacc = wrapAdd(iacc, a[s[0] + k * sx].i);
    }
    o[e] = fl ? fromFloat(t, facc) : fromInt(t, iacc);
  });
  return true;
}

// topk: per row along D, the indices ordered by value, largest first, NaN above every number,
// equal values (-0.0 == +0.0) and NaNs by the lower index; result j along K is the j-th of that
// order: its value and its index along D. A row shorter than k leaves index -1 and the type's
// lowest value (-inf for floats) in the places it cannot fill.
bool Evaluator::topkOp(const ir::Op &op, const std::vector<TensorPtr> &in) {
  const Tensor &x = *in[0];
  const std::string rd = dimKey(op.dims[0]), kd = dimKey(op.dims[1]);
  const int kx = x.dimIndex(rd);
  if (kx < 0)
    return fail("the dim '" + rd + "' is missing from the operand");
  TensorPtr vals, idxs;
  if (!newTensor(op.results[0]->type, vals) || !newTensor(op.results[1]->type, idxs))
    return false;
  const int kk = vals->dimIndex(kd);
  std::vector<View> views(1);
  if (kk < 0 || !view(x, *vals, views[0], rd, x.lo[kx]))
    return false;
  const ScalarType t = vals->dtype;
  const bool fl = isFloat(t);
  const int64_t sx = x.stride[kx], n = x.n[kx], lo = x.lo[kx];
  const Num *a = x.data.data();
  auto better = [&](int64_t p, int64_t q) { // element p ranks before element q
    const Num &u = a[p], &v = a[q];
    if (fl) {
      const bool nu = std::isnan(u.f), nv = std::isnan(v.f);
      if (nu != nv)
        return nu;
      if (!nu && u.f != v.f)
        return u.f > v.f;
    } else if (u.i != v.i) {
      return u.i > v.i;
    }
    return p < q;
  };
  std::unordered_map<int64_t, std::vector<int64_t>> order; // row base -> ranked offsets
  // The type's lowest value: -inf, or the most negative finite value where the type has no
  // infinity (f8e4m3fn and the fnuz kinds), as the max reduction's identity.
  const Num lowest = fl ? fromFloat(t, -largestFloat(t))
                        : fromInt(t, isSigned(t) ? (bitWidth(t) == 64
                                                        ? std::numeric_limits<int64_t>::min()
                                                        : -(int64_t(1) << (bitWidth(t) - 1)))
                                                 : 0);
  forEach(*vals, views, [&](size_t e, const int64_t *s, const int64_t *pos) {
    auto it = order.find(s[0]);
    if (it == order.end()) {
      std::vector<int64_t> r(static_cast<size_t>(n));
      for (int64_t k = 0; k < n; ++k)
        r[k] = s[0] + k * sx;
      std::stable_sort(r.begin(), r.end(), better);
      it = order.emplace(s[0], std::move(r)).first;
    }
    const int64_t j = pos[kk];
    if (j < n) {
      vals->data[e] = a[it->second[j]];
      idxs->data[e] = fromInt(ScalarType::I32, lo + (it->second[j] - s[0]) / sx);
    } else {
      vals->data[e] = lowest;
      idxs->data[e] = fromInt(ScalarType::I32, -1);
    }
  });
  env_[op.results[0]] = vals;
  env_[op.results[1]] = idxs;
  return true;
}

bool Evaluator::iterateOp(const ir::Op &op, const std::vector<TensorPtr> &in) {
  const ir::Dim &d = op.dims[0];
  const ir::TilingConstraint *tc = k_.tilingFor(d);
  if (!tc || tc->tile <= 0)
    return fail("iterate over '" + d.str() + "' has no tiling constraint");
  if (tiles_.count(dimKey(d)))
    return fail("nested iterate over '" + d.str() + "'");
  int64_t size;
  if (!dimSize(d, size))
    return false;
  std::vector<TensorPtr> carried = in;
  const ir::Region &body = *op.regions[0];
  for (int64_t lo = 0; lo < size; lo += tc->tile) {
    tiles_[dimKey(d)] = {lo, std::min(tc->tile, size - lo)};
    for (size_t k = 0; k < body.args.size() && k < carried.size(); ++k)
      env_[body.args[k]] = carried[k];
    std::vector<TensorPtr> next;
    if (!region(body, &next)) {
      tiles_.erase(dimKey(d));
      return false;
    }
    if (!next.empty() && tc->end && !keepEndedRows(*tc, lo, carried, next)) {
      tiles_.erase(dimKey(d));
      return false;
    }
    if (!next.empty())
      carried = std::move(next);
  }
  tiles_.erase(dimKey(d));
  for (size_t k = 0; k < op.results.size() && k < carried.size(); ++k)
    env_[op.results[k]] = carried[k];
  return true;
}

// A tiling's `end` (docs/language.md section 5): an element of a carried value whose rows'
// workgroup tiles (of the dims the end names) bound the loop at or below the tile starting at
// `lo` keeps its value from before the tile; the others take the body's.
bool Evaluator::keepEndedRows(const ir::TilingConstraint &tc, int64_t lo,
                              const std::vector<TensorPtr> &before, std::vector<TensorPtr> &after) {
  std::map<std::vector<int64_t>, int64_t> endOf; // by the tiles' ordinals along endDims
  for (size_t k = 0; k < after.size() && k < before.size(); ++k) {
    const Tensor &old = *before[k];
    auto merged = std::make_shared<Tensor>(*after[k]);
    if (merged->dims != old.dims || merged->n != old.n || merged->lo != old.lo)
      return fail("a carried value changed its shape in a loop whose tiling has an end");
    std::vector<int> at;
    std::vector<int64_t> tile, size;
    for (const ir::Dim &d : tc.endDims) {
      const ir::WorkgroupConstraint *wg = k_.workgroupFor(d);
      int64_t sz = 0;
      if (!wg || !dimSize(d, sz))
        return fail("the tiling's end names dim '" + d.str() + "', which has no workgroup tile");
      at.push_back(merged->dimIndex(d.str()));
      if (at.back() < 0)
        return fail("a carried value lacks dim '" + d.str() + "', which the tiling's end names");
      tile.push_back(wg->tile);
      size.push_back(sz);
    }
    std::vector<int64_t> key(at.size());
    for (size_t e = 0; e < merged->data.size(); ++e) {
      for (size_t j = 0; j < at.size(); ++j) {
        const size_t a = static_cast<size_t>(at[j]);
        const int64_t idx = merged->lo[a] + static_cast<int64_t>(e) / merged->stride[a] % merged->n[a];
        key[j] = idx / tile[j];
      }
      auto it = endOf.find(key);
      if (it == endOf.end()) {
        std::map<std::string, int64_t> vals = symbols_;
        for (size_t j = 0; j < at.size(); ++j) {
          vals[ir::tileStartSymbol(tc.endDims[j])] = key[j] * tile[j];
          vals[ir::tileEndSymbol(tc.endDims[j])] = std::min(key[j] * tile[j] + tile[j], size[j]);
        }
        auto end = tc.end->evaluate(vals);
        if (!end)
          return fail("the tiling's end '" + tc.end->str() + "' cannot be evaluated");
        it = endOf.emplace(key, *end).first;
      }
      if (lo >= it->second)
        merged->data[e] = old.data[e];
    }
    after[k] = merged;
  }
  return true;
}

bool Evaluator::ifOp(const ir::Op &op, const std::vector<TensorPtr> &in) {
  bool cond;
  if (op.pred) {
    auto v = op.pred->evaluate(symbols_);
    if (!v)
      return fail("the condition '" + op.pred->str() + "' cannot be evaluated");
    cond = *v;
  } else {
    if (in.empty() || in[0]->size() != 1)
      return fail("the condition is not a scalar");
    cond = in[0]->data[0].i != 0;
  }
  size_t which = cond ? 0 : 1;
  if (which >= op.regions.size())
    return true; // no else branch
  std::vector<TensorPtr> yielded;
  const ir::Op *saved = op_;
  if (!region(*op.regions[which], &yielded))
    return false;
  op_ = saved;
  for (size_t k = 0; k < op.results.size() && k < yielded.size(); ++k)
    env_[op.results[k]] = yielded[k];
  return true;
}

bool Evaluator::evalOp(const ir::Op &op, std::vector<TensorPtr> *yielded) {
  op_ = &op;
  std::vector<TensorPtr> in;
  if (!operands(op, in))
    return false;
  TensorPtr out;
  switch (op.kind) {
  case ir::OpKind::Yield:
    if (yielded)
      *yielded = in;
    return true;
  case ir::OpKind::Barrier: return true;
  case ir::OpKind::Read:
    if (!readOp(op, in, out))
      return false;
    break;
  case ir::OpKind::Write: return writeOp(op, in, nullptr);
  case ir::OpKind::AtomicAdd:
  case ir::OpKind::AtomicMin:
  case ir::OpKind::AtomicMax:
    if (!writeOp(op, in, &out))
      return false;
    break;
  case ir::OpKind::Mma:
    if (!mmaOp(op, in, out))
      return false;
    break;
  case ir::OpKind::Reduce:
    if (!reduceOp(op, in, out))
      return false;
    break;
  case ir::OpKind::Cumsum:
    if (!cumsumOp(op, in, out))
      return false;
    break;
  case ir::OpKind::TopK: return topkOp(op, in);
  case ir::OpKind::Allocate: {
    // A shared tensor is just a tensor here: the whole logical shape, unwritten.
    std::vector<std::string> dims;
    std::vector<int64_t> lo, n;
    for (const auto &dd : op.results[0]->type.shape) {
      int64_t sz;
      if (!dimSize(dd, sz))
        return false;
      dims.push_back(dimKey(dd));
      lo.push_back(0);
      n.push_back(sz);
    }
    out = std::make_shared<Tensor>();
    out->dtype = op.results[0]->type.dtype;
    out->setShape(dims, lo, n);
    out->written.assign(out->size(), 0);
    out->checkUnwritten = true;
    break;
  }
  case ir::OpKind::Iterate: return iterateOp(op, in);
  case ir::OpKind::If: return ifOp(op, in);
  default:
    if (!elementwise(op, in, out))
      return false;
  }
  if (!op.results.empty())
    env_[op.results[0]] = out;
  return true;
}

bool Evaluator::region(const ir::Region &r, std::vector<TensorPtr> *yielded) {
  for (const auto &op : r.ops)
    if (!evalOp(*op, yielded))
      return false;
  return true;
}

bool Evaluator::run(std::vector<HostTensor> &args, std::vector<int64_t> *written) {
  if (args.size() != k_.params.size())
    return fail(fmt::format("kernel '{}' takes {} arguments, {} given", k_.name, k_.params.size(),
                            args.size()));
  std::vector<TensorPtr> mems(args.size());
  for (size_t p = 0; p < args.size(); ++p) {
    const ir::Value *pv = k_.params[p].value;
    const ir::Type &ty = pv->type;
    HostTensor &h = args[p];
    if (h.dtype != ty.dtype)
      return fail(fmt::format("argument '{}' is {}, the kernel takes {}", k_.params[p].name,
                              scalarTypeName(h.dtype), scalarTypeName(ty.dtype)));
    std::vector<int64_t> shape;
    if (!paramShape(k_, p, symbols_, shape, error_))
      return false;
    if (h.shape != shape || h.data.size() != static_cast<size_t>(h.numel()) * elementBytes(h.dtype))
      return fail(fmt::format("argument '{}' has shape [{}], the kernel expects [{}]",
                              k_.params[p].name, fmt::join(h.shape, ", "), fmt::join(shape, ", ")));
    auto t = std::make_shared<Tensor>();
    t->dtype = ty.dtype;
    std::vector<std::string> dims;
    for (const auto &d : ty.shape)
      dims.push_back(dimKey(d));
    t->setShape(dims, std::vector<int64_t>(dims.size(), 0), shape);
    t->written.assign(t->size(), 0);
    const bool fl = isFloat(ty.dtype);
    for (size_t e = 0; e < t->size(); ++e) {
      if (fl)
        t->data[e].f = h.getFloat(static_cast<int64_t>(e));
      else
        t->data[e].i = h.getInt(static_cast<int64_t>(e));
    }
    env_[pv] = t;
    mems[p] = t;
  }
  if (!region(k_.body, nullptr))
    return false;
  if (written)
    written->assign(args.size(), 0);
  for (size_t p = 0; p < args.size(); ++p) {
    const Tensor &t = *mems[p];
    const bool fl = isFloat(t.dtype);
    if (written)
      (*written)[p] = std::count(t.written.begin(), t.written.end(), uint8_t(1));
    for (size_t e = 0; e < t.size(); ++e)
      if (t.written[e]) {
        if (fl)
          args[p].setFloat(static_cast<int64_t>(e), t.data[e].f);
        else
          args[p].setInt(static_cast<int64_t>(e), t.data[e].i);
      }
  }
  return true;
}

} // namespace

bool paramShape(const ir::Kernel &kernel, size_t param,
                const std::map<std::string, int64_t> &symbols, std::vector<int64_t> &shape,
                std::string &error) {
  shape.clear();
  const ir::Type &ty = kernel.params[param].value->type;
  for (const auto &d : ty.shape) {
    auto v = d.size.evaluate(symbols);
    if (!v || *v < 0) {
      error = fmt::format("the size of dim '{}' of '{}' ({}) cannot be evaluated", d.str(),
                          kernel.params[param].name, d.size.str());
      return false;
    }
    shape.push_back(*v);
  }
  return true;
}

bool bindShapes(const ir::Kernel &kernel, const std::vector<HostTensor> &args,
                std::map<std::string, int64_t> &symbols, std::string &error) {
  if (args.size() != kernel.params.size()) {
    error = fmt::format("kernel '{}' takes {} arguments, {} given", kernel.name,
                        kernel.params.size(), args.size());
    return false;
  }
  // Infer: a dim whose size is exactly one unbound dynamic symbol takes the tensor's extent.
  for (size_t p = 0; p < args.size(); ++p) {
    const ir::Type &ty = kernel.params[p].value->type;
    if (args[p].shape.size() != ty.shape.size()) {
      error = fmt::format("argument '{}' has rank {}, the kernel's '{}' has rank {} ({})",
                          kernel.params[p].name, args[p].shape.size(), kernel.params[p].name,
                          ty.shape.size(), ty.str());
      return false;
    }
    for (size_t k = 0; k < ty.shape.size(); ++k) {
      auto s = ty.shape[k].size.asSymbol();
      if (s && !symbols.count(*s))
        symbols[*s] = args[p].shape[k];
    }
  }
  for (const auto &s : kernel.dynamicSymbols)
    if (!symbols.count(s)) {
      error = fmt::format("the dynamic symbol '{}' is not bound (no tensor has it as a whole dim: "
                          "give it with -D{}=VALUE)",
                          s, s);
      return false;
    }
  // Check: every shape agrees, every assumption holds.
  for (size_t p = 0; p < args.size(); ++p) {
    std::vector<int64_t> shape;
    if (!paramShape(kernel, p, symbols, shape, error))
      return false;
    if (shape != args[p].shape) {
      error = fmt::format("argument '{}' has shape [{}], the kernel expects [{}] for {}",
                          kernel.params[p].name, fmt::join(args[p].shape, ", "),
                          fmt::join(shape, ", "), kernel.params[p].value->type.str());
      return false;
    }
  }
  for (size_t a = 0; a < kernel.assumptions.size(); ++a) {
    auto v = kernel.assumptions[a].evaluate(symbols);
    if (v && !*v) {
      error = fmt::format("the shapes violate 'assume({})'",
                          a < kernel.assumptionText.size() ? kernel.assumptionText[a]
                                                           : kernel.assumptions[a].str());
      return false;
    }
  }
  return true;
}

bool evaluate(const ir::Kernel &kernel, std::map<std::string, int64_t> symbols,
              std::vector<HostTensor> &args, std::string &error, std::vector<int64_t> *written) {
  if (!bindShapes(kernel, args, symbols, error))
    return false;
  try {
    Evaluator ev(kernel, std::move(symbols), error);
    return ev.run(args, written);
  } catch (const std::bad_alloc &) {
    error = fmt::format("kernel '{}': out of host memory for the reference evaluation (its "
                        "values take 16 bytes per element)",
                        kernel.name);
    return false;
  }
}

} // namespace wave::ref
