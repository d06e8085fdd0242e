// Element formats of the reference evaluator: rounding to each float type, integer wrapping,
// and the storage encodings of HostTensor (reference.h).
#include "reference/reference.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace wave::ref {

namespace {

// A small float format: exponent and mantissa bits, bias, and how it spends its top codes.
struct FloatFormat {
  int expBits, mantBits, bias;
  enum Special { IEEE, FN, FNUZ } special; // FN: only S.1111.111 is NaN; FNUZ: 0x80 is NaN
  int minExp() const { return 1 - bias; }
  double maxFinite() const {
    int topExp = (1 << expBits) - 1 - bias;
    switch (special) {
    case IEEE: return std::ldexp(2.0 - std::ldexp(1.0, -mantBits), topExp - 1);
    case FN: return std::ldexp(2.0 - std::ldexp(2.0, -mantBits), topExp);
    case FNUZ: return std::ldexp(2.0 - std::ldexp(1.0, -mantBits), topExp);
    }
    return 0;
  }
};

const FloatFormat *smallFormat(ScalarType t) {
  static const FloatFormat f16{5, 10, 15, FloatFormat::IEEE}, bf16{8, 7, 127, FloatFormat::IEEE},
      e4m3fn{4, 3, 7, FloatFormat::FN}, e5m2{5, 2, 15, FloatFormat::IEEE},
      e4m3fnuz{4, 3, 8, FloatFormat::FNUZ}, e5m2fnuz{5, 2, 16, FloatFormat::FNUZ};
  switch (t) {
  case ScalarType::F16: return &f16;
  case ScalarType::BF16: return &bf16;
  case ScalarType::F8E4M3FN: return &e4m3fn;
  case ScalarType::F8E5M2: return &e5m2;
  case ScalarType::F8E4M3FNUZ: return &e4m3fnuz;
  case ScalarType::F8E5M2FNUZ: return &e5m2fnuz;
  default: return nullptr;
  }
}

double roundSmall(const FloatFormat &f, double v) {
  if (std::isnan(v))
    return v;
  if (v == 0)
    return f.special == FloatFormat::FNUZ ? 0.0 : v;
  double a = std::fabs(v);
  const double maxf = f.maxFinite();
  double r;
  if (std::isinf(a)) {
    r = a;
  } else {
    int ex = 0;
    std::frexp(a, &ex);
    int e = ex - 1;
    if (e < f.minExp())
      e = f.minExp();
    double q = std::ldexp(1.0, e - f.mantBits);
    r = std::nearbyint(a / q) * q; // ties to even (the default rounding mode)
  }
  if (r > maxf)
    r = f.special == FloatFormat::IEEE ? std::numeric_limits<double>::infinity()
                                       : std::numeric_limits<double>::quiet_NaN();
  if (r == 0 && f.special == FloatFormat::FNUZ)
    return 0.0;
  return std::signbit(v) ? -r : r;
}

uint64_t encodeSmall(const FloatFormat &f, double v) {
  const int total = 1 + f.expBits + f.mantBits;
  const uint64_t signBit = uint64_t(1) << (total - 1);
  const uint64_t expAll = (uint64_t(1) << f.expBits) - 1, mantAll = (uint64_t(1) << f.mantBits) - 1;
  double r = roundSmall(f, v);
  if (std::isnan(r)) {
    switch (f.special) {
    case FloatFormat::IEEE: return (expAll << f.mantBits) | (uint64_t(1) << (f.mantBits - 1));
    case FloatFormat::FN: return (expAll << f.mantBits) | mantAll;
    case FloatFormat::FNUZ: return signBit;
    }
  }
  uint64_t sign = std::signbit(r) ? signBit : 0;
  double a = std::fabs(r);
  if (std::isinf(a))
    return sign | (expAll << f.mantBits);
  if (a == 0)
    return sign;
  int ex = 0;
  std::frexp(a, &ex);
  int e = ex - 1;
  if (e < f.minExp()) // subnormal
    return sign | static_cast<uint64_t>(std::ldexp(a, f.mantBits - f.minExp()));
  uint64_t mant = static_cast<uint64_t>(std::ldexp(std::ldexp(a, -e) - 1.0, f.mantBits));
  return sign | (static_cast<uint64_t>(e + f.bias) << f.mantBits) | mant;
}

double decodeSmall(const FloatFormat &f, uint64_t bits) {
  const int total = 1 + f.expBits + f.mantBits;
  const uint64_t signBit = uint64_t(1) << (total - 1);
  const uint64_t expAll = (uint64_t(1) << f.expBits) - 1, mantAll = (uint64_t(1) << f.mantBits) - 1;
  bits &= (signBit << 1) - 1;
  uint64_t e = (bits >> f.mantBits) & expAll, m = bits & mantAll;
  bool neg = bits & signBit;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  switch (f.special) {
  case FloatFormat::IEEE:
    if (e == expAll)
      return m ? nan : (neg ? -1.0 : 1.0) * std::numeric_limits<double>::infinity();
    break;
  case FloatFormat::FN:
    if (e == expAll && m == mantAll)
      return nan;
    break;
  case FloatFormat::FNUZ:
    if (bits == signBit)
      return nan;
    break;
  }
  double a = e == 0 ? std::ldexp(static_cast<double>(m), f.minExp() - f.mantBits)
                    : std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -f.mantBits),
                                 static_cast<int>(e) - f.bias);
  return neg ? -a : a;
}

} // namespace

unsigned elementBytes(ScalarType t) { return t == ScalarType::I1 ? 1 : (bitWidth(t) + 7) / 8; }

double largestFloat(ScalarType t) {
  const FloatFormat *f = smallFormat(t);
  return f && f->special != FloatFormat::IEEE ? f->maxFinite()
                                              : std::numeric_limits<double>::infinity();
}

double roundToFloat(ScalarType t, double v) {
  if (t == ScalarType::F64)
    return v;
  if (t == ScalarType::F32)
    return static_cast<double>(static_cast<float>(v));
  if (const FloatFormat *f = smallFormat(t))
    return roundSmall(*f, v);
  return v;
}

int64_t wrapToInt(ScalarType t, int64_t v) {
  switch (t) {
  case ScalarType::I1: return v & 1;
  case ScalarType::I8: return static_cast<int8_t>(static_cast<uint8_t>(v));
  case ScalarType::I16: return static_cast<int16_t>(static_cast<uint16_t>(v));
  case ScalarType::I32: return static_cast<int32_t>(static_cast<uint32_t>(v));
  case ScalarType::U8: return static_cast<uint8_t>(v);
  case ScalarType::U32: return static_cast<uint32_t>(v);
  default: return v;
  }
}

uint64_t encodeFloat(ScalarType t, double v) {
  if (t == ScalarType::F64) {
    uint64_t b;
    std::memcpy(&b, &v, 8);
    return b;
  }
  if (t == ScalarType::F32) {
    float f = static_cast<float>(v);
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
  }
  if (const FloatFormat *f = smallFormat(t))
    return encodeSmall(*f, v);
  return 0;
}

double decodeFloat(ScalarType t, uint64_t bits) {
  if (t == ScalarType::F64) {
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }
  if (t == ScalarType::F32) {
    uint32_t b = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }
  if (const FloatFormat *f = smallFormat(t))
    return decodeSmall(*f, bits);
  return 0;
}

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

HostTensor HostTensor::zeros(ScalarType t, std::vector<int64_t> shape) {
  HostTensor h;
  h.dtype = t;
  h.shape = std::move(shape);
  h.data.assign(static_cast<size_t>(h.numel()) * elementBytes(t), 0);
  return h;
}

static uint64_t loadBits(const uint8_t *p, unsigned bytes) {
  uint64_t v = 0;
  for (unsigned b = 0; b < bytes; ++b)
    v |= static_cast<uint64_t>(p[b]) << (8 * b);
  return v;
}

static void storeBits(uint8_t *p, unsigned bytes, uint64_t v) {
  for (unsigned b = 0; b < bytes; ++b)
    p[b] = static_cast<uint8_t>(v >> (8 * b));
}

double HostTensor::getFloat(int64_t i) const {
  unsigned n = elementBytes(dtype);
  uint64_t bits = loadBits(data.data() + i * n, n);
  if (isFloat(dtype))
    return decodeFloat(dtype, bits);
  return static_cast<double>(wrapToInt(dtype, static_cast<int64_t>(bits)));
}

int64_t HostTensor::getInt(int64_t i) const {
  unsigned n = elementBytes(dtype);
  return wrapToInt(dtype, static_cast<int64_t>(loadBits(data.data() + i * n, n)));
}

void HostTensor::setFloat(int64_t i, double v) {
  unsigned n = elementBytes(dtype);
  storeBits(data.data() + i * n, n, encodeFloat(dtype, v));
}

void HostTensor::setInt(int64_t i, int64_t v) {
  unsigned n = elementBytes(dtype);
  storeBits(data.data() + i * n, n, static_cast<uint64_t>(wrapToInt(dtype, v)));
}

} // namespace wave::ref
