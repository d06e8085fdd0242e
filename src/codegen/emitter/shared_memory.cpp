// Shared memory: the access model's answers to the plan passes (passes/kernel_plan.h decides
// the tiles), cooperative and cp.async copies, reads from the tile (ldmatrix, wgmma
// descriptors).
#include "codegen/emitter/kernel_emitter.h"

namespace wave::codegen::detail {

namespace {
bool isGlobalTerm(const std::string &s) { return s.rfind("$WG", 0) == 0 || s.rfind("$IV", 0) == 0; }
IndexExpr zeroed(const IndexExpr &e, bool (*pick)(const std::string &)) {
  std::map<std::string, IndexExpr> subs;
  for (const auto &s : e.freeSymbols())
    if (pick(s))
      subs[s] = IndexExpr(0);
  return e.subs(subs);
}
} // namespace

// The plan passes' question: the register-side access of a promoted read (promotion.cpp).
bool KernelEmitter::tileAccess(const ir::Op &read, TileAccess &out) {
  Access acc;
  if (!prepareAccess(read, read.operands[0], acc, /*registerSide=*/true))
    return false;
  for (const auto &di : acc.dims)
    out.dims.push_back({di.dim, di.start});
  out.elems = acc.elems;
  out.dtype = acc.dtype;
  return true;
}

KernelEmitter::Access KernelEmitter::copyAccess(const Promotion &p, bool global, int64_t copy) {
  const LdsAlloc &al = allocs_[p.alloc];
  const ir::Value *mem = p.op->operands[0];
  // The tile's dims: the tensor's, or the register's for a mapped read.
  const ir::Shape &tileShape = p.mapped ? p.op->results[0]->type.shape : mem->type.shape;
  Access acc;
  acc.mem = mem;
  acc.dtype = mem->type.dtype;
  acc.elems = p.lanes;
  const size_t n = al.tile.size();
  acc.vecDim = static_cast<int>(n) - 1;
  const int64_t b0 = d_.block[0], b1 = d_.block[1];
  const int64_t threads = b0 * b1 * d_.block[2];
  IndexExpr tid = IndexExpr::symbol("$T0") + IndexExpr::symbol("$T1") * b0 +
                  IndexExpr::symbol("$T2") * (b0 * b1);
  IndexExpr lin = tid * p.lanes + copy * threads * p.lanes;
  int64_t inner = 1;
  std::vector<IndexExpr> pos(n);
  for (size_t i = n; i-- > 0;) {
    pos[i] = mod(floorDiv(lin, inner), al.tile[i]);
    inner *= al.tile[i];
  }
  const AccessIndex *ai = accessOf(*p.op);
  for (size_t i = 0; i < n; ++i) {
    DimIndex di;
    di.dim = tileShape[i];
    IndexExpr start = pos[i] + (i + 1 == n ? IndexExpr::symbol("$g") : IndexExpr(0));
    if (global)
      start = start + p.origin[i];
    di.start = facts_.simplify(start);
    di.elements = i + 1 == n ? p.lanes : 1;
    di.contiguous = i + 1 == n;
    di.masked = false;
    if (global)
      for (const auto &x : p.mapped ? ai->regDims : ai->dims)
        if (x.dim == di.dim)
          di.masked = x.masked;
    acc.dims.push_back(di);
  }
  if (global && p.mapped) {
    // The tile's elements (register indices) through the mapping: the memory side checks what
    // the distribution could not prove inside the tensor, the register side the iteration
    // bounds.
    std::map<std::string, IndexExpr> subs;
    for (const auto &[d, value] : p.op->mapping->outputs)
      for (const auto &di : acc.dims)
        if (auto name = value.asSymbol(); name && di.dim == d)
          subs[*name] = di.start;
    for (const auto &di : acc.dims)
      if (di.masked)
        acc.iter.push_back(di);
    acc.dims.clear();
    acc.elems = 1;
    sym::Facts f = facts_;
    f.setRange("$g", 0, p.lanes - 1);
    for (const auto &d : mem->type.shape)
      for (const auto &[md, value] : p.op->mapping->inputs)
        if (md == d) {
          DimIndex di;
          di.dim = d;
          di.start = f.simplify(value.subs(subs));
          di.elements = p.lanes;
          for (const auto &x : ai->dims)
            if (x.dim == d) {
              di.masked = x.masked;
              di.maskedBelow = x.maskedBelow;
            }
          acc.dims.push_back(di);
        }
    acc.mapped = true;
    setVectorDim(acc, p.op->loc);
    acc.elems = p.lanes;
    if (acc.vecDim + 1 == static_cast<int>(acc.dims.size()))
      acc.dims.back().contiguous = stepsInG(acc.dims.back().start, p.lanes, true);
  }
  if (global) {
    acc.base = pointers_.at(mem);
    for (const auto &d : mem->type.shape) {
      acc.sizes.push_back(d.size);
      acc.mayBeEmpty |= mayBeEmptyDim(d);
    }
    acc.strides.assign(acc.sizes.size(), IndexExpr(1));
    for (size_t i = acc.sizes.size(); i-- > 1;)
      acc.strides[i - 1] = acc.strides[i] * acc.sizes[i];
  } else {
    acc.base = ldsBase(p.alloc);
    acc.ptr = "!llvm.ptr<3>";
    acc.mayBeEmpty = false; // a shared tile always has its elements
    for (int64_t t : al.tile)
      acc.sizes.push_back(IndexExpr(t));
    acc.strides = al.strides;
    acc.extra = stageIndex_ * (al.bytes / static_cast<int64_t>(byteSize(acc.dtype)));
    acc.swizzle = al.swizzle;
    acc.xorBytes = al.xorBytes;
    acc.blockBytes = al.blockBytes;
    acc.xorUnit = al.xorUnit;
  }
  return acc;
}

std::vector<std::string> KernelEmitter::coopLoad(const Promotion &p) {
  std::vector<std::string> regs;
  BufferBatch batch(*this);
  for (int64_t c = 0; c < p.copies; ++c)
    regs.push_back(loadClone(copyAccess(p, true, c), {}));
  return regs;
}

void KernelEmitter::coopStore(const Promotion &p, const std::vector<std::string> &regs) {
  LdsScope scope(*this, p.alloc, /*write=*/true, stageTag_);
  for (int64_t c = 0; c < p.copies; ++c)
    wideStore(copyAccess(p, false, c), {}, regs[c], false);
}

// An async copy (cp.async on NVIDIA: TargetLowering::asyncCopy) copies 16 bytes from global to shared memory without registers; a copy
// of 0 source bytes fills zeros, which is how a masked-off vector reads 0. Usable when every
// vector is 16-byte aligned and wholly in or out of bounds (its innermost dim a multiple of it).
bool KernelEmitter::asyncCopyable(const Promotion &p) {
  if (!lower_->asyncCopies())
    return false;
  Access g = copyAccess(p, true, 0);
  if (p.lanes * static_cast<int64_t>(byteSize(g.dtype)) != 16)
    return false;
  if (provenAlignment(g, linearOffset(g, {}, 0), p.lanes) < 16)
    return false;
  if (g.mapped) {
    // The vector must be consecutive in memory and each bound that moves with it must hold
    // for all of it or for none (a multiple of the vector from an aligned start).
    if (g.vecDim + 1 != static_cast<int>(g.dims.size()) || !g.dims.back().contiguous)
      return false;
    for (const Bound &b : boundsOf(g))
      if (b.start->dependsOn("$g") &&
          (b.lower || !stepsInG(*b.start, p.lanes, true) ||
           !facts_.provesExact(b.size, IndexExpr(p.lanes)) ||
           !facts_.provesExact(indexAt(*b.start, {}, 0), IndexExpr(p.lanes))))
        return false;
    return true;
  }
  return !g.dims.back().masked || facts_.provesExact(g.sizes.back(), IndexExpr(p.lanes));
}

void KernelEmitter::cpAsyncCopy(const Promotion &p) {
  for (int64_t c = 0; c < p.copies; ++c) {
    Access g = copyAccess(p, true, c), l = copyAccess(p, false, c);
    std::string cond = inBounds(g, {}, p.lanes - 1);
    std::string off = lowerIndex(linearOffset(g, {}, 0)), size = fresh();
    if (!cond.empty()) {
      std::string safe = fresh(), full = fresh(), none = fresh();
      line(safe + " = arith.select " + cond + ", " + off + ", " + constIndex(0) + " : index");
      off = safe;
      line(full + " = arith.constant 16 : i32");
      line(none + " = arith.constant 0 : i32");
      line(size + " = arith.select " + cond + ", " + full + ", " + none + " : i32");
    } else {
      line(size + " = arith.constant 16 : i32");
    }
    std::string i64 = fresh(), src = fresh();
    line(i64 + " = arith.index_cast " + off + " : index to i64");
    line(src + " = llvm.getelementptr " + g.base + "[" + i64 + "] : (!llvm.ptr<1>, i64) -> " +
         "!llvm.ptr<1>, " + mlirType(g.dtype));
    LdsScope scope(*this, p.alloc, /*write=*/true, stageTag_, /*async=*/true);
    std::string dst = gep(l, linearOffset(l, {}, 0));
    lower_->asyncCopy(dst, src, size);
  }
}

// ---- AMD LDS DMA (LoopSchedule::ldsDma) -------------------------------------------------------
// `buffer_load_dword ... lds` writes lane l's dword at the wave-uniform LDS base (M0) + 4 l. The
// copy walks the buffer's bytes (an unpadded layout: SharedTile::pad 0) in dwords: copy c of
// thread t writes dword c x threads + t, so one wave's instruction fills 256 consecutive bytes,
// and each lane loads the dword of the tile that the layout stores there: the physical row-major
// position, its column mapped back through the XOR layout (xorUnitColumn is its own inverse; a
// unit holds whole dwords).
KernelEmitter::Access KernelEmitter::dmaAccess(const Promotion &p, int64_t copy) {
  const LdsAlloc &al = allocs_[p.alloc];
  Access acc = copyAccess(p, true, 0);
  const int64_t bytes = byteSize(acc.dtype), per = 4 / bytes;
  const size_t n = al.tile.size();
  const int64_t b0 = d_.block[0], b1 = d_.block[1];
  const int64_t threads = b0 * b1 * d_.block[2];
  IndexExpr tid = IndexExpr::symbol("$T0") + IndexExpr::symbol("$T1") * b0 +
                  IndexExpr::symbol("$T2") * (b0 * b1);
  IndexExpr lin = (tid + copy * threads) * per;
  int64_t inner = 1;
  std::vector<IndexExpr> pos(n);
  for (size_t i = n; i-- > 0;) {
    pos[i] = mod(floorDiv(lin, inner), al.tile[i]);
    inner *= al.tile[i];
  }
  if (al.xorUnit && n >= 2)
    pos[n - 1] = xorUnitColumn(pos[n - 2], pos[n - 1], al.tile[n - 1], bytes, al.xorUnit);
  acc.elems = per;
  for (size_t i = 0; i < n; ++i) {
    DimIndex &di = acc.dims[i];
    di.start = facts_.simplify(pos[i] + p.origin[i] +
                               (i + 1 == n ? IndexExpr::symbol("$g") : IndexExpr(0)));
    di.elements = i + 1 == n ? per : 1;
  }
  return acc;
}

namespace {
constexpr int64_t kDmaRecords = int64_t(1) << 31, kDmaOob = int64_t(1) << 31;
} // namespace

// The element offset of the tile's origin from the tensor's base (the descriptor's base: every
// lane's voffset is then its position in the tile, >= 0).
IndexExpr KernelEmitter::dmaOrigin(const Access &acc, const Promotion &p) {
  IndexExpr off = 0;
  for (size_t i = 0; i < p.origin.size(); ++i)
    off += p.origin[i] * acc.strides[i];
  return facts_.simplify(indexAt(off, {}, 0)); // the loop's substitutions (the tile copied)
}

int64_t KernelEmitter::ldsDmaCopies(const Promotion &p) {
  if (!target_.ldsDma || p.mapped || !lower_->bufferAccesses())
    return 0;
  const LdsAlloc &al = allocs_[p.alloc];
  const ir::Value *mem = p.op->operands[0];
  const int64_t bytes = byteSize(mem->type.dtype);
  if (bytes > 4 || 4 % bytes != 0 || al.tile.empty() || mem->type.shape.size() != al.tile.size())
    return 0;
  const int64_t per = 4 / bytes, threads = d_.block[0] * d_.block[1] * d_.block[2];
  int64_t elems = 1;
  for (int64_t t : al.tile)
    elems *= t;
  if (al.tile.back() % per != 0 || (elems * bytes) % (threads * 4) != 0)
    return 0;
  const int64_t copies = elems * bytes / (threads * 4);
  // Whole dwords: the row's elements a multiple of the dword where it is masked, and the
  // dword 4-byte aligned; every lane's offset from the tile's origin within the voffset range.
  for (int64_t c : {int64_t(0), copies - 1}) {
    Access g = dmaAccess(p, c);
    if (g.dims.back().masked && !facts_.provesExact(g.sizes.back(), IndexExpr(per)))
      return 0;
    if (provenAlignment(g, linearOffset(g, {}, 0), per) < 4)
      return 0;
    const IndexExpr origin = dmaOrigin(g, p);
    for (int64_t e : {int64_t(0), per - 1}) {
      sym::Range r = facts_.rangeOf(facts_.simplify(linearOffset(g, {}, e) - origin));
      if (!r.boundedBelow() || r.lo < 0 || !r.boundedAbove() || r.hi > (kDmaOob - 16) / bytes)
        return 0;
    }
  }
  return copies;
}

void KernelEmitter::ldsDmaCopy(const Promotion &p) {
  const LdsAlloc &al = allocs_[p.alloc];
  const int64_t threads = d_.block[0] * d_.block[1] * d_.block[2];
  const int64_t b0 = d_.block[0], b1 = d_.block[1], wave = d_.waveSize;
  IndexExpr tid = IndexExpr::symbol("$T0") + IndexExpr::symbol("$T1") * b0 +
                  IndexExpr::symbol("$T2") * (b0 * b1);
  // The wave's LDS base in this buffer (its first thread's dword), then dword c x threads on:
  // one pointer per tile and constant offsets from it, so that the M0 values are a scalar add
  // each rather than loop-invariant values LLVM would keep in SGPRs through the loop.
  std::string i64 = fresh(), base = fresh();
  line(i64 + " = arith.index_cast " +
       lowerIndex(facts_.simplify(stageIndex_ * al.bytes + (tid - mod(tid, wave)) * 4)) +
       " : index to i64");
  line(base + " = llvm.getelementptr " + ldsBase(p.alloc) + "[" + i64 +
       "] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, i8");
  for (int64_t c = 0; c < p.dmaCopies; ++c) {
    Access g = dmaAccess(p, c);
    const int64_t bytes = byteSize(g.dtype), per = 4 / bytes;
    const IndexExpr origin = dmaOrigin(g, p);
    // The outermost dim's bound through num_records, where no dim between it and the
    // innermost is masked: the bytes from the descriptor's base (the tile's origin) to the
    // tensor's end, so a row past the end is out of range while the innermost check (a select,
    // below) keeps a dword past its row's end off the next row. A loop-invariant lane mask per
    // copy and tile would otherwise stay in SGPRs through the loop (the 128x128x64 tile
    // spilled them).
    bool byRecords = g.dims.size() >= 2 && g.dims.front().masked;
    for (size_t i = 1; i + 1 < g.dims.size(); ++i)
      byRecords = byRecords && !g.dims[i].masked && !g.dims[i].maskedBelow;
    std::string records = constI32(kDmaRecords);
    Access checked = g;
    if (byRecords) {
      checked.dims.front().masked = false;
      IndexExpr numel = 1;
      for (const auto &sz : g.sizes)
        numel = numel * sz;
      const IndexExpr left = (numel - origin) * bytes;
      std::string v = lowerIndex(facts_.simplify(left)), lo = fresh(), hi = fresh();
      line(lo + " = arith.maxsi " + v + ", " + constIndex(0) + " : index");
      line(hi + " = arith.minsi " + lo + ", " + constIndex(kDmaRecords) + " : index");
      records = fresh();
      line(records + " = arith.index_cast " + hi + " : index to i32");
    }
    std::string rsrc = bufferRsrc(g, origin, records);
    std::string cond = inBounds(checked, {}, per - 1);
    std::string voff = fresh();
    line(voff + " = arith.index_cast " +
         lowerIndex(facts_.simplify((linearOffset(g, {}, 0) - origin) * bytes)) +
         " : index to i32");
    if (!cond.empty()) {
      std::string r = fresh();
      line(r + " = arith.select " + cond + ", " + voff + ", " + constI32(kDmaOob) + " : i32");
      voff = r;
    }
    LdsScope scope(*this, p.alloc, /*write=*/true, stageTag_, /*async=*/true);
    std::string dst = base;
    if (c > 0) {
      dst = fresh();
      line(dst + " = llvm.getelementptr " + base + "[" + std::to_string(c * threads * 4) +
           "] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8");
    }
    lower_->ldsDmaLoad(rsrc, dst, voff, 4);
  }
}

IndexExpr KernelEmitter::laneZero(const IndexExpr &e) {
  const int64_t w = d_.groupSize;
  sym::Facts f = facts_;
  f.setRange("$wv", 0, std::max<int64_t>(d_.block[0] / w - 1, 0));
  f.setRange("$ln", 0, w - 1);
  IndexExpr split =
      f.simplify(e.subs({{"$T0", IndexExpr::symbol("$wv") * w + IndexExpr::symbol("$ln")}}));
  return f.simplify(split.subs({{"$ln", IndexExpr(0)},
                                {"$g", IndexExpr(0)},
                                {"$wv", floorDiv(IndexExpr::symbol("$T0"), w)}}));
}

bool KernelEmitter::ldsRead(const ir::Op &op, const Promotion &p, RegVal &v,
                            const CloneFilter &keep) {
  if (p.wgmma)
    return wgmmaDescriptors(op, p, v, keep);
  const LdsAlloc &al = allocs_[p.alloc];
  Access acc;
  if (!prepareAccess(op, op.operands[0], acc, /*registerSide=*/p.mapped))
    return false;
  acc.base = ldsBase(p.alloc);
  acc.ptr = "!llvm.ptr<3>";
  acc.mayBeEmpty = false; // a shared tile always has its elements
  acc.strides = al.strides;
  acc.extra = stageIndex_ * (al.bytes / static_cast<int64_t>(byteSize(acc.dtype)));
  acc.swizzle = al.swizzle;
  acc.xorUnit = al.xorUnit;
  for (size_t i = 0; i < acc.dims.size(); ++i) {
    acc.dims[i].start = facts_.simplify(zeroed(acc.dims[i].start, isGlobalTerm));
    acc.dims[i].masked = false;
    acc.sizes[i] = IndexExpr(al.tile[i]);
  }
  v = RegVal();
  v.dtype = acc.dtype;
  v.elems = acc.elems;
  for (size_t i = 0; i < acc.dims.size(); ++i) {
    v.layout[acc.dims[i].dim.str()] =
        p.mapped ? accessOf(op)->regDims[i] : accessOf(op)->dims[i];
    for (const auto &s : acc.dims[i].start.freeSymbols())
      if (s.rfind("$i_", 0) == 0)
        v.cloneSyms.insert(s);
  }
  if (acc.vecDim >= 0)
    v.vecDim = acc.dims[acc.vecDim].dim.str();

  // ldmatrix: an mma.sync operand of 16-bit elements whose K dim is the innermost memory dim,
  // or (.trans) whose row dim is (attention's V as the A operand of Vᵀ·Pᵀ).
  const ir::Op *mma = nullptr;
  for (const ir::Op *u : op.results[0]->users)
    if (u->kind == ir::OpKind::Mma &&
        (u->operands[0] == op.results[0]) != (u->operands[1] == op.results[0]))
      mma = u;
  const LaneLayout *layout = nullptr;
  int rowIdx = -1, colIdx = -1;
  bool trans = false;
  if (mma && mma->mma && bitWidth(acc.dtype) == 16) {
    const bool lhs = mma->operands[0] == op.results[0];
    layout = lhs ? &mma->mma->a : &mma->mma->b;
    const ir::Dim &rowDim = lhs ? mma->dims[0] : mma->dims[1];
    for (size_t i = 0; i < acc.dims.size(); ++i) {
      if (acc.dims[i].dim == rowDim)
        rowIdx = static_cast<int>(i);
      if (acc.dims[i].dim == mma->dims[2])
        colIdx = static_cast<int>(i);
    }
    const int inner = static_cast<int>(acc.dims.size()) - 1;
    trans = colIdx != inner && rowIdx == inner && layout->ldTransRow;
    if (layout->ldTiles == 0 || (colIdx != inner && !trans) || rowIdx < 0 || colIdx < 0 ||
        layout->ldTiles * 2 != static_cast<unsigned>(acc.elems))
      layout = nullptr;
  }
  LdsScope scope(*this, p.alloc, /*write=*/false, stageTag_);
  std::vector<CloneAssign> assigns;
  for (const auto &a : clonesOver(v.cloneSyms))
    if (!keep || keep(a))
      assigns.push_back(a);
  if (layout)
    ldmatrixClones(acc, *layout, rowIdx, colIdx, assigns, v, trans);
  else
    for (const auto &a : assigns)
      v.clones[cloneKey(a, v.cloneSyms)] = loadClone(acc, a);
  return true;
}

// A matrix descriptor (PTX ISA, "Matrix Descriptor Format") per clone of a wgmma operand and
// K step of 16 inside the clone (`wgmmaSteps`; the clone's key, then key + "#s"): bits 0-13 the
// start address >> 4, 16-29 the leading-dimension byte offset >> 4, 32-45 the stride byte
// offset >> 4, 62-63 the swizzle (1: 128 bytes, 2: 64, 3: 32). K-major tiles ([rows, K]): the
// start of (row r0, K k0) is r0 * W + 2 (k0 mod W / 2) bytes into k0's column block; r0 is a
// multiple of 8 (the warpgroup's 64 rows), so the unswizzled address of the 8-row group, and
// K steps inside a row advance it by 32 bytes, which the hardware swizzles like the rest of the
// address; the leading offset is unused (1), the stride offset is 8 rows (8 W). N-major B tiles
// ([K, N], 128-byte swizzle): (k0, n0) starts at row k0 of n0's column block (n0 a multiple of
// 64); the leading offset is the distance between column blocks (64 N apart), the stride
// offset 8 rows (1024 bytes). Starts that differ by a constant share one computation.
bool KernelEmitter::wgmmaDescriptors(const ir::Op &op, const Promotion &p, RegVal &v,
                                     const CloneFilter &keep) {
  const LdsAlloc &al = allocs_[p.alloc];
  Access acc;
  if (!prepareAccess(op, op.operands[0], acc))
    return false;
  v = RegVal();
  v.dtype = ScalarType::I64;
  v.descAlloc = p.alloc;
  v.descStage = stageTag_;
  v.descNMajor = p.nMajor;
  for (auto &di : acc.dims) {
    di.start = facts_.simplify(zeroed(di.start, isGlobalTerm));
    for (const auto &s : di.start.freeSymbols())
      if (s.rfind("$i_", 0) == 0)
        v.cloneSyms.insert(s);
  }
  const size_t n = acc.dims.size();
  const int64_t w = al.xorBytes, b = byteSize(acc.dtype);
  const uint64_t mode = w == 128 ? 1 : w == 64 ? 2 : 3;
  const uint64_t lbo = p.nMajor ? uint64_t(al.blockBytes ? al.blockBytes : al.tile[n - 2] * w) / 16
                                : 1;
  const uint64_t hi = (lbo << 16) | (uint64_t(8 * w / 16) << 32) | (mode << 62);
  const ir::Op *mma = wgmmaUser(op);
  const int steps = wgmmaSteps(*mma);
  const int64_t kStep = mma->mma->k; // elements per K step: 32 bytes of 16- or 8-bit elements
  auto i64 = [&](int64_t c) {
    std::string r = fresh();
    line(r + " = arith.constant " + std::to_string(c) + " : i64");
    return r;
  };
  auto op64 = [&](const char *o, const std::string &a, const std::string &x) {
    std::string r = fresh();
    line(r + " = arith." + o + " " + a + ", " + x + " : i64");
    return r;
  };
  // Byte offset of (row r, column c) of the tile's last two dims, at a 16-byte chunk boundary.
  auto at = [&](const IndexExpr &r, const IndexExpr &c) {
    const int64_t per = w / b;
    IndexExpr off = r * w + mod(c, per) * b;
    if (al.blockBytes)
      off += floorDiv(c, per) * al.blockBytes;
    return off;
  };
  std::string base = fresh();
  line(base + " = llvm.ptrtoint " + ldsBase(p.alloc) + " : !llvm.ptr<3> to i64");
  std::vector<std::pair<IndexExpr, std::string>> starts; // byte offset -> descriptor
  for (const auto &a : clonesOver(v.cloneSyms)) {
    if (keep && !keep(a))
      continue;
    const IndexExpr r0 = laneZero(dimIndex(acc, n - 2, a, 0)),
                    c0 = laneZero(dimIndex(acc, n - 1, a, 0));
    const std::string key = cloneKey(a, v.cloneSyms);
    for (int st = 0; st < steps; ++st) {
      const IndexExpr off = facts_.simplify(
          stageIndex_ * al.bytes +
          (p.nMajor ? at(r0 + kStep * st, c0) : at(r0, c0 + kStep * st)));
      std::string desc;
      for (const auto &[o, d] : starts)
        if (auto c = facts_.simplify(off - o).asInteger()) {
          desc = *c == 0 ? d : op64("addi", d, i64(*c / 16));
          break;
        }
      if (desc.empty()) {
        std::string x = fresh();
        line(x + " = arith.index_cast " + lowerIndex(off) + " : index to i64");
        std::string addr = op64("addi", base, x);
        std::string field = op64("andi", op64("shrui", addr, i64(4)), i64(0x3fff));
        desc = op64("ori", field, i64(static_cast<int64_t>(hi)));
        starts.push_back({off, desc});
      }
      v.clones[st ? key + "#" + std::to_string(st) : key] = desc;
    }
  }
  return true;
}

// ldmatrix loads for the clones of one mma.sync operand. A fragment of fewer than four 8x8
// matrices (B of m16n8k16: two) is grouped with the next clones along the fastest clone dim
// into one .x4: lanes [8t·j, 8t·j + 8t) address clone j of the group, whose registers then are
// j·t .. j·t + t - 1 (t = the layout's ldTiles). Clones whose offsets differ by a constant share
// one pointer (a constant GEP from it), so the loop keeps one lane-dependent address per
// distinct swizzle phase rather than one per instruction.
void KernelEmitter::ldmatrixClones(const Access &acc, const LaneLayout &layout, int rowIdx,
                                   int colIdx, const std::vector<CloneAssign> &assigns,
                                   RegVal &v, bool trans) {
  auto ldRow = trans ? layout.ldTransRow : layout.ldRow;
  auto ldCol = trans ? layout.ldTransCol : layout.ldCol;
  const unsigned t = layout.ldTiles;
  const int64_t group = t < 4 && 4 % t == 0 ? 4 / t : 1;
  const IndexExpr lane = mod(IndexExpr::symbol("$T0"), static_cast<int64_t>(d_.groupSize));
  const int64_t span = 8 * t; // lanes addressing one clone
  const size_t nd = acc.dims.size();
  std::vector<std::pair<IndexExpr, std::string>> bases; // offset -> pointer
  // The buffer's base first, then the lane's offset in it: LLVM keeps the constant steps between
  // clones as immediates of the instructions instead of hoisting one address per clone.
  Access inBuffer = acc;
  inBuffer.extra = IndexExpr(0);
  if (!acc.extra.isInteger() || *acc.extra.asInteger() != 0)
    inBuffer.base = gep(acc, acc.extra);
  auto pointerTo = [&](const IndexExpr &off) {
    for (const auto &[base, ptr] : bases)
      if (auto c = facts_.simplify(off - base).asInteger()) {
        if (*c == 0)
          return ptr;
        std::string p = fresh();
        line(p + " = llvm.getelementptr " + ptr + "[" + std::to_string(*c) +
             "] : (!llvm.ptr<3>) -> !llvm.ptr<3>, " + mlirType(acc.dtype));
        return p;
      }
    std::string p = gep(inBuffer, off);
    bases.push_back({off, p});
    return p;
  };
  auto emitGroup = [&](size_t first, int64_t count) {
    std::vector<std::vector<IndexExpr>> at(count, std::vector<IndexExpr>(nd));
    for (int64_t j = 0; j < count; ++j)
      for (size_t i = 0; i < nd; ++i)
        at[j][i] = laneZero(dimIndex(acc, i, assigns[first + j], 0));
    std::vector<IndexExpr> idx(nd);
    const IndexExpr which = floorDiv(lane, span), sub = mod(lane, span);
    for (size_t i = 0; i < nd; ++i) {
      IndexExpr x = at[0][i];
      if (count > 1)
        x = x + which * facts_.simplify(at[1][i] - at[0][i]);
      if (static_cast<int>(i) == rowIdx)
        x = x + ldRow(count > 1 ? sub : lane);
      else if (static_cast<int>(i) == colIdx)
        x = x + ldCol(count > 1 ? sub : lane);
      idx[i] = x;
    }
    std::string ptr = pointerTo(facts_.simplify(offsetOf(inBuffer, idx)));
    const unsigned regs = t * static_cast<unsigned>(count);
    std::string sty = "!llvm.struct<(";
    for (unsigned j = 0; j < regs; ++j)
      sty += std::string(j ? ", " : "") + "i32";
    sty += ")>";
    std::string s = lower_->matrixLoad(ptr, regs, trans, sty);
    const std::string ity = "vector<" + std::to_string(t) + "xi32>";
    for (int64_t j = 0; j < count; ++j) {
      std::string vec = fresh();
      line(vec + " = llvm.mlir.undef : " + ity);
      for (unsigned r = 0; r < t; ++r) {
        std::string x = fresh(), pos = fresh(), n = fresh();
        line(x + " = llvm.extractvalue " + s + "[" + std::to_string(j * t + r) + "] : " + sty);
        line(pos + " = llvm.mlir.constant(" + std::to_string(r) + " : i32) : i32");
        line(n + " = llvm.insertelement " + x + ", " + vec + "[" + pos + " : i32] : " + ity);
        vec = n;
      }
      std::string r = fresh();
      line(r + " = llvm.bitcast " + vec + " : " + ity + " to " + vecType(acc.dtype, acc.elems));
      v.clones[cloneKey(assigns[first + j], v.cloneSyms)] = r;
    }
  };
  // A group: `group` consecutive clones that differ from the first in one clone dim only, by
  // 1, 2, ... there, and whose origins are evenly spaced (the lane picks its clone by a
  // multiple of one step). Anything else gets one instruction per clone.
  auto groupAt = [&](size_t c) {
    if (group == 1 || c + group > assigns.size())
      return false;
    std::string along;
    for (int64_t j = 1; j < group; ++j)
      for (const auto &[sym, val] : assigns[c + j]) {
        const int64_t d = val - assigns[c].at(sym);
        if (d == 0)
          continue;
        if (d != j || (!along.empty() && along != sym))
          return false;
        along = sym;
      }
    if (along.empty())
      return false;
    for (int64_t j = 2; j < group; ++j)
      for (size_t i = 0; i < nd; ++i) {
        IndexExpr a0 = laneZero(dimIndex(acc, i, assigns[c], 0));
        IndexExpr a1 = laneZero(dimIndex(acc, i, assigns[c + 1], 0));
        IndexExpr aj = laneZero(dimIndex(acc, i, assigns[c + j], 0));
        if (!facts_.provesEqual(aj - a0, (a1 - a0) * j))
          return false;
      }
    return true;
  };
  for (size_t c = 0; c < assigns.size();) {
    const int64_t n = groupAt(c) ? group : 1;
    emitGroup(c, n);
    c += static_cast<size_t>(n);
  }
}

} // namespace wave::codegen::detail
