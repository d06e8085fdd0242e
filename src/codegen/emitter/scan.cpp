// cumsum: the inclusive prefix sum along a dim, in the operand's own layout; topk: the K
// largest along a dim, per wave then merged across waves (docs/language.md section 12, "Scans").
#include "codegen/emitter/kernel_emitter.h"

namespace wave::codegen::detail {

// ---- cumsum --------------------------------------------------------------------------------
//
// The operand x is laid out like a reduction's operand (lanes along D). Its elements along D are
// cut into *units*: per clone along D, the runs of a lane's elements whose positions along D are
// consecutive (a segment). Every unit is scanned in three levels, each one checked on the
// layout first (planScan), so that the order of positions is exact:
//  1. in the lane: the running sum over the segment's elements, in position order;
//  2. across the lanes of the unit: a butterfly over the lane bits that move along D (those of
//     the reductions, reduce.cpp), each step taking the partner's running total and adding it to
//     the lane's prefix when the partner's block of positions lies below the lane's own;
//  3. across the units of a thread (clones along D, segments) in position order; or, when waves
//     share D, across every wave's units: every lane stores its units' totals (per group of
//     elements with the same other coordinates) in a shared-memory scratch, a barrier follows
//     (barrier analysis), and each unit adds the totals of the (unit, wave) blocks below it,
//     each selected by a compare of the thread's wave id with a constant range.
// Masked-off elements (past the row's end) count as 0; their results are never written.
// Positions are evaluated for concrete lanes, clones and waves with every other symbol 0, and
// checked to be the sum of a lane part, a clone part and a wave part.

struct KernelEmitter::ScanPlan {
  int64_t e = 1, ncl = 1, nw = 1;
  int waveAxis = -1;
  std::vector<std::vector<int64_t>> groups;             // [j] -> elements g
  std::vector<std::vector<std::vector<int64_t>>> segs;  // [j][s] -> g in position order
  std::vector<int64_t> masks;                           // butterfly lane bits, lowest first
  std::vector<bool> upperWhenSet;                       // per mask: the lane with the bit set is above
  std::vector<std::vector<std::pair<int64_t, size_t>>> units; // [j] -> (clone, segment) in order
  // Several waves: [j][unit][unit'][k'] -> the wave ids (first, last) of this thread for which
  // unit' of wave k' lies below this thread's unit (first > last: none).
  std::vector<std::vector<std::vector<std::vector<std::pair<int64_t, int64_t>>>>> waveRange;
};

namespace {
struct Probe {
  std::vector<std::pair<std::string, IndexExpr>> dims; // D first
  std::set<std::string> syms;
  std::string cloneSym;
  // Coordinates at thread ids (t0, t1, t2), clone c along D and element g.
  std::optional<std::vector<int64_t>> at(int64_t t0, int64_t t1, int64_t t2, int64_t c,
                                         int64_t g) const {
    std::map<std::string, int64_t> vals;
    for (const auto &s : syms)
      vals[s] = 0;
    vals["$T0"] = t0;
    vals["$T1"] = t1;
    vals["$T2"] = t2;
    vals["$g"] = g;
    vals[cloneSym] = c;
    std::vector<int64_t> out;
    for (const auto &[name, ex] : dims) {
      auto v = ex.evaluate(vals);
      if (!v)
        return std::nullopt;
      out.push_back(*v);
    }
    return out;
  }
};
} // namespace

// Refuses a cumsum or topk over its dim with its own id (unsupported-scan, unsupported-topk).
bool KernelEmitter::refuseScan(const ir::Op &op, const std::string &why) {
  return unsupported(op.kind == ir::OpKind::TopK ? DiagId::UnsupportedTopK : DiagId::UnsupportedScan,
                     std::string("a ") + ir::opKindName(op.kind) + " over " + op.dims[0].str() +
                         " " + why,
                     op.loc);
}

// The lane, clone and wave parts of the positions along D, the butterfly and the order of the
// units. False (after reporting) for a layout these levels cannot scan exactly.
bool KernelEmitter::planScan(const ir::Op &op, const RegVal &x, ScanPlan &p) {
  const std::string dim = op.dims[0].str();
  auto refuse = [&](const std::string &why) { return refuseScan(op, why); };
  RegVal shape;
  if (!reducedShape(op, x, shape, p.groups))
    return refuse("of a value whose other coordinates are not spread evenly over a lane's elements");
  p.e = std::max<int64_t>(x.elems, 1);
  Probe probe;
  probe.cloneSym = "$i_" + dim;
  probe.dims.push_back({dim, x.layout.at(dim).start});
  for (const auto &[name, di] : x.layout)
    if (name != dim)
      probe.dims.push_back({name, di.start});
  for (const auto &[name, ex] : probe.dims)
    for (const auto &s : ex.freeSymbols())
      if (s != "$T0" && s != "$T1" && s != "$T2" && s != "$g" && s != probe.cloneSym) {
        if (s.rfind("$i_", 0) == 0 && name == dim)
          return refuse("whose index moves with the clones of another dim");
        probe.syms.insert(s);
      }
  if (x.cloneSyms.count(probe.cloneSym))
    p.ncl = machine_.cloneCounts.at(probe.cloneSym);
  const int64_t w = d_.groupSize;
  // The wave axis along D, and the wave part C[k].
  std::vector<int64_t> C(1, 0);
  auto base = probe.at(0, 0, 0, 0, 0);
  if (!base)
    return refuse("whose index cannot be evaluated per lane");
  for (int a = 0; a < 3; ++a) {
    const int64_t n = d_.wavesPerBlock[a];
    bool moves = false, others = false;
    std::vector<int64_t> ck(1, 0);
    for (int64_t k = 1; k < n; ++k) {
      auto q = probe.at(a == 0 ? k * w : 0, a == 1 ? k : 0, a == 2 ? k : 0, 0, 0);
      if (!q)
        return refuse("whose index cannot be evaluated per wave");
      moves |= (*q)[0] != (*base)[0];
      others |= !std::equal(q->begin() + 1, q->end(), base->begin() + 1);
      ck.push_back((*q)[0] - (*base)[0]);
    }
    if (!moves)
      continue;
    if (others || p.waveAxis >= 0)
      return refuse("whose waves also move along another dim or axis");
    p.waveAxis = a;
    p.nw = n;
    C = ck;
  }
  // The lane part A[l][g] and the other coordinates, the clone part B[c].
  std::vector<std::vector<int64_t>> A(w, std::vector<int64_t>(p.e));
  std::vector<std::vector<std::vector<int64_t>>> other(w, std::vector<std::vector<int64_t>>(p.e));
  for (int64_t l = 0; l < w; ++l)
    for (int64_t g = 0; g < p.e; ++g) {
      auto v = probe.at(l, 0, 0, 0, g);
      if (!v)
        return refuse("whose index cannot be evaluated per lane");
      A[l][g] = (*v)[0];
      other[l][g].assign(v->begin() + 1, v->end());
    }
  std::vector<int64_t> B(p.ncl, 0);
  for (int64_t c = 1; c < p.ncl; ++c) {
    auto v = probe.at(0, 0, 0, c, 0);
    if (!v || !std::equal(v->begin() + 1, v->end(), other[0][0].begin()))
      return refuse("whose clones move along another dim");
    B[c] = (*v)[0] - A[0][0];
  }
  // Separability, on a sample of lanes, clones, waves and elements.
  const int64_t total = w * p.ncl * p.nw * p.e, stride = std::max<int64_t>(1, total / 4099);
  for (int64_t i = 0; i < total; i += stride) {
    const int64_t g = i % p.e, l = i / p.e % w, c = i / (p.e * w) % p.ncl, k = i / (p.e * w * p.ncl);
    const int a = p.waveAxis;
    auto v = probe.at(a == 0 ? k * w + l : l, a == 1 ? k : 0, a == 2 ? k : 0, c, g);
    if (!v || (*v)[0] != A[l][g] + B[c] + C[k])
      return refuse("whose position is not a sum of lane, clone and wave parts");
  }
  return planScanLanes(op, p, A, other, B, C);
}

// planScan for the lanes: segments, butterfly masks and the order of units and waves.
bool KernelEmitter::planScanLanes(const ir::Op &op, ScanPlan &p,
                                  const std::vector<std::vector<int64_t>> &A,
                                  const std::vector<std::vector<std::vector<int64_t>>> &other,
                                  const std::vector<int64_t> &B, const std::vector<int64_t> &C) {
  const std::string dim = op.dims[0].str();
  auto refuse = [&](const std::string &why) { return refuseScan(op, why); };
  const int64_t w = static_cast<int64_t>(A.size());
  // Segments: each group's elements in position order, cut where a step is not +1.
  for (const auto &grp : p.groups) {
    std::vector<int64_t> order = grp;
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return A[0][a] < A[0][b]; });
    std::vector<std::vector<int64_t>> segs(1, {order[0]});
    for (size_t i = 1; i < order.size(); ++i) {
      bool unit = true;
      for (int64_t l = 0; l < w; ++l) {
        const int64_t step = A[l][order[i]] - A[l][order[i - 1]];
        if (step <= 0)
          return refuse("whose lanes hold their elements in different orders");
        unit &= step == 1;
      }
      if (unit)
        segs.back().push_back(order[i]);
      else
        segs.push_back({order[i]});
    }
    p.segs.push_back(segs);
  }
  // Butterfly bits: a lane bit that moves D for every lane and no other coordinate.
  std::vector<std::pair<int64_t, int64_t>> bits; // (distance at lane 0, mask)
  for (int64_t m = 1; m < w; m *= 2) {
    bool allOther = true, allD = true, anyD = false;
    for (int64_t l = 0; l < w; ++l)
      for (int64_t g = 0; g < p.e; ++g) {
        const bool so = other[l][g] == other[l ^ m][g], sd = A[l][g] == A[l ^ m][g];
        allOther &= so;
        allD &= !sd;
        anyD |= !sd;
      }
    if (allOther && allD && m >= static_cast<int64_t>(d_.waveSize))
      return refuse("across the waves of a warpgroup");
    if (allOther && allD)
      bits.push_back({std::llabs(A[m][0] - A[0][0]), m});
    else if (allOther && anyD)
      return refuse("in a lane layout that a butterfly cannot scan");
  }
  std::sort(bits.begin(), bits.end());
  // Each step: the lane's block and its partner's lie apart; the upper one adds.
  auto block = [&](int64_t l, size_t steps, const std::vector<int64_t> &seg, int64_t &lo,
                   int64_t &hi) {
    lo = INT64_MAX;
    hi = INT64_MIN;
    for (size_t bitsSet = 0; bitsSet < (size_t(1) << steps); ++bitsSet) {
      int64_t q = l;
      for (size_t k = 0; k < steps; ++k)
        if (bitsSet >> k & 1)
          q ^= bits[k].second;
      for (int64_t g : seg) {
        lo = std::min(lo, A[q][g]);
        hi = std::max(hi, A[q][g]);
      }
    }
  };
  for (size_t i = 0; i < bits.size(); ++i) {
    const int64_t m = bits[i].second;
    int upper = -1; // 1: the lane with the bit set is above
    for (int64_t l = 0; l < w; ++l)
      for (const auto &segs : p.segs)
        for (const auto &seg : segs) {
          int64_t lo, hi, plo, phi;
          block(l, i, seg, lo, hi);
          block(l ^ m, i, seg, plo, phi);
          if (!(hi < plo || phi < lo))
            return refuse("in a lane layout whose lanes' blocks interleave");
          const int u = ((lo > phi) == ((l & m) != 0)) ? 1 : 0;
          if (upper >= 0 && u != upper)
            return refuse("in a lane layout whose lane order a butterfly cannot follow");
          upper = u;
        }
    p.masks.push_back(m);
    p.upperWhenSet.push_back(upper == 1);
  }
  // Each lane's full block of a unit must be its class's positions: the lanes with the same
  // other coordinates.
  const size_t steps = bits.size();
  for (int64_t l = 0; l < w; ++l)
    for (size_t j = 0; j < p.groups.size(); ++j) {
      const int64_t g0 = p.groups[j][0];
      std::set<int64_t> orbit, cls;
      for (size_t bs = 0; bs < (size_t(1) << steps); ++bs) {
        int64_t q = l;
        for (size_t k = 0; k < steps; ++k)
          if (bs >> k & 1)
            q ^= bits[k].second;
        orbit.insert(A[q][g0]);
      }
      for (int64_t q = 0; q < w; ++q)
        if (other[q][g0] == other[l][g0])
          cls.insert(A[q][g0]);
      if (orbit.size() != (size_t(1) << steps) || orbit != cls)
        return refuse("in a lane layout that a butterfly cannot scan");
    }
  return planScanUnits(op, p, A, B, C, block);
}

// planScan for the units of a thread and the waves: the (unit, wave) blocks lie apart, in one
// order for every lane; per pair of units and wave k', the range of this thread's wave ids
// for which the other wave's unit lies below this one's.
bool KernelEmitter::planScanUnits(
    const ir::Op &op, ScanPlan &p, const std::vector<std::vector<int64_t>> &A,
    const std::vector<int64_t> &B, const std::vector<int64_t> &C,
    const std::function<void(int64_t, size_t, const std::vector<int64_t> &, int64_t &, int64_t &)>
        &block) {
  const std::string dim = op.dims[0].str();
  auto refuse = [&](const std::string &why) { return refuseScan(op, why); };
  const int64_t w = static_cast<int64_t>(A.size());
  const size_t steps = p.masks.size();
  p.waveRange.assign(p.segs.size(), {});
  for (size_t j = 0; j < p.segs.size(); ++j) {
    using Below = std::vector<std::vector<std::vector<std::pair<int64_t, int64_t>>>>;
    Below first; // lane 0's [unit][unit'][k'] -> k_me range
    for (int64_t l = 0; l < w; ++l) {
      std::vector<std::pair<int64_t, size_t>> units;
      std::vector<int64_t> lo;
      std::vector<std::tuple<int64_t, int64_t>> all; // every (unit, wave) block
      {
        std::vector<std::tuple<int64_t, int64_t, int64_t, size_t>> iv; // lo, hi, clone, segment
        for (int64_t c = 0; c < p.ncl; ++c)
          for (size_t s = 0; s < p.segs[j].size(); ++s) {
            int64_t blo, bhi;
            block(l, steps, p.segs[j][s], blo, bhi);
            iv.emplace_back(blo + B[c], bhi + B[c], c, s);
            for (int64_t k = 0; k < p.nw; ++k)
              all.emplace_back(blo + B[c] + C[k], bhi + B[c] + C[k]);
          }
        std::sort(iv.begin(), iv.end());
        for (const auto &[ilo, ihi, c, s] : iv) {
          (void)ihi;
          units.push_back({c, s});
          lo.push_back(ilo);
        }
      }
      std::sort(all.begin(), all.end());
      for (size_t i = 1; i < all.size(); ++i)
        if (std::get<0>(all[i]) <= std::get<1>(all[i - 1]))
          return refuse("whose clones, runs or waves overlap along it");
      if (l == 0)
        p.units.push_back(units);
      else if (units != p.units[j])
        return refuse("whose lanes order their clones differently");
      const size_t nu = units.size();
      Below below(nu, std::vector<std::vector<std::pair<int64_t, int64_t>>>(
                          nu, std::vector<std::pair<int64_t, int64_t>>(p.nw, {1, 0})));
      for (size_t u = 0; u < nu && p.nw > 1; ++u)
        for (size_t v = 0; v < nu; ++v)
          for (int64_t k2 = 0; k2 < p.nw; ++k2) {
            std::vector<int64_t> ks;
            for (int64_t me = 0; me < p.nw; ++me)
              if (lo[v] + C[k2] < lo[u] + C[me])
                ks.push_back(me);
            if (!ks.empty() && ks.back() - ks.front() + 1 != static_cast<int64_t>(ks.size()))
              return refuse("whose waves are not in the order of their ids along it");
            if (!ks.empty())
              below[u][v][k2] = {ks.front(), ks.back()};
          }
      if (l == 0)
        first = below;
      else if (below != first)
        return refuse("whose lanes order their waves differently");
    }
    p.waveRange[j] = first;
  }
  return true;
}

// Levels 1 and 2 for one unit: the in-lane running sums of `el` over the segment, then the
// butterfly; returns the unit's total over its lanes, `out` gets the elements' prefixes.
std::string KernelEmitter::scanUnit(const Combiner &c, const ScanPlan &p,
                                    const std::vector<std::string> &upper,
                                    const std::vector<std::string> &el,
                                    const std::vector<int64_t> &seg,
                                    std::map<int64_t, std::string> &out) {
  std::vector<std::string> run;
  for (int64_t g : seg)
    run.push_back(run.empty() ? el[g] : combine(c, run.back(), el[g]));
  std::string tot = run.back(), pre;
  for (size_t i = 0; i < p.masks.size(); ++i) {
    std::string o = shuffleXor(tot, c.t, p.masks[i]);
    if (pre.empty()) {
      pre = fresh();
      line(pre + " = arith.select " + upper[i] + ", " + o + ", " + identitySplat(c, 1) + " : " +
           c.ety);
    } else {
      std::string sum = combine(c, pre, o), r = fresh();
      line(r + " = arith.select " + upper[i] + ", " + sum + ", " + pre + " : " + c.ety);
      pre = r;
    }
    tot = combine(c, tot, o);
  }
  for (size_t i = 0; i < seg.size(); ++i)
    out[seg[i]] = pre.empty() ? run[i] : combine(c, run[i], pre);
  return tot;
}

// Level 3 across waves: the unit totals `totals` ([outer clone][group][unit], this wave's)
// through a scratch; returns per [outer clone][group][unit] the sum of the totals of every
// wave's units below this thread's unit (its own wave's included; empty: none).
std::vector<std::vector<std::vector<std::string>>>
KernelEmitter::scanAcrossWaves(const ir::Op &op, const Combiner &c, const ScanPlan &p,
                               const std::vector<std::vector<std::vector<std::string>>> &totals) {
  const int64_t waves = wavesPerWorkgroup();
  const int64_t no = static_cast<int64_t>(totals.size());
  std::vector<int64_t> first; // per group, its first unit's slot
  int64_t nu = 0;
  for (const auto &u : p.units) {
    first.push_back(nu);
    nu += static_cast<int64_t>(u.size());
  }
  const int64_t w = d_.groupSize, slots = waves * no * nu * w;
  const int alloc = plannedScratch(scratch_, op, c.t, slots, DiagId::UnsupportedScan);
  if (alloc < 0)
    return {};
  const IndexExpr t0 = IndexExpr::symbol("$T0");
  std::array<IndexExpr, 3> ids = {floorDiv(t0, w), IndexExpr::symbol("$T1"),
                                  IndexExpr::symbol("$T2")};
  auto linear = [&](const std::array<IndexExpr, 3> &id) {
    return id[0] + int64_t(d_.wavesPerBlock[0]) * (id[1] + int64_t(d_.wavesPerBlock[1]) * id[2]);
  };
  auto addr = [&](const IndexExpr &wave, int64_t oc, int64_t unit) {
    IndexExpr off = facts_.simplify(((wave * no + oc) * nu + unit) * w + mod(t0, w));
    std::string i64 = fresh(), ptr = fresh();
    line(i64 + " = arith.index_cast " + lowerIndex(off) + " : index to i64");
    line(ptr + " = llvm.getelementptr " + ldsBase(alloc) + "[" + i64 +
         "] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, " + c.ety);
    return ptr;
  };
  const std::string align = std::to_string(byteSize(c.t));
  {
    LdsScope scope(*this, alloc, /*write=*/true);
    for (int64_t oc = 0; oc < no; ++oc)
      for (size_t j = 0; j < p.units.size(); ++j)
        for (size_t u = 0; u < p.units[j].size(); ++u)
          line("llvm.store " + totals[oc][j][u] + ", " + addr(linear(ids), oc, first[j] + u) +
               " {alignment = " + align + " : i64} : " + c.ety + ", !llvm.ptr<3>");
  }
  const std::string me = lowerIndex(ids[p.waveAxis]);
  std::map<std::pair<int64_t, int64_t>, std::string> conds; // wave-id range -> i1
  auto inRange = [&](int64_t lo, int64_t hi) {
    auto [ci, fresh_] = conds.emplace(std::make_pair(lo, hi), "");
    if (!fresh_)
      return ci->second;
    std::vector<std::string> parts;
    auto cmp = [&](const char *pred, int64_t v) {
      std::string r = fresh();
      line(r + " = arith.cmpi " + pred + ", " + me + ", " + constIndex(v) + " : index");
      parts.push_back(r);
    };
    if (lo > 0)
      cmp("sge", lo);
    if (hi < p.nw - 1)
      cmp("sle", hi);
    return ci->second = parts.empty() ? "" : andAll(parts);
  };
  std::vector<std::vector<std::vector<std::string>>> below(no);
  LdsScope scope(*this, alloc, /*write=*/false);
  for (int64_t oc = 0; oc < no; ++oc)
    for (size_t j = 0; j < p.units.size(); ++j) {
      const size_t n = p.units[j].size();
      below[oc].emplace_back(n);
      for (int64_t k = 0; k < p.nw; ++k) {
        std::array<IndexExpr, 3> other = ids;
        other[p.waveAxis] = IndexExpr(k);
        for (size_t v = 0; v < n; ++v) {
          std::string val;
          for (size_t u = 0; u < n; ++u) {
            const auto [lo, hi] = p.waveRange[j][u][v][k];
            if (lo > hi)
              continue;
            if (val.empty()) {
              val = fresh();
              line(val + " = llvm.load " + addr(linear(other), oc, first[j] + v) +
                   " {alignment = " + align + " : i64} : !llvm.ptr<3> -> " + c.ety);
            }
            std::string add = val, cond = inRange(lo, hi);
            if (!cond.empty()) {
              add = fresh();
              line(add + " = arith.select " + cond + ", " + val + ", " + identitySplat(c, 1) +
                   " : " + c.ety);
            }
            std::string &acc = below[oc][j][u];
            acc = acc.empty() ? add : combine(c, acc, add);
          }
        }
      }
    }
  return below;
}

bool KernelEmitter::emitCumsum(const ir::Op &op) {
  const RegVal &x = values_.at(op.operands[0]);
  const std::string dim = op.dims[0].str();
  if (x.lazy)
    return unsupported(DiagId::UnsupportedStreamedRow, "a streamed row scanned by cumsum", op.loc);
  if (x.deferred || !x.layout.count(dim))
    return unsupported(DiagId::UnsupportedScan,
                       "a cumsum over " + dim + " of a value not laid out along it", op.loc);
  auto cmb = combinerFor(ir::ReduceKind::Sum, x.dtype);
  if (!cmb)
    return unsupported(DiagId::UnsupportedScan,
                       std::string("a cumsum of ") + scalarTypeName(x.dtype) + " values", op.loc);
  const Combiner &c = *cmb;
  ScanPlan p;
  if (!planScan(op, x, p))
    return false;
  // The lane bit tests of the butterfly, once.
  std::vector<std::string> upper;
  const std::string t0 = lowerIndex(IndexExpr::symbol("$T0"));
  for (size_t i = 0; i < p.masks.size(); ++i) {
    std::string r = fresh();
    line(r + " = arith.cmpi " + (p.upperWhenSet[i] ? "ne" : "eq") + ", " +
         binop("andi", t0, constIndex(p.masks[i])) + ", " + constIndex(0) + " : index");
    upper.push_back(r);
  }
  const std::string cloneSym = "$i_" + dim;
  std::set<std::string> outerSyms = x.cloneSyms;
  outerSyms.erase(cloneSym);
  const std::vector<CloneAssign> outer = clonesOver(outerSyms);
  const DimIndex &rowDi = x.layout.at(dim);
  // results[oc][c][g], and per [oc][group][unit] the unit's total (for the waves).
  std::vector<std::vector<std::map<int64_t, std::string>>> res(outer.size());
  std::vector<std::vector<std::vector<std::string>>> totals(outer.size());
  for (size_t oc = 0; oc < outer.size(); ++oc) {
    res[oc].resize(p.ncl);
    std::vector<std::vector<std::string>> el(p.ncl);
    for (int64_t cl = 0; cl < p.ncl; ++cl) {
      CloneAssign a = outer[oc];
      if (x.cloneSyms.count(cloneSym))
        a[cloneSym] = cl;
      std::string v = operandAt(x, a, p.e);
      if (rowDi.masked)
        v = maskToIdentity(c, rowDi, a, v, p.e);
      for (int64_t g = 0; g < p.e; ++g)
        el[cl].push_back(p.e == 1 ? v : extractElem(v, x.dtype, p.e, g));
    }
    for (size_t j = 0; j < p.groups.size(); ++j) {
      std::string carry; // one wave: the units below, in order, in registers
      totals[oc].emplace_back();
      for (const auto &[cl, s] : p.units[j]) {
        std::map<int64_t, std::string> out;
        std::string tot = scanUnit(c, p, upper, el[cl], p.segs[j][s], out);
        for (auto &[g, v] : out)
          res[oc][cl][g] = carry.empty() ? v : combine(c, v, carry);
        if (p.nw == 1)
          carry = carry.empty() ? tot : combine(c, carry, tot);
        totals[oc][j].push_back(tot);
      }
    }
  }
  if (p.nw > 1) {
    auto below = scanAcrossWaves(op, c, p, totals);
    if (failed_)
      return false;
    for (size_t oc = 0; oc < outer.size(); ++oc)
      for (size_t j = 0; j < p.groups.size(); ++j)
        for (size_t u = 0; u < p.units[j].size(); ++u) {
          const auto &[cl, s] = p.units[j][u];
          if (!below[oc][j][u].empty())
            for (int64_t g : p.segs[j][s])
              res[oc][cl][g] = combine(c, res[oc][cl][g], below[oc][j][u]);
        }
  }
  RegVal out = x;
  out.clones.clear();
  out.dtype = op.results[0]->type.dtype;
  for (size_t oc = 0; oc < outer.size(); ++oc)
    for (int64_t cl = 0; cl < p.ncl; ++cl) {
      CloneAssign a = outer[oc];
      if (x.cloneSyms.count(cloneSym))
        a[cloneSym] = cl;
      std::vector<std::string> elems;
      for (int64_t g = 0; g < p.e; ++g)
        elems.push_back(res[oc][cl].at(g));
      out.clones[cloneKey(a, out.cloneSyms)] = buildVector(elems, x.dtype);
    }
  values_[op.results[0]] = std::move(out);
  return !failed_;
}

// ---- topk ----------------------------------------------------------------------------------
//
// K rounds of max-and-remove over the part of a row that one wave holds (the lanes of planScan's
// butterfly): each lane picks its best (value, index) among its elements, a butterfly of
// `gpu.shuffle xor` on both picks the wave's best in every lane, and the lane that holds it
// replaces that element by the removed mark (the type's lowest value, index INT32_MAX), which
// every live element beats (a live lowest value by its lower index). Masked-off elements start
// removed, so a row shorter than K yields index -1 and the lowest value, as the reference says.
// When waves share D, their ranked lists are merged (topkAcrossWaves). The result holds its K
// elements in every lane of the row (layout: K at element g).

// Whether (av, ai) ranks before (bv, bi): the larger value; NaN above every number; equal values
// (-0.0 == +0.0) and two NaNs by the lower index.
std::string KernelEmitter::topkBetter(ScalarType t, const std::string &avIn,
                                      const std::string &ai, const std::string &bvIn,
                                      const std::string &bi) {
  const bool wide = opaque(t); // compared in f32, where every value of the type is exact
  const std::string av = wide ? narrowToF32(avIn, t, 1) : avIn;
  const std::string bv = wide ? narrowToF32(bvIn, t, 1) : bvIn;
  const std::string ety = wide ? "f32" : mlirType(t);
  auto cmp = [&](const std::string &pred, const std::string &a, const std::string &b,
                 const std::string &ty, bool fl) {
    std::string r = fresh();
    line(r + " = arith." + (fl ? "cmpf " : "cmpi ") + pred + ", " + a + ", " + b + " : " + ty);
    return r;
  };
  auto logic = [&](const char *op, const std::string &a, const std::string &b) {
    std::string r = fresh();
    line(r + " = arith." + op + " " + a + ", " + b + " : i1");
    return r;
  };
  const std::string lt = cmp("slt", ai, bi, "i32", false);
  if (!isFloat(t) && !wide) {
    const bool sg = isSigned(t);
    return logic("ori", cmp(sg ? "sgt" : "ugt", av, bv, ety, false),
                 logic("andi", cmp("eq", av, bv, ety, false), lt));
  }
  const std::string nanA = cmp("uno", av, av, ety, true), nanB = cmp("uno", bv, bv, ety, true);
  const std::string eq = logic("ori", cmp("oeq", av, bv, ety, true), logic("andi", nanA, nanB));
  const std::string ordered = logic("ori", cmp("ogt", av, bv, ety, true), logic("andi", eq, lt));
  std::string r = fresh();
  line(r + " = arith.select " + logic("xori", nanA, nanB) + ", " + nanA + ", " + ordered + " : i1");
  return r;
}

// A topk whose row several waves share: each wave's ranked list (`vals`, `idxs` per [outer
// clone][round], the same in every lane of a row) goes to two scratch arrays, stored by one lane
// per row (the others store to a slot of their own thread, so no branch and no two writers),
// then, behind a barrier, every thread merges the waves' lists K times: the best head wins
// and its wave's head moves on (an exhausted list offers the removed mark).
void KernelEmitter::topkAcrossWaves(const ir::Op &op, const ScanPlan &p, const Combiner &c,
                                    std::vector<std::vector<std::string>> &vals,
                                    std::vector<std::vector<std::string>> &idxs) {
  const int64_t w = d_.groupSize, k = op.ivalue, no = static_cast<int64_t>(vals.size());
  const int64_t waves = wavesPerWorkgroup();
  const int64_t threads = d_.block[0] * d_.block[1] * d_.block[2];
  int64_t maskBits = 0;
  for (int64_t m : p.masks)
    maskBits |= m;
  const IndexExpr t0 = IndexExpr::symbol("$T0");
  IndexExpr row(0);
  const int64_t rows = topkRows(p, &row);
  const int64_t slots = waves * no * k * rows + threads;
  const int va = plannedScratch(scratch_, op, c.t, slots, DiagId::UnsupportedTopK);
  const int ia =
      va < 0 ? -1 : plannedScratch(scratch2_, op, ScalarType::I32, slots, DiagId::UnsupportedTopK);
  if (ia < 0)
    return;
  std::array<IndexExpr, 3> ids = {floorDiv(t0, w), IndexExpr::symbol("$T1"),
                                  IndexExpr::symbol("$T2")};
  auto linear = [&](const std::array<IndexExpr, 3> &id) {
    return id[0] + int64_t(d_.wavesPerBlock[0]) * (id[1] + int64_t(d_.wavesPerBlock[1]) * id[2]);
  };
  auto gep = [&](int a, const std::string &off, const std::string &ety) {
    std::string i64 = fresh(), ptr = fresh();
    line(i64 + " = arith.index_cast " + off + " : index to i64");
    line(ptr + " = llvm.getelementptr " + ldsBase(a) + "[" + i64 +
         "] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, " + ety);
    return ptr;
  };
  auto store = [&](int a, const std::string &v, const std::string &off, ScalarType t) {
    LdsScope scope(*this, a, /*write=*/true);
    line("llvm.store " + v + ", " + gep(a, off, mlirType(t)) + " {alignment = " +
         std::to_string(byteSize(t)) + " : i64} : " + mlirType(t) + ", !llvm.ptr<3>");
  };
  auto load = [&](int a, const std::string &off, ScalarType t) {
    LdsScope scope(*this, a, /*write=*/false);
    std::string r = fresh();
    line(r + " = llvm.load " + gep(a, off, mlirType(t)) + " {alignment = " +
         std::to_string(byteSize(t)) + " : i64} : !llvm.ptr<3> -> " + mlirType(t));
    return r;
  };
  // One lane per row stores; the others write their own thread's slot past the lists.
  std::string rep = fresh();
  line(rep + " = arith.cmpi eq, " + binop("andi", lowerIndex(t0), constIndex(maskBits)) + ", " +
       constIndex(0) + " : index");
  const IndexExpr tid = t0 + d_.block[0] * (IndexExpr::symbol("$T1") +
                                             d_.block[1] * IndexExpr::symbol("$T2"));
  const std::string own = lowerIndex(facts_.simplify(waves * no * k * rows + tid));
  for (int64_t oc = 0; oc < no; ++oc)
    for (int64_t r = 0; r < k; ++r) {
      std::string off = fresh();
      line(off + " = arith.select " + rep + ", " +
           lowerIndex(facts_.simplify(((linear(ids) * no + oc) * k + r) * rows + row)) + ", " +
           own + " : index");
      store(va, vals[oc][r], off, c.t);
      store(ia, idxs[oc][r], off, ScalarType::I32);
    }
  const std::string removed = constI32(INT32_MAX), lowest = identitySplat(c, 1);
  for (int64_t oc = 0; oc < no; ++oc) {
    std::vector<std::string> head(p.nw, constIndex(0)), base(p.nw);
    for (int64_t q = 0; q < p.nw; ++q) {
      std::array<IndexExpr, 3> other = ids;
      other[p.waveAxis] = IndexExpr(q);
      base[q] = lowerIndex(facts_.simplify((linear(other) * no + oc) * k * rows + row));
    }
    for (int64_t r = 0; r < k; ++r) {
      std::string bv, bi, bq;
      for (int64_t q = 0; q < p.nw; ++q) {
        std::string h = binop("minsi", head[q], constIndex(k - 1));
        std::string off = binop("addi", base[q], binop("muli", h, constIndex(rows)));
        std::string v = load(va, off, c.t), i = load(ia, off, ScalarType::I32);
        std::string live = cmpLt(head[q], constIndex(k)), lv = fresh(), li = fresh();
        line(lv + " = arith.select " + live + ", " + v + ", " + lowest + " : " + c.ety);
        line(li + " = arith.select " + live + ", " + i + ", " + removed + " : i32");
        if (q == 0) {
          bv = lv, bi = li, bq = constIndex(0);
          continue;
        }
        std::string take = topkBetter(c.t, lv, li, bv, bi), nv = fresh(), ni = fresh(), nq = fresh();
        line(nv + " = arith.select " + take + ", " + lv + ", " + bv + " : " + c.ety);
        line(ni + " = arith.select " + take + ", " + li + ", " + bi + " : i32");
        line(nq + " = arith.select " + take + ", " + constIndex(q) + ", " + bq + " : index");
        bv = nv, bi = ni, bq = nq;
      }
      vals[oc][r] = bv;
      idxs[oc][r] = bi;
      for (int64_t q = 0; q < p.nw && r + 1 < k; ++q) {
        std::string hit = fresh(), step = fresh();
        line(hit + " = arith.cmpi eq, " + bq + ", " + constIndex(q) + " : index");
        line(step + " = arith.select " + hit + ", " + constIndex(1) + ", " + constIndex(0) +
             " : index");
        head[q] = binop("addi", head[q], step);
      }
    }
  }
}

// The rows of a topk's lanes: the lane bits outside the butterfly, packed; `row` (when given)
// becomes a lane's row.
int64_t KernelEmitter::topkRows(const ScanPlan &p, IndexExpr *row) const {
  int64_t maskBits = 0;
  for (int64_t m : p.masks)
    maskBits |= m;
  const int64_t w = d_.groupSize;
  const IndexExpr lane = mod(IndexExpr::symbol("$T0"), w);
  int64_t rows = 1;
  for (int64_t b = 1; b < w; b *= 2)
    if (!(maskBits & b)) {
      if (row)
        *row = *row + floorDiv(mod(lane, 2 * b), b) * rows;
      rows *= 2;
    }
  return rows;
}

// Sizes, before emission (reduction_scratch.cpp, scratchIn), the scratch of a cumsum or topk
// whose row several waves share, from its operand's shape and the plan emission will make:
// cumsum keeps one total per wave, outer clone, unit and lane; topk one ranked entry per wave,
// outer clone, round and row plus a slot per thread, in two arrays (values, indices).
// scanAcrossWaves and topkAcrossWaves only look the tiles up.
void KernelEmitter::planScanScratch(const ir::Op &op, const RegVal &x) {
  const std::string dim = op.dims[0].str();
  const bool topk = op.kind == ir::OpKind::TopK;
  if (x.lazy || x.deferred || !x.layout.count(dim))
    return;
  auto cmb = combinerFor(topk ? ir::ReduceKind::Max : ir::ReduceKind::Sum, x.dtype);
  if (!cmb)
    return;
  ScanPlan p;
  probing_ = true;
  const bool planned = planScan(op, x, p);
  probing_ = false;
  if (!planned || p.nw <= 1 || (topk && p.groups.size() != 1))
    return;
  const int64_t waves = wavesPerWorkgroup();
  if (topk) {
    RegVal out;
    std::vector<std::vector<int64_t>> groups;
    if (!reducedShape(op, x, out, groups))
      return;
    const int64_t no = static_cast<int64_t>(clonesOver(out.cloneSyms).size());
    const int64_t threads = d_.block[0] * d_.block[1] * d_.block[2];
    const int64_t slots = waves * no * op.ivalue * topkRows(p, nullptr) + threads;
    scratchTile(scratch_, op, cmb->t, slots);
    scratchTile(scratch2_, op, ScalarType::I32, slots);
    return;
  }
  std::set<std::string> outerSyms = x.cloneSyms;
  outerSyms.erase("$i_" + dim);
  const int64_t no = static_cast<int64_t>(clonesOver(outerSyms).size());
  int64_t nu = 0;
  for (const auto &u : p.units)
    nu += static_cast<int64_t>(u.size());
  scratchTile(scratch_, op, cmb->t, waves * no * nu * d_.groupSize);
}

bool KernelEmitter::emitTopK(const ir::Op &op) {
  const RegVal &x = values_.at(op.operands[0]);
  const std::string dim = op.dims[0].str();
  auto refuse = [&](const std::string &why) {
    return unsupported(DiagId::UnsupportedTopK, "a topk over " + dim + " " + why, op.loc);
  };
  if (x.lazy || x.deferred || !x.layout.count(dim))
    return refuse("of a value not held along it in registers");
  const ScalarType t = x.dtype;
  // Opaque floats (fp8, bf16 on AMD) keep their bits through the selects and shuffles and are
  // compared widened to f32 (topkBetter), which orders them exactly as the type does.
  auto cmb = combinerFor(ir::ReduceKind::Max, t);
  if (!cmb)
    return refuse(std::string("of ") + scalarTypeName(t) + " values");
  ScanPlan p;
  if (!planScan(op, x, p))
    return false;
  if (p.groups.size() != 1)
    return refuse("whose lanes hold several rows");
  RegVal out;
  std::vector<std::vector<int64_t>> groups;
  if (!reducedShape(op, x, out, groups))
    return refuse("of a value whose other coordinates are not spread evenly");
  const int64_t k = op.ivalue;
  const ir::Dim &kd = op.dims[1];
  out.layout[kd.str()] = DimIndex{kd, IndexExpr::symbol("$g"), k};
  out.vecDim = kd.str();
  out.elems = k;
  RegVal idxOut = out;
  idxOut.dtype = ScalarType::I32;
  const std::string cloneSym = "$i_" + dim;
  const DimIndex &rowDi = x.layout.at(dim);
  const std::string lowest = identitySplat(*cmb, 1), removed = constI32(INT32_MAX);
  const std::vector<CloneAssign> outer = clonesOver(out.cloneSyms);
  std::vector<std::vector<std::string>> allVals, allIdxs; // [outer clone][round]
  for (const auto &oa : outer) {
    std::vector<std::string> val, idx; // every element of the thread's row
    for (int64_t cl = 0; cl < p.ncl; ++cl) {
      CloneAssign a = oa;
      if (x.cloneSyms.count(cloneSym))
        a[cloneSym] = cl;
      const std::string v = operandAt(x, a, p.e), mask = rowMask(rowDi, a, p.e);
      for (int64_t g = 0; g < p.e; ++g) {
        std::string i = fresh();
        line(i + " = arith.index_cast " + lowerIndex(indexAt(rowDi.start, a, g)) + " : index to i32");
        std::string ev = p.e == 1 ? v : extractElem(v, t, p.e, g);
        if (!mask.empty()) {
          std::string in = p.e == 1 ? mask : extractElem(mask, ScalarType::I1, p.e, g);
          std::string sv = fresh(), si = fresh();
          line(sv + " = arith.select " + in + ", " + ev + ", " + lowest + " : " + cmb->ety);
          line(si + " = arith.select " + in + ", " + i + ", " + removed + " : i32");
          ev = sv;
          i = si;
        }
        val.push_back(ev);
        idx.push_back(i);
      }
    }
    std::vector<std::string> vals, idxs;
    for (int64_t round = 0; round < k; ++round) {
      std::string bv = val[0], bi = idx[0];
      auto take = [&](const std::string &v, const std::string &i) {
        std::string c = topkBetter(t, v, i, bv, bi), nv = fresh(), ni = fresh();
        line(nv + " = arith.select " + c + ", " + v + ", " + bv + " : " + cmb->ety);
        line(ni + " = arith.select " + c + ", " + i + ", " + bi + " : i32");
        bv = nv;
        bi = ni;
      };
      for (size_t e = 1; e < val.size(); ++e)
        take(val[e], idx[e]);
      for (int64_t m : p.masks)
        take(shuffleXor(bv, t, m), shuffleXor(bi, ScalarType::I32, m));
      vals.push_back(bv);
      idxs.push_back(bi);
      if (round + 1 == k)
        break;
      for (size_t e = 0; e < val.size(); ++e) {
        std::string hit = fresh(), nv = fresh(), ni = fresh();
        line(hit + " = arith.cmpi eq, " + idx[e] + ", " + bi + " : i32");
        line(nv + " = arith.select " + hit + ", " + lowest + ", " + val[e] + " : " + cmb->ety);
        line(ni + " = arith.select " + hit + ", " + removed + ", " + idx[e] + " : i32");
        val[e] = nv;
        idx[e] = ni;
      }
    }
    allVals.push_back(vals);
    allIdxs.push_back(idxs);
  }
  if (p.nw > 1)
    topkAcrossWaves(op, p, *cmb, allVals, allIdxs);
  if (failed_)
    return false;
  for (size_t oc = 0; oc < outer.size(); ++oc) {
    for (auto &i : allIdxs[oc]) { // a place no element filled: index -1
      std::string none = fresh(), r = fresh();
      line(none + " = arith.cmpi eq, " + i + ", " + removed + " : i32");
      line(r + " = arith.select " + none + ", " + constI32(-1) + ", " + i + " : i32");
      i = r;
    }
    out.clones[cloneKey(outer[oc], out.cloneSyms)] = buildVector(allVals[oc], t);
    idxOut.clones[cloneKey(outer[oc], idxOut.cloneSyms)] =
        buildVector(allIdxs[oc], ScalarType::I32);
  }
  values_[op.results[0]] = std::move(out);
  values_[op.results[1]] = std::move(idxOut);
  return !failed_;
}

} // namespace wave::codegen::detail
