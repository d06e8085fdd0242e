// Inline PTX in the LLVM module -> emulator instructions (emu_translate_impl.h): the sm_90a
// patterns wavec and MLIR emit (wgmma, TMA, mbarriers, fences, named barriers, register
// reallocation, exit), each recognised exactly; anything else is refused with its text.
#include "codegen/emu_translate_impl.h"

#include "llvm/IR/InlineAsm.h"

#include <cstdio>

namespace wave::emu_translate_detail {

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
  // Named barriers: `bar.sync ID, N;` waits, `bar.arrive ID, N;` counts and goes on (the
  // interpreter keeps an arrival count per ID; docs/internals.md, "The CPU emulator").
  for (const bool sync : {true, false}) {
    const std::string head = sync ? "bar.sync " : "bar.arrive ";
    if (a.text.rfind(head, 0) != 0 ||
        std::sscanf(a.text.c_str() + head.size(), "%u,%u;", &count, &count2) != 2 ||
        a.text != head + std::to_string(count) + "," + std::to_string(count2) + ";")
      continue;
    if (count >= emu::kBarrierIds)
      refuseAsm(a, "a barrier ID above " + std::to_string(emu::kBarrierIds - 1));
    if (count2 == 0 || count2 % 32 != 0)
      refuseAsm(a, "a barrier thread count that is not a positive multiple of 32");
    emit(sync ? Op::Barrier : Op::BarArrive, Type::I8, 1, 0, 0, 0, 0, count2,
         uint8_t(count));
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
  // cp.async.bulk.tensor.Nd (N = 1 .. 5 coordinates) global -> shared, and the 2-d store.
  unsigned dims = 0;
  for (unsigned n = 1; n <= 5 && !dims; ++n) {
    std::string list;
    for (unsigned i = 0; i < n; ++i)
      list += (i ? ",$" : "$") + std::to_string(i + 2);
    if (a.text == "cp.async.bulk.tensor." + std::to_string(n) +
                      "d.shared::cluster.global.mbarrier::complete_tx::bytes[$0],[$1,{" + list +
                      "}],[$" + std::to_string(n + 2) + "];")
      dims = n;
  }
  const bool tmaLoad = dims > 0;
  const bool tmaStore = a.text == "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"
                                "[$0,{$1,$2}],[$3];cp.async.bulk.commit_group;";
  if (tmaStore)
    dims = 2;
  if (tmaLoad || tmaStore) {
    const unsigned m = tmaLoad ? 1 : 0; // the map's operand
    const llvm::Value *map = a.arg("$" + std::to_string(m));
    if (!map || !(map->getType()->isIntegerTy(64) || map->getType()->isPointerTy()))
      refuseAsm(a, "a tensor map that is not a 64-bit operand");
    const uint32_t coords = alloc(4 * dims);
    for (unsigned i = 0; i < dims; ++i)
      emit(Op::Copy, Type::I8, 1, coords + 4 * i,
           asmI32(a, ("$" + std::to_string(m + 1 + i)).c_str(), "a TMA coordinate"), 0, 0, 4);
    if (tmaLoad)
      emit(Op::TmaLoad, Type::I8, 1,
           asmI32(a, ("$" + std::to_string(dims + 2)).c_str(), "an mbarrier address"),
           asmI32(a, "$0", "a shared-memory address"), slot(map), coords, dims);
    else
      emit(Op::TmaStore, Type::I8, 1, 0, asmI32(a, "$3", "a shared-memory address"), slot(map),
           coords, dims);
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
  // The register fence (TargetLowering::registerFence): an empty asm whose one output is tied
  // to its one input, a copy.
  if (a.text.empty() && a.cons.size() == 2 && a.cons[0] == "=f" && a.cons[1] == "0" &&
      call.arg_size() == 1) {
    emit(Op::Copy, Type::I8, 1, slot(&call), slot(call.getArgOperand(0)), 0, 0, 4);
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


} // namespace wave::emu_translate_detail
