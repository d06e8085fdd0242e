// `iterate`: the scf.for with its carried values, and the software pipeline of
// promoted reads (cp.async buffers, register prefetch, read-ahead of the next tile).
#include "codegen/emitter/kernel_emitter.h"

namespace wave::codegen::detail {

// ---- iterate -----------------------------------------------------------------------------

bool KernelEmitter::emitIterate(const ir::Op &op) {
  std::vector<RegVal> carried;
  for (const ir::Value *o : op.operands)
    carried.push_back(values_.at(o));
  // The carried values' shapes are those of their inits widened by what the body yields
  // (a splat 0 init of an MMA accumulator becomes one vector per clone): emit, compare, and
  // emit again with the wider shapes until they settle.
  for (int round = 0; round < 4; ++round) {
    const size_t mark = items_.size();
    auto cache = exprCache_;
    std::vector<RegVal> yielded;
    if (!emitLoopOnce(op, carried, yielded))
      return false;
    bool settled = true;
    for (size_t i = 0; i < carried.size(); ++i) {
      RegVal &c = carried[i];
      const RegVal &y = yielded[i];
      if (carriedFits(c, y))
        continue;
      settled = false;
      if (c.laidOut() || y.deferred)
        return unsupported(DiagId::UnsupportedLoopCarried,
                           "a loop-carried value whose layout changes in the loop", op.loc);
      // A uniform init (a splat) takes the layout of what the body yields.
      c.cloneSyms.insert(y.cloneSyms.begin(), y.cloneSyms.end());
      c.elems = y.elems;
      c.vecDim = y.vecDim;
      c.layout = y.layout;
    }
    if (settled)
      return true;
    items_.resize(mark);
    exprCache_ = cache;
  }
  return unsupported(DiagId::UnsupportedLoopCarried, "a loop whose carried values do not settle",
                     op.loc);
}

bool KernelEmitter::emitLoopOnce(const ir::Op &op, const std::vector<RegVal> &carried,
                                 std::vector<RegVal> &yielded) {
  const ir::Dim &dim = op.dims[0];
  const LoopInfo *li = nullptr;
  for (const auto &l : d_.loops)
    if (l.dim == dim)
      li = &l;
  if (!li)
    return unsupported("iterate over " + dim.str() + " without a loop", op.loc);
  const std::string ivSym = "$IV_" + dim.str();
  const ir::Region &body = *op.regions[0];
  std::vector<const ir::Op *> staged;
  for (const auto &o : body.ops)
    if (isPromoted(*o)) {
      if (!promotions_.count(o.get()) && !promote(*o))
        return false;
      staged.push_back(o.get());
    }
  // Two schedules. With cp.async (every staged copy can use it): S buffers per tile, later
  // tiles copied while the current one is read (below); otherwise one buffer and a register
  // prefetch (load tile i + 1 at the top of iteration i, store it at the end). Either way the
  // barriers come from the analysis.
  bool async = !staged.empty();
  for (const ir::Op *o : staged)
    async = async && asyncCopyable(promotions_.at(o));
  // Tiles read by wgmma: the products of tile i stay in flight into iteration i + 1 (the wait
  // after them keeps one group), so tile i's buffer is free only after iteration i + 1's
  // barrier: the copy issued in iteration i, after the products, fetches tile i + S - 2 (S >= 3;
  // with 2 buffers the wait keeps nothing and the copy fetches tile i + 1). Depth: 4 buffers,
  // else 3, else 2 within the opt-in shared memory.
  bool wgLoop = false;
  for (const ir::Op *o : staged)
    wgLoop |= promotions_.at(o).wgmma;
  // Pipeline depth: the first of these that fits: 4 or 3 swizzled buffers within the static
  // shared memory, 3 within the opt-in limit (NVIDIA dynamic shared memory: bigger block tiles
  // need it, and 3 buffers measured best there, docs/performance.md), then 2 swizzled or padded
  // ones, then padded ones within the opt-in limit (rows longer than 128 bytes, e.g.
  // attention's head dim 128, cannot be swizzled); 1 (register prefetch) otherwise.
  int stages = 1;
  bool swizzle = false;
  for (const ir::Op *o : staged)
    allocs_[promotions_.at(o).alloc].stages = 1;
  struct Depth {
    int stages;
    bool swizzle;
    int64_t budget;
  };
  const int64_t staticLds = target_.ldsBytes, optInLds = target_.ldsOptInBytes;
  const std::vector<Depth> depths =
      wgLoop ? std::vector<Depth>{{4, true, optInLds}, {3, true, optInLds}, {2, true, optInLds},
                                  {2, false, optInLds}}
             : std::vector<Depth>{{4, true, staticLds}, {3, true, staticLds}, {3, true, optInLds},
                                  {2, true, staticLds}, {2, false, staticLds}, {3, false, optInLds},
                                  {2, true, optInLds}, {2, false, optInLds}};
  for (Depth c : depths) {
    if (!async || stages > 1)
      break;
    bool ok = true;
    for (const ir::Op *o : staged) {
      LdsAlloc &al = allocs_[promotions_.at(o).alloc];
      ok = ok && (!c.swizzle || al.xorBytes || swizzlable(al.tile, o->operands[0]->type.dtype));
    }
    if (!ok)
      continue;
    int64_t total = 0;
    std::vector<LdsAlloc> trial = allocs_;
    for (size_t i = 0; i < allocs_.size(); ++i) {
      LdsAlloc &al = trial[i];
      bool mine = false;
      for (const ir::Op *o : staged)
        mine |= promotions_.at(o).alloc == static_cast<int>(i);
      if (mine) {
        relayout(al, staged.front()->operands[0]->type.dtype, c.swizzle);
        al.stages = c.stages;
      }
      total += (al.bytes + 15) / 16 * 16 * al.stages;
    }
    if (wgLoop)
      total = placeAllocs(trial);
    if (total <= c.budget) {
      stages = c.stages;
      swizzle = c.swizzle;
    }
  }
  if (stages == 1)
    async = false;
  for (const ir::Op *o : staged) {
    LdsAlloc &al = allocs_[promotions_.at(o).alloc];
    relayout(al, o->operands[0]->type.dtype, swizzle);
    al.stages = stages;
  }
  // Fragment pipelining (with cp.async, when the staged reads have several clones along the
  // loop's dim, i.e. several K steps of an mma): step 0 of tile i + 1 is read at the end of
  // iteration i and carried into iteration i + 1, the other steps at its top. The end of the
  // iteration then holds the one barrier (after the reads of step 1.. of tile i, before those
  // of tile i + 1), so the copy of tile i + S goes into tile i's buffer right behind it, and the
  // ldmatrix latency after the barrier overlaps the last step's MMAs (emitMid, placed by
  // emitMma's afterKStep_ hook before the last K step).
  const std::string kSym = "$i_" + dim.str();
  bool pipe = async && expansionCount(kSym) >= 2 && !wgLoop;
  for (const ir::Op *o : staged) {
    bool alongLoop = false;
    for (const auto &di : accessOf(*o)->dims)
      alongLoop |= di.start.dependsOn(kSym);
    pipe = pipe && alongLoop;
  }
  auto firstStep = [&](const CloneAssign &a) { return a.at(kSym) == 0; };
  // Step by step when every user of the staged reads is an mma over the loop's dim (emitMma's
  // hook then runs between its K steps): step 1 at the top, step k + 2 after the MMAs of step k,
  // so at most two steps' fragments (and the carried step 0) are live. Otherwise all later
  // steps at the top.
  bool stepwise = pipe;
  for (const ir::Op *o : staged)
    for (const ir::Op *u : o->results[0]->users)
      stepwise = stepwise && u->kind == ir::OpKind::Mma && u->dims.size() == 3 &&
                 u->dims[2] == dim;
  auto laterStep = [&](const CloneAssign &a) {
    return stepwise ? a.at(kSym) == 1 : a.at(kSym) != 0;
  };
  // Prologue: tiles 0 .. ahead - 1 into buffers 0 .. ahead - 1 (clamped to the last tile), one
  // commit group per tile. `wgKeep`: wgmma groups left in flight at the end of an iteration.
  const int wgKeep = wgLoop && async && stages >= 3 && wgmmaOverlaps(op) ? 1 : 0;
  const int ahead = pipe ? stages : std::max(1, stages - 1 - wgKeep);
  for (int t = 0; t < ahead; ++t) {
    subs_[ivSym] = max(min(IndexExpr(t), li->tripCount - 1), IndexExpr(0)); // no trips: tile 0, masked
    stageIndex_ = IndexExpr(t);
    stageTag_ = async ? t : -1;
    for (const ir::Op *o : staged) {
      if (async)
        cpAsyncCopy(promotions_.at(o));
      else
        coopStore(promotions_.at(o), coopLoad(promotions_.at(o)));
    }
    if (async)
      line("llvm.call_intrinsic \"llvm.nvvm.cp.async.commit.group\"() : () -> ()");
  }
  subs_.erase(ivSym);
  std::vector<RegVal> stepZero(staged.size());
  if (pipe) {
    stageIndex_ = IndexExpr(0);
    stageTag_ = 0;
    for (size_t s = 0; s < staged.size(); ++s)
      if (!ldsRead(*staged[s], promotions_.at(staged[s]), stepZero[s], firstStep))
        return false;
  }
  stageIndex_ = IndexExpr(0);
  stageTag_ = -1;

  const std::string trips = lowerIndex(li->tripCount);
  const unsigned n = next_++;
  const std::string loop = "%loop" + std::to_string(n), iv = "%iv" + std::to_string(n);
  std::vector<std::string> inits, types, args;
  auto iterArg = [&](const std::string &init, const std::string &type) {
    inits.push_back(init);
    types.push_back(type);
    args.push_back("%it" + std::to_string(n) + "_" + std::to_string(args.size()));
    return args.back();
  };
  std::vector<std::vector<CloneAssign>> clones;
  for (size_t i = 0; i < carried.size(); ++i) {
    clones.push_back(clonesOver(carried[i].cloneSyms));
    for (const auto &a : clones.back())
      iterArg(operandAt(values_.at(op.operands[i]), a, carried[i].elems),
              vecType(carried[i].dtype, carried[i].elems));
  }
  // The carried K step 0 fragments (by clone key) and the buffer index: a loop-carried index
  // rotated by a compare and select rather than IV % S, which LLVM's loop strength reduction
  // would turn into one induction variable per shared-memory address.
  std::vector<std::map<std::string, std::string>> stepZeroArgs(staged.size());
  for (size_t s = 0; s < staged.size(); ++s)
    for (const auto &[key, ssa] : stepZero[s].clones)
      stepZeroArgs[s][key] = iterArg(ssa, vecType(stepZero[s].dtype, stepZero[s].elems));
  const std::string stage = async ? iterArg(constIndex(0), "index") : "";
  std::string head = "scf.for " + iv + " = " + constIndex(0) + " to " + trips + " step " +
                     constIndex(1);
  if (!args.empty()) {
    std::string ia, ty;
    for (size_t j = 0; j < args.size(); ++j) {
      ia += (j ? ", " : "") + args[j] + " = " + inits[j];
      ty += (j ? ", " : "") + types[j];
    }
    head = loop + ":" + std::to_string(args.size()) + " = " + head + " iter_args(" + ia +
           ") -> (" + ty + ")";
  }
  {
    SyncItem saved = lds_;
    lds_ = {SyncItem::LoopBegin, -1};
    lds_.stages = stages;
    line(head + " {");
    lds_ = saved;
  }
  const std::string outer = indent_;
  auto cache = exprCache_;
  indent_ += "  ";
  symbols_[ivSym] = iv;
  size_t j = 0;
  for (size_t i = 0; i < carried.size(); ++i) {
    RegVal r = carried[i];
    r.clones.clear();
    for (const auto &a : clones[i])
      r.clones[cloneKey(a, r.cloneSyms)] = args[j++];
    values_[body.args[i]] = std::move(r);
  }
  // Buffer indices: this iteration's tile i in buffer `stage`, i + 1 in `stageNext`, the copy
  // of tile i + S - 1 (without fragment pipelining) in `stagePrev` = (i + S - 1) % S.
  const std::string stSym = "$ST_" + dim.str(), stNextSym = "$STnext_" + dim.str(),
                    stPrevSym = "$STprev_" + dim.str();
  std::string stageNext;
  if (async) {
    std::string inc = binop("addi", stage, constIndex(1)), wrap = fresh(), zero = fresh();
    line(wrap + " = arith.cmpi eq, " + inc + ", " + constIndex(stages) + " : index");
    stageNext = fresh();
    line(stageNext + " = arith.select " + wrap + ", " + constIndex(0) + ", " + inc + " : index");
    std::string dec = binop("subi", stage, constIndex(1)), prev = fresh();
    line(zero + " = arith.cmpi eq, " + stage + ", " + constIndex(0) + " : index");
    line(prev + " = arith.select " + zero + ", " + constIndex(stages - 1) + ", " + dec +
         " : index");
    for (const auto &[sym, ssa] : {std::pair<std::string, std::string>{stSym, stage},
                                   {stNextSym, stageNext},
                                   {stPrevSym, prev}}) {
      symbols_[sym] = ssa;
      facts_.setRange(sym, 0, stages - 1);
    }
  }
  // wgmma: the copy of this iteration fetches tile i + wgAhead into buffer (i + wgAhead) % S.
  const int wgAhead = stages - 1 - wgKeep;
  std::string wgBufSym = wgAhead == 1 ? stNextSym : stPrevSym;
  if (wgLoop && async && wgAhead != 1 && wgAhead != stages - 1) {
    wgBufSym = "$STplus" + std::to_string(wgAhead) + "_" + dim.str();
    std::string inc = binop("addi", stage, constIndex(wgAhead)), wrap = fresh(), sel = fresh();
    line(wrap + " = arith.cmpi sge, " + inc + ", " + constIndex(stages) + " : index");
    line(sel + " = arith.select " + wrap + ", " + binop("subi", inc, constIndex(stages)) + ", " +
         inc + " : index");
    symbols_[wgBufSym] = sel;
    facts_.setRange(wgBufSym, 0, stages - 1);
  }
  const int savedKeep = wgmmaKeep_, savedStages = wgmmaStages_;
  const bool savedInFlight = wgmmaInFlight_;
  wgmmaKeep_ = wgKeep;
  wgmmaStages_ = async ? stages : 0;
  wgmmaInFlight_ = false;
  // The tile the copies of this iteration fetch (the last iterations fetch the last tile
  // again: no bounds question).
  std::vector<std::vector<std::string>> prefetched;
  const std::string nextSym = "$IVnext_" + dim.str();
  if (!staged.empty()) {
    std::string one =
        binop("addi", iv, constIndex(pipe ? stages : async ? stages - 1 - wgKeep : 1));
    std::string last = binop("subi", trips, constIndex(1));
    symbols_[nextSym] = binop("minsi", one, last);
    sym::Range r = facts_.rangeOfSymbol(ivSym);
    facts_.setRange(nextSym, r.lo, r.hi);
    staged_.insert(staged.begin(), staged.end());
  }
  if (!staged.empty() && !async) {
    subs_[ivSym] = IndexExpr::symbol(nextSym);
    for (const ir::Op *o : staged)
      prefetched.push_back(coopLoad(promotions_.at(o)));
    subs_.erase(ivSym);
  }
  auto copyAhead = [&](const std::string &bufferSym, int tag) {
    subs_[ivSym] = IndexExpr::symbol(nextSym);
    stageIndex_ = IndexExpr::symbol(bufferSym);
    stageTag_ = tag;
    for (const ir::Op *st : staged)
      cpAsyncCopy(promotions_.at(st));
    line("llvm.call_intrinsic \"llvm.nvvm.cp.async.commit.group\"() : () -> ()");
    subs_.erase(ivSym);
    stageIndex_ = IndexExpr(0);
    stageTag_ = -1;
  };
  // Step 0 of tile i + 1 from the next buffer, then the copy of tile i + S into this
  // iteration's buffer, whose reads are all before the barrier the analysis puts here.
  std::vector<RegVal> nextStepZero(staged.size());
  bool midDone = !pipe, midOk = true;
  auto emitMid = [&]() {
    midDone = true;
    std::string savedLoc = loc_;
    stageIndex_ = IndexExpr::symbol(stNextSym);
    stageTag_ = 1;
    for (size_t s = 0; s < staged.size() && midOk; ++s) {
      loc_ = locOf(staged[s]->loc);
      midOk = ldsRead(*staged[s], promotions_.at(staged[s]), nextStepZero[s], firstStep);
    }
    loc_ = locOf(staged.front()->loc);
    copyAhead(stSym, stages);
    loc_ = savedLoc;
  };
  auto savedHook = afterKStep_;
  std::set<int64_t> stepsRead = {0, 1};
  afterKStep_ = [&](const std::string &sym, int64_t kk, int64_t count) {
    if (sym != kSym)
      return;
    if (stepwise && kk + 2 < count && stepsRead.insert(kk + 2).second) {
      // Step kk + 2 of tile i, behind the MMAs of step kk + 1; added to the reads' values,
      // which emitMma looks up per step.
      std::string savedLoc = loc_;
      stageIndex_ = IndexExpr::symbol(stSym);
      stageTag_ = 0;
      for (const ir::Op *o : staged) {
        if (!midOk)
          break;
        loc_ = locOf(o->loc);
        RegVal v;
        midOk = ldsRead(*o, promotions_.at(o), v, [&](const CloneAssign &a) {
          return a.at(kSym) == kk + 2;
        });
        for (const auto &[key, ssa] : v.clones)
          values_.at(o->results[0]).clones[key] = ssa;
      }
      stageIndex_ = IndexExpr(0);
      stageTag_ = -1;
      loc_ = savedLoc;
    }
    if (!midDone && kk == count - 2)
      emitMid();
  };
  const ir::Op *lastStaged = staged.empty() ? nullptr : staged.back();
  const ir::Op *yield = nullptr;
  bool ok = true;
  for (const auto &o : body.ops) {
    if (o->kind == ir::OpKind::Yield) {
      yield = o.get();
      break;
    }
    // Reads of a multi-buffered tile use this iteration's buffer.
    if (async && staged_.count(o.get())) {
      stageIndex_ = IndexExpr::symbol(stSym);
      stageTag_ = 0;
    }
    if (pipe && staged_.count(o.get())) {
      // Steps 1.. of tile i; step 0 came with the previous iteration (or the prologue).
      const size_t s = std::find(staged.begin(), staged.end(), o.get()) - staged.begin();
      std::string savedLoc = locOf(o->loc);
      std::swap(loc_, savedLoc);
      RegVal v;
      ok = ldsRead(*o, promotions_.at(o.get()), v, laterStep);
      std::swap(loc_, savedLoc);
      for (const auto &[key, arg] : stepZeroArgs[s])
        v.clones[key] = arg;
      values_[o->results[0]] = std::move(v);
    } else {
      ok = emitOp(*o);
    }
    stageIndex_ = IndexExpr(0);
    stageTag_ = -1;
    if (!ok || !midOk)
      break;
    if (async && !pipe && !wgLoop && o.get() == lastStaged)
      copyAhead(stPrevSym, stages - 1); // tile i + S - 1, behind this iteration's reads
  }
  afterKStep_ = savedHook;
  const bool wgOpen = wgmmaInFlight_;
  wgmmaKeep_ = savedKeep;
  wgmmaStages_ = savedStages;
  wgmmaInFlight_ = savedInFlight;
  if (!ok || !midOk)
    return false;
  if (!midDone)
    emitMid();
  if (!midOk)
    return false;
  if (wgLoop && async) // behind the products, after this iteration's barrier
    copyAhead(wgBufSym, wgAhead);
  for (const ir::Op *o : staged)
    staged_.erase(o);
  for (size_t s = 0; s < prefetched.size(); ++s)
    coopStore(promotions_.at(staged[s]), prefetched[s]);
  if (yield ? yield->operands.size() != carried.size() : !carried.empty())
    return unsupported("an iterate body without a matching yield", op.loc);
  bool fits = true;
  for (size_t i = 0; i < carried.size(); ++i) {
    if (values_.at(yield->operands[i]).lazy)
      return unsupported(DiagId::UnsupportedStreamedRow,
                         "a streamed row (a dynamic or long reduced row) yielded by a loop",
                         op.loc);
    yielded.push_back(values_.at(yield->operands[i]));
    fits &= carriedFits(carried[i], yielded.back());
  }
  if (fits && !args.empty()) {
    std::vector<std::string> ys;
    for (size_t i = 0; i < carried.size(); ++i) {
      RegVal y;
      if (!convertTo(yielded[i], carried[i], y, op.loc))
        return false;
      for (const auto &a : clones[i])
        ys.push_back(operandAt(y, a, carried[i].elems));
    }
    for (size_t s = 0; s < staged.size(); ++s)
      for (const auto &[key, arg] : stepZeroArgs[s])
        ys.push_back(nextStepZero[s].clones.at(key));
    if (async)
      ys.push_back(stageNext);
    std::string list, ty;
    for (size_t k = 0; k < ys.size(); ++k) {
      list += (k ? ", " : "") + ys[k];
      ty += (k ? ", " : "") + types[k];
    }
    line("scf.yield " + list + " : " + ty);
  }
  indent_ = outer;
  exprCache_ = cache;
  symbols_.erase(ivSym);
  {
    SyncItem saved = lds_;
    lds_ = {SyncItem::LoopEnd, -1};
    line("}");
    lds_ = saved;
  }
  if (async) // nothing may stay in flight into shared memory the kernel no longer owns
    line("llvm.call_intrinsic \"llvm.nvvm.cp.async.wait.all\"() : () -> ()");
  if (wgOpen) // the last tile's products, before anything reads the accumulators
    line("nvvm.wgmma.wait.group.sync.aligned 0");
  j = 0;
  for (size_t i = 0; i < carried.size(); ++i) {
    RegVal r = carried[i];
    r.clones.clear();
    for (const auto &a : clones[i])
      r.clones[cloneKey(a, r.cloneSyms)] = loop + "#" + std::to_string(j++);
    values_[op.results[i]] = std::move(r);
  }
  return !failed_;
}

} // namespace wave::codegen::detail
