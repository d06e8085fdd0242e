// Register hazards of wgmma.mma_async in flight (sm_90a; docs/internals.md, "The CPU
// emulator"). The emulator computes a wgmma at issue, but the hardware reads its A registers
// and writes its accumulators asynchronously until a wgmma.wait_group retires its group; PTX
// registers are not renamed per loop iteration, so a kernel that rewrites the A registers or
// touches the accumulators before that wait gets wrong results on the GPU and none here.
//
// The model: at issue, every thread of the warp tags the frame words of the wgmma's D (its
// accumulator) and of the registers its A operand was gathered from (the translator's four
// copies right before Op::Wgmma, emu_translate_asm.cpp) with the wgmma's serial number. While
// the thread has a wgmma in flight (Lane::wgLive), each instruction it runs is checked before
// it runs:
//  - a move (Copy, ParCopy, Extract, Insert, Shuffle: extractvalue, insertelement, phi copies,
//    bit casts — no instruction in the PTX) carries an accumulator's tag to its destination,
//    so the accumulator may travel through vectors and phis to the next wgmma of its chain;
//    a move onto an A register in flight is a hazard (it is a write in the PTX);
//  - any other instruction that reads a word tagged as an accumulator in flight, or writes a
//    word tagged as either in flight, is a hazard, reported like a shared-memory race.
// A tag is in flight while the thread's own wgmma.wait_group has not retired its group. The
// translator (emu_translate.cpp, pinWgmmaValues) keeps A's registers out of slot reuse and lets
// the accumulators' moves share slots only among themselves, so that no other instruction
// writes a slot whose tag belongs to a dead value. An instruction that touches no frame word a
// tag can reach is not checked (regPlan, regSkip_).
#include "runner.h"

namespace wave::emu::runner_detail {

namespace {

struct Range {
  uint32_t at = 0, bytes = 0;
};

uint32_t bytesOf(uint8_t type, uint32_t lanes) {
  return typeSize(static_cast<Type>(type)) * lanes;
}

// The frame bytes an instruction that moves no register reads (up to 4 ranges) and writes
// (`w`), as the loader validates them (loader.cpp, checkInst).
uint32_t footprint(const Inst &in, Range r[4], Range &w) {
  const uint32_t elem = typeSize(Type(in.type)), full = elem * in.lanes;
  uint32_t n = 0;
  auto rd = [&](uint32_t at, uint32_t bytes) { r[n++] = {at, bytes}; };
  const Op op = Op(in.op);
  switch (op) {
  case Op::CondBr: rd(in.a, 1); break;
  case Op::Switch: rd(in.a, elem); break;
  case Op::Special: w = {in.dst, elem}; break;
  case Op::Fma: rd(in.a, full), rd(in.b, full), rd(in.c, full), w = {in.dst, full}; break;
  case Op::Select:
    rd(in.a, in.aux ? 1 : in.lanes), rd(in.b, full), rd(in.c, full), w = {in.dst, full};
    break;
  case Op::ICmp:
  case Op::FCmp:
    rd(in.a, bytesOf(in.aux, in.lanes)), rd(in.b, bytesOf(in.aux, in.lanes));
    w = {in.dst, in.lanes};
    break;
  case Op::TruncI: case Op::ZExt: case Op::SExt: case Op::FPTrunc: case Op::FPExt:
  case Op::FPToSI: case Op::FPToUI: case Op::SIToFP: case Op::UIToFP: case Op::PtrToInt:
  case Op::IntToPtr:
    rd(in.a, bytesOf(in.aux, in.lanes)), w = {in.dst, full};
    break;
  case Op::PtrAdd: rd(in.a, 8), rd(in.b, 8), w = {in.dst, 8}; break;
  case Op::PtrAddConst: rd(in.a, 8), w = {in.dst, 8}; break;
  case Op::Load: rd(in.a, 8), w = {in.dst, full}; break;
  case Op::MaskedLoad: rd(in.a, 8), rd(in.b, in.lanes), rd(in.c, full), w = {in.dst, full}; break;
  case Op::Store: rd(in.a, 8), rd(in.b, full); break;
  case Op::MaskedStore: rd(in.a, 8), rd(in.b, full), rd(in.c, in.lanes); break;
  case Op::AtomicRmw: rd(in.a, 8), rd(in.b, elem), w = {in.dst, elem}; break;
  case Op::CmpXchg: rd(in.a, 8), rd(in.b, elem), rd(in.c, elem), w = {in.dst, elem + 1}; break;
  case Op::BufferLoad: rd(in.a, 16), rd(in.b, 4), rd(in.c, 4), w = {in.dst, full}; break;
  case Op::BufferStore: rd(in.a, 16), rd(in.b, full), rd(in.c, 4), rd(in.dst, 4); break;
  case Op::AsyncCopy: rd(in.a, 8), rd(in.b, 8), rd(in.c, 4); break;
  case Op::BufferLoadLds: rd(in.a, 16), rd(in.b, 8), rd(in.c, 4), rd(in.dst, 4); break;
  case Op::Mbcnt:
  case Op::CvtFp8ToF32: rd(in.a, 4), rd(in.b, 4), w = {in.dst, 4}; break;
  case Op::CvtPkF32ToFp8: rd(in.a, 4), rd(in.b, 4), rd(in.c, 4), w = {in.dst, 4}; break;
  case Op::MbarInit:
  case Op::MbarArrive: rd(in.a, 4); break;
  case Op::MbarWait: rd(in.a, 4), rd(in.b, 4); break;
  case Op::TmaLoad: rd(in.a, 4), rd(in.b, 8), rd(in.c, 4 * (in.imm ? in.imm : 2)), rd(in.dst, 4); break;
  case Op::TmaStore: rd(in.a, 4), rd(in.b, 8), rd(in.c, 4 * (in.imm ? in.imm : 2)); break;
  case Op::Reduce:
    rd(in.a, bytesOf(in.type, in.aux)), w = {in.dst, elem};
    if (in.imm == uint32_t(Reduce::FAdd) || in.imm == uint32_t(Reduce::FMul))
      rd(in.b, elem);
    break;
  case Op::Mma: {
    const MmaShape &s = mmaShape(Mma(in.imm));
    rd(in.a, s.aBytes), rd(in.b, s.bBytes), rd(in.c, s.cBytes), w = {in.dst, s.cBytes};
    break;
  }
  case Op::Wave:
    switch (WaveOp(in.aux)) {
    case WaveOp::Bpermute: rd(in.a, 4), rd(in.b, 4), w = {in.dst, 4}; break;
    case WaveOp::Readlane: rd(in.a, full), rd(in.b, 4), w = {in.dst, full}; break;
    case WaveOp::Readfirstlane: rd(in.a, full), w = {in.dst, full}; break;
    case WaveOp::Ballot: rd(in.a, 1), w = {in.dst, elem}; break;
    case WaveOp::Ldmatrix: rd(in.a, 8), w = {in.dst, 4 * (in.imm & 7)}; break;
    default: rd(in.a, 4), rd(in.b, 4), rd(in.c, 4), w = {in.dst, 4 + (in.imm & 1)}; break;
    }
    break;
  default:
    if (op >= Op::Add && op <= Op::Pow)
      rd(in.a, full), rd(in.b, full), w = {in.dst, full};
    else if (op >= Op::FNeg && op <= Op::Cttz)
      rd(in.a, full), w = {in.dst, full};
    break; // control, barriers, commits and waits: no registers
  }
  return n;
}

} // namespace

// A's registers of a register-A wgmma: the sources of the four 4-byte copies into A's
// gathered slot just before it (the translator's form); without them, the gathered slot.
void Runner::regASources(const Inst &in, uint32_t src[4]) const {
  for (uint32_t r = 0; r < 4; ++r)
    src[r] = in.a + 4 * r;
  for (size_t pc = size_t(&in - k_.code.data()); pc-- > 0;) {
    const Inst &c = k_.code[pc];
    if (Op(c.op) != Op::Copy || c.imm != 4 || c.dst < in.a || c.dst >= in.a + 16 ||
        (c.dst - in.a) % 4 != 0)
      break;
    src[(c.dst - in.a) / 4] = c.a;
  }
}

// Which instructions need no check (regSkip_): the frame words that can ever hold a tag are
// the wgmmas' D and A registers and, to a fixed point, the destinations of moves from such
// words; an instruction that touches none of them is skipped.
void Runner::regPlan() {
  std::vector<uint8_t> can(frameStride_ / 4, 0);
  auto any = [&](uint32_t at, uint32_t bytes) {
    for (uint32_t x = at / 4; x < (at + bytes + 3) / 4; ++x)
      if (can[x])
        return true;
    return false;
  };
  auto mark = [&](uint32_t at, uint32_t bytes) {
    bool changed = false;
    for (uint32_t x = at / 4; x < (at + bytes + 3) / 4; ++x)
      changed |= !can[x], can[x] = 1;
    return changed;
  };
  // The moves' (destination, source) ranges.
  struct Move {
    uint32_t dst, dstBytes, src, srcBytes;
  };
  std::vector<std::vector<Move>> moves(k_.code.size());
  for (size_t pc = 0; pc < k_.code.size(); ++pc) {
    const Inst &in = k_.code[pc];
    const uint32_t es = typeSize(Type(in.type)), full = es * in.lanes;
    switch (Op(in.op)) {
    case Op::Wgmma: {
      mark(in.dst, 2 * (in.imm & 0xfff));
      uint32_t src[4];
      regASources(in, src);
      regHasA_ |= ((in.imm >> 12) & kWgmmaRegA) != 0;
      for (uint32_t r = 0; (in.imm >> 12) & kWgmmaRegA && r < 4; ++r)
        mark(src[r], 4);
      break;
    }
    case Op::Copy: moves[pc].push_back({in.dst, in.imm, in.a, in.imm}); break;
    case Op::ParCopy:
      for (uint32_t i = 0; i < k_.extra[in.imm]; ++i) {
        const uint32_t *w = &k_.extra[in.imm + 1 + 3 * i];
        moves[pc].push_back({w[0], w[2], w[1], w[2]});
      }
      break;
    case Op::Extract: moves[pc].push_back({in.dst, es, in.a, es * in.aux}); break;
    case Op::Insert:
      moves[pc].push_back({in.dst, full, in.a, full});
      moves[pc].push_back({in.dst, full, in.b, es});
      break;
    case Op::Shuffle:
      moves[pc].push_back({in.dst, full, in.a, es * k_.extra[in.imm]});
      moves[pc].push_back({in.dst, full, in.b, es * k_.extra[in.imm]});
      break;
    default: break;
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto &list : moves)
      for (const Move &m : list)
        if (any(m.src, m.srcBytes))
          changed |= mark(m.dst, m.dstBytes);
  }
  regSkip_.assign(k_.code.size(), 0);
  for (size_t pc = 0; pc < k_.code.size(); ++pc) {
    const Inst &in = k_.code[pc];
    bool touches = false;
    if (Op(in.op) == Op::Wgmma)
      touches = false;
    else if (!moves[pc].empty())
      for (const Move &m : moves[pc])
        touches |= any(m.dst, m.dstBytes);
    else {
      Range r[4], w;
      const uint32_t n = footprint(in, r, w);
      touches = any(w.at, w.bytes);
      for (uint32_t i = 0; i < n; ++i)
        touches |= any(r[i].at, r[i].bytes);
    }
    regSkip_[pc] = !touches;
  }
}

// Op::Wgmma issued for the warp of `byLane`: tag its D and A registers in every lane.
void Runner::regIssue(const Inst &in, Lane *const *byLane) {
  if (regTags_.empty())
    return;
  const uint32_t warp = byLane[0]->linear / 32, group = wgmma_[warp].open;
  const uint32_t serial = regSerial_++;
  regIssues_.push_back({group, warp, &in});
  uint32_t src[4];
  const bool regA = (in.imm >> 12) & kWgmmaRegA;
  regASources(in, src);
  const uint32_t aIndex = regABase_ + uint32_t(regA_.size());
  for (uint32_t r = 0; regA && r < 4; ++r)
    regA_.push_back({serial, src[r] / 4});
  const uint32_t nn = in.imm & 0xfff;
  for (uint32_t l = 0; l < 32; ++l) {
    Lane &lane = *byLane[l];
    uint32_t *tags = regTags(lane);
    for (uint32_t i = 0; i < nn / 2; ++i)
      tags[in.dst / 4 + i] = serial;
    for (uint32_t r = 0; regA && r < 4; ++r)
      tags[src[r] / 4] = kRegA | (aIndex + r);
    lane.wgLast = group;
    lane.wgLive = true;
  }
}

// This thread's wgmma.wait_group `keep`: every committed group but the `keep` newest retires.
void Runner::regWait(Lane &lane, uint32_t keep) {
  if (lane.wgOpen >= keep)
    lane.wgRetired = std::max(lane.wgRetired, lane.wgOpen - keep);
  lane.wgLive = lane.wgLive && lane.wgLast >= lane.wgRetired;
}

// A new workgroup: its serials and A indices start above every tag in the frames. Both bases
// move past what the last workgroup used: the frames keep its tags, and an A index it gave out
// must not name a record of this workgroup (another warp's register, whose wgmma may be in
// flight while this thread is not).
void Runner::regWorkgroup() {
  regABase_ += uint32_t(regA_.size());
  regIssues_.clear();
  regA_.clear();
  if (regSerial_ > 0x70000000u || regABase_ > 0x70000000u) {
    std::fill(regTags_.begin(), regTags_.end(), 0u);
    regSerial_ = regABase_ = 1;
  }
  regBase_ = regSerial_;
}

bool Runner::regHazard(const Lane &lane, const Inst &in, uint32_t word, uint32_t tag,
                       bool write) {
  const bool a = tag & kRegA;
  const uint32_t serial = a ? regA_[(tag & ~kRegA) - regABase_].serial : tag;
  const WgmmaIssue &w = regIssues_[serial - regBase_];
  const bool committed = w.group < lane.wgOpen;
  const std::string what = std::string("wgmma register hazard: ") +
                           (write ? "a write to " : "a read of ") +
                           (a ? "an A operand register" : "an accumulator register") +
                           " of a wgmma in flight";
  const std::string detail =
      "frame bytes " + std::to_string(4 * word) + ".." + std::to_string(4 * word + 3) +
      " hold " + (a ? "a register that the wgmma" : "an accumulator (D) of the wgmma") +
      " issued at " + where(*w.issue) + " by warp " + std::to_string(w.warp % 4) +
      " of its warpgroup" + (a ? " reads as its A operand" : "") +
      ", which is still in flight (" +
      (committed ? "no wgmma.wait_group of this thread has retired its group yet: a wait is "
                   "missing before this instruction, or its count is too large"
                 : "its group was not committed and waited for yet") +
      "); until then PTX allows " +
      (a ? "no write to the A registers" : "only later wgmmas of its chain to use them");
  return fault(lane, in, what, detail, /*pendingFirst=*/false);
}

// A move of `bytes` from frame offset `src` to `dst`: the tags go along (an accumulator's stays
// one; an A register's tag names its own word, so its copy is no A register); overwriting an A
// register in flight is a hazard.
bool Runner::regMove(const Lane &lane, const Inst &in, uint32_t dst, uint32_t src,
                     uint32_t bytes) {
  if (dst == src || bytes == 0)
    return true;
  uint32_t *tags = regTags(lane);
  const uint32_t words = (bytes + 3) / 4, dw = dst / 4, sw = src / 4;
  uint32_t aBits = 0;
  for (uint32_t i = 0; regHasA_ && i < words; ++i)
    aBits |= tags[dw + i];
  if (aBits & kRegA)
    for (uint32_t i = 0; i < words; ++i)
      if ((tags[dw + i] & kRegA) && regLive(lane, tags[dw + i], dw + i))
        return regHazard(lane, in, dw + i, tags[dw + i], true);
  if (words == 1)
    tags[dw] = tags[sw];
  else if (dw + words <= sw || sw + words <= dw)
    for (uint32_t i = 0; i < words; ++i)
      tags[dw + i] = tags[sw + i];
  else
    std::memmove(tags + dw, tags + sw, size_t(words) * 4);
  return true;
}

// Before `in` runs in a thread with a wgmma in flight.
bool Runner::regCheck(const Lane &lane, const Inst &in) {
  const uint8_t *f = lane.frame;
  const uint32_t es = typeSize(Type(in.type));
  uint32_t *tags = regTags(lane);
  switch (Op(in.op)) {
  case Op::Wgmma: // a later wgmma of the chain: reads C, writes D (regIssue)
    return true;
  case Op::Copy:
    return regMove(lane, in, in.dst, in.a, in.imm);
  case Op::ParCopy: {
    const uint32_t *w = &k_.extra[in.imm];
    if (w[0] == 1)
      return regMove(lane, in, w[1], w[2], w[3]);
    // Parallel: every source's tags before any destination is written.
    uint32_t total = 0;
    for (uint32_t i = 0; i < w[0]; ++i)
      total += (w[3 + 3 * i] + 3) / 4;
    uint32_t buf[512];
    std::vector<uint32_t> big;
    uint32_t *from = total <= 512 ? buf : (big.resize(total), big.data());
    uint32_t at = 0;
    for (uint32_t i = 0; i < w[0]; ++i)
      for (uint32_t j = 0; j < (w[3 + 3 * i] + 3) / 4; ++j)
        from[at++] = tags[w[2 + 3 * i] / 4 + j];
    at = 0;
    for (uint32_t i = 0; i < w[0]; ++i)
      for (uint32_t j = 0; j < (w[3 + 3 * i] + 3) / 4; ++j, ++at) {
        const uint32_t x = w[1 + 3 * i] / 4 + j;
        if (w[1 + 3 * i] != w[2 + 3 * i] && (tags[x] & kRegA) && regLive(lane, tags[x], x))
          return regHazard(lane, in, x, tags[x], true);
        tags[x] = from[at];
      }
    return true;
  }
  case Op::Extract: {
    const uint64_t i = rd<uint64_t>(f + in.b);
    if (i < in.aux)
      return regMove(lane, in, in.dst, in.a + uint32_t(i) * es, es);
    break; // zeros: a write
  }
  case Op::Insert: {
    const uint64_t i = rd<uint64_t>(f + in.c);
    const uint32_t saved = tags[in.b / 4];
    if (!regMove(lane, in, in.dst, in.a, es * in.lanes))
      return false;
    if (i >= in.lanes)
      return true;
    const uint32_t x = (in.dst + uint32_t(i) * es) / 4;
    if (x != in.b / 4 && (tags[x] & kRegA) && regLive(lane, tags[x], x))
      return regHazard(lane, in, x, tags[x], true);
    tags[x] = saved;
    return true;
  }
  case Op::Shuffle: {
    const uint32_t *w = &k_.extra[in.imm];
    for (uint32_t l = 0; l < in.lanes; ++l) {
      const uint32_t m = w[1 + l];
      const uint32_t from = m == 0xffffffffu ? in.dst + l * es
                            : m < w[0]       ? in.a + m * es
                                             : in.b + (m - w[0]) * es;
      if (!regMove(lane, in, in.dst + l * es, from, es))
        return false;
    }
    return true;
  }
  default:
    break;
  }
  Range r[4], w;
  uint32_t n = footprint(in, r, w);
  if (Op(in.op) == Op::Extract) // an index out of range writes zeros
    w = {in.dst, es}, n = 0;
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t x = r[i].at / 4; x < (r[i].at + r[i].bytes + 3) / 4; ++x)
      if (tags[x] && !(tags[x] & kRegA) && regLive(lane, tags[x], x))
        return regHazard(lane, in, x, tags[x], false);
  for (uint32_t x = w.at / 4; x < (w.at + w.bytes + 3) / 4; ++x)
    if (tags[x] && regLive(lane, tags[x], x))
      return regHazard(lane, in, x, tags[x], true);
  return true;
}

} // namespace wave::emu::runner_detail
