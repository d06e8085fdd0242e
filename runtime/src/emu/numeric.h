// Bit-exact conversions between f32 and the narrow float formats the emulated GPUs use (f16,
// bf16, and the FNUZ fp8 formats of gfx942), all with round-to-nearest-even.
#ifndef WAVE_EMU_NUMERIC_H
#define WAVE_EMU_NUMERIC_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace wave::emu {

inline uint32_t floatBits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}
inline float bitsFloat(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

inline float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
  if (exp == 0x1f)
    return bitsFloat(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0)
      return bitsFloat(sign);
    float v = std::ldexp(float(mant), -24);
    return sign ? -v : v;
  }
  return bitsFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

inline uint16_t floatToHalf(float f) {
  uint32_t x = floatBits(f);
  uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
  uint32_t fexp = (x >> 23) & 0xffu;
  if (fexp == 0xff)
    return uint16_t(sign | 0x7c00u | (mant ? 0x200u : 0u));
  int32_t exp = int32_t(fexp) - 127 + 15;
  if (exp >= 31)
    return uint16_t(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10)
      return uint16_t(sign);
    mant |= 0x800000u;
    uint32_t shift = uint32_t(14 - exp), half = 1u << (shift - 1);
    uint32_t v = mant >> shift, rest = mant & ((1u << shift) - 1u);
    if (rest > half || (rest == half && (v & 1u)))
      ++v;
    return uint16_t(sign | v);
  }
  uint32_t v = (uint32_t(exp) << 10) | (mant >> 13), rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (v & 1u)))
    ++v; // may carry into the exponent: correct, up to infinity
  return uint16_t(sign | v);
}

inline float bf16ToFloat(uint16_t b) { return bitsFloat(uint32_t(b) << 16); }

inline uint16_t floatToBf16(float f) {
  uint32_t x = floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((x >> 16) | 0x40u);
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// FNUZ fp8 (gfx942): no infinities, no negative zero, 0x80 is the only NaN.
// e4m3: exponent bias 8, 3 mantissa bits, max 240. e5m2: bias 16, 2 mantissa bits, max 57344.
inline float fp8ToFloat(uint8_t b, bool e5m2) {
  if (b == 0x80)
    return std::nanf("");
  int mbits = e5m2 ? 2 : 3, bias = e5m2 ? 16 : 8;
  int exp = (b & 0x7f) >> mbits, mant = b & ((1 << mbits) - 1);
  float v = exp == 0 ? std::ldexp(float(mant), 1 - bias - mbits)
                     : std::ldexp(float((1 << mbits) + mant), exp - bias - mbits);
  return (b & 0x80) ? -v : v;
}

// Round to nearest even; values beyond the largest finite magnitude and NaN become NaN (0x80),
// since the format has no infinity; results that round to zero are +0 (the format has no -0).
inline uint8_t floatToFp8(float f, bool e5m2) {
  if (std::isnan(f))
    return 0x80;
  int mbits = e5m2 ? 2 : 3, bias = e5m2 ? 16 : 8;
  float a = std::fabs(f);
  float maxv = e5m2 ? 57344.0f : 240.0f;
  if (a > maxv) {
    // Half an ulp above the maximum still rounds down to it.
    float ulp = std::ldexp(1.0f, (e5m2 ? 15 : 7) - mbits);
    if (a >= maxv + ulp / 2)
      return 0x80;
    a = maxv;
  }
  int minExp = 1 - bias; // smallest normal exponent
  int e;
  std::frexp(a, &e);
  int exp = std::max(e - 1, minExp);
  // Quantum at this exponent: 2^(exp - mbits).
  float q = std::ldexp(1.0f, exp - mbits);
  float n = std::nearbyint(a / q); // default rounding mode: to nearest even
  float r = n * q;
  if (r == 0)
    return 0;
  int re;
  std::frexp(r, &re);
  int rexp = re - 1;
  uint8_t bits;
  if (rexp < minExp) { // subnormal
    bits = uint8_t(int(r / std::ldexp(1.0f, minExp - mbits)));
  } else {
    int m = int(r / std::ldexp(1.0f, rexp - mbits)) - (1 << mbits);
    bits = uint8_t(((rexp + bias) << mbits) | m);
  }
  return uint8_t(bits | (f < 0 ? 0x80 : 0));
}

} // namespace wave::emu

#endif
