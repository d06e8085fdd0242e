// Streamed rows: the loop of a consumer (reduction, write) over a row held one chunk at a
// time, re-emitting the streamed values per trip.
#include "codegen/emitter/kernel_emitter.h"

namespace wave::codegen::detail {

// ---- streamed rows -------------------------------------------------------------------------
//
// A row of a dynamic length, or too long to hold in registers, is *streamed* (the
// distribution's DimIndex::chunk): a read of it, and element-wise ops on such values, emit
// nothing where they stand. Each consumer, a reduction or a write, runs one loop over the row
// with `chunk` elements per lane per trip, and re-emits inside it the ops its value depends on
// for the current chunk (materialize): softmax's `v = read(x)`, used by the max, by the sum of
// exp and by the write, is read three times (the later passes hit the cache when few rows are
// in flight). Inside a trip the values are ordinary register values (the chunk's index:
// g -> trip * chunk + g).

const DimIndex *KernelEmitter::streamedDim(const ir::Op &op) {
  const AccessIndex *ai = accessOf(op);
  if (!ai)
    return nullptr;
  for (const auto &di : op.mapping ? ai->regDims : ai->dims)
    if (di.chunk > 0)
      return &di;
  return nullptr;
}

DimIndex KernelEmitter::streamChunk(const DimIndex &di, bool innermost) const {
  sym::Facts f = facts_;
  f.setRange("$g", 0, stream_->chunk - 1);
  const IndexExpr g = IndexExpr::symbol("$g");
  DimIndex r = di;
  r.start = f.simplify(
      di.start.subs({{"$g", IndexExpr::symbol(stream_->sym) * stream_->chunk + g}}));
  r.elements = stream_->chunk;
  r.chunk = 0;
  r.contiguous = innermost && f.provesEqual(r.start.subs({{"$g", g + 1}}) - r.start, 1);
  return r;
}

// Trips of the loop over a streamed row: the extent of the row one wave walks (the dim, or its
// vector shape when a workgroup or tiling splits it) over the distance of consecutive chunks.
std::string KernelEmitter::streamTrips(const DimIndex &di, SourceRange loc) {
  const IndexExpr s = IndexExpr::symbol("$Sprobe");
  sym::Facts f = facts_;
  f.setRange("$Sprobe", 0);
  const IndexExpr e0 = di.start.subs({{"$g", s * di.chunk}});
  const IndexExpr e1 = di.start.subs({{"$g", (s + 1) * di.chunk}});
  auto stride = f.simplify(e1 - e0).asInteger();
  if (!stride || *stride <= 0) {
    unsupported(DiagId::UnsupportedStreamedRow,
                "a streamed row whose chunks are not evenly spaced (" + di.start.str() + ")", loc);
    return "";
  }
  IndexExpr extent = di.dim.size;
  if (k_.workgroupFor(di.dim) || k_.tilingFor(di.dim))
    if (auto vs = k_.vectorShapeFor(di.dim))
      extent = *vs;
  return lowerIndex(facts_.simplify(ceilDiv(extent, IndexExpr(*stride))));
}

bool KernelEmitter::materialize(const ir::Value *v,
                                std::vector<std::pair<const ir::Value *, RegVal>> &saved) {
  auto it = values_.find(v);
  if (it == values_.end() || !it->second.lazy)
    return true;
  const ir::Op *def = it->second.lazy;
  for (const ir::Value *o : def->operands)
    if (!materialize(o, saved))
      return false;
  saved.push_back({v, values_.at(v)});
  return emitOp(*def);
}

void KernelEmitter::restore(std::vector<std::pair<const ir::Value *, RegVal>> &saved) {
  for (auto it = saved.rbegin(); it != saved.rend(); ++it)
    values_[it->first] = it->second;
  saved.clear();
}

bool KernelEmitter::deferStreamed(const ir::Op &op) {
  RegVal lz;
  lz.lazy = &op;
  lz.dtype = op.results[0]->type.dtype;
  for (const ir::Value *o : op.operands) {
    const RegVal &v = values_.at(o);
    if (v.lazy) // operands streamed along different dims: only a write re-reads them
      lz.streamDim = !lz.streamDim.empty() && lz.streamDim != v.streamDim
                         ? std::string(kMixedStreams)
                         : v.streamDim;
    for (const auto &[dim, di] : v.layout)
      lz.layout.emplace(dim, di);
    lz.cloneSyms.insert(v.cloneSyms.begin(), v.cloneSyms.end());
  }
  values_[op.results[0]] = std::move(lz);
  return true;
}

bool KernelEmitter::emitStreamedReduce(const ir::Op &op) {
  const ir::Value *xv = op.operands[0];
  const RegVal x = values_.at(xv);
  const std::string dim = op.dims[0].str();
  if (x.streamDim != dim)
    return unsupported(DiagId::UnsupportedStreamedRow,
                       x.streamDim == kMixedStreams
                           ? std::string("operands streamed along different dims")
                           : "a reduction over " + dim + " of a row streamed along " + x.streamDim,
                       op.loc);
  auto cmb = combinerFor(op.reduce, x.dtype);
  if (!cmb)
    return unsupported(std::string("a reduction of ") + scalarTypeName(x.dtype) + " values on " +
                           target_.name,
                       op.loc);
  const Combiner &c = *cmb;
  const DimIndex &di = x.layout.at(dim);
  const int64_t u = di.chunk;
  const std::string trips = streamTrips(di, op.loc);
  if (failed_)
    return false;
  const unsigned n = next_++;
  const std::string sym = "$S" + std::to_string(n), loop = "%sloop" + std::to_string(n),
                    k = "%sk" + std::to_string(n);
  facts_.setRange(sym, 0);
  const std::vector<CloneAssign> clones = clonesOver(x.cloneSyms);
  const std::string vty = vecType(x.dtype, u), id = identitySplat(c, u);
  std::string ia, tys;
  for (size_t i = 0; i < clones.size(); ++i) {
    ia += (i ? ", " : "") + loop + "_" + std::to_string(i) + " = " + id;
    tys += (i ? ", " : "") + vty;
  }
  line(loop + ":" + std::to_string(clones.size()) + " = scf.for " + k + " = " + constIndex(0) +
       " to " + trips + " step " + constIndex(1) + " iter_args(" + ia + ") -> (" + tys + ") {");
  const std::string outer = indent_;
  auto cache = exprCache_;
  indent_ += "  ";
  stream_ = Stream{dim, sym, u};
  symbols_[sym] = k;
  std::vector<std::pair<const ir::Value *, RegVal>> saved;
  bool ok = materialize(xv, saved);
  RegVal chunk;
  if (ok) {
    chunk = values_.at(xv);
    ok = chunk.elems == u && chunk.layout.count(dim);
    if (!ok)
      unsupported(DiagId::UnsupportedStreamedRow,
                  "a streamed value with " + std::to_string(chunk.elems) +
                      " elements per lane per trip",
                  op.loc);
  }
  if (ok) {
    std::string ys;
    for (size_t i = 0; i < clones.size(); ++i) {
      std::string v = maskToIdentity(c, chunk.layout.at(dim), clones[i], operandAt(chunk, clones[i], u), u);
      ys += (i ? ", " : "") + combine(c, loop + "_" + std::to_string(i), v, u);
    }
    line("scf.yield " + ys + " : " + tys);
  }
  restore(saved);
  stream_.reset();
  symbols_.erase(sym);
  indent_ = outer;
  exprCache_ = cache;
  line("}");
  if (!ok || failed_)
    return false;
  // The per-lane partial results: the chunk's layout at trip 0, nothing masked any more.
  RegVal held = chunk;
  held.clones.clear();
  for (size_t i = 0; i < clones.size(); ++i)
    held.clones[cloneKey(clones[i], held.cloneSyms)] = loop + "#" + std::to_string(i);
  for (auto &[name, d] : held.layout) {
    d.start = facts_.simplify(d.start.subs({{sym, IndexExpr(0)}}));
    d.masked = false;
  }
  return reduceHeld(op, held, /*masked=*/false);
}

std::vector<const DimIndex *> KernelEmitter::walkedDims(const ir::Op &op) {
  std::vector<const DimIndex *> out;
  if (const AccessIndex *ai = accessOf(op))
    for (const auto &di : op.mapping ? ai->regDims : ai->dims)
      if (di.walked)
        out.push_back(&di);
  return out;
}

// A write of a streamed row, or whose access walks a dim (DimIndex::walked): one loop per
// walked dim over the whole dim (the index symbol $W_<dim>), inside them the loop over the
// chunks of the dim the write streams, if any, and inside that the value re-emitted for the
// current element of the walked dims and chunk. When the value streams along a dim the write
// does not stream (a transposing copy whose two dims are dynamic and unsplit: the read streams
// N, the write streams M and walks N), its reads are re-read in the write's layout
// (relayout_): each lane loads the elements it stores, through the read's own addresses, and
// no value changes lanes.
bool KernelEmitter::emitStreamedWrite(const ir::Op &op) {
  const DimIndex *di = streamedDim(op);
  const RegVal &v = values_.at(op.operands[0]);
  const std::vector<const DimIndex *> walked = walkedDims(op);
  const bool across = v.lazy && (!di || v.streamDim != di->dim.str());
  if (across && walked.empty())
    return unsupported(DiagId::UnsupportedStreamedRow,
                       "a write of a streamed row in another layout", op.loc);
  std::vector<std::string> bounds;
  for (const DimIndex *w : walked)
    bounds.push_back(lowerIndex(facts_.simplify(w->dim.size)));
  const std::string trips = di ? streamTrips(*di, op.loc) : "";
  if (failed_)
    return false;
  const std::string outer = indent_;
  auto cache = exprCache_;
  std::vector<std::string> bound;
  for (size_t i = 0; i < walked.size(); ++i) {
    const std::string sym = "$W_" + walked[i]->dim.str(), k = "%wk" + std::to_string(next_++);
    line("scf.for " + k + " = " + constIndex(0) + " to " + bounds[i] + " step " + constIndex(1) +
         " {");
    indent_ += "  ";
    symbols_[sym] = k;
    bound.push_back(sym);
  }
  std::string sym;
  if (di) {
    const unsigned n = next_++;
    sym = "$S" + std::to_string(n);
    const std::string k = "%sk" + std::to_string(n);
    facts_.setRange(sym, 0);
    line("scf.for " + k + " = " + constIndex(0) + " to " + trips + " step " + constIndex(1) +
         " {");
    indent_ += "  ";
    stream_ = Stream{di->dim.str(), sym, di->chunk};
    symbols_[sym] = k;
  }
  if (across) {
    std::map<std::string, DimIndex> like;
    const AccessIndex *ai = accessOf(op);
    for (const auto &d : op.mapping ? ai->regDims : ai->dims)
      like.emplace(d.dim.str(), d);
    relayout_ = std::move(like);
  }
  std::vector<std::pair<const ir::Value *, RegVal>> saved;
  bool ok = materialize(op.operands[0], saved) && emitWrite(op);
  restore(saved);
  relayout_.reset();
  stream_.reset();
  if (di) {
    symbols_.erase(sym);
    indent_.resize(indent_.size() - 2);
    line("}");
  }
  for (auto it = bound.rbegin(); it != bound.rend(); ++it) {
    symbols_.erase(*it);
    indent_.resize(indent_.size() - 2);
    line("}");
  }
  indent_ = outer;
  exprCache_ = cache;
  return ok && !failed_;
}

} // namespace wave::codegen::detail
