#include "passes/distribution.h"

#include "symbolic/compiled_expr.h"

#include <fmt/format.h>

#include <functional>
#include <map>

namespace wave {

using sym::IndexExpr;

namespace {

IndexExpr S(const std::string &name) { return IndexExpr::symbol(name); }
IndexExpr cloneSym(const ir::Dim &d) { return S("$i_" + d.str()); }
const IndexExpr kG = IndexExpr::symbol("$g");

// How an access is laid out over the lanes of a wave.
struct Role {
  enum Kind { Plain, MmaLhs, MmaRhs, MmaAcc, Reduce } kind = Plain;
  const ir::Op *op = nullptr; // the mma or reduce op
};

// Ops that combine the elements of their operand along one dim (dims[0]): reductions, cumsum and
// topk. Their operand takes the reduction layout (lanes along the dim).
bool alongDim(ir::OpKind k) {
  return k == ir::OpKind::Reduce || k == ir::OpKind::Cumsum || k == ir::OpKind::TopK;
}

bool isElementwise(ir::OpKind k) {
  using K = ir::OpKind;
  return k == K::Cast || k == K::Unary || k == K::Binary || k == K::Math || k == K::Select ||
         k == K::Broadcast || k == K::Permute;
}

// Where a value ends up: the first anchor reached through elementwise ops and loops.
Role forwardRole(const ir::Value *v, int depth = 0) {
  if (depth > 32)
    return {};
  for (const ir::Op *user : v->users) {
    if (user->kind == ir::OpKind::Mma) {
      for (size_t i = 0; i < 3; ++i)
        if (user->operands[i] == v)
          return {i == 0 ? Role::MmaLhs : i == 1 ? Role::MmaRhs : Role::MmaAcc, user};
    }
    if (alongDim(user->kind) && user->operands[0] == v)
      return {Role::Reduce, user};
    if (isElementwise(user->kind))
      if (Role r = forwardRole(user->results[0], depth + 1); r.kind != Role::Plain)
        return r;
    if (user->kind == ir::OpKind::Iterate)
      for (size_t i = 0; i < user->operands.size(); ++i)
        if (user->operands[i] == v)
          if (Role r = forwardRole(user->regions[0]->args[i], depth + 1); r.kind != Role::Plain)
            return r;
  }
  return {};
}

Role backwardRole(const ir::Value *v, int depth = 0);

// The role of a read: the anchor its value reaches, else the one the write it ends in takes
// (a read of layer norm's gamma meets the normalised row, anchored on the reductions, only
// in the write: it must take the same layout).
Role readRole(const ir::Value *v) {
  if (Role r = forwardRole(v); r.kind != Role::Plain)
    return r;
  std::vector<const ir::Value *> work{v};
  for (size_t i = 0; i < work.size() && i < 64; ++i)
    for (const ir::Op *user : work[i]->users) {
      if (user->kind == ir::OpKind::Write && user->operands[0] == work[i]) {
        if (Role r = backwardRole(work[i]); r.kind == Role::Reduce)
          return r;
      } else if (isElementwise(user->kind)) {
        work.push_back(user->results[0]);
      }
    }
  // Else the layout of an elementwise partner that an mma produced (an epilogue operand read
  // beside the accumulator): reading it in that layout moves no data between lanes.
  for (size_t i = 0; i < work.size(); ++i)
    for (const ir::Op *user : work[i]->users)
      if (isElementwise(user->kind) && user->kind != ir::OpKind::Broadcast)
        for (const ir::Value *o : user->operands)
          if (o != work[i] && o->type.shape.size() == work[i]->type.shape.size())
            if (Role r = backwardRole(o); r.kind == Role::MmaAcc)
              return r;
  return {};
}

// Where a value comes from: the anchor that produced it.
Role backwardRole(const ir::Value *v, int depth) {
  if (depth > 32 || !v->def)
    return {};
  const ir::Op *def = v->def;
  if (def->kind == ir::OpKind::Mma)
    return {Role::MmaAcc, def};
  if (alongDim(def->kind)) {
    // The result keeps its source's layout on the other dims: that of the anchor that laid
    // out the source (a row sum of values laid out for a column reduction keeps the columns'
    // lanes), else this reduction's own.
    const ir::Value *src = def->operands[0];
    if (Role r = backwardRole(src, depth + 1); r.kind != Role::Plain)
      return r;
    for (const ir::Value *x = src; x && x->def && depth < 32; ++depth) {
      if (x->def->kind == ir::OpKind::Read) {
        if (Role r = forwardRole(x); r.kind == Role::Reduce)
          return r;
        break;
      }
      if (!isElementwise(x->def->kind) || x->def->operands.empty())
        break;
      x = x->def->operands[0];
    }
    return {Role::Reduce, def};
  }
  if (def->kind == ir::OpKind::Iterate || def->kind == ir::OpKind::If) {
    for (size_t i = 0; i < def->results.size(); ++i) {
      if (def->results[i] != v)
        continue;
      for (const auto &region : def->regions)
        if (!region->ops.empty() && region->ops.back()->kind == ir::OpKind::Yield)
          if (Role r = backwardRole(region->ops.back()->operands[i], depth + 1);
              r.kind != Role::Plain)
            return r;
    }
    return {};
  }
  if (isElementwise(def->kind))
    for (const ir::Value *o : def->operands)
      if (Role r = backwardRole(o, depth + 1); r.kind != Role::Plain)
        return r;
  return {};
}

const ExpansionInfo *expansionOf(const Distribution &d, const ir::Dim &dim) {
  for (const auto &e : d.expansion)
    if (e.dim == dim)
      return &e;
  return nullptr;
}

const ir::Op *ownerOf(const ir::Region &body, const ir::Region *r) {
  const ir::Op *found = nullptr;
  ir::walk(body, [&](const ir::Op &op) {
    for (const auto &sub : op.regions)
      if (sub.get() == r)
        found = &op;
  });
  return found;
}

// Whether op sits (at any depth) in the body of an `iterate` over d.
bool insideIterateOf(const ir::Kernel &k, const ir::Op &op, const ir::Dim &d) {
  for (const ir::Region *r = op.parent; r;) {
    const ir::Op *owner = ownerOf(k.body, r);
    if (!owner)
      return false;
    if (owner->kind == ir::OpKind::Iterate && owner->dims[0] == d)
      return true;
    r = owner->parent;
  }
  return false;
}

class Distributor {
public:
  Distributor(const ir::Kernel &k, const TargetInfo &t, DiagnosticEngine &d, Distribution &o)
      : kernel(k), target(t), diags(d), out(o) {}

  bool run() {
    unsigned errors = diags.errorCount();
    const auto &hw = kernel.hardware;
    out.waveSize = hw.threadsPerWave;
    out.groupSize = out.waveSize;
    ir::walk(kernel.body, [&](const ir::Op &op) {
      if (op.kind == ir::OpKind::Mma && op.mma && op.mma->groupWaves > 1)
        out.groupSize = out.waveSize * op.mma->groupWaves;
    });
    for (int a = 0; a < 3; ++a)
      out.wavesPerBlock[a] = hw.wavesPerBlock[a];
    out.block[0] = out.wavesPerBlock[0] * out.groupSize;
    out.block[1] = out.wavesPerBlock[1];
    out.block[2] = out.wavesPerBlock[2];
    out.dynamicSymbols = kernel.dynamicSymbols;
    for (const auto &p : kernel.assumptions)
      out.facts.assume(p);
    for (int a = 0; a < 3; ++a) {
      IndexExpr g = 1;
      for (const auto &w : kernel.workgroups)
        if (w.axis == static_cast<unsigned>(a) && w.primary) {
          IndexExpr n = ceilDiv(w.dim.size, w.tile);
          // A tensor written without this dim (a reduction over it) has elements even when the
          // dim is empty: at least one workgroup runs along it to write them (the identity).
          if (writesWithout(w.dim)) {
            n = max(n, IndexExpr(1));
            out.gridCoversEmpty.push_back(w.dim);
          }
          g = g * n;
        }
      out.grid[a] = out.facts.simplify(g);
      checkGridLimit(a);
    }
    out.facts.setRange("$T0", 0, out.block[0] - 1);
    out.facts.setRange("$T1", 0, out.block[1] - 1);
    out.facts.setRange("$T2", 0, out.block[2] - 1);
    for (int a = 0; a < 3; ++a) {
      auto g = out.grid[a].asInteger();
      out.facts.setRange(fmt::format("$WG{}", a), 0, g ? *g - 1 : sym::Range::kInf);
    }
    for (const auto &t : kernel.tilings) {
      IndexExpr trips = out.facts.simplify(ceilDiv(t.dim.size, t.tile));
      // `end = E`: the tiles that start below E (docs/language.md section 5), E with the
      // workgroup's tile bounds of the dims it names.
      const auto c = trips.asInteger();
      if (t.end)
        trips = out.facts.simplify(min(trips, ceilDiv(max(tilingEnd(t), IndexExpr(0)), t.tile)));
      out.loops.push_back({t.dim, t.tile, trips});
      out.facts.setRange("$IV_" + t.dim.str(), 0, c ? std::max<int64_t>(*c - 1, 0) : sym::Range::kInf);
    }
    collectExpansion();
    checkReductions();
    findNarrowest();
    // A first visit finds the dims lanes run along; the clones of the others step by 1.
    collecting_ = true;
    ir::walk(kernel.body, [&](const ir::Op &op) { visit(op); });
    collecting_ = false;
    out.accesses.clear();
    if (diags.errorCount() != errors)
      return false;
    settleRowDims();
    if (diags.errorCount() != errors)
      return false;
    ir::walk(kernel.body, [&](const ir::Op &op) { visit(op); });
    return diags.errorCount() == errors;
  }

private:
  // A tiling's end in the workgroup's terms: tile_start(D) is $WGa * tile, tile_end(D) that
  // plus the tile, at most D's size.
  IndexExpr tilingEnd(const ir::TilingConstraint &t) const {
    std::map<std::string, IndexExpr> subs;
    for (const ir::Dim &d : t.endDims) {
      const ir::WorkgroupConstraint *wg = kernel.workgroupFor(d);
      const IndexExpr start = S(fmt::format("$WG{}", wg->axis)) * wg->tile;
      subs[ir::tileStartSymbol(d)] = start;
      subs[ir::tileEndSymbol(d)] = min(start + wg->tile, d.size);
    }
    return t.end->subs(subs);
  }

  // Whether some write or atomic of the kernel goes to a tensor that lacks dim `d`.
  bool writesWithout(const ir::Dim &d) const {
    bool found = false;
    ir::walk(kernel.body, [&](const ir::Op &op) {
      if (op.operands.size() < 2 || (op.kind != ir::OpKind::Write && !isAtomicOp(op.kind)))
        return;
      const ir::Shape &shape = op.operands[1]->type.shape;
      found |= std::find(shape.begin(), shape.end(), d) == shape.end();
    });
    return found;
  }
  static bool isAtomicOp(ir::OpKind k) {
    return k == ir::OpKind::AtomicAdd || k == ir::OpKind::AtomicMin ||
           k == ir::OpKind::AtomicMax;
  }

  // A grid the bound sizes make too large for the target fails here; a dynamic one is checked
  // by the host stub at launch.
  void checkGridLimit(int axis) {
    auto g = out.grid[axis].asInteger();
    if (!g)
      return;
    uint64_t limit = target.maxGrid[axis];
    if (target.maxGridThreads)
      limit = std::min<uint64_t>(limit, target.maxGridThreads / out.block[axis]);
    if (static_cast<uint64_t>(*g) <= limit)
      return;
    const ir::WorkgroupConstraint *first = nullptr;
    for (const auto &w : kernel.workgroups)
      if (!first && w.axis == static_cast<unsigned>(axis))
        first = &w;
    diags.report(DiagId::GridTooLarge, first ? first->loc : kernel.loc,
                 {std::to_string(axis), std::to_string(*g), target.name, std::to_string(limit)});
  }

  // The vector shape each mma gives its dims: M, N and K of its kind. When several mmas share a
  // dim, the first one in program order decides (the code generator reports a chained mma whose
  // kind disagrees).
  // The step of each dim an mma uses: the first mma's M, N or K. A warpgroup mma (wgmma) walks
  // its K in steps of 16 inside a wider step, so a dim that is one wgmma's K and another's M or
  // N (attention's keys: the N of S = Q·Kᵀ, the K of O = P·V) takes the wider step when the
  // K divides it.
  std::vector<std::pair<ir::Dim, int64_t>> mmaVectorShapes() const {
    std::vector<std::pair<ir::Dim, int64_t>> out;
    std::vector<bool> fromGroupK;
    ir::walk(kernel.body, [&](const ir::Op &op) {
      if (op.kind != ir::OpKind::Mma || !op.mma)
        return;
      const bool group = op.mma->family == MmaFamily::Wgmma;
      const unsigned shape[3] = {op.mma->m, op.mma->n, op.mma->k};
      for (int r = 0; r < 3; ++r) {
        const int64_t v = shape[r];
        size_t i = 0;
        while (i < out.size() && !(out[i].first == op.dims[r]))
          ++i;
        if (i == out.size()) {
          out.push_back({op.dims[r], v});
          fromGroupK.push_back(group && r == 2);
        } else if (fromGroupK[i] && group && r != 2 && v % out[i].second == 0) {
          out[i].second = v;
          fromGroupK[i] = false;
        }
      }
    });
    return out;
  }

  // The dims an expansion clone walks, with the step (vector shape) of each and the clone
  // count that covers one wave's extent of it. A dim lanes never run along (a row dim of every
  // layout that touches it) is walked one element per clone: its vector shape becomes 1 in
  // settleRowDims, after the first visit of the accesses has shown where lanes run.
  void collectExpansion() {
    ir::walk(kernel.body, [&](const ir::Op &op) {
      if (alongDim(op.kind) && !ir::hasDim(reducedDims_, op.dims[0]))
        reducedDims_.push_back(op.dims[0]);
    });
    const auto mmaShapes = mmaVectorShapes();
    std::vector<ir::Dim> dims;
    auto add = [&](const ir::Dim &d) {
      if (!ir::hasDim(dims, d))
        dims.push_back(d);
    };
    for (const auto &w : kernel.workgroups)
      add(w.dim);
    for (const auto &t : kernel.tilings)
      add(t.dim);
    // A static dim no constraint splits but an mma uses (attention's head dim as the K of one
    // product and the M of the next) is walked by clones of the kind's size.
    for (const auto &[d, v] : mmaShapes)
      if (!kernel.workgroupFor(d) && !kernel.tilingFor(d) && d.size.asInteger())
        add(d);
    // Every other static dim that no constraint splits and that a tensor access touches is
    // walked by clones of its vector shape (the wave size when none is given), unless a
    // reduction is over it (reductions walk their rows themselves: lanes, then a stream of
    // chunks).
    ir::walk(kernel.body, [&](const ir::Op &op) {
      const ir::Value *mem = accessedTensor(op);
      if (!mem)
        return;
      for (const auto &d : mem->type.shape) {
        auto size = d.size.asInteger();
        if (split(d) || !size || *size <= 1 || reduced(d))
          continue;
        add(d);
      }
    });
    for (const auto &d : dims) {
      IndexExpr vs;
      const int64_t *fromMma = nullptr;
      for (const auto &[md, v] : mmaShapes)
        if (md == d)
          fromMma = &v;
      if (fromMma) {
        vs = IndexExpr(*fromMma);
      } else if (auto given = kernel.vectorShapeFor(d)) {
        vs = *given;
      } else if (const auto *w = kernel.waveFor(d)) {
        vs = w->tile;
      } else if (const auto *wg = kernel.workgroupFor(d)) {
        vs = wg->tile;
      } else if (const auto *t = kernel.tilingFor(d)) {
        vs = t->tile;
      } else {
        vs = IndexExpr(static_cast<int64_t>(out.groupSize));
      }
      // A vector shape at least the dim's static size is the whole dim.
      if (auto size = d.size.asInteger(), v = vs.asInteger();
          size && v && *v > *size && !split(d))
        vs = IndexExpr(std::max<int64_t>(*size, 1));
      out.expansion.push_back({d, vs, cloneCount(d, vs)});
      out.facts.setRange("$i_" + d.str(), 0, out.expansion.back().count - 1);
    }
    checkWaveCoverage();
    checkMmaSpans();
  }

  // An mma walks each of its dims in steps of its kind's M, N or K, which must divide the
  // extent one wave covers (a workgroup tile of 8 under a 16-row kind would overlap the next
  // tile and overrun the shared-memory tile sized for 8 rows).
  void checkMmaSpans() {
    ir::walk(kernel.body, [&](const ir::Op &op) {
      if (op.kind != ir::OpKind::Mma || !op.mma)
        return;
      for (int r = 0; r < 3; ++r) {
        const ir::Dim &d = op.dims[r];
        const ExpansionInfo *x = expansionOf(out, d);
        auto v = x ? x->vectorShape.asInteger() : std::nullopt;
        auto span = waveSpan(d);
        if (!v || !span || *span % *v == 0)
          continue;
        diags.report(DiagId::BadVectorShape, op.loc,
                     {d.str(), fmt::format("is {}, the step of mma kind {} along it, which does "
                                           "not divide {}, the extent of '{}' one wave covers "
                                           "(its wave, workgroup or tiling tile)",
                                           *v, op.mma->name, *span, d.str())});
      }
    });
  }

  // The extent of d that one wave covers: its wave tile when waves split it, else its
  // workgroup tile, its tiling tile, or (no constraint) the whole static dim.
  std::optional<int64_t> waveSpan(const ir::Dim &d) const {
    if (const auto *wg = kernel.workgroupFor(d)) {
      if (const auto *w = kernel.waveFor(d); w && out.wavesPerBlock[wg->axis] > 1)
        return w->tile;
      return wg->tile;
    }
    if (const auto *t = kernel.tilingFor(d))
      return t->tile;
    return d.size.asInteger();
  }

  // Clones of vector shape vs that cover one wave's span of d (uniformIndex steps them by vs).
  int64_t cloneCount(const ir::Dim &d, const IndexExpr &vs) const {
    auto v = vs.asInteger();
    auto span = waveSpan(d);
    if (!v || *v <= 0 || !span)
      return 1;
    return std::max<int64_t>((*span + *v - 1) / *v, 1);
  }

  // The waves along a workgroup's axis, each `wave tile` apart (uniformIndex), must cover the
  // workgroup tile exactly: fewer leave elements to no thread, more reach into the next
  // workgroup's tile (and past the tensor's end without a mask).
  void checkWaveCoverage() {
    for (const auto &w : kernel.waves) {
      const auto *wg = kernel.workgroupFor(w.dim);
      if (!wg)
        continue;
      const int64_t n = out.wavesPerBlock[wg->axis];
      if (n <= 1 || n * w.tile == wg->tile)
        continue;
      diags.report(DiagId::WaveCoverage, w.loc,
                   {std::to_string(n), std::to_string(wg->axis), std::to_string(w.tile),
                    w.dim.str(), std::to_string(n * w.tile), std::to_string(wg->tile)});
    }
  }

  // Whether a workgroup or tiling constraint splits d.
  bool split(const ir::Dim &d) const { return kernel.workgroupFor(d) || kernel.tilingFor(d); }
  bool reduced(const ir::Dim &d) const { return ir::hasDim(reducedDims_, d); }
  std::vector<ir::Dim> reducedDims_; // the dims some reduction is over

  static const ir::Value *accessedTensor(const ir::Op &op) {
    if (op.kind == ir::OpKind::Read)
      return op.operands[0];
    if (op.kind == ir::OpKind::Write || op.kind == ir::OpKind::AtomicAdd ||
        op.kind == ir::OpKind::AtomicMin || op.kind == ir::OpKind::AtomicMax)
      return op.operands[1];
    return nullptr;
  }

  // After the first visit: every register dim of an access that no lane runs along is walked
  // by the clones alone, one element each, so its clones must step by 1. A dim whose lanes run
  // along it in one access and that is a row dim in another keeps its vector shape only when
  // that is 1; otherwise the row access would miss elements, and it is refused. A dynamic dim
  // that no constraint splits and no lane runs along has no clones at all: refused.
  void settleRowDims() {
    for (const auto &[name, use] : rowUse_) {
      const ir::Dim &d = use.second;
      ExpansionInfo *x = nullptr;
      for (auto &e : out.expansion)
        if (e.dim == d)
          x = &e;
      if (x && x->vectorShape.asInteger() == std::optional<int64_t>(1))
        continue;
      if (auto lane = laneUse_.find(name); lane != laneUse_.end()) {
        if (!x) { // a dynamic row that another access streams: this one walks it in a loop
          if (!split(d) && !d.size.asInteger() &&
              !out.facts.prove(sym::Pred::cmp(sym::Pred::Le, d.size, IndexExpr(1))).value_or(false) &&
              walked_.insert(name).second)
            bindIterator(out.facts, "$W_" + name, d);
          continue;
        }
        diags.report(
            DiagId::BadVectorShape, use.first->loc,
            {d.str(), fmt::format("is {}: the lanes run along '{}' at {}:{}, but this access "
                                  "has no lane along it and would walk it one element per "
                                  "vector tile (not supported yet: use vector shape 1)",
                                  x->vectorShape.str(), d.str(), lane->second.first->loc.begin.line,
                                  lane->second.first->loc.begin.col)});
        continue;
      }
      if (x) {
        x->vectorShape = IndexExpr(1);
        x->count = cloneCount(d, x->vectorShape);
        out.facts.setRange("$i_" + d.str(), 0, x->count - 1);
        continue;
      }
      if (split(d) ||
          out.facts.prove(sym::Pred::cmp(sym::Pred::Le, d.size, IndexExpr(1))).value_or(false))
        continue;
      diags.report(DiagId::DimNotCovered, use.first->loc,
                   {d.str(), "its size is dynamic, no workgroup or tiling constraint splits it "
                             "and no lane of this access runs along it; add workgroup(" +
                                 d.str() + ", TILE, dim = ...)"});
    }
  }
  // Per dim name: the first access whose lanes run along it / whose clones alone walk it.
  std::map<std::string, std::pair<const ir::Op *, ir::Dim>> laneUse_, rowUse_;
  // Dims walked by loops (DimIndex::walked): a row dim here, a streamed lane dim elsewhere.
  std::set<std::string> walked_;
  bool collecting_ = false;

  // visit's thread terms and element counts of an MMA operand or accumulator (`role`): the
  // kind's lane layout over the product's row and column dims.
  void mmaLayout(const ir::Op &op, const Role &role, const IndexExpr &lane, AccessIndex &acc,
                 std::vector<std::pair<ir::Dim, IndexExpr>> &thread,
                 std::vector<std::pair<ir::Dim, IndexExpr>> &elements) {
    const MmaKind &k = *role.op->mma;
    const LaneLayout &layout =
        role.kind == Role::MmaLhs ? k.a : role.kind == Role::MmaRhs ? k.b : k.c;
    const ir::Dim &rowDim = role.kind == Role::MmaRhs ? role.op->dims[1] : role.op->dims[0];
    const ir::Dim &colDim = role.kind == Role::MmaAcc ? role.op->dims[1] : role.op->dims[2];
    static const char *names[] = {"", "mma lhs", "mma rhs", "mma accumulator"};
    acc.anchor = fmt::format("{} {}", names[role.kind], k.name);
    thread.push_back({rowDim, layout.row(lane, kG)});
    thread.push_back({colDim, layout.col(lane, kG)});
    const int64_t per = mmaOperandElements(out, *role.op, static_cast<int>(role.kind) - 1);
    elements.push_back({rowDim, per});
    elements.push_back({colDim, per});
    if (!collecting_ && op.ept && *op.ept != static_cast<int64_t>(layout.elements) &&
        role.kind != Role::MmaAcc)
      diags.report(DiagId::EptConflict, op.loc,
                   {std::to_string(*op.ept),
                    fmt::format("conflicts with the {} layout of {}, which holds {} elements "
                                "per lane",
                                names[role.kind], k.name, layout.elements)});
  }

  // visit's thread terms and element counts of a plain read or write of register shape `shape`
  // (memory shape `memShape`): its lanes along one dim, ept elements each, or a streamed row.
  // Returns the lane dim when its lanes overrun its vector tile (null otherwise).
  const ir::Dim *plainLayout(const ir::Op &op, const ir::Shape &shape, const ir::Shape &memShape,
                             const IndexExpr &lane,
                             std::vector<std::pair<ir::Dim, IndexExpr>> &thread,
                             std::vector<std::pair<ir::Dim, IndexExpr>> &elements,
                             std::map<std::string, int64_t> &chunks) {
    const ir::Dim *overrun = nullptr;
    // A mapped read (not a gather) may run its lanes along an iterator the tensor lacks.
    const bool iterators = op.kind == ir::OpKind::Read && op.mapping && !ir::indexOperand(op);
    const ir::Dim *d = plainLaneDim(shape, memShape, iterators);
    if (!d)
      return nullptr;
    // The lanes cover ept * W elements of each vector tile. More than the tile (a vector
    // shape that is not a multiple of the wave size) reaches into the next clone: the
    // overlapping clones read and write the same values, and only the end of the dim
    // needs a mask, which isMasked does not see (it counts vector tiles, not lanes).
    int64_t ept = op.ept ? *op.ept : plainElements(*d);
    const ExpansionInfo *x = expansionOf(out, *d);
    auto declared = kernel.vectorShapeFor(*d);
    auto vs = x ? x->vectorShape.asInteger() : declared ? declared->asInteger() : std::nullopt;
    if (!x && !split(*d)) {
      // A dim no constraint splits and no clone walks (a reduced row, or a dynamic dim):
      // the lanes cover what a reduction over it covers, the whole dim.
      vs = reduceVectorShape(*d).asInteger();
      if (vs && !op.ept)
        ept = std::max<int64_t>((*vs + out.groupSize - 1) / out.groupSize, 1);
    }
    if (!x && !vs && !split(*d)) {
      // A dynamic dim no constraint splits: the row is streamed, each consumer walking it
      // in a loop of chunks (as a long reduced row is).
      const int64_t u = streamChunk(*d);
      thread.push_back({*d, floorDiv(kG, u) * (out.groupSize * u) + lane * u + mod(kG, u)});
      elements.push_back({*d, IndexExpr(0)});
      chunks[d->str()] = u;
    } else {
      // Lanes that reach past the vector tile, or a vector tile wider than the wave's
      // span of the dim (a workgroup tile of 1 under 64 lanes), reach into the next
      // workgroup's elements and past the end of the dim.
      const int64_t cover = std::max<int64_t>(ept * out.groupSize, vs.value_or(0));
      const auto span = waveSpan(*d);
      if ((vs && ept * static_cast<int64_t>(out.groupSize) > *vs) ||
          (span && cover * (x ? x->count : 1) > *span))
        overrun = d;
      if (!collecting_ && vs && ept * static_cast<int64_t>(out.groupSize) < *vs)
        diags.report(DiagId::EptConflict, op.loc,
                     {std::to_string(ept),
                      fmt::format("leaves elements of '{}' to no thread: the {} lanes "
                                  "cover {} of each vector tile of {}",
                                  d->str(), out.groupSize, ept * out.groupSize, *vs)});
      thread.push_back({*d, lane * ept + kG});
      elements.push_back({*d, ept});
    }
    return overrun;
  }

  void visit(const ir::Op &op) {
    bool isRead = op.kind == ir::OpKind::Read;
    bool isWrite = op.kind == ir::OpKind::Write || op.kind == ir::OpKind::AtomicAdd ||
                   op.kind == ir::OpKind::AtomicMin || op.kind == ir::OpKind::AtomicMax;
    if (!isRead && !isWrite)
      return;
    const ir::Value *mem = isRead ? op.operands[0] : op.operands[1];
    const ir::Value *reg = isRead ? op.results[0] : op.operands[0];
    Role role = isRead ? readRole(reg) : backwardRole(reg);
    const ir::Dim *overrun = nullptr; // a plain lane dim whose lanes overrun its vector tile
    AccessIndex acc;
    acc.op = &op;
    acc.tensor = mem->name.empty() ? fmt::format("%{}", mem->id) : mem->name;

    // Thread terms and element counts of the register-side dims.
    std::vector<std::pair<ir::Dim, IndexExpr>> thread;
    std::vector<std::pair<ir::Dim, IndexExpr>> elements;
    std::map<std::string, int64_t> chunks; // streamed dims: elements per lane per loop trip
    IndexExpr lane = mod(S("$T0"), static_cast<int64_t>(out.groupSize));
    const ir::Shape &shape = reg->type.shape;
    if (role.kind == Role::MmaLhs || role.kind == Role::MmaRhs || role.kind == Role::MmaAcc) {
      mmaLayout(op, role, lane, acc, thread, elements);
    } else if (role.kind == Role::Reduce && !shape.empty()) {
      reduceLayout(role.op->dims[0], lane, acc, thread, elements, chunks);
    } else if (!shape.empty()) {
      acc.anchor = "read/write";
      overrun = plainLayout(op, shape, mem->type.shape, lane, thread, elements, chunks);
    } else {
      acc.anchor = "scalar";
    }

    if (collecting_) {
      for (const auto &d : shape) {
        bool lanes = false;
        for (const auto &[td, t] : thread)
          lanes |= td == d;
        auto &uses = lanes ? laneUse_ : rowUse_;
        uses.emplace(d.str(), std::make_pair(&op, d));
      }
      return;
    }
    std::map<std::string, IndexExpr> regIndex; // register dim name -> index
    auto onLanes = [&](const ir::Dim &d) {
      for (const auto &[td, t] : thread)
        if (td == d)
          return true;
      return false;
    };
    auto registerIndex = [&](const ir::Dim &d) {
      IndexExpr e = uniformIndex(kernel, out, op, d);
      for (const auto &[td, t] : thread)
        if (td == d)
          e = e + t;
      if (walked_.count(d.str()) && !onLanes(d))
        e = e + S("$W_" + d.str());
      return e;
    };
    auto elementsOf = [&](const ir::Dim &d) -> IndexExpr {
      for (const auto &[ed, n] : elements)
        if (ed == d)
          return n;
      return 1;
    };
    sym::Facts facts = out.facts;
    int64_t gCount = 1; // the elements g ranges over
    for (const auto &[d, n] : elements)
      if (auto c = n.asInteger(); c && *c > 0) {
        facts.setRange("$g", 0, *c - 1);
        gCount = std::max(gCount, *c);
      } else {
        facts.setRange("$g", 0);
      }

    // A register dim's index, element count and bound (a tile, or the lanes of a reduction,
    // can overrun it).
    auto registerDim = [&](const ir::Dim &d) {
      DimIndex di{d, facts.simplify(registerIndex(d)), elementsOf(d).asInteger().value_or(0)};
      di.masked = isMasked(d, facts);
      if (auto it = chunks.find(d.str()); it != chunks.end()) {
        di.chunk = it->second;
        di.masked |= rowOverrun(d, di.chunk * rowThreads(d), facts);
      } else if (role.kind == Role::Reduce && d == role.op->dims[0] && di.elements > 0) {
        di.masked |= rowOverrun(d, di.elements * rowThreads(d), facts);
      }
      if (overrun && *overrun == d)
        di.masked |= !facts.provesExact(d.size, IndexExpr(di.elements * out.groupSize)) ||
                     !facts.prove(sym::Pred::cmp(sym::Pred::Lt, di.start, d.size)).value_or(false);
      if (walked_.count(d.str()) && !onLanes(d)) {
        di.walked = true;
        di.masked = false;
      }
      if (isWrite)
        maskWorkgroupTile(di, facts, gCount);
      return di;
    };
    if (!op.mapping) {
      for (const auto &d : mem->type.shape) {
        DimIndex di = registerDim(d);
        di.contiguous = &d == &mem->type.shape.back() && isUnitStride(di.start, facts);
        acc.dims.push_back(di);
      }
    } else {
      // The register side: each iterator is bound to one register dim, whose index (the
      // thread layout of the value) is the iterator's value. The memory side: the mapping's
      // expressions of those values. The iteration bounds are the register dims' masks
      // (docs/language.md section 14); a memory-side dim is masked as well unless its expression
      // provably stays inside the tensor whenever every iterator is inside its dim.
      const auto &bare = isRead ? op.mapping->outputs : op.mapping->inputs;
      const auto &memSide = isRead ? op.mapping->inputs : op.mapping->outputs;
      std::map<std::string, IndexExpr> subs;
      sym::Facts inside = out.facts; // each iterator in [0, size of its dim)
      int64_t maxElements = 1;
      for (const auto &[d, value] : bare) {
        const IndexExpr index = registerIndex(d);
        DimIndex ri = registerDim(d);
        ri.contiguous = isUnitStride(ri.start, facts);
        acc.regDims.push_back(ri);
        maxElements = std::max(maxElements, ri.elements);
        if (auto name = value.asSymbol()) {
          subs[*name] = index;
          bindIterator(inside, *name, d);
        }
      }
      int64_t streamed = 0; // a streamed register dim: the memory side moves in its chunks
      for (const auto &ri : acc.regDims)
        streamed = std::max(streamed, ri.chunk);
      for (const auto &[d, value] : memSide) {
        DimIndex di{d, facts.simplify(value.subs(subs)), maxElements};
        if (streamed > 0 && di.start.dependsOn("$g")) {
          di.elements = 0;
          di.chunk = streamed;
        }
        di.contiguous = d == mem->type.shape.back() && isUnitStride(di.start, facts);
        const IndexExpr e = inside.simplify(value);
        di.masked = !inside.prove(sym::Pred::cmp(sym::Pred::Lt, e, d.size)).value_or(false);
        di.maskedBelow =
            !inside.prove(sym::Pred::cmp(sym::Pred::Ge, e, IndexExpr(0))).value_or(false);
        // A data-dependent index (gather, scatter) is any integer: both bounds are checked.
        if (!op.mapping->valueSymbol.empty() && value.dependsOn(op.mapping->valueSymbol)) {
          di.masked = di.maskedBelow = true;
          di.contiguous = false;
        }
        acc.dims.push_back(di);
      }
      acc.anchor += " via mapping " + op.mapping->name;
    }
    out.accesses.push_back(std::move(acc));
  }

  // The reduction anchor over dim d (docs/hardware.md 4.1; docs/internals.md, "Reductions"):
  // the wave's vector tile of d (its vector shape) is spread over the lanes. A lane holds its
  // elements in chunks of V = 16 bytes of the narrowest tensor element accessed in this layout
  // (one 128-bit access each), chunk k of lane l at (k * W + l) * V, so that each access of the
  // wave is contiguous; fewer than V elements per lane sit at l * c + g. A row of a dynamic
  // length, or of more than kMaxHeld elements per lane, is *streamed*: its values are computed
  // in the loop of each consumer, a chunk of U = V * kStreamUnroll elements per lane per trip
  // (elements = 0, DimIndex::chunk = U), instead of being held in registers.
  static constexpr int64_t kMaxHeld = 64, kStreamUnroll = 2;
  // Elements per lane per trip of a streamed row of d: two 16-byte chunks of the narrowest
  // tensor element accessed along it.
  int64_t streamChunk(const ir::Dim &d) const {
    auto nb = narrowest.find(d.str());
    const int64_t v = std::max<int64_t>(1, 16 / (nb == narrowest.end() ? 4 : nb->second));
    return v * kStreamUnroll;
  }
  // The vector tile of a reduced dim the lanes spread over: the expansion's step when clones
  // walk d (a workgroup, tiling or mma splits it); otherwise the whole dim, which the lanes
  // must cover (the given vector shape when it provably holds the dim).
  IndexExpr reduceVectorShape(const ir::Dim &d) const {
    if (const ExpansionInfo *x = expansionOf(out, d))
      return x->vectorShape;
    if (kernel.workgroupFor(d) || kernel.tilingFor(d))
      return kernel.vectorShapeFor(d).value_or(IndexExpr(rowThreads(d)));
    if (auto given = kernel.vectorShapeFor(d))
      if (out.facts.prove(sym::Pred::cmp(sym::Pred::Le, d.size, *given)).value_or(false))
        return *given;
    return d.size;
  }
  void reduceLayout(const ir::Dim &d, const IndexExpr &lane, AccessIndex &acc,
                    std::vector<std::pair<ir::Dim, IndexExpr>> &thread,
                    std::vector<std::pair<ir::Dim, IndexExpr>> &elements,
                    std::map<std::string, int64_t> &chunks) {
    // The threads the row is spread over: the lanes of a wave, or all the threads of axis 0.
    const int64_t w = rowThreads(d);
    const IndexExpr lanes = w == out.groupSize ? lane : IndexExpr::symbol("$T0");
    const IndexExpr vs = reduceVectorShape(d);
    IndexExpr per = out.facts.simplify(ceilDiv(vs, w));
    acc.anchor = "reduction over " + d.str();
    auto nb = narrowest.find(d.str());
    const int64_t v = std::max<int64_t>(1, 16 / (nb == narrowest.end() ? 4 : nb->second));
    const int64_t u = v * kStreamUnroll;
    auto c = per.asInteger();
    auto vsc = vs.asInteger();
    bool streamed = !c || *c <= 0;
    // Chunks may overrun the vector tile only when it is the dim's one tile in the workgroup.
    if (c && *c > kMaxHeld && (!severalTiles(d) || (vsc && *vsc % (w * u) == 0)))
      streamed = true;
    if (streamed) {
      thread.push_back({d, floorDiv(kG, u) * (w * u) + lanes * u + mod(kG, u)});
      elements.push_back({d, IndexExpr(0)});
      chunks[d.str()] = u;
    } else if (*c > v && *c % v == 0) {
      thread.push_back({d, floorDiv(kG, v) * (w * v) + lanes * v + mod(kG, v)});
      elements.push_back({d, per});
    } else {
      thread.push_back({d, lanes * *c + kG});
      elements.push_back({d, per});
    }
  }

  // A reduced dim that no workgroup or tiling splits is spread over all the threads of
  // workgroup axis 0 when that axis has several waves and no dim placed on it (waves asked for
  // with waves_per_block that would otherwise repeat each other's work): a long row is then
  // walked by the whole workgroup, and the reduction meets across the waves. Otherwise the
  // row belongs to one wave.
  int64_t rowThreads(const ir::Dim &d) const {
    const int64_t w = out.groupSize;
    if (out.wavesPerBlock[0] <= 1 || kernel.workgroupFor(d) || kernel.tilingFor(d) ||
        !mmaVectorShapes().empty())
      return w;
    for (const auto &wg : kernel.workgroups)
      if (wg.axis == 0)
        return w;
    return out.block[0];
  }

  // The lanes of a wave cover `coverage` elements of a reduced dim (per loop trip, for a
  // streamed row), which may be more than its vector tile when that is the dim's only tile
  // (checkReductions): a mask is needed unless the facts prove the dim a multiple.
  bool rowOverrun(const ir::Dim &d, int64_t coverage, const sym::Facts &facts) const {
    return !facts.provesExact(d.size, IndexExpr(coverage));
  }

  // Whether a workgroup's extent of d holds more than one vector tile (waves, expansion
  // clones or loop trips along d).
  bool severalTiles(const ir::Dim &d) const {
    const auto *wg = kernel.workgroupFor(d);
    const int64_t waves = wg && kernel.waveFor(d) ? out.wavesPerBlock[wg->axis] : 1;
    const ExpansionInfo *x = expansionOf(out, d);
    return kernel.tilingFor(d) || waves > 1 || (x && x->count > 1);
  }

  // A reduction combines the whole dim inside one workgroup. In the reduction layout the lanes
  // of a wave cover W * ceil(vs / W) elements of the vector tile, which must not reach into the
  // next tile when a workgroup or tiling splits the dim.
  void checkReductions() {
    const bool mma = !mmaVectorShapes().empty();
    ir::walk(kernel.body, [&](const ir::Op &op) {
      if (!alongDim(op.kind))
        return;
      const ir::Dim &d = op.dims[0];
      if (const auto *wg = kernel.workgroupFor(d)) {
        IndexExpr n = out.facts.simplify(ceilDiv(d.size, wg->tile));
        if (!out.facts.prove(sym::Pred::cmp(sym::Pred::Le, n, IndexExpr(1))).value_or(false)) {
          if (op.kind == ir::OpKind::Reduce)
            diags.report(DiagId::ReduceSplitDim, op.loc,
                         {d.str(), std::to_string(wg->tile), n.str()});
          else
            diags.report(DiagId::ScanSplitDim, op.loc,
                         {ir::opKindName(op.kind), d.str(), std::to_string(wg->tile), n.str()});
        }
      }
      auto v = reduceVectorShape(d).asInteger();
      Role anchor = backwardRole(op.results[0]);
      const bool lanesAlongD = anchor.kind == Role::Reduce && anchor.op->dims[0] == d;
      if (!mma && lanesAlongD && v && *v % out.groupSize != 0 && severalTiles(d))
        diags.report(DiagId::BadVectorShape, op.loc,
                     {d.str(), fmt::format("is {}; a reduction over it needs a multiple of the "
                                           "wave size ({}) when waves, clones or loop trips "
                                           "share the dim",
                                           *v, out.groupSize)});
    });
  }

  // Per reduced dim, the narrowest element (bytes) of the tensors accessed in its layout.
  void findNarrowest() {
    ir::walk(kernel.body, [&](const ir::Op &op) {
      const bool rd = op.kind == ir::OpKind::Read;
      if (!rd && op.kind != ir::OpKind::Write)
        return;
      Role r = rd ? readRole(op.results[0]) : backwardRole(op.operands[0]);
      const ir::Value *mem = rd ? op.operands[0] : op.operands[1];
      int64_t b = std::max<int64_t>(1, bitWidth(mem->type.dtype) / 8);
      auto note = [&](const ir::Dim &d) {
        auto [it, fresh] = narrowest.emplace(d.str(), b);
        if (!fresh)
          it->second = std::min(it->second, b);
      };
      if (r.kind == Role::Reduce) {
        note(r.op->dims[0]);
        return;
      }
      // A plain access may stream a dynamic dim that no constraint splits.
      if (r.kind == Role::Plain)
        for (const auto &d : mem->type.shape)
          if (!split(d) && !d.size.asInteger())
            note(d);
    });
  }
  std::map<std::string, int64_t> narrowest;

  // The dim the lanes of a plain read or write run along: the one on workgroup axis 0 (lanes
  // only run along x), else the innermost memory dim that no workgroup splits and whose vector
  // shape is a constant above 1 (a row every workgroup holds whole, e.g. rows with
  // `workgroup(M, 1, dim = 1)`); null when there is none (every lane then holds the value).
  const ir::Dim *plainLaneDim(const ir::Shape &reg, const ir::Shape &memShape,
                              bool iterators) const {
    for (const auto &d : reg)
      if (const auto *wg = kernel.workgroupFor(d); wg && wg->axis == 0)
        return &d;
    // A dim lanes may run along: a vector tile wider than 1, or dynamic with no constraint
    // splitting it (no clones: its lanes stream over it).
    auto qualifies = [&](const ir::Dim &d) {
      if (kernel.workgroupFor(d))
        return false;
      const ExpansionInfo *x = expansionOf(out, d);
      std::optional<int64_t> vs;
      if (x)
        vs = x->vectorShape.asInteger();
      else if (auto declared = kernel.vectorShapeFor(d))
        vs = declared->asInteger();
      // A vector shape past the dim's static size is the whole dim (as collectExpansion
      // makes it): a dim of one element is no lane dim, whatever its declared vector shape
      // (lanes along it would leave the other dims, a streamed one included, to no lane).
      if (auto size = d.size.asInteger(); vs && size && *vs > *size && !split(d))
        vs = std::max<int64_t>(*size, 1);
      const bool streamed = !x && !kernel.tilingFor(d) && !d.size.asInteger();
      return (vs.has_value() && *vs > 1) || streamed;
    };
    for (auto it = memShape.rbegin(); it != memShape.rend(); ++it)
      if (ir::hasDim(reg, *it) && qualifies(*it))
        for (const auto &d : reg)
          if (d == *it)
            return &d;
    // A mapped read whose register dims are none of the tensor's (a mapping from the
    // iterator N to memory dim K): the lanes run along the last register dim that would
    // qualify, since the mapping computes each element's place anyway. (Scatters and gathers
    // keep their layouts: their values follow the index's.)
    for (auto it = reg.rbegin(); iterators && it != reg.rend(); ++it)
      if (!ir::hasDim(memShape, *it) && qualifies(*it))
        return &*it;
    return nullptr;
  }
  // Elements per lane along the lane dim: the wave's lanes cover one vector tile of it (the
  // expansion's clones step by the vector shape), so ceil(vector shape / wave size); a dim
  // whose vector shape is not a constant takes its workgroup tile over the axis' threads.
  int64_t plainElements(const ir::Dim &d) const {
    const int64_t w = out.groupSize;
    if (const ExpansionInfo *x = expansionOf(out, d))
      if (auto vs = x->vectorShape.asInteger(); vs && *vs > 0)
        return std::max<int64_t>((*vs + w - 1) / w, 1);
    if (auto vs = kernel.vectorShapeFor(d))
      if (auto v = vs->asInteger(); v && *v > 0)
        return std::max<int64_t>((*v + w - 1) / w, 1);
    if (const auto *wg = kernel.workgroupFor(d)) {
      const int64_t tpb0 = out.wavesPerBlock[0] * w;
      return std::max<int64_t>((wg->tile + tpb0 - 1) / tpb0, 1);
    }
    return 1;
  }

  // The facts `f` learn that mapping iterator `name` runs over register dim d: 0 <= name < the
  // dim's size (a range when the size is a constant, a recorded relation otherwise).
  static void bindIterator(sym::Facts &f, const std::string &name, const ir::Dim &d) {
    if (auto n = d.size.asInteger()) {
      f.setRange(name, 0, std::max<int64_t>(*n - 1, 0));
      return;
    }
    f.setRange(name, 0);
    f.assume(sym::Pred::cmp(sym::Pred::Lt, S(name), d.size));
  }

  // True when consecutive register elements g, g + 1 sit at consecutive indices.
  static bool isUnitStride(const IndexExpr &start, const sym::Facts &facts) {
    if (!start.dependsOn("$g"))
      return false;
    IndexExpr next = start.subs({{"$g", kG + 1}});
    return facts.provesEqual(next - start, 1);
  }

  // A write's elements outside its workgroup's tile of a dim that a workgroup splits (and no
  // `iterate` tiles) are another workgroup's: mask them when the layout may reach them
  // (DimIndex::maskedTile).
  void maskWorkgroupTile(DimIndex &di, const sym::Facts &facts, int64_t gCount) const {
    const auto *wg = kernel.workgroupFor(di.dim);
    if (!wg || kernel.tilingFor(di.dim))
      return;
    const std::string wgName = fmt::format("$WG{}", wg->axis);
    const IndexExpr end = S(wgName) * wg->tile + wg->tile;
    if (staysBelow(facts.simplify(di.start.subs({{wgName, IndexExpr(0)}})), wg->tile, gCount) ||
        facts.prove(sym::Pred::cmp(sym::Pred::Lt, di.start, end)).value_or(false))
      return;
    di.maskedTile = di.masked = true;
    di.tileEnd = end;
  }

  // Whether `e`, an index over the thread ids, $g and clone symbols only, is below `bound` for
  // every thread of the block, element and clone (evaluated: the range facts are loose on
  // forms like 16*T0 - 12*(T0 % 64)). False when it has other symbols or too many points.
  bool staysBelow(const IndexExpr &e, int64_t bound, int64_t gCount) const {
    std::vector<std::string> slots = {"$T0", "$T1", "$T2", "$g"};
    std::vector<int64_t> extent = {out.block[0], out.block[1], out.block[2], 1};
    for (const auto &x : out.expansion)
      if (e.dependsOn("$i_" + x.dim.str())) {
        slots.push_back("$i_" + x.dim.str());
        extent.push_back(std::max<int64_t>(x.count, 1));
      }
    extent[3] = std::max<int64_t>(gCount, 1);
    int64_t points = 1;
    for (int64_t n : extent) {
      if (n <= 0 || n > (int64_t{1} << 22))
        return false;
      points *= n;
      if (points > (int64_t{1} << 22))
        return false;
    }
    sym::ExprPool pool;
    const sym::CompiledExpr *c = pool.compile(e, slots);
    if (!c)
      return false;
    std::vector<int64_t> at(slots.size(), 0);
    for (int64_t p = 0; p < points; ++p) {
      int64_t rest = p;
      for (size_t k = 0; k < at.size(); ++k) {
        at[k] = rest % extent[k];
        rest /= extent[k];
      }
      bool ok = true;
      if (sym::evaluate(*c, at.data(), ok) >= bound || !ok)
        return false;
    }
    return true;
  }

  // A dim needs a mask when its tiles can overrun it (docs/hardware.md section 2.1).
  bool isMasked(const ir::Dim &d, const sym::Facts &facts) const {
    // An empty dim (K = 0) is a multiple of every tile, yet holds no element to touch.
    if (d.size.asInteger() == std::optional<int64_t>(0))
      return true;
    // Clones whose vector tiles overrun the wave's span of d (a span of 100 in tiles of 64)
    // reach past the end of the dim even when the span divides it.
    if (const ExpansionInfo *x = expansionOf(out, d))
      if (auto v = x->vectorShape.asInteger(), span = waveSpan(d); v && span && x->count * *v > *span)
        return true;
    if (const auto *wg = kernel.workgroupFor(d); wg && !facts.provesExact(d.size, wg->tile))
      return true;
    if (const auto *t = kernel.tilingFor(d); t && !facts.provesExact(d.size, t->tile))
      return true;
    // A dim no workgroup or tiling splits is covered by its vector shape alone (a reduced row).
    if (!kernel.workgroupFor(d) && !kernel.tilingFor(d)) {
      if (const ExpansionInfo *x = expansionOf(out, d))
        return !facts.provesExact(d.size, x->vectorShape);
      if (auto vs = kernel.vectorShapeFor(d); vs && !facts.provesExact(d.size, *vs))
        return true;
    }
    return false;
  }

  const ir::Kernel &kernel;
  const TargetInfo &target;
  DiagnosticEngine &diags;
  Distribution &out;
};

} // namespace

// A wgmma A operand in registers whose K is walked in a wider step than the kind's K (see
// mmaVectorShapes) holds the fragments of every K step of the clone: the register layout
// repeats every 8 columns (that of the accumulator with N = the step).
int64_t mmaOperandElements(const Distribution &d, const ir::Op &mma, int operand) {
  const MmaKind &k = *mma.mma;
  const LaneLayout &layout = operand == 0 ? k.a : operand == 1 ? k.b : k.c;
  int64_t n = layout.elements;
  if (k.family == MmaFamily::Wgmma && operand == 0)
    for (const auto &e : d.expansion)
      if (e.dim == mma.dims[2])
        if (auto vs = e.vectorShape.asInteger(); vs && *vs > k.k && *vs % k.k == 0)
          n *= *vs / k.k;
  return n;
}

IndexExpr uniformIndex(const ir::Kernel &kernel, const Distribution &dist, const ir::Op &op,
                       const ir::Dim &d) {
  IndexExpr e = 0;
  if (const auto *wg = kernel.workgroupFor(d)) {
    e = e + S(fmt::format("$WG{}", wg->axis)) * wg->tile;
    // A wave id whose extent is 1 is 0: no term.
    if (const auto *w = kernel.waveFor(d); w && dist.wavesPerBlock[wg->axis] > 1) {
      IndexExpr waveId = wg->axis == 0 ? floorDiv(S("$T0"), static_cast<int64_t>(dist.groupSize))
                                       : S(fmt::format("$T{}", wg->axis));
      e = e + waveId * w->tile;
    }
  }
  if (const auto *t = kernel.tilingFor(d); t && insideIterateOf(kernel, op, d))
    e = e + S("$IV_" + d.str()) * t->tile;
  if (const auto *x = expansionOf(dist, d); x && x->count > 1)
    e = e + cloneSym(d) * x->vectorShape;
  return e;
}

std::vector<DimIndex> mmaOperandIndex(const ir::Kernel &kernel, const Distribution &dist,
                                      const ir::Op &mma, int operand, const ir::Shape &shape) {
  const MmaKind &k = *mma.mma;
  const LaneLayout &layout = operand == 0 ? k.a : operand == 1 ? k.b : k.c;
  const ir::Dim &rowDim = operand == 1 ? mma.dims[1] : mma.dims[0];
  const ir::Dim &colDim = operand == 2 ? mma.dims[1] : mma.dims[2];
  const IndexExpr lane = mod(S("$T0"), static_cast<int64_t>(dist.groupSize));
  const int64_t perThread = mmaOperandElements(dist, mma, operand);
  sym::Facts facts = dist.facts;
  facts.setRange("$g", 0, perThread - 1);
  std::vector<DimIndex> out;
  for (const auto &d : shape) {
    IndexExpr e = uniformIndex(kernel, dist, mma, d);
    int64_t elements = 1;
    if (d == rowDim || d == colDim) {
      e = e + (d == rowDim ? layout.row(lane, kG) : layout.col(lane, kG));
      elements = perThread;
    }
    out.push_back({d, facts.simplify(e), elements});
  }
  return out;
}

bool distribute(const ir::Kernel &kernel, const TargetInfo &target, DiagnosticEngine &diags,
                Distribution &out) {
  return Distributor(kernel, target, diags, out).run();
}

const AccessIndex *accessOf(const Distribution &d, const ir::Op &op) {
  for (const auto &a : d.accesses)
    if (a.op == &op)
      return &a;
  return nullptr;
}

LaneVector laneVector(const std::vector<DimIndex> &dims) {
  LaneVector v;
  int along = 0;
  for (const DimIndex &di : dims)
    if (di.start.dependsOn("$g")) {
      ++along;
      v.elems = std::max(v.elems, di.elements);
      v.dim = di.dim.str();
    }
  if (along != 1)
    v.dim.clear();
  return v;
}

const DimIndex *dimIndexOf(const AccessIndex &a, const ir::Dim &dim) {
  const DimIndex *found = nullptr;
  for (const auto &x : a.dims)
    if (x.dim == dim)
      found = &x; // the last, as the emitter has always taken it
  return found;
}

std::string printDistribution(const ir::Kernel &kernel, const TargetInfo &target,
                              const Distribution &d) {
  std::string out = fmt::format("kernel {} (target {})\n", kernel.name, target.name);
  out += fmt::format("  threads per wave: {}\n", d.waveSize);
  if (d.groupSize != d.waveSize)
    out += fmt::format("  warpgroup:        {} threads (each wave of the constraints)\n",
                       d.groupSize);
  out += fmt::format("  waves per block:  [{}, {}, {}]\n", d.wavesPerBlock[0], d.wavesPerBlock[1],
                     d.wavesPerBlock[2]);
  out += fmt::format("  block:            [{}, {}, {}] ({} threads)\n", d.block[0], d.block[1],
                     d.block[2], d.block[0] * d.block[1] * d.block[2]);
  out += fmt::format("  grid:             [{}, {}, {}]\n", d.grid[0].str(), d.grid[1].str(),
                     d.grid[2].str());
  std::string dyn;
  for (const auto &s : d.dynamicSymbols)
    dyn += (dyn.empty() ? "" : ", ") + s;
  out += fmt::format("  dynamic symbols:  {}\n", dyn.empty() ? "none" : dyn);
  for (const auto &l : d.loops)
    out += fmt::format("  loop {}:           {} trips of {}\n", l.dim.str(), l.tripCount.str(),
                       l.tile);
  if (!d.expansion.empty()) {
    out += "  expansion:       ";
    for (const auto &e : d.expansion)
      out += fmt::format(" {} x{} (vector {})", e.dim.str(), e.count, e.vectorShape.str());
    out += "\n";
  }
  for (size_t i = 0; i < kernel.assumptions.size(); ++i) {
    // An assumption the bound values already decide is shown as holding.
    sym::Facts none;
    bool holds = none.prove(kernel.assumptions[i]).value_or(false);
    out += fmt::format("  assume:           {}{}\n", kernel.assumptionText[i],
                       holds ? "  (holds for the bound values)" : "");
  }
  out += "  accesses:\n";
  for (const auto &a : d.accesses) {
    out += fmt::format("    {} {} @{}:{}  [{}]\n", ir::opKindName(a.op->kind), a.tensor,
                       a.op->loc.begin.line, a.op->loc.begin.col, a.anchor);
    auto print = [&](const DimIndex &di, const char *prefix) {
      std::string note;
      if (di.start.dependsOn("$g"))
        note = di.elements > 0 ? fmt::format("g < {}", di.elements)
                               : fmt::format("streamed, {} per lane per trip", di.chunk);
      if (di.contiguous)
        note += ", contiguous";
      if (di.walked)
        note += std::string(note.empty() ? "" : ", ") + "walked by a loop";
      if (di.masked || di.maskedBelow)
        note += (note.empty() ? "" : ", ") +
                (di.maskedBelow && di.masked ? "masked to [0, " + di.dim.size.str() + ")"
                 : di.masked                 ? "masked < " + di.dim.size.str()
                                             : std::string("masked >= 0"));
      if (di.maskedTile)
        note += ", and < the workgroup's tile end " + di.tileEnd.str();
      out += fmt::format("      {}{}: {}{}\n", prefix, di.dim.str(), di.start.str(),
                         note.empty() ? "" : "    (" + note + ")");
    };
    for (const auto &di : a.dims)
      print(di, "");
    // A mapped access: the iterators' values (the register value's layout).
    for (const auto &di : a.regDims)
      print(di, "iterator over ");
  }
  return out;
}

} // namespace wave
