// Matrix instructions: the operands in the kind's layouts, then one instruction per clone and
// K step (MFMA / WMMA / mma.sync: the target lowering, codegen/amd/ and codegen/nvidia/), and
// wgmma (sm_90a).
#include "codegen/emitter/kernel_emitter.h"
#include "passes/legalize.h"

namespace wave::codegen::detail {

// ---- mma ---------------------------------------------------------------------------------

bool KernelEmitter::emitMma(const ir::Op &op) {
  const MmaKind &k = *op.mma;
  const ScalarType in = op.operands[0]->type.dtype;
  // Clones of M, N and K step by the vector shapes of the expansion, which the first mma of
  // each dim decided; a chained mma must step alike.
  const unsigned shape[3] = {k.m, k.n, k.k};
  const bool group = k.family == MmaFamily::Wgmma;
  for (int r = 0; r < 3; ++r)
    for (const auto &ex : d_.expansion)
      if (ex.dim == op.dims[r] && !ex.vectorShape.equals(IndexExpr(int64_t{shape[r]})) &&
          !(group && r == 2 && wgmmaSteps(op) > 1))
        return unsupported("an mma of kind " + std::string(k.name) + " whose dim " +
                               ex.dim.str() + " is walked in steps of " +
                               ex.vectorShape.str() + " (another mma's shape) instead of " +
                               std::to_string(shape[r]),
                           op.loc);
  if (k.family == MmaFamily::Wgmma)
    return emitWgmma(op);
  // Each operand in the kind's layout: values read for this mma already are; an earlier mma's
  // result is permuted in registers or shuffled across lanes (chained products).
  // An operand used as it is stays the value in values_ (not a copy): the fragment pipeline
  // (afterKStep_) adds the clones of later K steps of a read to it while the instructions of
  // earlier steps are emitted.
  RegVal converted[3];
  const RegVal *opnd[3];
  const LaneLayout *lanes[3] = {&k.a, &k.b, &k.c};
  for (int i = 0; i < 3; ++i) {
    const RegVal &v = values_.at(op.operands[i]);
    RegVal like = layoutFrom(mmaOperandIndex(k_, d_, op, i, op.operands[i]->type.shape),
                             lanes[i]->elements, v.dtype);
    bool asIs = false;
    if (!convertTo(v, like, converted[i], op.loc, &asIs))
      return false;
    opnd[i] = asIs ? &v : &converted[i];
  }
  RegVal out = layoutFrom(mmaOperandIndex(k_, d_, op, 2, op.results[0]->type.shape),
                          k.c.elements, k.acc);
  const std::string kSym = "$i_" + op.dims[2].str();
  const int64_t kCount =
      opnd[0]->cloneSyms.count(kSym) || opnd[1]->cloneSyms.count(kSym) ? expansionCount(kSym) : 1;
  // K outermost: consecutive instructions update different accumulators, so none waits for
  // the previous one's result.
  const std::vector<CloneAssign> assigns = clonesOver(out.cloneSyms);
  for (const auto &a : assigns)
    out.clones[cloneKey(a, out.cloneSyms)] = operandAt(*opnd[2], a, out.elems);
  for (int64_t kk = 0; kk < kCount; ++kk) {
    for (const auto &a : assigns) {
      CloneAssign b = a;
      b[kSym] = kk;
      std::string &c = out.clones[cloneKey(a, out.cloneSyms)];
      c = lower_->mmaInstruction(k, in, operandAt(*opnd[0], b, k.a.elements),
                                 operandAt(*opnd[1], b, k.b.elements), c);
    }
    if (afterKStep_)
      afterKStep_(kSym, kk, kCount);
  }
  values_[op.results[0]] = std::move(out);
  return !failed_;
}

// The vector<n x f32> `v` as the struct of a wgmma's accumulators.
std::string KernelEmitter::wgmmaPack(const std::string &v, int64_t n) {
  const std::string vty = vecType(ScalarType::F32, n), sty = f32StructType(n);
  std::string st = fresh();
  line(st + " = llvm.mlir.undef : " + sty);
  for (int64_t j = 0; j < n; ++j) {
    std::string x = fresh(), r = fresh();
    line(x + " = vector.extract " + v + "[" + std::to_string(j) + "] : f32 from " + vty);
    line(r + " = llvm.insertvalue " + x + ", " + st + "[" + std::to_string(j) + "] : " + sty);
    st = r;
  }
  return st;
}

// The struct `st` of a wgmma's n accumulators as a vector<n x f32>.
std::string KernelEmitter::wgmmaUnpack(const std::string &st, int64_t n) {
  const std::string vty = vecType(ScalarType::F32, n), sty = f32StructType(n);
  std::string vec = fresh();
  line(vec + " = llvm.mlir.undef : " + vty);
  for (int64_t j = 0; j < n; ++j) {
    std::string x = fresh(), r = fresh();
    line(x + " = llvm.extractvalue " + st + "[" + std::to_string(j) + "] : " + sty);
    line(r + " = vector.insert " + x + ", " + vec + " [" + std::to_string(j) + "] : f32 into " +
         vty);
    vec = r;
  }
  return vec;
}

// The A fragments of a register operand `a` of a wgmma: per clone and K step, elements
// 8 st .. 8 st + 7 as four 32-bit registers of two 16-bit values each (emitted once per clone
// and step: `cache`).
const std::vector<std::string> &
KernelEmitter::wgmmaFragments(const RegVal &a, const CloneAssign &ab, int st, int steps,
                              ScalarType in, const MmaKind &k,
                              std::map<std::string, std::vector<std::string>> &cache) {
  const std::string key = cloneKey(ab, a.cloneSyms) + "#" + std::to_string(st);
  auto it = cache.find(key);
  if (it != cache.end())
    return it->second;
  const std::string whole = operandAt(a, ab, k.a.elements * steps);
  const std::string wty = vecType(in, k.a.elements * steps);
  std::vector<std::string> words;
  for (int j = 0; j < 4; ++j) {
    std::string pair = fresh();
    line(pair + " = vector.extract_strided_slice " + whole + " {offsets = [" +
         std::to_string(8 * st + 2 * j) + "], sizes = [2], strides = [1]} : " + wty + " to " +
         vecType(in, 2));
    std::string word = fresh();
    line(word + " = vector.bitcast " + pair + " : " + vecType(in, 2) + " to vector<1xi32>");
    std::string x = fresh();
    line(x + " = vector.extract " + word + "[0] : i32 from vector<1xi32>");
    words.push_back(x);
  }
  return cache[key] = words;
}

// wgmma (sm_90a): per accumulator clone and K step one `wgmma.mma_async` of the warpgroup,
// A and B through their descriptors, the accumulator (the kind's C layout) in registers as a
// struct of f32. `wgmma.fence` first (the accumulators were written by other instructions),
// then the instructions, one commit group, and a wait that leaves `wgmmaKeep_` groups in flight
// (1 inside a pipelined loop: the next iteration's barrier and copies overlap this tile's
// products). For the barrier analysis the shared-memory reads happen twice: at issue (they
// need the tile: a barrier there, preceded by the async-proxy fence) and when the wait retires
// them (the tile's buffer may be overwritten after a barrier that follows the wait).
bool KernelEmitter::emitWgmma(const ir::Op &op) {
  const MmaKind &k = *op.mma;
  const ScalarType in = op.operands[0]->type.dtype;
  const RegVal &a0 = values_.at(op.operands[0]), &b = values_.at(op.operands[1]);
  if (b.descAlloc < 0)
    return unsupported("a wgmma B operand that is not the tile of a read of a shared-memory "
                       "parameter used only by wgmma (wgmma reads B through a shared-memory "
                       "descriptor)",
                       op.loc);
  const bool fp8 = in == ScalarType::F8E4M3FN || in == ScalarType::F8E5M2;
  if (in != ScalarType::F16 && in != ScalarType::BF16 && !fp8)
    return unsupported(std::string("wgmma on ") + scalarTypeName(in), op.loc);
  const int steps = wgmmaSteps(op);
  // A from registers (the fragments of every K step of a clone, in the register-fragment
  // layout of the PTX ISA), or from shared memory through descriptors like B (fp8: only so).
  const bool regA = a0.descAlloc < 0;
  if (regA && fp8)
    return unsupported(std::string("a wgmma on ") + scalarTypeName(in) + " with A in registers",
                       op.loc);
  RegVal aConv;
  if (regA && !convertTo(a0,
                         layoutFrom(mmaOperandIndex(k_, d_, op, 0, op.operands[0]->type.shape),
                                    k.a.elements * steps, in),
                         aConv, op.loc))
    return false;
  const RegVal &a = regA ? aConv : a0;
  // A constant zero accumulator (attention's scores) is the first instruction's scale-d 0:
  // no registers to zero first.
  const ir::Op *cDef = op.operands[2]->def;
  const bool zeroC = cDef && cDef->kind == ir::OpKind::Constant && cDef->fvalue == 0 &&
                     cDef->ivalue == 0;
  RegVal acc;
  const RegVal &c0 = values_.at(op.operands[2]);
  if (!zeroC && !convertTo(c0,
                           layoutFrom(mmaOperandIndex(k_, d_, op, 2, op.operands[2]->type.shape),
                                      k.c.elements, c0.dtype),
                           acc, op.loc))
    return false;
  RegVal out = layoutFrom(mmaOperandIndex(k_, d_, op, 2, op.results[0]->type.shape),
                          k.c.elements, k.acc);
  const std::string kSym = "$i_" + op.dims[2].str();
  const int64_t kCount =
      a.cloneSyms.count(kSym) || b.cloneSyms.count(kSym) ? expansionCount(kSym) : 1;
  const int64_t n = k.c.elements;
  const std::vector<CloneAssign> assigns = clonesOver(out.cloneSyms);
  std::vector<std::string> regs;
  for (const auto &ca : assigns) {
    if (zeroC) {
      regs.push_back(fresh());
      line(regs.back() + " = llvm.mlir.undef : " + f32StructType(n));
    } else {
      regs.push_back(wgmmaPack(operandAt(acc, ca, n), n));
    }
  }
  std::map<std::string, std::vector<std::string>> fragments; // wgmmaFragments' cache
  auto descAt = [&](const RegVal &v, const CloneAssign &ab, int st) {
    const std::string key = cloneKey(ab, v.cloneSyms);
    return v.clones.at(st ? key + "#" + std::to_string(st) : key);
  };
  lower_->warpgroupFence();
  auto reads = [&](const std::function<int(int)> &stageOf, bool issue) {
    for (const RegVal *x : {&a, &b}) {
      if (x->descAlloc < 0 ||
          (x == &b && b.descAlloc == a.descAlloc && b.descStage == a.descStage))
        continue;
      SyncItem it{SyncItem::Read, x->descAlloc, stageOf(x->descStage)};
      it.asyncProxy = issue;
      mark(it);
    }
  };
  reads([](int st) { return st; }, true);
  for (int64_t kk = 0; kk < kCount; ++kk)
    for (int st = 0; st < steps; ++st)
      for (size_t i = 0; i < assigns.size(); ++i) {
        CloneAssign ab = assigns[i];
        ab[kSym] = kk;
        std::string r = fresh();
        const bool first = zeroC && kk == 0 && st == 0;
        if (!regA) {
          lower_->warpgroupMma(r, k, in, descAt(a, ab, st), descAt(b, ab, st), regs[i],
                               b.descNMajor, first);
        } else {
          lower_->warpgroupMmaRegisterA(r, k, in, regs[i],
                         [&]() -> const std::vector<std::string> & {
                           return wgmmaFragments(a, ab, st, steps, in, k, fragments);
                         },
                         descAt(b, ab, st), b.descNMajor, first);
        }
        regs[i] = r;
      }
  lower_->warpgroupCommit();
  if (wgmmaArrive_) // ping-pong: the next warpgroup issues while this one waits (iterate.cpp)
    pingpongTurn(true);
  // The wait retires the groups before the newest `keep`: with keep = 1 in a loop of S
  // buffers, the reads of tile i - 1 (buffer stage S - 1 relative to this iteration's).
  const int keep = wgmmaKeep_;
  if (wgmmaNoWait_) { // scores ahead: waited for behind the loop's second product (iterate.cpp)
    wgmmaInFlight_ = true;
    for (size_t i = 0; i < assigns.size(); ++i)
      out.clones[cloneKey(assigns[i], out.cloneSyms)] = wgmmaUnpack(regs[i], n);
    values_[op.results[0]] = std::move(out);
    return !failed_;
  }
  lower_->warpgroupWait(keep);
  if (keep > 0)
    wgmmaInFlight_ = true;
  const int stagesN = wgmmaStages_;
  reads(
      [&](int st) {
        return st < 0 || stagesN <= 0 ? st : ((st - keep) % stagesN + stagesN) % stagesN;
      },
      false);
  for (size_t i = 0; i < assigns.size(); ++i)
    out.clones[cloneKey(assigns[i], out.cloneSyms)] = wgmmaUnpack(regs[i], n);
  values_[op.results[0]] = std::move(out);
  return !failed_;
}

// K steps of 16 that a wgmma makes inside each clone of its K dim (legalize.h, wgmmaKSteps).
int KernelEmitter::wgmmaSteps(const ir::Op &mma) const { return wgmmaKSteps(mma, d_); }

} // namespace wave::codegen::detail
