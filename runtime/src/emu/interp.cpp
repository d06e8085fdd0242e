// The interpreter: runs every workgroup, wave and thread of a kernel over host memory.
//
// Scheduling: each thread runs on its own until it reaches a workgroup barrier or a
// wave-collective instruction (lane exchanges, matrix instructions) or ends. Once every thread
// of a wave has stopped, the collective instruction with the lowest pc among its waiting
// threads runs for exactly those threads (the others are inactive lanes), and they continue.
// Barriers have IDs (0..15) and count arrivals per phase: one with a thread count completes at
// the arrival that makes the count (bar.sync waits for it, bar.arrive does not), one without
// when every thread that has not ended waits at it; its waiters then continue. A thread
// at an mbarrier wait (sm_90a) whose phase has not completed stops too; the waves are visited
// again while any made progress, and threads blocked with nothing left to run are a reported
// deadlock.
//
// Detectors: every global access is checked against the device's live allocations; every
// shared access against the workgroup's shared memory and a per-byte shadow of the last writer
// and readers in the current barrier epoch (a race: two threads touch a byte in one epoch and
// one of them writes, unless a barrier that not every thread took part in orders the two: the
// vector clocks of runner.h; an uninitialised read: a byte never written in this workgroup), and of the
// asynchronous copy (cp.async) in flight to it, if any: such a byte may be touched by no one
// until the issuing thread's wait completes the copy (emu_image.h, Op::AsyncCopy). On sm_90a,
// the registers of a wgmma in flight (its A registers, its accumulators) are checked too
// (regcheck.cpp).
//
// Step limit: a workgroup may execute at most WAVE_EMU_STEP_LIMIT instructions (all its threads
// together; default kDefaultStepLimit); past it the launch fails with WAVE_ERROR_STEP_LIMIT
// instead of running on (a damaged or wrong kernel that never ends).
#include "runner.h"
#include "emu.h"
#include "interp_values.h"
#include "profile.h"
#include "numeric.h"

#include "../internal.h"

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

namespace wave::emu {
namespace runner_detail {


void Runner::run(Lane &L) {
  const Inst *code = k_.code.data();
  uint8_t *f = L.frame;
  uint32_t pc = L.pc;
  // Instructions are counted per straight-line run, at its branch or stop: steps_ += the run's
  // length. Only a branch can make a thread run on, so the limit is checked there.
  uint32_t runStart = pc;
  auto count = [&] {
    steps_ += uint64_t(pc - runStart) + 1;
    if (prof)
      prof->run(runStart, pc);
  };
  // A branch. False when the step limit faulted the lane.
  auto branchTo = [&](uint32_t target) {
    count();
    if (steps_ > stepLimit_) {
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "the workgroup executed more than %llu instructions (WAVE_EMU_STEP_LIMIT): "
                    "a loop that never ends?",
                    (unsigned long long)stepLimit_);
      fault(L, code[pc], "step limit reached", buf, /*pendingFirst=*/false,
            WAVE_ERROR_STEP_LIMIT);
      L.state = Done;
      return false;
    }
    pc = runStart = target;
    return true;
  };
  for (;;) {
    const Inst &in = code[pc];
    const Type t = Type(in.type);
    if (L.wgLive && !regSkip_[pc] && !regCheck(L, in)) { // a wgmma in flight (regcheck.cpp)
      L.state = Done;
      return;
    }
    switch (Op(in.op)) {
    case Op::Ret:
      count();
      L.state = Done;
      L.pc = pc;
      return;
    case Op::Trap:
      fault(L, in, "trap", "the kernel reached llvm.trap or unreachable code");
      L.state = Done;
      return;
    case Op::Barrier: // waits; released (Ready at pc + 1) when its phase completes
      count();
      L.state = AtBarrier;
      L.pc = pc;
      if (!barrierArrive(L, in))
        L.state = Done;
      return;
    case Op::BarArrive:
      if (!barrierArrive(L, in)) {
        L.state = Done;
        return;
      }
      break;
    case Op::MbarInit: {
      const uint32_t off = rd<uint32_t>(f + in.a);
      Mbar *m = mbar(L, in, off, "mbarrier.init");
      if (!m) {
        L.state = Done;
        return;
      }
      *m = Mbar{};
      m->count = m->pending = in.imm;
      break;
    }
    case Op::MbarArrive:
      if (!mbarArrive(L, in, rd<uint32_t>(f + in.a), in.imm, true,
                      in.imm ? "mbarrier.arrive.expect_tx" : "mbarrier.arrive")) {
        L.state = Done;
        return;
      }
      break;
    case Op::MbarWait: {
      const uint32_t off = rd<uint32_t>(f + in.a);
      const Mbar *m = mbar(L, in, off, "mbarrier.try_wait");
      if (!m) {
        L.state = Done;
        return;
      }
      if ((m->phase & 1) == (rd<uint32_t>(f + in.b) & 1)) { // that phase is still open
        count();
        L.state = AtMbar;
        L.pc = pc;
        return;
      }
      break;
    }
    case Op::WgmmaCommit:
      if (L.lane == 0) // the warp's instruction
        ++wgmma_[L.linear / 32].open;
      ++L.wgOpen;
      break;
    case Op::WgmmaWait:
      if (L.lane == 0 && !wgmmaWait(L, in.imm)) {
        L.state = Done;
        return;
      }
      regWait(L, in.imm);
      break;
    case Op::TmaLoad:
    case Op::TmaStore:
      if (!(Op(in.op) == Op::TmaLoad ? tmaLoad(L, in) : tmaStore(L, in))) {
        L.state = Done;
        return;
      }
      break;
    case Op::Wave:
    case Op::Mma:
    case Op::Wgmma:
      count();
      L.state = AtWave;
      L.pc = pc;
      return;
    case Op::Br:
      if (!branchTo(in.a))
        return;
      continue;
    case Op::CondBr: {
      uint32_t target = (f[in.a] & 1) ? in.b : in.c;
      if (!branchTo(target))
        return;
      continue;
    }
    case Op::Switch: {
      uint64_t v = getU(t, f + in.a);
      const uint32_t *w = &k_.extra[in.imm];
      uint32_t target = w[1];
      for (uint32_t i = 0; i < w[0]; ++i) {
        const uint32_t *c = w + 2 + 3 * i;
        if ((uint64_t(c[0]) | (uint64_t(c[1]) << 32)) == v) {
          target = c[2];
          break;
        }
      }
      if (!branchTo(target))
        return;
      continue;
    }
    case Op::ParCopy: {
      const uint32_t *w = &k_.extra[in.imm];
      uint8_t tmp[8 * kMaxLanes];
      uint32_t n = w[0];
      if (n == 1) {
        std::memmove(f + w[1], f + w[2], w[3]);
      } else {
        // Parallel semantics: read every source before writing any destination.
        std::vector<uint8_t> buf;
        uint32_t total = 0;
        for (uint32_t i = 0; i < n; ++i)
          total += w[1 + 3 * i + 2];
        uint8_t *scratch = total <= sizeof tmp ? tmp : (buf.resize(total), buf.data());
        uint32_t at = 0;
        for (uint32_t i = 0; i < n; ++i) {
          std::memcpy(scratch + at, f + w[1 + 3 * i + 1], w[1 + 3 * i + 2]);
          at += w[1 + 3 * i + 2];
        }
        at = 0;
        for (uint32_t i = 0; i < n; ++i) {
          std::memcpy(f + w[1 + 3 * i], scratch + at, w[1 + 3 * i + 2]);
          at += w[1 + 3 * i + 2];
        }
      }
      break;
    }
    case Op::Copy:
      copyBytes(f + in.dst, f + in.a, in.imm);
      break;
    case Op::Special: {
      uint64_t v = 0;
      switch (Special(in.imm)) {
      case Special::TidX: v = L.tid[0]; break;
      case Special::TidY: v = L.tid[1]; break;
      case Special::TidZ: v = L.tid[2]; break;
      case Special::WgX: v = wg_[0]; break;
      case Special::WgY: v = wg_[1]; break;
      case Special::WgZ: v = wg_[2]; break;
      case Special::NtidX: v = lp_.block[0]; break;
      case Special::NtidY: v = lp_.block[1]; break;
      case Special::NtidZ: v = lp_.block[2]; break;
      case Special::NwgX: v = lp_.grid[0]; break;
      case Special::NwgY: v = lp_.grid[1]; break;
      case Special::NwgZ: v = lp_.grid[2]; break;
      case Special::Lane: v = L.lane; break;
      case Special::WaveSize: v = wave_; break;
      default: break;
      }
      putU(t, f + in.dst, v);
      break;
    }
    case Op::Add: case Op::Sub: case Op::Mul: case Op::UDiv: case Op::SDiv: case Op::URem:
    case Op::SRem: case Op::Shl: case Op::LShr: case Op::AShr: case Op::And: case Op::Or:
    case Op::Xor: case Op::SMin: case Op::SMax: case Op::UMin: case Op::UMax: {
      uint32_t es = typeSize(t);
      if (in.lanes == 1 && t == Type::I64) { // index arithmetic: the common case
        uint64_t a = rd<uint64_t>(f + in.a), b = rd<uint64_t>(f + in.b), r;
        switch (Op(in.op)) {
        case Op::Add: r = a + b; break;
        case Op::Sub: r = a - b; break;
        case Op::Mul: r = a * b; break;
        case Op::And: r = a & b; break;
        case Op::Or: r = a | b; break;
        case Op::Xor: r = a ^ b; break;
        case Op::Shl: r = b >= 64 ? 0 : a << b; break;
        default: r = intBinary(Op(in.op), t, f + in.a, f + in.b); break;
        }
        wr<uint64_t>(f + in.dst, r);
        break;
      }
      if (in.lanes == 1 && t == Type::I1) {
        uint8_t a = f[in.a] & 1, b = f[in.b] & 1;
        switch (Op(in.op)) {
        case Op::And: f[in.dst] = a & b; break;
        case Op::Or: f[in.dst] = a | b; break;
        case Op::Xor: f[in.dst] = a ^ b; break;
        default: f[in.dst] = uint8_t(intBinary(Op(in.op), t, f + in.a, f + in.b) & 1); break;
        }
        break;
      }
      for (uint32_t l = 0; l < in.lanes; ++l)
        putU(t, f + in.dst + l * es,
             intBinary(Op(in.op), t, f + in.a + l * es, f + in.b + l * es) & widthMask(t));
      break;
    }
    case Op::FAdd: case Op::FSub: case Op::FMul: case Op::FDiv: case Op::FRem:
    case Op::MinNum: case Op::MaxNum: case Op::Minimum: case Op::Maximum: case Op::CopySign:
    case Op::Pow: {
      uint32_t es = typeSize(t);
      for (uint32_t l = 0; l < in.lanes; ++l)
        putF(t, f + in.dst + l * es,
             floatBinary(Op(in.op), getF(t, f + in.a + l * es), getF(t, f + in.b + l * es)));
      break;
    }
    case Op::FNeg: case Op::FAbs: case Op::Sqrt: case Op::Rsq: case Op::Rcp: case Op::Exp:
    case Op::Exp2: case Op::Log: case Op::Log2: case Op::Sin: case Op::Cos: case Op::Tanh:
    case Op::Floor: case Op::Ceil: case Op::Trunc: case Op::Round: case Op::Rint: {
      uint32_t es = typeSize(t);
      for (uint32_t l = 0; l < in.lanes; ++l)
        putF(t, f + in.dst + l * es, floatUnary(Op(in.op), getF(t, f + in.a + l * es)));
      break;
    }
    case Op::Abs: case Op::Ctpop: case Op::Ctlz: case Op::Cttz: {
      uint32_t es = typeSize(t), bits = t == Type::I1 ? 1 : es * 8;
      for (uint32_t l = 0; l < in.lanes; ++l) {
        uint64_t v = getU(t, f + in.a + l * es), r = 0;
        switch (Op(in.op)) {
        case Op::Abs: {
          int64_t s = getS(t, f + in.a + l * es);
          r = s < 0 ? 0 - uint64_t(s) : uint64_t(s); // abs(INT_MIN) wraps to INT_MIN
          break;
        }
        case Op::Ctpop: r = uint64_t(__builtin_popcountll(v)); break;
        case Op::Ctlz: r = v ? uint64_t(__builtin_clzll(v) - (64 - int(bits))) : bits; break;
        default: r = v ? uint64_t(__builtin_ctzll(v)) : bits; break;
        }
        putU(t, f + in.dst + l * es, r & widthMask(t));
      }
      break;
    }
    case Op::Fma: {
      uint32_t es = typeSize(t);
      for (uint32_t l = 0; l < in.lanes; ++l) {
        uint32_t o = l * es;
        if (t == Type::F32)
          wr<float>(f + in.dst + o,
                    std::fma(rd<float>(f + in.a + o), rd<float>(f + in.b + o), rd<float>(f + in.c + o)));
        else
          putF(t, f + in.dst + o,
               std::fma(getF(t, f + in.a + o), getF(t, f + in.b + o), getF(t, f + in.c + o)));
      }
      break;
    }
    case Op::Select: {
      uint32_t es = typeSize(t);
      if (in.lanes == 1 || in.aux) {
        copyBytes(f + in.dst, (f[in.a] & 1) ? f + in.b : f + in.c, size_t(es) * in.lanes);
        break;
      }
      for (uint32_t l = 0; l < in.lanes; ++l)
        std::memmove(f + in.dst + l * es, (f[in.a + l] & 1) ? f + in.b + l * es : f + in.c + l * es,
                     es);
      break;
    }
    case Op::ICmp: {
      Type st = Type(in.aux);
      uint32_t es = typeSize(st);
      if (in.lanes == 1 && st == Type::I64) {
        uint64_t a = rd<uint64_t>(f + in.a), b = rd<uint64_t>(f + in.b);
        f[in.dst] = icmp(in.imm, a, b, int64_t(a), int64_t(b));
        break;
      }
      for (uint32_t l = 0; l < in.lanes; ++l) {
        const uint8_t *a = f + in.a + l * es, *b = f + in.b + l * es;
        f[in.dst + l] = icmp(in.imm, getU(st, a), getU(st, b), getS(st, a), getS(st, b));
      }
      break;
    }
    case Op::FCmp: {
      Type st = Type(in.aux);
      uint32_t es = typeSize(st);
      for (uint32_t l = 0; l < in.lanes; ++l)
        f[in.dst + l] = fcmp(in.imm, getF(st, f + in.a + l * es), getF(st, f + in.b + l * es));
      break;
    }
    case Op::TruncI: case Op::ZExt: case Op::SExt: case Op::FPTrunc: case Op::FPExt:
    case Op::FPToSI: case Op::FPToUI: case Op::SIToFP: case Op::UIToFP: case Op::PtrToInt:
    case Op::IntToPtr:
      if (in.lanes == 1 && Op(in.op) == Op::SExt && t == Type::I64 && Type(in.aux) == Type::I32) {
        wr<int64_t>(f + in.dst, rd<int32_t>(f + in.a));
        break;
      }
      cast(in, f);
      break;
    case Op::Extract: {
      uint64_t i = rd<uint64_t>(f + in.b);
      uint32_t es = typeSize(t);
      if (i < in.aux)
        copyBytes(f + in.dst, f + in.a + i * es, es);
      else
        std::memset(f + in.dst, 0, es);
      break;
    }
    case Op::Insert: {
      uint64_t i = rd<uint64_t>(f + in.c);
      uint32_t es = typeSize(t);
      uint8_t tmp[16];
      copyBytes(tmp, f + in.b, es);
      if (in.dst != in.a)
        copyBytes(f + in.dst, f + in.a, size_t(es) * in.lanes);
      if (i < in.lanes)
        copyBytes(f + in.dst + i * es, tmp, es);
      break;
    }
    case Op::Shuffle: {
      const uint32_t *w = &k_.extra[in.imm];
      uint32_t src = w[0], es = typeSize(t);
      uint8_t tmp[8 * kMaxLanes];
      for (uint32_t l = 0; l < in.lanes; ++l) {
        uint32_t m = w[1 + l];
        if (m == 0xffffffffu)
          std::memset(tmp + l * es, 0, es);
        else
          std::memcpy(tmp + l * es, m < src ? f + in.a + m * es : f + in.b + (m - src) * es, es);
      }
      std::memcpy(f + in.dst, tmp, size_t(es) * in.lanes);
      break;
    }
    case Op::PtrAdd:
      // Two's-complement wrap-around, as the GPU's address arithmetic (no signed overflow).
      wr<uint64_t>(f + in.dst, rd<uint64_t>(f + in.a) +
                                   rd<uint64_t>(f + in.b) * uint64_t(int64_t(int32_t(in.imm))));
      break;
    case Op::PtrAddConst:
      wr<uint64_t>(f + in.dst, rd<uint64_t>(f + in.a) + uint64_t(int64_t(int32_t(in.imm))));
      break;
    case Op::Load:
    case Op::MaskedLoad: {
      uint64_t addr = rd<uint64_t>(f + in.a);
      uint32_t es = typeSize(t), bytes = es * in.lanes;
      bool masked = Op(in.op) == Op::MaskedLoad;
      bool shared = in.imm == uint32_t(Space::Shared), first = true;
      for (uint32_t l = 0; l < (masked ? in.lanes : 1); ++l) {
        uint64_t at = masked ? addr + uint64_t(l) * es : addr;
        uint32_t n = masked ? es : bytes;
        uint8_t *d = f + in.dst + (masked ? l * es : 0);
        if (masked && !(f[in.b + l] & 1)) {
          std::memcpy(d, f + in.c + l * es, es);
          continue;
        }
        if (shared) {
          if (!checkShared(L, in, at, n, true, false, false, "load")) {
            L.state = Done;
            return;
          }
          std::memcpy(d, shared_.data() + at, n);
          record(L, in, at, n, first);
        } else {
          if (!checkGlobal(L, in, at, n, "load")) {
            L.state = Done;
            return;
          }
          copyBytes(d, reinterpret_cast<const uint8_t *>(uintptr_t(at)), n);
          record(L, in, at, n, first);
        }
        first = false;
      }
      break;
    }
    case Op::Store:
    case Op::MaskedStore: {
      uint64_t addr = rd<uint64_t>(f + in.a);
      uint32_t es = typeSize(t), bytes = es * in.lanes;
      bool masked = Op(in.op) == Op::MaskedStore;
      bool shared = in.imm == uint32_t(Space::Shared), first = true;
      for (uint32_t l = 0; l < (masked ? in.lanes : 1); ++l) {
        if (masked && !(f[in.c + l] & 1))
          continue;
        uint64_t at = masked ? addr + uint64_t(l) * es : addr;
        uint32_t n = masked ? es : bytes;
        const uint8_t *s = f + in.b + (masked ? l * es : 0);
        record(L, in, at, n, first);
        first = false;
        if (shared) {
          if (!checkShared(L, in, at, n, false, true, false, "store")) {
            L.state = Done;
            return;
          }
          std::memcpy(shared_.data() + at, s, n);
        } else {
          if (!checkGlobal(L, in, at, n, "store")) {
            L.state = Done;
            return;
          }
          copyBytes(reinterpret_cast<uint8_t *>(uintptr_t(at)), s, n);
        }
      }
      break;
    }
    case Op::BufferLoad:
    case Op::BufferStore: {
      const bool store = Op(in.op) == Op::BufferStore;
      uint8_t *data = f + (store ? in.b : in.dst);
      if (!bufferAccess(L, in, f + in.a, rd<uint32_t>(f + (store ? in.c : in.b)),
                        rd<uint32_t>(f + (store ? in.dst : in.c)), data, typeSize(t) * in.lanes,
                        store)) {
        L.state = Done;
        return;
      }
      break;
    }
    case Op::AtomicRmw:
    case Op::CmpXchg: {
      uint64_t addr = rd<uint64_t>(f + in.a);
      uint32_t es = typeSize(t);
      bool shared = in.imm == uint32_t(Space::Shared);
      const char *what = Op(in.op) == Op::CmpXchg ? "compare-exchange" : "atomic";
      record(L, in, addr, es);
      uint8_t *mem;
      if (shared) {
        // An exchange reads nothing it needs: its old value may be a byte never written.
        const bool reads = Op(in.op) == Op::CmpXchg || Rmw(in.aux) != Rmw::Xchg;
        if (!checkShared(L, in, addr, es, reads, true, true, what)) {
          L.state = Done;
          return;
        }
        mem = shared_.data() + addr;
      } else {
        if (!checkGlobal(L, in, addr, es, what)) {
          L.state = Done;
          return;
        }
        if (addr % es) {
          fault(L, in, std::string("misaligned global ") + what, "address " + hex(addr));
          L.state = Done;
          return;
        }
        mem = reinterpret_cast<uint8_t *>(uintptr_t(addr));
      }
      // Workgroups may run on several host threads: global atomics are host atomics.
      auto cas = [&](uint64_t expected, uint64_t desired) -> uint64_t {
        if (es == 1) {
          uint8_t e = uint8_t(expected);
          __atomic_compare_exchange_n(mem, &e, uint8_t(desired), false, __ATOMIC_SEQ_CST,
                                      __ATOMIC_SEQ_CST);
          return e;
        }
        if (es == 2) {
          uint16_t e = uint16_t(expected);
          __atomic_compare_exchange_n(reinterpret_cast<uint16_t *>(mem), &e, uint16_t(desired),
                                      false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
          return e;
        }
        if (es == 4) {
          uint32_t e = uint32_t(expected);
          __atomic_compare_exchange_n(reinterpret_cast<uint32_t *>(mem), &e, uint32_t(desired),
                                      false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
          return e;
        }
        uint64_t e = expected;
        __atomic_compare_exchange_n(reinterpret_cast<uint64_t *>(mem), &e, desired, false,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        return e;
      };
      uint64_t old = getU(t, mem);
      if (Op(in.op) == Op::CmpXchg) {
        uint64_t got = cas(getU(t, f + in.b), getU(t, f + in.c));
        putU(t, f + in.dst, got);
        f[in.dst + es] = got == getU(t, f + in.b);
        break;
      }
      for (;;) {
        uint8_t oldBytes[8], newBytes[8];
        putU(t, oldBytes, old);
        const uint8_t *v = f + in.b;
        Rmw kind = Rmw(in.aux);
        switch (kind) {
        case Rmw::FAdd: putF(t, newBytes, getF(t, oldBytes) + getF(t, v)); break;
        case Rmw::FMax: putF(t, newBytes, std::fmax(getF(t, oldBytes), getF(t, v))); break;
        case Rmw::FMin: putF(t, newBytes, std::fmin(getF(t, oldBytes), getF(t, v))); break;
        default: {
          static const Op ops[] = {Op::Ret, Op::Add, Op::Sub, Op::And, Op::Or, Op::Xor,
                                   Op::SMax, Op::SMin, Op::UMax, Op::UMin};
          uint64_t r = kind == Rmw::Xchg ? getU(t, v)
                                         : intBinary(ops[unsigned(kind)], t, oldBytes, v);
          putU(t, newBytes, r & widthMask(t));
        }
        }
        uint64_t seen = cas(old, getU(t, newBytes));
        if (seen == old)
          break;
        old = seen;
      }
      putU(t, f + in.dst, old);
      break;
    }
    case Op::Mbcnt: {
      uint32_t mask = rd<uint32_t>(f + in.a), acc = rd<uint32_t>(f + in.b);
      uint32_t lane = L.lane;
      uint32_t below = in.aux == 0 ? (lane >= 32 ? ~0u : (1u << lane) - 1)
                                   : (lane <= 32 ? 0u : lane >= 64 ? ~0u : (1u << (lane - 32)) - 1);
      wr<uint32_t>(f + in.dst, acc + uint32_t(__builtin_popcount(mask & below)));
      break;
    }
    case Op::CvtFp8ToF32: {
      uint32_t word = rd<uint32_t>(f + in.a), sel = rd<uint32_t>(f + in.b) & 3;
      wr<float>(f + in.dst, fp8ToFloat(uint8_t(word >> (8 * sel)), in.aux != 0));
      break;
    }
    case Op::CvtPkF32ToFp8: {
      uint32_t old = rd<uint32_t>(f + in.c);
      uint32_t lo = floatToFp8(rd<float>(f + in.a), in.aux != 0);
      uint32_t hi = floatToFp8(rd<float>(f + in.b), in.aux != 0);
      uint32_t pair = lo | (hi << 8);
      uint32_t r = in.imm ? (old & 0x0000ffffu) | (pair << 16) : (old & 0xffff0000u) | pair;
      wr<uint32_t>(f + in.dst, r);
      break;
    }
    case Op::Reduce: {
      uint32_t es = typeSize(t);
      const uint8_t *v = f + in.a;
      Reduce kind = Reduce(in.imm);
      if (kind >= Reduce::FAdd) {
        double acc = kind == Reduce::FAdd || kind == Reduce::FMul ? getF(t, f + in.b)
                                                                  : getF(t, v);
        for (uint32_t l = kind == Reduce::FAdd || kind == Reduce::FMul ? 0 : 1; l < in.aux; ++l) {
          double x = getF(t, v + l * es);
          // Ordered sums round to the element type at every step, as the sequence of fadds does.
          auto rounded = [&](double r) {
            uint8_t tmp[8];
            putF(t, tmp, r);
            return getF(t, tmp);
          };
          switch (kind) {
          case Reduce::FAdd: acc = rounded(acc + x); break;
          case Reduce::FMul: acc = rounded(acc * x); break;
          case Reduce::FMax: acc = std::fmax(acc, x); break;
          case Reduce::FMin: acc = std::fmin(acc, x); break;
          case Reduce::FMaximum: acc = floatBinary(Op::Maximum, acc, x); break;
          default: acc = floatBinary(Op::Minimum, acc, x); break;
          }
        }
        putF(t, f + in.dst, acc);
      } else {
        static const Op ops[] = {Op::Add, Op::Mul, Op::And, Op::Or, Op::Xor,
                                 Op::SMax, Op::SMin, Op::UMax, Op::UMin};
        uint8_t acc[16];
        copyBytes(acc, v, es);
        for (uint32_t l = 1; l < in.aux; ++l)
          putU(t, acc, intBinary(ops[unsigned(kind)], t, acc, v + l * es) & widthMask(t));
        copyBytes(f + in.dst, acc, es);
      }
      break;
    }
    case Op::AsyncCopy:
      if (!asyncCopy(L, in, rd<uint64_t>(f + in.a), rd<uint64_t>(f + in.b),
                     rd<uint32_t>(f + in.c))) {
        L.state = Done;
        return;
      }
      break;
    case Op::BufferLoadLds: { // the buffer load now, the LDS write when a wait lands it
      uint8_t data[4] = {0, 0, 0, 0};
      if (!bufferAccess(L, in, f + in.a, rd<uint32_t>(f + in.c), rd<uint32_t>(f + in.dst), data,
                        in.imm, false) ||
          !asyncEnqueue(L, in, rd<uint64_t>(f + in.b) + uint64_t(in.imm) * L.lane, data, in.imm,
                        "buffer_load_lds store")) {
        L.state = Done;
        return;
      }
      ++async_[L.linear].open; // each DMA is a group of its own (vmcnt counts instructions)
      break;
    }
    case Op::AsyncCommit:
      ++async_[L.linear].open;
      break;
    case Op::AsyncWait:
      if (!asyncWait(L, in, in.imm)) {
        L.state = Done;
        return;
      }
      break;
    default:
      fault(L, in, "unsupported instruction", "opcode " + std::to_string(in.op));
      L.state = Done;
      return;
    }
    ++pc;
  }
}

// Runs one wave-collective instruction for the lanes that wait at it.
void Runner::execWave(const Inst &in, Lane **lanes, uint32_t n) {
  Lane *byLane[64] = {};
  for (uint32_t i = 0; i < n; ++i)
    byLane[lanes[i]->lane] = lanes[i];
  const Type t = Type(in.type);
  if (Op(in.op) == Op::Wgmma) {
    execWgmma(in, byLane);
    return;
  }
  if (Op(in.op) == Op::Mma) {
    const uint8_t *a[64] = {}, *b[64] = {}, *c[64] = {};
    uint8_t *d[64] = {};
    const MmaShape &s = mmaShape(Mma(in.imm));
    // RDNA3 WMMA reads A and B from lanes 0-15 only and requires lanes 16-31 to hold the same
    // registers; on the GPU anything else is undefined, so a layout bug that the emulator's
    // matrix product would hide is reported here.
    if (Mma(in.imm) == Mma::Wmma16x16x16F16 || Mma(in.imm) == Mma::Wmma16x16x16BF16)
      for (uint32_t l = 16; l < 32; ++l) {
        const Lane *hi = byLane[l], *lo = byLane[l - 16];
        if (!hi || !lo)
          continue;
        for (int op = 0; op < 2; ++op) {
          uint32_t slot = op ? in.b : in.a;
          if (std::memcmp(hi->frame + slot, lo->frame + slot, op ? s.bBytes : s.aBytes) != 0) {
            fault(*hi, in, std::string("WMMA operand ") + (op ? "B" : "A") + " not replicated",
                  "lane " + std::to_string(l) + " differs from lane " + std::to_string(l - 16) +
                      " (RDNA3 WMMA needs lanes 16-31 to repeat lanes 0-15)");
            return;
          }
        }
      }
    // Operands are gathered first: D may alias A, B or C of another lane only through the
    // copies, which executeMma reads completely before writing.
    std::vector<uint8_t> out(size_t(s.cBytes) * wave_);
    for (uint32_t l = 0; l < wave_; ++l)
      if (byLane[l]) {
        a[l] = byLane[l]->frame + in.a;
        b[l] = byLane[l]->frame + in.b;
        c[l] = byLane[l]->frame + in.c;
        d[l] = out.data() + size_t(l) * s.cBytes;
      }
    executeMma(Mma(in.imm), wave_, a, b, c, d);
    if (prof)
      prof->mma();
    for (uint32_t l = 0; l < wave_; ++l)
      if (byLane[l])
        std::memcpy(byLane[l]->frame + in.dst, d[l], s.cBytes);
    return;
  }
  const uint32_t full = typeSize(t) * in.lanes;
  constexpr size_t kStride = 8 * kMaxLanes + 8; // the widest value plus a predicate
  std::vector<uint8_t> out(size_t(wave_) * kStride);
  auto result = [&](uint32_t l) { return out.data() + size_t(l) * kStride; };
  switch (WaveOp(in.aux)) {
  case WaveOp::Bpermute:
    for (uint32_t l = 0; l < wave_; ++l)
      if (byLane[l]) {
        uint32_t src = (rd<uint32_t>(byLane[l]->frame + in.a) >> 2) & (wave_ - 1);
        uint32_t v = byLane[src] ? rd<uint32_t>(byLane[src]->frame + in.b) : 0;
        wr<uint32_t>(result(l), v);
      }
    break;
  case WaveOp::Readlane:
    for (uint32_t l = 0; l < wave_; ++l)
      if (byLane[l]) {
        uint32_t src = rd<uint32_t>(byLane[l]->frame + in.b) & (wave_ - 1);
        if (byLane[src])
          std::memcpy(result(l), byLane[src]->frame + in.a, full);
        else
          std::memset(result(l), 0, full);
      }
    break;
  case WaveOp::Readfirstlane: {
    Lane *first = nullptr;
    for (uint32_t l = 0; l < wave_ && !first; ++l)
      first = byLane[l];
    for (uint32_t l = 0; l < wave_; ++l)
      if (byLane[l])
        std::memcpy(result(l), first->frame + in.a, full);
    break;
  }
  case WaveOp::Ballot: {
    uint64_t bits = 0;
    for (uint32_t l = 0; l < wave_; ++l)
      if (byLane[l] && (byLane[l]->frame[in.a] & 1))
        bits |= uint64_t(1) << l;
    for (uint32_t l = 0; l < wave_; ++l)
      if (byLane[l])
        putU(t, result(l), bits);
    break;
  }
  case WaveOp::ShflIdx: case WaveOp::ShflUp: case WaveOp::ShflDown: case WaveOp::ShflBfly:
    for (uint32_t l = 0; l < wave_; ++l)
      if (byLane[l]) {
        bool inRange = false;
        uint32_t src = shflSource(WaveOp(in.aux), l, rd<uint32_t>(byLane[l]->frame + in.b),
                                  rd<uint32_t>(byLane[l]->frame + in.c), &inRange);
        const Lane *from = inRange && byLane[src] ? byLane[src] : byLane[l];
        std::memcpy(result(l), from->frame + in.a, 4);
        result(l)[4] = inRange;
      }
    break;
  case WaveOp::Ldmatrix: {
    uint32_t count = in.imm & 7;
    bool trans = in.imm & 8;
    if (prof) { // lane 8j + r gives row r of matrix j: 16 bytes each
      std::vector<profile::LaneAccess> rows;
      for (uint32_t r = 0; r < 8 * count && r < wave_; ++r)
        if (byLane[r])
          rows.push_back({r, rd<uint64_t>(byLane[r]->frame + in.a), 16});
      prof->waveExecution(uint32_t(&in - k_.code.data()), rows);
    }
    for (uint32_t l = 0; l < wave_; ++l) {
      if (!byLane[l])
        continue;
      for (uint32_t j = 0; j < count; ++j) {
        uint16_t half[2];
        for (uint32_t h = 0; h < 2; ++h) {
          uint32_t row = trans ? 2 * (l % 4) + h : l / 4;
          uint32_t col = trans ? l / 4 : 2 * (l % 4) + h;
          Lane *src = byLane[8 * j + row];
          if (!src) {
            fault(*byLane[l], in, "ldmatrix with an inactive address lane",
                  "lane " + std::to_string(8 * j + row) + " supplies a row address");
            return;
          }
          uint64_t at = rd<uint64_t>(src->frame + in.a) + 2 * col;
          if (!checkShared(*byLane[l], in, at, 2, true, false, false, "ldmatrix load"))
            return;
          std::memcpy(&half[h], shared_.data() + at, 2);
        }
        wr<uint32_t>(result(l) + 4 * j, uint32_t(half[0]) | (uint32_t(half[1]) << 16));
      }
    }
    break;
  }
  default:
    break;
  }
  uint32_t outBytes = WaveOp(in.aux) == WaveOp::Ldmatrix ? 4 * (in.imm & 7)
                      : WaveOp(in.aux) >= WaveOp::ShflIdx && WaveOp(in.aux) <= WaveOp::ShflBfly
                          ? 4 + (in.imm & 1)
                      : WaveOp(in.aux) == WaveOp::Bpermute ? 4
                      : WaveOp(in.aux) == WaveOp::Ballot   ? typeSize(t)
                                                           : full;
  for (uint32_t l = 0; l < wave_; ++l)
    if (byLane[l])
      std::memcpy(byLane[l]->frame + in.dst, result(l), outBytes);
}

// Settles one wave: runs its ready lanes, then its collective instructions, until every lane
// waits at a barrier or is done.
bool Runner::collective(uint32_t first, uint32_t count, bool &progress) {
  for (;;) {
    bool blocked = false;
    for (uint32_t i = 0; i < count; ++i) {
      Lane &l = lanes_[first + i];
      if (l.state == AtMbar && mbarPassed(l))
        l.state = Ready;
      if (l.state == Ready) {
        progress = true;
        run(l);
      }
      if (faulted_)
        return false;
      blocked = blocked || l.state == AtMbar;
    }
    if (prof)
      prof->flushWave(first, count);
    // A lane a later lane released from a barrier (its phase completed) runs first.
    bool released = false;
    for (uint32_t i = 0; i < count && !released; ++i)
      released = lanes_[first + i].state == Ready;
    if (released)
      continue;
    // A lane blocked on an mbarrier holds back the wave's collective instructions (they need
    // their lanes; the scheduler comes back once the phase completes).
    if (blocked)
      return true;
    uint32_t pc = UINT32_MAX;
    for (uint32_t i = 0; i < count; ++i)
      if (lanes_[first + i].state == AtWave)
        pc = std::min(pc, lanes_[first + i].pc);
    if (pc == UINT32_MAX)
      return true;
    Lane *group[64];
    uint32_t n = 0;
    for (uint32_t i = 0; i < count; ++i) {
      Lane &l = lanes_[first + i];
      if (l.state == AtWave && l.pc == pc)
        group[n++] = &l;
    }
    execWave(k_.code[pc], group, n);
    progress = true;
    if (faulted_)
      return false;
    for (uint32_t i = 0; i < n; ++i) {
      group[i]->state = Ready;
      group[i]->pc = pc + 1;
    }
  }
}

// cp.async issued by `L`: the source is read now; the destination bytes are marked in flight.
bool Runner::asyncCopy(Lane &L, const Inst &in, uint64_t dst, uint64_t src, uint32_t srcBytes) {
  uint8_t data[16] = {};
  const uint32_t n = std::min(srcBytes, in.imm);
  if (n && !checkGlobal(L, in, src, n, "cp.async load"))
    return false;
  if (n)
    record(L, in, src, n);
  if (n)
    std::memcpy(data, reinterpret_cast<const uint8_t *>(uintptr_t(src)), n);
  return asyncEnqueue(L, in, dst, data, in.imm, "cp.async store");
}

// An asynchronous copy of `bytes` (at most 16) already read into `data`, issued by `L` into the
// open group: the destination bytes are marked in flight until a wait lands them.
bool Runner::asyncEnqueue(Lane &L, const Inst &in, uint64_t dst, const uint8_t *data,
                          uint32_t bytes, const char *what) {
  AsyncQueue &q = async_[L.linear];
  AsyncCopy c{};
  c.group = q.open;
  c.dst = 0;
  c.bytes = bytes;
  c.issue = &in;
  std::memcpy(c.data, data, bytes);
  if (dst > sharedBytes_ || sharedBytes_ - dst < c.bytes)
    return fault(L, in, std::string("out-of-bounds shared ") + what + " of " +
                            std::to_string(c.bytes) + " bytes",
                 "offset " + std::to_string(dst) + " in a workgroup with " +
                     std::to_string(sharedBytes_) + " bytes of shared memory");
  c.dst = uint32_t(dst);
  // The copy may write at any time until its wait: it must not meet another thread's access of
  // this epoch, nor another copy in flight.
  const uint16_t me = uint16_t(L.linear);
  touched_[me] = stamp_;
  for (uint32_t i = 0; i < c.bytes; ++i) {
    const Shadow &s = shadow_[c.dst + i];
    if (s.async != kNobody)
      return inFlight(L, in, what, c.dst + i, s.async);
    if (wgmmaInFlight_ && wgmmaReads_[c.dst + i])
      return wgmmaRace(L, in, what, c.dst + i);
    if (s.writeStamp == stamp_ && s.writer != me && !before(s.writer, s.writeClock, me))
      return race(L, in, what, c.dst + i, s.writer, "written");
    if (s.readStamp == stamp_ && s.reader != me && !before(s.reader, s.readClock, me))
      return race(L, in, what, c.dst + i, s.reader, "read");
  }
  for (uint32_t i = 0; i < c.bytes; ++i)
    shadow_[c.dst + i].async = me;
  q.copies.push_back(c);
  ++asyncInFlight_;
  return true;
}

// cp.async.wait_group `keep` by `L`: the copies of every committed group but the `keep` newest
// land, each as L's store in this epoch.
bool Runner::asyncWait(Lane &L, const Inst &in, uint32_t keep) {
  AsyncQueue &q = async_[L.linear];
  while (q.head < q.copies.size() && uint64_t(q.copies[q.head].group) + keep < q.open) {
    const AsyncCopy &c = q.copies[q.head++];
    --asyncInFlight_;
    for (uint32_t i = 0; i < c.bytes; ++i)
      shadow_[c.dst + i].async = kNobody;
    if (!checkShared(L, in, c.dst, c.bytes, false, true, false,
                     Op(c.issue->op) == Op::BufferLoadLds ? "buffer_load_lds store"
                                                          : "cp.async store"))
      return false;
    std::memcpy(shared_.data() + c.dst, c.data, c.bytes);
  }
  if (q.head == q.copies.size()) {
    q.copies.clear();
    q.head = 0;
  }
  return true;
}

// Forgets every copy in flight (the start and end of a workgroup).
void Runner::dropAsync() {
  if (asyncInFlight_)
    for (AsyncQueue &q : async_)
      for (size_t i = q.head; i < q.copies.size(); ++i)
        for (uint32_t b = 0; b < q.copies[i].bytes; ++b)
          shadow_[q.copies[i].dst + b].async = kNobody;
  for (AsyncQueue &q : async_) {
    q.copies.clear();
    q.head = 0;
    q.open = 0;
  }
  asyncInFlight_ = 0;
  mbars_.clear();
  for (WgmmaQueue &q : wgmma_) {
    for (size_t i = q.head; i < q.reads.size(); ++i)
      for (uint32_t b : q.reads[i].bytes)
        --wgmmaReads_[b];
    q = WgmmaQueue{};
  }
  wgmmaInFlight_ = 0;
}

bool Runner::runWorkgroup(const uint32_t wg[3]) {
  std::memcpy(wg_, wg, sizeof wg_);
  faulted_ = false;
  wgStart_ = ++stamp_;
  pending_.set = false;
  steps_ = 0;
  dropAsync();
  regWorkgroup();
  barrierWorkgroup();
  const uint8_t *args = static_cast<const uint8_t *>(lp_.args);
  uint32_t linear = 0;
  for (uint32_t z = 0; z < lp_.block[2]; ++z)
    for (uint32_t y = 0; y < lp_.block[1]; ++y)
      for (uint32_t x = 0; x < lp_.block[0]; ++x, ++linear) {
        Lane &l = lanes_[linear];
        l = Lane{};
        l.frame = frames_.data() + size_t(linear) * frameStride_;
        // Constants and arguments are written once per frame (framesReady_): the code never
        // writes their slots, and every other slot is written before it is read (SSA).
        if (!framesReady_) {
          if (!k_.init.empty())
            std::memcpy(l.frame, k_.init.data(), k_.init.size());
          for (const auto &a : k_.args)
            std::memcpy(l.frame + a.slot, args + a.offset, a.size);
        }
        l.tid[0] = x;
        l.tid[1] = y;
        l.tid[2] = z;
        l.linear = linear;
        l.lane = linear % wave_;
      }
  framesReady_ = true;
  if (prof)
    prof->workgroup(threads_);
  for (;;) {
    // Every wave runs until it waits at a barrier, has ended or is blocked on an mbarrier;
    // blocked waves are visited again while any wave made progress.
    for (bool progress = true; progress;) {
      progress = false;
      for (uint32_t w = 0; w < threads_; w += wave_)
        if (!collective(w, std::min(wave_, threads_ - w), progress))
          return false;
    }
    if (!reportPending())
      return false;
    // Nothing can run: every thread has ended, or a barrier without a thread count holds every
    // thread that has not ended (it completes: a new epoch), or a deadlock.
    uint32_t alive = 0;
    const Lane *blocked = nullptr, *atBarrier = nullptr;
    for (const Lane &l : lanes_) {
      alive += l.state != Done;
      if (l.state == AtMbar && !blocked)
        blocked = &l;
      if (l.state == AtBarrier && !atBarrier)
        atBarrier = &l;
    }
    if (!blocked && !atBarrier) {
      dropAsync(); // copies never waited for: the workgroup's shared memory ends with it
      return true;
    }
    if (!blocked) {
      const Inst &in = k_.code[atBarrier->pc];
      const NamedBarrier &b = bars_[in.aux];
      if (!b.expect && b.arrived == alive) {
        if (!barrierComplete(in.aux))
          return false;
        continue;
      }
      // Every thread that has not ended waits at this counted barrier, too few of them
      // (wavec's warp-specialized consumers before the producer warpgroup has exited).
      if (b.expect && b.arrived == alive)
        return fault(*atBarrier, in, "barrier thread count mismatch",
                     std::to_string(b.arrived) + " threads wait at barrier " +
                         std::to_string(in.aux) + " (" + std::to_string(alive) +
                         " have not ended), the barrier expects " + std::to_string(b.expect));
    }
    const Lane &first = blocked ? *blocked : *atBarrier;
    return fault(first, k_.code[first.pc], "deadlock", deadlock(), /*pendingFirst=*/false);
  }
}

// Clears the barriers and the vector clocks (a new workgroup: threads start at clock 1).
void Runner::barrierWorkgroup() {
  for (NamedBarrier &b : bars_)
    b = NamedBarrier{};
  if (!vcOn_)
    return;
  std::fill(vc_.begin(), vc_.end(), 0u);
  std::fill(barVc_.begin(), barVc_.end(), 0u);
  for (uint32_t t = 0; t < threads_; ++t)
    vc_[size_t(t) * threads_ + t] = 1;
}

// `L` arrives on barrier in.aux (Op::Barrier: L waits there already; Op::BarArrive: it goes
// on). The phase's count is set by its first arrival; the others must say the same. With a
// count, the arrival that makes it completes the phase.
bool Runner::barrierArrive(Lane &L, const Inst &in) {
  NamedBarrier &b = bars_[in.aux];
  if (b.arrived && b.expect != in.imm)
    return fault(L, in, "barrier thread count mismatch",
                 "barrier " + std::to_string(in.aux) + " expects " +
                     (b.expect ? std::to_string(b.expect) + " threads"
                               : std::string("every thread")) +
                     " in this phase (since " + where(*b.first) + "), this instruction " +
                     (in.imm ? std::to_string(in.imm) : std::string("every thread")));
  if (!b.arrived) {
    b.expect = in.imm;
    b.first = &in;
  }
  ++b.arrived;
  if (vcOn_) { // the phase joins what L knows; L's later accesses are not ordered by it
    uint32_t *acc = &barVc_[size_t(in.aux) * threads_];
    uint32_t *mine = &vc_[size_t(L.linear) * threads_];
    for (uint32_t u = 0; u < threads_; ++u)
      acc[u] = std::max(acc[u], mine[u]);
    ++mine[L.linear];
  }
  return !b.expect || b.arrived < b.expect || barrierComplete(in.aux);
}

// Barrier `id`'s phase completes: its waiters go on. If they are every thread that has not
// ended, a new epoch starts; with a thread count only if, besides, no thread that has ended
// touched shared memory in this epoch (nothing orders its accesses with the waiters' next
// ones). Otherwise the waiters take in the phase's clocks: only the arrivals' accesses before
// their arrival are ordered before the waiters' next ones.
bool Runner::barrierComplete(uint32_t id) {
  const bool counted = bars_[id].expect != 0;
  bool all = true;
  for (const Lane &l : lanes_)
    all = all && ((l.state == Done && (!counted || touched_[l.linear] != stamp_)) ||
                  (l.state == AtBarrier && k_.code[l.pc].aux == id));
  if (all && !reportPending())
    return false;
  uint32_t *acc = vcOn_ ? &barVc_[size_t(id) * threads_] : nullptr;
  for (Lane &l : lanes_)
    if (l.state == AtBarrier && k_.code[l.pc].aux == id) {
      l.state = Ready;
      ++l.pc;
      if (acc && !all) {
        uint32_t *mine = &vc_[size_t(l.linear) * threads_];
        for (uint32_t u = 0; u < threads_; ++u)
          mine[u] = std::max(mine[u], acc[u]);
      }
    }
  if (acc)
    std::fill(acc, acc + threads_, 0u);
  bars_[id] = NamedBarrier{};
  if (all)
    ++stamp_; // a new barrier epoch
  return true;
}

} // namespace runner_detail

using namespace runner_detail;

uint32_t shflSource(WaveOp kind, uint32_t lane, uint32_t b, uint32_t c, bool *inRange) {
  // PTX ISA, shfl.sync: c packs the clamp value (bits 0-4) and the segment mask (bits 8-12).
  uint32_t clamp = c & 0x1f, segmask = (c >> 8) & 0x1f;
  uint32_t maxLane = (lane & segmask) | (clamp & ~segmask);
  uint32_t minLane = lane & segmask;
  int32_t j = 0;
  bool ok = false;
  switch (kind) {
  case WaveOp::ShflUp:
    j = int32_t(lane) - int32_t(b & 0x1f);
    ok = j >= int32_t(maxLane);
    break;
  case WaveOp::ShflDown:
    j = int32_t(lane + (b & 0x1f));
    ok = j <= int32_t(maxLane);
    break;
  case WaveOp::ShflBfly:
    j = int32_t(lane ^ (b & 0x1f));
    ok = j <= int32_t(maxLane);
    break;
  default:
    j = int32_t(minLane | ((b & 0x1f) & ~segmask));
    ok = j <= int32_t(maxLane);
    break;
  }
  *inRange = ok;
  return ok ? uint32_t(j) & 31 : lane;
}

namespace {
// Adds one launch's recorders (those that ran) to the collector.
void profileLaunch(profile::Collector &to,
                   const std::vector<std::unique_ptr<profile::Recorder>> &recorders,
                   const KernelCode &kernel, const LaunchParams &params) {
  profile::KernelProfile launch;
  for (const auto &rec : recorders)
    if (rec)
      launch.merge(rec->finish());
  launch.name = kernel.name;
  launch.launches = 1;
  std::copy(params.grid, params.grid + 3, launch.grid);
  std::copy(params.block, params.block + 3, launch.block);
  launch.ldsBytes = kernel.staticShared + params.dynamicShared;
  to.add(launch);
}
} // namespace

wave_status_t runKernel(const Program &program, const KernelCode &kernel,
                        const LaunchParams &params) {
  if (kernel.block[0] && (kernel.block[0] != params.block[0] || kernel.block[1] != params.block[1] ||
                          kernel.block[2] != params.block[2]))
    return rt::failf(WAVE_ERROR_LAUNCH,
                     "%s: the kernel was compiled for block (%u, %u, %u) but is launched with "
                     "(%u, %u, %u)",
                     kernel.name.c_str(), kernel.block[0], kernel.block[1], kernel.block[2],
                     params.block[0], params.block[1], params.block[2]);
  if (params.argsSize < kernel.argsSize)
    return rt::failf(WAVE_ERROR_INVALID_ARGUMENT,
                     "%s: the argument buffer has %zu bytes, the kernel reads %u",
                     kernel.name.c_str(), params.argsSize, kernel.argsSize);
  if (uint64_t(kernel.staticShared) + params.dynamicShared > (1u << 24))
    return rt::failf(WAVE_ERROR_INVALID_ARGUMENT, "%s: %u bytes of dynamic shared memory",
                     kernel.name.c_str(), params.dynamicShared);
  const uint64_t total = uint64_t(params.grid[0]) * params.grid[1] * params.grid[2];
  unsigned workers = kernel.globalAtomics
                         ? 1u
                         : unsigned(std::min<uint64_t>(std::max(1u, params.hostThreads), total));
  std::atomic<uint64_t> firstFailure{UINT64_MAX};
  std::mutex messageMutex;
  std::string message;
  wave_status_t failure = WAVE_ERROR_LAUNCH;
  // Profiling (wave-run --profile): one recorder per host thread, added up after the launch.
  profile::Collector *profiled = profile::collector();
  std::vector<std::unique_ptr<profile::Recorder>> recorders(profiled ? workers : 0);
  auto work = [&](unsigned worker) {
    try {
      Runner runner(program, kernel, params);
      if (profiled) {
        recorders[worker] = std::make_unique<profile::Recorder>(
            program, kernel, params.block[0] * params.block[1] * params.block[2],
            params.waveSize, program.target);
        runner.prof = recorders[worker].get();
      }
      for (uint64_t i = worker; i < total; i += workers) {
        if (i > firstFailure.load())
          return;
        uint32_t wg[3] = {uint32_t(i % params.grid[0]),
                          uint32_t((i / params.grid[0]) % params.grid[1]),
                          uint32_t(i / (uint64_t(params.grid[0]) * params.grid[1]))};
        if (!runner.runWorkgroup(wg)) {
          std::lock_guard<std::mutex> lock(messageMutex);
          if (i < firstFailure.load()) {
            firstFailure = i;
            message = runner.error;
            failure = runner.status;
          }
          return;
        }
      }
    } catch (const std::bad_alloc &) {
      std::lock_guard<std::mutex> lock(messageMutex);
      if (firstFailure.load() == UINT64_MAX) {
        firstFailure = UINT64_MAX - 1;
        message = kernel.name + ": out of host memory for the emulator";
      }
    }
  };
  if (workers <= 1) {
    work(0);
  } else {
    std::vector<std::thread> pool;
    for (unsigned w = 1; w < workers; ++w)
      pool.emplace_back(work, w);
    work(0);
    for (auto &t : pool)
      t.join();
  }
  if (profiled)
    profileLaunch(*profiled, recorders, kernel, params);
  if (firstFailure.load() != UINT64_MAX)
    return rt::fail(failure, message);
  return WAVE_SUCCESS;
}

} // namespace wave::emu
