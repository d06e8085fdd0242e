// MLIR emission (see mlir_emitter.h for the kernel ABI).
//
// Takes the kernel graph and the distribution's per-access index expressions; emits, per
// kernel: thread/workgroup ids, index arithmetic (IndexExpr -> arith on `index`), one clone of
// every op per expansion index ($i_<dim>), each clone holding a `vector<E x T>` of the lane's
// elements ($g), or a scalar when E = 1. `iterate` becomes an scf.for whose iter_args are every
// clone of every carried value; `mma` becomes one matrix instruction per (M, N) clone, chained
// over the K clones (MFMA / WMMA through ROCDL, mma.sync through the NVVM intrinsic, wgmma on
// sm_90a through NVVM's wgmma ops with A and B read by the tensor cores from shared memory
// through matrix descriptors: emitWgmma).
//
// What is staged through shared memory, how it is copied and how each loop pipelines it is
// decided before any op is emitted, by the plan passes (passes/kernel_plan.h: promotion,
// cooperative copies, schedule); the emitter emits what their KernelPlan says, and the
// shared-memory plan places every tile once the kernel is emitted.
// Shared memory (promotion of `shared` kernel parameters, docs/hardware.md section 5): each
// promoted read gets a tile of one per-workgroup arena (`llvm.mlir.global` in address space 3),
// padded on the innermost dim against bank conflicts; the whole workgroup copies the tile with
// 128-bit global loads (masked as the original read), stores it to shared memory, and the read
// itself then loads its MMA-operand layout from the tile (`ldmatrix` where the target table
// gives one). Inside `iterate`, later tiles are fetched while the current one is used: on
// NVIDIA through a cp.async pipeline of S buffers (with several K steps per tile, the fragments
// of the next tile's first step are read ahead too: emitLoopOnce), otherwise the copy of tile
// i + 1 is loaded into registers at the top of iteration i and stored at its end (register
// prefetch: global latency hides behind the MMAs).
// Barriers are not emitted by hand: the stream of shared-memory accesses goes through
// barrier_insertion.h, which places the fewest that make it race-free.
//
// Accesses: contiguous elements become `llvm.load`/`llvm.store` of vectors of at most 128 bits,
// aligned as far as the distribution's facts prove. On AMD a masked or possibly misaligned
// global access becomes buffer loads/stores (`rocdl.raw.buffer.*`, see bufferEligible): the
// hardware's range check against the descriptor's num_records, or a voffset beyond it, masks
// without branches, and the few partial vectors at the tensor's edge share one branch per op.
// Elsewhere (NVIDIA, shared memory, lane offsets the facts cannot bound to 31 bits) a masked
// access (DimIndex::masked) takes a uniform fast path: when the vector's last element is in
// bounds, the wide access; otherwise one guarded scalar access per element (a masked-off load
// reads 0 through a clamped address and a select, no branch). A masked store of elements along
// one contiguous dim stores its in-bounds prefix in one loop (storePrefix) rather than one
// branch per element: fewer basic blocks and instructions is what LLVM's AMDGPU code generation
// time scales with (docs/performance.md). MLIR 19's vector.maskedload/maskedstore are not used:
// they are scalarized into per-element branches on AMDGPU anyway.
//
// Reductions (emitReduce): from the operand's layout, in-thread, then butterfly
// `gpu.shuffle xor` steps over the lane bits that move along the dim, then across waves through
// shared memory. Rows of a dynamic length are streamed: their consumers loop over the row and
// re-emit what the value depends on per chunk (see the sections at emitReduce).
//
// Layouts: every value has a thread layout (RegVal::layout; MMA results the kind's accumulator
// layout). A value needed in another layout (an mma operand from an earlier mma, an elementwise
// partner, a write's anchor) is moved by convertTo: register permutation or cross-lane
// shuffles, as passes/thread_layout.h plans. self_index/apply_expr values are computed in the
// layout of their user (RegVal::deferred).
//
// Mapped reads and writes (docs/language.md section 14): the value is laid out over the register
// dims (the iterators, AccessIndex::regDims), the addresses are the mapping's expressions of
// them; the checks are the iteration bounds plus the memory-side bounds the distribution could
// not prove (Access::iter, DimIndex::masked/maskedBelow), and the pieces logic groups the
// elements whose offsets are provably consecutive. A promoted mapped read stages a tile of the
// register side, gathered through the mapping.
//
// Not supported yet (refused before emission by the legalize pass, passes/legalize.h, each with
// its own `unsupported-*` id): loops, barriers, mma, promoted reads and allocated tiles inside
// an `if`, mapped atomics and atomics on `shared` parameters, allocated tiles a workgroup's
// accesses overrun. Values that would
// have to cross waves to change layout are refused here (`unsupported-layout-change`).
//
// Files: this one holds the dispatch over ops (emitOp), the kernel's frame (emit: parameters,
// ids, shared memory, barriers) and emitMlir; codegen/emitter/kernel_emitter.h declares
// KernelEmitter, whose methods sit in codegen/emitter/ by op family: index.cpp (index
// lowering), access.cpp and access_buffer.cpp (loads and stores, masks, the AMD buffer path),
// shared_memory.cpp (promotion), iterate.cpp (loops and pipelining), elementwise.cpp (with f64
// math), layout.cpp (layout conversion), reduce.cpp, stream.cpp (streamed rows), mma.cpp,
// control.cpp (`if`) and atomic.cpp (atomics on global tensors and allocated tiles);
// `allocate` is planAllocate (reduction_scratch.cpp), emitAllocate and rebaseAllocated in
// access.cpp.
#include "codegen/emitter/kernel_emitter.h"
#include "passes/pass_list.h"

namespace wave {

namespace codegen::detail {

bool KernelEmitter::emitOp(const ir::Op &op) {
  std::string outerLoc = locOf(op.loc);
  std::swap(loc_, outerLoc);
  struct Restore {
    std::string &loc, saved;
    ~Restore() { loc = saved; }
  } restore{loc_, outerLoc};
  if (!stream_) {
    // Streamed rows: element-wise ops on them are deferred; reductions and writes loop.
    bool streamedIn = false;
    for (const ir::Value *o : op.operands) {
      auto it = values_.find(o);
      streamedIn |= it != values_.end() && it->second.lazy;
    }
    switch (op.kind) {
    case ir::OpKind::Unary:
    case ir::OpKind::Binary:
    case ir::OpKind::Math:
    case ir::OpKind::Select:
    case ir::OpKind::Cast:
    case ir::OpKind::Broadcast:
    case ir::OpKind::Permute:
      if (streamedIn)
        return deferStreamed(op);
      break;
    case ir::OpKind::Write:
      if (streamedIn || streamedDim(op) || !walkedDims(op).empty())
        return emitStreamedWrite(op);
      break;
    case ir::OpKind::Reduce: break;
    default:
      if (streamedIn)
        return unsupported(DiagId::UnsupportedStreamedRow,
                           std::string("a streamed row (a dynamic or long reduced row) used by ") +
                               opKindName(op.kind),
                           op.loc);
    }
  }
  switch (op.kind) {
  case ir::OpKind::Read: return emitRead(op);
  case ir::OpKind::Write: return emitWrite(op);
  case ir::OpKind::Constant: {
    RegVal v;
    v.dtype = op.results[0]->type.dtype;
    std::string ty = mlirType(v.dtype);
    if (ty.empty())
      return unsupported(std::string("element type ") + scalarTypeName(v.dtype), op.loc);
    if (opaque(v.dtype)) { // its bits, rounded as a run-time cast from f64 rounds (folded)
      std::string d = fresh();
      line(d + " = arith.constant " + floatLiteral(op.fvalue, ScalarType::F64) + " : f64");
      v.clones[""] = floatToNarrow(d, ScalarType::F64, v.dtype, 1);
      values_[op.results[0]] = std::move(v);
      return true;
    }
    std::string lit = isFloat(v.dtype)            ? floatLiteral(op.fvalue, v.dtype)
                      : v.dtype == ScalarType::I1 ? ((op.ivalue & 1) ? "true" : "false")
                                                  : intLiteral(op.ivalue, v.dtype);
    std::string r = fresh();
    line(r + " = arith.constant " + lit + " : " + ty);
    v.clones[""] = r;
    values_[op.results[0]] = std::move(v);
    return true;
  }
  case ir::OpKind::Broadcast:
  case ir::OpKind::Permute:
    // Values are uniform along dims they lack and layouts name dims, not positions: a
    // broadcast or a permutation is the value itself.
    values_[op.results[0]] = values_.at(op.operands[0]);
    values_[op.results[0]].dtype = op.results[0]->type.dtype;
    return true;
  case ir::OpKind::SelfIndex: {
    RegVal v;
    v.dtype = op.results[0]->type.dtype;
    v.deferred = &op;
    values_[op.results[0]] = std::move(v);
    return true;
  }
  case ir::OpKind::ApplyExpr: {
    const RegVal &x = values_.at(op.operands[0]);
    RegVal v;
    v.dtype = op.results[0]->type.dtype;
    if (x.deferred || !x.laidOut()) {
      v.deferred = &op;
    } else {
      v.layout = x.layout;
      v.elems = x.elems;
      v.vecDim = x.vecDim;
      v.cloneSyms = x.cloneSyms;
      for (const auto &a : clonesOver(x.cloneSyms))
        v.clones[cloneKey(a, v.cloneSyms)] =
            applyExprClone(op, operandAt(x, a, x.elems), x.dtype, x.elems);
    }
    values_[op.results[0]] = std::move(v);
    return !failed_;
  }
  case ir::OpKind::Unary:
  case ir::OpKind::Binary:
  case ir::OpKind::Math:
  case ir::OpKind::Select:
  case ir::OpKind::Cast: return emitElementwise(op);
  case ir::OpKind::Mma: return emitMma(op);
  case ir::OpKind::Reduce: return emitReduce(op);
  case ir::OpKind::Cumsum: return emitCumsum(op);
  case ir::OpKind::TopK: return emitTopK(op);
  case ir::OpKind::Iterate: return emitIterate(op);
  case ir::OpKind::Barrier: {
    // The kernel's own barrier(): the barrier analysis counts it (barrier_insertion.h).
    SyncItem saved = lds_;
    lds_ = {SyncItem::Barrier, -1};
    line(lower_->workgroupBarrier());
    lds_ = saved;
    return true;
  }
  case ir::OpKind::If: return emitIf(op);
  case ir::OpKind::AtomicAdd:
  case ir::OpKind::AtomicMin:
  case ir::OpKind::AtomicMax: return emitAtomic(op);
  case ir::OpKind::Allocate: return emitAllocate(op);
  default: return unsupported(opKindName(op.kind), op.loc);
  }
}

void KernelEmitter::dumpPlan(std::initializer_list<const char *> passes) {
  for (const char *pass : passes)
    if (dumps_ && dumps_->wants(pass))
      dumps_->text[pass] += printPlan(pass, k_, plan_, d_);
}

// The emitted lines before barrier insertion, each shared-memory access tagged with what the
// barrier analysis sees (`--print-ir-after=emit`).
std::string KernelEmitter::emittedText() const {
  static const char *kinds[] = {"", "shared read", "shared write", "loop begin", "loop end",
                                "barrier", "shared atomic"};
  std::string out = "kernel " + k_.name + ": emitted, before barrier insertion\n";
  for (const auto &it : items_) {
    out += it.text.find_first_not_of(' ') == std::string::npos ? it.text + "(no text)" : it.text;
    const SyncItem &s = it.sync;
    if (s.kind != SyncItem::Other) {
      out += "    // " + std::string(kinds[static_cast<int>(s.kind)]);
      if (s.resource >= 0)
        out += " tile " + std::to_string(s.resource);
      if (s.stage >= 0)
        out += " buffer " + std::to_string(s.stage);
      if (s.async)
        out += " async";
      if (s.asyncProxy)
        out += " (async proxy)";
    }
    out += "\n";
  }
  return out;
}

// Where barrier insertion put barriers (`--print-ir-after=barrier-insertion`).
std::string KernelEmitter::barrierText(const std::vector<BarrierPlacement> &barrier,
                                       const std::vector<int> &keep,
                                       const std::vector<bool> &fence) const {
  std::string out = "kernel " + k_.name + ": barriers\n";
  int count = 0;
  for (size_t i = 0; i < items_.size(); ++i) {
    if (barrier[i] == BarrierPlacement::None)
      continue;
    ++count;
    std::string what = barrier[i] == BarrierPlacement::WaitAndBarrier
                           ? "cp.async wait (" + std::to_string(keep[i]) +
                                 " groups may stay in flight), barrier"
                           : "barrier";
    if (fence[i])
      what += ", async proxy fence";
    std::string next = items_[i].text.substr(items_[i].text.find_first_not_of(' ') ==
                                                     std::string::npos
                                                 ? items_[i].text.size()
                                                 : items_[i].text.find_first_not_of(' '));
    out += "  before item " + std::to_string(i) + ": " + what + "\n    " +
           (next.empty() ? "(a wgmma's shared-memory reads)" : next.substr(0, 120)) + "\n";
  }
  out += "  " + std::to_string(count) + (count == 1 ? " barrier\n" : " barriers\n");
  return out;
}

// Each tile's live span for the shared-memory plan: from the first emitted access to the last,
// widened to the whole of the outermost loop around any of them (a loop's later iterations
// come back to its first accesses).
void KernelEmitter::liveSpans() {
  std::vector<long> closeOf(items_.size(), -1), outermost(items_.size(), -1);
  std::vector<size_t> open;
  for (size_t i = 0; i < items_.size(); ++i) {
    const SyncItem &it = items_[i].sync;
    if (it.kind == SyncItem::LoopEnd && !open.empty()) {
      closeOf[open.back()] = static_cast<long>(i);
      open.pop_back();
    }
    outermost[i] = open.empty() ? -1 : static_cast<long>(open.front());
    if (it.kind == SyncItem::LoopBegin)
      open.push_back(i);
  }
  for (auto &al : allocs_)
    al.liveFirst = al.liveLast = -1;
  for (size_t i = 0; i < items_.size(); ++i) {
    const SyncItem &it = items_[i].sync;
    const bool access = it.kind == SyncItem::Read || it.kind == SyncItem::Write ||
                        it.kind == SyncItem::Atomic;
    if (!access || it.resource < 0 || static_cast<size_t>(it.resource) >= allocs_.size())
      continue;
    long first = static_cast<long>(i), last = first;
    if (outermost[i] >= 0) {
      first = outermost[i];
      last = closeOf[first] >= 0 ? closeOf[first] : static_cast<long>(items_.size());
    }
    SharedTile &al = allocs_[it.resource];
    al.liveFirst = al.liveFirst < 0 ? first : std::min(al.liveFirst, first);
    al.liveLast = std::max(al.liveLast, last);
  }
}

// The plan's workgroup order (KernelPlan::raster): the launch order's linear id split into
// groups of `group` workgroups of grid axis 0 times every workgroup of axis 1 (the last group
// narrower when axis 0 does not divide), axis 0 fastest within a group. A permutation of the
// grid's axes 0 and 1, so every workgroup still computes one tile; $WG0 and $WG1 name the
// remapped ids from here on.
void KernelEmitter::remapWorkgroups() {
  const int64_t g = plan_.raster.group;
  if (g <= 0) {
    // Heaviest first (RasterPlan::reverse): axis a's ids backwards, from the grid's size as
    // the distribution gives it (AMD's grid-size query is a library call).
    for (int a = 0; a < 3; ++a)
      if (plan_.raster.reverse[a]) {
        const std::string wg = "$WG" + std::to_string(a);
        symbols_[wg] = binop("subi", binop("subi", lowerIndex(d_.grid[a]), symbols_.at(wg)),
                             constIndex(1));
      }
    return;
  }
  head_ << "      %ro_gx = gpu.grid_dim x\n"
        << "      %ro_gy = gpu.grid_dim y\n"
        << "      %ro_g = arith.constant " << g << " : index\n"
        << "      %ro_row = arith.muli %wg_y, %ro_gx : index\n"
        << "      %ro_lin = arith.addi %ro_row, %wg_x : index\n"
        << "      %ro_span = arith.muli %ro_g, %ro_gy : index\n"
        << "      %ro_grp = arith.divui %ro_lin, %ro_span : index\n"
        << "      %ro_first = arith.muli %ro_grp, %ro_g : index\n"
        << "      %ro_left = arith.subi %ro_gx, %ro_first : index\n"
        << "      %ro_size = arith.minui %ro_left, %ro_g : index\n"
        << "      %ro_in = arith.remui %ro_lin, %ro_span : index\n"
        << "      %ro_dx = arith.remui %ro_in, %ro_size : index\n"
        << "      %wg_rx = arith.addi %ro_first, %ro_dx : index\n"
        << "      %wg_ry = arith.divui %ro_in, %ro_size : index\n";
  symbols_["$WG0"] = "%wg_rx";
  symbols_["$WG1"] = "%wg_ry";
}

// The ids of output tile `lin` (an index SSA value, 0 .. tiles - 1) in the raster order of
// remapWorkgroups (the launch order's linear id is y * grid0 + x), bound to $WG0 and $WG1.
void KernelEmitter::tileIds(const std::string &lin) {
  const std::string gx = lowerIndex(d_.grid[0]);
  const int64_t g = plan_.raster.group;
  if (g <= 0) {
    symbols_["$WG0"] = binop("remui", lin, gx);
    symbols_["$WG1"] = binop("divui", lin, gx);
    return;
  }
  const std::string gy = lowerIndex(d_.grid[1]);
  const std::string span = binop("muli", constIndex(g), gy);
  const std::string first = binop("muli", binop("divui", lin, span), constIndex(g));
  const std::string size = binop("minui", binop("subi", gx, first), constIndex(g));
  const std::string in = binop("remui", lin, span);
  symbols_["$WG0"] = binop("addi", first, binop("remui", in, size));
  symbols_["$WG1"] = binop("divui", in, size);
}

std::pair<const LoopSchedule *, const LoopInfo *> KernelEmitter::specializedLoop() const {
  const LoopSchedule *s = nullptr;
  for (const auto &[op, ls] : plan_.loops)
    if (ls.specialized)
      s = &ls;
  const LoopInfo *li = nullptr;
  if (s)
    for (const auto &l : d_.loops)
      if (l.dim == s->loop->dims[0])
        li = &l;
  return {s, li};
}

void KernelEmitter::persistentCount() {
  persistTiles_ = lowerIndex(d_.grid[0] * d_.grid[1]);
  head_ << "      %pt_stride = gpu.grid_dim x\n";
  persistStride_ = "%pt_stride";
}

void KernelEmitter::persistentOpen(bool marked) {
  PersistSaved saved{symbols_.at("$WG0"), symbols_.at("$WG1"), indent_, exprCache_};
  persistSaved_.push_back(saved);
  const std::string tile = "%ptile" + std::to_string(next_++);
  {
    SyncItem savedSync = lds_;
    if (marked)
      lds_ = {SyncItem::LoopBegin, -1};
    line("scf.for " + tile + " = " + symbols_.at("$WG0") + " to " + persistTiles_ + " step " +
         persistStride_ + " {");
    lds_ = savedSync;
  }
  indent_ += "  ";
  exprCache_.clear(); // entries over $WG0/$WG1 name the ids of before
  const LoopInfo *li = specializedLoop().second;
  const std::string done =
      binop("divui", binop("subi", tile, saved.wg0), persistStride_); // this one's tiles so far
  persistBase_ = binop("muli", done, li ? lowerIndex(li->tripCount) : constIndex(0));
  tileIds(tile);
}

void KernelEmitter::persistentClose(bool marked) {
  const PersistSaved saved = persistSaved_.back();
  persistSaved_.pop_back();
  indent_ = saved.indent;
  exprCache_ = saved.cache;
  symbols_["$WG0"] = saved.wg0;
  symbols_["$WG1"] = saved.wg1;
  persistBase_.clear();
  SyncItem savedSync = lds_;
  if (marked)
    lds_ = {SyncItem::LoopEnd, -1};
  line("}");
  lds_ = savedSync;
}

bool KernelEmitter::emit(std::ostream &os) {
  // Signature: memory pointers and scalars in parameter order, then dynamic symbols as i64.
  std::string sig;
  unsigned argNo = 0;
  auto arg = [&](const std::string &ty) {
    std::string n = "%arg" + std::to_string(argNo++);
    sig += (sig.empty() ? "" : ", ") + n + ": " + ty;
    return n;
  };
  for (const auto &p : k_.params) {
    const ir::Value *v = p.value;
    if (v->type.isMemory()) {
      // A `shared` parameter is a global tensor too; its reads are promoted.
      pointers_[v] = arg("!llvm.ptr<1>");
    } else if (v->type.isScalar()) {
      std::string ty = mlirType(v->type.dtype);
      if (ty.empty())
        return unsupported(std::string("a parameter of type ") + scalarTypeName(v->type.dtype),
                           p.loc);
      RegVal rv;
      rv.dtype = v->type.dtype;
      rv.clones[""] = arg(ty);
      values_[v] = std::move(rv);
    } else {
      return unsupported("a register parameter", p.loc);
    }
  }
  for (const auto &s : d_.dynamicSymbols) {
    std::string a = arg("i64"), n = "%dyn_" + std::to_string(symbols_.size());
    head_ << "      " << n << " = arith.index_cast " << a << " : i64 to index\n";
    symbols_[s] = n;
  }
  const char *xyz[] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i) {
    head_ << "      %tid_" << xyz[i] << " = gpu.thread_id " << xyz[i] << "\n";
    head_ << "      %wg_" << xyz[i] << " = gpu.block_id " << xyz[i] << "\n";
    symbols_["$T" + std::to_string(i)] = std::string("%tid_") + xyz[i];
    symbols_["$WG" + std::to_string(i)] = std::string("%wg_") + xyz[i];
  }

  // The plan passes (promotion, cooperative-copies, schedule: passes/kernel_plan.h), then the
  // ops as the plan says, then the shared-memory plan of every tile.
  PlanContext plan{k_, d_, target_, facts_, *this, plan_};
  if (!planKernel(plan, [&](const char *pass) { dumpPlan({pass}); }))
    return false;
  const bool persistent = plan_.specialization.perSM > 0;
  if (!persistent) // persistent tiles take their ids in the raster order per tile (tileIds)
    remapWorkgroups();
  tensorMapArguments(arg);
  planScratchTiles();
  lower_->barrierThreads = 0;
  if (persistent)
    persistentCount();
  if (plan_.specialization.producerThreads > 0 && !warpSpecializedProducer())
    return false;
  if (persistent)
    persistentOpen(true);
  for (const auto &op : k_.body.ops)
    if (!emitOp(*op))
      return false;
  if (persistent)
    persistentClose(true);
  if (failed_)
    return false;
  if (dumps_ && dumps_->wants("carried-shapes"))
    dumps_->text["carried-shapes"] += "kernel " + k_.name + ": carried-shapes\n" +
                                      (carriedText_.empty() ? "no loops\n" : carriedText_);
  if (dumps_ && dumps_->wants("emit"))
    dumps_->text["emit"] += emittedText();
  liveSpans();
  if (!planSharedMemory(plan))
    return false;
  dumpPlan({"shared-memory-plan"});
  const int64_t ldsBytes = plan_.sharedMemory.bytes, align = plan_.sharedMemory.align;
  if (ldsBytes > 0) {
    if (align > 16) {
      // The arena's base rounded up to `align` (placeTiles left room): the declared alignment
      // of dynamic shared memory is not something to count on.
      head_ << "      %lds_raw = llvm.mlir.addressof @__wave_lds_" << k_.name
            << " : !llvm.ptr<3>\n"
            << "      %lds_at = llvm.ptrtoint %lds_raw : !llvm.ptr<3> to i64\n"
            << "      %lds_zero = llvm.mlir.constant(0 : i64) : i64\n"
            << "      %lds_neg = llvm.sub %lds_zero, %lds_at : i64\n"
            << "      %lds_mask = llvm.mlir.constant(" << align - 1 << " : i64) : i64\n"
            << "      %lds_pad = llvm.and %lds_neg, %lds_mask : i64\n"
            << "      %lds = llvm.getelementptr %lds_raw[%lds_pad] : (!llvm.ptr<3>, i64) -> "
            << "!llvm.ptr<3>, i8\n";
    } else {
      head_ << "      %lds = llvm.mlir.addressof @__wave_lds_" << k_.name << " : !llvm.ptr<3>\n";
    }
    for (size_t i = 0; i < allocs_.size(); ++i)
      head_ << "      " << ldsBase(static_cast<int>(i)) << " = llvm.getelementptr %lds["
            << allocs_[i].offsetBytes << "] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8\n";
    // A dynamic arena is an external array of no size (PTX `.extern .shared`), sized by the
    // launch (dynamicShared(), the host stub).
    dynamicShared_ = plan_.sharedMemory.dynamicBytes;
    os << "    llvm.mlir.global " << (dynamicShared_ ? "external" : "internal") << " @__wave_lds_"
       << k_.name << "() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<"
       << (dynamicShared_ ? 0 : ldsBytes) << " x i8>\n";
  }

  for (const std::string &g : moduleGlobals_)
    os << "    " << g << "\n";
  // A warp-specialized kernel launches its producer warpgroup after the block's threads.
  std::string blk = std::to_string(d_.block[0] + plan_.specialization.producerThreads) + ", " +
                    std::to_string(d_.block[1]) + ", " +
                    std::to_string(d_.block[2]);
  os << "    gpu.func @" << k_.name << "(" << sig << ") kernel attributes {known_block_size = "
     << "array<i32: " << blk << ">";
  os << lower_->kernelAttributes(blk, plan_.specialization.consumerRegisters > 0);
  os << "} {\n" << head_.str();
  std::vector<SyncItem> sync;
  for (const auto &it : items_)
    sync.push_back(it.sync);
  std::vector<int> keepInFlight;
  std::vector<bool> proxyFence;
  std::vector<std::vector<bool>> overlap(allocs_.size(), std::vector<bool>(allocs_.size()));
  for (size_t i = 0; i < allocs_.size(); ++i)
    for (size_t j = 0; j < allocs_.size(); ++j)
      overlap[i][j] = i != j && tilesOverlap(allocs_[i], allocs_[j]);
  std::vector<BarrierPlacement> barrier = placeBarriers(
      sync, &keepInFlight, &proxyFence, plan_.sharedMemory.reused ? &overlap : nullptr);
  if (dumps_ && dumps_->wants("barrier-insertion"))
    dumps_->text["barrier-insertion"] += barrierText(barrier, keepInFlight, proxyFence);
  // Ping-pong's warpgroups are half an iteration apart in the loop: a workgroup barrier there
  // would hang (the schedule pass takes ping-pong only for bodies that need none).
  for (long i = std::max(pingpongFirst_, 0L); i <= pingpongLast_; ++i)
    if (barrier[i] != BarrierPlacement::None || items_[i].sync.kind == SyncItem::Barrier)
      return unsupported("a workgroup barrier in a ping-pong loop (a wavec bug)", k_.loc);
  for (size_t i = 0; i < items_.size(); ++i) {
    const std::string &t = items_[i].text;
    const std::string ind = t.substr(0, t.find_first_not_of(' '));
    if (barrier[i] == BarrierPlacement::WaitAndBarrier) {
      // The reads here need their own tile; the newest `keep` copy groups (later tiles) may
      // still be in flight.
      const std::string name = "%wait_" + std::to_string(i);
      for (const std::string &w : lower_->asyncWait(keepInFlight[i], name))
        os << ind << w << "\n";
    }
    if (barrier[i] != BarrierPlacement::None && proxyFence[i])
      os << ind << lower_->asyncProxyFence() << "\n";
    if (barrier[i] != BarrierPlacement::None && insertBarriers_)
      os << ind << lower_->workgroupBarrier() << "\n";
    if (t.find_first_not_of(' ') != std::string::npos) // not a mark()
      os << items_[i].text << "\n";
  }
  os << "      gpu.return\n    } " << locOf(k_.loc) << "\n";
  return true;
}

} // namespace codegen::detail

std::optional<std::string> emitMlir(const std::vector<CodegenKernel> &kernels,
                                    const TargetInfo &target, DiagnosticEngine &diags,
                                    bool insertBarriers,
                                    std::map<std::string, int64_t> *dynamicShared,
                                    const std::vector<std::string> *dumpPasses,
                                    std::vector<std::pair<std::string, std::string>> *passDumps,
                                    std::map<std::string, std::vector<TensorMapArg>> *tensorMaps,
                                    std::map<std::string, int64_t> *producerThreads,
                                    std::map<std::string, int64_t> *persistentPerSM) {
  codegen::detail::PassDumps dumps;
  if (dumpPasses)
    dumps.wanted = *dumpPasses;
  std::ostringstream os;
  os << "module attributes {gpu.container_module} {\n  gpu.module @wave_kernels {\n";
  bool ok = true;
  for (const auto &ck : kernels) {
    codegen::detail::KernelEmitter e(*ck.kernel, *ck.dist, target, diags, insertBarriers,
                                     &dumps);
    if (!e.emit(os)) {
      diags.note(DiagId::NoteInKernel, ck.kernel->loc, {ck.kernel->name});
      ok = false;
    } else {
      if (dynamicShared && e.dynamicShared() > 0)
        (*dynamicShared)[ck.kernel->name] = e.dynamicShared();
      if (tensorMaps && !e.tensorMaps().empty())
        (*tensorMaps)[ck.kernel->name] = e.tensorMaps();
      if (producerThreads && e.producerThreads() > 0)
        (*producerThreads)[ck.kernel->name] = e.producerThreads();
      if (persistentPerSM && e.persistentPerSM() > 0)
        (*persistentPerSM)[ck.kernel->name] = e.persistentPerSM();
    }
  }
  os << "  }\n}\n";
  // The dumps in pipeline order, whether or not emission succeeded (a dump is how a failure is
  // looked at).
  if (passDumps)
    for (const PassInfo &p : passList())
      if (auto it = dumps.text.find(p.name); it != dumps.text.end())
        passDumps->push_back({it->first, it->second});
  if (!ok)
    return std::nullopt;
  return os.str();
}

} // namespace wave
