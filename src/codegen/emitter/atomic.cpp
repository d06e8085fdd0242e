// Atomics (`atomic_add`, `atomic_min`, `atomic_max`) on global memory and on `allocate`d
// shared-memory tiles (32-bit elements there; f16 and bf16 adds on global memory): one
// read-modify-write
// per element a thread holds in the access's layout (the layout a write of the value would
// have: access.cpp, emitWrite), under an scf.if on the element's bounds, returning the old value
// (0 for a masked-off element, which no output sees). docs/language.md section 15 has the rules.
//
// An element must be updated once: a layout that holds an element in several lanes (a
// reduction result that every lane of its row holds) updates it from the lanes with no owner
// bit set (passes/atomic_owners.cpp, which the legalize pass ran first to refuse the rest).
#include "codegen/emitter/kernel_emitter.h"
#include "passes/legalize.h"

namespace wave::codegen::detail {

// One element's read-modify-write at `ptr`; returns the old value.
std::string KernelEmitter::atomicElement(const ir::Op &op, ScalarType t, const std::string &ptr,
                                         const std::string &ptrTy, const std::string &val) {
  const std::string ty = mlirType(t), r = fresh();
  const bool max = op.kind == ir::OpKind::AtomicMax;
  if (op.kind == ir::OpKind::AtomicAdd && opaque(t)) {
    // bf16 held as i16 (AMD): the add is an atomicrmw fadd on bf16 (LLVM's atomic expansion
    // makes it a compare-exchange loop on the enclosing 32-bit word, the add in f32 rounded
    // to bf16), the bits passed through bit casts.
    const std::string x = fresh(), o = fresh();
    line(x + " = llvm.bitcast " + val + " : " + ty + " to bf16");
    line(o + " = llvm.atomicrmw fadd " + ptr + ", " + x + " monotonic : " + ptrTy + ", bf16");
    line(r + " = llvm.bitcast " + o + " : bf16 to " + ty);
    return r;
  }
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
  // In shared memory the first guess is the value itself (a plain load of an element other
  // lanes update atomically is a race there); a wrong guess costs one more round.
  const bool shared = ptrTy == "!llvm.ptr<3>";
  if (!shared)
    line(init + " = llvm.load " + ptr + " : " + ptrTy + " -> " + ty);
  line(r + " = scf.while (" + old + " = " + (shared ? val : init) + ") : (" + ty + ") -> " + ty +
       " {");
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

// The owner condition of atomicOwners' bits: no owner bit set in the thread ids ("" when every
// thread owns its elements).
std::string KernelEmitter::ownerCondition(const int64_t owners[3]) {
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
  return owner;
}

bool KernelEmitter::emitAtomic(const ir::Op &op) {
  Access acc;
  if (!prepareAccess(op, op.operands[1], acc))
    return false;
  const ScalarType t = acc.dtype;
  const bool shared = acc.alloc >= 0;
  // scatter_add: an atomic_add through a data-dependent index, over the register dims.
  const bool dynamic = ir::indexOperand(op) != nullptr;
  if ((acc.mapped && !dynamic) || (acc.ptr != "!llvm.ptr<1>" && !shared))
    return unsupported("an atomic with a mapping or on a `shared` parameter", op.loc);
  RegVal index;
  if (dynamic && !indexIn(op, acc, index))
    return false;
  const std::vector<DimIndex> &regDims = acc.mapped ? acc.reg : acc.dims;
  const RegVal &value = values_.at(op.operands[0]);
  const bool half = !shared && op.kind == ir::OpKind::AtomicAdd &&
                    (t == ScalarType::F16 || t == ScalarType::BF16);
  if (value.dtype != t ||
      (!half && (opaque(t) || (bitWidth(t) != 32 && (shared || bitWidth(t) != 64)))))
    return unsupported(std::string(opKindName(op.kind)) + " on " + scalarTypeName(t) + " values",
                       op.loc);
  RegVal v;
  if (!convertTo(value, layoutFrom(regDims, acc.elems, t), v, op.loc))
    return false;
  std::set<std::string> syms = v.cloneSyms;
  for (const auto &di : acc.dims)
    for (const auto &s : di.start.freeSymbols())
      if (s.rfind("$i_", 0) == 0)
        syms.insert(s);
  if (dynamic) // a uniform value (a literal) still takes the index's clones
    syms.insert(index.cloneSyms.begin(), index.cloneSyms.end());
  const std::vector<CloneAssign> clones = clonesOver(syms);
  // The legalize pass refused what follows (passes/legalize.cpp, atomic): backstops.
  int64_t owners[3];
  std::string why;
  if (!atomicOwners(k_, d_, op, owners, why))
    return unsupported(why, op.loc);
  const bool copies = owners[0] || owners[1] || owners[2];
  const bool oldUsed = !op.results.empty() && !op.results[0]->users.empty();
  if (oldUsed && (copies || op.operands[0]->type.shape.size() != regDims.size()))
    return unsupported("the old values of an atomic whose value several lanes hold", op.loc);
  RegVal result = layoutFrom(regDims, acc.elems, t);
  result.cloneSyms = syms;
  // An allocated tile's atomics: ordered among themselves by the hardware, against its reads
  // and writes by the barriers the analysis places (barrier_insertion.h).
  std::optional<LdsScope> scope;
  if (shared) {
    scope.emplace(*this, acc.alloc, /*write=*/true);
    lds_.kind = SyncItem::Atomic;
  }
  const std::string owner = ownerCondition(owners);
  const std::string ty = mlirType(t);
  for (const auto &a : clones) {
    const std::string x = operandAt(v, a, acc.elems);
    std::vector<std::string> olds;
    for (int64_t g = 0; g < acc.elems; ++g) {
      if (dynamic)
        bindIndexValue(op, index, cloneKey(a, index.cloneSyms), g);
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
  if (dynamic)
    unbindIndexValue(op);
  if (!op.results.empty())
    values_[op.results[0]] = std::move(result);
  return !failed_;
}

} // namespace wave::codegen::detail
