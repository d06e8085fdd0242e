// The carried-shapes pass: before a loop is emitted, the shape (thread layout, elements per
// lane, clones) each loop-carried value has in the loop, found from shapes alone, so the loop is
// emitted once. A carried value starts as its init's shape; a uniform init (a splat) takes the
// shape of what the body yields (an MMA accumulator, a reduction's row), which may in turn
// depend on the carried shapes: the body's shapes are evaluated, the carried shapes widened,
// until they settle. docs/internals.md ("carried-shapes") describes it.
//
// The shape rules here are the emitter's own: reads take their access's layout (access.cpp,
// emitRead), matrix products the accumulator layout of their kind (mma.cpp), element-wise ops
// their widest laid-out operand (elementwise.cpp, widestLaidOut), reductions reducedShape
// (reduce.cpp), an `if` its branches' yields (control.cpp, ifYieldShape), an atomic its
// access's layout (atomic.cpp), a streamed row its access's layout until a reduction loops over
// it (stream.cpp). An op the rules do not know is one the emitter refuses: the loop is then
// emitted in its inits' shapes, and the refusal or a yield that does not fit is reported
// (emitIterate).
#include "codegen/emitter/kernel_emitter.h"

namespace wave::codegen::detail {

namespace {

// A value's shape without its SSA values.
RegVal shapeOnly(const RegVal &v) {
  RegVal s = v;
  s.clones.clear();
  return s;
}

} // namespace

const RegVal *KernelEmitter::shapeIn(const ShapeMap &shapes, const ir::Value *v) const {
  if (auto it = shapes.find(v); it != shapes.end())
    return &it->second;
  if (auto it = values_.find(v); it != values_.end())
    return &it->second;
  return nullptr;
}

// The shape of a read's value: the distribution's layout of its register side.
bool KernelEmitter::readShape(const ir::Op &op, RegVal &out) const {
  const AccessIndex *ai = wave::accessOf(d_, op);
  if (!ai)
    return false;
  for (const DimIndex &di : ai->dims)
    if (di.chunk > 0)
      return false; // a streamed row: its consumers loop over it
  const LaneVector lv = laneVector(ai->dims);
  const ScalarType t = op.operands[0]->type.dtype;
  out = layoutFrom(op.mapping ? ai->regDims : ai->dims, lv.elems, t);
  if (!op.mapping)
    out.vecDim = lv.dim; // emitRead: the one dim g runs along, whatever the element count
  return true;
}

// The shape of a streamed row (access.cpp, emitRead): not emitted where it is defined, laid
// out as its access, streamed along the dim with a chunk.
bool KernelEmitter::streamedReadShape(const ir::Op &op, RegVal &out) const {
  const AccessIndex *ai = wave::accessOf(d_, op);
  if (!ai)
    return false;
  out = RegVal();
  out.lazy = &op;
  out.dtype = op.operands[0]->type.dtype;
  for (const DimIndex &di : op.mapping ? ai->regDims : ai->dims) {
    if (di.chunk > 0 && out.streamDim.empty())
      out.streamDim = di.dim.str();
    out.layout[di.dim.str()] = di;
    for (const auto &s : di.start.freeSymbols())
      if (s.rfind("$i_", 0) == 0)
        out.cloneSyms.insert(s);
  }
  return !out.streamDim.empty();
}

// What a reduction over the streamed dim of `x` reduces after its loop over the row
// (emitStreamedReduce): one chunk's per-lane partials, nothing masked.
RegVal KernelEmitter::streamedPartials(const RegVal &x) {
  RegVal held = x;
  held.lazy = nullptr;
  held.streamDim.clear();
  DimIndex &di = held.layout.at(x.streamDim);
  held.elems = di.chunk;
  di.elements = di.chunk;
  di.chunk = 0;
  for (auto &[name, d] : held.layout)
    d.masked = false;
  return held;
}

// Ops with a streamed operand (mlir_emitter.cpp, emitOp): element-wise ops and broadcasts stay
// streamed (stream.cpp, deferStreamed), a reduction along the streamed dim loops over the row
// and reduces the per-lane partials of one chunk (emitStreamedReduce), a write loops; the
// emitter refuses the rest.
bool KernelEmitter::streamedOpShape(const ir::Op &op, const std::vector<const RegVal *> &ins,
                                    RegVal &out) const {
  switch (op.kind) {
  case ir::OpKind::Unary:
  case ir::OpKind::Binary:
  case ir::OpKind::Math:
  case ir::OpKind::Select:
  case ir::OpKind::Cast:
  case ir::OpKind::Broadcast:
    out = RegVal();
    out.lazy = &op;
    out.dtype = op.results[0]->type.dtype;
    for (const RegVal *v : ins) {
      if (!v)
        return false;
      if (v->lazy) // operands streamed along different dims: only a write re-reads them
        out.streamDim = !out.streamDim.empty() && out.streamDim != v->streamDim
                            ? std::string(kMixedStreams)
                            : v->streamDim;
      for (const auto &[dim, di] : v->layout)
        out.layout.emplace(dim, di);
      out.cloneSyms.insert(v->cloneSyms.begin(), v->cloneSyms.end());
    }
    return true;
  case ir::OpKind::Reduce: {
    const RegVal *x = ins[0];
    const std::string dim = op.dims[0].str();
    if (!x || !x->lazy || x->streamDim != dim || (ins.size() > 1 && ins[1] && ins[1]->lazy))
      return false;
    std::vector<std::vector<int64_t>> groups;
    return reducedShape(op, streamedPartials(*x), out, groups);
  }
  default: return false;
  }
}

// The shape of an atomic's old values (atomic.cpp, emitAtomic): the access's layout, with the
// clones of the value too.
bool KernelEmitter::atomicShape(const ir::Op &op, const RegVal *value, RegVal &out) const {
  const AccessIndex *ai = wave::accessOf(d_, op);
  if (!ai || op.mapping || !value)
    return false;
  out = layoutFrom(ai->dims, laneVector(ai->dims).elems, op.operands[1]->type.dtype);
  out.cloneSyms.insert(value->cloneSyms.begin(), value->cloneSyms.end());
  return true;
}

// The shapes of an `if`'s results: both branches' ops, then ifYieldShape (control.cpp) of
// what they yield.
bool KernelEmitter::ifShape(const ir::Op &op, ShapeMap &shapes) const {
  std::vector<const RegVal *> yields[2];
  for (size_t which = 0; which < op.regions.size() && which < 2; ++which)
    for (const auto &o : op.regions[which]->ops) {
      if (o->kind == ir::OpKind::Yield) {
        for (const ir::Value *y : o->operands)
          yields[which].push_back(shapeIn(shapes, y));
        break;
      }
      if (!opShape(*o, shapes))
        return false;
    }
  for (size_t i = 0; i < op.results.size(); ++i) {
    if (i >= yields[0].size() || i >= yields[1].size() || !yields[0][i] || !yields[1][i])
      return false;
    RegVal r;
    DiagId id;
    if (ifYieldShape(*yields[0][i], *yields[1][i], r, id))
      return false;
    shapes[op.results[i]] = std::move(r);
  }
  return true;
}

// The shapes of op's results from its operands' shapes; false when the rules do not know it
// (then the emitter refuses it too, see emitIterate).
bool KernelEmitter::opShape(const ir::Op &op, ShapeMap &shapes) const {
  std::vector<const RegVal *> ins;
  bool streamedIn = false;
  for (const ir::Value *o : op.operands) {
    const RegVal *v = shapeIn(shapes, o);
    if (!v && o->paramIndex < 0 && !o->type.isMemory()) // a tensor: a parameter or allocate's
      return false;
    streamedIn |= v && v->lazy;
    ins.push_back(v);
  }
  RegVal out;
  out.dtype = op.results.empty() ? ScalarType::F32 : op.results[0]->type.dtype;
  if (streamedIn && op.kind != ir::OpKind::Write) {
    if (!streamedOpShape(op, ins, out) || op.results.size() != 1)
      return false;
    shapes[op.results[0]] = std::move(out);
    return true;
  }
  switch (op.kind) {
  case ir::OpKind::Write:
  case ir::OpKind::Barrier:
  case ir::OpKind::Allocate: return true; // no register value
  case ir::OpKind::Constant: break;
  case ir::OpKind::Read:
    if (!readShape(op, out) && !streamedReadShape(op, out))
      return false;
    break;
  case ir::OpKind::AtomicAdd:
  case ir::OpKind::AtomicMin:
  case ir::OpKind::AtomicMax:
    if (op.results.empty())
      return true;
    if (!atomicShape(op, ins[0], out))
      return false;
    break;
  case ir::OpKind::If: return ifShape(op, shapes);
  case ir::OpKind::Cumsum: // scan.cpp, emitCumsum: the operand's layout
    if (!ins[0] || ins[0]->deferred)
      return false;
    out = shapeOnly(*ins[0]);
    out.dtype = op.results[0]->type.dtype;
    break;
  case ir::OpKind::TopK: { // scan.cpp, emitTopK: the reduced layout, K elements along dim K
    std::vector<std::vector<int64_t>> groups;
    if (!ins[0] || ins[0]->deferred || op.dims.size() < 2 || op.results.size() != 2 ||
        !reducedShape(op, *ins[0], out, groups))
      return false;
    const ir::Dim &kd = op.dims[1];
    out.layout[kd.str()] = DimIndex{kd, IndexExpr::symbol("$g"), op.ivalue};
    out.vecDim = kd.str();
    out.elems = op.ivalue;
    out.dtype = op.results[0]->type.dtype;
    RegVal idx = out;
    idx.dtype = ScalarType::I32;
    shapes[op.results[0]] = std::move(out);
    shapes[op.results[1]] = std::move(idx);
    return true;
  }
  case ir::OpKind::Mma:
    if (!op.mma)
      return false;
    out = layoutFrom(mmaOperandIndex(k_, d_, op, 2, op.results[0]->type.shape),
                     op.mma->c.elements, op.mma->acc);
    break;
  case ir::OpKind::Broadcast:
  case ir::OpKind::Permute:
    if (!ins[0])
      return false;
    out = shapeOnly(*ins[0]);
    out.dtype = op.results[0]->type.dtype;
    break;
  case ir::OpKind::SelfIndex: out.deferred = &op; break;
  case ir::OpKind::ApplyExpr:
    if (!ins[0])
      return false;
    if (ins[0]->deferred || !ins[0]->laidOut()) {
      out.deferred = &op;
    } else {
      out = shapeOnly(*ins[0]);
      out.deferred = nullptr;
      out.dtype = op.results[0]->type.dtype;
    }
    break;
  case ir::OpKind::Unary:
  case ir::OpKind::Binary:
  case ir::OpKind::Math:
  case ir::OpKind::Select:
  case ir::OpKind::Cast: {
    bool deferred = false;
    for (const RegVal *v : ins) {
      if (!v)
        return false;
      deferred |= v->deferred != nullptr;
    }
    const RegVal *like = widestLaidOut(ins);
    if (!like && deferred) {
      out.deferred = &op;
      break;
    }
    RegVal covering; // elementwise.cpp, emitElementwise: the same rule
    if (like && unionLayout(ins, *like, out.dtype, covering))
      like = &covering;
    if (like) {
      out.layout = like->layout;
      out.elems = like->elems;
      out.vecDim = like->vecDim;
      out.cloneSyms = like->cloneSyms;
    }
    for (const RegVal *v : ins)
      if (!v->laidOut())
        out.cloneSyms.insert(v->cloneSyms.begin(), v->cloneSyms.end());
    break;
  }
  case ir::OpKind::Reduce: {
    std::vector<std::vector<int64_t>> groups;
    if (!ins[0] || ins[0]->deferred || !reducedShape(op, *ins[0], out, groups))
      return false;
    break;
  }
  case ir::OpKind::Iterate: {
    std::vector<RegVal> carried;
    for (const RegVal *v : ins) {
      if (!v)
        return false;
      carried.push_back(shapeOnly(*v));
    }
    if (!predictCarried(op, carried))
      return false;
    for (size_t i = 0; i < op.results.size() && i < carried.size(); ++i)
      shapes[op.results[i]] = carried[i];
    return true;
  }
  default: return false;
  }
  if (op.results.size() != 1)
    return false;
  shapes[op.results[0]] = std::move(out);
  return true;
}

// Widens `carried` (the inits' shapes) to the shapes the loop `op` carries; false when some op
// of the body is not known to the rules or the shapes do not settle (the emitter then decides).
bool KernelEmitter::predictCarried(const ir::Op &op, std::vector<RegVal> &carried) const {
  const ir::Region &body = *op.regions[0];
  for (int round = 0; round < 4; ++round) {
    ShapeMap shapes;
    for (size_t i = 0; i < body.args.size() && i < carried.size(); ++i)
      shapes[body.args[i]] = carried[i];
    std::vector<const RegVal *> yielded;
    for (const auto &o : body.ops) {
      if (o->kind == ir::OpKind::Yield) {
        for (const ir::Value *y : o->operands)
          yielded.push_back(shapeIn(shapes, y));
        continue;
      }
      if (!opShape(*o, shapes))
        return false;
    }
    if (yielded.size() != carried.size())
      return false;
    bool settled = true;
    for (size_t i = 0; i < carried.size(); ++i) {
      if (!yielded[i])
        return false;
      if (carriedFits(carried[i], *yielded[i]))
        continue;
      if (carried[i].laidOut() || yielded[i]->deferred)
        return false;
      settled = false;
      widenCarried(carried[i], *yielded[i]);
    }
    if (settled)
      return true;
  }
  return false;
}

// A uniform init (a splat) takes the layout of what the body yields.
void KernelEmitter::widenCarried(RegVal &c, const RegVal &y) {
  c.cloneSyms.insert(y.cloneSyms.begin(), y.cloneSyms.end());
  c.elems = y.elems;
  c.vecDim = y.vecDim;
  c.layout = y.layout;
}

// What the carried-shapes dump says of one loop.
void KernelEmitter::dumpCarried(const ir::Op &op, const std::vector<RegVal> &carried,
                                bool predicted) {
  if (!dumps_ || !dumps_->wants("carried-shapes"))
    return;
  std::string &out = carriedText_;
  out += "loop over " + op.dims[0].str() + " (line " + std::to_string(op.loc.begin.line) +
         "): " + (predicted ? "predicted" : "not predicted, the inits' shapes fit") + "\n";
  for (size_t i = 0; i < carried.size(); ++i) {
    const RegVal &c = carried[i];
    const ir::Value *arg = op.regions[0]->args[i];
    out += "  " + (arg->name.empty() ? "%" + std::to_string(arg->id) : arg->name) + ": " +
           scalarTypeName(c.dtype);
    if (!c.laidOut()) {
      out += " uniform";
    } else {
      out += " layout {";
      bool first = true;
      for (const auto &[dim, di] : c.layout) {
        out += (first ? "" : ", ") + dim + ": " + di.start.str();
        first = false;
      }
      out += "}";
    }
    out += ", " + std::to_string(c.elems) + " per lane";
    if (!c.vecDim.empty())
      out += " along " + c.vecDim;
    std::string clones;
    for (const auto &s : c.cloneSyms)
      clones += (clones.empty() ? "" : " x ") + std::to_string(expansionCount(s));
    out += clones.empty() ? ", 1 clone\n" : ", clones " + clones + "\n";
  }
}

} // namespace wave::codegen::detail
