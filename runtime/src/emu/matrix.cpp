// Matrix instructions with the exact per-lane operand and result layouts of each emulated target
// (docs/hardware.md section 3): AMD CDNA MFMA (wave64), RDNA3 WMMA (wave32), NVIDIA mma.sync
// (warp32). Each instruction is evaluated as: gather the lanes' registers into the logical
// A (M x K), B (K x N) and C (M x N) matrices, compute D = A * B + C in f32 (or i32), scatter D
// back to the lanes' result registers.
#include "emu.h"
#include "numeric.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace wave::emu {
namespace {

enum class Elem { F16, BF16, Fp8, Bf8, I8 }; // Fp8/Bf8: gfx942's e4m3 / e5m2 FNUZ

// Where element g of lane l lives in the logical matrix: (row, col).
struct Coord {
  uint32_t row, col;
};

struct Layout {
  Elem elem;
  bool intAcc;
  uint32_t aElems, bElems, cElems;
  // A: (m, k); B: (k, n); C: (m, n).
  Coord (*a)(uint32_t l, uint32_t g);
  Coord (*b)(uint32_t l, uint32_t g);
  Coord (*c)(uint32_t l, uint32_t g);
  uint32_t operandLanes; // lanes whose A/B registers are read (WMMA: the first half-wave)
};

// CDNA MFMA with M = N = 16 or 32 and `kp` elements of A/B per lane.
template <uint32_t M, uint32_t KP> Coord mfmaA(uint32_t l, uint32_t g) {
  return {l % M, KP * (l / M) + g};
}
template <uint32_t M, uint32_t KP> Coord mfmaB(uint32_t l, uint32_t g) {
  return {KP * (l / M) + g, l % M};
}
template <uint32_t M> Coord mfmaC(uint32_t l, uint32_t g) {
  return {8 * (g / 4) + 4 * (l / M) + g % 4, l % M};
}

// RDNA3 WMMA 16x16x16: A row per lane, B column per lane, C rows interleaved by half-wave.
Coord wmmaA(uint32_t l, uint32_t g) { return {l % 16, g}; }
Coord wmmaB(uint32_t l, uint32_t g) { return {g, l % 16}; }
Coord wmmaC(uint32_t l, uint32_t g) { return {2 * g + l / 16, l % 16}; }

// NVIDIA mma.sync: grp = l / 4, tig = l % 4.
Coord mmaA16(uint32_t l, uint32_t i) {
  return {l / 4 + 8 * ((i >> 1) & 1), 2 * (l % 4) + (i & 1) + 8 * (i >> 2)};
}
Coord mmaB16(uint32_t l, uint32_t i) { return {2 * (l % 4) + (i & 1) + 8 * (i >> 1), l / 4}; }
Coord mmaA8(uint32_t l, uint32_t i) { return {l / 4 + 8 * (i >> 1), 2 * (l % 4) + (i & 1)}; }
Coord mmaB8(uint32_t l, uint32_t i) { return {2 * (l % 4) + i, l / 4}; }
Coord mmaC(uint32_t l, uint32_t i) { return {l / 4 + 8 * (i >> 1), 2 * (l % 4) + (i & 1)}; }

Layout layoutOf(Mma kind) {
  switch (kind) {
  case Mma::Mfma16x16x16F16: return {Elem::F16, false, 4, 4, 4, mfmaA<16, 4>, mfmaB<16, 4>, mfmaC<16>, 64};
  case Mma::Mfma16x16x16BF16: return {Elem::BF16, false, 4, 4, 4, mfmaA<16, 4>, mfmaB<16, 4>, mfmaC<16>, 64};
  case Mma::Mfma32x32x8F16: return {Elem::F16, false, 4, 4, 16, mfmaA<32, 4>, mfmaB<32, 4>, mfmaC<32>, 64};
  case Mma::Mfma32x32x8BF16: return {Elem::BF16, false, 4, 4, 16, mfmaA<32, 4>, mfmaB<32, 4>, mfmaC<32>, 64};
  case Mma::Mfma16x16x16I8: return {Elem::I8, true, 4, 4, 4, mfmaA<16, 4>, mfmaB<16, 4>, mfmaC<16>, 64};
  case Mma::Mfma32x32x8I8: return {Elem::I8, true, 4, 4, 16, mfmaA<32, 4>, mfmaB<32, 4>, mfmaC<32>, 64};
  case Mma::Mfma16x16x32Fp8: return {Elem::Fp8, false, 8, 8, 4, mfmaA<16, 8>, mfmaB<16, 8>, mfmaC<16>, 64};
  case Mma::Mfma32x32x16Fp8: return {Elem::Fp8, false, 8, 8, 16, mfmaA<32, 8>, mfmaB<32, 8>, mfmaC<32>, 64};
  case Mma::Mfma16x16x32Bf8: return {Elem::Bf8, false, 8, 8, 4, mfmaA<16, 8>, mfmaB<16, 8>, mfmaC<16>, 64};
  case Mma::Mfma32x32x16Bf8: return {Elem::Bf8, false, 8, 8, 16, mfmaA<32, 8>, mfmaB<32, 8>, mfmaC<32>, 64};
  case Mma::Mfma16x16x32I8: return {Elem::I8, true, 8, 8, 4, mfmaA<16, 8>, mfmaB<16, 8>, mfmaC<16>, 64};
  case Mma::Mfma32x32x16I8: return {Elem::I8, true, 8, 8, 16, mfmaA<32, 8>, mfmaB<32, 8>, mfmaC<32>, 64};
  case Mma::Wmma16x16x16F16: return {Elem::F16, false, 16, 16, 8, wmmaA, wmmaB, wmmaC, 16};
  case Mma::Wmma16x16x16BF16: return {Elem::BF16, false, 16, 16, 8, wmmaA, wmmaB, wmmaC, 16};
  case Mma::Mma16x8x16F16: return {Elem::F16, false, 8, 4, 4, mmaA16, mmaB16, mmaC, 32};
  case Mma::Mma16x8x16BF16: return {Elem::BF16, false, 8, 4, 4, mmaA16, mmaB16, mmaC, 32};
  default: return {Elem::F16, false, 4, 2, 4, mmaA8, mmaB8, mmaC, 32}; // Mma16x8x8F16
  }
}

float element(Elem e, const uint8_t *p, uint32_t g) {
  switch (e) {
  case Elem::F16: {
    uint16_t h;
    std::memcpy(&h, p + 2 * g, 2);
    return halfToFloat(h);
  }
  case Elem::BF16: {
    uint16_t h;
    std::memcpy(&h, p + 2 * g, 2);
    return bf16ToFloat(h);
  }
  case Elem::Fp8: return fp8ToFloat(p[g], false);
  case Elem::Bf8: return fp8ToFloat(p[g], true);
  default: return float(int8_t(p[g]));
  }
}

// OCP fp8 (NVIDIA's e4m3 / e5m2, PTX .e4m3 / .e5m2): e4m3 bias 7 with no infinities, NaN at
// S.1111.111; e5m2 bias 15 with IEEE infinities and NaNs.
float ocpFp8ToFloat(uint8_t b, bool e5m2) {
  const uint32_t mBits = e5m2 ? 2 : 3, eMax = e5m2 ? 31 : 15;
  const int bias = e5m2 ? 15 : 7;
  const uint32_t e = (b & 0x7f) >> mBits, m = b & ((1u << mBits) - 1);
  const float sign = (b & 0x80) ? -1.0f : 1.0f;
  if (e5m2 && e == eMax)
    return m ? std::numeric_limits<float>::quiet_NaN() : sign * std::numeric_limits<float>::infinity();
  if (!e5m2 && e == eMax && m == 7)
    return std::numeric_limits<float>::quiet_NaN();
  if (e == 0)
    return sign * std::ldexp(float(m), 1 - bias - int(mBits));
  return sign * std::ldexp(float((1u << mBits) | m), int(e) - bias - int(mBits));
}

} // namespace

bool wgmmaAddress(uint64_t desc, bool mnMajor, uint32_t es, uint32_t mn, uint32_t kk,
                  uint64_t &addr, std::string &why) {
  const uint64_t start = (desc & 0x3fff) << 4, lbo = ((desc >> 16) & 0x3fff) << 4,
                 sbo = ((desc >> 32) & 0x3fff) << 4;
  const uint32_t base = uint32_t(desc >> 49) & 7, mode = uint32_t(desc >> 62);
  if (mode == 0) {
    why = "a matrix descriptor without swizzle (mode 0), which the emulator does not model";
    return false;
  }
  if (base != 0) {
    why = "a matrix descriptor with a base offset (" + std::to_string(base) +
          "), which the emulator does not model";
    return false;
  }
  const uint64_t w = mode == 1 ? 128 : mode == 2 ? 64 : 32, per = w / es;
  uint64_t a = mnMajor ? start + (mn / per) * lbo + (kk / 8) * sbo + (kk % 8) * w + (mn % per) * es
                       : start + (mn / 8) * sbo + (mn % 8) * w + uint64_t(kk) * es;
  a ^= ((a >> 7) & (w / 16 - 1)) << 4;
  addr = a;
  return true;
}

void wgmmaAccCoord(uint32_t warp, uint32_t lane, uint32_t i, uint32_t &row, uint32_t &col) {
  row = 16 * warp + lane / 4 + 8 * ((i >> 1) & 1);
  col = 8 * (i >> 2) + 2 * (lane % 4) + (i & 1);
}

float wgmmaElement(WgmmaElem e, const uint8_t *p) {
  switch (e) {
  case WgmmaElem::F16: return element(Elem::F16, p, 0);
  case WgmmaElem::BF16: return element(Elem::BF16, p, 0);
  case WgmmaElem::E4M3: return ocpFp8ToFloat(p[0], false);
  default: return ocpFp8ToFloat(p[0], true);
  }
}

void executeMma(Mma kind, uint32_t waveSize, const uint8_t *const *a, const uint8_t *const *b,
                const uint8_t *const *c, uint8_t *const *d) {
  const MmaShape &s = mmaShape(kind);
  const Layout L = layoutOf(kind);
  const uint32_t M = s.m, N = s.n, K = s.k;
  std::vector<float> A(size_t(M) * K, 0.0f), B(size_t(K) * N, 0.0f), Cf(size_t(M) * N, 0.0f);
  std::vector<int64_t> Ci(size_t(M) * N, 0);
  for (uint32_t l = 0; l < waveSize; ++l) {
    if (!d[l])
      continue;
    if (l < L.operandLanes) {
      for (uint32_t g = 0; g < L.aElems; ++g) {
        Coord x = L.a(l, g);
        A[size_t(x.row) * K + x.col] = element(L.elem, a[l], g);
      }
      for (uint32_t g = 0; g < L.bElems; ++g) {
        Coord x = L.b(l, g);
        B[size_t(x.row) * N + x.col] = element(L.elem, b[l], g);
      }
    }
    for (uint32_t g = 0; g < L.cElems; ++g) {
      Coord x = L.c(l, g);
      if (L.intAcc) {
        int32_t v;
        std::memcpy(&v, c[l] + 4 * g, 4);
        Ci[size_t(x.row) * N + x.col] = v;
      } else {
        float v;
        std::memcpy(&v, c[l] + 4 * g, 4);
        Cf[size_t(x.row) * N + x.col] = v;
      }
    }
  }
  for (uint32_t l = 0; l < waveSize; ++l) {
    if (!d[l])
      continue;
    for (uint32_t g = 0; g < L.cElems; ++g) {
      Coord x = L.c(l, g);
      if (L.intAcc) {
        int64_t acc = Ci[size_t(x.row) * N + x.col];
        for (uint32_t k = 0; k < K; ++k)
          acc += int64_t(A[size_t(x.row) * K + k]) * int64_t(B[size_t(k) * N + x.col]);
        int32_t v = int32_t(uint32_t(uint64_t(acc))); // wraps like the hardware
        std::memcpy(d[l] + 4 * g, &v, 4);
      } else {
        // Products of f16/bf16/fp8 values are exact in f32; the sum is accumulated in f32.
        float acc = Cf[size_t(x.row) * N + x.col];
        for (uint32_t k = 0; k < K; ++k)
          acc += A[size_t(x.row) * K + k] * B[size_t(k) * N + x.col];
        std::memcpy(d[l] + 4 * g, &acc, 4);
      }
    }
  }
}

} // namespace wave::emu
