// Memory accesses: the access of a read or write, bounds checks and masks, wide and
// element-wise loads and stores, the masked-store prefix loop; the read and write ops.
#include "codegen/emitter/kernel_emitter.h"
#include "passes/legalize.h"

namespace wave::codegen::detail {

// ---- memory accesses ---------------------------------------------------------------------

bool KernelEmitter::prepareAccess(const ir::Op &op, const ir::Value *mem, Access &acc,
                                  bool registerSide) {
  const bool allocated = isAllocated(mem);
  if (mem->paramIndex < 0 && !allocated)
    return unsupported("an access to a tensor that is not a kernel parameter", op.loc);
  // i1 tensors are excluded: LLVM packs vector<N x i1> into bits in memory.
  if (mlirType(mem->type.dtype).empty() || mem->type.dtype == ScalarType::I1)
    return unsupported(std::string("tensors of element type ") + scalarTypeName(mem->type.dtype),
                       op.loc);
  const AccessIndex *ai = accessOf(op);
  if (!ai || ai->dims.size() != mem->type.shape.size())
    return unsupported("an access without a distributed index", op.loc);
  acc.mem = mem;
  acc.base = allocated ? "" : pointers_.at(mem);
  acc.dtype = mem->type.dtype;
  for (const auto &memDim : mem->type.shape) {
    const DimIndex *di = dimIndexOf(*ai, memDim);
    if (!di)
      return unsupported("an access whose index misses dim " + memDim.str(), op.loc);
    acc.dims.push_back(*di);
    acc.sizes.push_back(memDim.size);
  }
  // A read re-emitted by a write that lays its value out otherwise (stream.cpp,
  // emitStreamedWrite): each dim takes the write's index, so the lane loads what it stores.
  if (relayout_ && op.kind == ir::OpKind::Read && !registerSide) {
    if (op.mapping || allocated)
      return unsupported(DiagId::UnsupportedStreamedRow,
                         "a mapped read, or a read of an allocated tile, re-read in the layout "
                         "of a write that streams another dim",
                         op.loc);
    for (size_t i = 0; i < acc.dims.size(); ++i) {
      auto it = relayout_->find(acc.dims[i].dim.str());
      if (it == relayout_->end())
        return unsupported(DiagId::UnsupportedStreamedRow,
                           "a streamed read with a dim its write lacks (" +
                               acc.dims[i].dim.str() + ")",
                           op.loc);
      DimIndex di = it->second;
      di.maskedTile = false;
      di.contiguous = i + 1 == acc.dims.size() && di.start.dependsOn("$g") &&
                      facts_.provesEqual(di.start.subs({{"$g", IndexExpr::symbol("$g") + 1}}) -
                                             di.start,
                                         1);
      acc.dims[i] = di;
    }
  }
  if (op.mapping) {
    acc.mapped = true;
    acc.reg = ai->regDims;
    if (registerSide) {
      acc.mapped = false;
      acc.reg.clear();
      acc.dims = ai->regDims;
      acc.sizes.clear();
      for (const auto &ri : ai->regDims)
        acc.sizes.push_back(ri.dim.size);
    }
  }
  // A streamed row (of a register dim of a mapped access): every index that moves with g,
  // on either side, takes the chunk of the current trip.
  for (const auto &ri : acc.reg) {
    if (ri.chunk <= 0)
      continue;
    if (!stream_ || stream_->dim != ri.dim.str())
      return unsupported(DiagId::UnsupportedStreamedRow,
                         "a streamed row of " + ri.dim.str() + " outside the loop of a consumer",
                         op.loc);
    for (auto &r : acc.reg)
      if (r.start.dependsOn("$g"))
        r = streamChunk(r, true);
    for (size_t i = 0; i < acc.dims.size(); ++i)
      if (acc.dims[i].start.dependsOn("$g"))
        acc.dims[i] = streamChunk(acc.dims[i], i + 1 == acc.dims.size());
    break;
  }
  for (const auto &ri : acc.reg)
    if (ri.masked)
      acc.iter.push_back(ri);
  // A tensor that may have no elements has no element 0 for a masked-off load to clamp to.
  // (A streamed or walked dim is exempt: when it is empty its consumer's loop runs no trips.)
  for (const auto &d : acc.dims)
    acc.mayBeEmpty |= d.chunk <= 0 && !d.walked && mayBeEmptyDim(d.dim);
  // A streamed row is accessed one chunk per trip of its consumer's loop.
  for (size_t i = 0; i < acc.dims.size(); ++i) {
    if (acc.dims[i].chunk <= 0)
      continue;
    if (!stream_ || stream_->dim != acc.dims[i].dim.str())
      return unsupported(
          DiagId::UnsupportedStreamedRow,
          "a streamed row of " + acc.dims[i].dim.str() + " outside the loop of a consumer", op.loc);
    acc.dims[i] = streamChunk(acc.dims[i], i + 1 == acc.dims.size());
  }
  acc.strides.assign(acc.sizes.size(), IndexExpr(1));
  for (size_t i = acc.sizes.size(); i-- > 1;)
    acc.strides[i - 1] = acc.strides[i] * acc.sizes[i];
  if (allocated && !rebaseAllocated(op, mem, acc))
    return false;
  return setVectorDim(acc, op.loc);
}

bool KernelEmitter::emitAllocate(const ir::Op &op) {
  // Its tile was sized and listed before emission (reduction_scratch.cpp, planAllocate); the
  // shared-memory plan places it with the others. Nothing to emit.
  if (!allocated_.count(&op))
    return unsupported("an allocate whose tile the shared-memory plan did not size (a wavec bug)",
                       op.loc);
  return true;
}

// An access to an allocated tile keeps its (global) indices and their masks; its offset is the
// index minus the workgroup's origin (passes/allocate_access.cpp), in the tile's strides.
bool KernelEmitter::rebaseAllocated(const ir::Op &op, const ir::Value *mem, Access &acc) {
  // The legalize pass refused what follows (passes/legalize.cpp, allocatedAccess): backstops.
  auto at = allocated_.find(mem->def);
  if (at == allocated_.end())
    return unsupported("an access to an allocated tile before its allocate", op.loc);
  AllocatePlace place;
  std::string why;
  if (!allocateAccess(k_, d_, op, mem, place, why))
    return unsupported(why, op.loc);
  auto [it, first] = allocPlaces_.emplace(mem->def, place);
  if (!samePlace(it->second, place))
    return unsupported("an access to an allocated tile at another origin or loop", op.loc);
  const std::vector<IndexExpr> &origin = place.origin;
  const LdsAlloc &al = allocs_[at->second];
  acc.alloc = at->second;
  acc.base = ldsBase(at->second);
  acc.ptr = "!llvm.ptr<3>";
  acc.mayBeEmpty = false; // the tile always has its elements
  acc.strides = al.strides;
  IndexExpr extra(0);
  for (size_t i = 0; i < origin.size(); ++i)
    extra = extra - origin[i] * al.strides[i];
  acc.extra = extra;
  return true;
}

bool KernelEmitter::setVectorDim(Access &acc, SourceRange loc) {
  // Element g runs along the dims whose index depends on it (one for plain and MFMA layouts,
  // two for mma.sync's A fragment, several for a mapped access).
  int along = 0;
  acc.vecDim = -1;
  for (size_t i = 0; i < acc.dims.size(); ++i) {
    if (!acc.dims[i].start.dependsOn("$g"))
      continue;
    if (acc.dims[i].elements <= 0)
      return unsupported("a dynamic number of elements per thread", loc);
    ++along;
    acc.vecDim = static_cast<int>(i);
    acc.elems = std::max(acc.elems, acc.dims[i].elements);
  }
  if (along != 1)
    acc.vecDim = -1;
  // A mapped access holds the register side's elements even where the mapping sends several of
  // them to one memory element (`j // 2`: two lanes' elements share a tensor element), so the
  // memory side's index need not depend on g at all.
  for (const auto &r : acc.reg)
    if (r.start.dependsOn("$g") && r.elements > 0)
      acc.elems = std::max(acc.elems, r.elements);
  return true;
}

std::vector<std::pair<int64_t, int64_t>> KernelEmitter::pieces(const Access &acc,
                                                               const CloneAssign &a) {
  // An XOR-swizzled tile's units are consecutive only within themselves: pieces of a unit from
  // a start the facts prove unit-aligned, else one element at a time.
  const int64_t e = acc.elems,
                most = std::max<int64_t>(1, (acc.xorUnit ? acc.xorUnit : 16) / byteSize(acc.dtype));
  std::vector<std::pair<int64_t, int64_t>> out;
  if (e == 1)
    return {{0, 1}};
  const size_t last = acc.dims.size() - 1;
  if (acc.xorUnit && (acc.vecDim != static_cast<int>(last) ||
                      !facts_.provesExact(dimIndex(acc, last, a, 0), IndexExpr(most)))) {
    for (int64_t g = 0; g < e; ++g)
      out.push_back({g, 1});
    return out;
  }
  if (acc.vecDim >= 0 && acc.dims[acc.vecDim].contiguous) {
    for (int64_t k0 = 0; k0 < e; k0 += most)
      out.push_back({k0, std::min(most, e - k0)});
    return out;
  }
  // Runs of elements at consecutive addresses, split into powers of two.
  int64_t g0 = 0;
  for (int64_t g = 1; g <= e; ++g) {
    bool next = g < e && g - g0 < most &&
                facts_.provesEqual(linearOffset(acc, a, g) - linearOffset(acc, a, g - 1), 1);
    if (next)
      continue;
    int64_t n = g - g0;
    while (n > 0) {
      int64_t p = 1;
      while (p * 2 <= n)
        p *= 2;
      out.push_back({g0, p});
      g0 += p;
      n -= p;
    }
  }
  return out;
}

IndexExpr KernelEmitter::indexAt(const IndexExpr &start, const CloneAssign &a, int64_t g) const {
  std::map<std::string, IndexExpr> subs{{"$g", IndexExpr(g)}};
  for (const auto &[name, value] : subs_)
    subs[name] = value;
  for (const auto &[s, v] : a)
    subs[s] = IndexExpr(v);
  return start.subs(subs);
}

IndexExpr KernelEmitter::dimIndex(const Access &acc, size_t d, const CloneAssign &a, int64_t g) {
  return indexAt(acc.dims[d].start, a, g);
}

std::vector<KernelEmitter::Bound> KernelEmitter::boundsOf(const Access &acc) const {
  std::vector<Bound> out;
  // A write's elements past its workgroup's tile are masked like those past the tensor's end.
  auto limit = [](const DimIndex &d, const IndexExpr &size) {
    return d.maskedTile ? min(size, d.tileEnd) : size;
  };
  for (size_t i = 0; i < acc.dims.size(); ++i)
    if (acc.dims[i].masked || acc.dims[i].maskedBelow)
      out.push_back({&acc.dims[i].start, limit(acc.dims[i], acc.sizes[i]), acc.dims[i].masked,
                     acc.dims[i].maskedBelow});
  for (const auto &ri : acc.iter)
    out.push_back({&ri.start, limit(ri, ri.dim.size), true, false});
  return out;
}

bool KernelEmitter::stepsInG(const IndexExpr &start, int64_t elems, bool unit) const {
  if (elems <= 1)
    return true;
  sym::Facts f = facts_;
  f.setRange("$g", 0, elems - 2);
  const IndexExpr g = IndexExpr::symbol("$g");
  const IndexExpr step = f.simplify(start.subs({{"$g", g + 1}}) - start);
  if (unit)
    return f.provesEqual(step, IndexExpr(1));
  return f.rangeOf(step).lo >= 0;
}

bool KernelEmitter::prefixBounds(const Access &acc) const {
  if (acc.elems == 1)
    return true;
  if (!acc.mapped)
    return acc.vecDim >= 0 && acc.dims[acc.vecDim].contiguous;
  for (const Bound &b : boundsOf(acc))
    if (b.start->dependsOn("$g") && (b.lower || !stepsInG(*b.start, acc.elems, false)))
      return false;
  return true;
}

IndexExpr KernelEmitter::linearOffset(const Access &acc, const CloneAssign &a, int64_t g) {
  std::vector<IndexExpr> idx;
  for (size_t i = 0; i < acc.dims.size(); ++i)
    idx.push_back(dimIndex(acc, i, a, g));
  return offsetOf(acc, idx);
}

// Column `col` of row `r` in the XOR layout of rows of `cols` elements of `bytes` bytes, in units
// of `unit` bytes (SharedTile::xorUnit): unit u at u XOR ((r / period) % phases), bit by bit.
// An involution: it also maps a stored column back to the element's.
IndexExpr xorUnitColumn(const IndexExpr &r, const IndexExpr &col, int64_t cols, int64_t bytes,
                        int64_t unit) {
  const int64_t q = unit / bytes;
  int64_t period = 1, phases = 1;
  xorUnitPhases(cols * bytes, unit, period, phases);
  const IndexExpr u = floorDiv(col, q), s = mod(floorDiv(r, period), phases);
  IndexExpr x = u - mod(u, phases);
  for (int64_t bit = 1; bit < phases; bit *= 2)
    x += bit * mod(floorDiv(u, bit) + floorDiv(s, bit), 2);
  return x * q + mod(col, q);
}

IndexExpr KernelEmitter::offsetOf(const Access &acc, const std::vector<IndexExpr> &idx) const {
  IndexExpr off = acc.extra;
  const size_t n = idx.size();
  for (size_t i = 0; i < n; ++i)
    if ((!acc.swizzle && !acc.xorBytes && !acc.xorUnit) || i + 2 < n)
      off += idx[i] * acc.strides[i];
  if (acc.xorUnit && n >= 2) {
    // Unpadded rows of C elements in units of q (SharedTile::xorUnit): unit u of row r at unit
    // u XOR ((r / period) % phases) (passes/kernel_plan.h, xorUnitPhases), bit by bit.
    const int64_t c = *acc.sizes[n - 1].asInteger();
    const IndexExpr &r = idx[n - 2];
    return off + r * c + xorUnitColumn(r, idx[n - 1], c, byteSize(acc.dtype), acc.xorUnit);
  }
  if (acc.xorBytes && n >= 2) {
    // wgmma's canonical K-major layout with the W-byte swizzle (W = 32, 64, 128; PTX ISA,
    // "Shared memory matrix layout"): rows of W bytes, 16-byte chunk c of row r at chunk
    // c XOR ((r * W / 128) % (W / 16)), the hardware's XOR of address bits 4.. with bits 7..
    // (the tile starts at a multiple of 1024 bytes). XOR of the bits, one at a time.
    const int64_t b = byteSize(acc.dtype), q = 16 / b, w = acc.xorBytes;
    const int64_t chunks = w / 16, period = 128 / w;
    const IndexExpr &r = idx[n - 2];
    IndexExpr col = idx[n - 1];
    if (acc.blockBytes) {
      // Rows wider than W: column block col / (W / b), each a [rows, W bytes] tile.
      off += floorDiv(col, w / b) * (acc.blockBytes / b);
      col = mod(col, w / b);
    }
    const IndexExpr phase = mod(floorDiv(r, period), chunks), chunk = floorDiv(col, q);
    IndexExpr x = 0;
    for (int64_t bit = 1; bit < chunks; bit *= 2)
      x += bit * mod(floorDiv(chunk, bit) + floorDiv(phase, bit), 2);
    return off + r * (w / b) + x * q + mod(col, q);
  }
  if (acc.swizzle && n >= 2) {
    // Row r, column c of a tile with C columns, in chunks of q elements (16 bytes), rows per
    // 128-byte bank period p: chunk (c / q + r / p) % (C / q).
    const int64_t q = acc.swizzle, c = acc.sizes[n - 1].asInteger().value_or(q);
    const int64_t period = std::max<int64_t>(1, 128 / (c * byteSize(acc.dtype)));
    const IndexExpr &r = idx[n - 2], &col = idx[n - 1];
    off += r * c + mod(floorDiv(col, q) + floorDiv(r, period), c / q) * q + mod(col, q);
  }
  return off;
}

std::string KernelEmitter::gep(const Access &acc, const IndexExpr &offset) {
  std::string idx = lowerIndex(offset);
  std::string i64 = fresh(), p = fresh();
  line(i64 + " = arith.index_cast " + idx + " : index to i64");
  line(p + " = llvm.getelementptr " + acc.base + "[" + i64 + "] : (" + acc.ptr + ", i64) -> " +
       acc.ptr + ", " + mlirType(acc.dtype));
  return p;
}

unsigned KernelEmitter::provenAlignment(const Access &acc, const IndexExpr &offset,
                                        int64_t maxElems) {
  int64_t p = 1;
  while (p * 2 <= maxElems && facts_.provesExact(offset, IndexExpr(p * 2)))
    p *= 2;
  return static_cast<unsigned>(p * byteSize(acc.dtype));
}

void KernelEmitter::boundChecks(const Bound &b, const std::string &idx,
                                std::vector<std::string> &out) {
  if (b.upper)
    out.push_back(cmpLt(idx, lowerIndex(b.size)));
  if (b.lower) {
    std::string r = fresh();
    line(r + " = arith.cmpi sge, " + idx + ", " + constIndex(0) + " : index");
    out.push_back(r);
  }
}

std::string KernelEmitter::inBounds(const Access &acc, const CloneAssign &a, int64_t g) {
  std::vector<std::string> conds;
  for (const Bound &b : boundsOf(acc))
    boundChecks(b, lowerIndex(indexAt(*b.start, a, g)), conds);
  return conds.empty() ? "" : andAll(conds);
}

std::string KernelEmitter::elementLoad(const Access &acc, const CloneAssign &a, int64_t g,
                                       bool guarded, bool branchy) {
  std::string ty = mlirType(acc.dtype);
  std::string cond = guarded ? inBounds(acc, a, g) : "";
  auto load = [&]() {
    std::string p = gep(acc, linearOffset(acc, a, g)), v = fresh();
    line(v + " = llvm.load " + p + " {alignment = " + std::to_string(byteSize(acc.dtype)) +
         " : i64} : " + acc.ptr + " -> " + ty);
    return v;
  };
  if (cond.empty())
    return load();
  if (!branchy) {
    // Branch-free: a masked-off lane loads element 0 (valid: a launched grid is never empty)
    // and the select replaces the value with 0.
    std::string safe = fresh(), p = fresh(), i64 = fresh(), v = fresh(), z = fresh(), r = fresh();
    line(safe + " = arith.select " + cond + ", " + lowerIndex(linearOffset(acc, a, g)) + ", " +
         constIndex(0) + " : index");
    line(i64 + " = arith.index_cast " + safe + " : index to i64");
    line(p + " = llvm.getelementptr " + acc.base + "[" + i64 + "] : (" + acc.ptr + ", i64) -> " +
         acc.ptr + ", " + ty);
    line(v + " = llvm.load " + p + " {alignment = " + std::to_string(byteSize(acc.dtype)) +
         " : i64} : " + acc.ptr + " -> " + ty);
    line(z + " = arith.constant " + zeroLit(acc.dtype) + " : " + ty);
    line(r + " = arith.select " + cond + ", " + v + ", " + z + " : " + ty);
    return r;
  }
  std::string r = fresh();
  line(r + " = scf.if " + cond + " -> (" + ty + ") {");
  std::string saved = indent_;
  indent_ += "  ";
  auto cache = exprCache_;
  line("scf.yield " + load() + " : " + ty);
  exprCache_ = cache;
  indent_ = saved;
  line("} else {");
  std::string z = fresh();
  indent_ += "  ";
  line(z + " = arith.constant " + zeroLit(acc.dtype) + " : " + ty);
  line("scf.yield " + z + " : " + ty);
  indent_ = saved;
  line("}");
  return r;
}

// Contiguous: pieces of at most 128 bits; otherwise one element at a time.
int64_t KernelEmitter::wantedAlignElems(const Access &acc) {
  if (acc.elems <= 1 || acc.vecDim < 0 || !acc.dims[acc.vecDim].contiguous)
    return 1;
  int64_t limit = std::min<int64_t>(acc.elems, std::max<int64_t>(1, 16 / byteSize(acc.dtype)));
  int64_t p = 1;
  while (p * 2 <= limit)
    p *= 2;
  return p;
}

std::string KernelEmitter::alignmentCheck(const Access &acc, const CloneAssign &a) {
  int64_t p = wantedAlignElems(acc);
  if (p <= 1)
    return "";
  IndexExpr off = linearOffset(acc, a, 0);
  if (provenAlignment(acc, off, p) >= p * byteSize(acc.dtype))
    return "";
  std::string low = fresh(), r = fresh();
  line(low + " = arith.andi " + lowerIndex(off) + ", " + constIndex(p - 1) + " : index");
  line(r + " = arith.cmpi eq, " + low + ", " + constIndex(0) + " : index");
  return r;
}

std::string KernelEmitter::fastPath(const Access &acc, const CloneAssign &a, bool &checkedAligned) {
  std::vector<std::string> conds;
  // Contiguous elements are in bounds when the last one is; others are checked one by one.
  const bool contiguous = prefixBounds(acc);
  for (int64_t g = contiguous ? acc.elems - 1 : 0; g < acc.elems; ++g) {
    std::string inb = inBounds(acc, a, g);
    if (!inb.empty())
      conds.push_back(inb);
  }
  std::string al = alignmentCheck(acc, a);
  checkedAligned = !al.empty();
  if (checkedAligned)
    conds.push_back(al);
  return conds.empty() ? "" : andAll(conds);
}

std::string KernelEmitter::wideLoad(const Access &acc, const CloneAssign &a, bool checkedAligned) {
  const int64_t e = acc.elems;
  const std::string vty = vecType(acc.dtype, e);
  if (e == 1)
    return elementLoad(acc, a, 0, false);
  std::string vec = fresh();
  line(vec + " = arith.constant dense<" + zeroLit(acc.dtype) +
       "> : " + vty);
  for (const auto &[k0, n] : pieces(acc, a)) {
    IndexExpr off = linearOffset(acc, a, k0);
    if (n == 1) {
      std::string s = elementLoad(acc, a, k0, false), r = fresh();
      line(r + " = vector.insert " + s + ", " + vec + " [" + std::to_string(k0) +
           "] : " + mlirType(acc.dtype) + " into " + vty);
      vec = r;
      continue;
    }
    std::string p = gep(acc, off), piece = fresh();
    std::string pty = vecType(acc.dtype, n);
    unsigned align =
        checkedAligned ? wantedAlignElems(acc) * byteSize(acc.dtype) : provenAlignment(acc, off, n);
    line(piece + " = llvm.load " + p + " {alignment = " + std::to_string(align) +
         " : i64} : " + acc.ptr + " -> " + pty);
    if (n == e)
      return piece;
    for (int64_t j = 0; j < n; ++j) {
      std::string x = fresh(), r = fresh();
      line(x + " = vector.extract " + piece + "[" + std::to_string(j) +
           "] : " + mlirType(acc.dtype) + " from " + pty);
      line(r + " = vector.insert " + x + ", " + vec + " [" + std::to_string(k0 + j) +
           "] : " + mlirType(acc.dtype) + " into " + vty);
      vec = r;
    }
  }
  return vec;
}

std::string KernelEmitter::loadClone(const Access &acc, const CloneAssign &a) {
  IndexExpr uniform(0);
  if (bufferEligible(acc, a, uniform))
    return bufferLoad(acc, a, uniform);
  const int64_t e = acc.elems;
  bool checkedAligned = false;
  std::string fast = fastPath(acc, a, checkedAligned);
  if (fast.empty())
    return wideLoad(acc, a, false);
  if (e == 1)
    return elementLoad(acc, a, 0, true);
  const std::string vty = vecType(acc.dtype, e);
  std::string r = fresh(), saved = indent_;
  auto cache = exprCache_;
  line(r + " = scf.if " + fast + " -> (" + vty + ") {");
  indent_ += "  ";
  line("scf.yield " + wideLoad(acc, a, checkedAligned) + " : " + vty);
  indent_ = saved;
  exprCache_ = cache;
  line("} else {");
  indent_ += "  ";
  std::string vec = fresh();
  line(vec + " = arith.constant dense<" + zeroLit(acc.dtype) +
       "> : " + vty);
  for (int64_t g = 0; g < e; ++g) {
    // Branch-free masking loads element 0 for a masked-off element, which exists when the
    // launch covers an element of the tensor; a mapped access may read a tensor with no
    // elements at all (a gather from an empty source): it branches instead.
    std::string s = elementLoad(acc, a, g, true, /*branchy=*/acc.mayBeEmpty), n = fresh();
    line(n + " = vector.insert " + s + ", " + vec + " [" + std::to_string(g) +
         "] : " + mlirType(acc.dtype) + " into " + vty);
    vec = n;
  }
  line("scf.yield " + vec + " : " + vty);
  indent_ = saved;
  exprCache_ = cache;
  line("}");
  return r;
}

void KernelEmitter::wideStore(const Access &acc, const CloneAssign &a, const std::string &value,
                              bool checkedAligned) {
  const int64_t e = acc.elems;
  const std::string ty = mlirType(acc.dtype), vty = vecType(acc.dtype, e);
  auto storeElement = [&](int64_t g, const std::string &scalar) {
    std::string p = gep(acc, linearOffset(acc, a, g));
    line("llvm.store " + scalar + ", " + p + " {alignment = " +
         std::to_string(byteSize(acc.dtype)) + " : i64} : " + ty + ", " + acc.ptr);
  };
  auto extract = [&](int64_t g) {
    std::string x = fresh();
    line(x + " = vector.extract " + value + "[" + std::to_string(g) + "] : " + ty + " from " + vty);
    return x;
  };
  if (e == 1) {
    storeElement(0, value);
    return;
  }
  for (const auto &[k0, n] : pieces(acc, a)) {
    if (n == 1) {
      storeElement(k0, extract(k0));
      continue;
    }
    std::string pty = vecType(acc.dtype, n), piece = value;
    if (n != e) {
      piece = fresh();
      std::string mask;
      for (int64_t j = 0; j < n; ++j)
        mask += (j ? ", " : "") + std::to_string(k0 + j);
      line(piece + " = vector.shuffle " + value + ", " + value + " [" + mask + "] : " + vty + ", " +
           vty);
    }
    IndexExpr off = linearOffset(acc, a, k0);
    std::string p = gep(acc, off);
    unsigned align =
        checkedAligned ? wantedAlignElems(acc) * byteSize(acc.dtype) : provenAlignment(acc, off, n);
    line("llvm.store " + piece + ", " + p + " {alignment = " + std::to_string(align) +
         " : i64} : " + pty + ", " + acc.ptr);
  }
}

bool KernelEmitter::prefixMasked(const Access &acc) const {
  if (acc.vecDim < 0 || !acc.dims[acc.vecDim].contiguous || acc.swizzle || acc.xorUnit ||
      acc.elems <= 1)
    return false;
  // A mapped access: every check that moves with g must be an upper bound moving by 1.
  for (const Bound &b : boundsOf(acc))
    if (b.start->dependsOn("$g") && (b.lower || !stepsInG(*b.start, acc.elems, true)))
      return false;
  return true;
}

// Along the contiguous dim, element g's index is idx0 + g: the in-bounds elements are the first
// clamp(size - idx0, 0, E) (0 when another masked dim is out of bounds, which does not depend on
// g). A mapped access may have several checked indices moving by 1 with g (the memory dim and
// an iteration bound): the prefix is the shortest. One loop stores them: a single small block
// instead of one branch per element.
void KernelEmitter::storePrefix(const Access &acc, const CloneAssign &a, const std::string &value) {
  const int64_t e = acc.elems;
  const size_t vd = static_cast<size_t>(acc.vecDim);
  const std::string ty = mlirType(acc.dtype), vty = vecType(acc.dtype, e);
  std::string n = constIndex(e);
  const std::vector<Bound> bounds = boundsOf(acc);
  for (const Bound &b : bounds) {
    if (!b.start->dependsOn("$g"))
      continue;
    std::string rem = binop("subi", lowerIndex(b.size), lowerIndex(indexAt(*b.start, a, 0)));
    std::string lo = binop("maxsi", rem, constIndex(0));
    n = binop("minsi", lo, n);
  }
  std::vector<std::string> others;
  for (const Bound &b : bounds) {
    if (b.start->dependsOn("$g"))
      continue;
    boundChecks(b, lowerIndex(indexAt(*b.start, a, 0)), others);
  }
  if (!others.empty()) {
    std::string r = fresh();
    line(r + " = arith.select " + andAll(others) + ", " + n + ", " + constIndex(0) + " : index");
    n = r;
  }
  std::string first = lowerIndex(linearOffset(acc, a, 0));
  std::string stride = lowerIndex(acc.strides[vd]);
  std::string g = fresh(), saved = indent_;
  auto cache = exprCache_;
  line("scf.for " + g + " = " + constIndex(0) + " to " + n + " step " + constIndex(1) + " {");
  indent_ += "  ";
  std::string x = fresh(), step = binop("muli", g, stride), off = binop("addi", first, step);
  line(x + " = vector.extract " + value + "[" + g + "] : " + ty + " from " + vty);
  std::string i64 = fresh(), p = fresh();
  line(i64 + " = arith.index_cast " + off + " : index to i64");
  line(p + " = llvm.getelementptr " + acc.base + "[" + i64 + "] : (" + acc.ptr + ", i64) -> " +
       acc.ptr + ", " + ty);
  line("llvm.store " + x + ", " + p + " {alignment = " + std::to_string(byteSize(acc.dtype)) +
       " : i64} : " + ty + ", " + acc.ptr);
  indent_ = saved;
  exprCache_ = cache;
  line("}");
}

void KernelEmitter::storeClone(const Access &acc, const CloneAssign &a, const std::string &value) {
  IndexExpr uniform(0);
  if (bufferEligible(acc, a, uniform))
    return bufferStore(acc, a, uniform, value);
  const int64_t e = acc.elems;
  bool checkedAligned = false;
  std::string fast = fastPath(acc, a, checkedAligned);
  if (fast.empty()) {
    wideStore(acc, a, value, false);
    return;
  }
  std::string saved = indent_;
  auto cache = exprCache_;
  line("scf.if " + fast + " {");
  indent_ += "  ";
  wideStore(acc, a, value, checkedAligned);
  indent_ = saved;
  exprCache_ = cache;
  if (e > 1 && prefixMasked(acc)) {
    line("} else {");
    indent_ += "  ";
    storePrefix(acc, a, value);
    indent_ = saved;
    exprCache_ = cache;
  } else if (e > 1) {
    line("} else {");
    indent_ += "  ";
    const std::string ty = mlirType(acc.dtype), vty = vecType(acc.dtype, e);
    for (int64_t g = 0; g < e; ++g) {
      std::string cond = inBounds(acc, a, g);
      if (cond.empty()) { // unaligned but in bounds: plain element stores
        std::string x = fresh();
        line(x + " = vector.extract " + value + "[" + std::to_string(g) + "] : " + ty + " from " +
             vty);
        std::string p = gep(acc, linearOffset(acc, a, g));
        line("llvm.store " + x + ", " + p + " {alignment = " + std::to_string(byteSize(acc.dtype)) +
             " : i64} : " + ty + ", " + acc.ptr);
        continue;
      }
      line("scf.if " + cond + " {");
      std::string inner = indent_;
      auto innerCache = exprCache_;
      indent_ += "  ";
      std::string x = fresh();
      line(x + " = vector.extract " + value + "[" + std::to_string(g) + "] : " + ty + " from " +
           vty);
      std::string p = gep(acc, linearOffset(acc, a, g));
      line("llvm.store " + x + ", " + p + " {alignment = " + std::to_string(byteSize(acc.dtype)) +
           " : i64} : " + ty + ", " + acc.ptr);
      indent_ = inner;
      exprCache_ = innerCache;
      line("}");
    }
    indent_ = saved;
    exprCache_ = cache;
  }
  line("}");
}

// ---- data-dependent indices ---------------------------------------------------------------

bool KernelEmitter::indexIn(const ir::Op &op, const Access &acc, RegVal &out) {
  const ir::Value *index = ir::indexOperand(op);
  if (!index || !acc.mapped || acc.alloc >= 0 || acc.ptr != "!llvm.ptr<1>")
    return unsupported(DiagId::UnsupportedGather,
                       "a gather or scatter that is not on a global kernel parameter", op.loc);
  for (const auto &ri : acc.reg)
    if (ri.chunk > 0)
      return unsupported(DiagId::UnsupportedGather, "a gather or scatter of a streamed row",
                         op.loc);
  RegVal x;
  if (!convertTo(values_.at(index), layoutFrom(acc.reg, acc.elems, index->type.dtype), x, op.loc))
    return false;
  // Its clones by the access's clone keys: a value uniform along a dim has one clone for all.
  const RegVal like = layoutFrom(acc.reg, acc.elems, index->type.dtype);
  out = like;
  out.dtype = index->type.dtype;
  for (const auto &a : clonesOver(like.cloneSyms)) {
    if (!x.laidOut() && x.clones.size() == 1) {
      out.clones[cloneKey(a, like.cloneSyms)] = operandAt(x, {}, acc.elems);
      continue;
    }
    CloneAssign sub;
    for (const auto &s : x.cloneSyms)
      sub[s] = a.count(s) ? a.at(s) : 0;
    out.clones[cloneKey(a, like.cloneSyms)] = operandAt(x, sub, acc.elems);
  }
  return !failed_;
}

// Lowered expressions that used the previous element's index (the printed form drops the
// symbol's leading '$': symbolic/printer.cpp).
void KernelEmitter::forgetIndexValue(const std::string &name) {
  const std::string printed = name.substr(1);
  for (auto it = exprCache_.begin(); it != exprCache_.end();)
    it = it->first.find(printed) != std::string::npos ? exprCache_.erase(it) : std::next(it);
}

void KernelEmitter::bindIndexValue(const ir::Op &op, const RegVal &index, const std::string &clone,
                                   int64_t g) {
  const ScalarType t = index.dtype;
  const std::string e = extractElem(index.clones.at(clone), t, index.elems, g), r = fresh();
  line(r + (isSigned(t) ? " = arith.index_cast " : " = arith.index_castui ") + e + " : " +
       mlirType(t) + " to index");
  const std::string &name = op.mapping->valueSymbol;
  symbols_[name] = r;
  forgetIndexValue(name);
}

void KernelEmitter::unbindIndexValue(const ir::Op &op) {
  const std::string &name = op.mapping->valueSymbol;
  symbols_.erase(name);
  forgetIndexValue(name);
}

bool KernelEmitter::emitGather(const ir::Op &op) {
  Access acc;
  if (!prepareAccess(op, op.operands[0], acc))
    return false;
  RegVal index;
  if (!indexIn(op, acc, index))
    return false;
  RegVal v = layoutFrom(acc.reg, acc.elems, acc.dtype);
  // Every element checks its index against the indexed dim (both bounds) and the iteration
  // bounds; a masked-off element is 0 (elementLoad: a clamped load and a select, or a branch
  // where the tensor may be empty).
  for (const auto &a : clonesOver(v.cloneSyms)) {
    const std::string key = cloneKey(a, v.cloneSyms);
    std::vector<std::string> elems;
    for (int64_t g = 0; g < acc.elems; ++g) {
      bindIndexValue(op, index, key, g);
      elems.push_back(elementLoad(acc, a, g, /*guarded=*/true, acc.mayBeEmpty));
    }
    v.clones[key] = buildVector(elems, acc.dtype);
  }
  unbindIndexValue(op);
  values_[op.results[0]] = std::move(v);
  return !failed_;
}

bool KernelEmitter::emitScatter(const ir::Op &op) {
  Access acc;
  if (!prepareAccess(op, op.operands[1], acc))
    return false;
  const RegVal &value = values_.at(op.operands[0]);
  if (value.dtype != acc.dtype)
    return unsupported("a scatter of a different element type", op.loc);
  RegVal index, v;
  if (!indexIn(op, acc, index) ||
      !convertTo(value, layoutFrom(acc.reg, acc.elems, acc.dtype), v, op.loc))
    return false;
  // Each lane stores the elements it holds that are in bounds, one at a time. Lanes that hold
  // copies of one element (a broadcast) store the same value at the same place.
  const std::string ty = mlirType(acc.dtype);
  for (const auto &a : clonesOver(index.cloneSyms)) {
    const std::string key = cloneKey(a, index.cloneSyms);
    const std::string x = operandAt(v, a, acc.elems);
    for (int64_t g = 0; g < acc.elems; ++g) {
      bindIndexValue(op, index, key, g);
      const std::string cond = inBounds(acc, a, g), saved = indent_;
      auto cache = exprCache_;
      line("scf.if " + cond + " {");
      indent_ += "  ";
      const std::string val = extractElem(x, acc.dtype, acc.elems, g);
      const std::string p = gep(acc, linearOffset(acc, a, g));
      line("llvm.store " + val + ", " + p + " {alignment = " +
           std::to_string(byteSize(acc.dtype)) + " : i64} : " + ty + ", " + acc.ptr);
      indent_ = saved;
      exprCache_ = cache;
      line("}");
    }
  }
  unbindIndexValue(op);
  return !failed_;
}

bool KernelEmitter::emitRead(const ir::Op &op) {
  if (ir::indexOperand(op))
    return emitGather(op);
  if (isPromoted(op)) {
    if (!promotions_.count(&op)) // planned by the promotion pass (planKernel)
      return unsupported("a promoted read the promotion pass did not plan", op.loc);
    const Promotion &p = promotions_.at(&op);
    if (!staged_.count(&op))
      coopStore(p, coopLoad(p));
    RegVal v;
    if (!ldsRead(op, p, v))
      return false;
    values_[op.results[0]] = std::move(v);
    return true;
  }
  if (const DimIndex *sd = streamedDim(op); sd && !stream_ && !relayout_) {
    RegVal lz;
    lz.lazy = &op;
    lz.streamDim = sd->dim.str();
    lz.dtype = op.operands[0]->type.dtype;
    for (const auto &di : op.mapping ? accessOf(op)->regDims : accessOf(op)->dims) {
      lz.layout[di.dim.str()] = di;
      for (const auto &s : di.start.freeSymbols())
        if (s.rfind("$i_", 0) == 0)
          lz.cloneSyms.insert(s);
    }
    values_[op.results[0]] = std::move(lz);
    return true;
  }
  Access acc;
  if (!prepareAccess(op, op.operands[0], acc))
    return false;
  RegVal v;
  if (acc.mapped) {
    // The value is laid out over the register dims (the iterators); the memory side follows.
    v = layoutFrom(acc.reg, acc.elems, acc.dtype);
  } else {
    v.dtype = acc.dtype;
    v.elems = acc.elems;
    for (size_t i = 0; i < acc.dims.size(); ++i) {
      v.layout[acc.dims[i].dim.str()] = acc.dims[i];
      for (const auto &s : acc.dims[i].start.freeSymbols())
        if (s.rfind("$i_", 0) == 0)
          v.cloneSyms.insert(s);
    }
    if (acc.vecDim >= 0)
      v.vecDim = acc.dims[acc.vecDim].dim.str();
  }
  BufferBatch batch(*this);
  std::optional<LdsScope> shared;
  if (acc.alloc >= 0)
    shared.emplace(*this, acc.alloc, /*write=*/false);
  for (const auto &a : clonesOver(v.cloneSyms))
    v.clones[cloneKey(a, v.cloneSyms)] = loadClone(acc, a);
  values_[op.results[0]] = std::move(v);
  return true;
}

bool KernelEmitter::emitWrite(const ir::Op &op) {
  if (ir::indexOperand(op))
    return emitScatter(op);
  Access acc;
  if (!prepareAccess(op, op.operands[1], acc))
    return false;
  const RegVal &value = values_.at(op.operands[0]);
  if (value.dtype != acc.dtype)
    return unsupported("a write of a different element type", op.loc);
  // The value in the write's layout (the distribution's anchor for it; over the register dims
  // of a mapped write).
  RegVal v;
  if (!convertTo(value,
                 layoutFrom(acc.mapped ? acc.reg : acc.dims, acc.elems, acc.dtype),
                 v, op.loc))
    return false;
  std::set<std::string> syms = v.cloneSyms;
  for (const auto &di : acc.dims)
    for (const auto &s : di.start.freeSymbols())
      if (s.rfind("$i_", 0) == 0)
        syms.insert(s);
  if (&op == plan_.epilogue.write)
    return stagedStore(op, acc, v, syms);
  BufferBatch batch(*this);
  std::optional<LdsScope> shared;
  std::string owner;
  if (acc.alloc >= 0) {
    // The kernel's own stores to a tile may give an element another lane than an earlier
    // write did: they wait for the writes before them (barrier_insertion.h). An element that
    // several lanes hold (a reduction's result, a broadcast) is stored by one of them, as an
    // atomic updates it (passes/atomic_owners.cpp): one writer per element in shared memory.
    shared.emplace(*this, acc.alloc, /*write=*/true);
    lds_.exclusive = true;
    int64_t owners[3];
    std::string why;
    if (!atomicOwners(k_, d_, op, owners, why)) // the legalize pass refused it: a backstop
      return unsupported(why, op.loc);
    owner = ownerCondition(owners);
  }
  const std::string saved = indent_;
  if (!owner.empty()) {
    line("scf.if " + owner + " {");
    indent_ += "  ";
  }
  auto cache = exprCache_;
  for (const auto &a : clonesOver(syms))
    storeClone(acc, a, operandAt(v, a, acc.elems));
  if (!owner.empty()) {
    exprCache_ = cache;
    indent_ = saved;
    line("}");
  }
  return !failed_;
}

} // namespace wave::codegen::detail
