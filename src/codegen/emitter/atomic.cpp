// Atomics (`atomic_add`, `atomic_min`, `atomic_max`) on global memory: one read-modify-write per element a
// thread holds in the access's layout (the layout a write of the value would have: access.cpp,
// emitWrite), under an scf.if on the element's bounds, returning the old value (0 for a
// masked-off element, which no output sees). docs/language.md section 8 has the rules.
//
// An element must be updated once. A layout that holds an element in several lanes (a
// reduction result that every lane of its row holds) updates it from the lowest such lane only;
// a tensor that lacks a dim along which workgroups are split would be updated once per
// workgroup, and is refused, as is any layout the owner rule cannot make one-to-one.
#include "codegen/emitter/kernel_emitter.h"

namespace wave::codegen::detail {

namespace {
using Tuple = std::vector<int64_t>;

// The element (index per tensor dim) that element g of clone `a` of thread (t0, t1, t2) updates;
// every other symbol is 0 (workgroup ids, loop counters: the same for a workgroup's threads).
struct ElementProbe {
  const std::vector<DimIndex> &dims;
  std::map<std::string, int64_t> base;
  std::optional<Tuple> at(const int64_t t[3], const CloneAssign &a, int64_t g) const {
    std::map<std::string, int64_t> vals = base;
    vals["$T0"] = t[0];
    vals["$T1"] = t[1];
    vals["$T2"] = t[2];
    vals["$g"] = g;
    for (const auto &[s, v] : a)
      vals[s] = v;
    Tuple out;
    for (const auto &di : dims) {
      auto v = di.start.evaluate(vals);
      if (!v)
        return std::nullopt;
      out.push_back(*v);
    }
    return out;
  }
};
} // namespace

// Per thread axis, the thread-id bits that do not change which element a thread updates (lanes
// that hold copies). False (after reporting) when the copies cannot be reduced to one owner.
bool KernelEmitter::atomicOwners(const ir::Op &op, const Access &acc,
                                 const std::vector<CloneAssign> &clones, int64_t owners[3]) {
  const char *what = "an atomic";
  for (const auto &w : k_.workgroups) {
    bool split = true;
    if (auto n = w.dim.size.asInteger())
      split = *n > w.tile;
    bool follows = false;
    for (const auto &di : acc.dims)
      follows |= di.start.dependsOn("$WG" + std::to_string(w.axis));
    if (split && !follows)
      return unsupported(DiagId::UnsupportedAtomic,
                         std::string(what) + " on a tensor without dim " + w.dim.str() +
                             " while workgroups split " + w.dim.str() +
                             " (every workgroup along it would update the same elements)",
                         op.loc);
  }
  ElementProbe probe{acc.dims, {}};
  for (const auto &di : acc.dims)
    for (const auto &s : di.start.freeSymbols())
      probe.base[s] = 0;
  const int64_t block[3] = {machine_.block[0], machine_.block[1], machine_.block[2]};
  const int64_t threads = block[0] * block[1] * block[2];
  if (threads * static_cast<int64_t>(clones.size()) * acc.elems > (int64_t(1) << 18))
    return unsupported(DiagId::UnsupportedAtomic,
                       std::string(what) + " with more than 2^18 elements per workgroup", op.loc);
  auto forThreads = [&](const std::function<bool(const int64_t t[3])> &f) {
    int64_t t[3];
    for (t[2] = 0; t[2] < block[2]; ++t[2])
      for (t[1] = 0; t[1] < block[1]; ++t[1])
        for (t[0] = 0; t[0] < block[0]; ++t[0])
          if (!f(t))
            return false;
    return true;
  };
  for (int axis = 0; axis < 3; ++axis) {
    owners[axis] = 0;
    for (int64_t m = 1; m < block[axis]; m *= 2) {
      bool copies = forThreads([&](const int64_t t[3]) {
        int64_t u[3] = {t[0], t[1], t[2]};
        u[axis] ^= m;
        if (u[axis] >= block[axis])
          return true;
        return probe.at(t, clones.front(), 0) == probe.at(u, clones.front(), 0);
      });
      if (copies)
        owners[axis] |= m;
    }
  }
  // One owner per element: the threads with no owner bit set, over all clones and elements.
  std::set<Tuple> seen;
  bool oneToOne = forThreads([&](const int64_t t[3]) {
    for (int axis = 0; axis < 3; ++axis)
      if (t[axis] & owners[axis])
        return true;
    for (const auto &a : clones)
      for (int64_t g = 0; g < acc.elems; ++g) {
        auto e = probe.at(t, a, g);
        if (!e || !seen.insert(*e).second)
          return false;
      }
    return true;
  });
  if (!oneToOne)
    return unsupported(DiagId::UnsupportedAtomic,
                       std::string(what) + " whose value's layout holds an element in several "
                                           "lanes in a way the code generator cannot pick one of",
                       op.loc);
  return true;
}

// One element's read-modify-write at `ptr`; returns the old value.
std::string KernelEmitter::atomicElement(const ir::Op &op, ScalarType t, const std::string &ptr,
                                         const std::string &ptrTy, const std::string &val) {
  const std::string ty = mlirType(t), r = fresh();
  const bool max = op.kind == ir::OpKind::AtomicMax;
  if (op.kind == ir::OpKind::AtomicAdd || !isFloat(t)) {
    const std::string kind = op.kind == ir::OpKind::AtomicAdd ? (isFloat(t) ? "fadd" : "add")
                             : std::string(isSigned(t) ? "" : "u") + (max ? "max" : "min");
    line(r + " = llvm.atomicrmw " + kind + " " + ptr + ", " + val + " monotonic : " + ptrTy +
         ", " + ty);
    return r;
  }
  // A float minimum or maximum as the language defines it (NaN propagates, -0 below +0:
  // arith.minimumf / maximumf),
  // which no atomic instruction does: a compare-exchange loop on the bits.
  const std::string ity = "i" + std::to_string(bitWidth(t)), init = fresh(), old = fresh(),
                    mn = fresh(), oi = fresh(), ni = fresh(), pair = fresh(), seen = fresh(),
                    ok = fresh(), again = fresh(), seenf = fresh();
  line(init + " = llvm.load " + ptr + " : " + ptrTy + " -> " + ty);
  line(r + " = scf.while (" + old + " = " + init + ") : (" + ty + ") -> " + ty + " {");
  const std::string saved = indent_;
  indent_ += "  ";
  line(mn + (max ? " = arith.maximumf " : " = arith.minimumf ") + old + ", " + val + " : " + ty);
  line(oi + " = arith.bitcast " + old + " : " + ty + " to " + ity);
  line(ni + " = arith.bitcast " + mn + " : " + ty + " to " + ity);
  line(pair + " = llvm.cmpxchg " + ptr + ", " + oi + ", " + ni + " monotonic monotonic : " +
       ptrTy + ", " + ity);
  line(seen + " = llvm.extractvalue " + pair + "[0] : !llvm.struct<(" + ity + ", i1)>");
  line(ok + " = llvm.extractvalue " + pair + "[1] : !llvm.struct<(" + ity + ", i1)>");
  line(again + " = arith.xori " + ok + ", " + constTrue() + " : i1");
  line(seenf + " = arith.bitcast " + seen + " : " + ity + " to " + ty);
  line("scf.condition(" + again + ") " + seenf + " : " + ty);
  indent_ = saved;
  const std::string arg = fresh();
  line("} do {");
  items_.push_back({indent_ + "^bb0(" + arg + ": " + ty + "):", lds_}); // a label takes no loc
  indent_ += "  ";
  line("scf.yield " + arg + " : " + ty);
  indent_ = saved;
  line("}");
  return r;
}

bool KernelEmitter::emitAtomic(const ir::Op &op) {
  Access acc;
  if (!prepareAccess(op, op.operands[1], acc))
    return false;
  const ScalarType t = acc.dtype;
  if (acc.mapped || acc.ptr != "!llvm.ptr<1>")
    return unsupported(DiagId::UnsupportedAtomic, "an atomic with a mapping or in shared memory",
                       op.loc);
  const RegVal &value = values_.at(op.operands[0]);
  if (value.dtype != t || opaque(t) || (bitWidth(t) != 32 && bitWidth(t) != 64))
    return unsupported(DiagId::UnsupportedAtomicType,
                       std::string(opKindName(op.kind)) + " on " + scalarTypeName(t) + " values",
                       op.loc);
  RegVal v;
  if (!convertTo(value, layoutFrom(acc.dims, acc.elems, t), v, op.loc))
    return false;
  std::set<std::string> syms = v.cloneSyms;
  for (const auto &di : acc.dims)
    for (const auto &s : di.start.freeSymbols())
      if (s.rfind("$i_", 0) == 0)
        syms.insert(s);
  const std::vector<CloneAssign> clones = clonesOver(syms);
  int64_t owners[3];
  if (!atomicOwners(op, acc, clones, owners))
    return false;
  const bool copies = owners[0] || owners[1] || owners[2];
  const bool oldUsed = !op.results.empty() && !op.results[0]->users.empty();
  if (copies && oldUsed)
    return unsupported(DiagId::UnsupportedAtomic,
                       "the old values of an atomic whose value several lanes hold (a row's "
                       "reduction result)",
                       op.loc);
  if (oldUsed && op.operands[0]->type.shape.size() != acc.dims.size())
    return unsupported(DiagId::UnsupportedAtomic,
                       "the old values of an atomic whose value is broadcast", op.loc);
  // The owner condition: no owner bit set in the thread ids.
  std::string owner;
  static const char *xyz[3] = {"x", "y", "z"};
  for (int axis = 0; axis < 3; ++axis) {
    if (!owners[axis])
      continue;
    std::string m = fresh(), z = fresh();
    line(m + " = arith.andi %tid_" + xyz[axis] + ", " + constIndex(owners[axis]) + " : index");
    line(z + " = arith.cmpi eq, " + m + ", " + constIndex(0) + " : index");
    owner = owner.empty() ? z : andAll({owner, z});
  }
  RegVal result = layoutFrom(acc.dims, acc.elems, t);
  result.cloneSyms = syms;
  const std::string ty = mlirType(t);
  for (const auto &a : clones) {
    const std::string x = operandAt(v, a, acc.elems);
    std::vector<std::string> olds;
    for (int64_t g = 0; g < acc.elems; ++g) {
      std::string cond = inBounds(acc, a, g);
      if (!owner.empty())
        cond = cond.empty() ? owner : andAll({cond, owner});
      const std::string val = extractElem(x, t, acc.elems, g);
      const std::string ptr = gep(acc, linearOffset(acc, a, g));
      if (cond.empty()) {
        olds.push_back(atomicElement(op, t, ptr, acc.ptr, val));
        continue;
      }
      const std::string r = fresh(), saved = indent_, zero = fresh();
      line(zero + " = arith.constant " + zeroLit(t) + " : " + ty);
      line(r + " = scf.if " + cond + " -> (" + ty + ") {");
      indent_ += "  ";
      line("scf.yield " + atomicElement(op, t, ptr, acc.ptr, val) + " : " + ty);
      indent_ = saved;
      line("} else {");
      indent_ += "  ";
      line("scf.yield " + zero + " : " + ty);
      indent_ = saved;
      line("}");
      olds.push_back(r);
    }
    result.clones[cloneKey(a, syms)] = buildVector(olds, t);
  }
  if (!op.results.empty())
    values_[op.results[0]] = std::move(result);
  return !failed_;
}

} // namespace wave::codegen::detail
