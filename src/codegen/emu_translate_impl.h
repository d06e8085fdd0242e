// The translator of one kernel function into the emulator's bytecode (emu_translate.cpp; the
// inline PTX patterns in emu_translate_asm.cpp). Internal to src/codegen/emu_translate*.cpp.
#pragma once

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


namespace wave::emu_translate_detail {

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

inline std::string describe(const llvm::Value &v) {
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
      auto &free = free_[freeKey(v, bytes)];
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
  // wgmma's registers (pinWgmmaValues): its A operands keep slots of their own (never local);
  // the values moved out of its results share slots only among themselves (their own free
  // lists), so an instruction that is not a move never writes a slot that may hold an
  // accumulator in flight.
  std::set<const llvm::Value *> pinned_, accMoves_;
  void pinWgmmaValues();
  uint32_t freeKey(const llvm::Value *v, uint32_t bytes) const {
    return accMoves_.count(v) ? bytes | 0x80000000u : bytes;
  }
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
      if (inBlock && !i.use_empty() && !pinned_.count(&i))
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
      free_[freeKey(v, layoutOf(v->getType()).bytes)].push_back(slots_.at(v));
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
    insts.push_back(makeInst(op, type, lanes, dst, a, b, c, imm, aux, curLoc_));
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

} // namespace wave::emu_translate_detail
