// The schedule pass (kernel_plan.h): how a loop overlaps the copies of its promoted tiles with
// the work on them. The emitter's iterate.cpp emits what the LoopSchedule says.
//
// Two schedules. With cp.async (every staged copy can use it): S buffers per tile, later tiles
// copied while the current one is read; otherwise a register prefetch (load tile i + 1 at the
// top of iteration i, store it at its end) into one buffer, or on AMD into the other of two
// buffers where the LDS allows (registerDoubleBuffer). Either way the barriers come from the
// barrier-insertion pass. An async wgmma loop whose tiles TMA boxes of their tensors can write
// (one box per 128-byte column block) copies them with TMA instead of cp.async
// (LoopSchedule::Copy::Tma), in the same buffers (`hardware(tma = 0)` keeps cp.async); scores
// ahead then need the producer warpgroup (planWarpSpecialization).
// After the loops, the order of the workgroups (planRaster): grouped for L2 reuse where a loop
// is an async wgmma pipeline.
#include "passes/kernel_plan.h"

#include <algorithm>
#include <optional>
#include <set>
#include <tuple>

namespace wave {

namespace {

// Buffers per staged tile: the first depth of the list that fits its budget.
struct Depth {
  int stages;
  bool swizzle;
  int64_t budget;
};

// Tiles read by wgmma: the products of tile i stay in flight into iteration i + 1 (the wait
// after them keeps one group), so tile i's buffer is free only after iteration i + 1's
// barrier: the copy issued in iteration i, after the products, fetches tile i + S - 2 (S >= 3;
// with 2 buffers the wait keeps nothing and the copy fetches tile i + 1). Depth: 4 buffers,
// else 3, else 2 within the opt-in shared memory.
// Otherwise the first of these that fits: 4 or 3 swizzled buffers within the static shared
// memory, 3 within the opt-in limit (NVIDIA dynamic shared memory: bigger block tiles need it,
// and 3 buffers measured best there, docs/performance.md), then 2 swizzled or padded ones, then
// padded ones within the opt-in limit (rows longer than 128 bytes, e.g. attention's head dim
// 128, cannot be swizzled); 1 (register prefetch) otherwise.
std::vector<Depth> depthsFor(bool wgmma, const TargetInfo &t) {
  const int64_t staticLds = t.ldsBytes, optInLds = t.ldsOptInBytes;
  if (wgmma)
    return {{4, true, optInLds}, {3, true, optInLds}, {2, true, optInLds}, {2, false, optInLds}};
  return {{4, true, staticLds}, {3, true, staticLds}, {3, true, optInLds},
          {2, true, staticLds}, {2, false, staticLds}, {3, false, optInLds},
          {2, true, optInLds},  {2, false, optInLds}};
}

// The deepest pipeline of the list whose tiles fit: (stages, swizzle), or (1, false).
std::pair<int, bool> pipelineDepth(PlanContext &c, const LoopSchedule &s) {
  std::vector<SharedTile> &tiles = c.plan.tiles;
  for (const ir::Op *o : s.staged)
    tiles[c.plan.promotions.at(o).alloc].stages = 1;
  if (!s.async)
    return {1, false};
  for (Depth d : depthsFor(s.wgmma, c.target)) {
    bool ok = true;
    for (const ir::Op *o : s.staged) {
      const SharedTile &al = tiles[c.plan.promotions.at(o).alloc];
      ok = ok && (!d.swizzle || al.xorBytes || swizzlable(al.tile, o->operands[0]->type.dtype));
    }
    if (!ok)
      continue;
    // The budget holds this loop's tiles and those planned before them (the kernel's code
    // before the loop, outer loops).
    int64_t total = 0;
    int last = 0;
    for (const ir::Op *o : s.staged)
      last = std::max(last, c.plan.promotions.at(o).alloc);
    std::vector<SharedTile> trial(tiles.begin(), tiles.begin() + last + 1);
    for (size_t i = 0; i < trial.size(); ++i) {
      SharedTile &al = trial[i];
      bool mine = false;
      for (const ir::Op *o : s.staged)
        mine |= c.plan.promotions.at(o).alloc == static_cast<int>(i);
      if (mine) {
        relayout(al, s.staged.front()->operands[0]->type.dtype, d.swizzle);
        al.stages = d.stages;
      }
      total += (al.bytes + 15) / 16 * 16 * al.stages;
    }
    if (s.wgmma)
      total = placeTiles(trial);
    if (total <= d.budget)
      return {d.stages, d.swizzle};
  }
  return {1, false};
}

// AMD, register prefetch (no cp.async): tile i + 1 is loaded into registers at the top of
// iteration i and stored at its end into the other of two buffers, so the store needs no
// barrier behind this iteration's reads (the barrier before the next iteration's reads orders
// both): one barrier per iteration instead of two. Taken when the arena with this loop's tiles
// doubled still lets two workgroups share the CU's LDS: with one workgroup of a few waves
// each SIMD would hold one wave, which a barrier stalls with nothing else to run (the
// 128x128x64 GEMM tile: 65,536 bytes doubled, so it keeps one buffer and two workgroups).
bool registerDoubleBuffer(PlanContext &c, const LoopSchedule &s) {
  if (s.staged.empty() || s.wgmma || c.target.vendor != Vendor::AMD)
    return false;
  int64_t total = 0;
  for (size_t i = 0; i < c.plan.tiles.size(); ++i) {
    const SharedTile &al = c.plan.tiles[i];
    bool mine = false;
    for (const ir::Op *o : s.staged)
      mine |= c.plan.promotions.at(o).alloc == static_cast<int>(i);
    total += (al.bytes + 15) / 16 * 16 * (mine ? 2 : al.stages);
  }
  return total <= static_cast<int64_t>(c.target.ldsBytes) / 2;
}

// AMD LDS DMA (LoopSchedule::ldsDma), where the kernel asks for it (`hardware(lds_dma = 1)`)
// and the target has it: every staged tile's copy must be whole dwords (Promotion::dmaCopies)
// and its layout unpadded, since lane l writes the dword at M0 + 4 l. A padded tile whose XOR
// layout the bank model found conflict-free takes that layout; one without keeps the loop on
// the register prefetch.
bool ldsDmaLoop(PlanContext &c, const LoopSchedule &s) {
  if (!c.kernel.hardware.ldsDma || !c.target.ldsDma || s.staged.empty() || s.wgmma || s.async)
    return false;
  for (const ir::Op *o : s.staged) {
    const Promotion &p = c.plan.promotions.at(o);
    const SharedTile &al = c.plan.tiles[p.alloc];
    if (p.dmaCopies <= 0 || al.swizzle || al.xorBytes || al.blockBytes ||
        (al.pad && !al.xorCandidate))
      return false;
  }
  for (const ir::Op *o : s.staged) {
    SharedTile &al = c.plan.tiles[c.plan.promotions.at(o).alloc];
    if (al.pad)
      applyXor(al);
  }
  return true;
}

// The first of a loop's two wgmma products when it can be issued one tile ahead
// (LoopSchedule::scoreAhead): the body's only products are two top-level wgmmas M1 before M2;
// M1's B is a staged read that only M1 uses, its A comes from outside the loop, its
// accumulator is a constant, and its result is not yielded (each iteration consumes its own);
// M2 reads a staged tile and its result is yielded. The loop must keep the products in flight
// (at least 3 buffers: cp.async, or TMA from a producer warpgroup, whose consumers wait for
// tile i + 1 in iteration i while tile i - 1's buffer is released only there).
const ir::Op *scoreAheadOp(const ir::Op &iterate, const LoopSchedule &s) {
  if (!s.wgmma || !s.async || s.stages < 3)
    return nullptr;
  const ir::Region &body = *iterate.regions[0];
  std::vector<const ir::Op *> mmas;
  bool nested = false;
  ir::walk(body, [&](const ir::Op &op) {
    if (op.kind != ir::OpKind::Mma)
      return;
    if (op.parent != &body || !op.mma || op.mma->family != MmaFamily::Wgmma)
      nested = true;
    mmas.push_back(&op);
  });
  if (nested || mmas.size() != 2)
    return nullptr;
  const ir::Op &m1 = *mmas[0], &m2 = *mmas[1];
  auto staged = [&](const ir::Value *v) {
    return v->def && std::find(s.staged.begin(), s.staged.end(), v->def) != s.staged.end();
  };
  const ir::Value *a = m1.operands[0], *b = m1.operands[1], *c = m1.operands[2];
  const bool outside = !a->def || a->def->parent != &body;
  if (!outside || !staged(b) || b->users.size() != 1 || !c->def ||
      c->def->kind != ir::OpKind::Constant || !staged(m2.operands[1]))
    return nullptr;
  for (const ir::Op *u : m1.results[0]->users)
    if (u->kind == ir::OpKind::Yield)
      return nullptr;
  bool m2Yielded = false;
  for (const ir::Op *u : m2.results[0]->users)
    m2Yielded |= u->kind == ir::OpKind::Yield && u->parent == &body;
  return m2Yielded ? &m1 : nullptr;
}

} // namespace

bool planLoop(PlanContext &c, const ir::Op &iterate) {
  LoopSchedule s;
  s.loop = &iterate;
  const ir::Dim &dim = iterate.dims[0];
  for (const auto &o : iterate.regions[0]->ops)
    if (isPromotedRead(*o))
      s.staged.push_back(o.get());
  s.async = !s.staged.empty();
  for (const ir::Op *o : s.staged) {
    const Promotion &p = c.plan.promotions.at(o);
    s.async = s.async && p.async;
    s.wgmma |= p.wgmma;
  }
  std::tie(s.stages, s.swizzle) = pipelineDepth(c, s);
  if (s.stages == 1)
    s.async = false;
  s.ldsDma = ldsDmaLoop(c, s);
  if (!s.async && registerDoubleBuffer(c, s))
    s.stages = 2;
  for (const ir::Op *o : s.staged) {
    SharedTile &al = c.plan.tiles[c.plan.promotions.at(o).alloc];
    relayout(al, o->operands[0]->type.dtype, s.swizzle);
    al.stages = s.stages;
  }
  // Fragment read-ahead (with cp.async, when the staged reads have several clones along the
  // loop's dim, i.e. several K steps of an mma): step 0 of tile i + 1 is read at the end of
  // iteration i and carried into iteration i + 1, the other steps at its top. The end of the
  // iteration then holds the one barrier (after the reads of step 1.. of tile i, before those
  // of tile i + 1), so the copy of tile i + S goes into tile i's buffer right behind it, and the
  // ldmatrix latency after the barrier overlaps the last step's MMAs.
  const std::string kSym = "$i_" + dim.str();
  int64_t kSteps = 1;
  for (const auto &ex : c.dist.expansion)
    if ("$i_" + ex.dim.str() == kSym)
      kSteps = std::max<int64_t>(ex.count, 1);
  s.readAhead = s.async && kSteps >= 2 && !s.wgmma;
  for (const ir::Op *o : s.staged) {
    bool alongLoop = false;
    if (const AccessIndex *a = accessOf(c.dist, *o))
      for (const auto &di : a->dims)
        alongLoop |= di.start.dependsOn(kSym);
    s.readAhead = s.readAhead && alongLoop;
  }
  // Step by step when every user of the staged reads is an mma over the loop's dim (the
  // emitter's hook then runs between its K steps): step 1 at the top, step k + 2 after the MMAs
  // of step k, so at most two steps' fragments (and the carried step 0) are live. Otherwise
  // all later steps at the top.
  s.stepwise = s.readAhead;
  for (const ir::Op *o : s.staged)
    for (const ir::Op *u : o->results[0]->users)
      s.stepwise = s.stepwise && u->kind == ir::OpKind::Mma && u->dims.size() == 3 &&
                   u->dims[2] == dim;
  s.mmaInFlight = s.wgmma && s.async && s.stages >= 3 && wgmmaOverlaps(iterate) ? 1 : 0;
  // TMA: a wgmma loop whose every staged tile TMA boxes of its tensor can write (same buffers,
  // same swizzled layout, same prefetch distance as cp.async); otherwise cp.async as before.
  // Attention's loop with K and V by TMA and a producer warpgroup measured 0.74x SDPA at head
  // dim 128 against 0.67x with its scores ahead on cp.async, 0.79x against 0.77x at head dim
  // 64; with scores ahead on the TMA loop too, 0.80x and 0.91x (docs/performance.md, "Attention
  // on the H100: scores ahead on the warp-specialized TMA loop"). `hardware(tma = 0)` keeps
  // cp.async (and scores ahead where they apply).
  bool tma = s.async && s.wgmma && s.swizzle && c.kernel.hardware.tma;
  for (const ir::Op *o : s.staged)
    tma = tma && c.queries.tensorCopyable(c.plan.promotions.at(o));
  // Scores ahead (decided below, once the accumulators are counted): on the cp.async form, and
  // on the TMA form where a producer warpgroup copies the tiles (planWarpSpecialization drops
  // it from a TMA loop left unspecialized: there the copy of tile i + 1 sits behind the barrier
  // its first product would be issued before). The second product stays in flight into the
  // next iteration, but the wait for everything there comes before that iteration's barrier,
  // so the copy still fetches tile i + S - 1 (mmaInFlight 0); warp-specialized, the consumers
  // release tile i's buffer behind that wait in iteration i + 1.
  const ir::Op *ahead = c.kernel.hardware.scoreAhead ? scoreAheadOp(iterate, s) : nullptr;
  s.prefetch = s.readAhead ? s.stages : std::max(1, s.stages - 1 - s.mmaInFlight);
  // MFMA interleaving (LoopSchedule::interleave): AMD register-prefetch loops whose staged
  // reads feed MFMAs.
  s.kSteps = static_cast<int>(kSteps);
  s.interleave = !s.async && !s.ldsDma && !s.staged.empty() && c.target.vendor == Vendor::AMD &&
                 c.target.mmaFamily == MmaFamily::MFMA;
  // Not where the accumulators alone take more than 128 registers per lane (the 256x256x64
  // GEMM's 128x128 wave tiles: 256): the groups' order raises the pressure, which there
  // spilled; LLVM's own order fits them.
  bool feedsMma = false;
  std::set<const ir::Op *> mmas;
  for (const ir::Op *o : s.staged)
    for (const ir::Op *u : o->results[0]->users)
      if (u->kind == ir::OpKind::Mma && u->mma && u->dims.size() == 3) {
        feedsMma = true;
        mmas.insert(u);
      }
  auto clonesOf = [&](const ir::Dim &d) {
    int64_t n = 1;
    for (const auto &ex : c.dist.expansion)
      if (ex.dim == d)
        n = std::max<int64_t>(ex.count, 1);
    return n;
  };
  auto regsOf = [&](const ir::Op *m) {
    return clonesOf(m->dims[0]) * clonesOf(m->dims[1]) * m->mma->m * m->mma->n /
           std::max(1u, m->mma->waveSize * m->mma->groupWaves);
  };
  int64_t accRegs = 0;
  for (const ir::Op *m : mmas)
    accRegs += regsOf(m);
  s.interleave = s.interleave && feedsMma && accRegs <= 128;
  s.accRegisters = accRegs;
  // Scores ahead costs the registers of a second score accumulator (the next tile's, in flight
  // beside this one's). Taken where the accumulators take at least 96 registers per lane and,
  // with the second score accumulator, at most 160 (attention with head dim 128 and 64-key
  // tiles: 32 + 64, 32 more; head dim 64 with 128-key tiles: 64 + 32, 64 more): one
  // workgroup per SM either way, and the overlap measured +7 % and +14 % on the H100. Below
  // (head dim 64, 64-key tiles: 32 + 32) the kernel without it fits two workgroups per SM,
  // which measured faster; above (head dim 128, 128-key tiles: 64 + 64, 64 more) the cp.async
  // loop spilled (docs/performance.md). The TMA loop, whose consumers run without copies and
  // with 232 registers (planWarpSpecialization), takes up to 192: head dim 128 with 128-key
  // tiles, no spills, +8 % against 64-key tiles on the H100 (docs/performance.md, "Attention
  // on the H100: ping-pong and 128-key tiles").
  if (ahead && (accRegs < 96 || accRegs + regsOf(ahead) > (tma ? 192 : 160)))
    ahead = nullptr;
  s.scoreAhead = ahead;
  if (tma)
    s.copy = LoopSchedule::Copy::Tma;
  c.plan.loops[&iterate] = s;
  return true;
}

int64_t rasterGroup(int64_t tile0, int64_t tile1, int64_t resident) {
  int64_t best = 0, bestRows = 0;
  for (int64_t g = 2; g <= 64; g *= 2) {
    int64_t rows = g * tile0 + (resident + g - 1) / g * tile1;
    if (best == 0 || rows < bestRows)
      best = g, bestRows = rows;
  }
  return best;
}

// The launch order walks grid axis 0 fastest: the workgroups resident at once cover a band of
// one or two columns of axis 1 and every row tile of axis 0, so for a tall grid they read all
// of one operand and little of the other, and the next wave reads that operand again. Grouped
// (KernelPlan::raster), the same workgroups read `group` row tiles and about resident / group
// column tiles, each shared through L2 by the workgroups of its row or column.
// Whether a tiling's end grows with the workgroup's tile along grid axis `axis`: its value one
// tile further along minus its value here is a proven non-negative constant (tile_start and
// tile_end move by the tile; the clamp of tile_end at the dim's size is ignored: the last tile).
bool endGrowsAlong(const PlanContext &c, const ir::TilingConstraint &t, unsigned axis) {
  if (!t.end)
    return false;
  bool named = false;
  std::map<std::string, sym::IndexExpr> here, next;
  for (const ir::Dim &d : t.endDims) {
    const ir::WorkgroupConstraint *wg = c.kernel.workgroupFor(d);
    if (!wg)
      return false;
    named |= wg->axis == axis;
    const int64_t step = wg->axis == axis ? wg->tile : 0;
    const sym::IndexExpr s = sym::IndexExpr::symbol("$start_" + d.str());
    here[ir::tileStartSymbol(d)] = s;
    here[ir::tileEndSymbol(d)] = s + wg->tile;
    next[ir::tileStartSymbol(d)] = s + step;
    next[ir::tileEndSymbol(d)] = s + step + wg->tile;
  }
  auto grow = c.facts.simplify(t.end->subs(next) - t.end->subs(here)).asInteger();
  return named && grow && *grow > 0;
}

void planRaster(PlanContext &c) {
  c.plan.raster = RasterPlan{};
  for (const ir::TilingConstraint &t : c.kernel.tilings)
    for (unsigned a = 0; a < 3; ++a)
      c.plan.raster.reverse[a] = c.plan.raster.reverse[a] || endGrowsAlong(c, t, a);
  const ir::WorkgroupConstraint *axes[2] = {nullptr, nullptr};
  for (const ir::WorkgroupConstraint &w : c.kernel.workgroups)
    if (w.primary && w.axis < 2)
      axes[w.axis] = &w;
  if (!axes[0] || !axes[1] || c.target.computeUnits == 0)
    return;
  // A GEMM's loop: async wgmma, one staged operand along axis 0's dim and not axis 1's (A),
  // one the other way round (B). Otherwise (attention's K and V tiles depend on neither
  // workgroup dim of the model) the model does not apply.
  auto has = [](const ir::Op *o, const ir::Dim &d) {
    const ir::Shape &sh = o->operands[0]->type.shape;
    return std::find(sh.begin(), sh.end(), d) != sh.end();
  };
  bool gemm = false;
  for (const auto &[loop, s] : c.plan.loops) {
    bool a = false, b = false;
    for (const ir::Op *o : s.staged) {
      a |= has(o, axes[0]->dim) && !has(o, axes[1]->dim);
      b |= has(o, axes[1]->dim) && !has(o, axes[0]->dim);
    }
    gemm |= s.wgmma && s.async && a && b;
  }
  if (!gemm)
    return;
  RasterPlan r = c.plan.raster; // keeps `reverse` (not applied with a group remap)
  r.tiles[0] = axes[0]->tile;
  r.tiles[1] = axes[1]->tile;
  r.resident = c.target.computeUnits;
  r.group = rasterGroup(r.tiles[0], r.tiles[1], r.resident);
  // One group covers all of axis 0: the remap would be the launch order.
  if (std::optional<int64_t> n = c.dist.grid[0].asInteger(); n && *n <= r.group)
    return;
  c.plan.raster = r;
}

// A producer warpgroup for the kernel's TMA loop (KernelPlan::specialization). The loop must be
// a top-level op of the kernel (the producer runs it from the kernel's start, with the trip
// count and tile origins of the workgroup), the only TMA loop, and the block one axis of whole
// warpgroups with room for one more, and the loop's accumulators fit the consumers' registers.
// Registers: the launch gives each thread the file over the
// block's threads (multiples of 8); setmaxnreg lowers the producer warpgroup to 40 and raises
// the consumers to the most that then fits (at most 232, multiples of 8) in what the launch
// gave the workgroup: setmaxnreg.inc takes registers from the workgroup's own pool, the
// launch's count times the threads, and blocks until they are there, so consumers asking for
// more than the pool holds wait forever (5 warpgroups: 96 x 640 = 61440 at launch, room for
// 104 per consumer, not the 112 that the whole file of 65536 would give).
namespace {
void specializeTmaLoop(PlanContext &c) {
  if (!c.kernel.hardware.warpSpecialize)
    return;
  LoopSchedule *only = nullptr;
  int tmaLoops = 0;
  for (auto &[loop, s] : c.plan.loops)
    if (s.copy == LoopSchedule::Copy::Tma && s.async && s.wgmma) {
      ++tmaLoops;
      only = &s;
    }
  if (tmaLoops != 1 || only->stages < 2)
    return;
  bool topLevel = false;
  for (const auto &o : c.kernel.body.ops)
    topLevel |= o.get() == only->loop;
  const int64_t consumers = c.dist.block[0];
  const int64_t threads = consumers + 128;
  if (!topLevel || c.dist.block[1] != 1 || c.dist.block[2] != 1 || consumers % 128 != 0 ||
      threads > 1024)
    return;
  WarpSpecialization w;
  w.producerThreads = 128;
  const int64_t file = 65536;
  const int64_t atLaunch = std::min<int64_t>(255, file / threads / 8 * 8);
  w.producerRegisters = 40;
  const int64_t pool = atLaunch * threads;
  const int64_t up = std::min<int64_t>(232, (pool - 128 * w.producerRegisters) / consumers / 8 * 8);
  w.consumerRegisters = up > atLaunch ? static_cast<int>(up) : 0;
  if (w.consumerRegisters == 0)
    w.producerRegisters = 0;
  // A loop that waits for its products at once (mmaInFlight 0: the two-level accumulation of
  // bench/gemm_fp8.wave, each tile's products summed from zero and added to a running sum)
  // holds two accumulators; where they and the addressing do not fit the consumers' registers,
  // the one-workgroup loop keeps LLVM's full 255 (128 x 256 fp8 tiles: 256 accumulator
  // registers, which spilled 508 bytes specialized against 84 unspecialized).
  // Scores ahead have their own register rule (planLoop) and need the producer warpgroup: the
  // score accumulator of tile i is dead once P is made, before the next one is issued.
  const int64_t perLane = std::max<int64_t>(w.consumerRegisters, atLaunch);
  if (only->mmaInFlight == 0 && !only->scoreAhead && 2 * only->accRegisters + 24 > perLane)
    return;
  only->specialized = true;
  // Persistent tiles, where the kernel asks for them (`hardware(persistent = 1)`; not the
  // default: on the H100 they measured within -5 % .. +3 % of one tile per workgroup,
  // docs/performance.md): one workgroup per SM (setmaxnreg hands the consumers the register
  // file a workgroup of these threads leaves, so a second would not fit), each walking the
  // tiles of grid axes 0 and 1 in the raster order. The ring's phases continue across tiles.
  // Not where a tiling's `end` makes the trip count the workgroup's own: the ring's phases
  // continue across tiles by a fixed count per tile.
  bool sameTrips = true;
  for (const LoopInfo &li : c.dist.loops)
    for (int a = 0; a < 3; ++a)
      sameTrips = sameTrips && !li.tripCount.dependsOn("$WG" + std::to_string(a));
  auto grid2 = c.dist.grid[2].asInteger();
  if (c.kernel.hardware.persistent && grid2 && *grid2 == 1 && sameTrips)
    w.perSM = 1;
  c.plan.specialization = w;
}
} // namespace

namespace {

// Whether the body of loop `iterate` can need no workgroup barrier: its ops are products,
// staged reads, register arithmetic and reductions along dims no wave constraint spreads over
// waves (a reduction across waves goes through shared-memory scratch, a permute may move
// values through shared memory; anything else may touch shared memory too).
bool barrierFree(const PlanContext &c, const ir::Op &iterate, const LoopSchedule &s) {
  bool ok = true;
  ir::walk(*iterate.regions[0], [&](const ir::Op &op) {
    switch (op.kind) {
    case ir::OpKind::Constant: case ir::OpKind::Mma: case ir::OpKind::Unary:
    case ir::OpKind::Binary: case ir::OpKind::Math: case ir::OpKind::Select:
    case ir::OpKind::Cast: case ir::OpKind::Broadcast: case ir::OpKind::SelfIndex:
    case ir::OpKind::ApplyExpr: case ir::OpKind::Yield:
      return;
    case ir::OpKind::Read:
      ok = ok && std::find(s.staged.begin(), s.staged.end(), &op) != s.staged.end();
      return;
    case ir::OpKind::Reduce:
      for (const auto &w : c.kernel.waves)
        ok = ok && !(w.dim == op.dims[0]);
      return;
    default:
      ok = false;
    }
  });
  return ok;
}

// Ping-pong (WarpSpecialization::pingpong): the consumer warpgroups of a warp-specialized loop
// that issues its scores ahead (attention: softmax between the products, which the other
// warpgroup's products can fill) take turns, where there are at least two of them, the body
// needs no workgroup barrier (a barrier there would meet warpgroups half an iteration apart)
// and the kernel asks for it (`hardware(..., pingpong = 1)`; not the default: it measured
// slower on the H100, docs/performance.md "Attention on the H100: ping-pong and 128-key
// tiles").
void planPingpong(PlanContext &c) {
  const int64_t consumers = c.dist.block[0];
  if (!c.kernel.hardware.pingpong || c.plan.specialization.producerThreads == 0 ||
      consumers % 128 != 0 || consumers / 128 < 2)
    return;
  for (const auto &[loop, s] : c.plan.loops)
    if (s.specialized && s.scoreAhead && barrierFree(c, *loop, s))
      c.plan.specialization.pingpong = consumers / 128;
}

} // namespace

void planWarpSpecialization(PlanContext &c) {
  c.plan.specialization = WarpSpecialization{};
  specializeTmaLoop(c);
  // Scores ahead on a TMA loop need its producer warpgroup (planLoop), and not persistent tiles
  // (the consumers' first wait, for tile 0 before the loop, would need the ring's count of the
  // tiles before).
  for (auto &[loop, s] : c.plan.loops)
    if (s.copy == LoopSchedule::Copy::Tma && s.scoreAhead &&
        (!s.specialized || c.plan.specialization.perSM > 0))
      s.scoreAhead = nullptr;
  planPingpong(c);
}

} // namespace wave

namespace wave {

// The epilogue through shared memory (KernelPlan::epilogue). After the warp-specialized loop's
// last product every buffer of its ring is free: the producer copied only tiles below the trip
// count and the consumers waited for each of them, and the final wgmma wait retired every read
// of the ring. The kernel's last op, when it writes one tile per workgroup of a 2-D global
// tensor, then goes through one ring tile's buffers (the largest that holds it) and TMA stores.
// Not with persistent tiles: the producer fills the ring for the next tile meanwhile.
void planEpilogueStaging(PlanContext &c) {
  c.plan.epilogue = EpilogueStaging{};
  const WarpSpecialization &w = c.plan.specialization;
  if (!c.kernel.hardware.stageEpilogue || w.producerThreads == 0 || w.perSM > 0 ||
      c.kernel.body.ops.empty())
    return;
  const ir::Op &write = *c.kernel.body.ops.back();
  if (write.kind != ir::OpKind::Write || write.mapping || write.operands.size() != 2)
    return;
  const ir::Value *mem = write.operands[1];
  if (mem->paramIndex < 0 || !mem->type.isMemory() ||
      mem->type.space != AddressSpace::Global || mem->type.shape.size() != 2)
    return;
  const ScalarType t = mem->type.dtype;
  if (t != ScalarType::F16 && t != ScalarType::BF16 && t != ScalarType::F32)
    return;
  const int64_t bytes = bitWidth(t) / 8;
  EpilogueStaging e;
  int64_t tile[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    for (const auto &wg : c.kernel.workgroups)
      if (wg.dim == mem->type.shape[i] && !tile[i]) {
        tile[i] = wg.tile;
        e.axis[i] = wg.axis;
      }
    if (!tile[i] || e.axis[i] > 1)
      return;
  }
  if (e.axis[0] == e.axis[1])
    return;
  // Boxes of rows of 128 bytes (the 128-byte swizzle's row), at most 256 rows, each box at a
  // multiple of 1024 bytes (the swizzle's atom) of its buffer.
  e.rows = tile[0];
  e.cols = tile[1];
  e.boxCols = 128 / bytes;
  if (e.rows > 256 || e.rows % 8 != 0 || e.cols % e.boxCols != 0 ||
      !c.facts.provesExact(mem->type.shape[1].size, sym::IndexExpr(16 / bytes)))
    return;
  const int64_t need = e.rows * e.cols * bytes;
  const LoopSchedule *loop = nullptr;
  for (const auto &[op, s] : c.plan.loops)
    if (s.specialized)
      loop = &s;
  if (!loop)
    return;
  int64_t best = 0;
  for (const ir::Op *o : loop->staged) {
    const SharedTile &st = c.plan.tiles[c.plan.promotions.at(o).alloc];
    const int64_t room = st.bytes * st.stages;
    if (st.xorBytes == 128 && st.align % 1024 == 0 && room >= need && (!best || room < best)) {
      best = room;
      e.alloc = c.plan.promotions.at(o).alloc;
    }
  }
  if (e.alloc < 0)
    return;
  e.write = &write;
  c.plan.epilogue = e;
}

} // namespace wave
