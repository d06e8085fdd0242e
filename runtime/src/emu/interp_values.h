// The values of the emulated instructions, for the interpreter (interp.cpp, its only includer):
// register bytes read and written by type, integer and float arithmetic, comparisons and
// conversions. Internal linkage, as when they were part of interp.cpp.
#ifndef WAVE_EMU_INTERP_VALUES_H
#define WAVE_EMU_INTERP_VALUES_H

#include "emu.h"
#include "numeric.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace wave::emu {
namespace {

template <class T> inline T rd(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <class T> inline void wr(uint8_t *p, T v) { std::memcpy(p, &v, sizeof(T)); }

// Small copies dominate (scalars, short vectors): fixed sizes avoid a libc call. The ranges
// never overlap partially (distinct slots, or one slot onto itself).
inline void copyBytes(uint8_t *d, const uint8_t *s, size_t n) {
  switch (n) {
  case 1: *d = *s; return;
  case 2: { uint16_t v; std::memcpy(&v, s, 2); std::memcpy(d, &v, 2); return; }
  case 4: { uint32_t v; std::memcpy(&v, s, 4); std::memcpy(d, &v, 4); return; }
  case 8: { uint64_t v; std::memcpy(&v, s, 8); std::memcpy(d, &v, 8); return; }
  case 16: { uint64_t v[2]; std::memcpy(v, s, 16); std::memcpy(d, v, 16); return; }
  default: std::memmove(d, s, n);
  }
}

// ---- typed element access -------------------------------------------------------------------

inline uint64_t getU(Type t, const uint8_t *p) {
  switch (t) {
  case Type::I1: return p[0] & 1;
  case Type::I8: return p[0];
  case Type::I16: case Type::F16: case Type::BF16: return rd<uint16_t>(p);
  case Type::I32: case Type::F32: return rd<uint32_t>(p);
  default: return rd<uint64_t>(p);
  }
}
inline int64_t getS(Type t, const uint8_t *p) {
  if (t == Type::I1)
    return (p[0] & 1) ? -1 : 0;
  switch (typeSize(t)) {
  case 1: return int8_t(p[0]);
  case 2: return rd<int16_t>(p);
  case 4: return rd<int32_t>(p);
  default: return rd<int64_t>(p);
  }
}
inline void putU(Type t, uint8_t *p, uint64_t v) {
  switch (t) {
  case Type::I1: p[0] = uint8_t(v & 1); break;
  case Type::I8: p[0] = uint8_t(v); break;
  case Type::I16: case Type::F16: case Type::BF16: wr<uint16_t>(p, uint16_t(v)); break;
  case Type::I32: case Type::F32: wr<uint32_t>(p, uint32_t(v)); break;
  default: wr<uint64_t>(p, v); break;
  }
}

// A double rounded to float with round-to-odd, so that a second rounding to a narrower format
// (f16, bf16) is the correctly rounded result of the double.
inline float roundToOdd(double x) {
  float r = float(x);
  if (double(r) == x || std::isnan(x) || std::isinf(r))
    return r;
  if (std::fabs(double(r)) > std::fabs(x))
    r = std::nextafter(r, 0.0f);
  return bitsFloat(floatBits(r) | 1u);
}

inline double getF(Type t, const uint8_t *p) {
  switch (t) {
  case Type::F16: return halfToFloat(rd<uint16_t>(p));
  case Type::BF16: return bf16ToFloat(rd<uint16_t>(p));
  case Type::F32: return rd<float>(p);
  case Type::F64: return rd<double>(p);
  default: return double(getS(t, p));
  }
}
inline void putF(Type t, uint8_t *p, double v) {
  switch (t) {
  case Type::F16: wr<uint16_t>(p, floatToHalf(roundToOdd(v))); break;
  case Type::BF16: wr<uint16_t>(p, floatToBf16(roundToOdd(v))); break;
  case Type::F32: wr<float>(p, float(v)); break;
  case Type::F64: wr<double>(p, v); break;
  default: break;
  }
}

inline uint64_t widthMask(Type t) {
  uint32_t bits = t == Type::I1 ? 1 : typeSize(t) * 8;
  return bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
}

inline uint64_t intBinary(Op op, Type t, const uint8_t *pa, const uint8_t *pb) {
  uint64_t a = getU(t, pa), b = getU(t, pb);
  int64_t sa = getS(t, pa), sb = getS(t, pb);
  uint32_t bits = t == Type::I1 ? 1 : typeSize(t) * 8;
  switch (op) {
  case Op::Add: return a + b;
  case Op::Sub: return a - b;
  case Op::Mul: return a * b;
  case Op::UDiv: return b ? a / b : 0;
  case Op::URem: return b ? a % b : 0;
  case Op::SDiv: return (sb == 0 || (sb == -1 && sa == std::numeric_limits<int64_t>::min()))
                            ? 0 : uint64_t(sa / sb);
  case Op::SRem: return (sb == 0 || sb == -1) ? 0 : uint64_t(sa % sb);
  case Op::Shl: return b >= bits ? 0 : a << b;
  case Op::LShr: return b >= bits ? 0 : a >> b;
  case Op::AShr: return uint64_t(b >= bits ? (sa < 0 ? -1 : 0) : sa >> b);
  case Op::And: return a & b;
  case Op::Or: return a | b;
  case Op::Xor: return a ^ b;
  case Op::SMin: return uint64_t(std::min(sa, sb));
  case Op::SMax: return uint64_t(std::max(sa, sb));
  case Op::UMin: return std::min(a, b);
  case Op::UMax: return std::max(a, b);
  default: return 0;
  }
}

inline double floatBinary(Op op, double a, double b) {
  switch (op) {
  case Op::FAdd: return a + b;
  case Op::FSub: return a - b;
  case Op::FMul: return a * b;
  case Op::FDiv: return a / b;
  case Op::FRem: return std::fmod(a, b);
  case Op::MinNum: return std::fmin(a, b);
  case Op::MaxNum: return std::fmax(a, b);
  case Op::Minimum:
    if (std::isnan(a) || std::isnan(b)) return std::nan("");
    if (a == b) return std::signbit(a) ? a : b;
    return a < b ? a : b;
  case Op::Maximum:
    if (std::isnan(a) || std::isnan(b)) return std::nan("");
    if (a == b) return std::signbit(a) ? b : a;
    return a > b ? a : b;
  case Op::CopySign: return std::copysign(a, b);
  case Op::Pow: return std::pow(a, b);
  default: return 0;
  }
}

inline double floatUnary(Op op, double a) {
  switch (op) {
  case Op::FNeg: return -a;
  case Op::FAbs: return std::fabs(a);
  case Op::Sqrt: return std::sqrt(a);
  case Op::Rsq: return 1.0 / std::sqrt(a);
  case Op::Rcp: return 1.0 / a;
  case Op::Exp: return std::exp(a);
  case Op::Exp2: return std::exp2(a);
  case Op::Log: return std::log(a);
  case Op::Log2: return std::log2(a);
  case Op::Sin: return std::sin(a);
  case Op::Cos: return std::cos(a);
  case Op::Tanh: return std::tanh(a);
  case Op::Floor: return std::floor(a);
  case Op::Ceil: return std::ceil(a);
  case Op::Trunc: return std::trunc(a);
  case Op::Round: return std::round(a);
  case Op::Rint: return std::nearbyint(a);
  default: return 0;
  }
}

inline bool fcmp(uint32_t pred, double a, double b) {
  bool uno = std::isnan(a) || std::isnan(b);
  switch (pred) {
  case 0: return false;
  case 1: return !uno && a == b;
  case 2: return !uno && a > b;
  case 3: return !uno && a >= b;
  case 4: return !uno && a < b;
  case 5: return !uno && a <= b;
  case 6: return !uno && a != b;
  case 7: return !uno;
  case 8: return uno;
  case 9: return uno || a == b;
  case 10: return uno || a > b;
  case 11: return uno || a >= b;
  case 12: return uno || a < b;
  case 13: return uno || a <= b;
  case 14: return uno || a != b;
  default: return true;
  }
}

inline bool icmp(uint32_t pred, uint64_t a, uint64_t b, int64_t sa, int64_t sb) {
  switch (pred) {
  case 32: return a == b;
  case 33: return a != b;
  case 34: return a > b;
  case 35: return a >= b;
  case 36: return a < b;
  case 37: return a <= b;
  case 38: return sa > sb;
  case 39: return sa >= sb;
  case 40: return sa < sb;
  case 41: return sa <= sb;
  default: return false;
  }
}

template <class To> To saturate(double v) {
  if (std::isnan(v))
    return 0;
  if (v <= double(std::numeric_limits<To>::min()))
    return std::numeric_limits<To>::min();
  if (v >= double(std::numeric_limits<To>::max()))
    return std::numeric_limits<To>::max();
  return To(v);
}

inline void cast(const Inst &in, uint8_t *f) {
  Type to = Type(in.type), from = Type(in.aux);
  uint32_t ts = typeSize(to), fs = typeSize(from);
  uint8_t *d = f + in.dst;
  const uint8_t *a = f + in.a;
  for (uint32_t l = 0; l < in.lanes; ++l, d += ts, a += fs) {
    switch (Op(in.op)) {
    case Op::TruncI: case Op::ZExt: case Op::PtrToInt: case Op::IntToPtr:
      putU(to, d, getU(from, a) & widthMask(to));
      break;
    case Op::SExt:
      putU(to, d, uint64_t(getS(from, a)) & widthMask(to));
      break;
    case Op::FPTrunc: case Op::FPExt:
      putF(to, d, getF(from, a));
      break;
    case Op::SIToFP: {
      int64_t v = getS(from, a);
      // i64 -> f32 must round once: go through long double where that is exact enough.
      putF(to, d, to == Type::F64 || fs < 8 ? double(v) : double(float(v)));
      break;
    }
    case Op::UIToFP: {
      uint64_t v = getU(from, a);
      putF(to, d, to == Type::F64 || fs < 8 ? double(v) : double(float(v)));
      break;
    }
    case Op::FPToSI: {
      double v = std::trunc(getF(from, a));
      int64_t r = to == Type::I64   ? saturate<int64_t>(v)
                  : to == Type::I32 ? saturate<int32_t>(v)
                  : to == Type::I16 ? saturate<int16_t>(v)
                                    : saturate<int8_t>(v);
      putU(to, d, uint64_t(r) & widthMask(to));
      break;
    }
    case Op::FPToUI: {
      double v = std::trunc(getF(from, a));
      uint64_t r = to == Type::I64   ? saturate<uint64_t>(v)
                   : to == Type::I32 ? saturate<uint32_t>(v)
                   : to == Type::I16 ? saturate<uint16_t>(v)
                                     : saturate<uint8_t>(v);
      putU(to, d, r & widthMask(to));
      break;
    }
    default:
      break;
    }
  }
}

} // namespace
} // namespace wave::emu

#endif // WAVE_EMU_INTERP_VALUES_H
