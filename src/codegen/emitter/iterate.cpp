// `iterate`: the scf.for with its carried values, and the software pipeline of
// promoted reads (cp.async buffers, register prefetch, read-ahead of the next tile).
#include "codegen/emitter/kernel_emitter.h"

namespace wave::codegen::detail {

// ---- iterate -----------------------------------------------------------------------------

bool KernelEmitter::emitIterate(const ir::Op &op) {
  std::vector<RegVal> carried;
  for (const ir::Value *o : op.operands)
    carried.push_back(values_.at(o));
  // The carried values' shapes are those of their inits widened by what the body yields (a
  // splat 0 init of an MMA accumulator becomes one vector per clone): the carried-shapes pass
  // (carried_shapes.cpp) finds them from shapes alone, and the loop is emitted once, in them.
  // Its rules are the emitter's own, so what the body yields fits them; where the rules give
  // up, the body holds what the emitter refuses (a streamed row a loop cannot carry, say),
  // and emitting in the inits' shapes reports it.
  std::vector<RegVal> predicted = carried;
  const bool known = predictCarried(op, predicted);
  if (known)
    carried = std::move(predicted);
  std::vector<RegVal> yielded;
  if (!emitLoopOnce(op, carried, yielded))
    return false;
  for (size_t i = 0; i < carried.size(); ++i) {
    if (carriedFits(carried[i], yielded[i]))
      continue;
    if (carried[i].laidOut() || yielded[i].deferred)
      return unsupported(DiagId::UnsupportedLoopCarried,
                         "a loop-carried value whose layout changes in the loop", op.loc);
    return unsupported(DiagId::UnsupportedLoopCarried,
                       std::string("a loop-carried value whose shape in the loop the "
                                   "carried-shapes pass ") +
                           (known ? "mispredicted (a wavec bug)" : "cannot find"),
                       op.loc);
  }
  dumpCarried(op, carried, known);
  return true;
}

// The state one emission of a loop shares between its steps (emitLoopOnce).
struct KernelEmitter::LoopState {
  const ir::Op &op;
  const LoopSchedule &sched;
  const LoopInfo &li;
  const std::vector<const ir::Op *> &staged;
  std::string ivSym, kSym, stSym, stNextSym, stPrevSym, nextSym;
  CloneFilter firstStep, laterStep;
  std::vector<RegVal> stepZero;                               // prologue: step 0 of tile 0
  std::string trips, loop, iv, stage, stageNext, wgBufSym;
  std::vector<std::string> inits, types, args;                // iter_args
  std::vector<std::vector<CloneAssign>> clones;               // per carried value
  std::vector<std::map<std::string, std::string>> stepZeroArgs; // per staged read: key -> arg
  std::vector<RegVal> nextStepZero;                           // step 0 of tile i + 1
  std::vector<std::vector<std::string>> prefetched;           // register prefetch
  // Scores ahead (LoopSchedule::scoreAhead): the first product of tile 0 (prologue), its
  // clones' iter_args, that of tile i + 1 (issued in iteration i), the carried values the
  // second product's results arrive in (in flight at the top of an iteration) and whether
  // this iteration waited for them.
  RegVal ahead, aheadNext;
  std::map<std::string, std::string> aheadArgs;
  std::set<const ir::Value *> inFlight;
  const ir::Op *inFlightBy = nullptr; // the second product
  bool aheadWaited = false;
  std::string outer;                                          // indentation outside the loop
  std::map<std::string, std::string> cache;                   // expression cache outside
  bool wgOpen = false;                                        // wgmma groups left in flight
  bool tma = false;                                           // LoopSchedule::Copy::Tma
  bool specialized = false;                                   // LoopSchedule::specialized
  std::string bars;                                           // TMA: the buffers' barriers
  std::string empty;                                          // specialized: empty barriers
  const ir::Op *yield = nullptr;
  LoopState(const ir::Op &o, const LoopSchedule &s, const LoopInfo &l)
      : op(o), sched(s), li(l), staged(s.staged) {}
};

bool KernelEmitter::emitLoopOnce(const ir::Op &op, const std::vector<RegVal> &carried,
                                 std::vector<RegVal> &yielded) {
  const ir::Dim &dim = op.dims[0];
  const LoopInfo *li = nullptr;
  for (const auto &l : d_.loops)
    if (l.dim == dim)
      li = &l;
  if (!li)
    return unsupported("iterate over " + dim.str() + " without a loop", op.loc);
  // The loop's schedule (passes/schedule.cpp): what is staged, how, and how far ahead.
  auto planned = plan_.loops.find(&op);
  if (planned == plan_.loops.end())
    return unsupported("a loop the schedule pass did not plan", op.loc);
  LoopState s(op, planned->second, *li);
  s.tma = s.sched.async && s.sched.copy == LoopSchedule::Copy::Tma;
  s.specialized = s.tma && s.sched.specialized;
  s.ivSym = "$IV_" + dim.str();
  s.kSym = "$i_" + dim.str();
  s.stSym = "$ST_" + dim.str();
  s.stNextSym = "$STnext_" + dim.str();
  s.stPrevSym = "$STprev_" + dim.str();
  s.nextSym = "$IVnext_" + dim.str();
  const std::string kSym = s.kSym;
  const bool stepwise = s.sched.stepwise;
  s.firstStep = [kSym](const CloneAssign &a) { return a.at(kSym) == 0; };
  s.laterStep = [kSym, stepwise](const CloneAssign &a) {
    return stepwise ? a.at(kSym) == 1 : a.at(kSym) != 0;
  };
  if (!loopPrologue(s))
    return false;
  loopOpen(s, carried);
  loopBufferIndices(s);
  return loopBody(s) && loopClose(s, carried, yielded);
}

// Tiles 0 .. prefetch - 1 into buffers 0 .. prefetch - 1 (clamped to the last tile), one
// commit group per tile; with read-ahead, K step 0 of tile 0.
bool KernelEmitter::loopPrologue(LoopState &s) {
  const bool async = s.sched.async;
  if (s.specialized) { // the producer warpgroup copies every tile (warpSpecializedProducer)
    s.bars = wsFull_;
    s.empty = wsEmpty_;
    s.stepZero.resize(s.staged.size());
    if (!s.sched.scoreAhead)
      return true;
    // Scores ahead: tile 0's full barrier (where the loop has a tile: the producer copies none
    // otherwise, and the product below then reads a buffer no one wrote, its result unused).
    std::string any = fresh();
    line(any + " = arith.cmpi sgt, " + lowerIndex(s.li.tripCount) + ", " + constIndex(0) +
         " : index");
    line("scf.if " + any + " {");
    const std::string saved = indent_;
    auto cache = exprCache_;
    indent_ += "  ";
    tmaWait(s.bars, constIndex(0), constIndex(0), s.sched.stages);
    indent_ = saved;
    exprCache_ = cache;
    line("}");
    return scoreAheadPrologue(s);
  }
  if (s.tma) { // tensor_copy.cpp: barriers, then tiles 0 .. prefetch - 1 that exist
    s.bars = tmaBarriers(s.sched.stages);
    tmaInit(s.bars, s.sched.stages);
    for (int t = 0; t < s.sched.prefetch; ++t)
      tmaIssue(s.staged, IndexExpr(t), s.ivSym, s.li.tripCount, IndexExpr(t), t, s.bars);
    s.stepZero.resize(s.staged.size());
    return true;
  }
  for (int t = 0; t < s.sched.prefetch; ++t) {
    subs_[s.ivSym] = max(min(IndexExpr(t), s.li.tripCount - 1), IndexExpr(0)); // no trips: tile 0, masked
    stageIndex_ = IndexExpr(t);
    stageTag_ = s.sched.stages > 1 ? t : -1;
    for (const ir::Op *o : s.staged) {
      if (async)
        cpAsyncCopy(promotions_.at(o));
      else if (s.sched.ldsDma)
        ldsDmaCopy(promotions_.at(o));
      else
        coopStore(promotions_.at(o), coopLoad(promotions_.at(o)));
    }
    if (async)
      lower_->asyncCommit();
  }
  subs_.erase(s.ivSym);
  s.stepZero.resize(s.staged.size());
  if (s.sched.scoreAhead && !scoreAheadPrologue(s))
    return false;
  if (s.sched.readAhead) {
    stageIndex_ = IndexExpr(0);
    stageTag_ = 0;
    for (size_t i = 0; i < s.staged.size(); ++i)
      if (!ldsRead(*s.staged[i], promotions_.at(s.staged[i]), s.stepZero[i], s.firstStep))
        return false;
  }
  stageIndex_ = IndexExpr(0);
  stageTag_ = -1;
  return true;
}

// Scores ahead (LoopSchedule::scoreAhead), before the loop: the first product of tile 0 from
// buffer 0, waited for at once (the loop's first iteration then finds it complete, like the
// later ones, whose wait behind the second product of the previous tile retired it). Finds
// the second product and the carried values its results arrive in.
bool KernelEmitter::scoreAheadPrologue(LoopState &s) {
  const ir::Op &m1 = *s.sched.scoreAhead;
  const ir::Region &body = *s.op.regions[0];
  for (const auto &o : body.ops) {
    if (o.get() != &m1 && o->kind == ir::OpKind::Mma)
      s.inFlightBy = o.get();
    if (o->kind == ir::OpKind::Yield)
      for (size_t i = 0; i < o->operands.size() && i < body.args.size(); ++i)
        if (s.inFlightBy && o->operands[i] == s.inFlightBy->results[0])
          s.inFlight.insert(body.args[i]);
  }
  if (!s.inFlightBy)
    return unsupported("a scores-ahead loop without its second product (a wavec bug)", s.op.loc);
  return emitOp(*m1.operands[2]->def) && scoreAheadIssue(s, IndexExpr(0), 0, true, s.ahead);
}

// The first product of the tile in buffer `buffer` (barrier-insertion stage tag `tag`): its
// staged read's descriptors, then the product, waited for at once (`wait`: before the loop)
// or issued and committed only (in the loop: the second product's wait retires it).
bool KernelEmitter::scoreAheadIssue(LoopState &s, const IndexExpr &buffer, int tag, bool wait,
                                    RegVal &out) {
  const ir::Op &m1 = *s.sched.scoreAhead, &read = *m1.operands[1]->def;
  stageIndex_ = buffer;
  stageTag_ = tag;
  RegVal desc;
  std::string savedLoc = locOf(read.loc);
  std::swap(loc_, savedLoc);
  const bool ok = ldsRead(read, promotions_.at(&read), desc);
  std::swap(loc_, savedLoc);
  stageIndex_ = IndexExpr(0);
  stageTag_ = -1;
  if (!ok)
    return false;
  values_[read.results[0]] = std::move(desc);
  wgmmaNoWait_ = !wait;
  const bool issued = emitWgmmaKeeping(m1, 0, s.sched.stages);
  wgmmaNoWait_ = false;
  if (!issued)
    return false;
  out = values_.at(m1.results[0]);
  return true;
}

// emitOp on a wgmma with `keep` groups left in flight by its wait and `stages` buffers for its
// reads' retire marks (mma.cpp, emitWgmma), the emitter's own settings restored after.
bool KernelEmitter::emitWgmmaKeeping(const ir::Op &mma, int keep, int stages) {
  const int savedKeep = wgmmaKeep_, savedStages = wgmmaStages_;
  wgmmaKeep_ = keep;
  wgmmaStages_ = stages;
  const bool ok = emitOp(mma);
  wgmmaKeep_ = savedKeep;
  wgmmaStages_ = savedStages;
  return ok;
}

// Scores ahead in the body, before op `o` (LoopSchedule::scoreAhead). The first product came
// with the previous iteration (or the prologue), its staged read too: both are skipped, the
// product's value being the iter_args. Before the first op that uses a carried value the
// second product's result arrives in (in flight since the previous iteration), or that makes
// its A operand (P: the product in flight still reads those registers), every group is waited
// for. The second product is emitted here, behind the first product of tile i + 1 (the last
// iteration's reads the buffer after the last tile, whose copies fetched the last tile again;
// its result is dropped).
bool KernelEmitter::scoreAheadBefore(LoopState &s, const ir::Op &o, bool &skip) {
  const ir::Op &m1 = *s.sched.scoreAhead, &m2 = *s.inFlightBy;
  skip = &o == m1.operands[1]->def || &o == &m1;
  if (&o == &m1) {
    RegVal v = s.ahead;
    v.clones = s.aheadArgs;
    values_[m1.results[0]] = std::move(v);
  }
  if (skip)
    return true;
  bool uses = &o == m2.operands[0]->def;
  for (const ir::Value *x : o.operands)
    uses |= s.inFlight.count(x) > 0;
  if (uses && !s.aheadWaited) {
    s.aheadWaited = true;
    lower_->warpgroupWait(0);
    mark(SyncItem{SyncItem::Read, promotions_.at(m2.operands[1]->def).alloc,
                  s.sched.stages - 1});
    // Warp-specialized: the products of tile i - 1 (its scores in iteration i - 2, its second
    // product in iteration i - 1) have retired, so its buffer goes back to the producer.
    if (s.specialized)
      loopRelease(s, 1);
  }
  if (&o != &m2)
    return true;
  // The second product, here behind the first of tile i + 1; its wait keeps one group (itself)
  // in flight, retired by the next iteration's wait for everything. For barrier insertion its
  // reads of tile i end there (stage 0 now; the next iteration's wait marks them retired as
  // tile i - 1), and the wait retired the scores of tile i + 1.
  skip = true;
  IndexExpr next = IndexExpr::symbol(s.stNextSym);
  if (s.specialized) {
    // The producer copies tiles below the trip count only: the last iteration's first product
    // reads its own tile again (buffer and phase of tile i; its result is dropped). The full
    // barrier of tile min(i + 1, trips - 1) brings its K and V.
    std::string one = binop("addi", s.iv, constIndex(1)), more = fresh(), tile = fresh(),
                buf = fresh();
    line(more + " = arith.cmpi slt, " + one + ", " + s.trips + " : index");
    line(tile + " = arith.select " + more + ", " + one + ", " + s.iv + " : index");
    line(buf + " = arith.select " + more + ", " + symbols_.at(s.stNextSym) + ", " +
         symbols_.at(s.stSym) + " : index");
    const std::string sym = "$STahead_" + s.op.dims[0].str();
    symbols_[sym] = buf;
    facts_.setRange(sym, 0, s.sched.stages - 1);
    tmaWait(s.bars, buf, tile, s.sched.stages);
    next = IndexExpr::symbol(sym);
  }
  // Ping-pong: this warpgroup's turn to issue both products; it hands the turn on once the
  // second is committed, before waiting for the first (FlashAttention-3's order).
  const bool turns = s.specialized && plan_.specialization.pingpong > 0;
  if (turns)
    pingpongTurn(false);
  if (!scoreAheadIssue(s, next, 1, false, s.aheadNext))
    return false;
  wgmmaArrive_ = turns;
  const bool issued = emitWgmmaKeeping(m2, 1, 0);
  wgmmaArrive_ = false;
  if (!issued)
    return false;
  mark(SyncItem{SyncItem::Read, promotions_.at(m1.operands[1]->def).alloc, 1});
  return true;
}

// The scf.for with its iter_args: every clone of every carried value, the carried K step 0
// fragments (by clone key) and the buffer index: a loop-carried index rotated by a compare and
// select rather than IV % S, which LLVM's loop strength reduction would turn into one
// induction variable per shared-memory address. Opens the body.
void KernelEmitter::loopOpen(LoopState &s, const std::vector<RegVal> &carried) {
  const ir::Op &op = s.op;
  s.trips = lowerIndex(s.li.tripCount);
  const unsigned n = next_++;
  s.loop = "%loop" + std::to_string(n);
  s.iv = "%iv" + std::to_string(n);
  auto iterArg = [&](const std::string &init, const std::string &type) {
    s.inits.push_back(init);
    s.types.push_back(type);
    s.args.push_back("%it" + std::to_string(n) + "_" + std::to_string(s.args.size()));
    return s.args.back();
  };
  for (size_t i = 0; i < carried.size(); ++i) {
    s.clones.push_back(clonesOver(carried[i].cloneSyms));
    for (const auto &a : s.clones.back())
      iterArg(operandAt(values_.at(op.operands[i]), a, carried[i].elems),
              vecType(carried[i].dtype, carried[i].elems));
  }
  s.stepZeroArgs.resize(s.staged.size());
  for (size_t i = 0; i < s.staged.size(); ++i)
    for (const auto &[key, ssa] : s.stepZero[i].clones)
      s.stepZeroArgs[i][key] = iterArg(ssa, vecType(s.stepZero[i].dtype, s.stepZero[i].elems));
  for (const auto &[key, ssa] : s.ahead.clones)
    s.aheadArgs[key] = iterArg(ssa, vecType(s.ahead.dtype, s.ahead.elems));
  // (The register prefetch's two buffers take IV & 1 instead, loopBufferIndices.)
  // Persistent tiles: the ring's count goes on from the tiles this workgroup consumed before.
  const bool goesOn = s.specialized && !persistBase_.empty();
  s.stage = s.sched.async ? iterArg(goesOn ? binop("remui", persistBase_,
                                                   constIndex(s.sched.stages))
                                           : constIndex(0),
                                    "index")
                          : "";
  std::string head = "scf.for " + s.iv + " = " + constIndex(0) + " to " + s.trips + " step " +
                     constIndex(1);
  if (!s.args.empty()) {
    std::string ia, ty;
    for (size_t j = 0; j < s.args.size(); ++j) {
      ia += (j ? ", " : "") + s.args[j] + " = " + s.inits[j];
      ty += (j ? ", " : "") + s.types[j];
    }
    head = s.loop + ":" + std::to_string(s.args.size()) + " = " + head + " iter_args(" + ia +
           ") -> (" + ty + ")";
  }
  {
    SyncItem saved = lds_;
    lds_ = {SyncItem::LoopBegin, -1};
    lds_.stages = s.sched.stages;
    line(head + " {");
    lds_ = saved;
  }
  if (s.specialized && plan_.specialization.pingpong > 0)
    pingpongFirst_ = static_cast<long>(items_.size());
  s.outer = indent_;
  s.cache = exprCache_;
  indent_ += "  ";
  symbols_[s.ivSym] = s.iv;
  size_t j = 0;
  for (size_t i = 0; i < carried.size(); ++i) {
    RegVal r = carried[i];
    r.clones.clear();
    for (const auto &a : s.clones[i])
      r.clones[cloneKey(a, r.cloneSyms)] = s.args[j++];
    values_[op.regions[0]->args[i]] = std::move(r);
  }
}

// Buffer indices: this iteration's tile i in buffer `stage`, i + 1 in `stageNext`, the copy of
// tile i + S - 1 (without fragment pipelining) in `stagePrev` = (i + S - 1) % S; for wgmma the
// buffer of tile i + wgAhead. Then the tile the copies of this iteration fetch (the last
// iterations fetch the last tile again: no bounds question).
void KernelEmitter::loopBufferIndices(LoopState &s) {
  const int stages = s.sched.stages, wgKeep = s.sched.mmaInFlight;
  const bool async = s.sched.async;
  if (stages > 1 && !async) {
    // The register prefetch into two buffers: tile i in buffer IV & 1, i + 1 in the other.
    // No loop-carried index: where LLVM unrolls the loop by two, IV & 1 is known in each half
    // and the buffer offsets become the LDS instructions' immediate offsets.
    s.stage = binop("andi", s.iv, constIndex(1));
    s.stageNext = binop("xori", s.stage, constIndex(1));
    for (const auto &[sym, ssa] : {std::pair<std::string, std::string>{s.stSym, s.stage},
                                   {s.stNextSym, s.stageNext},
                                   {s.stPrevSym, s.stageNext}}) {
      symbols_[sym] = ssa;
      facts_.setRange(sym, 0, 1);
    }
  } else if (stages > 1) { // cp.async
    std::string inc = binop("addi", s.stage, constIndex(1)), wrap = fresh(), zero = fresh();
    line(wrap + " = arith.cmpi eq, " + inc + ", " + constIndex(stages) + " : index");
    s.stageNext = fresh();
    line(s.stageNext + " = arith.select " + wrap + ", " + constIndex(0) + ", " + inc +
         " : index");
    std::string dec = binop("subi", s.stage, constIndex(1)), prev = fresh();
    line(zero + " = arith.cmpi eq, " + s.stage + ", " + constIndex(0) + " : index");
    line(prev + " = arith.select " + zero + ", " + constIndex(stages - 1) + ", " + dec +
         " : index");
    for (const auto &[sym, ssa] : {std::pair<std::string, std::string>{s.stSym, s.stage},
                                   {s.stNextSym, s.stageNext},
                                   {s.stPrevSym, prev}}) {
      symbols_[sym] = ssa;
      facts_.setRange(sym, 0, stages - 1);
    }
  }
  // wgmma: the copy of this iteration fetches tile i + wgAhead into buffer (i + wgAhead) % S.
  const int wgAhead = stages - 1 - wgKeep;
  s.wgBufSym = wgAhead == 1 ? s.stNextSym : s.stPrevSym;
  if (s.sched.wgmma && async && wgAhead != 1 && wgAhead != stages - 1) {
    s.wgBufSym = "$STplus" + std::to_string(wgAhead) + "_" + s.op.dims[0].str();
    std::string inc = binop("addi", s.stage, constIndex(wgAhead)), wrap = fresh(), sel = fresh();
    line(wrap + " = arith.cmpi sge, " + inc + ", " + constIndex(stages) + " : index");
    line(sel + " = arith.select " + wrap + ", " + binop("subi", inc, constIndex(stages)) + ", " +
         inc + " : index");
    symbols_[s.wgBufSym] = sel;
    facts_.setRange(s.wgBufSym, 0, stages - 1);
  }
  if (!s.staged.empty()) {
    std::string one = binop("addi", s.iv,
                            constIndex(s.sched.readAhead ? stages
                                       : async          ? stages - 1 - wgKeep
                                                        : 1));
    std::string last = binop("subi", s.trips, constIndex(1));
    symbols_[s.nextSym] = binop("minsi", one, last);
    sym::Range r = facts_.rangeOfSymbol(s.ivSym);
    facts_.setRange(s.nextSym, r.lo, r.hi);
    staged_.insert(s.staged.begin(), s.staged.end());
  }
  if (!s.staged.empty() && !async && !s.sched.ldsDma) {
    subs_[s.ivSym] = IndexExpr::symbol(s.nextSym);
    for (const ir::Op *o : s.staged)
      s.prefetched.push_back(coopLoad(promotions_.at(o)));
    subs_.erase(s.ivSym);
  }
}

// The body: the copies of later tiles behind the reads of this one, the read-ahead of the next
// tile's K step 0 (emitMid) and the stepwise reads of later K steps (emitMma's afterKStep_
// hook), the ops; finds the yield.
bool KernelEmitter::loopBody(LoopState &s) {
  const std::vector<const ir::Op *> &staged = s.staged;
  const bool async = s.sched.async, wgLoop = s.sched.wgmma, pipe = s.sched.readAhead,
             stepwise = s.sched.stepwise;
  const int stages = s.sched.stages, wgKeep = s.sched.mmaInFlight;
  const std::string &ivSym = s.ivSym, &kSym = s.kSym, &stSym = s.stSym,
                    &stNextSym = s.stNextSym, &stPrevSym = s.stPrevSym, &nextSym = s.nextSym;
  const ir::Region &body = *s.op.regions[0];
  std::vector<std::map<std::string, std::string>> &stepZeroArgs = s.stepZeroArgs;
  std::vector<RegVal> &nextStepZero = s.nextStepZero;
  nextStepZero.assign(staged.size(), RegVal());
  const CloneFilter &firstStep = s.firstStep, &laterStep = s.laterStep;
  const int wgAhead = stages - 1 - wgKeep;
  const int savedKeep = wgmmaKeep_, savedStages = wgmmaStages_;
  const bool savedInFlight = wgmmaInFlight_;
  wgmmaKeep_ = wgKeep;
  wgmmaStages_ = async ? stages : 0;
  wgmmaInFlight_ = false;
  // The tile the copies of this iteration fetch (the last iterations fetch the last tile
  // again: no bounds question).
  auto copyAhead = [&](const std::string &bufferSym, int tag) {
    subs_[ivSym] = IndexExpr::symbol(nextSym);
    stageIndex_ = IndexExpr::symbol(bufferSym);
    stageTag_ = tag;
    for (const ir::Op *st : staged)
      cpAsyncCopy(promotions_.at(st));
    lower_->asyncCommit();
    subs_.erase(ivSym);
    stageIndex_ = IndexExpr(0);
    stageTag_ = -1;
  };
  // Step 0 of tile i + 1 from the next buffer, then the copy of tile i + S into this
  // iteration's buffer, whose reads are all before the barrier the analysis puts here.
  bool midDone = !pipe, midOk = true;
  auto emitMid = [&]() {
    midDone = true;
    std::string savedLoc = loc_;
    stageIndex_ = IndexExpr::symbol(stNextSym);
    stageTag_ = 1;
    for (size_t i = 0; i < staged.size() && midOk; ++i) {
      loc_ = locOf(staged[i]->loc);
      midOk = ldsRead(*staged[i], promotions_.at(staged[i]), nextStepZero[i], firstStep);
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
  const bool interleave = s.sched.interleave && !async;
  size_t groupFrom = items_.size();
  bool ok = true;
  for (const auto &o : body.ops) {
    if (o->kind == ir::OpKind::Yield) {
      s.yield = o.get();
      break;
    }
    bool skip = false; // made by scoreAheadBefore (or before the loop)
    if (s.sched.scoreAhead && !(ok = scoreAheadBefore(s, *o, skip)))
      break;
    if (skip)
      continue;
    if (interleave && o.get() == staged.front()) { // the MFMA region opens (schedule.cpp)
      lower_->setPriority(1);
      groupFrom = items_.size();
    }
    if (s.tma && o.get() == staged.front() && !s.sched.scoreAhead)
      loopTmaTop(s, wgAhead);
    // Reads of a multi-buffered tile use this iteration's buffer.
    if (stages > 1 && staged_.count(o.get())) {
      stageIndex_ = IndexExpr::symbol(stSym);
      stageTag_ = 0;
    }
    if (pipe && staged_.count(o.get())) {
      // Steps 1.. of tile i; step 0 came with the previous iteration (or the prologue).
      const size_t si = std::find(staged.begin(), staged.end(), o.get()) - staged.begin();
      std::string savedLoc = locOf(o->loc);
      std::swap(loc_, savedLoc);
      RegVal v;
      ok = ldsRead(*o, promotions_.at(o.get()), v, laterStep);
      std::swap(loc_, savedLoc);
      for (const auto &[key, arg] : stepZeroArgs[si])
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
    if (s.sched.ldsDma && o.get() == lastStaged)
      loopDmaAhead(s);
  }
  afterKStep_ = savedHook;
  s.wgOpen = wgmmaInFlight_;
  wgmmaKeep_ = savedKeep;
  wgmmaStages_ = savedStages;
  wgmmaInFlight_ = savedInFlight;
  if (!ok || !midOk)
    return false;
  if (!midDone)
    emitMid();
  if (!midOk)
    return false;
  if (wgLoop && async && !s.tma) // behind the products, after this iteration's barrier
    copyAhead(s.wgBufSym, wgAhead);
  if (s.specialized && !s.sched.scoreAhead) // scores ahead: behind the wait (scoreAheadBefore)
    loopRelease(s, s.sched.mmaInFlight);
  for (const ir::Op *o : staged)
    staged_.erase(o);
  loopStores(s, groupFrom, interleave);
  return true;
}


// TMA: the copy of a later tile (behind the barrier placed before it), then every thread
// waits for this iteration's tile, before its first read (tensor_copy.cpp).
void KernelEmitter::loopTmaTop(LoopState &s, int wgAhead) {
  if (!s.specialized)
    tmaIssue(s.staged, IndexExpr::symbol(s.ivSym) + wgAhead, s.ivSym, s.li.tripCount,
             IndexExpr::symbol(s.wgBufSym), wgAhead, s.bars);
  tmaWait(s.bars, symbols_.at(s.stSym),
          s.specialized && !persistBase_.empty() ? binop("addi", persistBase_, s.iv) : s.iv,
          s.sched.stages);
}

// LDS DMA (LoopSchedule::ldsDma): tile i + 1, behind this iteration's reads of tile i (LLVM
// makes a wave's LDS reads that follow a DMA wait for it: before them it would wait at once),
// into the other buffer, or into this one behind the barrier the analysis places.
void KernelEmitter::loopDmaAhead(LoopState &s) {
  const int stages = s.sched.stages;
  subs_[s.ivSym] = IndexExpr::symbol(s.nextSym);
  stageIndex_ = stages > 1 ? IndexExpr::symbol(s.stNextSym) : IndexExpr(0);
  stageTag_ = stages > 1 ? 1 : -1;
  for (const ir::Op *st : s.staged)
    ldsDmaCopy(promotions_.at(st));
  subs_.erase(s.ivSym);
  stageIndex_ = IndexExpr(0);
  stageTag_ = -1;
}

// Warp-specialized loops: the products of tile i - keep have retired (the wgmma wait behind
// this iteration's commit, or with scores ahead the wait for everything), so lane 0 of every
// consumer warp releases its buffer to the producer (the empty barrier of that buffer;
// tensor_copy.cpp, warpSpecializedProducer). keep is 0 or 1.
void KernelEmitter::loopRelease(LoopState &s, int wgKeep) {
  const std::string lane = binop("remui", lowerIndex(IndexExpr::symbol("$T0")), constIndex(32));
  std::string lead = fresh(), cond = lead;
  line(lead + " = arith.cmpi eq, " + lane + ", " + constIndex(0) + " : index");
  if (wgKeep > 0) {
    std::string after = fresh();
    cond = fresh();
    line(after + " = arith.cmpi sge, " + s.iv + ", " + constIndex(wgKeep) + " : index");
    line(cond + " = arith.andi " + lead + ", " + after + " : i1");
  }
  line("scf.if " + cond + " {");
  const std::string saved = indent_;
  auto cache = exprCache_;
  indent_ += "  ";
  lower_->barrierArrive(tmaBarrier(s.empty, symbols_.at(wgKeep > 0 ? s.stPrevSym : s.stSym)));
  indent_ = saved;
  exprCache_ = cache;
  line("}");
}

// Persistent tiles: after the loop's last wait, lane 0 of every consumer warp releases the
// buffer of the loop's last tile (ring tile persistBase_ + trips - 1), which no iteration
// released, so the producer can refill it for the next output tile.
void KernelEmitter::loopReleaseLast(LoopState &s) {
  const std::string lane = binop("remui", lowerIndex(IndexExpr::symbol("$T0")), constIndex(32));
  std::string lead = fresh(), any = fresh(), cond = fresh();
  line(lead + " = arith.cmpi eq, " + lane + ", " + constIndex(0) + " : index");
  line(any + " = arith.cmpi sgt, " + s.trips + ", " + constIndex(0) + " : index");
  line(cond + " = arith.andi " + lead + ", " + any + " : i1");
  line("scf.if " + cond + " {");
  const std::string saved = indent_;
  auto cache = exprCache_;
  indent_ += "  ";
  std::string last = binop("subi", binop("addi", persistBase_, s.trips), constIndex(1));
  lower_->barrierArrive(
      tmaBarrier(s.empty, binop("remui", last, constIndex(s.sched.stages))));
  indent_ = saved;
  exprCache_ = cache;
  line("}");
}

// The end of the body: the register prefetch's store of tile i + 1 (into the next buffer with
// two, else this one) and, with LoopSchedule::interleave, the target's scheduling hints over
// the lines of the body's own block since `from` (those at its indentation: nested regions
// are other blocks, which LLVM schedules apart), then the priority back to normal.
void KernelEmitter::loopStores(LoopState &s, size_t from, bool interleave) {
  if (s.sched.stages > 1 && !s.prefetched.empty()) {
    stageIndex_ = IndexExpr::symbol(s.stNextSym);
    stageTag_ = 1;
  }
  for (size_t i = 0; i < s.prefetched.size(); ++i)
    coopStore(promotions_.at(s.staged[i]), s.prefetched[i]);
  stageIndex_ = IndexExpr(0);
  stageTag_ = -1;
  if (!interleave)
    return;
  std::vector<std::string> block;
  for (size_t i = from; i < items_.size(); ++i) {
    const std::string &t = items_[i].text;
    if (t.size() > indent_.size() && t.compare(0, indent_.size(), indent_) == 0 &&
        t[indent_.size()] != ' ')
      block.push_back(t);
  }
  lower_->interleaveMatrixOps(block, s.sched.kSteps);
  lower_->setPriority(0);
}

// The yield (each carried value in its loop layout, the next tile's K step 0, the next buffer
// index), the end of the loop, the waits for what may still be in flight, the loop's results.
bool KernelEmitter::loopClose(LoopState &s, const std::vector<RegVal> &carried,
                              std::vector<RegVal> &yielded) {
  const ir::Op &op = s.op, *yield = s.yield;
  const bool async = s.sched.async;
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
  if (fits && !s.args.empty()) {
    std::vector<std::string> ys;
    for (size_t i = 0; i < carried.size(); ++i) {
      RegVal y;
      if (!convertTo(yielded[i], carried[i], y, op.loc))
        return false;
      for (const auto &a : s.clones[i])
        ys.push_back(operandAt(y, a, carried[i].elems));
    }
    for (size_t i = 0; i < s.staged.size(); ++i)
      for (const auto &[key, arg] : s.stepZeroArgs[i])
        ys.push_back(s.nextStepZero[i].clones.at(key));
    for (const auto &[key, arg] : s.aheadArgs)
      ys.push_back(s.aheadNext.clones.at(key));
    if (async)
      ys.push_back(s.stageNext);
    std::string list, ty;
    for (size_t k = 0; k < ys.size(); ++k) {
      list += (k ? ", " : "") + ys[k];
      ty += (k ? ", " : "") + s.types[k];
    }
    line("scf.yield " + list + " : " + ty);
  }
  indent_ = s.outer;
  exprCache_ = s.cache;
  symbols_.erase(s.ivSym);
  {
    SyncItem saved = lds_;
    lds_ = {SyncItem::LoopEnd, -1};
    line("}");
    lds_ = saved;
  }
  if (s.specialized && plan_.specialization.pingpong > 0)
    pingpongLast_ = static_cast<long>(items_.size()) - 1;
  if ((async && !s.tma) || s.sched.ldsDma) // nothing may stay in flight into shared memory the kernel no longer
    // owns (TMA copies only tiles the loop waits for)
    for (const std::string &w : lower_->asyncWait(0, ""))
      line(w);
  if (s.wgOpen) // the last tile's products, before anything reads the accumulators
    lower_->warpgroupWait(0);
  // (A loop that waits for its products at once released every tile's buffer itself.)
  if (s.specialized && !persistBase_.empty() && s.sched.mmaInFlight > 0)
    loopReleaseLast(s);
  size_t j = 0;
  for (size_t i = 0; i < carried.size(); ++i) {
    RegVal r = carried[i];
    r.clones.clear();
    for (const auto &a : s.clones[i]) {
      std::string v = s.loop + "#" + std::to_string(j++);
      // Products left in flight at the loop's end: what reads the f32 results comes after the
      // wait above, not hoisted above it by LLVM (which would read registers a wgmma still
      // writes; ptxas then serializes the loop's wgmmas, docs/performance.md "GEMM at 4096³").
      if (s.wgOpen && r.dtype == ScalarType::F32)
        v = fenceRegisters(v, r.elems);
      r.clones[cloneKey(a, r.cloneSyms)] = v;
    }
    values_[op.results[i]] = std::move(r);
  }
  return !failed_;
}

// Each element of `v` (f32, or a vector of `elems` f32) through TargetLowering::registerFence.
std::string KernelEmitter::fenceRegisters(const std::string &v, int64_t elems) {
  const std::string vty = vecType(ScalarType::F32, elems);
  if (vty == "f32")
    return lower_->registerFence(v);
  std::string vec = v;
  for (int64_t e = 0; e < elems; ++e) {
    const std::string x = fresh(), r = fresh();
    line(x + " = vector.extract " + v + "[" + std::to_string(e) + "] : f32 from " + vty);
    line(r + " = vector.insert " + lower_->registerFence(x) + ", " + vec + " [" +
         std::to_string(e) + "] : f32 into " + vty);
    vec = r;
  }
  return vec;
}


} // namespace wave::codegen::detail
