// TMA copies of a loop's staged tiles (LoopSchedule::Copy::Tma, passes/schedule.cpp): which
// tiles qualify, the kernel's tensor-map parameters, the transaction barriers, the copies one
// thread issues and the wait of every thread. The instructions come from the target lowering
// (TargetLowering::tensorCopy and the barrier hooks); iterate.cpp says when.
//
// Each buffer of the loop's ring has one barrier (8 bytes of a module global, one per loop).
// Tile j goes into buffer j % S on barrier j % S: thread 0 arrives on it expecting the bytes of
// every staged tile's box, then issues the boxes; the copies complete the phase. Iteration i
// waits for phase parity (i / S) % 2 of barrier i % S before reading. Only tiles below the trip
// count are copied, so every phase is waited for once and nothing is in flight after the loop.
// Iteration i copies tile i + S - 1 - keep (the wgmma schedule's distance) at its top, before
// its wait: into the buffer whose reads the products retired at the end of iteration i - 1,
// and the workgroup barrier that barrier insertion puts before the copy (its writes are
// `waited` SyncItems: a barrier before them, none for their readers) orders those reads of
// every warp before thread 0 issues it.
#include "codegen/emitter/kernel_emitter.h"

namespace wave::codegen::detail {

// One box of the tensor per column block of the tile: a tile of a tensor of rank 2 to 5 whose
// extent is 1 in every dim but the last two, stored by wgmma in the 128-byte swizzle with rows
// of 128 bytes (a box row; the swizzle atoms of the tile are then the box's,
// SharedTile::xorBytes) or of several column blocks of 128 bytes, each block `rows` x 128 bytes
// (SharedTile::blockBytes: exactly the box), at most 256 rows (the box limit), the tensor's
// rows a proven multiple of 16 bytes (the map's stride rule). K-major and N-major tiles alike:
// the shared layout is the same (the wgmma descriptor says which way it is read).
bool KernelEmitter::tensorCopyable(const Promotion &p) {
  if (!lower_->tensorCopies() || !p.wgmma || p.mapped)
    return false;
  const SharedTile &al = allocs_[p.alloc];
  const ir::Value *mem = p.op->operands[0];
  const ir::Shape &shape = mem->type.shape;
  const int64_t bytes = byteSize(mem->type.dtype);
  const size_t rank = shape.size();
  if (rank < 2 || rank > 5 || al.tile.size() != rank || p.origin.size() != rank ||
      al.xorBytes != 128)
    return false;
  for (size_t i = 0; i + 2 < rank; ++i)
    if (al.tile[i] != 1)
      return false;
  const int64_t rows = al.tile[rank - 2], rowBytes = al.tile[rank - 1] * bytes;
  if (rows > 256 || rows < 1 || rowBytes % 128 != 0 || rowBytes < 128 ||
      (rowBytes > 128 ? al.blockBytes != rows * 128 : al.blockBytes != 0) ||
      al.align % 1024 != 0)
    return false;
  if (mem->type.dtype != ScalarType::F16 && mem->type.dtype != ScalarType::BF16 &&
      mem->type.dtype != ScalarType::F8E4M3FN && mem->type.dtype != ScalarType::F8E5M2)
    return false;
  bool param = false;
  for (const auto &kp : k_.params)
    param |= kp.value == mem;
  return param && facts_.provesExact(shape[rank - 1].size, IndexExpr(16 / bytes));
}

void KernelEmitter::tensorMapArguments(
    const std::function<std::string(const std::string &)> &arg) {
  ir::walk(k_.body, [&](const ir::Op &op) {
    auto it = plan_.loops.find(&op);
    if (it == plan_.loops.end() || it->second.copy != LoopSchedule::Copy::Tma)
      return;
    for (const ir::Op *o : it->second.staged) {
      const Promotion &p = promotions_.at(o);
      const SharedTile &al = allocs_[p.alloc];
      TensorMapArg m;
      for (size_t i = 0; i < k_.params.size(); ++i)
        if (k_.params[i].value == o->operands[0])
          m.param = static_cast<unsigned>(i);
      m.dtype = o->operands[0]->type.dtype;
      m.rank = static_cast<uint32_t>(al.tile.size());
      m.boxRows = static_cast<uint32_t>(al.tile[m.rank - 2]);
      m.boxCols = static_cast<uint32_t>(128 / byteSize(m.dtype)); // one column block
      m.swizzleBytes = static_cast<uint32_t>(al.xorBytes);
      tensorMaps_.push_back(m);
      tensorMapArgs_[o] = arg("!llvm.ptr<1>");
    }
  });
  if (const EpilogueStaging &e = plan_.epilogue; e.write) {
    TensorMapArg m;
    m.param = static_cast<unsigned>(e.write->operands[1]->paramIndex);
    m.dtype = e.write->operands[1]->type.dtype;
    m.boxRows = static_cast<uint32_t>(e.rows);
    m.boxCols = static_cast<uint32_t>(e.boxCols);
    m.swizzleBytes = 128;
    tensorMaps_.push_back(m);
    epilogueMap_ = arg("!llvm.ptr<1>");
  }
}

// The epilogue through shared memory (docs/internals.md, "Epilogue through shared memory").
// Element (r, c) of the workgroup's [rows, cols] output tile goes where the TMA box of columns
// c / boxCols expects it: boxes `rows` x 128 bytes apart from the ring tile's first buffer, row
// r of a box 128 bytes, 16-byte chunk k of the row at chunk k XOR (r % 8) (the 128-byte
// swizzle; offsetOf's xorBytes/blockBytes layout). For the wgmma accumulator layout (each lane
// two adjacent columns of a row, 8 rows x 4 lanes per warp and column step) one warp's store of
// a column step covers 8 distinct chunks of 8 rows: 16-bit outputs hit every bank once, f32
// outputs two lanes per bank pair (64-bit stores, half a warp per wavefront). The barrier
// analysis puts the consumers' barrier before the first store (the ring's last reads by wgmma)
// and the async-proxy fence and the barrier before the TMA stores (marked as async reads).
bool KernelEmitter::stagedStore(const ir::Op &op, const Access &acc, const RegVal &v,
                                const std::set<std::string> &syms) {
  const EpilogueStaging &e = plan_.epilogue;
  if (acc.mapped || acc.alloc >= 0 || acc.dims.size() != 2 || epilogueMap_.empty())
    return unsupported("a staged epilogue write the plan did not expect (a wavec bug)", op.loc);
  const int64_t bytes = byteSize(acc.dtype), tile[2] = {e.rows, e.cols};
  Access st = acc;
  st.base = ldsBase(e.alloc);
  st.ptr = "!llvm.ptr<3>";
  st.extra = IndexExpr(0);
  st.swizzle = 0;
  st.xorUnit = 0;
  st.xorBytes = 128;
  st.blockBytes = e.rows * 128;
  st.mayBeEmpty = false;
  st.iter.clear();
  IndexExpr origin[2];
  for (int i = 0; i < 2; ++i) {
    origin[i] = IndexExpr::symbol("$WG" + std::to_string(e.axis[i])) * tile[i];
    DimIndex &d = st.dims[i];
    d.start = facts_.simplify(acc.dims[i].start - origin[i]);
    d.masked = d.maskedBelow = false;
    for (const auto &s : d.start.freeSymbols())
      if (s.rfind("$WG", 0) == 0)
        return unsupported("a staged epilogue write whose index is not the workgroup's tile "
                           "(a wavec bug)",
                           op.loc);
    st.sizes[i] = IndexExpr(tile[i]);
  }
  const int64_t n = acc.elems;
  const std::string ty = mlirType(acc.dtype), vty = vecType(acc.dtype, n);
  {
    LdsScope scope(*this, e.alloc, /*write=*/true);
    lds_.exclusive = true;
    for (const auto &a : clonesOver(syms)) {
      const std::string value = operandAt(v, a, n);
      // Runs of the lane's elements at consecutive columns of one row, inside one 16-byte chunk
      // (a power-of-two run from a column the facts prove a multiple of its length): one store.
      for (int64_t g0 = 0; g0 < n;) {
        const IndexExpr r0 = dimIndex(st, 0, a, g0), c0 = dimIndex(st, 1, a, g0);
        int64_t run = 1;
        while (g0 + run < n && (run + 1) * bytes <= 16 &&
               facts_.provesEqual(dimIndex(st, 0, a, g0 + run) - r0, IndexExpr(0)) &&
               facts_.provesEqual(dimIndex(st, 1, a, g0 + run) - c0, IndexExpr(run)))
          ++run;
        int64_t p = 1;
        while (p * 2 <= run && facts_.provesExact(c0, IndexExpr(p * 2)))
          p *= 2;
        std::string piece = value;
        if (n > 1) {
          piece = fresh();
          if (p == 1) {
            line(piece + " = vector.extract " + value + "[" + std::to_string(g0) + "] : " + ty +
                 " from " + vty);
          } else {
            std::string mask;
            for (int64_t j = 0; j < p; ++j)
              mask += (j ? ", " : "") + std::to_string(g0 + j);
            line(piece + " = vector.shuffle " + value + ", " + value + " [" + mask + "] : " + vty +
                 ", " + vty);
          }
        }
        std::string ptr = gep(st, linearOffset(st, a, g0));
        line("llvm.store " + piece + ", " + ptr + " {alignment = " + std::to_string(p * bytes) +
             " : i64} : " + vecType(acc.dtype, p) + ", !llvm.ptr<3>");
        g0 += p;
      }
    }
  }
  // The TMA stores read the tile through the async proxy: a barrier (with the proxy fence)
  // before them, placed outside the branch.
  SyncItem r{SyncItem::Read, e.alloc};
  r.asyncProxy = true;
  mark(r);
  const std::string first = firstThread();
  line("scf.if " + first + " {");
  const std::string saved = indent_;
  auto cache = exprCache_;
  indent_ += "  ";
  std::string row = fresh();
  line(row + " = arith.index_cast " + lowerIndex(origin[0]) + " : index to i32");
  for (int64_t b = 0; b < e.cols / e.boxCols; ++b) {
    std::string col = fresh(), off = fresh(), src = fresh();
    line(col + " = arith.index_cast " + lowerIndex(facts_.simplify(origin[1] + b * e.boxCols)) +
         " : index to i32");
    line(off + " = llvm.mlir.constant(" + std::to_string(b * e.rows * 128) + " : i64) : i64");
    line(src + " = llvm.getelementptr " + ldsBase(e.alloc) + "[" + off +
         "] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, i8");
    lower_->tensorStore2d(src, epilogueMap_, col, row);
  }
  lower_->tensorStoreWaitRead();
  indent_ = saved;
  exprCache_ = cache;
  line("}");
  return !failed_;
}

std::string KernelEmitter::tmaBarriers(int stages) {
  const std::string name = "__wave_mbar_" + k_.name + "_" + std::to_string(moduleGlobals_.size());
  moduleGlobals_.push_back("llvm.mlir.global internal @" + name +
                           "() {addr_space = 3 : i32, alignment = 8 : i64} : !llvm.array<" +
                           std::to_string(stages) + " x i64>");
  std::string p = fresh();
  line(p + " = llvm.mlir.addressof @" + name + " : !llvm.ptr<3>");
  return p;
}

std::string KernelEmitter::tmaBarrier(const std::string &bars, const std::string &index) {
  std::string i64 = fresh(), p = fresh();
  line(i64 + " = arith.index_cast " + index + " : index to i64");
  line(p + " = llvm.getelementptr " + bars + "[" + i64 + "] : (!llvm.ptr<3>, i64) -> " +
       "!llvm.ptr<3>, i64");
  return p;
}

// Thread 0 of the workgroup, as an i1.
std::string KernelEmitter::firstThread() {
  std::string cond;
  for (int i = 0; i < 3; ++i) {
    if (d_.block[i] <= 1)
      continue;
    std::string c = fresh();
    line(c + " = arith.cmpi eq, " + lowerIndex(IndexExpr::symbol("$T" + std::to_string(i))) +
         ", " + constIndex(0) + " : index");
    if (!cond.empty()) {
      std::string a = fresh();
      line(a + " = arith.andi " + cond + ", " + c + " : i1");
      c = a;
    }
    cond = c;
  }
  if (cond.empty()) {
    cond = fresh();
    line(cond + " = arith.constant true");
  }
  return cond;
}

// A workgroup barrier first: when the loop is entered again (inside an outer loop), a thread
// may still be in its wait on the last tile's barrier, which the init must not reset under it.
void KernelEmitter::tmaInit(const std::string &bars, int stages) {
  std::string first = firstThread();
  SyncItem savedSync = lds_;
  lds_ = {SyncItem::Barrier, -1};
  line(lower_->workgroupBarrier());
  lds_ = savedSync;
  line("scf.if " + first + " {");
  const std::string saved = indent_;
  auto cache = exprCache_;
  indent_ += "  ";
  for (int b = 0; b < stages; ++b)
    lower_->barrierInit(tmaBarrier(bars, constIndex(b)), 1);
  lower_->barrierInitFence();
  indent_ = saved;
  exprCache_ = cache;
  line("}");
  lds_ = {SyncItem::Barrier, -1};
  line(lower_->workgroupBarrier());
  lds_ = savedSync;
}

void KernelEmitter::tmaIssue(const std::vector<const ir::Op *> &staged, const IndexExpr &tile,
                             const std::string &ivSym, const IndexExpr &trips,
                             const IndexExpr &buffer, int tag, const std::string &bars) {
  std::string first = firstThread(), below = fresh(), cond = fresh();
  line(below + " = arith.cmpi slt, " + lowerIndex(tile) + ", " + lowerIndex(trips) + " : index");
  line(cond + " = arith.andi " + first + ", " + below + " : i1");
  // The copies' writes, for the barrier analysis, before the branch (a barrier it places there
  // is outside it): waited for by their readers, they need a barrier only before them.
  for (const ir::Op *o : staged) {
    SyncItem w{SyncItem::Write, promotions_.at(o).alloc, tag};
    w.waited = true;
    mark(w);
  }
  line("scf.if " + cond + " {");
  const std::string saved = indent_;
  auto cache = exprCache_;
  indent_ += "  ";
  tmaCopies(staged, tile, ivSym, buffer, bars);
  indent_ = saved;
  exprCache_ = cache;
  line("}");
}

void KernelEmitter::tmaCopies(const std::vector<const ir::Op *> &staged, const IndexExpr &tile,
                              const std::string &ivSym, const IndexExpr &buffer,
                              const std::string &bars) {
  int64_t bytes = 0;
  for (const ir::Op *o : staged)
    bytes += allocs_[promotions_.at(o).alloc].bytes;
  const std::string bar = tmaBarrier(bars, lowerIndex(buffer));
  lower_->barrierArriveExpect(bar, bytes);
  // One box per column block of 128 bytes: block b at column origin + b x 128 bytes, into the
  // buffer at b x SharedTile::blockBytes; coordinates innermost first (column, row, outer dims).
  for (const ir::Op *o : staged) {
    const Promotion &p = promotions_.at(o);
    const SharedTile &al = allocs_[p.alloc];
    const size_t rank = al.tile.size();
    const int64_t boxCols = 128 / byteSize(o->operands[0]->type.dtype);
    const int64_t blocks = al.tile[rank - 1] / boxCols;
    std::vector<std::string> coord(rank);
    for (size_t i = 0; i + 1 < rank; ++i) {
      IndexExpr at = facts_.simplify(p.origin[rank - 1 - i - 1].subs({{ivSym, tile}}));
      coord[i + 1] = fresh();
      line(coord[i + 1] + " = arith.index_cast " + lowerIndex(at) + " : index to i32");
    }
    for (int64_t b = 0; b < blocks; ++b) {
      IndexExpr at = facts_.simplify(p.origin[rank - 1].subs({{ivSym, tile}}) + b * boxCols);
      coord[0] = fresh();
      line(coord[0] + " = arith.index_cast " + lowerIndex(at) + " : index to i32");
      std::string off = fresh(), dst = fresh();
      line(off + " = arith.index_cast " +
           lowerIndex(facts_.simplify(buffer * al.bytes + b * al.blockBytes)) + " : index to i64");
      line(dst + " = llvm.getelementptr " + ldsBase(p.alloc) + "[" + off +
           "] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, i8");
      lower_->tensorCopy(dst, tensorMapArgs_.at(o), coord, bar);
    }
  }
}

// Warp specialization (docs/internals.md, "Warp specialization"). Every thread of the block
// (consumers and the producer warpgroup) takes part in the barriers' init and the workgroup
// barrier after it; then the producer warpgroup lowers its register limit, its first thread runs
// the copy loop (tile j into buffer j % S on full barrier j % S, once the consumers released
// the buffer's previous tile: empty barrier j % S, phase (j / S - 1) % 2, for j >= S), and the
// warpgroup exits. The consumers raise their limit and run the kernel, their workgroup barriers
// among themselves (TargetLowering::barrierThreads).
bool KernelEmitter::warpSpecializedProducer() {
  const WarpSpecialization &w = plan_.specialization;
  const auto [s, li] = specializedLoop();
  if (!s)
    return unsupported("a warp-specialized kernel without its loop (a wavec bug)", k_.loc);
  if (!li)
    return unsupported("a warp-specialized loop without its loop info (a wavec bug)", k_.loc);
  const int stages = s->stages;
  const int64_t consumers = d_.block[0];
  wsFull_ = tmaBarriers(stages);
  wsEmpty_ = tmaBarriers(stages);
  std::string first = firstThread();
  line("scf.if " + first + " {");
  std::string saved = indent_;
  auto cache = exprCache_;
  indent_ += "  ";
  for (int b = 0; b < stages; ++b) {
    lower_->barrierInit(tmaBarrier(wsFull_, constIndex(b)), 1);
    lower_->barrierInit(tmaBarrier(wsEmpty_, constIndex(b)), static_cast<int>(consumers / 32));
  }
  lower_->barrierInitFence();
  indent_ = saved;
  exprCache_ = cache;
  line("}");
  {
    SyncItem savedSync = lds_;
    lds_ = {SyncItem::Barrier, -1};
    line("gpu.barrier"); // every thread of the block, the producer warpgroup's too
    lds_ = savedSync;
  }
  const std::string tid = lowerIndex(IndexExpr::symbol("$T0"));
  std::string isProducer = fresh(), isIssuer = fresh();
  line(isProducer + " = arith.cmpi sge, " + tid + ", " + constIndex(consumers) + " : index");
  line("scf.if " + isProducer + " {");
  indent_ += "  ";
  if (w.producerRegisters > 0)
    lower_->setRegisterLimit(w.producerRegisters, false);
  line(isIssuer + " = arith.cmpi eq, " + tid + ", " + constIndex(consumers) + " : index");
  line("scf.if " + isIssuer + " {");
  indent_ += "  ";
  const bool persistent = w.perSM > 0;
  if (persistent) // every tile of this workgroup, the ring's count going on (persistBase_)
    persistentOpen(false);
  producerCopies(*s, *li);
  if (persistent)
    persistentClose(false);
  indent_ = saved + "  ";
  line("}");
  lower_->exitThread();
  indent_ = saved;
  exprCache_ = cache;
  line("}");
  if (w.consumerRegisters > 0)
    lower_->setRegisterLimit(w.consumerRegisters, true);
  lower_->barrierThreads = static_cast<int>(consumers);
  if (w.pingpong > 0) { // the first turn is warpgroup 0's: the last one hands it over
    const std::string last = fresh();
    line(last + " = arith.cmpi sge, " + tid + ", " + constIndex(consumers - 128) + " : index");
    line("scf.if " + last + " {");
    indent_ += "  ";
    lower_->namedBarrier(2, 256, true);
    indent_ = saved;
    exprCache_ = cache;
    line("}");
  }
  return !failed_;
}

// Ping-pong (WarpSpecialization::pingpong): warpgroup k (consumer thread / 128) waits on named
// barrier 2 + k, or arrives on the next one's, 2 + (k + 1) % n; each of the 256 threads of a
// barrier is one of its own warpgroup's or the one handing it the turn. One branch per
// warpgroup, so that every barrier's id is a constant.
void KernelEmitter::pingpongTurn(bool arrive) {
  const int64_t n = plan_.specialization.pingpong;
  const std::string wg = binop("divui", lowerIndex(IndexExpr::symbol("$T0")), constIndex(128));
  const std::string saved = indent_;
  auto cache = exprCache_;
  for (int64_t k = 0; k < n; ++k) {
    const std::string mine = fresh();
    line(mine + " = arith.cmpi eq, " + wg + ", " + constIndex(k) + " : index");
    line("scf.if " + mine + " {");
    indent_ += "  ";
    lower_->namedBarrier(static_cast<int>(2 + (arrive ? (k + 1) % n : k)), 256, arrive);
    indent_ = saved;
    exprCache_ = cache;
    line("}");
  }
}

// The producer's copy loop over the tiles j of one output tile: ring tile g = base + j (base:
// persistBase_, 0 without persistent tiles) into buffer g % S on full barrier g % S, once the
// consumers released the buffer's previous tile g - S (empty barrier g % S, phase
// (g / S - 1) % 2, for g >= S).
void KernelEmitter::producerCopies(const LoopSchedule &s, const LoopInfo &li) {
  const int stages = s.stages;
  const std::string outer = indent_;
  auto cache = exprCache_;
  const std::string trips = lowerIndex(li.tripCount);
  const std::string j = "%wsj" + std::to_string(next_++);
  line("scf.for " + j + " = " + constIndex(0) + " to " + trips + " step " + constIndex(1) + " {");
  indent_ += "  ";
  symbols_["$WSJ"] = j;
  const std::string g = persistBase_.empty() ? j : binop("addi", persistBase_, j);
  const std::string round = binop("divui", g, constIndex(stages));
  const std::string buf = binop("remui", g, constIndex(stages));
  symbols_["$WSB"] = buf;
  facts_.setRange("$WSB", 0, stages - 1);
  std::string again = fresh();
  line(again + " = arith.cmpi sge, " + g + ", " + constIndex(stages) + " : index");
  line("scf.if " + again + " {");
  {
    const std::string in = indent_;
    auto c2 = exprCache_;
    indent_ += "  ";
    std::string parity = binop("remui", binop("addi", round, constIndex(1)), constIndex(2));
    std::string p32 = fresh();
    line(p32 + " = arith.index_cast " + parity + " : index to i32");
    lower_->barrierWait(tmaBarrier(wsEmpty_, buf), p32);
    indent_ = in;
    exprCache_ = c2;
  }
  line("}");
  tmaCopies(s.staged, IndexExpr::symbol("$WSJ"), "$IV_" + s.loop->dims[0].str(),
            IndexExpr::symbol("$WSB"), wsFull_);
  symbols_.erase("$WSJ");
  symbols_.erase("$WSB");
  exprCache_ = cache;
  indent_ = outer;
  line("}");
}

void KernelEmitter::tmaWait(const std::string &bars, const std::string &stage,
                            const std::string &iv, int stages) {
  std::string round = binop("divui", iv, constIndex(stages));
  std::string parity = binop("remui", round, constIndex(2)), p32 = fresh();
  line(p32 + " = arith.index_cast " + parity + " : index to i32");
  lower_->barrierWait(tmaBarrier(bars, stage), p32);
}

} // namespace wave::codegen::detail
