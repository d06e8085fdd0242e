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

namespace wave {
namespace {

using emu::Inst;
using emu::Op;
using emu::Type;

struct Unsupported {
  std::string what;
};

// The layout of an LLVM value type in a frame.
struct Layout {
  Type type = Type::I8;
  uint32_t lanes = 1;
  uint32_t bytes = 0;
};

std::string describe(const llvm::Value &v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  v.print(os);
  size_t b = s.find_first_not_of(' ');
  return b == std::string::npos ? s : s.substr(b);
}

struct ModuleState {
  std::vector<std::string> strings;
  std::map<std::string, uint32_t> stringIds;
  std::map<const llvm::GlobalVariable *, uint32_t> ldsOffsets;
  uint32_t ldsBytes = 0;
  // NVPTX splits a vector load or store whose alignment is below its size into accesses of the
  // alignment (PTX's vector accesses must be aligned to their size); the emulator does the same
  // so that what it executes, and what `wave-run --profile` counts, is what the GPU executes.
  bool splitUnderaligned = false;
  uint32_t str(const std::string &s) {
    auto it = stringIds.find(s);
    if (it != stringIds.end())
      return it->second;
    strings.push_back(s);
    return stringIds[s] = uint32_t(strings.size() - 1);
  }
};

struct AsmCall; // an inline PTX call (translateAsm)

class FunctionTranslator {
public:
  FunctionTranslator(const llvm::Function &f, const llvm::DataLayout &dl, ModuleState &ms,
                     Type ptrType, uint8_t bufferRules)
      : f_(f), dl_(dl), ms_(ms), ptr_(ptrType), bufferRules_(bufferRules) {
    locs_.push_back({emu::kNoString, 0, 0});
  }

  void run();

  std::vector<Inst> insts;
  std::vector<uint32_t> extra;
  std::string init; // the frame's initial bytes (constants)
  uint32_t frameBytes = 0;
  struct Arg {
    uint32_t slot, offset, size;
  };
  std::vector<Arg> args;
  struct Loc {
    uint32_t file, line, col;
  };
  std::vector<Loc> locs_;

private:
  const llvm::Function &f_;
  const llvm::DataLayout &dl_;
  ModuleState &ms_;
  Type ptr_;
  uint8_t bufferRules_; // Op::BufferLoad's aux: 1 = gfx10+ descriptor rules
  std::map<const llvm::Value *, uint32_t> slots_;
  std::map<const llvm::BasicBlock *, uint32_t> blockPc_;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, uint32_t> locIds_;
  uint32_t curLoc_ = 0;
  // (instruction index, field 0=a 1=b 2=c, target block); resolved after all blocks.
  struct Fixup {
    size_t inst;
    int field;
    const llvm::BasicBlock *target;
    const llvm::BasicBlock *from; // for edges with phis: a trampoline is needed
  };
  std::vector<Fixup> fixups_;
  std::vector<std::pair<size_t, size_t>> extraPcFixups_; // (extra index, fixup index)

  // Names the construct and, when the instruction has one, the .wave location it comes from.
  [[noreturn]] void unsupported(const std::string &what) {
    if (curLoc_ == 0)
      throw Unsupported{what};
    const Loc &l = locs_[curLoc_];
    throw Unsupported{what + " (from " + ms_.strings[l.file] + ":" + std::to_string(l.line) +
                      ":" + std::to_string(l.col) + ")"};
  }

  Layout layoutOf(llvm::Type *t) {
    Layout l;
    if (auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(t)) {
      l = layoutOf(vt->getElementType());
      l.lanes = vt->getNumElements();
      if (l.lanes > emu::kMaxLanes)
        unsupported("a vector of " + std::to_string(l.lanes) + " elements");
      l.bytes = l.lanes * emu::typeSize(l.type);
      return l;
    }
    if (t->isIntegerTy(1))
      l.type = Type::I1;
    else if (t->isIntegerTy(8))
      l.type = Type::I8;
    else if (t->isIntegerTy(16))
      l.type = Type::I16;
    else if (t->isIntegerTy(32))
      l.type = Type::I32;
    else if (t->isIntegerTy(64))
      l.type = Type::I64;
    else if (t->isHalfTy())
      l.type = Type::F16;
    else if (t->isBFloatTy())
      l.type = Type::BF16;
    else if (t->isFloatTy())
      l.type = Type::F32;
    else if (t->isDoubleTy())
      l.type = Type::F64;
    else if (t->isPointerTy())
      l.type = Type::Ptr;
    else if (auto *st = llvm::dyn_cast<llvm::StructType>(t)) {
      uint32_t off = 0;
      for (llvm::Type *e : st->elements()) {
        Layout fl = layoutOf(e);
        uint32_t a = std::min<uint32_t>(8, emu::typeSize(fl.type));
        off = (off + a - 1) / a * a + fl.bytes;
      }
      l.type = Type::I8;
      l.bytes = off;
      l.lanes = off;
      return l;
    } else {
      std::string s;
      llvm::raw_string_ostream os(s);
      t->print(os);
      unsupported("values of type " + s);
    }
    l.bytes = emu::typeSize(l.type);
    return l;
  }

  // Byte offset of field `index` of a struct type laid out as layoutOf does.
  uint32_t fieldOffset(llvm::StructType *st, unsigned index) {
    uint32_t off = 0;
    for (unsigned i = 0; i < st->getNumElements(); ++i) {
      Layout fl = layoutOf(st->getElementType(i));
      uint32_t a = std::min<uint32_t>(8, emu::typeSize(fl.type));
      off = (off + a - 1) / a * a;
      if (i == index)
        return off;
      off += fl.bytes;
    }
    return off;
  }

  uint32_t alloc(uint32_t bytes) {
    uint32_t s = (frameBytes + 7) & ~7u;
    frameBytes = s + std::max(bytes, 1u);
    if (frameBytes > emu::kMaxFrameBytes)
      unsupported("a kernel needing more than 1 MiB of registers per thread");
    return s;
  }

  uint32_t constSlot(const llvm::Constant *c) {
    Layout l = layoutOf(c->getType());
    uint32_t s = alloc(l.bytes);
    if (init.size() < s + l.bytes)
      init.resize(s + l.bytes, '\0');
    writeConstant(c, reinterpret_cast<unsigned char *>(&init[s]));
    return s;
  }

  uint64_t pointerConstant(const llvm::Constant *c) {
    if (llvm::isa<llvm::ConstantPointerNull>(c) || llvm::isa<llvm::UndefValue>(c))
      return 0;
    if (auto *g = llvm::dyn_cast<llvm::GlobalVariable>(c)) {
      auto it = ms_.ldsOffsets.find(g);
      if (it == ms_.ldsOffsets.end())
        unsupported("the global variable @" + g->getName().str() + " (only shared memory is)");
      return it->second;
    }
    if (auto *ce = llvm::dyn_cast<llvm::ConstantExpr>(c)) {
      if (ce->getOpcode() == llvm::Instruction::GetElementPtr) {
        auto *gep = llvm::cast<llvm::GEPOperator>(ce);
        llvm::APInt off(64, 0);
        if (gep->accumulateConstantOffset(dl_, off))
          return pointerConstant(llvm::cast<llvm::Constant>(gep->getPointerOperand())) +
                 off.getSExtValue();
      }
      if (ce->getOpcode() == llvm::Instruction::AddrSpaceCast &&
          ce->getType()->getPointerAddressSpace() == 3)
        return pointerConstant(ce->getOperand(0));
    }
    unsupported("the pointer constant " + describe(*c));
  }

  // An integer constant expression over shared-memory addresses (the offset the emulator gives
  // a shared global): ptrtoint, integer arithmetic and casts, as LLVM folds the rounding of the
  // wgmma arena's base (`0 - ptrtoint @lds`). False when `c` is something else.
  bool intConstant(const llvm::Constant *c, uint64_t &v) {
    if (auto *ci = llvm::dyn_cast<llvm::ConstantInt>(c)) {
      if (ci->getBitWidth() > 64)
        return false;
      v = ci->getZExtValue();
      return true;
    }
    auto *ce = llvm::dyn_cast<llvm::ConstantExpr>(c);
    if (!ce || !ce->getType()->isIntegerTy() || ce->getType()->getIntegerBitWidth() > 64)
      return false;
    const unsigned bits = ce->getType()->getIntegerBitWidth();
    const uint64_t mask = bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
    using I = llvm::Instruction;
    if (ce->getOpcode() == I::PtrToInt) {
      auto *p = llvm::cast<llvm::Constant>(ce->getOperand(0));
      const unsigned as = p->getType()->getPointerAddressSpace();
      if (as != 3)
        return false;
      v = pointerConstant(p) & mask;
      return true;
    }
    uint64_t a = 0, b = 0;
    if (ce->getNumOperands() == 0 ||
        !intConstant(llvm::cast<llvm::Constant>(ce->getOperand(0)), a))
      return false;
    if (ce->isCast()) {
      if (ce->getOpcode() == I::Trunc || ce->getOpcode() == I::ZExt) {
        v = a & mask;
        return true;
      }
      return false;
    }
    if (ce->getNumOperands() != 2 || !intConstant(llvm::cast<llvm::Constant>(ce->getOperand(1)), b))
      return false;
    switch (ce->getOpcode()) {
    case I::Add: v = a + b; break;
    case I::Sub: v = a - b; break;
    case I::Mul: v = a * b; break;
    case I::And: v = a & b; break;
    case I::Or: v = a | b; break;
    case I::Xor: v = a ^ b; break;
    case I::Shl: v = b >= 64 ? 0 : a << b; break;
    default: return false;
    }
    v &= mask;
    return true;
  }

  void writeConstant(const llvm::Constant *c, unsigned char *out) {
    llvm::Type *t = c->getType();
    if (llvm::isa<llvm::UndefValue>(c) || llvm::isa<llvm::ConstantAggregateZero>(c) ||
        c->isNullValue())
      return; // zero
    if (t->isIntegerTy()) {
      uint64_t v = 0;
      if (intConstant(c, v)) {
        std::memcpy(out, &v, emu::typeSize(layoutOf(t).type));
        return;
      }
    }
    if (auto *cf = llvm::dyn_cast<llvm::ConstantFP>(c)) {
      uint64_t v = cf->getValueAPF().bitcastToAPInt().getZExtValue();
      std::memcpy(out, &v, emu::typeSize(layoutOf(t).type));
      return;
    }
    if (t->isPointerTy()) {
      uint64_t v = pointerConstant(c);
      std::memcpy(out, &v, 8);
      return;
    }
    if (auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(t)) {
      uint32_t es = emu::typeSize(layoutOf(vt->getElementType()).type);
      for (unsigned i = 0; i < vt->getNumElements(); ++i)
        writeConstant(c->getAggregateElement(i), out + i * es);
      return;
    }
    if (auto *st = llvm::dyn_cast<llvm::StructType>(t)) {
      for (unsigned i = 0; i < st->getNumElements(); ++i)
        writeConstant(c->getAggregateElement(i), out + fieldOffset(st, i));
      return;
    }
    unsupported("the constant " + describe(*c));
  }

  uint32_t slot(const llvm::Value *v) {
    auto it = slots_.find(v);
    if (it != slots_.end())
      return it->second;
    if (auto *c = llvm::dyn_cast<llvm::Constant>(v))
      return slots_[v] = constSlot(c);
    uint32_t bytes = layoutOf(v->getType()).bytes;
    // A value that lives inside one block takes a slot freed by an earlier one there.
    if (local_.count(v)) {
      auto &free = free_[bytes];
      if (!free.empty()) {
        uint32_t s = free.back();
        free.pop_back();
        return slots_[v] = s;
      }
    }
    return slots_[v] = alloc(bytes);
  }

  // Slot reuse: values defined and used only inside their block (no phi use), and the last
  // instruction of the block that uses each of them.
  std::set<const llvm::Value *> local_;
  std::map<const llvm::Instruction *, std::vector<const llvm::Value *>> lastUses_;
  std::map<uint32_t, std::vector<uint32_t>> free_; // bytes -> free slots
  void planReuse(const llvm::BasicBlock &bb) {
    local_.clear();
    lastUses_.clear();
    free_.clear();
    std::map<const llvm::Value *, const llvm::Instruction *> last;
    for (const llvm::Instruction &i : bb) {
      if (llvm::isa<llvm::PHINode>(i) || i.getType()->isVoidTy())
        continue;
      bool inBlock = true;
      for (const llvm::User *u : i.users()) {
        auto *ui = llvm::dyn_cast<llvm::Instruction>(u);
        if (!ui || ui->getParent() != &bb || llvm::isa<llvm::PHINode>(ui)) {
          inBlock = false;
          break;
        }
      }
      if (inBlock && !i.use_empty())
        local_.insert(&i);
    }
    for (const llvm::Instruction &i : bb)
      for (const llvm::Value *op : i.operands())
        if (local_.count(op))
          last[op] = &i;
    // In program order (not pointer order), so that slot assignment is reproducible.
    for (const llvm::Instruction &i : bb)
      for (const llvm::Value *op : i.operands()) {
        auto it = last.find(op);
        if (it == last.end() || it->second != &i)
          continue;
        auto &list = lastUses_[&i];
        if (std::find(list.begin(), list.end(), op) == list.end())
          list.push_back(op);
      }
  }
  void releaseAfter(const llvm::Instruction &i) {
    auto it = lastUses_.find(&i);
    if (it == lastUses_.end())
      return;
    for (const llvm::Value *v : it->second)
      free_[layoutOf(v->getType()).bytes].push_back(slots_.at(v));
  }

  std::map<int64_t, uint32_t> i64Consts_;
  uint32_t i64Const(int64_t v) {
    auto it = i64Consts_.find(v);
    if (it != i64Consts_.end())
      return it->second;
    uint32_t s = i64Consts_[v] = alloc(8);
    if (init.size() < s + 8)
      init.resize(s + 8, '\0');
    std::memcpy(&init[s], &v, 8);
    return s;
  }

  size_t emit(Op op, Type type, uint32_t lanes, uint32_t dst = 0, uint32_t a = 0, uint32_t b = 0,
              uint32_t c = 0, uint32_t imm = 0, uint8_t aux = 0) {
    Inst i{};
    i.op = uint16_t(op);
    i.type = uint8_t(type);
    i.aux = aux;
    i.lanes = lanes;
    i.dst = dst;
    i.a = a;
    i.b = b;
    i.c = c;
    i.imm = imm;
    i.loc = curLoc_;
    insts.push_back(i);
    return insts.size() - 1;
  }

  // An integer value as an i64 slot (sign- or zero-extended).
  uint32_t asI64(const llvm::Value *v, bool isSigned) {
    if (auto *ci = llvm::dyn_cast<llvm::ConstantInt>(v))
      return i64Const(isSigned ? ci->getSExtValue() : int64_t(ci->getZExtValue()));
    Layout l = layoutOf(v->getType());
    if (l.type == Type::I64)
      return slot(v);
    uint32_t t = alloc(8);
    emit(isSigned ? Op::SExt : Op::ZExt, Type::I64, 1, t, slot(v), 0, 0, 0, uint8_t(l.type));
    return t;
  }

  uint8_t space(unsigned as, const llvm::Instruction &i) {
    if (as == 0 || as == 1 || as == 4)
      return uint8_t(emu::Space::Global);
    if (as == 3)
      return uint8_t(emu::Space::Shared);
    unsupported("a memory access in address space " + std::to_string(as) + ": " + describe(i));
  }

  void setLoc(const llvm::Instruction &i) {
    curLoc_ = 0;
    const llvm::DILocation *dl = i.getDebugLoc().get();
    // Inlined code: the outermost location is the kernel's.
    while (dl && dl->getInlinedAt())
      dl = dl->getInlinedAt();
    if (!dl || dl->getLine() == 0)
      return;
    std::string file = dl->getFilename().str();
    if (file.empty() || file == "<unknown>" || file == "<wavec-mlir>")
      return;
    auto key = std::make_tuple(ms_.str(file), dl->getLine(), dl->getColumn());
    auto it = locIds_.find(key);
    if (it != locIds_.end()) {
      curLoc_ = it->second;
      return;
    }
    locs_.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key)});
    curLoc_ = locIds_[key] = uint32_t(locs_.size() - 1);
  }

  void branchTo(const llvm::BasicBlock *from, const llvm::BasicBlock *to, size_t inst, int field) {
    fixups_.push_back({inst, field, to, from});
  }

  void translateCall(const llvm::CallInst &call);
  void translateAsm(const llvm::CallInst &call);
  bool translateSyncAsm(const AsmCall &a);
  void translateWgmmaAsm(const AsmCall &a);
  [[noreturn]] void refuseAsm(const AsmCall &a, const std::string &why);
  uint32_t asmI32(const AsmCall &a, const char *tok, const char *what);
  bool callControl(const llvm::CallInst &call, const std::string &name, const Layout &rl);
  bool callMath(const llvm::CallInst &call, const std::string &name, const Layout &rl);
  bool callMemory(const llvm::CallInst &call, const std::string &name, const Layout &rl);
  bool callWave(const llvm::CallInst &call, const std::string &name, const Layout &rl);
  bool callMma(const llvm::CallInst &call, const std::string &name, const Layout &rl);
  void translate(const llvm::Instruction &i);
  bool translateArith(const llvm::Instruction &i);
  bool translateMemory(const llvm::Instruction &i);
  void access(Op op, const Layout &l, uint32_t value, uint32_t ptr, uint64_t align,
              uint32_t addressSpace);
  bool translateAggregate(const llvm::Instruction &i);
  bool translateControl(const llvm::Instruction &i);
  void emitPhiCopies(const llvm::BasicBlock *from, const llvm::BasicBlock *to);
};

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
namespace {

// The asm text with runs of white space made one space and no space around , ; { } [ ].
std::string compactAsm(const std::string &text) {
  std::string out;
  bool space = false;
  for (char ch : text) {
    if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
      space = !out.empty();
      continue;
    }
    const bool punct = std::strchr(",;{}[]", ch) != nullptr;
    if (space && !punct && !std::strchr(",;{}[]", out.back()))
      out += ' ';
    space = false;
    out += ch;
  }
  return out;
}

// Splits "a,{b,c},d" at the commas outside braces.
std::vector<std::string> splitOperands(const std::string &s) {
  std::vector<std::string> parts(1);
  int depth = 0;
  for (char ch : s) {
    if (ch == '{')
      ++depth;
    if (ch == '}')
      --depth;
    if (ch == ',' && depth == 0)
      parts.emplace_back();
    else
      parts.back() += ch;
  }
  return parts;
}

} // namespace

// One inline PTX call: its compacted text, the constraint list (outputs "=...", then inputs:
// the call's arguments in order) and the operand lookups of the patterns below.
struct AsmCall {
  const llvm::CallInst &call;
  std::string text;
  std::vector<std::string> cons;
  uint32_t outputs = 0;

  explicit AsmCall(const llvm::CallInst &c) : call(c) {
    auto *ia = llvm::cast<llvm::InlineAsm>(call.getCalledOperand());
    text = compactAsm(ia->getAsmString());
    const std::string con = ia->getConstraintString();
    size_t at = 0;
    while (!con.empty() && at <= con.size()) {
      size_t comma = con.find(',', at);
      if (comma == std::string::npos)
        comma = con.size();
      cons.push_back(con.substr(at, comma - at));
      at = comma + 1;
    }
    while (outputs < cons.size() && cons[outputs].rfind("=", 0) == 0)
      ++outputs;
  }
  // Operand $n: an output (n < outputs, none here) or call argument n - outputs.
  const llvm::Value *arg(const std::string &tok) const {
    if (tok.size() < 2 || tok[0] != '$' ||
        tok.find_first_not_of("0123456789", 1) != std::string::npos)
      return nullptr;
    const unsigned n = unsigned(std::stoul(tok.substr(1)));
    if (n < outputs || n - outputs >= call.arg_size())
      return nullptr;
    return call.getArgOperand(n - outputs);
  }
  // An immediate: a literal or an operand that is a constant integer.
  bool immediate(const std::string &tok, int64_t &v) const {
    if (const llvm::Value *a = arg(tok)) {
      auto *ci = llvm::dyn_cast<llvm::ConstantInt>(a);
      if (!ci)
        return false;
      v = ci->getSExtValue();
      return true;
    }
    if (tok.empty() || tok.find_first_not_of("-0123456789") != std::string::npos)
      return false;
    v = std::stoll(tok);
    return true;
  }
  // The text is `format` with one %u filled in (v).
  bool number(const char *format, uint32_t &v) const {
    char rebuilt[160];
    if (std::sscanf(text.c_str(), format, &v) != 1)
      return false;
    std::snprintf(rebuilt, sizeof rebuilt, format, v);
    return text == rebuilt;
  }
};

// Fences, mbarriers, TMA copies, named barriers, register reallocation and `exit`; false when
// the text is none of them.
bool FunctionTranslator::translateSyncAsm(const AsmCall &a) {
  // wgmma's results are computed at issue (Op::Wgmma); its commit and wait delimit how long its
  // shared-memory reads stay in flight for the race detector. The register fence and the
  // generic-to-async proxy fence order nothing more in the emulator.
  if (a.text == "wgmma.fence.sync.aligned;" || a.text == "fence.proxy.async.shared::cta;")
    return true;
  if (a.text == "wgmma.commit_group.sync.aligned;") {
    emit(Op::WgmmaCommit, Type::I8, 1);
    return true;
  }
  if (a.text == "wgmma.wait_group.sync.aligned $0;") {
    int64_t n = 0;
    if (!a.immediate("$0", n) || n < 0 || n > 0xffff)
      refuseAsm(a, "a group count that is not a small constant");
    emit(Op::WgmmaWait, Type::I8, 1, 0, 0, 0, 0, uint32_t(n));
    return true;
  }
  // Warp specialization and the TMA loops (docs/internals.md, "The CPU emulator"): register
  // reallocation and the fences need nothing in the model; `exit` ends the thread; the TMA
  // stores land at issue, so their read wait has nothing left to wait for.
  uint32_t count = 0, count2 = 0;
  if (a.text == "fence.mbarrier_init.release.cluster;fence.proxy.async.shared::cta;" ||
      a.text == "cp.async.bulk.wait_group.read 0;" ||
      a.number("setmaxnreg.inc.sync.aligned.u32 %u;", count) ||
      a.number("setmaxnreg.dec.sync.aligned.u32 %u;", count))
    return true;
  if (a.text == "exit;") {
    emit(Op::Ret, Type::I8, 1);
    return true;
  }
  if (std::sscanf(a.text.c_str(), "bar.sync %u,%u;", &count, &count2) == 2 &&
      a.text == "bar.sync " + std::to_string(count) + "," + std::to_string(count2) + ";") {
    if (count2 == 0 || count2 % 32 != 0)
      refuseAsm(a, "a barrier thread count that is not a positive multiple of 32");
    emit(Op::Barrier, Type::I8, 1, 0, 0, 0, 0, count2);
    return true;
  }
  if (a.number("mbarrier.init.shared::cta.b64[$0],%u;", count)) {
    emit(Op::MbarInit, Type::I8, 1, 0, asmI32(a, "$0", "an mbarrier address"), 0, 0, count);
    return true;
  }
  if (a.number("{.reg .b64 st;mbarrier.arrive.expect_tx.shared::cta.b64 st,[$0],%u;}", count) ||
      a.text == "{.reg .b64 st;mbarrier.arrive.shared::cta.b64 st,[$0];}") {
    if (a.text.find("expect_tx") == std::string::npos)
      count = 0;
    emit(Op::MbarArrive, Type::I8, 1, 0, asmI32(a, "$0", "an mbarrier address"), 0, 0, count);
    return true;
  }
  if (a.text == "{.reg .pred p;wave_wait_${:uid}: mbarrier.try_wait.parity.shared::cta.b64 "
              "p,[$0],$1;@!p bra wave_wait_${:uid};}") {
    emit(Op::MbarWait, Type::I8, 1, 0, asmI32(a, "$0", "an mbarrier address"),
         asmI32(a, "$1", "a parity"));
    return true;
  }
  const bool tmaLoad = a.text == "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::"
                               "complete_tx::bytes[$0],[$1,{$2,$3}],[$4];";
  const bool tmaStore = a.text == "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"
                                "[$0,{$1,$2}],[$3];cp.async.bulk.commit_group;";
  if (tmaLoad || tmaStore) {
    const unsigned m = tmaLoad ? 1 : 0; // the map's operand
    const llvm::Value *map = a.arg("$" + std::to_string(m));
    if (!map || !(map->getType()->isIntegerTy(64) || map->getType()->isPointerTy()))
      refuseAsm(a, "a tensor map that is not a 64-bit operand");
    const uint32_t coords = alloc(8);
    for (unsigned i = 0; i < 2; ++i)
      emit(Op::Copy, Type::I8, 1, coords + 4 * i,
           asmI32(a, ("$" + std::to_string(m + 1 + i)).c_str(), "a TMA coordinate"), 0, 0, 4);
    if (tmaLoad)
      emit(Op::TmaLoad, Type::I8, 1, asmI32(a, "$4", "an mbarrier address"),
           asmI32(a, "$0", "a shared-memory address"), slot(map), coords);
    else
      emit(Op::TmaStore, Type::I8, 1, 0, asmI32(a, "$3", "a shared-memory address"), slot(map),
           coords);
    return true;
  }
  return false;
}

// {.reg .pred p;setp.ne.b32 p,SCALE_D,0;wgmma.mma_async...;}: MLIR's form (A and B by
// descriptor) and wavec's register-A form.
void FunctionTranslator::translateWgmmaAsm(const AsmCall &a) {
  const std::string setp = "{.reg .pred p;setp.ne.b32 p,";
  const std::string op = "wgmma.mma_async.sync.aligned.";
  {
    // {.reg .pred p;setp.ne.b32 p,SCALE_D,0;wgmma.mma_async.sync.aligned.m64nNkK.f32.T.T
    //  {d...},A,B,p,scale-a,scale-b[,trans-a,trans-b | ,trans-b];}
    const size_t afterSetp = setp.size(), comma = a.text.find(",0;", afterSetp);
    const size_t opAt = a.text.find(op);
    if (comma == std::string::npos || comma + 3 != opAt || a.text.substr(a.text.size() - 2) != ";}")
      refuseAsm(a, "");
    const std::string scaleD = a.text.substr(afterSetp, comma - afterSetp);
    const size_t brace = a.text.find('{', opAt);
    if (brace == std::string::npos)
      refuseAsm(a, "");
    const std::string shape = a.text.substr(opAt + op.size(), brace - opAt - op.size());
    const std::string list = a.text.substr(brace, a.text.size() - 2 - brace);
    unsigned n = 0, k = 0;
    char types[64] = {};
    if (std::sscanf(shape.c_str(), "m64n%uk%u.f32.%63s", &n, &k, types) != 3)
      refuseAsm(a, "a shape other than m64nNk16/k32 with f32 accumulators");
    const std::string ty = types;
    emu::WgmmaElem elem = emu::WgmmaElem::F16;
    if (ty == "f16.f16" && k == 16)
      elem = emu::WgmmaElem::F16;
    else if (ty == "bf16.bf16" && k == 16)
      elem = emu::WgmmaElem::BF16;
    else if (ty == "e4m3.e4m3" && k == 32)
      elem = emu::WgmmaElem::E4M3;
    else if (ty == "e5m2.e5m2" && k == 32)
      elem = emu::WgmmaElem::E5M2;
    else
      refuseAsm(a, "element types " + ty + " with k" + std::to_string(k));
    if (n == 0 || n > 256 || n % 8 != 0)
      refuseAsm(a, "N = " + std::to_string(n));
    const bool fp8 = k == 32;
    std::vector<std::string> ops = splitOperands(list);
    // The accumulators: a.outputs $0 .. $(N/2 - 1) in order, each tied to the same input.
    const uint32_t acc = n / 2;
    if (a.outputs != acc || a.cons.size() < 2 * acc || ops.size() < 6)
      refuseAsm(a, "unexpected operands");
    for (uint32_t i = 0; i < acc; ++i)
      if (a.cons[i] != "=f" || a.cons[acc + i] != std::to_string(i))
        refuseAsm(a, "unexpected accumulator constraints");
    {
      std::string want = "{";
      for (uint32_t i = 0; i < acc; ++i)
        want += (i ? ",$" : "$") + std::to_string(i);
      if (ops[0] != want + "}")
        refuseAsm(a, "unexpected accumulator list");
    }
    const bool regA = ops[1].front() == '{';
    const size_t want = regA ? 7 : fp8 ? 6 : 8;
    if (ops.size() != want || ops[3] != "p")
      refuseAsm(a, "unexpected operands");
    uint32_t flags = regA ? emu::kWgmmaRegA : 0;
    int64_t v = 0;
    if (!a.immediate(scaleD, v))
      refuseAsm(a, "a scale-d that is not a constant");
    if (v == 0)
      flags |= emu::kWgmmaZeroC;
    for (int which = 0; which < 2; ++which) {
      if (!a.immediate(ops[4 + which], v) || (v != 1 && v != -1))
        refuseAsm(a, "a scale-" + std::string(which ? "b" : "a") + " other than 1 or -1");
      if (v == -1)
        flags |= which ? emu::kWgmmaNegB : emu::kWgmmaNegA;
    }
    for (size_t t = 6; t < ops.size(); ++t) {
      if (!a.immediate(ops[t], v) || (v != 0 && v != 1))
        refuseAsm(a, "a transpose immediate other than 0 or 1");
      const bool transB = regA || t == 7;
      if (v == 1)
        flags |= transB ? emu::kWgmmaTransB : emu::kWgmmaTransA;
    }
    // Operands: C gathered into one contiguous slot, A's descriptor or four registers, B's
    // descriptor.
    const uint32_t c = alloc(4 * acc);
    for (uint32_t i = 0; i < acc; ++i) {
      const llvm::Value *x = a.call.getArgOperand(i);
      if (!x->getType()->isFloatTy())
        refuseAsm(a, "a non-f32 accumulator");
      emit(Op::Copy, Type::I8, 1, c + 4 * i, slot(x), 0, 0, 4);
    }
    uint32_t aSlot = 0;
    if (regA) {
      if (fp8)
        refuseAsm(a, "fp8 with A in registers");
      std::vector<std::string> regs = splitOperands(ops[1].substr(1, ops[1].size() - 2));
      if (regs.size() != 4)
        refuseAsm(a, "an A fragment of other than 4 registers");
      aSlot = alloc(16);
      for (unsigned r = 0; r < 4; ++r) {
        const llvm::Value *x = a.arg(regs[r]);
        if (!x || !x->getType()->isIntegerTy(32))
          refuseAsm(a, "an A register that is not an i32 operand");
        emit(Op::Copy, Type::I8, 1, aSlot + 4 * r, slot(x), 0, 0, 4);
      }
    } else {
      const llvm::Value *x = a.arg(ops[1]);
      if (!x || !x->getType()->isIntegerTy(64))
        refuseAsm(a, "an A descriptor that is not an i64 operand");
      aSlot = slot(x);
    }
    const llvm::Value *b = a.arg(ops[2]);
    if (!b || !b->getType()->isIntegerTy(64))
      refuseAsm(a, "a B descriptor that is not an i64 operand");
    if (layoutOf(a.call.getType()).bytes != 4 * acc)
      refuseAsm(a, "an unexpected result type");
    emit(Op::Wgmma, Type::F32, 1, slot(&a.call), aSlot, slot(b), c, n | flags << 12, uint8_t(elem));
    return;
  }
}


void FunctionTranslator::refuseAsm(const AsmCall &a, const std::string &why) {
  std::string shown = a.text.size() > 160 ? a.text.substr(0, 160) + "..." : a.text;
  unsupported("the inline PTX `" + shown + "`" + (why.empty() ? "" : " (" + why + ")"));
}

uint32_t FunctionTranslator::asmI32(const AsmCall &a, const char *tok, const char *what) {
  const llvm::Value *x = a.arg(tok);
  if (!x || !x->getType()->isIntegerTy(32))
    refuseAsm(a, std::string(what) + " that is not an i32 operand");
  return slot(x);
}

void FunctionTranslator::translateAsm(const llvm::CallInst &call) {
  const AsmCall a(call);
  if (translateSyncAsm(a))
    return;
  if (a.text.rfind("{.reg .pred p;setp.ne.b32 p,", 0) == 0 &&
      a.text.find("wgmma.mma_async.sync.aligned.") != std::string::npos) {
    translateWgmmaAsm(a);
    return;
  }
  // Known sm_90a instructions the emulator does not model yet (docs/internals.md, "The CPU
  // emulator"), named; anything else as unknown.
  static const std::pair<const char *, const char *> known[] = {
      {"cp.async.bulk", "a TMA copy, which the emulator does not model"},
      {"mbarrier.", "an mbarrier operation (TMA loops), which the emulator does not model"},
      {"setmaxnreg.", "warp specialization's register reallocation, which the emulator does not "
                      "model"},
  };
  for (const auto &[needle, what] : known)
    if (a.text.find(needle) != std::string::npos)
      refuseAsm(a, what);
  refuseAsm(a, "inline PTX the emulator does not model");
}

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

} // namespace

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
