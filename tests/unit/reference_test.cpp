// The reference evaluator (src/reference): each operation on a small kernel whose result is
// checked by hand, the number formats, the error paths, and a randomized cross-check of
// elementwise arithmetic, reads and writes against an independent computation in this file.
#include "frontend/parser.h"
#include "reference/reference.h"
#include "sema/sema.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace wave;
using ref::HostTensor;

namespace {

struct Built {
  std::unique_ptr<SourceFile> file;
  std::unique_ptr<ast::Module> module;
  std::unique_ptr<Program> program;
  std::string diagnostics;
  const ir::Kernel &kernel() const { return *program->kernels.at(0); }
};

std::unique_ptr<Built> build(const std::string &text, std::vector<Define> defines = {}) {
  auto b = std::make_unique<Built>();
  b->file = std::make_unique<SourceFile>("test.wave", text);
  DiagnosticEngine diags;
  diags.setFile(b->file.get());
  b->module = parseModule(*b->file, diags);
  if (b->module && !diags.hasErrors()) {
    SemaOptions opts;
    opts.defines = std::move(defines);
    b->program = analyze(*b->module, opts, diags);
  }
  if (diags.hasErrors() || !b->program || b->program->kernels.empty()) {
    char *buf = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    diags.print(f, ColorMode::Never);
    std::fclose(f);
    ADD_FAILURE() << "kernel does not check:\n" << buf;
    std::free(buf);
    return nullptr;
  }
  return b;
}

HostTensor tensor(ScalarType t, std::vector<int64_t> shape, const std::vector<double> &v) {
  HostTensor h = HostTensor::zeros(t, std::move(shape));
  EXPECT_EQ(static_cast<int64_t>(v.size()), h.numel());
  for (size_t i = 0; i < v.size(); ++i) {
    if (isFloat(t))
      h.setFloat(static_cast<int64_t>(i), v[i]);
    else
      h.setInt(static_cast<int64_t>(i), static_cast<int64_t>(v[i]));
  }
  return h;
}

std::vector<double> values(const HostTensor &h) {
  std::vector<double> v;
  for (int64_t i = 0; i < h.numel(); ++i)
    v.push_back(isFloat(h.dtype) ? h.getFloat(i) : static_cast<double>(h.getInt(i)));
  return v;
}

// Evaluates and expects success.
void eval(const Built &b, std::vector<HostTensor> &args, std::map<std::string, int64_t> syms = {}) {
  std::string error;
  ASSERT_TRUE(ref::evaluate(b.kernel(), syms, args, error)) << error;
}

std::string evalError(const Built &b, std::vector<HostTensor> &args,
                      std::map<std::string, int64_t> syms = {}) {
  std::string error;
  EXPECT_FALSE(ref::evaluate(b.kernel(), syms, args, error));
  return error;
}

const char *kElementwiseConstraints = R"(
  constraints {
    workgroup(M, 16, dim = 1); workgroup(N, 64, dim = 0); wave(M, 16); wave(N, 64);
    hardware(vector_shapes = {M: 1, N: 64});
  }
)";

// A kernel `name(params) { constraints (M, N) body }`.
std::string kernelText(const std::string &params, const std::string &body,
                       const std::string &prelude = "symbol M, N;") {
  return prelude + "\nkernel k(" + params + ") {" + kElementwiseConstraints + body + "\n}\n";
}

const double NaN = std::numeric_limits<double>::quiet_NaN();
const double Inf = std::numeric_limits<double>::infinity();

} // namespace

// ---- number formats ---------------------------------------------------------------------------

TEST(ReferenceNumeric, RoundToF16AndBf16) {
  EXPECT_EQ(ref::roundToFloat(ScalarType::F16, 1.0 + 1.0 / 2048), 1.0); // tie to even
  EXPECT_EQ(ref::roundToFloat(ScalarType::F16, 1.0 + 3.0 / 2048), 1.0 + 2.0 / 1024);
  EXPECT_EQ(ref::roundToFloat(ScalarType::F16, 65504), 65504);
  EXPECT_EQ(ref::roundToFloat(ScalarType::F16, 65519), 65504);
  EXPECT_EQ(ref::roundToFloat(ScalarType::F16, 65520), Inf); // rounds past the largest finite
  EXPECT_EQ(ref::roundToFloat(ScalarType::F16, std::ldexp(1.0, -24)), std::ldexp(1.0, -24));
  EXPECT_EQ(ref::roundToFloat(ScalarType::F16, std::ldexp(1.0, -26)), 0.0); // below half the
  EXPECT_EQ(ref::roundToFloat(ScalarType::BF16, 1.0 + 1.0 / 256), 1.0);    // smallest subnormal
  EXPECT_EQ(ref::roundToFloat(ScalarType::BF16, 3.0e38), std::ldexp(226.0, 120)); // step 2^120
  EXPECT_EQ(ref::roundToFloat(ScalarType::BF16, 3.4e38), Inf);
  EXPECT_EQ(ref::encodeFloat(ScalarType::F16, 1.0), 0x3C00u);
  EXPECT_EQ(ref::encodeFloat(ScalarType::F16, -2.0), 0xC000u);
  EXPECT_EQ(ref::encodeFloat(ScalarType::BF16, 1.0), 0x3F80u);
  EXPECT_EQ(ref::encodeFloat(ScalarType::F16, Inf), 0x7C00u);
  EXPECT_TRUE(std::isnan(ref::decodeFloat(ScalarType::F16, 0x7E00)));
}

TEST(ReferenceNumeric, Fp8Formats) {
  EXPECT_EQ(ref::roundToFloat(ScalarType::F8E4M3FN, 448), 448);
  EXPECT_EQ(ref::roundToFloat(ScalarType::F8E4M3FN, 464), 448); // tie to even (1.110b)
  EXPECT_TRUE(std::isnan(ref::roundToFloat(ScalarType::F8E4M3FN, 500))); // no infinity
  EXPECT_EQ(ref::encodeFloat(ScalarType::F8E4M3FN, 448), 0x7Eu);
  EXPECT_EQ(ref::encodeFloat(ScalarType::F8E4M3FN, NaN), 0x7Fu);
  EXPECT_EQ(ref::roundToFloat(ScalarType::F8E4M3FNUZ, 240), 240);
  EXPECT_TRUE(std::isnan(ref::roundToFloat(ScalarType::F8E4M3FNUZ, 260)));
  EXPECT_EQ(ref::encodeFloat(ScalarType::F8E4M3FNUZ, NaN), 0x80u);
  EXPECT_EQ(ref::encodeFloat(ScalarType::F8E4M3FNUZ, -0.0), 0x00u); // no negative zero
  EXPECT_EQ(ref::roundToFloat(ScalarType::F8E5M2, 57344), 57344);
  EXPECT_EQ(ref::roundToFloat(ScalarType::F8E5M2, 65536), Inf);
  EXPECT_EQ(ref::encodeFloat(ScalarType::F8E5M2, 1.0), 0x3Cu);
  EXPECT_EQ(ref::roundToFloat(ScalarType::F8E5M2FNUZ, 57344), 57344);
  EXPECT_EQ(ref::decodeFloat(ScalarType::F8E4M3FN, 0x01), std::ldexp(1.0, -9)); // subnormal
}

// Every bit pattern of the 8- and 16-bit float formats decodes to a value that encodes back to
// the same pattern (NaNs to the canonical NaN), and decoded values are already rounded.
TEST(ReferenceNumeric, ExhaustiveRoundTrip) {
  for (ScalarType t : {ScalarType::F16, ScalarType::BF16, ScalarType::F8E4M3FN,
                       ScalarType::F8E5M2, ScalarType::F8E4M3FNUZ, ScalarType::F8E5M2FNUZ}) {
    const unsigned bits = bitWidth(t);
    for (uint64_t b = 0; b < (uint64_t(1) << bits); ++b) {
      double v = ref::decodeFloat(t, b);
      if (std::isnan(v)) {
        EXPECT_TRUE(std::isnan(ref::decodeFloat(t, ref::encodeFloat(t, v))));
        continue;
      }
      if (t == ScalarType::F8E4M3FNUZ || t == ScalarType::F8E5M2FNUZ)
        if (b == 0x80)
          continue;
      EXPECT_EQ(ref::encodeFloat(t, v), b) << scalarTypeName(t) << " " << b;
      EXPECT_EQ(ref::roundToFloat(t, v), v) << scalarTypeName(t) << " " << b;
    }
  }
}

TEST(ReferenceNumeric, IntegerWrap) {
  EXPECT_EQ(ref::wrapToInt(ScalarType::I8, 200), -56);
  EXPECT_EQ(ref::wrapToInt(ScalarType::U8, -1), 255);
  EXPECT_EQ(ref::wrapToInt(ScalarType::I32, int64_t(1) << 31), -(int64_t(1) << 31));
  EXPECT_EQ(ref::wrapToInt(ScalarType::U32, -1), 4294967295);
  EXPECT_EQ(ref::wrapToInt(ScalarType::I1, 3), 1);
}

// ---- operations -------------------------------------------------------------------------------

TEST(Reference, ElementwiseBroadcastScalarDynamicDims) {
  auto b = build(kernelText("a: Memory[M, N, global, f32], v: Memory[N, global, f32], "
                            "alpha: f32, c: Memory[M, N, global, f32]",
                            "write(read(a) * alpha + broadcast(read(v), [M, N]) - 1.0, c);"));
  ASSERT_TRUE(b);
  std::vector<HostTensor> args{tensor(ScalarType::F32, {2, 3}, {1, 2, 3, 4, 5, 6}),
                               tensor(ScalarType::F32, {3}, {10, 20, 30}),
                               tensor(ScalarType::F32, {}, {0.5}),
                               tensor(ScalarType::F32, {2, 3}, {0, 0, 0, 0, 0, 0})};
  eval(*b, args);
  EXPECT_EQ(values(args[3]), (std::vector<double>{9.5, 20, 30.5, 11, 21.5, 32}));
}

TEST(Reference, UnwrittenElementsKeepTheirContents) {
  // Only the transposed upper part is written through the mapping; the mapping also reads
  // outside the tensor (masked: 0).
  auto b = build(R"(
symbol M, N;
mapping shift(i, j) {
  inputs  { M: i, N: j + 1 }
  outputs { M: i, N: j }
}
kernel k(a: Memory[M, N, global, i32], c: Memory[M, N, global, i32]) {
  constraints { workgroup(M, 16, dim = 1); workgroup(N, 64, dim = 0); wave(M, 16); wave(N, 64); }
  write(read(a, mapping = shift), c);
}
)");
  ASSERT_TRUE(b);
  std::vector<HostTensor> args{tensor(ScalarType::I32, {2, 3}, {1, 2, 3, 4, 5, 6}),
                               tensor(ScalarType::I32, {2, 3}, {7, 7, 7, 7, 7, 7})};
  eval(*b, args);
  EXPECT_EQ(values(args[1]), (std::vector<double>{2, 3, 0, 5, 6, 0}));
}

TEST(Reference, MappedWriteTransposesAndSkipsOutside) {
  auto b = build(R"(
symbol M, N;
mapping tr(i, j) {
  inputs  { M: i, N: j }
  outputs { N: j, M: i }
}
kernel k(a: Memory[M, N, global, f32], c: Memory[N, M, global, f32]) {
  constraints { workgroup(M, 16, dim = 1); workgroup(N, 64, dim = 0); wave(M, 16); wave(N, 64); }
  write(read(a), c, mapping = tr);
}
)");
  ASSERT_TRUE(b);
  std::vector<HostTensor> args{tensor(ScalarType::F32, {2, 3}, {1, 2, 3, 4, 5, 6}),
                               tensor(ScalarType::F32, {3, 2}, {0, 0, 0, 0, 0, 0})};
  eval(*b, args);
  EXPECT_EQ(values(args[1]), (std::vector<double>{1, 4, 2, 5, 3, 6}));
}

TEST(Reference, CastsRoundLikeTheGpu) {
  auto b = build(kernelText(
      "a: Memory[M, N, global, f32], h: Memory[M, N, global, f16], bf: Memory[M, N, global, bf16], "
      "i: Memory[M, N, global, i8], u: Memory[M, N, global, u8], f8: Memory[M, N, global, f8e4m3fn]",
      "x = read(a); write(cast(x, f16), h); write(cast(x, bf16), bf); write(cast(x, i8), i);"
      "write(cast(x, u8), u); write(cast(x, f8e4m3fn), f8);"));
  ASSERT_TRUE(b);
  std::vector<double> in{1.0 + 1.0 / 2048, -2.7, 300.0, -300.0, 70000.0, 0.3};
  std::vector<HostTensor> args{tensor(ScalarType::F32, {1, 6}, in)};
  for (ScalarType t : {ScalarType::F16, ScalarType::BF16, ScalarType::I8, ScalarType::U8,
                       ScalarType::F8E4M3FN})
    args.push_back(HostTensor::zeros(t, {1, 6}));
  eval(*b, args);
  auto h = values(args[1]);
  EXPECT_EQ(h[0], 1.0);
  EXPECT_EQ(h[1], -2.69921875);
  EXPECT_EQ(h[4], Inf);
  EXPECT_EQ(values(args[2])[5], 0.30078125);
  EXPECT_EQ(values(args[3]), (std::vector<double>{1, -2, 127, -128, 127, 0}));
  EXPECT_EQ(values(args[4]), (std::vector<double>{1, 0, 255, 0, 255, 0}));
  auto f8 = values(args[5]);
  EXPECT_EQ(f8[0], 1.0);
  EXPECT_EQ(f8[1], -2.75);
  EXPECT_EQ(f8[2], 288); // 300 -> 288 (step 32 in [256, 512))
  EXPECT_TRUE(std::isnan(f8[4]));
  EXPECT_EQ(f8[5], 0.3125);
}

TEST(Reference, IntegerArithmeticWrapsAndDividesLikeTheLanguage) {
  auto b = build(kernelText("a: Memory[M, N, global, i8], b: Memory[M, N, global, i8], "
                            "s: Memory[M, N, global, i8], d: Memory[M, N, global, i8], "
                            "f: Memory[M, N, global, i8], r: Memory[M, N, global, i8], "
                            "x: Memory[M, N, global, i8]",
                            "p = read(a); q = read(b); write(p + q, s); write(p / q, d); "
                            "write(p // q, f); write(p % q, r); write(~p ^ q, x);"));
  ASSERT_TRUE(b);
  std::vector<HostTensor> args{tensor(ScalarType::I8, {1, 4}, {100, -7, 7, -128}),
                               tensor(ScalarType::I8, {1, 4}, {100, 2, -2, -1})};
  for (int k = 0; k < 5; ++k)
    args.push_back(HostTensor::zeros(ScalarType::I8, {1, 4}));
  eval(*b, args);
  EXPECT_EQ(values(args[2]), (std::vector<double>{-56, -5, 5, 127}));
  EXPECT_EQ(values(args[3]), (std::vector<double>{1, -3, -3, -128}));
  EXPECT_EQ(values(args[4]), (std::vector<double>{1, -4, -4, -128}));
  EXPECT_EQ(values(args[5]), (std::vector<double>{0, 1, -1, 0}));
  EXPECT_EQ(values(args[6]), (std::vector<double>{~100 ^ 100, ~-7 ^ 2, ~7 ^ -2, ~-128 ^ -1}));
  // Division by zero is an error naming the operation's line.
  std::vector<HostTensor> zero{tensor(ScalarType::I8, {1, 1}, {1}), tensor(ScalarType::I8, {1, 1}, {0})};
  for (int k = 0; k < 5; ++k)
    zero.push_back(HostTensor::zeros(ScalarType::I8, {1, 1}));
  EXPECT_NE(evalError(*b, zero).find("integer division by zero"), std::string::npos);
}

TEST(Reference, ComparisonsSelectAndMath) {
  auto b = build(kernelText(
      "a: Memory[M, N, global, f32], b: Memory[M, N, global, f32], c: Memory[M, N, global, f32], "
      "e: Memory[M, N, global, f32], l: Memory[M, N, global, i1]",
      "x = read(a); y = read(b); write(select(x < y, x, y * 2.0), c); "
      "write(maximum(exp(x), sqrt(y)) + tanh(x) - reciprocal(y) + rsqrt(y) + log2(y) + abs(x) + "
      "sin(x) * cos(x) + exp2(x) + log(y) + minimum(x, y), e); write(x != y, l);"));
  ASSERT_TRUE(b);
  std::vector<double> xs{0.5, -1.25, 2.0, NaN}, ys{1.0, 4.0, 0.25, 1.0};
  std::vector<HostTensor> args{tensor(ScalarType::F32, {1, 4}, xs), tensor(ScalarType::F32, {1, 4}, ys),
                               HostTensor::zeros(ScalarType::F32, {1, 4}),
                               HostTensor::zeros(ScalarType::F32, {1, 4}),
                               HostTensor::zeros(ScalarType::I1, {1, 4})};
  eval(*b, args);
  auto c = values(args[2]);
  EXPECT_EQ(c[0], 0.5);
  EXPECT_EQ(c[1], -1.25);
  EXPECT_EQ(c[2], 0.5);
  EXPECT_EQ(c[3], 2.0); // NaN < 1 is false
  auto e = values(args[3]);
  for (int i = 0; i < 3; ++i) {
    float x = static_cast<float>(xs[i]), y = static_cast<float>(ys[i]);
    double want = std::max(std::exp(x), std::sqrt(y)) + std::tanh(x) - 1 / y + 1 / std::sqrt(y) +
                  std::log2(y) + std::fabs(x) + std::sin(x) * std::cos(x) + std::exp2(x) +
                  std::log(y) + std::min(x, y);
    EXPECT_NEAR(e[i], want, 1e-5 * std::fabs(want) + 1e-6) << i;
  }
  EXPECT_TRUE(std::isnan(e[3])); // NaN propagates through maximum/minimum
  EXPECT_EQ(values(args[4]), (std::vector<double>{1, 1, 1, 1}));
}

TEST(Reference, PermuteSelfIndexApplyExpr) {
  auto b = build(R"(
symbol M, N;
kernel k(a: Memory[M, N, global, f32], t: Memory[N, M, global, f32],
         c: Memory[M, N, global, i32], p: Memory[M, N, global, i1]) {
  constraints { workgroup(M, 16, dim = 1); workgroup(N, 64, dim = 0); wave(M, 16); wave(N, 64); }
  write(permute(read(a), [N, M]), t);
  i = broadcast(self_index(M, i32), [M, N]);
  j = broadcast(self_index(N, i32), [M, N]);
  write(apply_expr(i, v => v * 10 + 3) + j, c);
  write(apply_expr(j, v => v % 2 == 1), p);
}
)");
  ASSERT_TRUE(b);
  std::vector<HostTensor> args{tensor(ScalarType::F32, {2, 3}, {1, 2, 3, 4, 5, 6}),
                               HostTensor::zeros(ScalarType::F32, {3, 2}),
                               HostTensor::zeros(ScalarType::I32, {2, 3}),
                               HostTensor::zeros(ScalarType::I1, {2, 3})};
  eval(*b, args);
  EXPECT_EQ(values(args[1]), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(values(args[2]), (std::vector<double>{3, 4, 5, 13, 14, 15}));
  EXPECT_EQ(values(args[3]), (std::vector<double>{0, 1, 0, 0, 1, 0}));
}

TEST(Reference, ReductionsWithInit) {
  auto b = build(R"(
symbol M, N;
kernel k(a: Memory[M, N, global, f32], s: Memory[M, global, f32], mx: Memory[M, global, f32],
         mn: Memory[N, global, f32]) {
  constraints { workgroup(M, 1, dim = 1); wave(M, 1); hardware(vector_shapes = {M: 1, N: N}); }
  x = read(a);
  write(sum(x, dim = N, init = 100.0), s);
  write(max(x), mx);
  write(min(x, dim = M, init = Register[N, f32](0.0)), mn);
}
)");
  ASSERT_TRUE(b);
  std::vector<HostTensor> args{tensor(ScalarType::F32, {2, 3}, {1, -2, 3, 4, 5, -6}),
                               HostTensor::zeros(ScalarType::F32, {2}),
                               HostTensor::zeros(ScalarType::F32, {2}),
                               HostTensor::zeros(ScalarType::F32, {3})};
  eval(*b, args);
  EXPECT_EQ(values(args[1]), (std::vector<double>{102, 103}));
  EXPECT_EQ(values(args[2]), (std::vector<double>{3, 5}));
  EXPECT_EQ(values(args[3]), (std::vector<double>{0, -2, -6}));
}

// C = A * B^T through iterate + mma with K not a multiple of the tile: the ragged last tile
// holds only the in-bounds elements.
TEST(Reference, IterateMmaRaggedK) {
  auto b = build(R"(
symbol M, N, K;
kernel gemm(a: Memory[M, K, global, f16], b: Memory[N, K, global, f16], c: Memory[M, N, global, f32]) {
  constraints {
    workgroup(M, 32, dim = 0); workgroup(N, 32, dim = 1); tiling(K, 16);
    wave(M, 16); wave(N, 16); hardware(threads_per_wave = 64, mma = F32_16x16x16_F16);
  }
  c_reg = Register[M, N, f32](0.0);
  result = iterate K (acc = c_reg) {
    yield mma(read(a), read(b), acc);
  }
  write(result, c);
}
)");
  ASSERT_TRUE(b);
  const int64_t M = 3, N = 5, K = 37;
  std::vector<double> av(M * K), bv(N * K);
  for (int64_t i = 0; i < M * K; ++i)
    av[i] = (i % 7) - 3;
  for (int64_t i = 0; i < N * K; ++i)
    bv[i] = (i % 5) * 0.5;
  std::vector<HostTensor> args{tensor(ScalarType::F16, {M, K}, av), tensor(ScalarType::F16, {N, K}, bv),
                               HostTensor::zeros(ScalarType::F32, {M, N})};
  eval(*b, args);
  auto c = values(args[2]);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double want = 0;
      for (int64_t k = 0; k < K; ++k)
        want += av[m * K + k] * bv[n * K + k];
      EXPECT_EQ(c[m * N + n], want) << m << "," << n;
    }
}

TEST(Reference, IterateCarriesValuesPerTile) {
  // Counts the trips (ceildiv(K, 4)) and keeps the running max of per-tile sums.
  auto b = build(R"(
symbol M, K;
kernel k(a: Memory[M, K, global, f32], trips: Memory[M, global, i32], best: Memory[M, global, f32]) {
  constraints { workgroup(M, 1, dim = 0); wave(M, 1); tiling(K, 4); hardware(vector_shapes = {M: 1, K: 4}); }
  n, m = iterate K (c = Register[M, i32](0), mx = Register[M, f32](-inf)) {
    yield c + 1, maximum(mx, sum(read(a), dim = K));
  }
  write(n, trips);
  write(m, best);
}
)");
  ASSERT_TRUE(b);
  // K = 10: tiles [0,4) [4,8) [8,10).
  std::vector<HostTensor> args{
      tensor(ScalarType::F32, {1, 10}, {1, 1, 1, 1, 5, 0, 0, 0, 3, 4}),
      HostTensor::zeros(ScalarType::I32, {1}), HostTensor::zeros(ScalarType::F32, {1})};
  eval(*b, args);
  EXPECT_EQ(values(args[1]), (std::vector<double>{3}));
  EXPECT_EQ(values(args[2]), (std::vector<double>{7}));
}

TEST(Reference, IfOnSymbolsAndOnValues) {
  auto b = build(R"(
symbol M, N, FLAG;
kernel k(a: Memory[M, N, global, f32], s: f32, c: Memory[M, N, global, f32]) {
  constraints { workgroup(M, 16, dim = 1); workgroup(N, 64, dim = 0); wave(M, 16); wave(N, 64); }
  x = read(a);
  y = if FLAG > 0 { yield x * 2.0; } else { yield x; };
  z = if s > 1.0 { yield y + 1.0; } else { yield y - 1.0; };
  write(z, c);
}
)",
                 {{"FLAG", "1"}});
  ASSERT_TRUE(b);
  std::vector<HostTensor> args{tensor(ScalarType::F32, {1, 2}, {1, 2}), tensor(ScalarType::F32, {}, {0.5}),
                               HostTensor::zeros(ScalarType::F32, {1, 2})};
  eval(*b, args);
  EXPECT_EQ(values(args[2]), (std::vector<double>{1, 3}));
  args[1] = tensor(ScalarType::F32, {}, {2});
  eval(*b, args);
  EXPECT_EQ(values(args[2]), (std::vector<double>{3, 5}));
}

TEST(Reference, AtomicsApplyEveryElementAndReturnOldValues) {
  // Every row adds into the same histogram row: hist[0, j] += a[i, j] for all i.
  auto b = build(R"(
symbol M, N, ONE;
mapping rows(i, j) {
  inputs  { M: i, N: j }
  outputs { ONE: 0, N: j }
}
kernel k(a: Memory[M, N, global, i32], hist: Memory[ONE, N, global, i32],
         lo: Memory[ONE, N, global, i32], old: Memory[M, N, global, i32]) {
  constraints { workgroup(M, 16, dim = 1); workgroup(N, 64, dim = 0); wave(M, 16); wave(N, 64); }
  x = read(a);
  write(atomic_add(x, hist, mapping = rows), old);
  _m = atomic_min(x, lo, mapping = rows);
}
)");
  ASSERT_TRUE(b);
  std::vector<HostTensor> args{tensor(ScalarType::I32, {3, 2}, {1, 2, 3, -4, 5, 6}),
                               tensor(ScalarType::I32, {1, 2}, {10, 20}),
                               tensor(ScalarType::I32, {1, 2}, {2, 2}),
                               HostTensor::zeros(ScalarType::I32, {3, 2})};
  std::string error;
  std::vector<int64_t> written;
  ASSERT_TRUE(ref::evaluate(b->kernel(), {}, args, error, &written)) << error;
  EXPECT_EQ(written, (std::vector<int64_t>{0, 2, 2, 6})); // distinct elements per parameter
  EXPECT_EQ(values(args[1]), (std::vector<double>{19, 24}));
  EXPECT_EQ(values(args[2]), (std::vector<double>{1, -4}));
  EXPECT_EQ(values(args[3]), (std::vector<double>{10, 20, 11, 22, 14, 18}));
}

TEST(Reference, AllocateIsATensorAndUnwrittenReadsAreErrors) {
  auto ok = build(kernelText("a: Memory[M, N, global, f32], c: Memory[M, N, global, f32]",
                             "s = allocate([M, N], [16, 64], f32); write(read(a) + 1.0, s); "
                             "barrier(); write(read(s) * 2.0, c);"));
  ASSERT_TRUE(ok);
  std::vector<HostTensor> args{tensor(ScalarType::F32, {1, 2}, {1, 2}),
                               HostTensor::zeros(ScalarType::F32, {1, 2})};
  eval(*ok, args);
  EXPECT_EQ(values(args[1]), (std::vector<double>{4, 6}));

  auto bad = build(kernelText("a: Memory[M, N, global, f32], c: Memory[M, N, global, f32]",
                              "s = allocate([M, N], [16, 64], f32); write(read(s), c);"));
  ASSERT_TRUE(bad);
  std::string err = evalError(*bad, args);
  EXPECT_NE(err.find("never written"), std::string::npos) << err;
  EXPECT_NE(err.find("read"), std::string::npos) << err;
}

TEST(Reference, ShapesBindDynamicSymbolsAndAreChecked) {
  auto b = build(R"(
symbol M, N;
kernel k(a: Memory[M, N, global, f32], c: Memory[M, N, global, f32]) {
  constraints { workgroup(M, 16, dim = 1); workgroup(N, 64, dim = 0); wave(M, 16); wave(N, 64);
                assume(N % 2 == 0); }
  write(read(a), c);
}
)");
  ASSERT_TRUE(b);
  std::map<std::string, int64_t> syms;
  std::string error;
  std::vector<HostTensor> args{HostTensor::zeros(ScalarType::F32, {3, 4}),
                               HostTensor::zeros(ScalarType::F32, {3, 4})};
  ASSERT_TRUE(ref::bindShapes(b->kernel(), args, syms, error)) << error;
  EXPECT_EQ(syms["M"], 3);
  EXPECT_EQ(syms["N"], 4);
  args[1] = HostTensor::zeros(ScalarType::F32, {4, 3});
  EXPECT_NE(evalError(*b, args).find("argument 'c' has shape [4, 3], the kernel expects [3, 4]"),
            std::string::npos);
  args[1] = HostTensor::zeros(ScalarType::F16, {3, 4});
  EXPECT_NE(evalError(*b, args).find("'c' is f16"), std::string::npos);
  args = {HostTensor::zeros(ScalarType::F32, {3, 5}), HostTensor::zeros(ScalarType::F32, {3, 5})};
  EXPECT_NE(evalError(*b, args).find("assume(N % 2 == 0)"), std::string::npos);
  args = {HostTensor::zeros(ScalarType::F32, {3}), HostTensor::zeros(ScalarType::F32, {3, 5})};
  EXPECT_NE(evalError(*b, args).find("rank"), std::string::npos);
}

// ---- randomized cross-check -----------------------------------------------------------------

// Elementwise arithmetic, a transposing mapped read and a plain write on random shapes and
// data, against the same arithmetic done here in float (IEEE single precision, which the
// evaluator must reproduce bit for bit) and int32.
TEST(Reference, RandomizedElementwiseReadWrite) {
  auto b = build(R"(
symbol M, N;
mapping tr(i, j) {
  inputs  { N: j, M: i }
  outputs { M: i, N: j }
}
kernel k(a: Memory[M, N, global, f32], t: Memory[N, M, global, f32], ia: Memory[M, N, global, i32],
         alpha: f32, c: Memory[M, N, global, f32], ic: Memory[M, N, global, i32]) {
  constraints { workgroup(M, 16, dim = 1); workgroup(N, 64, dim = 0); wave(M, 16); wave(N, 64); }
  x = read(a);
  y = read(t, mapping = tr);
  write((x + y) * alpha - x / (y * y + 1.0), c);
  i = read(ia);
  write(i * i - (i // 3) + (i % 5), ic);
}
)");
  ASSERT_TRUE(b);
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::uniform_real_distribution<float> uf(-4, 4);
  std::uniform_int_distribution<int> ui(-50000, 50000), dim(1, 70);
  for (int round = 0; round < 20; ++round) {
    const int64_t M = dim(rng), N = dim(rng);
    const float alpha = uf(rng);
    std::vector<float> a(M * N), t(N * M);
    std::vector<int32_t> ia(M * N);
    HostTensor A = HostTensor::zeros(ScalarType::F32, {M, N}), T = HostTensor::zeros(ScalarType::F32, {N, M}),
               IA = HostTensor::zeros(ScalarType::I32, {M, N});
    for (int64_t e = 0; e < M * N; ++e) {
      a[e] = uf(rng);
      t[e] = uf(rng);
      ia[e] = ui(rng);
      std::memcpy(A.data.data() + 4 * e, &a[e], 4);
      std::memcpy(T.data.data() + 4 * e, &t[e], 4);
      std::memcpy(IA.data.data() + 4 * e, &ia[e], 4);
    }
    HostTensor alphaT = HostTensor::zeros(ScalarType::F32, {});
    std::memcpy(alphaT.data.data(), &alpha, 4);
    std::vector<HostTensor> args{A, T, IA, alphaT, HostTensor::zeros(ScalarType::F32, {M, N}),
                                 HostTensor::zeros(ScalarType::I32, {M, N})};
    eval(*b, args);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        const int64_t e = m * N + n;
        float x = a[e], y = t[n * M + m];
        volatile float sum = x + y, prod = sum * alpha, yy = y * y, den = yy + 1.0f,
                       q = x / den, want = prod - q;
        float got;
        std::memcpy(&got, args[4].data.data() + 4 * e, 4);
        ASSERT_EQ(got, want) << "M=" << M << " N=" << N << " at " << m << "," << n;
        int32_t i = ia[e];
        int32_t fl = i / 3 - ((i % 3 != 0) && (i < 0) ? 1 : 0);
        int32_t md = ((i % 5) + 5) % 5;
        int32_t iwant = static_cast<int32_t>(static_cast<uint32_t>(i) * static_cast<uint32_t>(i) -
                                             static_cast<uint32_t>(fl) + static_cast<uint32_t>(md));
        int32_t igot;
        std::memcpy(&igot, args[5].data.data() + 4 * e, 4);
        ASSERT_EQ(igot, iwant) << "i=" << i;
      }
  }
}

TEST(Reference, NegationAndBatchedIntegerMma) {
  // A batched i8 GEMM with i32 accumulation, K = 5 in one tile of 32, and a negated result.
  auto b = build(R"(
symbol B, M, N, K;
kernel k(a: Memory[B, M, K, global, i8], b: Memory[B, N, K, global, i8], c: Memory[B, M, N, global, i32]) {
  constraints {
    workgroup(M, 16, dim = 0); workgroup(N, 16, dim = 1); workgroup(B, 1, dim = 2); tiling(K, 32);
    wave(M, 16); wave(N, 16); hardware(threads_per_wave = 64, mma = I32_16x16x32_I8, vector_shapes = {B: 0});
  }
  r = iterate K (acc = Register[B, M, N, i32](1)) {
    yield mma(read(a), read(b), acc);
  }
  write(-r, c);
}
)");
  ASSERT_TRUE(b);
  const int64_t B = 2, M = 2, N = 3, K = 5;
  std::vector<double> av(B * M * K), bv(B * N * K);
  for (size_t i = 0; i < av.size(); ++i)
    av[i] = static_cast<double>(static_cast<int>(i * 37 % 255) - 127);
  for (size_t i = 0; i < bv.size(); ++i)
    bv[i] = static_cast<double>(static_cast<int>(i * 91 % 255) - 127);
  std::vector<HostTensor> args{tensor(ScalarType::I8, {B, M, K}, av), tensor(ScalarType::I8, {B, N, K}, bv),
                               HostTensor::zeros(ScalarType::I32, {B, M, N})};
  eval(*b, args);
  auto c = values(args[2]);
  for (int64_t bb = 0; bb < B; ++bb)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double want = 1;
        for (int64_t kk = 0; kk < K; ++kk)
          want += av[(bb * M + m) * K + kk] * bv[(bb * N + n) * K + kk];
        EXPECT_EQ(c[(bb * M + m) * N + n], -want);
      }
}

TEST(Reference, ValueFromOutsideTheLoopIsSlicedToTheTile) {
  // w (dim K) is read before the loop; inside, w * read(a) is the current tile of both.
  auto b = build(R"(
symbol M, K;
kernel k(a: Memory[M, K, global, f32], w: Memory[K, global, f32], out: Memory[M, global, f32]) {
  constraints { workgroup(M, 1, dim = 0); wave(M, 1); tiling(K, 3); hardware(vector_shapes = {M: 1, K: 3}); }
  wk = read(w);
  s = iterate K (acc = Register[M, f32](0.0)) {
    yield acc + sum(read(a) * broadcast(wk, [M, K]), dim = K);
  }
  write(s, out);
}
)");
  ASSERT_TRUE(b);
  std::vector<HostTensor> args{tensor(ScalarType::F32, {2, 7}, {1, 2, 3, 4, 5, 6, 7, 0, 0, 0, 0, 0, 0, 1}),
                               tensor(ScalarType::F32, {7}, {1, 10, 100, 1000, 1e4, 1e5, 1e6}),
                               HostTensor::zeros(ScalarType::F32, {2})};
  eval(*b, args);
  EXPECT_EQ(values(args[2]), (std::vector<double>{7654321, 1e6}));
}

// The implicit-GEMM convolution of docs/language.md section 3.2 (im2col mapping, iterate over a
// ragged K = 9 * C, mma) against a direct loop over the same index formulas.
TEST(Reference, Im2colConvolutionMatchesDirectLoop) {
  const char *text = R"(
symbol N, C, H, W, NF, HF, WF, STRIDE = 1;
symbol H_OUT = (H - HF) // STRIDE + 1, W_OUT = (W - WF) // STRIDE + 1;
symbol SZ_OUT = H_OUT * W_OUT;
symbol M = SZ_OUT * N, K = HF * WF * C;
mapping im2col(i, j) {
  inputs  { N: i // SZ_OUT, C: j % C,
            H: (i % SZ_OUT) % W_OUT * STRIDE + (j // C) % WF,
            W: (i % SZ_OUT) // W_OUT * STRIDE + (j // C) // WF }
  outputs { M: i, K: j }
}
mapping wmap(i, j) {
  inputs  { NF: i % NF, C: j % C, HF: (j // C) % WF, WF: (j // C) // WF }
  outputs { NF: i, K: j }
}
kernel conv(x: Memory[N, C, H, W, global, f16], we: Memory[NF, C, HF, WF, global, f16],
            out: Memory[M, NF, global, f32]) {
  constraints {
    workgroup(M, 64, dim = 0); workgroup(NF, 64, dim = 1); tiling(K, 32); wave(M, 32); wave(NF, 32);
  }
  res = iterate K (acc = Register[M, NF, f32](0.0)) {
    yield mma(read(x, mapping = im2col), read(we, mapping = wmap), acc);
  }
  write(res, out);
}
)";
  const int64_t N = 2, C = 5, H = 6, W = 7, NF = 4, F = 3, S = 1;
  auto b = build(text, {{"N", "2"}, {"C", "5"}, {"H", "6"}, {"W", "7"}, {"NF", "4"}, {"HF", "3"},
                        {"WF", "3"}});
  ASSERT_TRUE(b);
  const int64_t HO = (H - F) / S + 1, WO = (W - F) / S + 1, SZ = HO * WO, M = SZ * N, K = F * F * C;
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> small(-4, 4);
  std::vector<double> x(N * C * H * W), w(NF * C * F * F);
  for (double &v : x)
    v = small(rng) * 0.25;
  for (double &v : w)
    v = small(rng) * 0.5;
  std::vector<HostTensor> args{tensor(ScalarType::F16, {N, C, H, W}, x),
                               tensor(ScalarType::F16, {NF, C, F, F}, w),
                               HostTensor::zeros(ScalarType::F32, {M, NF})};
  eval(*b, args);
  auto out = values(args[2]);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t f = 0; f < NF; ++f) {
      double want = 0;
      for (int64_t j = 0; j < K; ++j) {
        int64_t n = i / SZ, c = j % C, pos = i % SZ;
        int64_t h = pos % WO * S + (j / C) % F, ww = pos / WO * S + (j / C) / F;
        if (h >= H || ww >= W)
          continue; // outside the image: the masked read gives 0
        want += x[((n * C + c) * H + h) * W + ww] * w[((f * C + c) * F + (j / C) % F) * F + (j / C) / F];
      }
      ASSERT_EQ(out[i * NF + f], want) << i << "," << f;
    }
}
