// The shared tiles sized before emission (the shared-memory plan's first half): every
// reduction whose operand's reduced dim is spread over the waves of the workgroup gets its
// scratch tile (waves x result clones x result elements x lanes slots of the element type),
// every cumsum or topk whose row several waves share its scratch (scan.cpp, planScanScratch),
// every `allocate` its tile. Scratch is sized from shapes alone with the carried-shapes rules
// (carried_shapes.cpp) and the emitter's own planning steps (reduce.cpp: reducedShape,
// reduceSpread; scan.cpp: planScan). The shared-memory-plan pass places the tiles after
// emission, when their live spans are known (mlir_emitter.cpp, liveSpans). The emitter only
// looks its tiles up (plannedScratch, rebaseAllocated) and refuses, as a wavec bug, an op the
// plan sized differently or missed. docs/internals.md ("shared-memory-plan") describes it.
#include "codegen/emitter/kernel_emitter.h"

namespace wave::codegen::detail {

// The slots of one cross-wave reduction's scratch: one per wave, result clone, result element
// and lane.
int64_t KernelEmitter::scratchSlots(int64_t nc, int64_t eo) const {
  return wavesPerWorkgroup() * nc * eo * d_.groupSize;
}

// Sizes the scratch of reduction `op` when its operand's shape is known and its reduced dim
// spreads over waves; anything else is left to emission, which refuses what it cannot reduce.
void KernelEmitter::planScratch(const ir::Op &op, const ShapeMap &shapes) {
  const RegVal *in = shapeIn(shapes, op.operands[0]);
  if (!in || in->deferred || (in->lazy && in->streamDim != op.dims[0].str()))
    return;
  const RegVal x = in->lazy ? streamedPartials(*in) : *in;
  const std::string dim = op.dims[0].str();
  auto lay = x.layout.find(dim);
  const DimIndex rowDi = lay == x.layout.end() ? DimIndex{} : lay->second;
  std::vector<std::vector<int64_t>> groups;
  RegVal out;
  if (!reducedShape(op, x, out, groups))
    return;
  std::vector<int64_t> laneMasks;
  std::vector<int> waveAxes;
  probing_ = true;
  const bool spread = reduceSpread(op, x, rowDi, groups, laneMasks, waveAxes);
  probing_ = false;
  if (!spread || waveAxes.empty())
    return;
  const int64_t nc = static_cast<int64_t>(clonesOver(out.cloneSyms).size());
  const int64_t slots = scratchSlots(nc, out.elems);
  scratchTile(scratch_, op, x.dtype, slots);
}

int KernelEmitter::scratchTile(std::map<const ir::Op *, int> &tiles, const ir::Op &op,
                               ScalarType t, int64_t slots) {
  auto [it, added] = tiles.emplace(&op, static_cast<int>(allocs_.size()));
  if (added) {
    LdsAlloc al; // placed by the shared-memory plan with the others
    al.op = &op;
    al.scratch = true;
    al.dtype = t;
    al.tile = {slots};
    al.strides = {IndexExpr(1)};
    al.bytes = slots * byteSize(t);
    allocs_.push_back(al);
  }
  return it->second;
}

// The scratch tile that planScratchTiles sized for op in `tiles`, when it has `slots` elements
// of t; else -1, after refusing the op as a wavec bug (emission and the plan disagree).
int KernelEmitter::plannedScratch(const std::map<const ir::Op *, int> &tiles, const ir::Op &op,
                                  ScalarType t, int64_t slots, DiagId id) {
  auto it = tiles.find(&op);
  const bool same = it != tiles.end() && allocs_[it->second].tile == std::vector<int64_t>{slots} &&
                    allocs_[it->second].dtype == t;
  if (same)
    return it->second;
  unsupported(id,
              std::string("a cross-wave ") + ir::opKindName(op.kind) +
                  " whose scratch the shared-memory plan " +
                  (it == tiles.end() ? "did not size" : "sized otherwise") + " (a wavec bug)",
              op.loc);
  return -1;
}

// Row-major strides and bytes of a tile (an `allocate`'s, a layout move's: relayout.cpp).
void KernelEmitter::rowMajorTile(SharedTile &al) {
  al.strides.assign(al.tile.size(), IndexExpr(1));
  int64_t elems = 1;
  for (size_t i = al.tile.size(); i-- > 0;) {
    al.strides[i] = IndexExpr(elems);
    elems *= al.tile[i];
  }
  al.bytes = elems * static_cast<int64_t>(byteSize(al.dtype));
}

// An `allocate`'s tile: one per workgroup, rows unpadded, in the allocation's own order of dims.
void KernelEmitter::planAllocate(const ir::Op &op) {
  LdsAlloc al;
  al.op = &op;
  al.dtype = op.results[0]->type.dtype;
  al.tile = op.tile;
  rowMajorTile(al);
  allocated_.emplace(&op, static_cast<int>(allocs_.size()));
  allocs_.push_back(al);
}

void KernelEmitter::allocatesIn(const std::vector<std::unique_ptr<ir::Op>> &ops) {
  for (const auto &o : ops) {
    if (o->kind == ir::OpKind::Allocate)
      planAllocate(*o);
    for (const auto &r : o->regions)
      allocatesIn(r->ops);
  }
}

// The ops of one region in program order (the order emission reaches them), with the shapes of
// their results; loops with their carried shapes, both branches of an `if`.
void KernelEmitter::scratchIn(const std::vector<std::unique_ptr<ir::Op>> &ops, ShapeMap &shapes) {
  for (const auto &o : ops) {
    const ir::Op &op = *o;
    if (op.kind == ir::OpKind::Yield)
      return;
    if (op.kind == ir::OpKind::Reduce)
      planScratch(op, shapes);
    if (op.kind == ir::OpKind::Cumsum || op.kind == ir::OpKind::TopK)
      if (const RegVal *in = shapeIn(shapes, op.operands[0]))
        planScanScratch(op, *in);
    if (op.kind == ir::OpKind::Iterate && !op.regions.empty()) {
      std::vector<RegVal> carried;
      for (const ir::Value *v : op.operands) {
        const RegVal *s = shapeIn(shapes, v);
        if (!s)
          return; // the shapes from here on are unknown: emission sizes what is left
        carried.push_back(*s);
        carried.back().clones.clear();
      }
      std::vector<RegVal> predicted = carried;
      if (predictCarried(op, predicted))
        carried = std::move(predicted);
      const ir::Region &body = *op.regions[0];
      for (size_t i = 0; i < body.args.size() && i < carried.size(); ++i)
        shapes[body.args[i]] = carried[i];
      scratchIn(body.ops, shapes);
    }
    if (op.kind == ir::OpKind::If)
      for (const auto &r : op.regions)
        scratchIn(r->ops, shapes);
    if (!opShape(op, shapes))
      return;
    planRelayouts(op, shapes);
  }
}

void KernelEmitter::planScratchTiles() {
  ShapeMap shapes;
  scratchIn(k_.body.ops, shapes);
  allocatesIn(k_.body.ops);
  splitRelayouts(); // after every other tile: the shared memory they leave
}

} // namespace wave::codegen::detail
