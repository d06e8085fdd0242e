// Parsing and full validation of emulator images (emu_image.h describes the format).
//
// Everything the interpreter later indexes with is checked here: frame slots against the frame
// size with the operand's byte size, branch targets, the extra table, string and location
// indices, operand kinds. The interpreter then trusts the program and checks only what depends
// on run-time values (addresses, vector indices).
#include "emu.h"

#include "../internal.h"

#include <cstdio>
#include <cstring>
#include <set>

namespace wave::emu {
namespace {

class Reader {
public:
  Reader(const uint8_t *p, size_t n) : p_(p), n_(n) {}
  bool u32(uint32_t &v) {
    if (n_ - pos_ < 4)
      return false;
    v = uint32_t(p_[pos_]) | uint32_t(p_[pos_ + 1]) << 8 | uint32_t(p_[pos_ + 2]) << 16 |
        uint32_t(p_[pos_ + 3]) << 24;
    pos_ += 4;
    return true;
  }
  bool bytes(void *out, size_t n) {
    if (n_ - pos_ < n)
      return false;
    if (n) // `out` may be the null data() of an empty vector
      std::memcpy(out, p_ + pos_, n);
    pos_ += n;
    return true;
  }
  bool str(std::string &s, uint32_t max = 1u << 20) {
    uint32_t n;
    if (!u32(n) || n > max || n_ - pos_ < n)
      return false;
    s.assign(reinterpret_cast<const char *>(p_ + pos_), n);
    pos_ += n;
    return true;
  }
  // A count of items of at least `itemBytes` each that the remaining bytes can hold.
  bool count(uint32_t &v, size_t itemBytes) {
    return u32(v) && (itemBytes == 0 || uint64_t(v) * itemBytes <= n_ - pos_);
  }
  size_t pos() const { return pos_; }
  bool atEnd() const { return pos_ == n_; }

private:
  const uint8_t *p_;
  size_t n_, pos_ = 0;
};

wave_status_t bad(const std::string &what) {
  return rt::failf(WAVE_ERROR_INVALID_IMAGE, "emulator image: %s", what.c_str());
}

uint64_t bytesOf(uint8_t type, uint32_t lanes) {
  return uint64_t(typeSize(static_cast<Type>(type))) * lanes;
}

bool isTerminator(Op op) {
  return op == Op::Ret || op == Op::Br || op == Op::CondBr || op == Op::Switch || op == Op::Trap;
}

// Validates one instruction; returns an empty string when it is fine.
std::string checkInst(const KernelCode &k, const Program &prog, const Inst &in) {
  const uint64_t frame = k.frameBytes;
  const uint32_t n = uint32_t(k.code.size());
  if (in.op >= uint16_t(Op::Count))
    return "unknown opcode " + std::to_string(in.op);
  if (in.type >= uint8_t(Type::Count))
    return "unknown type " + std::to_string(in.type);
  if (in.lanes == 0 || in.lanes > kMaxLanes)
    return "bad lane count " + std::to_string(in.lanes);
  if (in.loc >= k.locs.size())
    return "location index out of range";
  auto slot = [&](uint32_t s, uint64_t size) { return uint64_t(s) + size <= frame; };
  auto pc = [&](uint32_t t) { return t < n; };
  const uint64_t full = bytesOf(in.type, in.lanes), elem = typeSize(Type(in.type));
  const Op op = Op(in.op);
  bool ok = true;
  switch (op) {
  case Op::Ret:
  case Op::Trap:
    break;
  case Op::Barrier: // the ID; a thread count, if any, a positive multiple of 32
  case Op::BarArrive:
    ok = in.aux < kBarrierIds && in.imm % 32 == 0 && (in.imm || op == Op::Barrier);
    break;
  case Op::Br:
    ok = pc(in.a);
    break;
  case Op::CondBr:
    ok = slot(in.a, 1) && pc(in.b) && pc(in.c);
    break;
  case Op::Switch: {
    if (uint64_t(in.imm) + 2 > k.extra.size())
      return "switch table out of range";
    uint64_t cases = k.extra[in.imm];
    if (uint64_t(in.imm) + 2 + 3 * cases > k.extra.size())
      return "switch table out of range";
    ok = slot(in.a, elem) && in.lanes == 1 && pc(k.extra[in.imm + 1]);
    for (uint64_t i = 0; ok && i < cases; ++i)
      ok = pc(k.extra[in.imm + 2 + 3 * i + 2]);
    break;
  }
  case Op::ParCopy: {
    if (uint64_t(in.imm) + 1 > k.extra.size())
      return "phi copy list out of range";
    uint64_t count = k.extra[in.imm];
    if (uint64_t(in.imm) + 1 + 3 * count > k.extra.size() || count > 4096)
      return "phi copy list out of range";
    for (uint64_t i = 0; ok && i < count; ++i) {
      const uint32_t *w = &k.extra[in.imm + 1 + 3 * i];
      ok = w[2] <= 8 * kMaxLanes && slot(w[0], w[2]) && slot(w[1], w[2]);
    }
    break;
  }
  case Op::Copy:
    ok = in.imm <= frame && slot(in.dst, in.imm) && slot(in.a, in.imm);
    break;
  case Op::Special:
    ok = in.imm < uint32_t(Special::Count) && (Type(in.type) == Type::I32 ||
                                              Type(in.type) == Type::I64) && slot(in.dst, elem);
    break;
  case Op::Fma:
    ok = slot(in.dst, full) && slot(in.a, full) && slot(in.b, full) && slot(in.c, full);
    break;
  case Op::Select:
    ok = slot(in.dst, full) && slot(in.a, in.aux ? 1 : in.lanes) && slot(in.b, full) &&
         slot(in.c, full);
    break;
  case Op::ICmp:
  case Op::FCmp:
    ok = in.aux < uint8_t(Type::Count) && slot(in.dst, in.lanes) &&
         slot(in.a, bytesOf(in.aux, in.lanes)) && slot(in.b, bytesOf(in.aux, in.lanes));
    break;
  case Op::TruncI: case Op::ZExt: case Op::SExt: case Op::FPTrunc: case Op::FPExt:
  case Op::FPToSI: case Op::FPToUI: case Op::SIToFP: case Op::UIToFP: case Op::PtrToInt:
  case Op::IntToPtr:
    ok = in.aux < uint8_t(Type::Count) && slot(in.dst, full) &&
         slot(in.a, bytesOf(in.aux, in.lanes));
    break;
  case Op::Extract:
    ok = in.aux >= 1 && in.aux <= kMaxLanes && slot(in.dst, elem) &&
         slot(in.a, bytesOf(in.type, in.aux)) && slot(in.b, 8);
    break;
  case Op::Insert:
    ok = slot(in.dst, full) && slot(in.a, full) && slot(in.b, elem) && slot(in.c, 8);
    break;
  case Op::Shuffle: {
    if (uint64_t(in.imm) + 1 + in.lanes > k.extra.size())
      return "shuffle mask out of range";
    uint32_t src = k.extra[in.imm];
    if (src == 0 || src > kMaxLanes)
      return "bad shuffle source width";
    for (uint32_t i = 0; i < in.lanes; ++i) {
      uint32_t m = k.extra[in.imm + 1 + i];
      if (m != 0xffffffffu && m >= 2 * src)
        return "shuffle index out of range";
    }
    ok = slot(in.dst, full) && slot(in.a, bytesOf(in.type, src)) && slot(in.b, bytesOf(in.type, src));
    break;
  }
  case Op::PtrAdd:
    ok = slot(in.dst, 8) && slot(in.a, 8) && slot(in.b, 8);
    break;
  case Op::PtrAddConst:
    ok = slot(in.dst, 8) && slot(in.a, 8);
    break;
  case Op::Load:
  case Op::MaskedLoad:
  case Op::Store:
  case Op::MaskedStore:
  case Op::AtomicRmw:
  case Op::CmpXchg: {
    if (in.imm != uint32_t(Space::Global) && in.imm != uint32_t(Space::Shared))
      return "bad address space";
    if (!slot(in.a, 8))
      return "pointer operand out of the frame";
    if (op == Op::Load)
      ok = slot(in.dst, full);
    else if (op == Op::Store)
      ok = slot(in.b, full);
    else if (op == Op::MaskedLoad)
      ok = slot(in.dst, full) && slot(in.b, in.lanes) && slot(in.c, full);
    else if (op == Op::MaskedStore)
      ok = slot(in.b, full) && slot(in.c, in.lanes);
    else {
      Type t = Type(in.type);
      // 16-bit floats: an atomicrmw fadd of f16 or bf16 (global atomic_add); 8- and 16-bit
      // integers: an atomicrmw xchg (a layout move's stores of copies, relayout.cpp).
      bool okType = t == Type::I32 || t == Type::I64 ||
                    (op == Op::AtomicRmw && (t == Type::F32 || t == Type::F64 ||
                                             ((t == Type::F16 || t == Type::BF16) &&
                                              in.aux == uint8_t(Rmw::FAdd)))) ||
                    (op == Op::AtomicRmw && (t == Type::I8 || t == Type::I16) &&
                     in.aux == uint8_t(Rmw::Xchg));
      if (!okType || in.lanes != 1 || (op == Op::AtomicRmw && in.aux >= uint8_t(Rmw::Count)))
        return "bad atomic operand type or kind";
      ok = op == Op::AtomicRmw ? slot(in.dst, elem) && slot(in.b, elem)
                               : slot(in.dst, elem + 1) && slot(in.b, elem) && slot(in.c, elem);
    }
    break;
  }
  case Op::BufferLoad:
    ok = in.aux <= 1 && slot(in.dst, full) && slot(in.a, 16) && slot(in.b, 4) && slot(in.c, 4);
    break;
  case Op::BufferStore:
    ok = in.aux <= 1 && slot(in.b, full) && slot(in.a, 16) && slot(in.c, 4) && slot(in.dst, 4);
    break;
  case Op::AsyncCopy:
    ok = in.imm >= 1 && in.imm <= 16 && slot(in.a, 8) && slot(in.b, 8) && slot(in.c, 4);
    break;
  case Op::BufferLoadLds:
    ok = in.aux <= 1 && (in.imm == 1 || in.imm == 2 || in.imm == 4) && slot(in.a, 16) &&
         slot(in.b, 8) && slot(in.c, 4) && slot(in.dst, 4);
    break;
  case Op::AsyncCommit:
  case Op::AsyncWait:
    break;
  case Op::Mbcnt:
  case Op::CvtFp8ToF32:
    ok = slot(in.dst, 4) && slot(in.a, 4) && slot(in.b, 4);
    break;
  case Op::CvtPkF32ToFp8:
    ok = slot(in.dst, 4) && slot(in.a, 4) && slot(in.b, 4) && slot(in.c, 4);
    break;
  case Op::CvtBf16Pack:
    return "reserved opcode";
  case Op::Wave: {
    switch (WaveOp(in.aux)) {
    case WaveOp::Bpermute:
      ok = slot(in.dst, 4) && slot(in.a, 4) && slot(in.b, 4);
      break;
    case WaveOp::Readlane:
      ok = slot(in.dst, full) && slot(in.a, full) && slot(in.b, 4);
      break;
    case WaveOp::Readfirstlane:
      ok = slot(in.dst, full) && slot(in.a, full);
      break;
    case WaveOp::Ballot:
      ok = (Type(in.type) == Type::I32 || Type(in.type) == Type::I64) && slot(in.dst, elem) &&
           slot(in.a, 1);
      break;
    case WaveOp::ShflIdx: case WaveOp::ShflUp: case WaveOp::ShflDown: case WaveOp::ShflBfly:
      ok = elem == 4 && slot(in.a, 4) && slot(in.b, 4) && slot(in.c, 4) &&
           slot(in.dst, 4 + (in.imm & 1)) && prog.waveSize == 32;
      break;
    case WaveOp::Ldmatrix: {
      uint32_t count = in.imm & 7;
      ok = (count == 1 || count == 2 || count == 4) && (in.imm & ~15u) == 0 && slot(in.a, 8) &&
           slot(in.dst, 4 * count) && prog.waveSize == 32;
      break;
    }
    default:
      return "unknown wave operation";
    }
    break;
  }
  case Op::Mma: {
    if (in.imm >= uint32_t(Mma::Count))
      return "unknown matrix instruction";
    const MmaShape &s = mmaShape(Mma(in.imm));
    if (s.waveSize != prog.waveSize)
      return std::string(s.name) + " needs a wave of " + std::to_string(s.waveSize);
    ok = slot(in.a, s.aBytes) && slot(in.b, s.bBytes) && slot(in.c, s.cBytes) &&
         slot(in.dst, s.cBytes);
    break;
  }
  case Op::Wgmma: {
    const uint32_t nn = in.imm & 0xfff, flags = in.imm >> 12;
    const bool fp8 = in.aux == uint8_t(WgmmaElem::E4M3) || in.aux == uint8_t(WgmmaElem::E5M2);
    if (nn == 0 || nn > 256 || nn % 8 != 0 || (flags & ~kWgmmaFlags) != 0 ||
        in.aux >= uint8_t(WgmmaElem::Count) ||
        (fp8 && (flags & (kWgmmaRegA | kWgmmaTransA | kWgmmaTransB))) ||
        ((flags & kWgmmaRegA) && (flags & kWgmmaTransA)) || prog.waveSize != 32)
      return "bad wgmma";
    ok = slot(in.dst, 2 * nn) && slot(in.c, 2 * nn) &&
         slot(in.a, (flags & kWgmmaRegA) ? 16 : 8) && slot(in.b, 8);
    break;
  }
  case Op::WgmmaCommit:
  case Op::WgmmaWait:
    break;
  case Op::MbarInit:
  case Op::MbarArrive:
    ok = slot(in.a, 4);
    break;
  case Op::MbarWait:
    ok = slot(in.a, 4) && slot(in.b, 4);
    break;
  case Op::TmaLoad: // c: imm coordinates of 4 bytes (0: 2)
    ok = in.imm <= kTensorMapMaxRank && slot(in.a, 4) && slot(in.b, 8) &&
         slot(in.c, 4 * (in.imm ? uint32_t(in.imm) : 2)) && slot(in.dst, 4);
    break;
  case Op::TmaStore:
    ok = in.imm <= kTensorMapMaxRank && slot(in.a, 4) && slot(in.b, 8) &&
         slot(in.c, 4 * (in.imm ? uint32_t(in.imm) : 2));
    break;
  case Op::Reduce:
    if (in.imm >= uint32_t(Reduce::Count) || in.aux == 0 || in.aux > kMaxLanes || in.lanes != 1)
      return "bad vector reduction";
    ok = slot(in.dst, elem) && slot(in.a, bytesOf(in.type, in.aux)) &&
         (in.imm != uint32_t(Reduce::FAdd) && in.imm != uint32_t(Reduce::FMul) ? true
                                                                               : slot(in.b, elem));
    break;
  default: // elementwise unary and binary arithmetic
    if (op >= Op::Add && op <= Op::Pow)
      ok = slot(in.dst, full) && slot(in.a, full) && slot(in.b, full);
    else if (op >= Op::FNeg && op <= Op::Cttz)
      ok = slot(in.dst, full) && slot(in.a, full);
    else
      return "unknown opcode " + std::to_string(in.op);
  }
  return ok ? "" : "an operand lies outside the frame or a branch target outside the code";
}

} // namespace

bool isEmuImage(const void *image, size_t size) {
  return image && size >= sizeof kImageMagic &&
         std::memcmp(image, kImageMagic, sizeof kImageMagic) == 0;
}

wave_status_t loadProgram(const void *image, size_t size, Program &out) {
  if (!isEmuImage(image, size))
    return bad("no WAVEEMU1 magic (not an emulator image)");
  const uint8_t *bytes = static_cast<const uint8_t *>(image);
  Reader r(bytes + 8, size - 8);
  uint32_t version = 0, count = 0;
  if (!r.u32(version))
    return bad("truncated header");
  if (version != kImageVersion)
    return bad("version " + std::to_string(version) + ", this runtime reads version " +
               std::to_string(kImageVersion) + " (rebuild with a matching wavec)");
  // The checksum first: a damaged image is refused as such, before any of its content is
  // interpreted (validation below still guards against content that was sealed bad).
  uint32_t sumLo = 0, sumHi = 0;
  if (!r.u32(sumLo) || !r.u32(sumHi))
    return bad("truncated header");
  const uint64_t stored = uint64_t(sumLo) | uint64_t(sumHi) << 32;
  const uint64_t actual = imageChecksum(bytes + kPayloadOffset, size - kPayloadOffset);
  if (stored != actual) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "checksum mismatch (stored %016llx, computed %016llx)",
                  (unsigned long long)stored, (unsigned long long)actual);
    return bad(std::string(buf) + ": the image is damaged or was modified after wavec wrote it");
  }
  if (!r.str(out.target, 64) || !r.u32(out.waveSize))
    return bad("truncated header");
  if (out.waveSize != 32 && out.waveSize != 64)
    return bad("wave size " + std::to_string(out.waveSize));
  if (!r.count(count, 4))
    return bad("truncated string table");
  out.strings.resize(count);
  for (auto &s : out.strings)
    if (!r.str(s, 4096))
      return bad("truncated string table");
  if (!r.count(count, 4))
    return bad("truncated kernel table");
  out.kernels.resize(count);
  std::set<std::string> names;
  for (KernelCode &k : out.kernels) {
    std::string where = "kernel #" + std::to_string(&k - out.kernels.data());
    uint32_t n = 0;
    if (!r.str(k.name, 4096) || k.name.empty())
      return bad(where + ": truncated or empty name");
    where = "kernel '" + k.name + "'";
    if (!names.insert(k.name).second)
      return bad(where + ": defined twice");
    if (!r.u32(k.block[0]) || !r.u32(k.block[1]) || !r.u32(k.block[2]) ||
        !r.u32(k.staticShared) || !r.u32(k.frameBytes))
      return bad(where + ": truncated");
    if (k.block[0] > 1024 || k.block[1] > 1024 || k.block[2] > 64 ||
        uint64_t(k.block[0]) * k.block[1] * k.block[2] > 1024)
      return bad(where + ": bad block size");
    if (k.staticShared > (1u << 24))
      return bad(where + ": " + std::to_string(k.staticShared) + " bytes of shared memory");
    if (k.frameBytes > kMaxFrameBytes)
      return bad(where + ": frame of " + std::to_string(k.frameBytes) + " bytes");
    if (!r.count(n, 12))
      return bad(where + ": truncated argument list");
    k.args.resize(n);
    for (auto &a : k.args) {
      if (!r.u32(a.slot) || !r.u32(a.offset) || !r.u32(a.size))
        return bad(where + ": truncated argument list");
      if (a.size == 0 || a.size > 8 || uint64_t(a.slot) + a.size > k.frameBytes ||
          a.offset > (1u << 16))
        return bad(where + ": bad argument slot, offset or size");
      k.argsSize = std::max(k.argsSize, a.offset + a.size);
    }
    if (!r.count(n, 1) || n > k.frameBytes)
      return bad(where + ": bad constant block");
    k.init.resize(n);
    if (!r.bytes(k.init.data(), n))
      return bad(where + ": truncated constant block");
    if (!r.count(n, sizeof(Inst)) || n == 0)
      return bad(where + ": truncated or empty code");
    k.code.resize(n);
    if (!r.bytes(k.code.data(), size_t(n) * sizeof(Inst)))
      return bad(where + ": truncated code");
    if (!r.count(n, 4))
      return bad(where + ": truncated extra table");
    k.extra.resize(n);
    for (auto &w : k.extra)
      if (!r.u32(w))
        return bad(where + ": truncated extra table");
    if (!r.count(n, 12) || n == 0)
      return bad(where + ": truncated location table");
    k.locs.resize(n);
    for (auto &l : k.locs) {
      if (!r.u32(l.file) || !r.u32(l.line) || !r.u32(l.col))
        return bad(where + ": truncated location table");
      if (l.file != kNoString && l.file >= out.strings.size())
        return bad(where + ": location names string " + std::to_string(l.file));
    }
    for (size_t i = 0; i < k.code.size(); ++i) {
      std::string why = checkInst(k, out, k.code[i]);
      if (!why.empty())
        return bad(where + ", instruction " + std::to_string(i) + ": " + why);
      Op op = Op(k.code[i].op);
      if ((op == Op::AtomicRmw || op == Op::CmpXchg) && k.code[i].imm == uint32_t(Space::Global))
        k.globalAtomics = true;
    }
    if (!isTerminator(Op(k.code.back().op)))
      return bad(where + ": the code does not end with a terminator");
  }
  if (!r.atEnd())
    return bad(std::to_string(size - 8 - r.pos()) + " trailing bytes");
  return WAVE_SUCCESS;
}

} // namespace wave::emu
