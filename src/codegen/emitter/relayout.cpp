// Moves between thread layouts through shared memory (docs/language.md section 13): the
// fallback for a value needed in a layout whose elements no lane of the wave holds. The
// shared-memory plan sizes the tiles before emission (planRelayoutTiles, from the shapes of
// the carried-shapes rules, for the conversions the elementwise ops and writes make); convertTo
// takes the planned tile when planRelayout finds the move Impossible (relayoutShared). The
// stores and loads are shared-memory items, so barrier insertion (passes/barrier_insertion.cpp)
// puts the barrier between them and before the tile's next stores. A tile too large for the
// shared memory left goes in pieces (splitRelayouts), one after the other through one tile.
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
  relayouts_[key] = {std::move(p), static_cast<int>(allocs_.size()), 0, {}};
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

// Layout moves whose tile does not fit the shared memory left beside the kernel's other tiles
// go in pieces: piece k is the cells [k * P, (k + 1) * P) of the tile (row-major over its
// extent), stored, then loaded (a barrier between, and another before the next piece's stores:
// barrier insertion sees the same tile), through one tile of P cells. Runs after every tile
// is planned, so the budget is the target's shared memory (the opt-in limit) less the bytes of
// every other tile (promotions, reduction scratch, `allocate`), at least a quarter of it.
void KernelEmitter::splitRelayouts() {
  constexpr int64_t kMaxPieces = 64;
  int64_t others = 0;
  for (const LdsAlloc &al : allocs_)
    if (!al.relayout)
      others += al.bytes * al.stages;
  const int64_t limit = target_.ldsOptInBytes;
  const int64_t budget = std::max<int64_t>(limit - others, limit / 4);
  for (auto &[key, r] : relayouts_) {
    LdsAlloc &al = allocs_[r.alloc];
    const int64_t eb = byteSize(al.dtype), total = r.plan.elements();
    if (al.bytes <= budget || budget < eb)
      continue;
    const int64_t pieces = (al.bytes + budget - 1) / budget;
    if (pieces > kMaxPieces)
      continue; // left whole: the shared-memory plan refuses it (lds-too-large)
    r.piece = (total + pieces - 1) / pieces;
    for (int64_t k = 0; k < pieces; ++k) {
      int64_t cell = -1;
      for (int64_t c = k * r.piece; c < std::min(total, (k + 1) * r.piece) && cell < 0; ++c)
        if (c < static_cast<int64_t>(r.plan.stored.size()) && r.plan.stored[c])
          cell = c - k * r.piece;
      r.pieceCell.push_back(cell);
    }
    al.tile = {r.piece};
    al.pieces = pieces;
    rowMajorTile(al);
  }
}

// The cell of element g of clone a of the source (dst false) or destination layout, and the
// condition that it lies inside the tile (only for the dims that can overrun it).
KernelEmitter::RelayoutPlace KernelEmitter::relayoutPlace(const SharedRelayout &p, bool dst,
                                                          const CloneAssign &a, int64_t g) {
  const auto &local = dst ? p.dstLocal : p.srcLocal;
  const auto &overruns = dst ? p.dstOverruns : p.srcOverruns;
  RelayoutPlace r{IndexExpr(0), ""};
  std::vector<std::string> conds;
  int64_t stride = p.elements();
  for (size_t i = 0; i < p.dims.size(); ++i) {
    stride /= p.extent[i];
    const IndexExpr x = facts_.simplify(indexAt(local[i], a, g));
    r.cell = r.cell + x * stride;
    if (overruns[i]) {
      const std::string xi = lowerIndex(x);
      std::string ge = fresh();
      line(ge + " = arith.cmpi sge, " + xi + ", " + constIndex(0) + " : index");
      conds.push_back(ge);
      conds.push_back(cmpLt(xi, constIndex(p.extent[i])));
    }
  }
  r.cell = facts_.simplify(r.cell);
  r.inside = conds.empty() ? "" : andAll(conds);
  return r;
}

// Whether `cell` lies in piece k of a move in pieces: never (`never` set), always (""), or
// the condition computed at run time. A move in one piece: always.
std::string KernelEmitter::relayoutPiece(const IndexExpr &cell, const PlannedRelayout &r,
                                         int64_t k, bool &never) {
  never = false;
  if (r.piece == 0)
    return "";
  const IndexExpr lo(k * r.piece), hi((k + 1) * r.piece);
  auto proves = [&](sym::Pred::CmpOp op, const IndexExpr &b) {
    return facts_.prove(sym::Pred::cmp(op, cell, b)).value_or(false);
  };
  if (proves(sym::Pred::Lt, lo) || proves(sym::Pred::Ge, hi)) {
    never = true;
    return "";
  }
  std::vector<std::string> conds;
  const bool above = k == 0 || proves(sym::Pred::Ge, lo);
  const bool below = proves(sym::Pred::Lt, hi);
  if (above && below)
    return "";
  const std::string c = lowerIndex(cell);
  if (!above) {
    std::string ge = fresh();
    line(ge + " = arith.cmpi sge, " + c + ", " + constIndex(k * r.piece) + " : index");
    conds.push_back(ge);
  }
  if (!below)
    conds.push_back(cmpLt(c, constIndex((k + 1) * r.piece)));
  return andAll(conds);
}

std::string KernelEmitter::relayoutPtr(int alloc, const std::string &off, ScalarType st) {
  std::string i64 = fresh(), ptr = fresh();
  line(i64 + " = arith.index_cast " + off + " : index to i64");
  line(ptr + " = llvm.getelementptr " + ldsBase(alloc) + "[" + i64 +
       "] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, " + mlirType(st));
  return ptr;
}

// The stores of piece k (of the whole tile when the move is in one piece): one writer per
// element (the owners), inside the tile only; or, where copies have no single writer
// (SharedRelayout::copiesStore), every copy by an atomic exchange of the same bits (atomics do
// not race with each other; barrier insertion orders them like writes).
void KernelEmitter::relayoutStores(const RegVal &v, const PlannedRelayout &r, int64_t k) {
  const SharedRelayout &p = r.plan;
  const ScalarType t = v.dtype, st = allocs_[r.alloc].dtype;
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
      RelayoutPlace at = relayoutPlace(p, /*dst=*/false, a, g);
      bool never = false;
      const std::string piece = relayoutPiece(at.cell, r, k, never);
      if (never)
        continue;
      std::vector<std::string> conds;
      if (auto range = p.ranges.find({a, g}); range != p.ranges.end()) {
        // Only these threads store this element: the others' copies are stored by earlier ones.
        for (int axis = 0; axis < 3; ++axis) {
          const SharedRelayout::ThreadBox &box = range->second;
          if (box.lo[axis] == 0 && box.hi[axis] == d_.block[axis] - 1)
            continue;
          const std::string id = lowerIndex(IndexExpr::symbol("$T" + std::to_string(axis)));
          std::string ge = fresh();
          line(ge + " = arith.cmpi sge, " + id + ", " + constIndex(box.lo[axis]) + " : index");
          conds.push_back(ge);
          conds.push_back(cmpLt(id, constIndex(box.hi[axis] + 1)));
        }
      }
      for (const std::string &c : {at.inside, piece})
        if (!c.empty())
          conds.push_back(c);
      const std::string inside = conds.empty() ? "" : andAll(conds);
      const std::string off = lowerIndex(facts_.simplify(at.cell - IndexExpr(k * r.piece)));
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
      relayoutStore(x, relayoutPtr(r.alloc, off, st), st, p.copiesStore);
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

// The loads of piece k into elems[clone][g]: the elements that lie in it; outside the tile
// (or, for a move in pieces, where the piece may not hold the element) the load reads a
// stored cell of the piece and the element keeps its value (0 at first: outside the tile).
void KernelEmitter::relayoutLoads(RegVal &out, const PlannedRelayout &r, int64_t k,
                                  std::vector<std::vector<std::string>> &elems,
                                  std::string &zero) {
  const SharedRelayout &p = r.plan;
  const ScalarType t = out.dtype, st = allocs_[r.alloc].dtype;
  const std::string ety = mlirType(t), sty = mlirType(st);
  const int64_t written = r.piece ? r.pieceCell[k] : p.writtenCell;
  LdsScope scope(*this, r.alloc, /*write=*/false);
  size_t ci = 0;
  for (const auto &a : clonesOver(out.cloneSyms)) {
    auto &row = elems[ci++];
    for (int64_t g = 0; g < std::max<int64_t>(out.elems, 1); ++g) {
      RelayoutPlace at = relayoutPlace(p, /*dst=*/true, a, g);
      bool never = false;
      const std::string piece = relayoutPiece(at.cell, r, k, never);
      if (never)
        continue;
      std::vector<std::string> conds;
      for (const std::string &c : {at.inside, piece})
        if (!c.empty())
          conds.push_back(c);
      const std::string inside = conds.empty() ? "" : andAll(conds);
      std::string off = lowerIndex(facts_.simplify(at.cell - IndexExpr(k * r.piece)));
      if (!inside.empty()) {
        std::string c = fresh();
        line(c + " = arith.select " + inside + ", " + off + ", " + constIndex(written) +
             " : index");
        off = c;
      }
      // Volatile: LLVM may not widen the load (VectorCombine turns a scalar load inserted into
      // lane 0 of a vector into a vector load when the arena is dereferenceable there), which
      // would read past the tile into bytes nobody wrote or another thread writes.
      std::string x = fresh();
      line(x + " = llvm.load volatile " + relayoutPtr(r.alloc, off, st) + " {alignment = " +
           std::to_string(byteSize(st)) + " : i64} : !llvm.ptr<3> -> " + sty);
      if (st != t) {
        std::string n = fresh();
        line(n + " = arith.trunci " + x + " : i8 to i1");
        x = n;
      }
      if (!inside.empty()) {
        std::string &prev = row[g];
        if (prev.empty()) {
          if (zero.empty()) {
            zero = fresh();
            line(zero + " = arith.constant " + zeroLit(t) + " : " + ety);
          }
          prev = zero;
        }
        std::string s = fresh();
        line(s + " = arith.select " + inside + ", " + x + ", " + prev + " : " + ety);
        x = s;
      }
      row[g] = x;
    }
  }
}

// Emits the planned move of v into `out`'s layout (out has the layout, no clones yet): the
// stores, then the loads, of each piece in turn (one piece unless splitRelayouts split it).
bool KernelEmitter::relayoutShared(const RegVal &v, RegVal &out, const PlannedRelayout &r) {
  const int64_t pieces = r.piece ? static_cast<int64_t>(r.pieceCell.size()) : 1;
  const std::vector<CloneAssign> clones = clonesOver(out.cloneSyms);
  std::vector<std::vector<std::string>> elems(
      clones.size(), std::vector<std::string>(std::max<int64_t>(out.elems, 1)));
  std::string zero;
  for (int64_t k = 0; k < pieces; ++k) {
    if (r.piece && r.pieceCell[k] < 0)
      continue; // no element lies in this piece
    relayoutStores(v, r, k);
    relayoutLoads(out, r, k, elems, zero);
  }
  for (size_t c = 0; c < clones.size(); ++c) {
    for (std::string &x : elems[c])
      if (x.empty()) { // in no piece: outside the tile
        if (zero.empty()) {
          zero = fresh();
          line(zero + " = arith.constant " + zeroLit(out.dtype) + " : " + mlirType(out.dtype));
        }
        x = zero;
      }
    out.clones[cloneKey(clones[c], out.cloneSyms)] = buildVector(elems[c], out.dtype);
  }
  return !failed_;
}

} // namespace wave::codegen::detail
