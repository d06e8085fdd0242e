// Moves between thread layouts through shared memory (docs/language.md section 13): the
// fallback for a value needed in a layout whose elements no lane of the wave holds. The
// shared-memory plan sizes the tiles before emission (planRelayoutTiles, from the shapes of
// the carried-shapes rules, for the conversions the elementwise ops and writes make); convertTo
// takes the planned tile when planRelayout finds the move Impossible (relayoutShared). The
// stores and loads are shared-memory items, so barrier insertion (passes/barrier_insertion.cpp)
// puts the barrier between them and before the tile's next stores.
#include "codegen/emitter/kernel_emitter.h"

namespace wave::codegen::detail {

// A conversion's identity: both layouts and the element type.
std::string KernelEmitter::relayoutKey(const RegVal &from, const RegVal &to) const {
  std::string k = std::string(scalarTypeName(from.dtype)) + "|";
  for (const auto *v : {&from, &to}) {
    for (const auto &[dim, di] : v->layout)
      k += dim + "=" + di.start.str() + ";";
    k += "e" + std::to_string(v->elems) + "|";
  }
  return k;
}

// Plans the tile of one conversion the emitter will make (from -> to) when shuffles cannot.
void KernelEmitter::planRelayoutTile(const ir::Op &op, const RegVal &from, const RegVal &to) {
  if (!from.laidOut() || !to.laidOut() || from.deferred || from.lazy || to.lazy)
    return;
  const std::string key = relayoutKey(from, to);
  if (relayouts_.count(key))
    return;
  const RelayoutPlan plan = planRelayout(layoutOf(from), layoutOf(to), machine_, facts_);
  if (plan.kind != RelayoutPlan::Impossible)
    return;
  SharedRelayout p = planSharedRelayout(layoutOf(from), layoutOf(to), machine_, facts_);
  if (!p.ok) {
    relayoutFailures_[key] = p.why; // said with the unsupported-layout-change (layout.cpp)
    return;
  }
  const ScalarType t = from.dtype == ScalarType::I1 ? ScalarType::I8 : from.dtype;
  LdsAlloc al;
  al.op = &op;
  al.scratch = true;
  al.relayout = true;
  al.dtype = t;
  al.tile = p.extent;
  rowMajorTile(al);
  relayouts_[key] = {std::move(p), static_cast<int>(allocs_.size())};
  allocs_.push_back(al);
}

// The conversions an op will make, for planRelayoutTile: an elementwise op's operands into the
// layout of its result (the widest operand's), a write's value into the write's layout, a
// reduction's init into its result's, yields into an `if`'s results and a loop's carried
// values.
void KernelEmitter::planRelayouts(const ir::Op &op, const ShapeMap &shapes) {
  switch (op.kind) {
  case ir::OpKind::Unary:
  case ir::OpKind::Binary:
  case ir::OpKind::Math:
  case ir::OpKind::Select:
  case ir::OpKind::Cast: {
    std::vector<const RegVal *> ins;
    for (const ir::Value *o : op.operands) {
      const RegVal *v = shapeIn(shapes, o);
      if (!v)
        return;
      ins.push_back(v);
    }
    const RegVal *like = widestLaidOut(ins);
    const RegVal *res = op.results.empty() ? nullptr : shapeIn(shapes, op.results[0]);
    if (!like || !res)
      return;
    for (const RegVal *v : ins) // planRelayoutTile plans only the moves shuffles cannot do
      planRelayoutTile(op, *v, *res);
    return;
  }
  case ir::OpKind::Write: {
    const RegVal *v = shapeIn(shapes, op.operands[0]);
    RegVal to;
    if (v && writeShape(op, to))
      planRelayoutTile(op, *v, to);
    return;
  }
  case ir::OpKind::Reduce: {
    // init into the result's layout (reduce.cpp, step 5).
    const RegVal *init = op.operands.size() > 1 ? shapeIn(shapes, op.operands[1]) : nullptr;
    const RegVal *res = op.results.empty() ? nullptr : shapeIn(shapes, op.results[0]);
    if (init && res)
      planRelayoutTile(op, *init, *res);
    return;
  }
  case ir::OpKind::If:
  case ir::OpKind::Iterate:
    // Each branch's yields into the `if`'s results (control.cpp, emitIf); a loop body's yields
    // into the carried values (iterate.cpp).
    for (const auto &r : op.regions) {
      if (r->ops.empty() || r->ops.back()->kind != ir::OpKind::Yield)
        continue;
      const ir::Op &y = *r->ops.back();
      for (size_t i = 0; i < y.operands.size(); ++i) {
        const ir::Value *to = op.kind == ir::OpKind::If
                                  ? (i < op.results.size() ? op.results[i] : nullptr)
                                  : (i < r->args.size() ? r->args[i] : nullptr);
        const RegVal *from = shapeIn(shapes, y.operands[i]);
        const RegVal *like = to ? shapeIn(shapes, to) : nullptr;
        if (from && like)
          planRelayoutTile(op, *from, *like);
      }
    }
    return;
  default: return;
  }
}

// The layout a write stores from (emitWrite's anchor), from the distribution alone.
bool KernelEmitter::writeShape(const ir::Op &op, RegVal &out) const {
  const AccessIndex *ai = wave::accessOf(d_, op);
  if (!ai)
    return false;
  for (const DimIndex &di : ai->dims)
    if (di.chunk > 0)
      return false;
  int64_t elems = laneVector(ai->dims).elems;
  for (const DimIndex &di : ai->regDims)
    if (op.mapping && di.start.dependsOn("$g") && di.elements > 0)
      elems = std::max(elems, di.elements);
  out = layoutFrom(op.mapping ? ai->regDims : ai->dims, elems, op.operands[0]->type.dtype);
  return true;
}

// One store of a layout move's tile: plain, or an atomic exchange of the element's bits when
// several threads store copies of it (SharedRelayout::copiesStore).
void KernelEmitter::relayoutStore(std::string x, const std::string &ptr, ScalarType st,
                                  bool exchange) {
  const std::string sty = mlirType(st);
  if (!exchange) {
    line("llvm.store " + x + ", " + ptr + " {alignment = " + std::to_string(byteSize(st)) +
         " : i64} : " + sty + ", !llvm.ptr<3>");
    return;
  }
  const std::string ity = "i" + std::to_string(byteSize(st) * 8);
  if (ity != sty) {
    std::string w = fresh();
    line(w + " = llvm.bitcast " + x + " : " + sty + " to " + ity);
    x = w;
  }
  line(fresh() + " = llvm.atomicrmw xchg " + ptr + ", " + x + " monotonic : !llvm.ptr<3>, " +
       ity);
}

// Emits the planned move of v into `out`'s layout (out has the layout, no clones yet).
bool KernelEmitter::relayoutShared(const RegVal &v, RegVal &out, const PlannedRelayout &r) {
  const SharedRelayout &p = r.plan;
  const LdsAlloc &al = allocs_[r.alloc];
  const ScalarType t = v.dtype, st = al.dtype;
  const std::string ety = mlirType(t), sty = mlirType(st);
  // The tile's element at local coordinates `local` (per dim) and whether it lies inside the
  // tile (only for the dims that can overrun).
  auto place = [&](const std::vector<IndexExpr> &local, const std::vector<bool> &overruns,
                   const CloneAssign &a, int64_t g, std::string &inside) {
    IndexExpr off(0);
    std::vector<std::string> conds;
    for (size_t i = 0; i < p.dims.size(); ++i) {
      const IndexExpr x = facts_.simplify(indexAt(local[i], a, g));
      off = off + x * al.strides[i];
      if (overruns[i]) {
        const std::string xi = lowerIndex(x);
        std::string ge = fresh();
        line(ge + " = arith.cmpi sge, " + xi + ", " + constIndex(0) + " : index");
        conds.push_back(ge);
        conds.push_back(cmpLt(xi, constIndex(p.extent[i])));
      }
    }
    inside = conds.empty() ? "" : andAll(conds);
    return lowerIndex(facts_.simplify(off));
  };
  auto gep = [&](const std::string &off) {
    std::string i64 = fresh(), ptr = fresh();
    line(i64 + " = arith.index_cast " + off + " : index to i64");
    line(ptr + " = llvm.getelementptr " + ldsBase(r.alloc) + "[" + i64 +
         "] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, " + sty);
    return ptr;
  };
  const std::string align = std::to_string(byteSize(st));
  // Stores: one writer per element (the owners), inside the tile only; or, where copies have no
  // single writer (SharedRelayout::copiesStore), every copy by an atomic exchange of the same
  // bits (atomics do not race with each other; barrier insertion orders them like writes).
  {
    LdsScope scope(*this, r.alloc, /*write=*/true);
    lds_.exclusive = true;
    if (p.copiesStore)
      lds_.kind = SyncItem::Atomic;
    const std::string owner = ownerCondition(p.owners);
    const std::string saved = indent_;
    auto cache = exprCache_;
    if (!owner.empty()) {
      line("scf.if " + owner + " {");
      indent_ += "  ";
    }
    for (const auto &a : clonesOver(v.cloneSyms)) {
      const std::string &ssa = v.clones.at(cloneKey(a, v.cloneSyms));
      for (int64_t g = 0; g < std::max<int64_t>(v.elems, 1); ++g) {
        if (p.skip.count({a, g}))
          continue;
        std::string inside;
        const std::string off = place(p.srcLocal, p.srcOverruns, a, g, inside);
        auto range = p.ranges.find({a, g});
        if (range != p.ranges.end()) {
          // Only these threads store this element: the others' copies are stored by earlier ones.
          std::vector<std::string> conds;
          for (int k = 0; k < 3; ++k) {
            const SharedRelayout::ThreadBox &box = range->second;
            if (box.lo[k] == 0 && box.hi[k] == d_.block[k] - 1)
              continue;
            const std::string id = lowerIndex(IndexExpr::symbol("$T" + std::to_string(k)));
            std::string ge = fresh();
            line(ge + " = arith.cmpi sge, " + id + ", " + constIndex(box.lo[k]) + " : index");
            conds.push_back(ge);
            conds.push_back(cmpLt(id, constIndex(box.hi[k] + 1)));
          }
          if (!inside.empty())
            conds.push_back(inside);
          inside = conds.empty() ? inside : andAll(conds);
        }
        std::string x = extractElem(ssa, t, v.elems, g);
        if (st != t) {
          std::string w = fresh();
          line(w + " = arith.extui " + x + " : i1 to i8");
          x = w;
        }
        const std::string inner = indent_;
        auto innerCache = exprCache_;
        if (!inside.empty()) {
          line("scf.if " + inside + " {");
          indent_ += "  ";
        }
        relayoutStore(x, gep(off), st, p.copiesStore);
        if (!inside.empty()) {
          exprCache_ = innerCache;
          indent_ = inner;
          line("}");
        }
      }
    }
    if (!owner.empty()) {
      indent_ = saved;
      line("}");
    }
    exprCache_ = cache;
  }
  // Loads: every element of the destination; outside the tile, 0.
  LdsScope scope(*this, r.alloc, /*write=*/false);
  std::string zero;
  for (const auto &a : clonesOver(out.cloneSyms)) {
    std::vector<std::string> elems;
    for (int64_t g = 0; g < std::max<int64_t>(out.elems, 1); ++g) {
      std::string inside;
      std::string off = place(p.dstLocal, p.dstOverruns, a, g, inside);
      if (!inside.empty()) {
        std::string c = fresh();
        line(c + " = arith.select " + inside + ", " + off + ", " + constIndex(p.writtenCell) +
             " : index");
        off = c;
      }
      // Volatile: LLVM may not widen the load (VectorCombine turns a scalar load inserted into
      // lane 0 of a vector into a vector load when the arena is dereferenceable there), which
      // would read past the tile into bytes nobody wrote or another thread writes.
      std::string x = fresh();
      line(x + " = llvm.load volatile " + gep(off) + " {alignment = " + align +
           " : i64} : !llvm.ptr<3> -> " + sty);
      if (st != t) {
        std::string n = fresh();
        line(n + " = arith.trunci " + x + " : i8 to i1");
        x = n;
      }
      if (!inside.empty()) {
        if (zero.empty()) {
          zero = fresh();
          line(zero + " = arith.constant " + zeroLit(t) + " : " + ety);
        }
        std::string s = fresh();
        line(s + " = arith.select " + inside + ", " + x + ", " + zero + " : " + ety);
        x = s;
      }
      elems.push_back(x);
    }
    out.clones[cloneKey(a, out.cloneSyms)] = buildVector(elems, t);
  }
  return !failed_;
}

} // namespace wave::codegen::detail
