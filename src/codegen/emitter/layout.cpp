// Thread layouts: moving a value into another layout (register permutation, cross-lane
// shuffles) and deferred values computed in their user's layout.
#include "codegen/emitter/kernel_emitter.h"

namespace wave::codegen::detail {

// ---- thread layouts ----------------------------------------------------------------------

ThreadLayout KernelEmitter::layoutOf(const RegVal &v) const {
  ThreadLayout l;
  for (const auto &[dim, di] : v.layout)
    l.index[dim] = di.start;
  l.elems = v.elems;
  l.cloneSyms = v.cloneSyms;
  return l;
}

RegVal KernelEmitter::layoutFrom(const std::vector<DimIndex> &dims, int64_t elems,
                                 ScalarType t) const {
  RegVal r;
  r.dtype = t;
  r.elems = elems;
  int along = 0;
  for (const auto &di : dims) {
    r.layout[di.dim.str()] = di;
    for (const auto &s : di.start.freeSymbols())
      if (s.rfind("$i_", 0) == 0)
        r.cloneSyms.insert(s);
    if (di.start.dependsOn("$g") && elems > 1) {
      ++along;
      r.vecDim = di.dim.str();
    }
  }
  if (along != 1)
    r.vecDim.clear();
  return r;
}

std::string KernelEmitter::extractElem(const std::string &v, ScalarType t, int64_t e, int64_t i) {
  if (e == 1)
    return v;
  std::string r = fresh();
  line(r + " = vector.extract " + v + "[" + std::to_string(i) + "] : " + mlirType(t) + " from " +
       vecType(t, e));
  return r;
}

std::string KernelEmitter::buildVector(const std::vector<std::string> &elems, ScalarType t) {
  const int64_t e = static_cast<int64_t>(elems.size());
  if (e == 1)
    return elems[0];
  std::string vec = fresh();
  line(vec + " = llvm.mlir.undef : " + vecType(t, e));
  for (int64_t i = 0; i < e; ++i) {
    std::string r = fresh();
    line(r + " = vector.insert " + elems[i] + ", " + vec + " [" + std::to_string(i) + "] : " +
         mlirType(t) + " into " + vecType(t, e));
    vec = r;
  }
  return vec;
}

bool KernelEmitter::convertTo(const RegVal &v, const RegVal &like, RegVal &out,
                              SourceRange loc, bool *asIs) {
  if (asIs)
    *asIs = false;
  out = RegVal();
  out.dtype = v.dtype;
  out.layout = like.layout;
  out.elems = like.elems;
  out.vecDim = like.vecDim;
  out.cloneSyms = like.cloneSyms;
  if (v.deferred) {
    for (const auto &a : clonesOver(out.cloneSyms))
      out.clones[cloneKey(a, out.cloneSyms)] = computeDeferred(*v.deferred, like, a);
    return !failed_;
  }
  if (!v.laidOut()) {
    out = v;
    if (asIs)
      *asIs = true;
    return true;
  }
  const RelayoutPlan plan = planRelayout(layoutOf(v), layoutOf(out), machine_, facts_);
  const ScalarType t = v.dtype;
  auto srcElem = [&](const RelayoutPlan::Pick &p) {
    const std::string &ssa = v.clones.at(cloneKey(plan.srcClones[p.srcClone], v.cloneSyms));
    return extractElem(ssa, t, v.elems, p.elem);
  };
  switch (plan.kind) {
  case RelayoutPlan::Same:
    out = v;
    if (asIs)
      *asIs = true;
    return true;
  case RelayoutPlan::Impossible: {
    // Through shared memory when the plan made a tile for it (relayout.cpp).
    const std::string key = relayoutKey(v, out);
    auto r = relayouts_.find(key);
    if (r != relayouts_.end())
      return relayoutShared(v, out, r->second);
    auto f = relayoutFailures_.find(key);
    return unsupported(DiagId::UnsupportedLayoutChange,
                       "moving a value between thread layouts: " + plan.why +
                           (f != relayoutFailures_.end()
                                ? "; nor through shared memory: " + f->second
                                : std::string()),
                       loc);
  }
  case RelayoutPlan::InLane:
    for (size_t c = 0; c < plan.dstClones.size(); ++c) {
      const auto &picks = plan.inLane[c];
      bool whole = v.elems == out.elems;
      for (int64_t e = 0; e < out.elems; ++e)
        whole &= picks[e].srcClone == picks[0].srcClone && picks[e].elem == e;
      std::string r;
      if (whole) {
        r = v.clones.at(cloneKey(plan.srcClones[picks[0].srcClone], v.cloneSyms));
      } else {
        std::vector<std::string> elems;
        for (const auto &p : picks)
          elems.push_back(srcElem(p));
        r = buildVector(elems, t);
      }
      out.clones[cloneKey(plan.dstClones[c], out.cloneSyms)] = r;
    }
    return true;
  case RelayoutPlan::CrossLane:
    break;
  }
  // Shuffles within the wave: element e of a lane comes from lane `p.lane(l)`, source element
  // `p.candidates[p.choice(l)]`. gpu.shuffle moves 32- or 64-bit values: elements narrower
  // than 32 bits move as the 32-bit words that hold them (two f16, whose half is then picked),
  // each word once per source lane; other narrow values are widened around the shuffle.
  // Lanes are numbered over the group (a warpgroup for wgmma); the plan keeps every source in
  // the lane's own hardware wave, whose lane id a shuffle takes.
  const int64_t w = d_.groupSize;
  const IndexExpr lane = mod(IndexExpr::symbol("$T0"), w);
  auto bitLinear = [&](const BitLinear &f, bool shuffleLane = false) {
    IndexExpr e = f.base;
    for (size_t j = 0; j < f.weight.size(); ++j)
      if (f.weight[j] != 0)
        e = e + f.weight[j] * mod(floorDiv(lane, int64_t{1} << j), 2);
    if (shuffleLane && d_.groupSize != d_.waveSize)
      e = mod(e, static_cast<int64_t>(d_.waveSize));
    return lowerIndex(facts_.simplify(e));
  };
  const std::string ety = mlirType(t);
  const unsigned bits = t == ScalarType::I1 ? 1 : bitWidth(t);
  const int64_t perWord = bits < 32 && bits > 1 && v.elems % (32 / bits) == 0 ? 32 / bits : 1;
  std::map<size_t, std::string> words;                           // source clone -> i32 words
  std::map<std::tuple<std::string, size_t, int64_t>, std::string> moved; // (lane, clone, slot)
  const std::string wty = vecType(ScalarType::I32, v.elems / perWord); // one word: a plain i32
  auto fetch = [&](const std::string &from, const RelayoutPlan::Pick &cand) {
    const int64_t slot = cand.elem / perWord;
    std::string &got = moved[{from, cand.srcClone, slot}];
    if (got.empty()) {
      if (perWord > 1) {
        std::string &ws = words[cand.srcClone];
        if (ws.empty()) {
          ws = fresh();
          line(ws + " = llvm.bitcast " +
               v.clones.at(cloneKey(plan.srcClones[cand.srcClone], v.cloneSyms)) + " : " +
               vecType(t, v.elems) + " to " + wty);
        }
        got = extractElem(ws, ScalarType::I32, v.elems / perWord, slot);
        if (!from.empty())
          got = shuffle("idx", got, ScalarType::I32, from);
      } else {
        got = srcElem(cand);
        if (!from.empty())
          got = shuffle("idx", got, t, from);
      }
    }
    if (perWord == 1)
      return got;
    std::string pair = fresh();
    line(pair + " = llvm.bitcast " + got + " : i32 to " + vecType(t, perWord));
    return extractElem(pair, t, perWord, cand.elem % perWord);
  };
  for (size_t c = 0; c < plan.dstClones.size(); ++c) {
    std::vector<std::string> elems;
    for (int64_t e = 0; e < out.elems; ++e) {
      const RelayoutPlan::LanePick &p = plan.crossLane[c][e];
      std::string from;
      if (!p.lane.isIdentity()) {
        from = fresh();
        line(from + " = arith.index_cast " + bitLinear(p.lane, true) + " : index to i32");
      }
      std::vector<std::string> got;
      for (const auto &cand : p.candidates)
        got.push_back(fetch(from, cand));
      std::string r = got[0];
      if (got.size() > 1) {
        const std::string which = bitLinear(p.choice);
        for (size_t k = 1; k < got.size(); ++k) {
          std::string is = fresh(), sel = fresh();
          line(is + " = arith.cmpi eq, " + which + ", " + constIndex(static_cast<int64_t>(k)) +
               " : index");
          line(sel + " = arith.select " + is + ", " + got[k] + ", " + r + " : " + ety);
          r = sel;
        }
      }
      elems.push_back(r);
    }
    out.clones[cloneKey(plan.dstClones[c], out.cloneSyms)] = buildVector(elems, t);
  }
  return true;
}

std::string KernelEmitter::operandIn(const RegVal &v, const RegVal &like, const CloneAssign &a) {
  if (v.deferred)
    return computeDeferred(*v.deferred, like, a);
  return operandAt(v, a, like.elems);
}

std::string KernelEmitter::computeDeferred(const ir::Op &op, const RegVal &like,
                                       const CloneAssign &a) {
  const int64_t e = like.elems;
  const ScalarType t = op.results[0]->type.dtype;
  switch (op.kind) {
  case ir::OpKind::SelfIndex: {
    auto it = like.layout.find(op.dims[0].str());
    if (it == like.layout.end()) {
      unsupported(DiagId::UnsupportedLayoutChange,
                  "self_index(" + op.dims[0].str() + ") used in a value without that dim", op.loc);
      return "%error";
    }
    if (!isInteger(t) && (!isFloat(t) || opaque(t))) {
      unsupported(std::string("self_index of type ") + scalarTypeName(t), op.loc);
      return "%error";
    }
    std::vector<std::string> elems;
    for (int64_t g = 0; g < e; ++g) {
      std::map<std::string, IndexExpr> subs{{"$g", IndexExpr(g)}};
      for (const auto &[sym, v] : a)
        subs[sym] = IndexExpr(v);
      std::string idx = lowerIndex(facts_.simplify(it->second.start.subs(subs)));
      std::string r = fresh();
      if (isFloat(t)) {
        std::string i = fresh();
        line(i + " = arith.index_cast " + idx + " : index to i64");
        line(r + " = arith.sitofp " + i + " : i64 to " + mlirType(t));
      } else {
        line(r + " = arith.index_cast " + idx + " : index to " + mlirType(t));
      }
      elems.push_back(r);
    }
    return buildVector(elems, t);
  }
  case ir::OpKind::ApplyExpr: {
    const RegVal &x = values_.at(op.operands[0]);
    return applyExprClone(op, operandIn(x, like, a), x.dtype, e);
  }
  case ir::OpKind::Broadcast:
  case ir::OpKind::Permute: return operandIn(values_.at(op.operands[0]), like, a);
  case ir::OpKind::Unary:
  case ir::OpKind::Binary:
  case ir::OpKind::Math:
  case ir::OpKind::Select:
  case ir::OpKind::Cast: {
    std::vector<std::string> x;
    for (const ir::Value *o : op.operands)
      x.push_back(operandIn(values_.at(o), like, a));
    return elementwiseClone(op, x, values_.at(op.operands.back()).dtype, e);
  }
  default:
    unsupported(DiagId::UnsupportedLayoutChange,
                std::string("computing ") + opKindName(op.kind) + " in another op's layout",
                op.loc);
    return "%error";
  }
}

} // namespace wave::codegen::detail
