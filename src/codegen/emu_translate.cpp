// LLVM module -> emulator image (emu_translate.h; the format is runtime/format/emu_image.h).
//
// One pass over each kernel function: every SSA value gets a frame slot, constants are written
// into the frame's initial image, each instruction becomes one or a few bytecode instructions
// with pre-decoded operands, phis become parallel copies on the incoming edges (edges of
// conditional branches get a trampoline), and each instruction carries the `.wave` location of
// its debug location. Anything without an emulator counterpart is rejected by name.
#include "codegen/emu_translate.h"
#include "target/target_table.h"

#include "emu_image.h" // runtime/format/emu_image.h, through the wave_emu_format target

#include "llvm/IR/Constants.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/GetElementPtrTypeIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Operator.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "codegen/emu_translate_impl.h"

namespace wave {
namespace emu_translate_detail {


void FunctionTranslator::emitPhiCopies(const llvm::BasicBlock *from, const llvm::BasicBlock *to) {
  std::vector<uint32_t> words;
  for (const llvm::PHINode &phi : to->phis()) {
    const llvm::Value *in = phi.getIncomingValueForBlock(from);
    words.push_back(slot(&phi));
    words.push_back(slot(in));
    words.push_back(layoutOf(phi.getType()).bytes);
  }
  if (words.empty())
    return;
  uint32_t at = uint32_t(extra.size());
  extra.push_back(uint32_t(words.size() / 3));
  extra.insert(extra.end(), words.begin(), words.end());
  emit(Op::ParCopy, Type::I8, 1, 0, 0, 0, 0, at);
}

// translateCall of the calls the emulator ignores, special registers, barriers and traps.
// False when `call` is none of them.
bool FunctionTranslator::callControl(const llvm::CallInst &call, const std::string &name,
                                     const Layout &rl) {
  auto starts = [&](const char *p) { return name.rfind(p, 0) == 0; };
  auto arg = [&](unsigned i) { return call.getArgOperand(i); };
  auto dst = [&] { return slot(&call); };
  // s_waitcnt on gfx9 (bufferRules_ 0): vmcnt = bits 3:0 and 15:14 of the immediate; a count
  // below the field's maximum lands the thread's LDS DMAs but the vmcnt newest (the hardware
  // counts other vector memory instructions too, so it waits at least as long). Other
  // families' encodings are not decoded (no LDS DMA there): ignored, like lgkmcnt/expcnt.
  if (name == "llvm.amdgcn.s.waitcnt") {
    auto *imm = llvm::dyn_cast<llvm::ConstantInt>(arg(0));
    if (imm && !bufferRules_) {
      const uint64_t v = imm->getZExtValue();
      const uint32_t vm = uint32_t((v & 0xf) | ((v >> 10) & 0x30));
      if (vm < 63)
        emit(Op::AsyncWait, Type::I8, 1, 0, 0, 0, 0, vm);
    }
    return true;
  }
  // No-ops for the emulator.
  static const char *ignored[] = {"llvm.assume", "llvm.lifetime.", "llvm.dbg.",
                                  "llvm.experimental.noalias.scope.decl", "llvm.invariant.",
                                  "llvm.amdgcn.s.setprio",
                                  "llvm.amdgcn.sched.", "llvm.amdgcn.wave.barrier",
                                  "llvm.nvvm.bar.warp.sync", "llvm.sideeffect",
                                  "llvm.amdgcn.s.sleep", "llvm.nvvm.membar."};
  for (const char *p : ignored)
    if (starts(p))
      return true;

  // Special registers.
  static const std::pair<const char *, emu::Special> specials[] = {
      {"llvm.amdgcn.workitem.id.x", emu::Special::TidX},
      {"llvm.amdgcn.workitem.id.y", emu::Special::TidY},
      {"llvm.amdgcn.workitem.id.z", emu::Special::TidZ},
      {"llvm.amdgcn.workgroup.id.x", emu::Special::WgX},
      {"llvm.amdgcn.workgroup.id.y", emu::Special::WgY},
      {"llvm.amdgcn.workgroup.id.z", emu::Special::WgZ},
      {"llvm.nvvm.read.ptx.sreg.tid.x", emu::Special::TidX},
      {"llvm.nvvm.read.ptx.sreg.tid.y", emu::Special::TidY},
      {"llvm.nvvm.read.ptx.sreg.tid.z", emu::Special::TidZ},
      {"llvm.nvvm.read.ptx.sreg.ctaid.x", emu::Special::WgX},
      {"llvm.nvvm.read.ptx.sreg.ctaid.y", emu::Special::WgY},
      {"llvm.nvvm.read.ptx.sreg.ctaid.z", emu::Special::WgZ},
      {"llvm.nvvm.read.ptx.sreg.ntid.x", emu::Special::NtidX},
      {"llvm.nvvm.read.ptx.sreg.ntid.y", emu::Special::NtidY},
      {"llvm.nvvm.read.ptx.sreg.ntid.z", emu::Special::NtidZ},
      {"llvm.nvvm.read.ptx.sreg.nctaid.x", emu::Special::NwgX},
      {"llvm.nvvm.read.ptx.sreg.nctaid.y", emu::Special::NwgY},
      {"llvm.nvvm.read.ptx.sreg.nctaid.z", emu::Special::NwgZ},
      {"llvm.nvvm.read.ptx.sreg.laneid", emu::Special::Lane},
      {"llvm.nvvm.read.ptx.sreg.warpsize", emu::Special::WaveSize},
  };
  for (const auto &[n, s] : specials)
    if (name == n) {
      emit(Op::Special, rl.type, 1, dst(), 0, 0, 0, uint32_t(s));
      return true;
    }

  if (name == "llvm.amdgcn.s.barrier" || name == "llvm.nvvm.barrier0" ||
      (starts("llvm.nvvm.barrier.sync") && llvm::isa<llvm::ConstantInt>(arg(0)) &&
       llvm::cast<llvm::ConstantInt>(arg(0))->isZero() && call.arg_size() == 1)) {
    emit(Op::Barrier, Type::I8, 1);
    return true;
  }
  if (name == "llvm.trap" || name == "llvm.debugtrap") {
    emit(Op::Trap, Type::I8, 1);
    return true;
  }
  return false;
}

// translateCall of element-wise math and vector reductions. False when `call` is neither.
bool FunctionTranslator::callMath(const llvm::CallInst &call, const std::string &name,
                                  const Layout &rl) {
  auto starts = [&](const char *p) { return name.rfind(p, 0) == 0; };
  auto arg = [&](unsigned i) { return call.getArgOperand(i); };
  auto dst = [&] { return slot(&call); };
  // Elementwise math: the intrinsic's base name -> opcode (overload suffixes ignored).
  static const std::pair<const char *, Op> math[] = {
      {"llvm.smin.", Op::SMin}, {"llvm.smax.", Op::SMax}, {"llvm.umin.", Op::UMin},
      {"llvm.umax.", Op::UMax}, {"llvm.minnum.", Op::MinNum}, {"llvm.maxnum.", Op::MaxNum},
      {"llvm.minimum.", Op::Minimum}, {"llvm.maximum.", Op::Maximum},
      {"llvm.copysign.", Op::CopySign}, {"llvm.pow.", Op::Pow}, {"llvm.fabs.", Op::FAbs},
      {"llvm.sqrt.", Op::Sqrt}, {"llvm.exp.", Op::Exp}, {"llvm.exp2.", Op::Exp2},
      {"llvm.log.", Op::Log}, {"llvm.log2.", Op::Log2}, {"llvm.sin.", Op::Sin},
      {"llvm.cos.", Op::Cos}, {"llvm.floor.", Op::Floor}, {"llvm.ceil.", Op::Ceil},
      {"llvm.trunc.", Op::Trunc}, {"llvm.round.", Op::Round}, {"llvm.rint.", Op::Rint},
      {"llvm.nearbyint.", Op::Rint}, {"llvm.roundeven.", Op::Rint}, {"llvm.fma.", Op::Fma},
      {"llvm.fmuladd.", Op::Fma}, {"llvm.ctpop.", Op::Ctpop},
      {"llvm.amdgcn.rcp.", Op::Rcp}, {"llvm.amdgcn.rsq.", Op::Rsq},
      {"llvm.amdgcn.sqrt.", Op::Sqrt}, {"llvm.amdgcn.exp2.", Op::Exp2},
      {"llvm.amdgcn.log.", Op::Log2}, {"llvm.amdgcn.sin.", Op::Sin},
      {"llvm.amdgcn.cos.", Op::Cos}, {"llvm.amdgcn.fmul.legacy", Op::FMul},
      {"llvm.nvvm.ex2.approx.", Op::Exp2}, {"llvm.nvvm.lg2.approx.", Op::Log2},
      {"llvm.nvvm.rcp.", Op::Rcp}, {"llvm.nvvm.rsqrt.approx.", Op::Rsq},
      {"llvm.nvvm.sqrt.", Op::Sqrt}, {"llvm.nvvm.sin.approx.", Op::Sin},
      {"llvm.nvvm.cos.approx.", Op::Cos}, {"llvm.nvvm.tanh.approx.", Op::Tanh},
      {"llvm.nvvm.fmax.nan.", Op::Maximum}, {"llvm.nvvm.fmin.nan.", Op::Minimum},
      {"llvm.nvvm.fmax.", Op::MaxNum}, {"llvm.nvvm.fmin.", Op::MinNum},
      {"llvm.nvvm.fabs.", Op::FAbs}, {"llvm.nvvm.fma.rn.", Op::Fma},
  };
  for (const auto &[prefix, op] : math) {
    std::string p = prefix;
    bool match = p.back() == '.' ? starts(prefix) || name == p.substr(0, p.size() - 1)
                                 : name == p;
    if (!match)
      continue;
    unsigned n = call.arg_size();
    if (op == Op::Fma) {
      emit(op, rl.type, rl.lanes, dst(), slot(arg(0)), slot(arg(1)), slot(arg(2)));
    } else if (n >= 2 && op != Op::Ctpop) {
      emit(op, rl.type, rl.lanes, dst(), slot(arg(0)), slot(arg(1)));
    } else {
      emit(op, rl.type, rl.lanes, dst(), slot(arg(0)));
    }
    return true;
  }
  if (starts("llvm.abs.")) {
    emit(Op::Abs, rl.type, rl.lanes, dst(), slot(arg(0)));
    return true;
  }
  if (starts("llvm.usub.sat.")) { // a - b, 0 below: umax(a, b) - b (LLVM forms it from clamps)
    emit(Op::UMax, rl.type, rl.lanes, dst(), slot(arg(0)), slot(arg(1)));
    emit(Op::Sub, rl.type, rl.lanes, dst(), dst(), slot(arg(1)));
    return true;
  }
  if (starts("llvm.ctlz.") || starts("llvm.cttz.")) {
    emit(starts("llvm.ctlz.") ? Op::Ctlz : Op::Cttz, rl.type, rl.lanes, dst(), slot(arg(0)));
    return true;
  }

  // Vector reductions.
  if (starts("llvm.vector.reduce.")) {
    static const std::pair<const char *, emu::Reduce> kinds[] = {
        {"add.", emu::Reduce::Add},   {"mul.", emu::Reduce::Mul},
        {"and.", emu::Reduce::And},   {"or.", emu::Reduce::Or},
        {"xor.", emu::Reduce::Xor},   {"smax.", emu::Reduce::SMax},
        {"smin.", emu::Reduce::SMin}, {"umax.", emu::Reduce::UMax},
        {"umin.", emu::Reduce::UMin}, {"fadd.", emu::Reduce::FAdd},
        {"fmul.", emu::Reduce::FMul}, {"fmax.", emu::Reduce::FMax},
        {"fmin.", emu::Reduce::FMin}, {"fmaximum.", emu::Reduce::FMaximum},
        {"fminimum.", emu::Reduce::FMinimum}};
    std::string rest = name.substr(std::strlen("llvm.vector.reduce."));
    for (const auto &[k, kind] : kinds)
      if (rest.rfind(k, 0) == 0) {
        bool ordered = kind == emu::Reduce::FAdd || kind == emu::Reduce::FMul;
        const llvm::Value *vec = arg(ordered ? 1 : 0);
        Layout vl = layoutOf(vec->getType());
        if (vl.type == Type::I1)
          unsupported("a reduction of an i1 vector: " + name);
        emit(Op::Reduce, rl.type, 1, dst(), slot(vec), ordered ? slot(arg(0)) : 0, 0,
             uint32_t(kind), uint8_t(vl.lanes));
        return true;
      }
  }
  return false;
}

// translateCall of masked loads and stores and AMD raw buffer accesses. False when `call` is
// none of them.
bool FunctionTranslator::callMemory(const llvm::CallInst &call, const std::string &name,
                                    const Layout &rl) {
  auto starts = [&](const char *p) { return name.rfind(p, 0) == 0; };
  auto arg = [&](unsigned i) { return call.getArgOperand(i); };
  auto dst = [&] { return slot(&call); };
  // Masked memory.
  if (starts("llvm.masked.load.")) {
    unsigned as = arg(0)->getType()->getPointerAddressSpace();
    emit(Op::MaskedLoad, rl.type, rl.lanes, dst(), slot(arg(0)), slot(arg(2)), slot(arg(3)),
         space(as, call));
    return true;
  }
  if (starts("llvm.masked.store.")) {
    Layout vl = layoutOf(arg(0)->getType());
    unsigned as = arg(1)->getType()->getPointerAddressSpace();
    emit(Op::MaskedStore, vl.type, vl.lanes, 0, slot(arg(1)), slot(arg(0)), slot(arg(3)),
         space(as, call));
    return true;
  }

  // AMD LDS DMA (Op::BufferLoadLds): (rsrc, LDS base, bytes, voffset, soffset, imm offset,
  // aux). The instruction offset would move both addresses; wavec passes 0, the only value
  // emulated.
  if (name == "llvm.amdgcn.raw.buffer.load.lds") {
    auto *rsrcType = llvm::dyn_cast<llvm::FixedVectorType>(arg(0)->getType());
    auto *size = llvm::dyn_cast<llvm::ConstantInt>(arg(2));
    auto *imm = llvm::dyn_cast<llvm::ConstantInt>(arg(5));
    auto *cache = llvm::dyn_cast<llvm::ConstantInt>(arg(6));
    const uint64_t bytes = size ? size->getZExtValue() : 0;
    if (!rsrcType || rsrcType->getNumElements() != 4 ||
        !rsrcType->getElementType()->isIntegerTy(32) ||
        (bytes != 1 && bytes != 2 && bytes != 4) || !imm || !imm->isZero() || !cache ||
        (cache->getZExtValue() & 8))
      unsupported("the buffer access " + name +
                  " with a size other than 1, 2 or 4, an instruction offset or swizzling");
    emit(Op::BufferLoadLds, Type::I8, 1, slot(arg(4)), slot(arg(0)), slot(arg(1)), slot(arg(3)),
         uint32_t(bytes), bufferRules_);
    return true;
  }
  // AMD raw buffer accesses through a <4 x i32> descriptor (the emulator models the raw,
  // range-checked kind: see Op::BufferLoad).
  if (starts("llvm.amdgcn.raw.buffer.load.") || starts("llvm.amdgcn.raw.buffer.store.")) {
    const bool store = starts("llvm.amdgcn.raw.buffer.store.");
    const std::string rest = name.substr(store ? 29 : 28);
    const unsigned first = store ? 1 : 0; // the descriptor's argument
    auto *rsrcType = llvm::dyn_cast<llvm::FixedVectorType>(arg(first)->getType());
    auto *cache = llvm::dyn_cast<llvm::ConstantInt>(arg(first + 3));
    if (rest.find("format") != std::string::npos || rest.find("lds") != std::string::npos ||
        rest.find("tfe") != std::string::npos || !rsrcType || rsrcType->getNumElements() != 4 ||
        !rsrcType->getElementType()->isIntegerTy(32) || !cache || (cache->getZExtValue() & 8))
      unsupported("the buffer access " + name + " (only plain raw loads/stores are emulated)");
    if (store) {
      Layout vl = layoutOf(arg(0)->getType());
      emit(Op::BufferStore, vl.type, vl.lanes, slot(arg(4)), slot(arg(1)), slot(arg(0)),
           slot(arg(2)), 0, bufferRules_);
    } else {
      emit(Op::BufferLoad, rl.type, rl.lanes, dst(), slot(arg(0)), slot(arg(1)), slot(arg(2)), 0,
           bufferRules_);
    }
    return true;
  }
  return false;
}

// translateCall of per-lane AMD helpers, wave-collective operations, cp.async and ldmatrix.
// False when `call` is none of them.
bool FunctionTranslator::callWave(const llvm::CallInst &call, const std::string &name,
                                  const Layout &rl) {
  auto starts = [&](const char *p) { return name.rfind(p, 0) == 0; };
  auto arg = [&](unsigned i) { return call.getArgOperand(i); };
  auto dst = [&] { return slot(&call); };
  // Per-lane AMD helpers.
  if (name == "llvm.amdgcn.mbcnt.lo" || name == "llvm.amdgcn.mbcnt.hi") {
    emit(Op::Mbcnt, Type::I32, 1, dst(), slot(arg(0)), slot(arg(1)), 0, 0,
         name == "llvm.amdgcn.mbcnt.hi");
    return true;
  }
  if (name == "llvm.amdgcn.cvt.f32.fp8" || name == "llvm.amdgcn.cvt.f32.bf8") {
    emit(Op::CvtFp8ToF32, Type::F32, 1, dst(), slot(arg(0)), slot(arg(1)), 0, 0,
         name == "llvm.amdgcn.cvt.f32.bf8");
    return true;
  }
  if (name == "llvm.amdgcn.cvt.pk.fp8.f32" || name == "llvm.amdgcn.cvt.pk.bf8.f32") {
    auto *word = llvm::dyn_cast<llvm::ConstantInt>(arg(3));
    if (!word)
      unsupported(name + " with a non-constant word select");
    emit(Op::CvtPkF32ToFp8, Type::I32, 1, dst(), slot(arg(0)), slot(arg(1)), slot(arg(2)),
         uint32_t(word->getZExtValue()), name == "llvm.amdgcn.cvt.pk.bf8.f32");
    return true;
  }

  // Wave-collective operations.
  auto wave = [&](emu::WaveOp w, uint32_t a, uint32_t b, uint32_t c, uint32_t imm) {
    emit(Op::Wave, rl.type, rl.lanes, dst(), a, b, c, imm, uint8_t(w));
  };
  if (name == "llvm.amdgcn.ds.bpermute") {
    wave(emu::WaveOp::Bpermute, slot(arg(0)), slot(arg(1)), 0, 0);
    return true;
  }
  if (starts("llvm.amdgcn.readlane")) {
    wave(emu::WaveOp::Readlane, slot(arg(0)), slot(arg(1)), 0, 0);
    return true;
  }
  if (starts("llvm.amdgcn.readfirstlane")) {
    wave(emu::WaveOp::Readfirstlane, slot(arg(0)), 0, 0, 0);
    return true;
  }
  if (starts("llvm.amdgcn.ballot.")) {
    wave(emu::WaveOp::Ballot, slot(arg(0)), 0, 0, 0);
    return true;
  }
  if (name == "llvm.nvvm.vote.ballot.sync") {
    wave(emu::WaveOp::Ballot, slot(arg(1)), 0, 0, 0);
    return true;
  }
  if (starts("llvm.nvvm.shfl.sync.")) {
    static const std::pair<const char *, emu::WaveOp> kinds[] = {
        {"llvm.nvvm.shfl.sync.idx.", emu::WaveOp::ShflIdx},
        {"llvm.nvvm.shfl.sync.up.", emu::WaveOp::ShflUp},
        {"llvm.nvvm.shfl.sync.down.", emu::WaveOp::ShflDown},
        {"llvm.nvvm.shfl.sync.bfly.", emu::WaveOp::ShflBfly}};
    for (const auto &[p, k] : kinds)
      if (starts(p)) {
        bool pred = name.back() == 'p';
        Layout vl = layoutOf(arg(1)->getType());
        emit(Op::Wave, vl.type, 1, dst(), slot(arg(1)), slot(arg(2)), slot(arg(3)), pred,
             uint8_t(k));
        return true;
      }
  }
  // cp.async: an asynchronous copy of 16 bytes (the first `size` from global memory, zeros for
  // the rest) that lands in shared memory only when a wait completes its group
  // (runtime/format/emu_image.h, Op::AsyncCopy), so a wait count that leaves a group in flight
  // while its buffer is read is reported by the emulator's race detector.
  if (name == "llvm.nvvm.cp.async.commit.group") {
    emit(Op::AsyncCommit, Type::I8, 1, 0, 0, 0, 0, 0);
    return true;
  }
  if (name == "llvm.nvvm.cp.async.wait.all") {
    emit(Op::AsyncCommit, Type::I8, 1, 0, 0, 0, 0, 0);
    emit(Op::AsyncWait, Type::I8, 1, 0, 0, 0, 0, 0);
    return true;
  }
  if (name == "llvm.nvvm.cp.async.wait.group") {
    auto *n = llvm::dyn_cast<llvm::ConstantInt>(arg(0));
    if (!n || n->getZExtValue() > 0xffffffffu)
      unsupported(name + " with a non-constant group count");
    emit(Op::AsyncWait, Type::I8, 1, 0, 0, 0, 0, uint32_t(n->getZExtValue()));
    return true;
  }
  if (name == "llvm.nvvm.cp.async.cg.shared.global.16.s" ||
      name == "llvm.nvvm.cp.async.ca.shared.global.16.s") {
    emit(Op::AsyncCopy, Type::I8, 1, 0, slot(arg(0)), slot(arg(1)), slot(arg(2)), 16);
    return true;
  }
  if (starts("llvm.nvvm.ldmatrix.sync.aligned.m8n8.")) {
    uint32_t count = name.find(".x4.") != std::string::npos   ? 4
                     : name.find(".x2.") != std::string::npos ? 2
                                                              : 1;
    bool trans = name.find(".trans.") != std::string::npos;
    emit(Op::Wave, Type::I32, count, dst(), slot(arg(0)), 0, 0, count | (trans ? 8 : 0),
         uint8_t(emu::WaveOp::Ldmatrix));
    return true;
  }
  return false;
}

// translateCall of the matrix instructions. False when `call` is none of them.
bool FunctionTranslator::callMma(const llvm::CallInst &call, const std::string &name,
                                 const Layout &rl) {
  auto starts = [&](const char *p) { return name.rfind(p, 0) == 0; };
  auto arg = [&](unsigned i) { return call.getArgOperand(i); };
  auto dst = [&] { return slot(&call); };
  // Matrix instructions.
  static const std::pair<const char *, emu::Mma> mmas[] = {
      {"llvm.amdgcn.mfma.f32.16x16x16f16", emu::Mma::Mfma16x16x16F16},
      {"llvm.amdgcn.mfma.f32.16x16x16bf16.1k", emu::Mma::Mfma16x16x16BF16},
      {"llvm.amdgcn.mfma.f32.32x32x8f16", emu::Mma::Mfma32x32x8F16},
      {"llvm.amdgcn.mfma.f32.32x32x8bf16.1k", emu::Mma::Mfma32x32x8BF16},
      {"llvm.amdgcn.mfma.i32.16x16x16i8", emu::Mma::Mfma16x16x16I8},
      {"llvm.amdgcn.mfma.i32.32x32x8i8", emu::Mma::Mfma32x32x8I8},
      {"llvm.amdgcn.mfma.f32.16x16x32.fp8.fp8", emu::Mma::Mfma16x16x32Fp8},
      {"llvm.amdgcn.mfma.f32.32x32x16.fp8.fp8", emu::Mma::Mfma32x32x16Fp8},
      {"llvm.amdgcn.mfma.f32.16x16x32.bf8.bf8", emu::Mma::Mfma16x16x32Bf8},
      {"llvm.amdgcn.mfma.f32.32x32x16.bf8.bf8", emu::Mma::Mfma32x32x16Bf8},
      {"llvm.amdgcn.mfma.i32.16x16x32.i8", emu::Mma::Mfma16x16x32I8},
      {"llvm.amdgcn.mfma.i32.32x32x16.i8", emu::Mma::Mfma32x32x16I8},
      {"llvm.amdgcn.wmma.f32.16x16x16.f16", emu::Mma::Wmma16x16x16F16},
      {"llvm.amdgcn.wmma.f32.16x16x16.bf16", emu::Mma::Wmma16x16x16BF16},
      {"llvm.nvvm.mma.m16n8k16.row.col.f32.f32", emu::Mma::Mma16x8x16F16},
      {"llvm.nvvm.mma.m16n8k16.row.col.bf16", emu::Mma::Mma16x8x16BF16},
      {"llvm.nvvm.mma.m16n8k8.row.col.f32.f32", emu::Mma::Mma16x8x8F16},
  };
  for (const auto &[n, kind] : mmas) {
    if (name != n && !(starts(n) && name[std::strlen(n)] == '.'))
      continue;
    const emu::MmaShape &shape = emu::mmaShape(kind);
    unsigned nargs = call.arg_size();
    if (starts("llvm.amdgcn.mfma")) {
      for (unsigned i = 3; i < 6 && i < nargs; ++i) {
        auto *c = llvm::dyn_cast<llvm::ConstantInt>(arg(i));
        if (!c || !c->isZero())
          unsupported(name + " with cbsz/abid/blgp modifiers");
      }
      nargs = 3;
    }
    // Gather the operands (several registers each on NVIDIA) into contiguous slots.
    uint32_t operand[3];
    const uint32_t want[3] = {shape.aBytes, shape.bBytes, shape.cBytes};
    unsigned next = 0;
    for (int o = 0; o < 3; ++o) {
      operand[o] = alloc(want[o]);
      uint32_t got = 0;
      while (got < want[o]) {
        if (next >= nargs)
          unsupported(name + " with unexpected operands");
        const llvm::Value *v = arg(next++);
        uint32_t bytes = layoutOf(v->getType()).bytes;
        emit(Op::Copy, Type::I8, 1, operand[o] + got, slot(v), 0, 0, bytes);
        got += bytes;
      }
      if (got != want[o])
        unsupported(name + " with unexpected operand sizes");
    }
    if (rl.bytes != shape.cBytes)
      unsupported(name + " with an unexpected result type");
    emit(Op::Mma, Type::I8, 1, dst(), operand[0], operand[1], operand[2], uint32_t(kind));
    return true;
  }
  return false;
}

// The inline PTX of wgmma (sm_90a), from MLIR's NVVM-to-LLVM conversion and from wavec's own
// register-A form (src/codegen/nvidia/nvidia_lowering.cpp): the assembler text is matched
// exactly, instruction by instruction; anything else is refused by its text.
void FunctionTranslator::translateCall(const llvm::CallInst &call) {
  if (call.isInlineAsm()) {
    translateAsm(call);
    return;
  }
  const llvm::Function *callee = call.getCalledFunction();
  if (!callee || !callee->getName().starts_with("llvm."))
    unsupported("a call to " + (callee ? "@" + callee->getName().str() : "a function pointer"));
  std::string name = callee->getName().str();
  auto starts = [&](const char *p) { return name.rfind(p, 0) == 0; };
  Layout rl = call.getType()->isVoidTy() ? Layout{} : layoutOf(call.getType());
  if (callControl(call, name, rl) || callMath(call, name, rl) || callMemory(call, name, rl) ||
      callWave(call, name, rl) || callMma(call, name, rl))
    return;
  if (starts("llvm.amdgcn.") || starts("llvm.nvvm."))
    unsupported("the target intrinsic " + name);
  unsupported("the intrinsic " + name);
}

// Predicates and atomic kinds use LLVM's numbering; see emu_image.h.
emu::Rmw rmwKind(llvm::AtomicRMWInst::BinOp op, const std::string &text) {
  using B = llvm::AtomicRMWInst;
  switch (op) {
  case B::Xchg: return emu::Rmw::Xchg;
  case B::Add: return emu::Rmw::Add;
  case B::Sub: return emu::Rmw::Sub;
  case B::And: return emu::Rmw::And;
  case B::Or: return emu::Rmw::Or;
  case B::Xor: return emu::Rmw::Xor;
  case B::Max: return emu::Rmw::Max;
  case B::Min: return emu::Rmw::Min;
  case B::UMax: return emu::Rmw::UMax;
  case B::UMin: return emu::Rmw::UMin;
  case B::FAdd: return emu::Rmw::FAdd;
  case B::FMax: return emu::Rmw::FMax;
  case B::FMin: return emu::Rmw::FMin;
  default: throw Unsupported{"the atomic operation " + text};
  }
}

// translate() of arithmetic: binary operators, casts, negation, freeze, comparisons and
// selects. False when `i` is none of them.
bool FunctionTranslator::translateArith(const llvm::Instruction &i) {
  using I = llvm::Instruction;
  unsigned opc = i.getOpcode();
  auto operand = [&](unsigned n) { return slot(i.getOperand(n)); };
  if (i.isBinaryOp()) {
    static const std::map<unsigned, Op> ops = {
        {I::Add, Op::Add},   {I::Sub, Op::Sub},   {I::Mul, Op::Mul},   {I::UDiv, Op::UDiv},
        {I::SDiv, Op::SDiv}, {I::URem, Op::URem}, {I::SRem, Op::SRem}, {I::Shl, Op::Shl},
        {I::LShr, Op::LShr}, {I::AShr, Op::AShr}, {I::And, Op::And},   {I::Or, Op::Or},
        {I::Xor, Op::Xor},   {I::FAdd, Op::FAdd}, {I::FSub, Op::FSub}, {I::FMul, Op::FMul},
        {I::FDiv, Op::FDiv}, {I::FRem, Op::FRem}};
    Layout l = layoutOf(i.getType());
    emit(ops.at(opc), l.type, l.lanes, slot(&i), operand(0), operand(1));
    return true;
  }
  if (i.isCast()) {
    Layout to = layoutOf(i.getType()), from = layoutOf(i.getOperand(0)->getType());
    static const std::map<unsigned, Op> ops = {
        {I::Trunc, Op::TruncI},    {I::ZExt, Op::ZExt},       {I::SExt, Op::SExt},
        {I::FPTrunc, Op::FPTrunc}, {I::FPExt, Op::FPExt},     {I::FPToSI, Op::FPToSI},
        {I::FPToUI, Op::FPToUI},   {I::SIToFP, Op::SIToFP},   {I::UIToFP, Op::UIToFP},
        {I::PtrToInt, Op::PtrToInt}, {I::IntToPtr, Op::IntToPtr}};
    if (opc == I::BitCast) {
      if (to.bytes != from.bytes || to.type == Type::I1 || from.type == Type::I1)
        unsupported("the bit cast " + describe(i));
      emit(Op::Copy, Type::I8, 1, slot(&i), operand(0), 0, 0, to.bytes);
      return true;
    }
    if (opc == I::AddrSpaceCast) {
      unsigned fromAs = i.getOperand(0)->getType()->getPointerAddressSpace();
      unsigned toAs = i.getType()->getPointerAddressSpace();
      auto global = [](unsigned as) { return as == 0 || as == 1 || as == 4; };
      if (!(global(fromAs) && global(toAs)))
        unsupported("an address-space cast between shared and generic memory: " + describe(i));
      emit(Op::Copy, Type::I8, 1, slot(&i), operand(0), 0, 0, 8);
      return true;
    }
    auto it = ops.find(opc);
    if (it == ops.end())
      unsupported("the cast " + describe(i));
    emit(it->second, to.type, to.lanes, slot(&i), operand(0), 0, 0, 0, uint8_t(from.type));
    return true;
  }
  switch (opc) {
  case I::FNeg: {
    Layout l = layoutOf(i.getType());
    emit(Op::FNeg, l.type, l.lanes, slot(&i), operand(0));
    return true;
  }
  case I::Freeze: {
    emit(Op::Copy, Type::I8, 1, slot(&i), operand(0), 0, 0, layoutOf(i.getType()).bytes);
    return true;
  }
  case I::ICmp:
  case I::FCmp: {
    auto &cmp = llvm::cast<llvm::CmpInst>(i);
    Layout l = layoutOf(i.getOperand(0)->getType());
    emit(opc == I::ICmp ? Op::ICmp : Op::FCmp, Type::I1, l.lanes, slot(&i), operand(0),
         operand(1), 0, cmp.getPredicate(), uint8_t(l.type));
    return true;
  }
  case I::Select: {
    Layout l = layoutOf(i.getType());
    bool scalarCond = !i.getOperand(0)->getType()->isVectorTy();
    if (l.type == Type::I8 && l.lanes == l.bytes && i.getType()->isStructTy())
      unsupported("a select of a struct: " + describe(i));
    emit(Op::Select, l.type, l.lanes, slot(&i), operand(0), operand(1), operand(2), 0,
         scalarCond && l.lanes > 1);
    return true;
  }
  default:
    return false;
  }
}

// translate() of address arithmetic and memory accesses (GEP, load, store, atomics, fences).
// One load (`value` the destination) or store (`value` the source) of layout l at `ptr`, split
// into pieces of its alignment where the target does so (ModuleState::splitUnderaligned).
void FunctionTranslator::access(Op op, const Layout &l, uint32_t value, uint32_t ptr,
                                uint64_t align, uint32_t addressSpace) {
  const uint32_t es = emu::typeSize(l.type);
  uint32_t lanes = l.lanes;
  if (ms_.splitUnderaligned && l.lanes > 1 && align < uint64_t(es) * l.lanes)
    lanes = std::max<uint32_t>(1, uint32_t(std::min<uint64_t>(align, 16) / es));
  for (uint32_t first = 0; first < l.lanes; first += lanes) {
    uint32_t at = ptr;
    if (first > 0) {
      at = alloc(8);
      emit(Op::PtrAddConst, Type::Ptr, 1, at, ptr, 0, 0, first * es);
    }
    const uint32_t n = std::min(lanes, l.lanes - first);
    if (op == Op::Load)
      emit(Op::Load, l.type, n, value + first * es, at, 0, 0, addressSpace);
    else
      emit(Op::Store, l.type, n, 0, at, value + first * es, 0, addressSpace);
  }
}

// False when `i` is none of them.
bool FunctionTranslator::translateMemory(const llvm::Instruction &i) {
  using I = llvm::Instruction;
  unsigned opc = i.getOpcode();
  auto operand = [&](unsigned n) { return slot(i.getOperand(n)); };
  switch (opc) {
  case I::GetElementPtr: {
    auto &gep = llvm::cast<llvm::GetElementPtrInst>(i);
    if (gep.getType()->isVectorTy())
      unsupported("a vector of pointers: " + describe(i));
    uint32_t cur = slot(gep.getPointerOperand());
    int64_t pending = 0;
    auto flush = [&](bool last) {
      if (pending == 0 && !last)
        return;
      uint32_t out = last ? slot(&i) : alloc(8);
      if (pending >= INT32_MIN && pending <= INT32_MAX)
        emit(Op::PtrAddConst, Type::Ptr, 1, out, cur, 0, 0, uint32_t(int32_t(pending)));
      else
        emit(Op::PtrAdd, Type::Ptr, 1, out, cur, i64Const(pending), 0, 1);
      cur = out;
      pending = 0;
    };
    for (auto it = llvm::gep_type_begin(gep), end = llvm::gep_type_end(gep); it != end; ++it) {
      const llvm::Value *idx = it.getOperand();
      if (llvm::StructType *st = it.getStructTypeOrNull()) {
        unsigned field = unsigned(llvm::cast<llvm::ConstantInt>(idx)->getZExtValue());
        pending += int64_t(dl_.getStructLayout(st)->getElementOffset(field));
        continue;
      }
      int64_t scale = int64_t(it.getSequentialElementStride(dl_));
      if (auto *ci = llvm::dyn_cast<llvm::ConstantInt>(idx)) {
        pending += ci->getSExtValue() * scale;
        continue;
      }
      if (scale > INT32_MAX)
        unsupported("a GEP stride of " + std::to_string(scale) + " bytes");
      flush(false);
      uint32_t out = alloc(8);
      emit(Op::PtrAdd, Type::Ptr, 1, out, cur, asI64(idx, true), 0, uint32_t(int32_t(scale)));
      cur = out;
    }
    flush(true);
    return true;
  }
  case I::Load: {
    auto &ld = llvm::cast<llvm::LoadInst>(i);
    Layout l = layoutOf(ld.getType());
    if (l.type == Type::I8 && ld.getType()->isStructTy())
      unsupported("a load of a struct");
    access(Op::Load, l, slot(&i), operand(0), ld.getAlign().value(),
           space(ld.getPointerAddressSpace(), i));
    return true;
  }
  case I::Store: {
    auto &st = llvm::cast<llvm::StoreInst>(i);
    Layout l = layoutOf(st.getValueOperand()->getType());
    if (l.type == Type::I8 && st.getValueOperand()->getType()->isStructTy())
      unsupported("a store of a struct");
    access(Op::Store, l, operand(0), operand(1), st.getAlign().value(),
           space(st.getPointerAddressSpace(), i));
    return true;
  }
  case I::AtomicRMW: {
    auto &rmw = llvm::cast<llvm::AtomicRMWInst>(i);
    Layout l = layoutOf(rmw.getType());
    if (l.lanes != 1)
      unsupported("a vector atomic: " + describe(i));
    emit(Op::AtomicRmw, l.type, 1, slot(&i), operand(0), operand(1), 0,
         space(rmw.getPointerAddressSpace(), i),
         uint8_t(rmwKind(rmw.getOperation(), describe(i))));
    return true;
  }
  case I::AtomicCmpXchg: {
    auto &cx = llvm::cast<llvm::AtomicCmpXchgInst>(i);
    Layout l = layoutOf(cx.getCompareOperand()->getType());
    if (l.lanes != 1 || isFloatType(l.type))
      unsupported("the compare-exchange " + describe(i));
    emit(Op::CmpXchg, l.type, 1, slot(&i), operand(0), operand(1), operand(2),
         space(cx.getPointerAddressSpace(), i));
    return true;
  }
  case I::Fence:
    return true; // the emulator's memory is sequentially consistent within a workgroup
  default:
    return false;
  }
}

// translate() of vector and struct element accesses. False when `i` is none of them.
bool FunctionTranslator::translateAggregate(const llvm::Instruction &i) {
  using I = llvm::Instruction;
  unsigned opc = i.getOpcode();
  auto operand = [&](unsigned n) { return slot(i.getOperand(n)); };
  switch (opc) {
  case I::ExtractElement: {
    Layout l = layoutOf(i.getType());
    Layout src = layoutOf(i.getOperand(0)->getType());
    emit(Op::Extract, l.type, 1, slot(&i), operand(0), asI64(i.getOperand(1), false), 0, 0,
         uint8_t(src.lanes));
    return true;
  }
  case I::InsertElement: {
    Layout l = layoutOf(i.getType());
    emit(Op::Insert, l.type, l.lanes, slot(&i), operand(0), operand(1),
         asI64(i.getOperand(2), false));
    return true;
  }
  case I::ShuffleVector: {
    auto &sv = llvm::cast<llvm::ShuffleVectorInst>(i);
    Layout l = layoutOf(i.getType());
    Layout src = layoutOf(sv.getOperand(0)->getType());
    uint32_t at = uint32_t(extra.size());
    extra.push_back(src.lanes);
    for (int m : sv.getShuffleMask())
      extra.push_back(uint32_t(m));
    emit(Op::Shuffle, l.type, l.lanes, slot(&i), operand(0), operand(1), 0, at);
    return true;
  }
  case I::ExtractValue: {
    auto &ev = llvm::cast<llvm::ExtractValueInst>(i);
    llvm::Type *t = ev.getAggregateOperand()->getType();
    uint32_t off = 0;
    for (unsigned idx : ev.indices()) {
      auto *st = llvm::dyn_cast<llvm::StructType>(t);
      if (!st)
        unsupported("an extractvalue from an array: " + describe(i));
      off += fieldOffset(st, idx);
      t = st->getElementType(idx);
    }
    emit(Op::Copy, Type::I8, 1, slot(&i), operand(0) + off, 0, 0, layoutOf(i.getType()).bytes);
    return true;
  }
  case I::InsertValue: {
    auto &iv = llvm::cast<llvm::InsertValueInst>(i);
    llvm::Type *t = iv.getType();
    uint32_t off = 0;
    for (unsigned idx : iv.indices()) {
      auto *st = llvm::dyn_cast<llvm::StructType>(t);
      if (!st)
        unsupported("an insertvalue into an array: " + describe(i));
      off += fieldOffset(st, idx);
      t = st->getElementType(idx);
    }
    uint32_t out = slot(&i);
    emit(Op::Copy, Type::I8, 1, out, operand(0), 0, 0, layoutOf(iv.getType()).bytes);
    emit(Op::Copy, Type::I8, 1, out + off, operand(1), 0, 0, layoutOf(t).bytes);
    return true;
  }
  default:
    return false;
  }
}

// translate() of phis, calls and terminators. False when `i` is none of them.
bool FunctionTranslator::translateControl(const llvm::Instruction &i) {
  using I = llvm::Instruction;
  unsigned opc = i.getOpcode();
  auto operand = [&](unsigned n) { return slot(i.getOperand(n)); };
  switch (opc) {
  case I::PHI:
    slot(&i);
    return true;
  case I::Call:
    translateCall(llvm::cast<llvm::CallInst>(i));
    return true;
  case I::Ret:
    emit(Op::Ret, Type::I8, 1);
    return true;
  case I::Unreachable:
    emit(Op::Trap, Type::I8, 1);
    return true;
  case I::Br: {
    auto &br = llvm::cast<llvm::BranchInst>(i);
    if (br.isUnconditional()) {
      emitPhiCopies(br.getParent(), br.getSuccessor(0));
      branchTo(nullptr, br.getSuccessor(0), emit(Op::Br, Type::I8, 1), 0);
      return true;
    }
    size_t at = emit(Op::CondBr, Type::I8, 1, 0, operand(0));
    branchTo(br.getParent(), br.getSuccessor(0), at, 1);
    branchTo(br.getParent(), br.getSuccessor(1), at, 2);
    return true;
  }
  case I::Switch: {
    auto &sw = llvm::cast<llvm::SwitchInst>(i);
    Layout l = layoutOf(sw.getCondition()->getType());
    uint32_t at = uint32_t(extra.size());
    extra.push_back(sw.getNumCases());
    extra.push_back(0);
    size_t inst = emit(Op::Switch, l.type, 1, 0, operand(0), 0, 0, at);
    extraPcFixups_.push_back({at + 1, fixups_.size()});
    fixups_.push_back({inst, -1, sw.getDefaultDest(), sw.getParent()});
    for (auto &c : sw.cases()) {
      uint64_t v = c.getCaseValue()->getZExtValue();
      extra.push_back(uint32_t(v));
      extra.push_back(uint32_t(v >> 32));
      extra.push_back(0);
      extraPcFixups_.push_back({extra.size() - 1, fixups_.size()});
      fixups_.push_back({inst, -1, c.getCaseSuccessor(), sw.getParent()});
    }
    return true;
  }
  default:
    return false;
  }
}

void FunctionTranslator::translate(const llvm::Instruction &i) {
  setLoc(i);
  if (translateArith(i) || translateMemory(i) || translateAggregate(i) || translateControl(i))
    return;
  unsupported("the instruction " + describe(i));
}

// The interpreter's wgmma register-hazard check (runtime/src/emu/regcheck.cpp) tags the frame
// words of a wgmma's A registers and accumulators, and moves carry an accumulator's tag along:
// the asm call's i32 operands (A's registers) keep slots of their own, and the call and every
// value moved out of its result (extractvalue, vector inserts and extracts, shuffles, bit
// casts, phis) share slots only among themselves, so that no instruction other than a move
// writes a slot that may hold an accumulator while its wgmma is in flight.
void FunctionTranslator::pinWgmmaValues() {
  std::vector<const llvm::Value *> work;
  for (const llvm::BasicBlock &bb : f_)
    for (const llvm::Instruction &i : bb) {
      auto *call = llvm::dyn_cast<llvm::CallInst>(&i);
      if (!call || !call->isInlineAsm() ||
          llvm::cast<llvm::InlineAsm>(call->getCalledOperand())
                  ->getAsmString()
                  .find("wgmma.mma_async") == std::string::npos)
        continue;
      work.push_back(call);
      for (const llvm::Value *op : call->args())
        if (op->getType()->isIntegerTy(32) && llvm::isa<llvm::Instruction>(op))
          pinned_.insert(op);
    }
  while (!work.empty()) {
    const llvm::Value *v = work.back();
    work.pop_back();
    if (!accMoves_.insert(v).second)
      continue;
    for (const llvm::User *u : v->users())
      if (llvm::isa<llvm::ExtractValueInst, llvm::InsertValueInst, llvm::ExtractElementInst,
                    llvm::InsertElementInst, llvm::ShuffleVectorInst, llvm::BitCastInst,
                    llvm::PHINode, llvm::FreezeInst>(u))
        work.push_back(u);
  }
}

void FunctionTranslator::run() {
  // Arguments: the packed buffer at natural alignment (kernel_abi.h).
  uint32_t offset = 0;
  for (const llvm::Argument &a : f_.args()) {
    llvm::Type *t = a.getType();
    uint32_t size = uint32_t(dl_.getTypeAllocSize(t));
    uint32_t align = uint32_t(dl_.getABITypeAlign(t).value());
    offset = (offset + align - 1) / align * align;
    args.push_back({slot(&a), offset, size});
    if (t->isPointerTy() && t->getPointerAddressSpace() == 3)
      unsupported("a shared-memory pointer argument");
    offset += size;
  }
  pinWgmmaValues();
  for (const llvm::BasicBlock &bb : f_) {
    blockPc_[&bb] = uint32_t(insts.size());
    planReuse(bb);
    for (const llvm::Instruction &i : bb) {
      translate(i);
      releaseAfter(i);
    }
  }
  local_.clear();
  // Resolve branches; an edge into a block with phis from a conditional branch goes through a
  // trampoline: the phi copies, then a jump.
  std::map<std::pair<const llvm::BasicBlock *, const llvm::BasicBlock *>, uint32_t> trampolines;
  std::vector<uint32_t> resolved(fixups_.size());
  for (size_t n = 0; n < fixups_.size(); ++n) {
    const Fixup &fx = fixups_[n];
    uint32_t pc = blockPc_.at(fx.target);
    if (fx.from && !fx.target->phis().empty()) {
      auto key = std::make_pair(fx.from, fx.target);
      auto it = trampolines.find(key);
      if (it == trampolines.end()) {
        uint32_t start = uint32_t(insts.size());
        curLoc_ = 0;
        emitPhiCopies(fx.from, fx.target);
        emit(Op::Br, Type::I8, 1, 0, pc);
        it = trampolines.emplace(key, start).first;
      }
      pc = it->second;
    }
    resolved[n] = pc;
    if (fx.field == 0)
      insts[fx.inst].a = pc;
    else if (fx.field == 1)
      insts[fx.inst].b = pc;
    else if (fx.field == 2)
      insts[fx.inst].c = pc;
  }
  for (const auto &[e, n] : extraPcFixups_)
    extra[e] = resolved[n];
  if (insts.empty())
    emit(Op::Ret, Type::I8, 1);
  frameBytes = (frameBytes + 7) & ~7u;
}

void put32(std::string &out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out += char((v >> (8 * i)) & 0xff);
}
void putStr(std::string &out, const std::string &s) {
  put32(out, uint32_t(s.size()));
  out += s;
}

} // namespace emu_translate_detail

using namespace emu_translate_detail;

bool translateToEmuImage(const llvm::Module &module, const std::vector<CodegenKernel> &kernels,
                         const TargetInfo &target, std::string &image, std::string &error,
                         const std::map<std::string, int64_t> &dynamicShared,
                         const std::map<std::string, int64_t> &producerThreads) {
  std::vector<EmuKernelInfo> infos;
  for (const CodegenKernel &ck : kernels) {
    auto dyn = dynamicShared.find(ck.kernel->name);
    auto prod = producerThreads.find(ck.kernel->name);
    // A warp-specialized kernel's producer warpgroup runs after the block's threads along x.
    const unsigned producers = prod == producerThreads.end() ? 0u : unsigned(prod->second);
    infos.push_back({ck.kernel->name,
                     {ck.dist->block[0] + producers, ck.dist->block[1], ck.dist->block[2]},
                     ck.dist->waveSize,
                     dyn == dynamicShared.end() ? 0u : static_cast<unsigned>(dyn->second)});
  }
  return translateToEmuImage(module, infos, target.name, target.defaultWaveSize(), image, error);
}

bool translateToEmuImage(const llvm::Module &module, const std::vector<EmuKernelInfo> &kernels,
                         const std::string &targetName, unsigned defaultWaveSize,
                         std::string &image, std::string &error) {
  const llvm::DataLayout &dl = module.getDataLayout();
  const TargetInfo *target = findTarget(targetName);
  const uint8_t bufferRules = target && target->bufferOobSelect ? 1 : 0;
  ModuleState ms;
  ms.splitUnderaligned = target && target->vendor == Vendor::NVIDIA;
  try {
    // Shared memory: every addrspace(3) global gets an offset; zero-sized (extern) ones are the
    // dynamic shared memory and start after the static part.
    std::vector<const llvm::GlobalVariable *> dynamic;
    for (const llvm::GlobalVariable &g : module.globals()) {
      if (g.getAddressSpace() != 3)
        continue;
      uint64_t size = dl.getTypeAllocSize(g.getValueType());
      if (size == 0) {
        dynamic.push_back(&g);
        continue;
      }
      uint64_t align = std::max<uint64_t>(g.getAlign() ? g.getAlign()->value() : 1, 16);
      uint64_t at = (ms.ldsBytes + align - 1) / align * align;
      if (at + size > (1u << 24))
        throw Unsupported{"more than 16 MiB of shared memory"};
      ms.ldsOffsets[&g] = uint32_t(at);
      ms.ldsBytes = uint32_t(at + size);
    }
    ms.ldsBytes = (ms.ldsBytes + 15) & ~15u;
    for (const llvm::GlobalVariable *g : dynamic)
      ms.ldsOffsets[g] = ms.ldsBytes;

    std::string body;
    for (const EmuKernelInfo &ck : kernels) {
      const std::string &name = ck.name;
      const llvm::Function *f = module.getFunction(name);
      if (!f || f->isDeclaration())
        throw Unsupported{"kernel " + name + " has no function in the module"};
      FunctionTranslator t(*f, dl, ms, Type::Ptr, bufferRules);
      try {
        t.run();
      } catch (Unsupported &u) {
        throw Unsupported{u.what + " (in kernel " + name + ")"};
      }
      putStr(body, name);
      for (int a = 0; a < 3; ++a)
        put32(body, ck.block[a]);
      if (uint64_t(ms.ldsBytes) + ck.dynamicShared > (1u << 24))
        throw Unsupported{"more than 16 MiB of shared memory"};
      put32(body, ms.ldsBytes + ck.dynamicShared);
      put32(body, t.frameBytes);
      put32(body, uint32_t(t.args.size()));
      for (const auto &a : t.args) {
        put32(body, a.slot);
        put32(body, a.offset);
        put32(body, a.size);
      }
      putStr(body, t.init);
      put32(body, uint32_t(t.insts.size()));
      body.append(reinterpret_cast<const char *>(t.insts.data()), t.insts.size() * sizeof(Inst));
      put32(body, uint32_t(t.extra.size()));
      for (uint32_t w : t.extra)
        put32(body, w);
      put32(body, uint32_t(t.locs_.size()));
      for (const auto &l : t.locs_) {
        put32(body, l.file);
        put32(body, l.line);
        put32(body, l.col);
      }
    }
    image.assign(emu::kImageMagic, sizeof emu::kImageMagic);
    put32(image, emu::kImageVersion);
    put32(image, 0); // the checksum, filled in below
    put32(image, 0);
    putStr(image, targetName);
    unsigned wave = kernels.empty() ? defaultWaveSize : kernels.front().waveSize;
    put32(image, wave);
    put32(image, uint32_t(ms.strings.size()));
    for (const auto &s : ms.strings)
      putStr(image, s);
    put32(image, uint32_t(kernels.size()));
    image += body;
    const uint64_t sum =
        emu::imageChecksum(image.data() + emu::kPayloadOffset, image.size() - emu::kPayloadOffset);
    for (int i = 0; i < 8; ++i)
      image[emu::kChecksumOffset + i] = char(sum >> (8 * i));
    return true;
  } catch (const Unsupported &u) {
    error = u.what;
    return false;
  }
}

} // namespace wave
