// Element-wise ops: unary, binary, math (with f64 math expanded without libm),
// select and casts; apply_expr; float and integer literals.
#include "codegen/emitter/kernel_emitter.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/SmallString.h"

namespace wave::codegen::detail {

// The laid-out value among `ins` with the most dims, then the most elements per lane (the
// first of equals); null when none is laid out.
const RegVal *KernelEmitter::widestLaidOut(const std::vector<const RegVal *> &ins) {
  const RegVal *like = nullptr;
  for (const RegVal *v : ins)
    if (v->laidOut() && (!like || v->layout.size() > like->layout.size() ||
                         (v->layout.size() == like->layout.size() && v->elems > like->elems)))
      like = v;
  return like;
}

// The layout of an elementwise op whose laid-out operands none of them covers (broadcasts along
// different dims: select(broadcast(x_N) > 0, broadcast(y_M), ...)): the layout of the kernel's
// first unmapped access over exactly the union of their dims (the elements each thread must
// hold of the result), into which every operand is moved (a broadcast along the dims it lacks).
// False when `like` covers the others or no access has those dims.
bool KernelEmitter::unionLayout(const std::vector<const RegVal *> &ins, const RegVal &like,
                                ScalarType t, RegVal &out) const {
  std::set<std::string> dims;
  bool covered = true;
  for (const RegVal *v : ins)
    if (v && v->laidOut())
      for (const auto &[dim, di] : v->layout) {
        dims.insert(dim);
        covered &= like.layout.count(dim) > 0;
      }
  if (covered)
    return false;
  for (const AccessIndex &ai : d_.accesses) {
    if (!ai.op || ai.op->mapping || ai.dims.size() != dims.size())
      continue;
    bool same = true;
    for (const DimIndex &di : ai.dims)
      same &= dims.count(di.dim.str()) > 0 && di.chunk == 0;
    if (!same)
      continue;
    out = layoutFrom(ai.dims, laneVector(ai.dims).elems, t);
    return true;
  }
  return false;
}

bool KernelEmitter::emitElementwise(const ir::Op &op) {
  const ir::Value *res = op.results[0];
  RegVal out;
  out.dtype = res->type.dtype;
  if (mlirType(out.dtype).empty())
    return unsupported(std::string("element type ") + scalarTypeName(out.dtype), op.loc);
  // Opaque floats (fp8 bytes, bf16 as i16 on AMD) are computed on in f32 (narrowClone).
  // The result takes the layout of the operand with the most dims (then the most elements per
  // lane); the other laid-out operands are converted to it, deferred ones computed in it.
  std::vector<const RegVal *> ins;
  bool deferred = false;
  for (const ir::Value *o : op.operands) {
    const RegVal &v = values_.at(o);
    if (mlirType(v.dtype).empty())
      return unsupported(std::string("element type ") + scalarTypeName(v.dtype), op.loc);
    ins.push_back(&v);
    deferred |= v.deferred != nullptr;
  }
  const RegVal *like = widestLaidOut(ins);
  if (!like && deferred) {
    out.deferred = &op;
    values_[res] = std::move(out);
    return true;
  }
  RegVal covering;
  if (like && unionLayout(ins, *like, out.dtype, covering))
    like = &covering;
  if (like) {
    out.layout = like->layout;
    out.elems = like->elems;
    out.vecDim = like->vecDim;
    out.cloneSyms = like->cloneSyms;
  }
  std::vector<RegVal> converted(ins.size());
  for (size_t i = 0; i < ins.size(); ++i) {
    if (!ins[i]->laidOut())
      out.cloneSyms.insert(ins[i]->cloneSyms.begin(), ins[i]->cloneSyms.end());
    else if (ins[i] != like) {
      if (!convertTo(*ins[i], out, converted[i], op.loc))
        return false;
      ins[i] = &converted[i];
    }
  }
  const ScalarType inT = ins.empty() ? out.dtype : ins.back()->dtype;
  for (const auto &a : clonesOver(out.cloneSyms)) {
    if (std::string r; op.kind == ir::OpKind::Select && boundsMaskSelect(op, ins, out, a, r)) {
      out.clones[cloneKey(a, out.cloneSyms)] = r;
      continue;
    }
    std::vector<std::string> x;
    for (const RegVal *v : ins)
      x.push_back(operandIn(*v, out, a));
    out.clones[cloneKey(a, out.cloneSyms)] = elementwiseClone(op, x, inT, out.elems);
    if (failed_)
      return false;
  }
  values_[res] = std::move(out);
  return true;
}

// A select whose condition compares indices (a bounds mask `apply_expr(self_index(D), j =>
// j < E)`, as attention's ragged last key tile writes it; a causal mask `self_index(K2) <=
// self_index(M)`; `&` of such; through broadcasts and permutes): where the test holds for the
// lane's extreme indices in this clone (the largest of the smaller side, the smallest of the
// larger), it holds for every element (they differ from those by constants), and the select
// is its first value; otherwise each element is selected as usual. One compare per leaf and a
// branch instead of a compare and a select per element, so a loop's full tiles skip the mask
// (the element-wise form was 94 of the 560 SASS instructions of attention's loop). A
// self_index narrower than the index wraps only for indices past 2^31: the same results.
bool KernelEmitter::boundsMaskSelect(const ir::Op &op, const std::vector<const RegVal *> &ins,
                                     const RegVal &out, const CloneAssign &a, std::string &r) {
  std::vector<std::string> tests;
  if (!indexTests(ins[0]->deferred, out, a, tests) || tests.empty())
    return false;
  std::string all = tests[0];
  for (size_t i = 1; i < tests.size(); ++i) {
    const std::string both = fresh();
    line(both + " = arith.andi " + all + ", " + tests[i] + " : i1");
    all = both;
  }
  const std::string x1 = operandIn(*ins[1], out, a), x2 = operandIn(*ins[2], out, a);
  const std::string ty = vecType(out.dtype, out.elems), saved = indent_;
  r = fresh();
  auto cache = exprCache_;
  line(r + " = scf.if " + all + " -> (" + ty + ") {");
  line("  scf.yield " + x1 + " : " + ty);
  line("} else {");
  indent_ += "  ";
  const std::string sel =
      elementwiseClone(op, {operandIn(*ins[0], out, a), x1, x2}, ins[2]->dtype, out.elems);
  line("scf.yield " + sel + " : " + ty);
  indent_ = saved;
  exprCache_ = cache;
  line("}");
  return !failed_;
}

// The largest (or smallest) index of dim `dim` among the elements of clone `a` of `out`'s
// layout: the first element's index plus the extreme constant offset of the others.
std::optional<IndexExpr> KernelEmitter::laneIndexExtreme(const std::string &dim,
                                                         const RegVal &out, const CloneAssign &a,
                                                         bool largest) {
  auto it = out.layout.find(dim);
  if (it == out.layout.end())
    return std::nullopt;
  std::map<std::string, IndexExpr> subs{{"$g", IndexExpr(0)}};
  for (const auto &[sym, v] : a)
    subs[sym] = IndexExpr(v);
  const IndexExpr first = facts_.simplify(it->second.start.subs(subs));
  int64_t most = 0;
  for (int64_t g = 1; g < out.elems; ++g) {
    subs["$g"] = IndexExpr(g);
    auto c = facts_.simplify(it->second.start.subs(subs) - first).asInteger();
    if (!c)
      return std::nullopt;
    most = largest ? std::max(most, *c) : std::min(most, *c);
  }
  return facts_.simplify(first + most);
}

// The i1 tests (emitted) whose conjunction says that condition `d` holds for every element of
// clone `a`: false where `d` is not a conjunction of index compares.
bool KernelEmitter::indexTests(const ir::Op *d, const RegVal &out, const CloneAssign &a,
                               std::vector<std::string> &tests) {
  auto through = [&](const ir::Op *o) {
    while (o && (o->kind == ir::OpKind::Broadcast || o->kind == ir::OpKind::Permute))
      o = values_.at(o->operands[0]).deferred;
    return o;
  };
  auto selfDim = [&](const ir::Value *v) -> const ir::Op * {
    const ir::Op *s = through(values_.at(v).deferred);
    return s && s->kind == ir::OpKind::SelfIndex && isInteger(s->results[0]->type.dtype) ? s
                                                                                         : nullptr;
  };
  auto emitTest = [&](const IndexExpr &lhs, bool strict, const IndexExpr &rhs) {
    tests.push_back(fresh());
    line(tests.back() + " = arith.cmpi " + (strict ? "slt" : "sle") + ", " + lowerIndex(lhs) +
         ", " + lowerIndex(rhs) + " : index");
  };
  d = through(d);
  if (!d)
    return false;
  if (d->kind == ir::OpKind::ApplyExpr && d->pred) {
    const ir::Op *self = values_.at(d->operands[0]).deferred;
    const sym::Pred &p = *d->pred;
    if (!self || self->kind != ir::OpKind::SelfIndex || !isInteger(self->results[0]->type.dtype) ||
        p.kind != sym::Pred::Cmp || (p.op != sym::Pred::Lt && p.op != sym::Pred::Le) ||
        !facts_.provesEqual(p.lhs, IndexExpr::symbol(d->lambdaVar)) ||
        p.rhs.dependsOn(d->lambdaVar))
      return false;
    auto most = laneIndexExtreme(self->dims[0].str(), out, a, true);
    if (!most)
      return false;
    emitTest(*most, p.op == sym::Pred::Lt, p.rhs);
    return true;
  }
  if (d->kind != ir::OpKind::Binary)
    return false;
  using B = ir::BinaryKind;
  if (d->binary == B::And)
    return indexTests(values_.at(d->operands[0]).deferred, out, a, tests) &&
           indexTests(values_.at(d->operands[1]).deferred, out, a, tests);
  if (d->binary != B::Lt && d->binary != B::Le && d->binary != B::Gt && d->binary != B::Ge)
    return false;
  const bool swap = d->binary == B::Gt || d->binary == B::Ge;
  const ir::Op *lo = selfDim(d->operands[swap ? 1 : 0]), *hi = selfDim(d->operands[swap ? 0 : 1]);
  if (!lo || !hi)
    return false;
  auto most = laneIndexExtreme(lo->dims[0].str(), out, a, true);
  auto least = laneIndexExtreme(hi->dims[0].str(), out, a, false);
  if (!most || !least)
    return false;
  emitTest(*most, d->binary == B::Lt || d->binary == B::Gt, *least);
  return true;
}

// ---- f64 math without libm ----------------------------------------------------------------
//
// Neither back end lowers llvm.exp2/log2/sin/cos on f64 (AMDGPU: "no libcall available";
// NVPTX: none), and the NVIDIA approximations are f32. So f64 exp, exp2, log, log2, sin, cos and
// tanh are expanded here into arith ops on the element type (docs/language.md section 12, "f64 math"):
// the range reductions and kernel polynomials of fdlibm (its sine, cosine and log kernels), a Taylor
// polynomial for exp, and exponent-field arithmetic for the scaling by 2^n. Accuracy: a few ulp;
// sin/cos reduce by a 212-bit pi/2 in fused multiply-adds, for |x| < 2^52 (NaN beyond).
class F64Math {
public:
  F64Math(std::function<std::string()> fresh, std::function<void(const std::string &)> line,
          int64_t elems)
      : fresh_(std::move(fresh)), line_(std::move(line)), e_(elems) {
    auto vt = [&](const char *s) {
      return e_ == 1 ? std::string(s) : "vector<" + std::to_string(e_) + "x" + s + ">";
    };
    f_ = vt("f64");
    i_ = vt("i64");
    b_ = vt("i1");
  }

  std::string emit(ir::MathKind k, const std::string &x) {
    using M = ir::MathKind;
    switch (k) {
    case M::Exp: return exp(x);
    case M::Exp2: return exp2(x);
    case M::Log: return log(x, false);
    case M::Log2: return log(x, true);
    case M::Sin: return sinCos(x, false);
    case M::Cos: return sinCos(x, true);
    case M::Tanh: return tanh(x);
    default: return "";
    }
  }

private:
  std::string op(const std::string &name, const std::string &a, const std::string &b,
                 const std::string &ty) {
    std::string r = fresh_();
    line_(r + " = " + name + " " + a + ", " + b + " : " + ty);
    return r;
  }
  std::string splat(const std::string &lit, const std::string &ty) {
    std::string r = fresh_();
    line_(r + " = arith.constant " + (e_ == 1 ? lit : "dense<" + lit + ">") + " : " + ty);
    return r;
  }
  std::string c(double v) { return splat(floatLiteral(v, ScalarType::F64), f_); }
  std::string ci(int64_t v) { return splat(std::to_string(v), i_); }
  std::string add(const std::string &a, const std::string &b) { return op("arith.addf", a, b, f_); }
  std::string sub(const std::string &a, const std::string &b) { return op("arith.subf", a, b, f_); }
  std::string mul(const std::string &a, const std::string &b) { return op("arith.mulf", a, b, f_); }
  std::string div(const std::string &a, const std::string &b) { return op("arith.divf", a, b, f_); }
  std::string neg(const std::string &a) {
    std::string r = fresh_();
    line_(r + " = arith.negf " + a + " : " + f_);
    return r;
  }
  std::string cmpf(const char *pred, const std::string &a, const std::string &b) {
    std::string r = fresh_();
    line_(r + " = arith.cmpf " + pred + ", " + a + ", " + b + " : " + f_);
    return r;
  }
  std::string cmpi(const char *pred, const std::string &a, const std::string &b) {
    std::string r = fresh_();
    line_(r + " = arith.cmpi " + pred + ", " + a + ", " + b + " : " + i_);
    return r;
  }
  std::string select(const std::string &cond, const std::string &a, const std::string &b,
                     const std::string &ty) {
    std::string r = fresh_();
    line_(r + " = arith.select " + cond + ", " + a + ", " + b + " : " + b_ + ", " + ty);
    return r;
  }
  std::string cast(const char *name, const std::string &a, const std::string &from,
                   const std::string &to) {
    std::string r = fresh_();
    line_(r + " = " + name + " " + a + " : " + from + " to " + to);
    return r;
  }
  std::string floor(const std::string &a) {
    std::string r = fresh_();
    line_(r + " = llvm.call_intrinsic \"llvm.floor." + std::string(e_ == 1 ? "" : "v" +
          std::to_string(e_)) + "f64\"(" + a + ") : (" + f_ + ") -> " + f_);
    return r;
  }
  // The nearest integer to a (ties up), as a float, and as an i64 (0 for NaN and for
  // magnitudes beyond 2^62, where fptosi would be poison).
  std::pair<std::string, std::string> nearest(const std::string &a) {
    std::string n = floor(add(a, c(0.5)));
    std::string absN = fresh_();
    line_(absN + " = llvm.call_intrinsic \"llvm.fabs." + std::string(e_ == 1 ? "" : "v" +
          std::to_string(e_)) + "f64\"(" + n + ") : (" + f_ + ") -> " + f_);
    std::string small = cmpf("olt", absN, c(0x1p62));
    std::string safe = select(small, n, c(0.0), f_);
    return {safe, cast("arith.fptosi", safe, f_, i_)};
  }
  // 2^k for an integer k in [-1022, 1023], from its exponent field.
  std::string pow2(const std::string &k) {
    std::string biased = op("arith.addi", k, ci(1023), i_);
    std::string bits = op("arith.shli", biased, ci(52), i_);
    return cast("arith.bitcast", bits, i_, f_);
  }
  // p * 2^k for k in [-2044, 2046]: two steps, so that each factor is a normal number and the
  // result is rounded once.
  std::string scale(const std::string &p, const std::string &k) {
    std::string k1 = op("arith.shrsi", k, ci(1), i_);
    std::string k2 = op("arith.subi", k, k1, i_);
    return mul(mul(p, pow2(k1)), pow2(k2));
  }
  // a0 + r*(a1 + r*(a2 + ...)).
  std::string horner(const std::string &r, const std::vector<double> &coef) {
    std::string acc = c(coef.back());
    for (size_t i = coef.size() - 1; i-- > 0;)
      acc = add(mul(acc, r), c(coef[i]));
    return acc;
  }
  // e^r - 1 for |r| <= 0.35 (Taylor to r^13: the next term is below 2^-60 of the result).
  std::string expm1Poly(const std::string &r) {
    std::vector<double> coef; // 1/1!, 1/2!, ..., 1/13!
    double f = 1;
    for (int k = 1; k <= 13; ++k) {
      f /= k;
      coef.push_back(f);
    }
    return mul(r, horner(r, coef));
  }
  // x = n ln2 + r, |r| <= ln2 / 2 (Cody and Waite: n * LN2_HI is exact).
  std::pair<std::string, std::string> reduceLn2(const std::string &x) {
    auto [nf, n] = nearest(mul(x, c(1.4426950408889634)));
    std::string r = sub(sub(x, mul(nf, c(6.93147180369123816490e-01))),
                        mul(nf, c(1.90821492927058770002e-10)));
    return {r, n};
  }
  std::string clamp(const std::string &x, double lo, double hi) {
    // maximumf/minimumf propagate NaN.
    return op("arith.minimumf", op("arith.maximumf", x, c(lo), f_), c(hi), f_);
  }

  std::string exp(const std::string &x) {
    // Beyond [-746, 710] the result is 0 or infinity either way.
    std::string xc = clamp(x, -746.0, 710.0);
    auto [r, n] = reduceLn2(xc);
    return scale(add(expm1Poly(r), c(1.0)), n);
  }
  std::string exp2(const std::string &x) {
    std::string xc = clamp(x, -1080.0, 1030.0);
    auto [nf, n] = nearest(xc);
    std::string r = mul(sub(xc, nf), c(0.69314718055994531)); // x - n is exact
    return scale(add(expm1Poly(r), c(1.0)), n);
  }
  std::string tanh(const std::string &x) {
    // tanh(x) = m / (m + 2), m = e^(2x) - 1 = 2^n (1 + q) - 1 = 2^n q + (2^n - 1): accurate
    // near 0 as well. |x| >= 20 rounds to +-1, so x is clamped there (n stays within 58).
    std::string xc = clamp(x, -20.0, 20.0);
    auto [r, n] = reduceLn2(add(xc, xc));
    std::string q = expm1Poly(r), s = pow2(n);
    std::string m = add(mul(s, q), sub(s, c(1.0)));
    return div(m, add(m, c(2.0)));
  }
  std::string log(const std::string &x, bool base2) {
    // Subnormals are scaled into the normal range first.
    std::string tiny = cmpf("olt", x, c(0x1p-1022));
    std::string xs = select(tiny, mul(x, c(0x1p54)), x, f_);
    std::string bits = cast("arith.bitcast", xs, f_, i_);
    std::string ebits = op("arith.andi", op("arith.shrui", bits, ci(52), i_), ci(0x7FF), i_);
    std::string k0 = op("arith.subi", ebits, ci(1023), i_);
    k0 = select(tiny, op("arith.subi", k0, ci(54), i_), k0, i_);
    std::string mbits = op("arith.ori", op("arith.andi", bits, ci(0x000FFFFFFFFFFFFFLL), i_),
                           ci(0x3FF0000000000000LL), i_);
    std::string m0 = cast("arith.bitcast", mbits, i_, f_); // [1, 2)
    // m in [sqrt(2)/2, sqrt(2)).
    std::string big = cmpf("ogt", m0, c(1.4142135623730951));
    std::string m = select(big, mul(m0, c(0.5)), m0, f_);
    std::string k = select(big, op("arith.addi", k0, ci(1), i_), k0, i_);
    std::string kf = cast("arith.sitofp", k, i_, f_);
    // fdlibm's log: log(1 + f) = f - hfsq + s (hfsq + R(s^2)), s = f / (2 + f).
    std::string f = sub(m, c(1.0));
    std::string s = div(f, add(c(2.0), f));
    std::string z = mul(s, s), w = mul(z, z);
    std::string t1 = mul(w, horner(w, {3.999999999940941908e-01, 2.222219843214978396e-01,
                                       1.531383769920937332e-01}));
    std::string t2 = mul(z, horner(w, {6.666666666666735130e-01, 2.857142874366239149e-01,
                                       1.818357216161805012e-01, 1.479819860511658591e-01}));
    std::string R = add(t2, t1);
    std::string hfsq = mul(mul(c(0.5), f), f);
    std::string logm = sub(f, sub(hfsq, mul(s, add(hfsq, R)))); // log(m)
    std::string res;
    if (base2) {
      res = add(kf, mul(logm, c(1.4426950408889634)));
    } else {
      res = add(mul(kf, c(6.93147180369123816490e-01)),
                add(mul(kf, c(1.90821492927058770002e-10)), logm));
    }
    // x = +inf: inf; x = 0: -inf; x < 0 or NaN: NaN.
    std::string inf = c(INFINITY);
    res = select(cmpf("oeq", x, inf), inf, res, f_);
    res = select(cmpf("oeq", x, c(0.0)), c(-INFINITY), res, f_);
    return select(cmpf("oge", x, c(0.0)), res, c(NAN), f_);
  }
  std::string fma(const std::string &a, const std::string &b, const std::string &c3) {
    std::string r = fresh_();
    line_(r + " = llvm.call_intrinsic \"llvm.fma." + std::string(e_ == 1 ? "" : "v" +
          std::to_string(e_)) + "f64\"(" + a + ", " + b + ", " + c3 + ") : (" + f_ + ", " + f_ +
          ", " + f_ + ") -> " + f_);
    return r;
  }
  // r - n pi/2, with pi/2 as four doubles (212 bits) and each product exact inside an fma.
  std::string subPio2(const std::string &r, const std::string &nf) {
    std::string mn = neg(nf), out = r;
    for (double p : {1.5707963267948966, 6.123233995736766e-17, -1.4973849048591698e-33,
                     5.562271104316826e-50})
      out = fma(mn, c(p), out);
    return out;
  }
  // n mod 4 of an integer-valued float n (exact), as an i64.
  std::string mod4(const std::string &nf) {
    std::string q = sub(nf, mul(c(4.0), floor(mul(nf, c(0.25)))));
    return cast("arith.fptosi", q, f_, i_);
  }
  std::string sinCos(const std::string &x, bool cosine) {
    // x = n pi/2 + r, |r| <= pi/4 (a little more when x * 2/pi rounds across a half: a second
    // step corrects that). n is an integer below 2^53, so n * P1 is exact inside the fma and each
    // step rounds at most at the ulp of r. Beyond |x| = 2^52 n no longer fits a double (a
    // Payne-Hanek reduction would be needed): the result is NaN there (documented, docs/language.md
    // section 12), as it is for infinities and NaN.
    std::string absX = fresh_();
    line_(absX + " = llvm.call_intrinsic \"llvm.fabs." + std::string(e_ == 1 ? "" : "v" +
          std::to_string(e_)) + "f64\"(" + x + ") : (" + f_ + ") -> " + f_);
    std::string inRange = cmpf("olt", absX, c(0x1p52));
    std::string xs = select(inRange, x, c(0.0), f_); // no NaN or infinity below
    std::string twoOverPi = c(6.36619772367581382433e-01);
    std::string n1 = floor(add(mul(xs, twoOverPi), c(0.5)));
    std::string r1 = subPio2(xs, n1);
    std::string n2 = floor(add(mul(r1, twoOverPi), c(0.5)));
    std::string r = subPio2(r1, n2);
    std::string n = op("arith.addi", mod4(n1), mod4(n2), i_);
    std::string z = mul(r, r);
    // fdlibm's sine kernel: sin(r) = r + r^3 (S1 + z P(z)).
    std::string ps = horner(z, {8.33333333332248946124e-03, -1.98412698298579493134e-04,
                                2.75573137070700676789e-06, -2.50507602534068634195e-08,
                                1.58969099521155010221e-10});
    std::string sinR = add(r, mul(mul(z, r), add(c(-1.66666666666666324348e-01), mul(z, ps))));
    // fdlibm's cosine kernel: cos(r) = w + (((1 - w) - z/2) + z^2 C(z)), w = 1 - z/2.
    std::string pc = horner(z, {4.16666666666666019037e-02, -1.38888888888741095749e-03,
                                2.48015872894767294178e-05, -2.75573143513906633035e-07,
                                2.08757232129817482790e-09, -1.13596475577881948265e-11});
    std::string hz = mul(c(0.5), z), w = sub(c(1.0), hz);
    std::string cosR = add(w, add(sub(sub(c(1.0), w), hz), mul(mul(z, z), pc)));
    // Quadrant n mod 4: sin -> sin r, cos r, -sin r, -cos r; cos -> cos r, -sin r, -cos r, sin r.
    std::string q = op("arith.andi", cosine ? op("arith.addi", n, ci(1), i_) : n, ci(3), i_);
    std::string odd = cmpi("ne", op("arith.andi", q, ci(1), i_), ci(0));
    std::string a = select(odd, cosR, sinR, f_);
    std::string negate = cmpi("ne", op("arith.andi", q, ci(2), i_), ci(0));
    std::string res = select(negate, neg(a), a, f_);
    return select(inRange, res, c(NAN), f_);
  }

  std::function<std::string()> fresh_;
  std::function<void(const std::string &)> line_;
  int64_t e_;
  std::string f_, i_, b_;
};

// elementwiseClone of a binary op into `r`: `r`, or "%error" after reporting.
std::string KernelEmitter::binaryClone(const ir::Op &op, const std::vector<std::string> &x,
                                       ScalarType inT, int64_t e, const std::string &r) {
  const std::string ity = vecType(inT, e);
  const bool fl = isFloat(inT), sg = isSigned(inT);
  auto bin = [&](const std::string &o) {
    line(r + " = " + o + " " + x[0] + ", " + x[1] + " : " + ity);
  };
  auto callIntr = [&](const std::string &res, const std::string &name, const std::string &arg) {
    lower_->mathIntrinsic(res, name, arg, inT, e);
  };
  using B = ir::BinaryKind;
  // One row per binary kind: the float op, the signed and unsigned integer ops, or the
  // float and signed/unsigned integer predicates of a comparison (null: no such form).
  struct BinaryForm {
    B kind;
    const char *f, *si, *ui;     // arith ops
    const char *cf, *csi, *cui;  // cmpf / cmpi predicates
  };
  static const BinaryForm forms[] = {
      {B::Add, "arith.addf", "arith.addi", "arith.addi", nullptr, nullptr, nullptr},
      {B::Sub, "arith.subf", "arith.subi", "arith.subi", nullptr, nullptr, nullptr},
      {B::Mul, "arith.mulf", "arith.muli", "arith.muli", nullptr, nullptr, nullptr},
      {B::Div, "arith.divf", "arith.divsi", "arith.divui", nullptr, nullptr, nullptr},
      {B::Mod, "arith.remf", "arith.remsi", "arith.remui", nullptr, nullptr, nullptr},
      {B::FloorDiv, nullptr, "arith.floordivsi", "arith.divui", nullptr, nullptr, nullptr},
      {B::And, nullptr, "arith.andi", "arith.andi", nullptr, nullptr, nullptr},
      {B::Or, nullptr, "arith.ori", "arith.ori", nullptr, nullptr, nullptr},
      {B::Xor, nullptr, "arith.xori", "arith.xori", nullptr, nullptr, nullptr},
      {B::Eq, nullptr, nullptr, nullptr, "oeq", "eq", "eq"},
      {B::Ne, nullptr, nullptr, nullptr, "une", "ne", "ne"},
      {B::Lt, nullptr, nullptr, nullptr, "olt", "slt", "ult"},
      {B::Le, nullptr, nullptr, nullptr, "ole", "sle", "ule"},
      {B::Gt, nullptr, nullptr, nullptr, "ogt", "sgt", "ugt"},
      {B::Ge, nullptr, nullptr, nullptr, "oge", "sge", "uge"},
  };
  const char *pf = nullptr, *pi = nullptr, *cf = nullptr, *ci = nullptr;
  for (const BinaryForm &form : forms)
    if (form.kind == op.binary) {
      pf = form.f;
      pi = sg ? form.si : form.ui;
      cf = form.cf;
      ci = sg ? form.csi : form.cui;
    }
  if (cf) {
    line(r + " = arith." + (fl ? std::string("cmpf ") + cf : std::string("cmpi ") + ci) + ", " +
         x[0] + ", " + x[1] + " : " + ity);
  } else if (op.binary == B::FloorDiv && fl) {
    std::string q = fresh();
    line(q + " = arith.divf " + x[0] + ", " + x[1] + " : " + ity);
    callIntr(r, "floor", q);
  } else if (op.binary == B::Mod && !fl && sg) {
    // Python modulo (the sign of the divisor), as the language's `%`.
    std::string q = fresh(), m = fresh();
    line(q + " = arith.floordivsi " + x[0] + ", " + x[1] + " : " + ity);
    line(m + " = arith.muli " + q + ", " + x[1] + " : " + ity);
    line(r + " = arith.subi " + x[0] + ", " + m + " : " + ity);
  } else if (fl && (op.binary == B::Add || op.binary == B::Sub || op.binary == B::Mul)) {
    // Contractible (a * b + c may become one fused multiply-add), as nvcc and hipcc compile
    // by default (docs/language.md section 13).
    line(r + " = " + pf + " " + x[0] + ", " + x[1] + " fastmath<contract> : " + ity);
  } else if (fl ? pf != nullptr : pi != nullptr) {
    bin(fl ? pf : pi);
  } else {
    return unsupportedValue(std::string("binary ") + ir::binaryKindName(op.binary) + " on " +
                           scalarTypeName(inT),
                       op.loc);
  }
  return r;
}

// elementwiseClone of a math op into `r` (f64 math: F64Math's own result): the result, or
// "%error" after reporting.
std::string KernelEmitter::mathClone(const ir::Op &op, const std::vector<std::string> &x,
                                     ScalarType inT, int64_t e, const std::string &r) {
  const std::string ity = vecType(inT, e);
  const bool fl = isFloat(inT), sg = isSigned(inT);
  auto bin = [&](const std::string &o) {
    line(r + " = " + o + " " + x[0] + ", " + x[1] + " : " + ity);
  };
  auto splatConst = [&](const std::string &lit, const std::string &ty) {
    std::string c = fresh();
    line(c + " = arith.constant " + (e == 1 ? lit : "dense<" + lit + ">") + " : " + ty);
    return c;
  };
  auto callIntr = [&](const std::string &res, const std::string &name, const std::string &arg) {
    lower_->mathIntrinsic(res, name, arg, inT, e);
  };
  auto intr = [&](const std::string &name, const std::vector<std::string> &args) {
    callIntr(r, name, args[0]);
  };
  using M = ir::MathKind;
  if (!fl && op.math != M::Abs && op.math != M::Maximum && op.math != M::Minimum)
    return unsupportedValue(std::string("math ") + ir::mathKindName(op.math) + " on integers",
                       op.loc);
  if (inT == ScalarType::F64) {
    F64Math m([&] { return fresh(); }, [&](const std::string &l) { line(l); }, e);
    std::string v = m.emit(op.math, x[0]);
    if (!v.empty())
      return v;
  }
  auto one = [&]() { return splatConst("1.0", ity); };
  auto scaled = [&](const char *name, const char *scale, bool before) {
    std::string c = splatConst(scale, ity), t = fresh();
    if (before) { // name(x * scale)
      line(t + " = arith.mulf " + x[0] + ", " + c + " : " + ity);
      callIntr(r, name, t);
    } else { // name(x) * scale
      callIntr(t, name, x[0]);
      line(r + " = arith.mulf " + t + ", " + c + " : " + ity);
    }
  };
  switch (op.math) {
  case M::Exp: scaled("exp2", "1.4426950408889634", true); break;
  case M::Exp2: intr("exp2", {x[0]}); break;
  case M::Log: scaled("log2", "0.69314718055994531", false); break;
  case M::Log2: intr("log2", {x[0]}); break;
  case M::Sqrt: intr("sqrt", {x[0]}); break;
  case M::Rsqrt: {
    std::string s = fresh();
    callIntr(s, "sqrt", x[0]);
    line(r + " = arith.divf " + one() + ", " + s + " : " + ity);
    break;
  }
  case M::Reciprocal: line(r + " = arith.divf " + one() + ", " + x[0] + " : " + ity); break;
  case M::Abs:
    if (fl)
      intr("fabs", {x[0]});
    else {
      std::string n = fresh(), c = fresh(), z = splatConst("0", ity);
      line(n + " = arith.subi " + z + ", " + x[0] + " : " + ity);
      line(c + " = arith.cmpi slt, " + x[0] + ", " + z + " : " + ity);
      line(r + " = arith.select " + c + ", " + n + ", " + x[0] + " : " +
           vecType(ScalarType::I1, e) + ", " + ity);
    }
    break;
  case M::Tanh: {
    // tanh(x) = 1 - 2 / (exp(2x) + 1): exact at both tails, no libm call.
    std::string c = splatConst("2.8853900817779268", ity), t = fresh(), ex = fresh(),
                den = fresh(), q = fresh(), two = splatConst("2.0", ity), o = one();
    line(t + " = arith.mulf " + x[0] + ", " + c + " : " + ity);
    callIntr(ex, "exp2", t);
    line(den + " = arith.addf " + ex + ", " + o + " : " + ity);
    line(q + " = arith.divf " + two + ", " + den + " : " + ity);
    line(r + " = arith.subf " + o + ", " + q + " : " + ity);
    break;
  }
  case M::Sin: intr("sin", {x[0]}); break;
  case M::Cos: intr("cos", {x[0]}); break;
  case M::Maximum: bin(fl ? "arith.maximumf" : sg ? "arith.maxsi" : "arith.maxui"); break;
  case M::Minimum: bin(fl ? "arith.minimumf" : sg ? "arith.minsi" : "arith.minui"); break;
  }
  return r;
}

std::string KernelEmitter::elementwiseClone(const ir::Op &op, const std::vector<std::string> &x,
                                            ScalarType inT, int64_t e) {
  const ScalarType outT = op.results[0]->type.dtype;
  const std::string rty = vecType(outT, e), ity = vecType(inT, e);
  const bool fl = isFloat(inT);
  if (op.kind != ir::OpKind::Select &&
      (opaque(outT) || std::any_of(op.operands.begin(), op.operands.end(),
                                   [&](const ir::Value *v) { return opaque(v->type.dtype); })))
    return narrowClone(op, x, e);
  std::string r = fresh();
  auto un = [&](const std::string &o) { line(r + " = " + o + " " + x[0] + " : " + ity); };
  auto splatConst = [&](const std::string &lit, const std::string &ty) {
    std::string c = fresh();
    line(c + " = arith.constant " + (e == 1 ? lit : "dense<" + lit + ">") + " : " + ty);
    return c;
  };
  switch (op.kind) {
  case ir::OpKind::Unary:
    if (op.unary == ir::UnaryKind::Neg) {
      if (fl)
        un("arith.negf");
      else
        line(r + " = arith.subi " + splatConst("0", ity) + ", " + x[0] + " : " + ity);
    } else {
      line(r + " = arith.xori " + x[0] + ", " + splatConst("-1", ity) + " : " + ity);
    }
    break;
  case ir::OpKind::Binary: return binaryClone(op, x, inT, e, r);
  case ir::OpKind::Math: return mathClone(op, x, inT, e, r);
  case ir::OpKind::Select:
    line(r + " = arith.select " + x[0] + ", " + x[1] + ", " + x[2] + " : " +
         vecType(ScalarType::I1, e) + ", " + rty);
    break;
  case ir::OpKind::Cast: return castValue(x[0], inT, outT, e);
  default: unsupported(opKindName(op.kind), op.loc); return "%error";
  }
  return r;
}

std::string KernelEmitter::castValue(const std::string &x, ScalarType inT, ScalarType to,
                                     int64_t e) {
  const unsigned wi = bitWidth(inT), wo = bitWidth(to);
  const bool fl = isFloat(inT), sg = isSigned(inT);
  std::string opName;
  if (mlirType(inT) == mlirType(to))
    return x;
  if (fl && isFloat(to) && wi == wo) // f16 <-> bf16: exactly to f32, then one rounding
    return castValue(castValue(x, inT, ScalarType::F32, e), ScalarType::F32, to, e);
  if (fl && isFloat(to))
    opName = wo > wi ? "arith.extf" : "arith.truncf";
  else if (fl)
    opName = isSigned(to) ? "arith.fptosi" : "arith.fptoui";
  else if (isFloat(to))
    opName = sg ? "arith.sitofp" : "arith.uitofp";
  else if (wo > wi)
    opName = sg && inT != ScalarType::I1 ? "arith.extsi" : "arith.extui";
  else
    opName = "arith.trunci";
  std::string r = fresh();
  line(r + " = " + opName + " " + x + " : " + vecType(inT, e) + " to " + vecType(to, e));
  return r;
}

// ---- fp8 -----------------------------------------------------------------------------------
//
// fp8 values live in registers as their bytes (mlirType: i8). Arithmetic widens them to f32,
// computes there and rounds the result back (docs/language.md section 11): exact for + - * /
// and sqrt, since f32 carries more than twice an fp8 mantissa plus two bits (one f32 rounding
// then one fp8 rounding equals the single rounding of the exact result), and the math
// functions are f32's approximations rounded once more. Casts from f64 and integers round from
// f64 directly (no double rounding). Both conversions are integer arithmetic on the bits, so
// every target and the emulator run the same code.
namespace {
struct Fp8Format {
  int mant, bias;
  enum { IEEE, FN, FNUZ } special; // as reference/numeric.cpp's FloatFormat
  int64_t maxCode, nanCode;        // the largest finite magnitude code; the NaN written
};
Fp8Format fp8Format(ScalarType t) {
  switch (t) {
  case ScalarType::F8E4M3FN: return {3, 7, Fp8Format::FN, 0x7E, 0x7F};
  case ScalarType::F8E5M2: return {2, 15, Fp8Format::IEEE, 0x7B, 0x7E};
  case ScalarType::F8E4M3FNUZ: return {3, 8, Fp8Format::FNUZ, 0x7F, 0x80};
  default: return {2, 16, Fp8Format::FNUZ, 0x7F, 0x80}; // F8E5M2FNUZ
  }
}
} // namespace

std::string KernelEmitter::fp8ToF32(const std::string &x, ScalarType t, int64_t e) {
  // The target's own exact conversion, per byte of 32-bit words (lowering->fp8ByteToF32).
  if (lower_->hasFp8ToF32(t)) {
    std::vector<std::string> out;
    auto convert = [&](const std::string &word, int sel) {
      std::string r = fresh();
      lower_->fp8ByteToF32(r, word, sel, t);
      out.push_back(r);
    };
    if (e % 4 == 0) {
      const std::string wty = "vector<" + std::to_string(e / 4) + "xi32>";
      std::string packed = fresh();
      line(packed + " = vector.bitcast " + x + " : " + vecType(t, e) + " to " + wty);
      for (int64_t w = 0; w < e / 4; ++w) {
        std::string word = fresh();
        line(word + " = vector.extract " + packed + "[" + std::to_string(w) + "] : i32 from " +
             wty);
        for (int sel = 0; sel < 4; ++sel)
          convert(word, sel);
      }
    } else {
      for (int64_t i = 0; i < e; ++i) {
        std::string word = fresh();
        line(word + " = arith.extui " + extractElem(x, t, e, i) + " : i8 to i32");
        convert(word, 0);
      }
    }
    return buildVector(out, ScalarType::F32);
  }
  if (t == ScalarType::F8E5M2) { // the top byte of an f16 (infinities and NaN included)
    const std::string i16 = vecType(ScalarType::I16, e), f16 = vecType(ScalarType::F16, e);
    std::string w = fresh(), eight = fresh(), s = fresh(), h = fresh(), r = fresh();
    line(w + " = arith.extui " + x + " : " + vecType(t, e) + " to " + i16);
    line(eight + " = arith.constant " + (e == 1 ? "8" : "dense<8>") + " : " + i16);
    line(s + " = arith.shli " + w + ", " + eight + " : " + i16);
    line(h + " = arith.bitcast " + s + " : " + i16 + " to " + f16);
    line(r + " = arith.extf " + h + " : " + f16 + " to " + vecType(ScalarType::F32, e));
    return r;
  }
  const Fp8Format f = fp8Format(t);
  const std::string i32 = vecType(ScalarType::I32, e), f32 = vecType(ScalarType::F32, e),
                    i1 = vecType(ScalarType::I1, e);
  auto c = [&](int64_t v) {
    std::string r = fresh();
    const std::string lit = intLiteral(v, ScalarType::I32);
    line(r + " = arith.constant " + (e == 1 ? lit : "dense<" + lit + ">") + " : " + i32);
    return r;
  };
  auto op = [&](const char *name, const std::string &a, const std::string &b) {
    std::string r = fresh();
    line(r + " = " + name + " " + a + ", " + b + " : " + i32);
    return r;
  };
  auto cmp = [&](const char *pred, const std::string &a, const std::string &b) {
    std::string r = fresh();
    line(r + " = arith.cmpi " + pred + ", " + a + ", " + b + " : " + i32);
    return r;
  };
  auto sel = [&](const std::string &p, const std::string &a, const std::string &b) {
    std::string r = fresh();
    line(r + " = arith.select " + p + ", " + a + ", " + b + " : " + i1 + ", " + i32);
    return r;
  };
  std::string b = fresh();
  line(b + " = arith.extui " + x + " : " + vecType(ScalarType::I8, e) + " to " + i32);
  const std::string mag = op("arith.andi", b, c(0x7F)), sgn = op("arith.andi", b, c(0x80)),
                    ex = op("arith.shrui", mag, c(f.mant)),
                    m = op("arith.andi", mag, c((1 << f.mant) - 1));
  // Normal: the magnitude bits moved to f32's fields, the exponent rebiased.
  std::string normal = op("arith.addi", op("arith.shli", mag, c(23 - f.mant)),
                          c(int64_t(127 - f.bias) << 23));
  // Subnormal: m * 2^(1 - bias - mant), an f32 normal (exact).
  std::string mf = fresh(), scale = fresh(), sub = fresh(), subBits = fresh();
  line(mf + " = arith.uitofp " + m + " : " + i32 + " to " + f32);
  const std::string lit = floatLiteral(std::ldexp(1.0, 1 - f.bias - f.mant), ScalarType::F32);
  line(scale + " = arith.constant " + (e == 1 ? lit : "dense<" + lit + ">") + " : " + f32);
  line(sub + " = arith.mulf " + mf + ", " + scale + " : " + f32);
  line(subBits + " = arith.bitcast " + sub + " : " + f32 + " to " + i32);
  std::string bits = op("arith.ori", sel(cmp("eq", ex, c(0)), subBits, normal),
                        op("arith.shli", sgn, c(24)));
  const std::string qnan = c(0x7FC00000);
  switch (f.special) {
  case Fp8Format::IEEE: { // exponent all ones: infinity (m == 0) or NaN
    std::string inf = op("arith.ori", op("arith.shli", sgn, c(24)), c(0x7F800000));
    std::string special = sel(cmp("eq", m, c(0)), inf, qnan);
    bits = sel(cmp("eq", ex, c((1 << (7 - f.mant)) - 1)), special, bits);
    break;
  }
  case Fp8Format::FN: bits = sel(cmp("eq", mag, c(0x7F)), qnan, bits); break;
  case Fp8Format::FNUZ: bits = sel(cmp("eq", b, c(0x80)), qnan, bits); break;
  }
  std::string r = fresh();
  line(r + " = arith.bitcast " + bits + " : " + i32 + " to " + f32);
  return r;
}

std::string KernelEmitter::floatToFp8(const std::string &x, ScalarType from, ScalarType t,
                                      int64_t e) {
  const Fp8Format f = fp8Format(t);
  const bool d = from == ScalarType::F64;
  const int w = d ? 64 : 32, sm = d ? 52 : 23, sb = d ? 1023 : 127;
  const ScalarType it = d ? ScalarType::I64 : ScalarType::I32;
  const std::string ity = vecType(it, e), i1 = vecType(ScalarType::I1, e);
  auto c = [&](int64_t v) {
    std::string r = fresh();
    const std::string lit = intLiteral(v, it);
    line(r + " = arith.constant " + (e == 1 ? lit : "dense<" + lit + ">") + " : " + ity);
    return r;
  };
  auto op = [&](const char *name, const std::string &a, const std::string &b) {
    std::string r = fresh();
    line(r + " = " + name + " " + a + ", " + b + " : " + ity);
    return r;
  };
  auto cmp = [&](const char *pred, const std::string &a, const std::string &b) {
    std::string r = fresh();
    line(r + " = arith.cmpi " + pred + ", " + a + ", " + b + " : " + ity);
    return r;
  };
  auto sel = [&](const std::string &p, const std::string &a, const std::string &b) {
    std::string r = fresh();
    line(r + " = arith.select " + p + ", " + a + ", " + b + " : " + i1 + ", " + ity);
    return r;
  };
  std::string bits = fresh();
  line(bits + " = arith.bitcast " + x + " : " + vecType(from, e) + " to " + ity);
  const int64_t signMask = int64_t(uint64_t(1) << (w - 1));
  const std::string sgn = op("arith.shrui", bits, c(w - 1)),
                    mag = op("arith.andi", bits, c(~signMask)),
                    expF = op("arith.shrui", mag, c(sm));
  const int64_t expAll = (int64_t(1) << (w - 1 - sm)) - 1;
  const std::string isNan = cmp("ugt", mag, c(expAll << sm));
  // Normal results: the source's mantissa rounded (to nearest even) to `mant` bits, the carry
  // running into the exponent, then rebiased. Infinity and overflow give codes above maxCode.
  const int sh = sm - f.mant;
  std::string rn = op("arith.addi", op("arith.addi", mag, c((int64_t(1) << (sh - 1)) - 1)),
                      op("arith.andi", op("arith.shrui", mag, c(sh)), c(1)));
  std::string normal = op("arith.subi", op("arith.shrui", rn, c(sh)),
                          c(int64_t(sb - f.bias) << f.mant));
  // Subnormal results (source exponent below the fp8's least): the mantissa with its implicit
  // bit shifted right by sm - mant + (1 - bias) - exponent, at most sm + 2 (which rounds
  // everything below the smallest subnormal's half, source zeros and subnormals too, to 0).
  std::string full = op("arith.ori", op("arith.andi", mag, c((int64_t(1) << sm) - 1)),
                        c(int64_t(1) << sm));
  std::string shs = op("arith.minui", op("arith.subi", c(sm - f.mant + 1 - f.bias + sb), expF),
                       c(sm + 2));
  std::string half = op("arith.shrui", op("arith.shli", c(1), shs), c(1));
  std::string rs = op("arith.addi", op("arith.addi", full, op("arith.subi", half, c(1))),
                      op("arith.andi", op("arith.shrui", full, shs), c(1)));
  std::string sub = op("arith.shrui", rs, shs);
  std::string code = sel(cmp("uge", expF, c(sb + 1 - f.bias)), normal, sub);
  const std::string over = cmp("ugt", code, c(f.maxCode));
  std::string signed_ = op("arith.ori", op("arith.shli", sgn, c(7)),
                           f.special == Fp8Format::IEEE ? sel(over, c(0x7C), code) : code);
  std::string res = sel(isNan, c(f.nanCode), signed_);
  if (f.special != Fp8Format::IEEE)
    res = sel(over, c(f.nanCode), res);
  if (f.special == Fp8Format::FNUZ) // no negative zero
    res = sel(cmp("eq", code, c(0)), c(0), res);
  std::string r = fresh();
  line(r + " = arith.trunci " + res + " : " + ity + " to " + vecType(t, e));
  return r;
}

std::string KernelEmitter::narrowToF32(const std::string &x, ScalarType t, int64_t e) {
  return isFp8(t) ? fp8ToF32(x, t, e) : bf16ToF32(x, e);
}

std::string KernelEmitter::floatToNarrow(const std::string &x, ScalarType from, ScalarType t,
                                         int64_t e) {
  return isFp8(t) ? floatToFp8(x, from, t, e) : floatToBf16(x, from, e);
}

std::string KernelEmitter::bf16ToF32(const std::string &x, int64_t e) {
  const std::string i32 = vecType(ScalarType::I32, e);
  std::string w = fresh(), k = fresh(), s = fresh(), r = fresh();
  line(w + " = arith.extui " + x + " : " + vecType(ScalarType::I16, e) + " to " + i32);
  line(k + " = arith.constant " + (e == 1 ? "16" : "dense<16>") + " : " + i32);
  line(s + " = arith.shli " + w + ", " + k + " : " + i32);
  line(r + " = arith.bitcast " + s + " : " + i32 + " to " + vecType(ScalarType::F32, e));
  return r;
}

std::string KernelEmitter::floatToBf16(const std::string &x, ScalarType from, int64_t e) {
  const ScalarType F32 = ScalarType::F32;
  const std::string f32 = vecType(F32, e), i1 = vecType(ScalarType::I1, e);
  auto iconst = [&](int64_t v, ScalarType it) {
    std::string r = fresh();
    const std::string lit = intLiteral(v, it);
    line(r + " = arith.constant " + (e == 1 ? lit : "dense<" + lit + ">") + " : " +
         vecType(it, e));
    return r;
  };
  auto iop = [&](const char *name, const std::string &a, const std::string &b, ScalarType it) {
    std::string r = fresh();
    line(r + " = " + name + " " + a + ", " + b + " : " + vecType(it, e));
    return r;
  };
  auto sel = [&](const std::string &p, const std::string &a, const std::string &b,
                 const std::string &ty) {
    std::string r = fresh();
    line(r + " = arith.select " + p + ", " + a + ", " + b + " : " + i1 + ", " + ty);
    return r;
  };
  std::string v = x;
  if (from == ScalarType::F64) {
    // f64 to f32 rounded to odd (toward zero, the last bit set when inexact): f32 keeps more
    // than bf16's mantissa plus two bits, so rounding that to bf16 is the one correct rounding.
    const ScalarType I64 = ScalarType::I64, I32 = ScalarType::I32;
    const std::string f64 = vecType(ScalarType::F64, e), i64 = vecType(I64, e),
                      i32 = vecType(I32, e);
    std::string t = fresh(), back = fresh(), xb = fresh(), bb = fresh(), tb = fresh();
    line(t + " = arith.truncf " + x + " : " + f64 + " to " + f32);
    line(back + " = arith.extf " + t + " : " + f32 + " to " + f64);
    line(xb + " = arith.bitcast " + x + " : " + f64 + " to " + i64);
    line(bb + " = arith.bitcast " + back + " : " + f64 + " to " + i64);
    line(tb + " = arith.bitcast " + t + " : " + f32 + " to " + i32);
    const std::string absMask = iconst(0x7FFFFFFFFFFFFFFFLL, I64);
    const std::string xm = iop("arith.andi", xb, absMask, I64),
                      bm = iop("arith.andi", bb, absMask, I64);
    std::string away = fresh(), exact = fresh(), nan = fresh();
    line(away + " = arith.cmpi ugt, " + bm + ", " + xm + " : " + i64);
    line(exact + " = arith.cmpi eq, " + bm + ", " + xm + " : " + i64);
    line(nan + " = arith.cmpf uno, " + x + ", " + x + " : " + f64);
    std::string toward = sel(away, iop("arith.subi", tb, iconst(1, I32), I32), tb, i32);
    std::string odd = iop("arith.ori", toward, iconst(1, I32), I32);
    std::string keep = fresh();
    line(keep + " = arith.ori " + exact + ", " + nan + " : " + i1);
    std::string bits = sel(keep, tb, odd, i32);
    v = fresh();
    line(v + " = arith.bitcast " + bits + " : " + i32 + " to " + f32);
  }
  // f32 to bf16: to nearest even on the bits (a carry into the exponent rounds up to the next
  // binade or to infinity); NaN stays a quiet NaN of its sign.
  const ScalarType I32 = ScalarType::I32;
  const std::string i32 = vecType(I32, e);
  std::string b = fresh(), nan = fresh();
  line(b + " = arith.bitcast " + v + " : " + f32 + " to " + i32);
  line(nan + " = arith.cmpf uno, " + v + ", " + v + " : " + f32);
  const std::string sixteen = iconst(16, I32);
  std::string lsb = iop("arith.andi", iop("arith.shrui", b, sixteen, I32), iconst(1, I32), I32);
  std::string rounded = iop("arith.shrui",
                            iop("arith.addi", iop("arith.addi", b, iconst(0x7FFF, I32), I32), lsb, I32),
                            sixteen, I32);
  std::string quiet = iop("arith.ori", iop("arith.shrui", b, sixteen, I32), iconst(0x40, I32), I32);
  std::string bits = sel(nan, quiet, rounded, i32);
  std::string r = fresh();
  line(r + " = arith.trunci " + bits + " : " + i32 + " to " + vecType(ScalarType::I16, e));
  return r;
}

std::string KernelEmitter::narrowClone(const ir::Op &op, const std::vector<std::string> &x,
                                       int64_t e) {
  const ScalarType outT = op.results[0]->type.dtype;
  const ScalarType F32 = ScalarType::F32;
  // `v` (e elements of f32) as outT.
  auto result = [&](const std::string &v) {
    return opaque(outT) ? floatToNarrow(v, F32, outT, e) : castValue(v, F32, outT, e);
  };
  if (op.kind == ir::OpKind::Cast) {
    const ScalarType in = op.operands[0]->type.dtype;
    if (opaque(in))
      return result(narrowToF32(x[0], in, e));
    if (in == ScalarType::F32 || in == ScalarType::F64)
      return floatToNarrow(x[0], in, outT, e);
    if (isFloat(in)) // f16, bf16: exact in f32
      return floatToNarrow(castValue(x[0], in, F32, e), F32, outT, e);
    return floatToNarrow(castValue(x[0], in, ScalarType::F64, e), ScalarType::F64, outT, e);
  }
  std::vector<std::string> w;
  for (size_t i = 0; i < x.size(); ++i) {
    const ScalarType t = op.operands[i]->type.dtype;
    w.push_back(opaque(t) ? narrowToF32(x[i], t, e) : x[i]);
  }
  std::string r = fresh();
  const std::string fty = vecType(F32, e);
  if (op.kind == ir::OpKind::Unary && op.unary == ir::UnaryKind::Neg) {
    line(r + " = arith.negf " + w[0] + " : " + fty);
  } else if (op.kind == ir::OpKind::Binary && op.binary == ir::BinaryKind::FloorDiv) {
    // floor of the quotient rounded to the operand type (as the reference evaluator's `//`).
    const ScalarType t = op.operands[0]->type.dtype;
    std::string q = fresh();
    line(q + " = arith.divf " + w[0] + ", " + w[1] + " : " + fty);
    lower_->mathIntrinsic(r, "floor", narrowToF32(floatToNarrow(q, F32, t, e), t, e), F32, e);
  } else if (op.kind == ir::OpKind::Binary) {
    r = binaryClone(op, w, F32, e, r);
  } else if (op.kind == ir::OpKind::Math) {
    r = mathClone(op, w, F32, e, r);
  } else {
    unsupported(std::string(opKindName(op.kind)) + " on " + scalarTypeName(outT) + " values",
                op.loc);
    return "%error";
  }
  if (r == "%error")
    return r;
  // A comparison's i1 stays; anything else is f32, rounded to the result type.
  return outT == ScalarType::I1 ? r : result(r);
}

std::string KernelEmitter::applyExprClone(const ir::Op &op, const std::string &x, ScalarType t,
                                          int64_t e) {
  const ScalarType rt = op.results[0]->type.dtype;
  // The lambda variable is bound to each element in turn, so no lowered expression may be
  // reused across elements.
  auto saved = exprCache_;
  std::vector<std::string> out;
  for (int64_t i = 0; i < e; ++i) {
    exprCache_.clear();
    std::string xi = extractElem(x, t, e, i), v = fresh();
    line(v + " = arith.index_cast " + xi + " : " + mlirType(t) + " to index");
    symbols_[op.lambdaVar] = v;
    if (op.pred) {
      out.push_back(lowerPred(*op.pred));
    } else {
      std::string r = fresh();
      line(r + " = arith.index_cast " + lowerIndex(op.expr) + " : index to " + mlirType(rt));
      out.push_back(r);
    }
  }
  symbols_.erase(op.lambdaVar);
  exprCache_ = saved;
  return buildVector(out, rt);
}

// A float constant of type t as MLIR parses it back exactly: `v` rounded once to t (to nearest,
// ties to even: the reference evaluator's rounding, docs/language.md section 11). A value that t
// holds exactly is printed in decimal (%.17g identifies the double, and so the value, and MLIR's
// float literals need a '.': `1e-08` becomes `1.0e-08`); anything else (a value t rounds,
// infinities, NaN) as t's bit pattern in hex, which MLIR takes as the bits.
std::string floatLiteral(double v, ScalarType t) {
  const llvm::fltSemantics *sem = &llvm::APFloat::IEEEsingle();
  switch (t) {
  case ScalarType::F16: sem = &llvm::APFloat::IEEEhalf(); break;
  case ScalarType::BF16: sem = &llvm::APFloat::BFloat(); break;
  case ScalarType::F64: sem = &llvm::APFloat::IEEEdouble(); break;
  default: break;
  }
  llvm::APFloat f(v);
  bool lost = false;
  llvm::APFloat::opStatus st = f.convert(*sem, llvm::APFloat::rmNearestTiesToEven, &lost);
  if (std::isfinite(v) && f.isFinite() && !lost && st == llvm::APFloat::opOK) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    std::string s = buf;
    if (s.find('.') == std::string::npos) {
      size_t e = s.find_first_of("eE");
      s.insert(e == std::string::npos ? s.size() : e, ".0");
    }
    return s;
  }
  llvm::APInt bits = f.bitcastToAPInt();
  llvm::SmallString<32> hex;
  bits.toStringUnsigned(hex, 16);
  std::string digits(hex.begin(), hex.end());
  for (char &c : digits)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  size_t width = bits.getBitWidth() / 4;
  if (digits.size() < width)
    digits.insert(0, width - digits.size(), '0');
  return "0x" + digits;
}

// An integer constant of type t as MLIR parses it: its bit pattern read as a signed number of
// t's width (sema keeps literals within the width: `literal-out-of-range`).
std::string intLiteral(int64_t v, ScalarType t) {
  unsigned n = bitWidth(t);
  if (n > 0 && n < 64) {
    uint64_t mask = (uint64_t(1) << n) - 1, u = static_cast<uint64_t>(v) & mask;
    if (u >> (n - 1))
      u |= ~mask; // sign-extend
    v = static_cast<int64_t>(u);
  }
  return std::to_string(v);
}

} // namespace wave::codegen::detail
