// Reductions: in-thread, butterfly shuffles across lanes, cross-wave through shared memory.
#include "codegen/emitter/kernel_emitter.h"

namespace wave::codegen::detail {

// ---- reductions ----------------------------------------------------------------------------
//
// sum/max/min over dim D of a value in any layout the emitter holds (docs/hardware.md section 4.1):
//  1. masked-off elements (a row shorter than its tile) become the combiner's identity;
//  2. the clones along D are combined element-wise, then in-thread the lane's elements whose
//     coordinates on the other dims agree (the result may keep several elements per lane);
//  3. the lanes: D's index is evaluated for every lane of a wave (other symbols 0); each lane
//     bit whose flip changes D but no other coordinate is one butterfly step `gpu.shuffle xor`
//     2^b (f16/bf16 travel as f32, narrow integers as i32, 64-bit values as two i32 halves);
//  4. the waves, when D's index depends on a wave id: every lane stores its partial result in
//     a small shared-memory scratch (its own slot), a barrier (placed by the analysis of
//     barrier_insertion.h), then every thread combines the slots of the waves along D in wave
//     order, so that every thread holds the same bits;
//  5. `init`, combined last.
// Accumulation stays in the element type (the language's rule). The result drops D and is
// uniform along it, so `broadcast` back is the value itself. A streamed operand (a dynamic or
// long row) is first accumulated chunk by chunk in a loop (emitStreamedReduce).

std::optional<KernelEmitter::Combiner> KernelEmitter::combinerFor(ir::ReduceKind k, ScalarType t) {
  Combiner c;
  c.t = t;
  c.ety = mlirType(t);
  if (c.ety.empty() || t == ScalarType::I1 || t == ScalarType::Index)
    return std::nullopt;
  if (opaque(t)) {
    // fp8 bytes and bf16 as i16 (AMD): combine() widens both to f32, combines there and rounds
    // back, so each step rounds to the element type as native arithmetic would. The identity
    // is the type's bits of 0, -inf and +inf, or of the largest finite value where the type
    // has no infinity (max(x, -448) is x for every f8e4m3fn x).
    auto [negHuge, posHuge] = [&]() -> std::pair<int64_t, int64_t> {
      switch (t) {
      case ScalarType::BF16: return {int16_t(0xFF80), 0x7F80};
      case ScalarType::F8E5M2: return {int8_t(0xFC), 0x7C};
      case ScalarType::F8E4M3FN: return {int8_t(0xFE), 0x7E};
      default: return {int8_t(0xFF), 0x7F}; // the fnuz kinds
      }
    }();
    const char *fop[] = {"arith.addf", "arith.maximumf", "arith.minimumf"};
    const int k3 = k == ir::ReduceKind::Sum ? 0 : k == ir::ReduceKind::Max ? 1 : 2;
    c.op = fop[k3];
    c.identity = std::to_string(k3 == 0 ? 0 : k3 == 1 ? negHuge : posHuge);
    return c; // no vkind: opaque rows are combined element by element
  }
  const bool fl = isFloat(t), sg = isSigned(t);
  const unsigned w = bitWidth(t);
  auto intLimit = [&](bool maxLimit) -> std::string {
    if (!sg)
      return maxLimit ? "-1" : "0"; // all ones is the largest unsigned value
    if (w == 64)
      return maxLimit ? "9223372036854775807" : "-9223372036854775808";
    int64_t m = (int64_t(1) << (w - 1));
    return std::to_string(maxLimit ? m - 1 : -m);
  };
  switch (k) {
  case ir::ReduceKind::Sum:
    c.vkind = "add";
    c.op = fl ? "arith.addf" : "arith.addi";
    c.identity = fl ? "0.0" : "0";
    break;
  case ir::ReduceKind::Max:
    c.vkind = fl ? "maximumf" : sg ? "maxsi" : "maxui";
    c.op = fl ? "arith.maximumf" : sg ? "arith.maxsi" : "arith.maxui";
    c.identity = fl ? floatLiteral(-INFINITY, t) : intLimit(false);
    break;
  case ir::ReduceKind::Min:
    c.vkind = fl ? "minimumf" : sg ? "minsi" : "minui";
    c.op = fl ? "arith.minimumf" : sg ? "arith.minsi" : "arith.minui";
    c.identity = fl ? floatLiteral(INFINITY, t) : intLimit(true);
    break;
  }
  return c;
}

std::string KernelEmitter::combine(const Combiner &c, const std::string &a, const std::string &b,
                                   int64_t e) {
  if (opaque(c.t)) {
    const ScalarType F32 = ScalarType::F32;
    std::string wa = narrowToF32(a, c.t, e), wb = narrowToF32(b, c.t, e), r = fresh();
    line(r + " = " + c.op + " " + wa + ", " + wb + " : " + vecType(F32, e));
    return floatToNarrow(r, F32, c.t, e);
  }
  std::string r = fresh();
  line(r + " = " + c.op + " " + a + ", " + b + " : " + vecType(c.t, e));
  return r;
}

std::string KernelEmitter::identitySplat(const Combiner &c, int64_t e) {
  std::string r = fresh();
  line(r + " = arith.constant " + (e == 1 ? c.identity : "dense<" + c.identity + ">") + " : " +
       vecType(c.t, e));
  return r;
}

std::string KernelEmitter::rowMask(const DimIndex &di, const CloneAssign &a, int64_t e) {
  if (!di.masked)
    return "";
  auto at = [&](int64_t g) {
    std::map<std::string, IndexExpr> subs{{"$g", IndexExpr(g)}};
    for (const auto &[name, value] : subs_)
      subs[name] = value;
    for (const auto &[sname, v] : a)
      subs[sname] = IndexExpr(v);
    return facts_.simplify(di.start.subs(subs));
  };
  const IndexExpr base = at(0);
  const std::string size = lowerIndex(di.dim.size);
  if (e == 1)
    return cmpLt(lowerIndex(base), size);
  // Element g sits at base + off[g]: compare the constant offsets with size - base at once.
  std::vector<int64_t> off;
  for (int64_t g = 0; g < e; ++g) {
    auto o = facts_.simplify(at(g) - base).asInteger();
    if (!o)
      break;
    off.push_back(*o);
  }
  if (static_cast<int64_t>(off.size()) == e) {
    const int64_t lo = std::min<int64_t>(0, *std::min_element(off.begin(), off.end()));
    const int64_t hi = *std::max_element(off.begin(), off.end()) + 1;
    std::string lim = binop("subi", size, lowerIndex(base));
    lim = binop("maxsi", binop("minsi", lim, constIndex(hi)), constIndex(lo));
    std::string l32 = fresh(), splat = fresh(), offs = fresh(), m = fresh(), list;
    for (int64_t g = 0; g < e; ++g)
      list += (g ? ", " : "") + std::to_string(off[g]);
    line(l32 + " = arith.index_cast " + lim + " : index to i32");
    line(splat + " = vector.splat " + l32 + " : vector<" + std::to_string(e) + "xi32>");
    line(offs + " = arith.constant dense<[" + list + "]> : vector<" + std::to_string(e) + "xi32>");
    line(m + " = arith.cmpi slt, " + offs + ", " + splat + " : vector<" + std::to_string(e) +
         "xi32>");
    return m;
  }
  std::string m = fresh();
  line(m + " = arith.constant dense<false> : vector<" + std::to_string(e) + "xi1>");
  for (int64_t g = 0; g < e; ++g) {
    std::string c = cmpLt(lowerIndex(at(g)), size), n = fresh();
    line(n + " = vector.insert " + c + ", " + m + " [" + std::to_string(g) + "] : i1 into vector<" +
         std::to_string(e) + "xi1>");
    m = n;
  }
  return m;
}

std::string KernelEmitter::maskToIdentity(const Combiner &c, const DimIndex &di,
                                          const CloneAssign &a, const std::string &v,
                                          int64_t e) {
  std::string m = rowMask(di, a, e);
  if (m.empty())
    return v;
  std::string id = identitySplat(c, e), r = fresh();
  line(r + " = arith.select " + m + ", " + v + ", " + id + " : " + vecType(ScalarType::I1, e) +
       ", " + vecType(c.t, e));
  return r;
}

// gpu.shuffle moves i32, i64, f32 and f64; MLIR 19 lowers only the 32-bit ones to both ROCDL and
// NVVM, so narrower values are widened (exactly) and 64-bit ones split into halves.
std::string KernelEmitter::shuffle(const char *mode, const std::string &v, ScalarType t,
                                   const std::string &offset) {
  const std::string ety = mlirType(t);
  auto move = [&](const std::string &x, const std::string &ty) {
    return lower_->shuffle32(mode, x, ty, offset, d_.waveSize);
  };
  auto cast = [&](const char *op, const std::string &x, const std::string &from,
                  const std::string &to) {
    std::string r = fresh();
    line(r + " = " + op + " " + x + " : " + from + " to " + to);
    return r;
  };
  const unsigned w = t == ScalarType::I1 ? 1 : bitWidth(t);
  if (w == 32)
    return move(v, ety);
  if (w < 32 && isFloat(t) && !opaque(t))
    return cast("arith.truncf", move(cast("arith.extf", v, ety, "f32"), "f32"), "f32", ety);
  if (w < 32)
    return cast("arith.trunci", move(cast("arith.extui", v, ety, "i32"), "i32"), "i32", ety);
  // 64 bits: two 32-bit halves.
  std::string bits = isFloat(t) ? cast("arith.bitcast", v, ety, "i64") : v;
  std::string c32 = fresh(), hiBits = fresh();
  line(c32 + " = arith.constant 32 : i64");
  line(hiBits + " = arith.shrui " + bits + ", " + c32 + " : i64");
  std::string lo = move(cast("arith.trunci", bits, "i64", "i32"), "i32");
  std::string hi = move(cast("arith.trunci", hiBits, "i64", "i32"), "i32");
  std::string lo64 = cast("arith.extui", lo, "i32", "i64"), hi64 = cast("arith.extui", hi, "i32", "i64");
  std::string sh = fresh(), r = fresh();
  line(sh + " = arith.shli " + hi64 + ", " + c32 + " : i64");
  line(r + " = arith.ori " + sh + ", " + lo64 + " : i64");
  return isFloat(t) ? cast("arith.bitcast", r, "i64", ety) : r;
}

std::string KernelEmitter::shuffleXor(const std::string &v, ScalarType t, int64_t mask) {
  std::string o = fresh();
  line(o + " = arith.constant " + std::to_string(mask) + " : i32");
  return shuffle("xor", v, t, o);
}

namespace {
// The coordinates of one element of a layout for concrete thread ids and element index, with
// every other symbol 0 (workgroup, loop and clone terms are the same for the lanes compared).
struct LayoutProbe {
  std::vector<std::pair<std::string, IndexExpr>> dims; // reduced dim first
  std::set<std::string> syms;
  std::optional<std::vector<int64_t>> at(int64_t t0, int64_t t1, int64_t t2, int64_t g) const {
    std::map<std::string, int64_t> vals;
    for (const auto &s : syms)
      vals[s] = 0;
    vals["$T0"] = t0;
    vals["$T1"] = t1;
    vals["$T2"] = t2;
    vals["$g"] = g;
    std::vector<int64_t> out;
    for (const auto &[name, e] : dims) {
      auto v = e.evaluate(vals);
      if (!v)
        return std::nullopt;
      out.push_back(*v);
    }
    return out;
  }
};
} // namespace

// Steps 3 and 4 of reduceHeld, planned: the lane bits (butterfly steps) and the workgroup axes
// whose waves hold the other elements of D. False (after reporting) for a layout they cannot
// combine.
bool KernelEmitter::reduceSpread(const ir::Op &op, const RegVal &x, const DimIndex &rowDi,
                                 const std::vector<std::vector<int64_t>> &groups,
                                 std::vector<int64_t> &laneMasks, std::vector<int> &waveAxes) {
  const std::string dim = op.dims[0].str();
  const int64_t eo = static_cast<int64_t>(groups.size());
  LayoutProbe probe;
  probe.dims.push_back({dim, rowDi.start});
  for (const auto &[name, di] : x.layout)
    if (name != dim)
      probe.dims.push_back({name, di.start});
  for (const auto &[name, pe] : probe.dims)
    for (const auto &s : pe.freeSymbols())
      if (s != "$T0" && s != "$T1" && s != "$T2" && s != "$g")
        probe.syms.insert(s);
  const int64_t w = d_.groupSize; // lanes of one wave of the constraints (a warpgroup: 4 waves)
  if (rowDi.start.dependsOn("$T0") || rowDi.start.dependsOn("$T1") ||
      rowDi.start.dependsOn("$T2")) {
    auto sameOther = [](const std::vector<int64_t> &a, const std::vector<int64_t> &b) {
      return std::equal(a.begin() + 1, a.end(), b.begin() + 1);
    };
    std::vector<std::vector<std::vector<int64_t>>> co(w); // [lane][group] -> coordinates
    for (int64_t l = 0; l < w; ++l)
      for (int64_t j = 0; j < eo; ++j) {
        auto v = probe.at(l, 0, 0, groups[j][0]);
        if (!v)
          return unsupported(DiagId::UnsupportedReductionLayout,
                             "a reduction over " + dim + " whose index " + rowDi.start.str() +
                                 " cannot be evaluated per lane",
                             op.loc);
        co[l].push_back(*v);
      }
    // A lane bit that moves D for every lane and no other coordinate is a butterfly step; one
    // that moves neither is a replication and one that moves other coordinates pairs lanes of
    // different results (both skipped); one that moves D for only some lanes is unsupported.
    // The orbit check below then proves that the steps meet every position of D once.
    for (int64_t m = 1; m < w; m *= 2) {
      bool allOther = true, allD = true, anyD = false;
      for (int64_t l = 0; l < w; ++l)
        for (int64_t j = 0; j < eo; ++j) {
          bool so = sameOther(co[l][j], co[l ^ m][j]), sd = co[l][j][0] == co[l ^ m][j][0];
          allOther &= so;
          allD &= !sd;
          anyD |= !sd;
        }
      if (allOther && allD && m >= static_cast<int64_t>(d_.waveSize))
        return unsupported(DiagId::UnsupportedReductionLayout,
                           "a reduction over " + dim + " across the waves of a warpgroup (" +
                               rowDi.start.str() + ")",
                           op.loc);
      if (allOther && allD)
        laneMasks.push_back(m);
      else if (allOther && anyD)
        return unsupported(DiagId::UnsupportedReductionLayout,
                           "a reduction over " + dim + " in a lane layout (" +
                               rowDi.start.str() + ") that a butterfly cannot combine",
                           op.loc);
    }
    // Every lane's butterfly orbit must meet each D position of its class exactly once.
    for (int64_t l = 0; l < w; ++l)
      for (int64_t j = 0; j < eo; ++j) {
        std::set<int64_t> orbit, cls;
        size_t n = 1;
        for (size_t k = 0; k < laneMasks.size(); ++k)
          n *= 2;
        for (size_t bits = 0; bits < n; ++bits) {
          int64_t p = l;
          for (size_t k = 0; k < laneMasks.size(); ++k)
            if (bits >> k & 1)
              p ^= laneMasks[k];
          orbit.insert(co[p][j][0]);
        }
        for (int64_t p = 0; p < w; ++p)
          if (sameOther(co[l][j], co[p][j]))
            cls.insert(co[p][j][0]);
        if (orbit.size() != n || orbit != cls)
          return unsupported(DiagId::UnsupportedReductionLayout,
                             "a reduction over " + dim + " in a lane layout (" +
                                 rowDi.start.str() + ") that a butterfly cannot combine",
                             op.loc);
      }
    for (int a = 0; a < 3; ++a) {
      const int64_t n = d_.wavesPerBlock[a];
      if (n <= 1)
        continue;
      auto waveAt = [&](int64_t k, int64_t l, int64_t g) {
        return probe.at(a == 0 ? k * w + l : l, a == 1 ? k : 0, a == 2 ? k : 0, g);
      };
      bool moves = false, othersMove = false;
      for (int64_t k = 1; k < n; ++k)
        for (int64_t l = 0; l < w; ++l)
          for (int64_t j = 0; j < eo; ++j) {
            auto p = waveAt(0, l, groups[j][0]), q = waveAt(k, l, groups[j][0]);
            if (!p || !q)
              return unsupported(DiagId::UnsupportedReductionLayout,
                                 "a reduction over " + dim + " whose index cannot be evaluated",
                                 op.loc);
            moves |= (*p)[0] != (*q)[0];
            othersMove |= !sameOther(*p, *q);
          }
      if (moves && othersMove)
        return unsupported(DiagId::UnsupportedReductionLayout,
                           "a reduction over " + dim + " whose waves also move along another dim",
                           op.loc);
      if (moves)
        waveAxes.push_back(a);
    }
  }
  return true;
}

// Steps 1 to 3 of reduceHeld for each clone of the result: the clones along D combined, the
// lane's elements of each group combined, then the butterfly over `laneMasks`. `masked`: the
// row mask of `rowDi` applies. Returns [clone][element].
std::vector<std::vector<std::string>>
KernelEmitter::reduceInLanes(const RegVal &x, const std::string &dim, const Combiner &c,
                             const DimIndex &rowDi, bool masked,
                             const std::vector<std::vector<int64_t>> &groups,
                             const std::vector<int64_t> &laneMasks,
                             const std::vector<CloneAssign> &outClones) {
  const std::string cloneSym = "$i_" + dim;
  const ScalarType t = x.dtype;
  const int64_t e = std::max<int64_t>(x.elems, 1);
  const int64_t eo = static_cast<int64_t>(groups.size());
  std::vector<std::vector<std::string>> parts; // [clone][element]
  for (const auto &a : outClones) {
    std::vector<CloneAssign> along(1, a);
    if (x.cloneSyms.count(cloneSym)) {
      along.clear();
      for (const auto &cc : clonesOver({cloneSym})) {
        CloneAssign b = a;
        b[cloneSym] = cc.at(cloneSym);
        along.push_back(b);
      }
    }
    std::string acc;
    for (const auto &cl : along) {
      std::string v = operandAt(x, cl, e);
      if (masked)
        v = maskToIdentity(c, rowDi, cl, v, e);
      acc = acc.empty() ? v : combine(c, acc, v, e);
    }
    std::vector<std::string> elems;
    auto extract = [&](int64_t g) {
      std::string r = fresh();
      line(r + " = vector.extract " + acc + "[" + std::to_string(g) + "] : " + c.ety + " from " +
           vecType(t, e));
      return r;
    };
    if (e == 1) {
      elems.push_back(acc);
    } else if (eo == 1 && !c.vkind.empty()) {
      std::string r = fresh();
      line(r + " = vector.reduction <" + c.vkind + ">, " + acc + " : " + vecType(t, e) +
           " into " + c.ety);
      elems.push_back(r);
    } else {
      for (const auto &grp : groups) {
        std::string r;
        for (int64_t g : grp)
          r = r.empty() ? extract(g) : combine(c, r, extract(g));
        elems.push_back(r);
      }
    }
    for (int64_t m : laneMasks)
      for (auto &v : elems)
        v = combine(c, v, shuffleXor(v, t, m));
    parts.push_back(elems);
  }
  return parts;
}

// Step 4 of reduceHeld: the partial results `parts` ([clone][element], `eo` elements) of the
// waves along the axes `waveAxes`, combined through a shared-memory scratch (one per reduction).
bool KernelEmitter::reduceAcrossWaves(const ir::Op &op, const Combiner &c, int64_t eo,
                                      const std::vector<int> &waveAxes,
                                      std::vector<std::vector<std::string>> &parts) {
  const int64_t nc = static_cast<int64_t>(parts.size());
  const ScalarType t = c.t;
  const int64_t w = d_.groupSize;
  // The scratch the shared-memory plan sized before emission (reduction_scratch.cpp).
  const int alloc =
      plannedScratch(scratch_, op, t, scratchSlots(nc, eo), DiagId::UnsupportedReductionLayout);
  if (alloc < 0)
    return false;
  const IndexExpr t0 = IndexExpr::symbol("$T0");
  using WaveIds = std::array<IndexExpr, 3>; // wave ids along workgroup axes 0, 1, 2
  const WaveIds ids = {floorDiv(t0, w), IndexExpr::symbol("$T1"), IndexExpr::symbol("$T2")};
  auto linear = [&](const WaveIds &id) {
    return id[0] + int64_t(d_.wavesPerBlock[0]) * (id[1] + int64_t(d_.wavesPerBlock[1]) * id[2]);
  };
  const IndexExpr lane = mod(t0, w);
  auto slot = [&](const IndexExpr &wave, int64_t ci, int64_t j) {
    return facts_.simplify((wave * (nc * eo) + ci * eo + j) * w + lane);
  };
  auto addr = [&](const IndexExpr &off) {
    std::string i64 = fresh(), p = fresh();
    line(i64 + " = arith.index_cast " + lowerIndex(off) + " : index to i64");
    line(p + " = llvm.getelementptr " + ldsBase(alloc) + "[" + i64 +
         "] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, " + c.ety);
    return p;
  };
  const std::string align = std::to_string(byteSize(t));
  {
    LdsScope scope(*this, alloc, /*write=*/true);
    for (int64_t ci = 0; ci < nc; ++ci)
      for (int64_t j = 0; j < eo; ++j)
        line("llvm.store " + parts[ci][j] + ", " + addr(slot(linear(ids), ci, j)) +
             " {alignment = " + align + " : i64} : " + c.ety + ", !llvm.ptr<3>");
  }
  // The waves of this thread's group, in the same order for every thread: its own wave ids
  // except along the axes of D, which take every value.
  std::vector<WaveIds> group(1, ids);
  for (int a : waveAxes) {
    std::vector<WaveIds> next;
    for (const auto &g : group)
      for (int64_t k = 0; k < d_.wavesPerBlock[a]; ++k) {
        WaveIds n = g;
        n[a] = IndexExpr(k);
        next.push_back(n);
      }
    group = std::move(next);
  }
  LdsScope scope(*this, alloc, /*write=*/false);
  for (int64_t ci = 0; ci < nc; ++ci)
    for (int64_t j = 0; j < eo; ++j) {
      std::string acc;
      for (const auto &wave : group) {
        std::string v = fresh();
        line(v + " = llvm.load " + addr(slot(linear(wave), ci, j)) + " {alignment = " + align +
             " : i64} : !llvm.ptr<3> -> " + c.ety);
        acc = acc.empty() ? v : combine(c, acc, v);
      }
      parts[ci][j] = acc;
    }
  return !failed_;
}

// The shape of reduction `op` of x (its dim D = op.dims[0]): the lane's elements with equal
// coordinates on the other dims form `groups`, one result element each, spaced evenly (false
// when they are not). No code; the carried-shapes step (carried_shapes.cpp) uses it too.
bool KernelEmitter::reducedShape(const ir::Op &op, const RegVal &x, RegVal &out,
                                 std::vector<std::vector<int64_t>> &groups) const {
  const std::string dim = op.dims[0].str();
  const int64_t e = std::max<int64_t>(x.elems, 1);
  sym::Facts gf = facts_;
  gf.setRange("$g", 0, e - 1);
  auto others = [&](int64_t g) {
    std::string key;
    for (const auto &[name, di] : x.layout)
      if (name != dim)
        key += gf.simplify(di.start.subs({{"$g", IndexExpr(g)}})).str() + ";";
    return key;
  };
  groups.clear();
  std::map<std::string, size_t> byKey;
  for (int64_t g = 0; g < e; ++g) {
    auto [it, added] = byKey.emplace(others(g), groups.size());
    if (added)
      groups.emplace_back();
    groups[it->second].push_back(g);
  }
  const int64_t eo = static_cast<int64_t>(groups.size());
  const int64_t step = eo > 1 ? groups[1][0] : 1;
  for (int64_t j = 0; j < eo; ++j)
    if (groups[j][0] != j * step || groups[j].size() != groups[0].size())
      return false;
  out = RegVal();
  out.dtype = x.dtype;
  out.elems = eo;
  out.cloneSyms = x.cloneSyms;
  out.cloneSyms.erase("$i_" + dim);
  sym::Facts of = facts_;
  of.setRange("$g", 0, eo - 1);
  for (const auto &[name, di] : x.layout) {
    if (name == dim)
      continue;
    DimIndex d = di;
    d.start = of.simplify(di.start.subs({{"$g", IndexExpr::symbol("$g") * step}}));
    d.elements = d.start.dependsOn("$g") ? eo : 1;
    if (d.start.dependsOn("$g"))
      out.vecDim = name;
    out.layout[name] = d;
  }
  return true;
}

bool KernelEmitter::reduceHeld(const ir::Op &op, const RegVal &x, bool masked) {
  const std::string dim = op.dims[0].str();
  const ScalarType t = x.dtype;
  auto cmb = combinerFor(op.reduce, t);
  if (!cmb)
    return unsupported(std::string("a reduction of ") + scalarTypeName(t) + " values on " +
                           target_.name,
                       op.loc);
  const Combiner &c = *cmb;
  const RegVal *init = op.operands.size() > 1 ? &values_.at(op.operands[1]) : nullptr;
  if (init && init->lazy)
    return unsupported(DiagId::UnsupportedStreamedRow,
                       "a reduction init that is a streamed row", op.loc);
  if (x.deferred)
    return unsupported(DiagId::UnsupportedReductionLayout,
                       "a reduction of a value computed from thread indices only", op.loc);
  auto lay = x.layout.find(dim);
  if (lay == x.layout.end()) {
    // Uniform along D: max and min of copies are the value itself (combined with init below).
    if (op.reduce == ir::ReduceKind::Sum)
      return unsupported(DiagId::UnsupportedReductionLayout,
                         "a sum over " + dim + " of a value uniform along it", op.loc);
  }
  const DimIndex rowDi = lay == x.layout.end() ? DimIndex{} : lay->second;
  std::vector<std::vector<int64_t>> groups;
  RegVal out;
  if (!reducedShape(op, x, out, groups))
    return unsupported(DiagId::UnsupportedReductionLayout, "a reduction over " + dim +
                           " of a value whose other coordinates are not spread evenly over "
                           "the lane's elements",
                       op.loc);
  const int64_t eo = out.elems;

  // The lanes and waves that hold the other elements of D (step 3 and 4).
  std::vector<int64_t> laneMasks;
  std::vector<int> waveAxes; // workgroup axes whose wave id moves along D
  if (!reduceSpread(op, x, rowDi, groups, laneMasks, waveAxes))
    return false;

  // Steps 1 and 2, then 3, per result clone.
  const std::vector<CloneAssign> outClones = clonesOver(out.cloneSyms);
  std::vector<std::vector<std::string>> parts = // [clone][element]
      reduceInLanes(x, dim, c, rowDi, masked && lay != x.layout.end(), groups, laneMasks,
                    outClones);

  // Step 4: across the waves along D, through a shared-memory scratch.
  if (!waveAxes.empty() && !reduceAcrossWaves(op, c, eo, waveAxes, parts))
    return false;

  // Step 5: the vector of the lane's results, then init (in the result's layout).
  RegVal initIn;
  if (init && !convertTo(*init, out, initIn, op.loc))
    return false;
  for (size_t ci = 0; ci < outClones.size(); ++ci) {
    const auto &a = outClones[ci];
    std::string r = parts[ci][0];
    if (eo > 1) {
      r = identitySplat(c, eo);
      for (int64_t j = 0; j < eo; ++j) {
        std::string n = fresh();
        line(n + " = vector.insert " + parts[ci][j] + ", " + r + " [" + std::to_string(j) +
             "] : " + c.ety + " into " + vecType(t, eo));
        r = n;
      }
    }
    if (init)
      r = combine(c, r, operandAt(initIn, a, eo), eo);
    out.clones[cloneKey(a, out.cloneSyms)] = r;
  }
  values_[op.results[0]] = std::move(out);
  return !failed_;
}

bool KernelEmitter::emitReduce(const ir::Op &op) {
  const RegVal &x = values_.at(op.operands[0]);
  if (x.lazy)
    return emitStreamedReduce(op);
  return reduceHeld(op, x, /*masked=*/true);
}

} // namespace wave::codegen::detail
