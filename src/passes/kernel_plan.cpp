// planKernel (the plan passes in order) and printPlan (their dumps): kernel_plan.h.
#include "passes/kernel_plan.h"

#include <functional>

namespace wave {

namespace {

// "read a (line 12)": an op as a dump names it.
std::string opLabel(const ir::Op *op) {
  if (!op)
    return "?";
  std::string s = opKindName(op->kind);
  if (!op->operands.empty() && !op->operands[0]->name.empty())
    s += " " + op->operands[0]->name;
  return s + " (line " + std::to_string(op->loc.begin.line) + ")";
}

std::string listOf(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string exprList(const std::vector<sym::IndexExpr> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + v[i].str();
  return s + "]";
}

std::string tileLayout(const SharedTile &t) {
  if (t.xorBytes)
    return "wgmma layout: " + std::to_string(t.xorBytes) + "-byte swizzle atoms" +
           (t.blockBytes ? ", column blocks " + std::to_string(t.blockBytes) + " bytes apart"
                         : std::string()) +
           ", aligned to " + std::to_string(t.align);
  std::string model;
  if (t.modeledPad >= 0)
    model = " (bank model, conflicts per wave: padded " + std::to_string(t.modeledPad) +
            ", xor " + std::to_string(t.modeledXor) + ")";
  if (t.xorUnit) {
    int64_t period = 1, phases = 1;
    const int64_t bytes = t.dtype == ScalarType::I1 ? 1 : bitWidth(t.dtype) / 8;
    xorUnitPhases(t.tile.back() * bytes, t.xorUnit, period, phases);
    return "rows unpadded, " + std::to_string(t.xorUnit) + "-byte units XOR (row / " +
           std::to_string(period) + ") % " + std::to_string(phases) + model;
  }
  if (t.swizzle)
    return "rows unpadded, 16-byte chunks rotated by row";
  if (t.pad)
    return "rows padded by " + std::to_string(t.pad) + " elements" + model;
  return "unpadded";
}

std::string printPromotions(const KernelPlan &plan) {
  std::string out;
  for (size_t i = 0; i < plan.tiles.size(); ++i) {
    const SharedTile &t = plan.tiles[i];
    if (t.scratch)
      continue;
    const Promotion &p = plan.promotions.at(t.op);
    out += "  tile " + std::to_string(i) + ": " + opLabel(t.op) + (p.mapped ? " (mapped)" : "") +
           ": " + listOf(t.tile) + " " + scalarTypeName(t.dtype) + ", " + tileLayout(t) +
           ", strides " + exprList(t.strides) + ", " + std::to_string(t.bytes) +
           " bytes per buffer\n";
    out += "    origin " + exprList(p.origin) +
           (p.wgmma ? std::string(", read by wgmma through descriptors") +
                          (p.nMajor ? " ([K, N], N-major)" : " (K-major)")
                    : std::string(", read into registers")) +
           "\n";
  }
  return out.empty() ? "  no promoted reads\n" : out;
}

std::string printCopies(const KernelPlan &plan, const Distribution &d) {
  std::string out;
  const int64_t threads = static_cast<int64_t>(d.block[0]) * d.block[1] * d.block[2];
  for (size_t i = 0; i < plan.tiles.size(); ++i) {
    const SharedTile &t = plan.tiles[i];
    if (t.scratch)
      continue;
    const Promotion &p = plan.promotions.at(t.op);
    out += "  tile " + std::to_string(i) + " (" + opLabel(t.op) + "): " +
           std::to_string(threads) + " threads x " + std::to_string(p.lanes) + " elements x " +
           std::to_string(p.copies) + (p.copies == 1 ? " round" : " rounds") + ", " +
           (p.async ? "cp.async of 16 bytes per vector" : "global load, shared store") + "\n";
  }
  return out.empty() ? "  no promoted reads\n" : out;
}

std::string printSchedule(const ir::Kernel &kernel, const KernelPlan &plan) {
  std::string out;
  ir::walk(kernel.body, [&](const ir::Op &op) {
    auto it = plan.loops.find(&op);
    if (it == plan.loops.end())
      return;
    const LoopSchedule &s = it->second;
    out += "  loop over " + op.dims[0].str() + " (line " + std::to_string(op.loc.begin.line) +
           "):";
    if (s.staged.empty()) {
      out += " nothing staged\n";
      return;
    }
    out += " staged";
    for (const ir::Op *o : s.staged)
      out += std::string(o == s.staged.front() ? " " : ", ") + opLabel(o) + " -> tile " +
             std::to_string(plan.promotions.at(o).alloc);
    out += "\n    copies: " +
           std::string(s.async ? std::string(s.copy == LoopSchedule::Copy::Tma
                                                 ? "TMA (cp.async.bulk.tensor, one mbarrier "
                                                   "per buffer), "
                                                 : "cp.async, ") +
                                     std::to_string(s.stages) + " buffers per tile"
                           : s.ldsDma ? "LDS DMA (buffer_load_dword ... lds of tile i + 1 "
                                        "behind the reads of tile i, s_waitcnt vmcnt(0) "
                                        "before the next reads), " +
                                            (s.stages > 1 ? std::to_string(s.stages) +
                                                                " buffers per tile"
                                                          : std::string("1 buffer"))
                               : "register prefetch (tile i + 1 loaded at the top of "
                                 "iteration i, stored at its end), " +
                                     (s.stages > 1 ? std::to_string(s.stages) +
                                                         " buffers per tile (tile i + 1 into "
                                                         "the next)"
                                                   : std::string("1 buffer"))) +
           (s.swizzle ? ", swizzled" : "") + "\n";
    if (s.specialized)
      out += "    prefetch distance: the producer warpgroup's, up to " +
             std::to_string(s.stages) + " tiles (a buffer is refilled once its products "
             "retired)\n";
    else
      out += "    prefetch distance: " + std::to_string(s.prefetch) +
             (s.prefetch == 1 ? " tile" : " tiles") + " copied before the loop\n";
    out += "    fragment read-ahead: " +
           std::string(!s.readAhead  ? "none"
                       : s.stepwise ? "step 0 of tile i + 1 at the end of iteration i, step "
                                      "k + 2 after the MMAs of step k"
                                    : "step 0 of tile i + 1 at the end of iteration i, the "
                                      "other steps at the top") +
           "\n";
    if (s.wgmma)
      out += "    wgmma groups in flight across iterations: " + std::to_string(s.mmaInFlight) +
             "\n";
    if (s.scoreAhead)
      out += "    scores ahead: the product at line " + std::to_string(s.scoreAhead->loc.begin.line) +
             " for tile i + 1 issued in iteration i, before the loop's second product, which "
             "stays in flight into iteration i + 1\n";
    if (s.interleave)
      out += "    MFMA interleaving: s_setprio 1 from the tile's LDS reads to the end of the body, "
             "the next tile's global loads behind them, sched.group.barrier pipeline over " +
             std::to_string(s.kSteps) + (s.kSteps == 1 ? " K step\n" : " K steps\n");
  });
  return out.empty() ? "  no loops\n" : out;
}

std::string printSharedMemory(const KernelPlan &plan) {
  const SharedMemoryPlan &m = plan.sharedMemory;
  std::string out = "  arena: " + std::to_string(m.bytes) + " bytes, " +
                    (m.bytes == 0          ? std::string("none")
                     : m.dynamicBytes > 0 ? "dynamic shared memory (the launch provides it)"
                                          : std::string("static")) +
                    ", base aligned to " + std::to_string(m.align) + "\n";
  if (m.reused)
    out += "  tiles share bytes: " + std::to_string(m.sequentialBytes) +
           " bytes with a place for every tile\n";
  for (size_t i = 0; i < plan.tiles.size(); ++i) {
    const SharedTile &t = plan.tiles[i];
    out += "  tile " + std::to_string(i) + " at " + std::to_string(t.offsetBytes) + ": " +
           (t.relayout ? "layout move for " : t.scratch ? "reduction scratch of " : "") + opLabel(t.op) + ", " +
           std::to_string(t.stages) + " x " + std::to_string(t.bytes) + " bytes";
    if (t.pieces > 1)
      out += " (the move in " + std::to_string(t.pieces) + " pieces)";
    if (m.reused) {
      std::string with;
      for (size_t j = 0; j < plan.tiles.size(); ++j)
        if (j != i && tilesOverlap(t, plan.tiles[j]))
          with += (with.empty() ? "" : ", ") + std::to_string(j);
      out += ", live in items " + std::to_string(t.liveFirst) + ".." +
             std::to_string(t.liveLast) + (with.empty() ? "" : ", shares bytes with tile " + with);
    }
    out += "\n";
  }
  return out;
}

} // namespace

bool planKernel(PlanContext &c, const std::function<void(const char *)> &after) {
  // Promotion, in the order the kernel's code reaches the reads: a loop's staged reads as the
  // loop begins (their tiles come before those of the ops in its body).
  std::vector<const ir::Op *> loops;
  std::function<bool(const ir::Region &)> promote = [&](const ir::Region &r) {
    for (const auto &op : r.ops) {
      if (isPromotedRead(*op) && !c.plan.promotions.count(op.get()) &&
          !planPromotion(c, *op))
        return false;
      if (op->kind != ir::OpKind::Iterate)
        continue;
      for (const auto &o : op->regions[0]->ops)
        if (isPromotedRead(*o) && !c.plan.promotions.count(o.get()) && !planPromotion(c, *o))
          return false;
      loops.push_back(op.get());
      if (!promote(*op->regions[0]))
        return false;
    }
    return true;
  };
  if (!promote(c.kernel.body))
    return false;
  settleLdsLayouts(c);
  after("promotion");
  for (const SharedTile &t : c.plan.tiles) // in tile order
    if (!planCooperativeCopy(c, c.plan.promotions.at(t.op)))
      return false;
  after("cooperative-copies");
  for (const ir::Op *loop : loops)
    if (!planLoop(c, *loop))
      return false;
  planRaster(c);
  planWarpSpecialization(c);
  planEpilogueStaging(c);
  after("schedule");
  return true;
}

std::string printPlan(const std::string &pass, const ir::Kernel &kernel, const KernelPlan &plan,
                      const Distribution &dist) {
  std::string out = "kernel " + kernel.name + ": " + pass + "\n";
  if (pass == "promotion")
    return out + printPromotions(plan);
  if (pass == "cooperative-copies")
    return out + printCopies(plan, dist);
  if (pass == "schedule") {
    const RasterPlan &r = plan.raster;
    if (r.group > 0)
      out += "  workgroup order: groups of " + std::to_string(r.group) +
             " workgroups along grid axis 0, each down all of axis 1 (tiles " +
             std::to_string(r.tiles[0]) + " x " + std::to_string(r.tiles[1]) + ", " +
             std::to_string(r.resident) + " resident), ids remapped " +
             (plan.specialization.perSM > 0 ? "per output tile" : "at the kernel's start") +
             "\n";
    const WarpSpecialization &w = plan.specialization;
    if (w.producerThreads > 0)
      out += "  warp-specialized: a producer warpgroup of " + std::to_string(w.producerThreads) +
             " threads after the block's " + std::to_string(dist.block[0]) +
             " issues the TMA copies (full/empty mbarrier per buffer, no workgroup barrier in "
             "the loop); setmaxnreg " +
             (w.consumerRegisters ? "producer " + std::to_string(w.producerRegisters) +
                                        ", consumers " + std::to_string(w.consumerRegisters)
                                  : std::string("not used")) +
             "\n";
    if (w.perSM > 0)
      out += "  persistent: " + std::to_string(w.perSM) +
             " workgroup per SM walks the output tiles (grid clamped at launch to the SM count), "
             "the next tile's copies overlapping this tile's epilogue\n";
    if (w.pingpong > 0)
      out += "  ping-pong: the " + std::to_string(w.pingpong) +
             " consumer warpgroups take turns issuing their products (named barriers 2 to " +
             std::to_string(1 + w.pingpong) + ")\n";
    if (const EpilogueStaging &e = plan.epilogue; e.write)
      out += "  epilogue: the write (line " + std::to_string(e.write->loc.begin.line) +
             ") staged through shared memory (tile " + std::to_string(e.alloc) +
             "'s ring buffers, " + std::to_string(e.rows) + " x " + std::to_string(e.cols) +
             " in boxes of " + std::to_string(e.rows) + " x " + std::to_string(e.boxCols) +
             ", 128-byte swizzle) and stored by TMA (cp.async.bulk.tensor to global)\n";
    return out + printSchedule(kernel, plan);
  }
  return out + printSharedMemory(plan);
}

} // namespace wave
