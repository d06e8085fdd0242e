// Unit tests of src/symbolic: printing, evaluation, simplification under facts, proofs, ranges,
// and a randomized check that simplify() preserves values.
#include "symbolic/facts.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <sstream>

namespace wave::sym {
namespace {

IndexExpr S(const std::string &name) { return IndexExpr::symbol(name); }

// Hardware-like facts: 256 threads in x (4 waves of 64), a few waves in y.
class SymbolicTest : public ::testing::Test {
protected:
  SymbolicTest() {
    hw.setRange("$T0", 0, 255);
    hw.setRange("$T1", 0, 3);
    hw.setRange("t", 0, 63);
    hw.setRange("w", 0, 3);
    hw.setRange("M", 1);
  }

  std::string simp(const IndexExpr &e) const { return hw.simplify(e).str(); }
  std::string simpWith(const Facts &f, const IndexExpr &e) const { return f.simplify(e).str(); }

  Facts aligned() const { // K % 64 == 0 and K > 128
    Facts f = hw;
    EXPECT_TRUE(f.assume(Pred::cmp(Pred::Eq, mod(K, 64), 0)));
    EXPECT_TRUE(f.assume(Pred::cmp(Pred::Gt, K, 128)));
    return f;
  }

  Facts hw;
  IndexExpr T0 = S("$T0"), T1 = S("$T1"), WG0 = S("$WG0"), IV = S("$IV_K");
  IndexExpr t = S("t"), w = S("w"), a = S("a"), K = S("K"), M = S("M"), N = S("N");
  IndexExpr BLOCK = S("BLOCK");
};

// ---- printing ------------------------------------------------------------------------------

TEST_F(SymbolicTest, PrintsSumsInReadableOrder) {
  EXPECT_EQ((WG0 * 64 + floorDiv(T0, 64) * 32 + mod(T0, 16) + 4).str(),
            "64*WG0 + 32*(T0 // 64) + T0 % 16 + 4");
  EXPECT_EQ((4 + mod(T0, 16) + 32 * floorDiv(T0, 64) + 64 * WG0).str(),
            "64*WG0 + 32*(T0 // 64) + T0 % 16 + 4");
}

TEST_F(SymbolicTest, PrintsNegativeTerms) {
  EXPECT_EQ((K - 3 * M).str(), "K - 3*M");
  EXPECT_EQ((-K).str(), "-K");
  EXPECT_EQ((4 - K).str(), "-K + 4");
  EXPECT_EQ((K - floorDiv(K, 4) * 4).str(), "K - 4*(K // 4)");
  EXPECT_EQ(IndexExpr(-5).str(), "-5");
}

TEST_F(SymbolicTest, PrintsExactDivision) {
  EXPECT_EQ(exactDiv(K, 2).str(), "K / 2");
  EXPECT_EQ(exactDiv(3 * K, 2).str(), "3*K / 2");
  EXPECT_EQ(exactDiv(K + M, 2).str(), "(K + M) / 2");
  EXPECT_EQ(exactDiv(K, M).str(), "K / M");
  EXPECT_EQ(exactDiv(K, 2 * M).str(), "K / (2*M)");
  EXPECT_EQ(exactDiv(K, 2).str() + " + M", (exactDiv(K, 2) + M).str());
  EXPECT_TRUE(exactDiv(K, 2).hasRationalCoefficient());
  EXPECT_FALSE((K * 2).hasRationalCoefficient());
}

TEST_F(SymbolicTest, PrintsOperatorsWithMinimalParentheses) {
  EXPECT_EQ(floorDiv(K + M, 4).str(), "(K + M) // 4");
  EXPECT_EQ((floorDiv(K, 4) * M).str(), "M*(K // 4)");
  EXPECT_EQ(floorDiv(K, 2 * M).str(), "K // (2*M)");
  EXPECT_EQ(mod(floorDiv(T0, 16), 4).str(), "T0 // 16 % 4");
  EXPECT_EQ(floorDiv(mod(T0, 64), 16).str(), "T0 % 64 // 16");
  EXPECT_EQ(floorDiv(K * M, 4).str(), "K*M // 4");
  EXPECT_EQ(floorDiv(K, floorDiv(M, 2)).str(), "K // (M // 2)");
  EXPECT_EQ(((K + 1) * M).str(), "M*(K + 1)");
}

TEST_F(SymbolicTest, PrintsCalls) {
  EXPECT_EQ(ceilDiv(K, 64).str(), "ceildiv(K, 64)");
  EXPECT_EQ(min(M, K).str(), "min(K, M)");
  EXPECT_EQ(max(K + 1, M).str(), "max(K + 1, M)");
  EXPECT_EQ((2 * ceilDiv(K, 64)).str(), "2*ceildiv(K, 64)");
}

TEST_F(SymbolicTest, PrintsPowersAsProducts) {
  EXPECT_EQ((K * K).str(), "K*K");
  EXPECT_EQ((K * K * M * 3).str(), "3*K*K*M");
}

TEST_F(SymbolicTest, PrintsInternalSymbolsWithoutDollar) {
  EXPECT_EQ((IV * 16 + T0).str(), "16*IV_K + T0");
  EXPECT_EQ(*T0.asSymbol(), "$T0");
}

TEST_F(SymbolicTest, PrintsPredicates) {
  IndexExpr blockK = S("BLOCK_K");
  Pred gt = Pred::cmp(Pred::Gt, K, 4 * blockK);
  Pred aligned = Pred::cmp(Pred::Eq, mod(K, 64), 0);
  EXPECT_EQ(gt.str(), "K > 4*BLOCK_K");
  EXPECT_EQ(Pred::both(gt, aligned).str(), "K > 4*BLOCK_K & K % 64 == 0");
  EXPECT_EQ(Pred::either(gt, aligned).str(), "K > 4*BLOCK_K | K % 64 == 0");
  EXPECT_EQ(Pred::negate(gt).str(), "!(K > 4*BLOCK_K)");
  EXPECT_EQ(Pred::both(Pred::either(gt, aligned), gt).str(),
            "(K > 4*BLOCK_K | K % 64 == 0) & K > 4*BLOCK_K");
  EXPECT_EQ(Pred::constant(true).str(), "true");
  EXPECT_EQ(Pred::both(Pred::constant(true), gt).str(), gt.str());
}

// ---- basics ----------------------------------------------------------------------------------

TEST_F(SymbolicTest, InternsSymbolsByName) {
  EXPECT_TRUE(S("K").equals(K));
  EXPECT_TRUE((S("K") - K).isInteger());
  EXPECT_EQ((S("K") - K).asInteger(), 0);
  EXPECT_FALSE(S("K").equals(S("K2")));
}

TEST_F(SymbolicTest, QueriesStructure) {
  EXPECT_EQ(IndexExpr(42).asInteger(), 42);
  EXPECT_FALSE(K.asInteger());
  EXPECT_EQ(K.asSymbol(), "K");
  EXPECT_FALSE((K + 1).asSymbol());
  EXPECT_EQ((floorDiv(K, M) + T0).freeSymbols(), (std::set<std::string>{"$T0", "K", "M"}));
  EXPECT_TRUE(floorDiv(K, M).dependsOn("M"));
  EXPECT_FALSE(floorDiv(K, M).dependsOn("N"));
  EXPECT_FALSE(K.dependsOn("never_created_symbol"));
}

TEST_F(SymbolicTest, EqualsExpands) {
  EXPECT_TRUE(((K + 1) * (K + 1)).equals(K * K + 2 * K + 1));
  EXPECT_TRUE(floorDiv((K + 1) * 2, 4).equals(floorDiv(2 * K + 2, 4)));
  EXPECT_TRUE(min(K, M).equals(min(M, K)));
  EXPECT_FALSE(floorDiv(K, 4).equals(exactDiv(K, 4)));
}

TEST_F(SymbolicTest, SubstitutesBindings) {
  IndexExpr e = floorDiv(K, S("BLOCK_K")) + M;
  EXPECT_EQ(e.subs({{"BLOCK_K", IndexExpr(64)}}).str(), "M + K // 64");
  EXPECT_EQ(e.subs({{"BLOCK_K", IndexExpr(64)}, {"K", IndexExpr(256)}}).str(), "M + 4");
  EXPECT_EQ(e.subs({{"M", 2 * N}}).str(), "2*N + K // BLOCK_K");
  // A substitution that would divide by zero leaves the expression alone instead of throwing.
  EXPECT_EQ(exactDiv(M, K).subs({{"K", IndexExpr(0)}}).str(), "M / K");
}

// ---- evaluation ------------------------------------------------------------------------------

TEST_F(SymbolicTest, EvaluatesWithFloorSemantics) {
  EXPECT_EQ(floorDiv(IndexExpr(-7), 2).asInteger(), -4);
  EXPECT_EQ(mod(IndexExpr(-7), 2).asInteger(), 1);
  EXPECT_EQ(ceilDiv(IndexExpr(-7), 2).asInteger(), -3);
  EXPECT_EQ(ceilDiv(IndexExpr(7), 2).asInteger(), 4);
  EXPECT_EQ(floorDiv(IndexExpr(7), -2).asInteger(), -4);
  EXPECT_EQ(mod(IndexExpr(7), -2).asInteger(), -1);
  std::map<std::string, int64_t> at{{"K", 3}, {"M", 10}};
  EXPECT_EQ(floorDiv(K - 10, 4).evaluate(at), -2);
  EXPECT_EQ(mod(K - 10, 4).evaluate(at), 1);
  EXPECT_EQ(ceilDiv(K - 10, 4).evaluate(at), -1);
  EXPECT_EQ(min(K, M).evaluate(at), 3);
  EXPECT_EQ(max(K, M).evaluate(at), 10);
  EXPECT_EQ((K * M - 2 * K).evaluate(at), 24);
}

TEST_F(SymbolicTest, EvaluationFailsGracefully) {
  EXPECT_EQ(floorDiv(K, M).evaluate({{"K", 3}, {"M", 0}}), std::nullopt);
  EXPECT_EQ(mod(K, M).evaluate({{"K", 3}, {"M", 0}}), std::nullopt);
  EXPECT_EQ(ceilDiv(K, M).evaluate({{"K", 3}, {"M", 0}}), std::nullopt);
  EXPECT_EQ(exactDiv(K, M).evaluate({{"K", 3}, {"M", 0}}), std::nullopt);
  EXPECT_EQ(exactDiv(K, 0).evaluate({{"K", 3}}), std::nullopt);
  EXPECT_EQ(exactDiv(K, 0).str(), "K / 0");
  EXPECT_EQ(floorDiv(K, 0).evaluate({{"K", 3}}), std::nullopt);
  EXPECT_EQ((K + M).evaluate({{"K", 3}}), std::nullopt);
  EXPECT_EQ(exactDiv(K, 2).evaluate({{"K", 3}}), std::nullopt);
  EXPECT_EQ(exactDiv(K, 2).evaluate({{"K", 4}}), 2);
  EXPECT_EQ((exactDiv(K, 2) + exactDiv(M, 2)).evaluate({{"K", 3}, {"M", 5}}), 4);
  int64_t big = int64_t(1) << 40;
  EXPECT_EQ((K * K).evaluate({{"K", big}}), std::nullopt); // overflows int64
}

// ---- simplification --------------------------------------------------------------------------

TEST_F(SymbolicTest, FloorDivDropsInRangeRemainder) {
  EXPECT_EQ(simp(floorDiv(64 * w + t, 64)), "w");
  EXPECT_EQ(simp(floorDiv(64 * w + t, 16)), "4*w + t // 16");
  EXPECT_EQ(simp(floorDiv(t, 64)), "0");
  EXPECT_EQ(simp(floorDiv(t + 64, 64)), "1");
  EXPECT_EQ(simp(floorDiv(T0, 256)), "0");
  EXPECT_EQ(simp(floorDiv(T0 + 64, 64)), "T0 // 64 + 1");
  EXPECT_EQ(simp(floorDiv(T0 + 256 * w, 256)), "w");
}

TEST_F(SymbolicTest, ModKeepsInRangeRemainder) {
  EXPECT_EQ(simp(mod(64 * w + t, 64)), "t");
  EXPECT_EQ(simp(mod(64 * w + t, 16)), "t % 16");
  EXPECT_EQ(simp(mod(64 * a, 16)), "0");
  EXPECT_EQ(simp(mod(64 * a + t, 16)), "t % 16");
  EXPECT_EQ(simp(mod(T0, 256)), "T0");
  EXPECT_EQ(simp(mod(T0 + 256 * w, 256)), "T0");
  EXPECT_EQ(simp(mod(T0 + 64, 64)), "T0 % 64");
  EXPECT_EQ(simp(mod(T0 + 256 * T1, 64)), "T0 % 64"); // the lane id
}

TEST_F(SymbolicTest, ExactFloorOfModStays) {
  EXPECT_EQ(simp(floorDiv(mod(T0, 64), 16)), "T0 % 64 // 16");
  EXPECT_EQ(simp(mod(floorDiv(T0, 16), 4)), "T0 // 16 % 4");
  EXPECT_EQ(simp(floorDiv(mod(t, 64), 16)), "t // 16"); // t < 64 already
  EXPECT_EQ(simp(floorDiv(mod(T0, 64), 64)), "0");
}

TEST_F(SymbolicTest, NestedDivisionsMerge) {
  EXPECT_EQ(simp(floorDiv(floorDiv(T0, 4), 16)), "T0 // 64");
  EXPECT_EQ(simp(floorDiv(floorDiv(K, 4), 16)), "K // 64");
  EXPECT_EQ(simp(floorDiv(floorDiv(T0, 64), 4)), "0");
  EXPECT_EQ(simp(ceilDiv(ceilDiv(K, 4), 16)), "ceildiv(K, 64)");
  EXPECT_EQ(simp(mod(mod(T0, 64), 16)), "T0 % 16");
  EXPECT_EQ(simp(mod(mod(T0, 16), 64)), "T0 % 16");
  EXPECT_EQ(simp(mod(mod(K, 48), 16)), "K % 16");
  EXPECT_EQ(simp(mod(mod(K, 16), 48)), "K % 16");
  EXPECT_EQ(simp(mod(mod(K, 64) + M, 16)), "(K + M) % 16");
}

TEST_F(SymbolicTest, RecombinesFloorAndMod) {
  EXPECT_EQ(simp(T0 - 64 * floorDiv(T0, 64)), "T0 % 64");
  EXPECT_EQ(simp(64 * floorDiv(T0, 64) + mod(T0, 64)), "T0");
  EXPECT_EQ(simp(16 * floorDiv(t, 16) + mod(t, 16) + 64 * w), "t + 64*w");
  EXPECT_EQ(simp(16 * floorDiv(mod(T0, 64), 16) + mod(T0, 16)), "T0 % 64");
  EXPECT_EQ(simp(K - 8 * floorDiv(K, 8) + M), "M + K % 8");
  EXPECT_EQ(simp(floorDiv(256 * floorDiv(T0, 64) + 4 * mod(T0, 64), 8)), "T0 // 2");
}

TEST_F(SymbolicTest, DivisionsByMultiplesFold) {
  EXPECT_EQ(simp(floorDiv(64 * a, 64)), "a");
  EXPECT_EQ(simp(ceilDiv(64 * a, 64)), "a");
  EXPECT_EQ(simp(floorDiv(2 * K + 1, 2)), "K");
  EXPECT_EQ(simp(ceilDiv(2 * K + 1, 2)), "K + 1");
  EXPECT_EQ(simp(mod(2 * K + 1, 2)), "1");
  EXPECT_EQ(simp(floorDiv(3 * K, 2)), "3*K // 2");
  EXPECT_EQ(simp(mod(65 * K, 64)), "K % 64");
  EXPECT_EQ(simp(floorDiv(4 * K, 8)), "K // 2");
  EXPECT_EQ(simp(mod(4 * T0, 64)), "4*(T0 % 16)");
  EXPECT_EQ(simp(floorDiv(K + 65, 64)), "(K + 1) // 64 + 1");
  EXPECT_EQ(simp(floorDiv(exactDiv(K, 2), 4)), "K // 8");
}

// An element offset inside an aligned group stays out of the division: 4*x + g with g < 4 (the
// lane's elements of a mapped index) divided by a multiple of 4.
TEST_F(SymbolicTest, AlignedGroupOffsetsLeaveDivisions) {
  Facts f = hw;
  f.setRange("g", 0, 3);
  const IndexExpr g = S("g");
  EXPECT_EQ(simpWith(f, mod(4 * a + g, 64)), "g + 4*(a % 16)");
  EXPECT_EQ(simpWith(f, floorDiv(4 * a + g, 64)), "a // 16");
  // 32*IV plus a part below 32 (g + 16*w' + 4*t' with small ranges) over 96.
  f.setRange("u", 0, 1);
  const IndexExpr u = S("u");
  EXPECT_EQ(simpWith(f, floorDiv(32 * IV + g + 16 * u + 4 * mod(t, 4), 96)), "IV_K // 3");
  EXPECT_EQ(simpWith(f, mod(32 * IV + g + 16 * u + 4 * mod(t, 4), 64)),
            "g + 16*u + 32*(IV_K % 2) + 4*(t % 4)");
  // Not when the small part can reach the group's size, or the group does not divide c.
  EXPECT_EQ(simpWith(f, floorDiv(4 * a + g + 1, 64)), "(4*a + g + 1) // 64");
  EXPECT_EQ(simpWith(f, floorDiv(6 * a + g, 64)), "(6*a + g) // 64");
}

TEST_F(SymbolicTest, NegativeValuesFollowFloorSemantics) {
  EXPECT_EQ(simp(floorDiv(-w, 4)), "(-w) // 4");
  EXPECT_EQ(simp(mod(t - 1, 64)), "(t + 63) % 64");
  EXPECT_EQ(simp(floorDiv(K, -2)), "(-K) // 2");
  EXPECT_EQ((-floorDiv(K, 8)).str(), "-(K // 8)");
  EXPECT_EQ((M - floorDiv(K, 8)).str(), "M - K // 8");
  EXPECT_EQ((mod(-K, 3) + M).str(), "M + (-K) % 3");
  EXPECT_EQ(simp(floorDiv(t - 64, 64)), "-1");
  EXPECT_EQ(simp(ceilDiv(t - 64, 64)), "ceildiv(t, 64) - 1"); // -1 at t == 0
}

TEST_F(SymbolicTest, CeilDivUsesRanges) {
  EXPECT_EQ(simp(ceilDiv(IndexExpr(100), 32)), "4");
  EXPECT_EQ(simp(ceilDiv(t, 64)), "ceildiv(t, 64)");
  EXPECT_EQ(simp(ceilDiv(t + 1, 64)), "1");
  EXPECT_EQ(simp(ceilDiv(64 * w + t + 1, 64)), "w + 1");
}

TEST_F(SymbolicTest, MinMaxDecidedByRanges) {
  EXPECT_EQ(simp(min(t, 100)), "t");
  EXPECT_EQ(simp(max(t, 100)), "100");
  EXPECT_EQ(simp(min(t, 32)), "min(32, t)");
  EXPECT_EQ(simp(min(t, t + 1)), "t");
  EXPECT_EQ(simp(max(t, t + 1)), "t + 1");
  EXPECT_EQ(simp(min(16 * w, 64)), "16*w");
  EXPECT_EQ(simp(max(K, 0)), "K");
  EXPECT_EQ(simp(min(K, M)), "min(K, M)");
  EXPECT_EQ(simp(min(min(K, 64), 32)), "min(32, K)");
  EXPECT_EQ(simp(max(max(K, 64), 32)), "max(64, K)");
}

TEST_F(SymbolicTest, TrivialCasesFoldOnConstruction) {
  EXPECT_EQ(floorDiv(K, 1).str(), "K");
  EXPECT_EQ(mod(K, 1).str(), "0");
  EXPECT_EQ(min(K, K).str(), "K");
  EXPECT_EQ(floorDiv(64 * K, 64).str(), "K");
  EXPECT_EQ(mod(64 * K + 128, 64).str(), "0");
  EXPECT_EQ(floorDiv(IndexExpr(0), K).str(), "0");
  EXPECT_EQ(floorDiv(floorDiv(K, 2), 3).str(), "K // 6");
}

TEST_F(SymbolicTest, ExpandsPolynomials) {
  EXPECT_EQ(simp((K + 1) * (M + 2)), "K*M + 2*K + M + 2");
  EXPECT_EQ(simp((K + 1) * (K - 1)), "K*K - 1");
  EXPECT_EQ(simp(K - K), "0");
  EXPECT_EQ(simp(floorDiv((w + 1) * 64 + t, 64)), "w + 1");
}

TEST_F(SymbolicTest, SymbolicDivisorsStay) {
  EXPECT_EQ(simp(floorDiv(M, BLOCK)), "M // BLOCK");
  EXPECT_EQ(simp(floorDiv(BLOCK * M, BLOCK)), "M");
  EXPECT_EQ(simp(floorDiv(BLOCK * M + 2 * BLOCK, BLOCK)), "M + 2");
  EXPECT_EQ(simp(mod(BLOCK * M, BLOCK)), "0");
  EXPECT_EQ(simp(ceilDiv(K, BLOCK)), "ceildiv(K, BLOCK)");
  Facts f = hw;
  f.setRange("BLOCK", 64, 128);
  EXPECT_EQ(simpWith(f, floorDiv(t, BLOCK)), "0");
  EXPECT_EQ(simpWith(f, mod(t, BLOCK)), "t");
}

TEST_F(SymbolicTest, DivisibilityFacts) {
  Facts f = aligned();
  EXPECT_EQ(simpWith(f, ceilDiv(K, 32) * 32), "K");
  EXPECT_EQ(simpWith(f, ceilDiv(K, 32) * 32 - K), "0");
  EXPECT_EQ(simpWith(f, floorDiv(K, 64) * 64), "K");
  EXPECT_EQ(simpWith(f, mod(K, 32)), "0");
  EXPECT_EQ(simpWith(f, floorDiv(K, 32)), "K // 32");
  EXPECT_EQ(simpWith(f, ceilDiv(K, 64)), "K // 64");
  EXPECT_EQ(simpWith(f, mod(K + 32, 64)), "32");
  EXPECT_EQ(simpWith(f, floorDiv(K + 32, 64)), "K // 64");
  EXPECT_EQ(simpWith(f, mod(K + T0, 64)), "T0 % 64");
  EXPECT_EQ(simpWith(f, mod(K * M, 64)), "0");
  EXPECT_EQ(simpWith(f, K * M + 1), "K*M + 1");
  EXPECT_EQ(simpWith(f, floorDiv(K, 48)), "K // 48");
  EXPECT_EQ(simpWith(f, min(K, 128)), "128");
  EXPECT_EQ(simpWith(hw, mod(K, 32)), "K % 32");
}

TEST_F(SymbolicTest, AssumedBoundsFeedSimplification) {
  Facts f = hw;
  ASSERT_TRUE(f.assume(Pred::cmp(Pred::Lt, K, 64)));
  EXPECT_EQ(simpWith(f, floorDiv(K, 64)), "0");
  EXPECT_EQ(simpWith(f, mod(K, 64)), "K");
  EXPECT_EQ(simpWith(f, min(K, 64)), "K");
}

TEST_F(SymbolicTest, SimplifiesGemmLikeIndex) {
  IndexExpr e = floorDiv(mod(T0, 64) * 4 + floorDiv(T0, 64) * 256 + WG0 * 1024 + 16 * IV, 8) +
                mod(T0 + 3, 16) * 2;
  EXPECT_EQ(simp(e), "2*IV_K + 128*WG0 + T0 // 2 + 2*((T0 + 3) % 16)");
  IndexExpr row = WG0 * 64 + floorDiv(T0, 64) * 16 + mod(T0, 16);
  EXPECT_EQ(simp(row), "64*WG0 + 16*(T0 // 64) + T0 % 16");
  EXPECT_EQ(simp(floorDiv(row, 64)), "WG0");
  EXPECT_EQ(simp(mod(row, 16)), "T0 % 16");
}

// ---- facts, proofs, ranges ---------------------------------------------------------------

TEST_F(SymbolicTest, RangeOfExpressions) {
  auto is = [](Range r, int64_t lo, int64_t hi) { return r.lo == lo && r.hi == hi; };
  EXPECT_TRUE(is(hw.rangeOf(64 * w + t), 0, 255));
  EXPECT_TRUE(is(hw.rangeOf(mod(K, 16)), 0, 15));
  EXPECT_TRUE(is(hw.rangeOf(mod(t, 256)), 0, 63));
  EXPECT_TRUE(is(hw.rangeOf(floorDiv(T0, 64)), 0, 3));
  EXPECT_TRUE(is(hw.rangeOf(ceilDiv(t, 16)), 0, 4));
  EXPECT_TRUE(is(hw.rangeOf(min(t, w)), 0, 3));
  EXPECT_TRUE(is(hw.rangeOf(max(t, w + 100)), 100, 103));
  EXPECT_TRUE(is(hw.rangeOf(t * t), 0, 3969));
  EXPECT_TRUE(is(hw.rangeOf(t * w - 10), -10, 179));
  EXPECT_TRUE(is(hw.rangeOf(IndexExpr(7)), 7, 7));
  Range r = hw.rangeOf(K - t);
  EXPECT_EQ(r.lo, -63);
  EXPECT_FALSE(r.boundedAbove());
  EXPECT_FALSE(hw.rangeOf(K * M).boundedAbove());
  Facts f = hw;
  f.setRange("K", 0, 100);
  EXPECT_TRUE(is(f.rangeOf(exactDiv(K, 2)), 0, 50));
  EXPECT_TRUE(is(f.rangeOf(mod(K, M)), 0, 100));
  f.setRange("M", 1, 8);
  EXPECT_TRUE(is(f.rangeOf(mod(K, M)), 0, 7));
  EXPECT_TRUE(is(f.rangeOf(floorDiv(K, M)), 0, 100));
  f.setRange("n", -8, 8);
  EXPECT_TRUE(is(f.rangeOf(floorDiv(S("n"), 4)), -2, 2));
  EXPECT_TRUE(is(f.rangeOf(S("n") * S("n")), 0, 64));
}

TEST_F(SymbolicTest, SymbolRangesAndDivisibility) {
  Facts f;
  Range r = f.rangeOfSymbol("X");
  EXPECT_EQ(r.lo, 0);
  EXPECT_FALSE(r.boundedAbove());
  f.setRange("X", 10, 1000);
  f.setRange("X", 0, 500); // intersects
  f.addDivisibility("X", 16);
  r = f.rangeOfSymbol("X");
  EXPECT_EQ(r.lo, 16);
  EXPECT_EQ(r.hi, 496);
  f.addDivisibility("X", 24);
  EXPECT_EQ(f.divisorOf("X"), 48);
  EXPECT_EQ(f.divisorOf("Y"), std::nullopt);
  f.setRange("Z", -5, 5); // a first range replaces the non-negative default
  EXPECT_EQ(f.rangeOfSymbol("Z").lo, -5);
}

TEST_F(SymbolicTest, AssumeExtractsFacts) {
  Facts f;
  f.setRange("BLOCK_K", 32, 32);
  IndexExpr blockK = S("BLOCK_K");
  ASSERT_TRUE(f.assume(Pred::cmp(Pred::Gt, K, 4 * blockK)));
  EXPECT_EQ(f.rangeOfSymbol("K").lo, 129);
  ASSERT_TRUE(f.assume(Pred::both(Pred::cmp(Pred::Eq, mod(K, 64), 0), Pred::cmp(Pred::Le, K, 4096))));
  EXPECT_EQ(f.divisorOf("K"), 64);
  EXPECT_EQ(f.rangeOfSymbol("K").lo, 192);
  EXPECT_EQ(f.rangeOfSymbol("K").hi, 4096);
  ASSERT_TRUE(f.assume(Pred::negate(Pred::cmp(Pred::Lt, M, 16))));
  EXPECT_EQ(f.rangeOfSymbol("M").lo, 16);
  ASSERT_TRUE(f.assume(Pred::cmp(Pred::Eq, N, 128)));
  EXPECT_EQ(f.rangeOfSymbol("N").lo, 128);
  EXPECT_EQ(f.rangeOfSymbol("N").hi, 128);
  ASSERT_TRUE(f.assume(Pred::cmp(Pred::Eq, mod(2 * S("P"), 64), 0)));
  EXPECT_EQ(f.divisorOf("P"), 32);
}

TEST_F(SymbolicTest, AssumeRejectsContradictions) {
  Facts f;
  EXPECT_FALSE(f.assume(Pred::cmp(Pred::Lt, K, 0)));
  EXPECT_FALSE(f.assume(Pred::constant(false)));
  ASSERT_TRUE(f.assume(Pred::cmp(Pred::Gt, M, 100)));
  EXPECT_FALSE(f.assume(Pred::cmp(Pred::Lt, M, 50)));
  Facts g;
  ASSERT_TRUE(g.assume(Pred::cmp(Pred::Ge, K, 10)));
  EXPECT_FALSE(g.assume(Pred::cmp(Pred::Le, K, 5)));
}

TEST_F(SymbolicTest, ProvesComparisons) {
  Facts f = hw;
  f.setRange("BLOCK_K", 32, 32);
  ASSERT_TRUE(f.assume(Pred::cmp(Pred::Gt, K, 128)));
  EXPECT_EQ(f.prove(Pred::cmp(Pred::Gt, K, 4 * S("BLOCK_K"))), true);
  EXPECT_EQ(f.prove(Pred::cmp(Pred::Lt, T0, 256)), true);
  EXPECT_EQ(f.prove(Pred::cmp(Pred::Lt, T0, 100)), std::nullopt);
  EXPECT_EQ(f.prove(Pred::cmp(Pred::Ge, T0, 256)), false);
  EXPECT_EQ(f.prove(Pred::cmp(Pred::Lt, 64 * w + t, 256)), true);
  EXPECT_EQ(f.prove(Pred::cmp(Pred::Ne, K, 0)), true);
  EXPECT_EQ(f.prove(Pred::cmp(Pred::Eq, K, 5)), false);
  EXPECT_EQ(f.prove(Pred::cmp(Pred::Eq, floorDiv(64 * w + t, 64), w)), true);
}

TEST_F(SymbolicTest, ProvesWithRelationalFacts) {
  Facts f;
  ASSERT_TRUE(f.assume(Pred::cmp(Pred::Ge, K, M)));
  EXPECT_EQ(f.prove(Pred::cmp(Pred::Gt, K + 1, M)), true);
  EXPECT_EQ(f.prove(Pred::cmp(Pred::Gt, M, K)), false);
  EXPECT_EQ(f.prove(Pred::cmp(Pred::Gt, K, M)), std::nullopt);
  ASSERT_TRUE(f.assume(Pred::cmp(Pred::Eq, N, K + M)));
  EXPECT_EQ(f.prove(Pred::cmp(Pred::Eq, N - M, K)), true);
  ASSERT_TRUE(f.assume(Pred::cmp(Pred::Ne, S("P"), S("Q"))));
  EXPECT_EQ(f.prove(Pred::cmp(Pred::Eq, S("P"), S("Q"))), false);
}

TEST_F(SymbolicTest, ProvesDivisibilityAndConnectives) {
  Facts f = aligned();
  Pred div64 = Pred::cmp(Pred::Eq, mod(K, 64), 0);
  Pred div128 = Pred::cmp(Pred::Eq, mod(K, 128), 0);
  EXPECT_EQ(f.prove(div64), true);
  EXPECT_EQ(f.prove(Pred::cmp(Pred::Eq, mod(K, 32), 0)), true);
  EXPECT_EQ(f.prove(div128), std::nullopt);
  EXPECT_EQ(f.prove(Pred::cmp(Pred::Eq, ceilDiv(K, 32) * 32, K)), true);
  EXPECT_EQ(f.prove(Pred::both(div64, div128)), std::nullopt);
  EXPECT_EQ(f.prove(Pred::either(div64, div128)), true);
  EXPECT_EQ(f.prove(Pred::negate(div64)), false);
  EXPECT_EQ(f.prove(Pred::both(div64, Pred::cmp(Pred::Lt, K, 0))), false);
}

TEST_F(SymbolicTest, ProvesExactDivision) {
  Facts none;
  EXPECT_FALSE(none.provesExact(K, 2));
  EXPECT_TRUE(none.provesExact(2 * M, 2));
  EXPECT_TRUE(none.provesExact(M * N, M));
  EXPECT_FALSE(none.provesExact(M, N));
  EXPECT_TRUE(none.provesExact(IndexExpr(12), 4));
  EXPECT_FALSE(none.provesExact(IndexExpr(12), 5));
  EXPECT_FALSE(none.provesExact(K, 0));
  Facts even;
  ASSERT_TRUE(even.assume(Pred::cmp(Pred::Eq, mod(K, 2), 0)));
  EXPECT_TRUE(even.provesExact(K, 2));
  EXPECT_FALSE(even.provesExact(K, 4));
  EXPECT_TRUE(even.provesExact(3 * K + 4, 2));
  Facts f = aligned();
  EXPECT_TRUE(f.provesExact(K, 32));
  EXPECT_FALSE(f.provesExact(K, 128));
}

TEST_F(SymbolicTest, ProvesEquality) {
  Facts f = aligned();
  EXPECT_TRUE(f.provesEqual(ceilDiv(K, 32) * 32, K));
  EXPECT_TRUE(hw.provesEqual(floorDiv(T0, 64) * 64 + mod(T0, 64), T0));
  EXPECT_TRUE(hw.provesEqual(floorDiv(t, 64), 0));
  EXPECT_FALSE(hw.provesEqual(K, M));
  EXPECT_FALSE(hw.provesEqual(ceilDiv(K, 32) * 32, K));
}

TEST_F(SymbolicTest, PredicatesEvaluateAndSubstitute) {
  Pred p = Pred::both(Pred::cmp(Pred::Gt, K, 4 * S("BLOCK_K")), Pred::cmp(Pred::Eq, mod(K, 64), 0));
  EXPECT_EQ(p.freeSymbols(), (std::set<std::string>{"BLOCK_K", "K"}));
  EXPECT_EQ(p.evaluate({{"K", 256}, {"BLOCK_K", 32}}), true);
  EXPECT_EQ(p.evaluate({{"K", 100}, {"BLOCK_K", 32}}), false);
  EXPECT_EQ(p.evaluate({{"K", 65}}), false); // one false conjunct decides
  EXPECT_EQ(p.evaluate({{"K", 64}}), std::nullopt);
  Pred bound = p.subs({{"BLOCK_K", IndexExpr(32)}});
  EXPECT_EQ(bound.str(), "K > 128 & K % 64 == 0");
  EXPECT_EQ(Pred::negate(bound).evaluate({{"K", 256}}), false);
  EXPECT_EQ(Pred::either(bound, Pred::cmp(Pred::Lt, K, 10)).evaluate({{"K", 5}}), true);
}

TEST_F(SymbolicTest, PublicFunctionsDoNotThrow) {
  IndexExpr zeroDiv = exactDiv(K, M);
  EXPECT_NO_THROW(zeroDiv.subs({{"M", IndexExpr(0)}}));
  EXPECT_NO_THROW(hw.simplify(exactDiv(K, 0)));
  EXPECT_NO_THROW(hw.rangeOf(exactDiv(K, 0)));
  EXPECT_NO_THROW(hw.prove(Pred::cmp(Pred::Eq, exactDiv(K, 0), 1)));
  EXPECT_NO_THROW(hw.provesExact(K, K - K));
  EXPECT_EQ(hw.simplify(floorDiv(K, 0)).str(), "K // 0");
}

// ---- randomized value preservation ---------------------------------------------------------

struct SymbolSpec {
  std::string name;
  int64_t lo, hi, divisor;
};

class RandomExprs {
public:
  RandomExprs(uint64_t seed, const std::vector<SymbolSpec> &syms) : rng_(seed), syms_(syms) {}

  IndexExpr expr(int depth) {
    if (depth == 0 || pick(5) == 0)
      return leaf();
    static const int64_t divisors[] = {1, 2, 3, 4, 5, 8, 12, 16, 32, 64, 128};
    int64_t c = divisors[pick(std::size(divisors))];
    switch (pick(11)) {
    case 0:
      return expr(depth - 1) + expr(depth - 1);
    case 1:
      return expr(depth - 1) - expr(depth - 1);
    case 2:
      return expr(depth - 1) * IndexExpr(int64_t(pick(9)) - 2);
    case 3:
      return leaf() * expr(depth - 1);
    case 4:
      return floorDiv(expr(depth - 1), c);
    case 5:
      return mod(expr(depth - 1), c);
    case 6:
      return ceilDiv(expr(depth - 1), c);
    case 7:
      return min(expr(depth - 1), expr(depth - 1));
    case 8:
      return max(expr(depth - 1), expr(depth - 1));
    case 9: // hardware-like linearization: c*x + y
      return expr(depth - 1) * c + expr(depth - 1);
    default: // delinearization pairs: c*(x // c) + x % c and friends
    {
      IndexExpr x = expr(depth - 1);
      return floorDiv(x, c) * (c * int64_t(pick(3))) + mod(x, c) * int64_t(pick(3)) - x;
    }
    }
  }

  std::map<std::string, int64_t> point() {
    std::map<std::string, int64_t> values;
    for (const SymbolSpec &s : syms_) {
      int64_t v = std::uniform_int_distribution<int64_t>(s.lo, s.hi)(rng_);
      values[s.name] = v - (((v % s.divisor) + s.divisor) % s.divisor);
      if (values[s.name] < s.lo)
        values[s.name] += s.divisor;
    }
    return values;
  }

private:
  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  IndexExpr leaf() {
    if (pick(4) == 0)
      return IndexExpr(int64_t(pick(80)) - 8);
    return IndexExpr::symbol(syms_[pick(syms_.size())].name);
  }

  std::mt19937_64 rng_;
  std::vector<SymbolSpec> syms_;
};

std::string describe(const std::map<std::string, int64_t> &values) {
  std::ostringstream os;
  for (const auto &[name, v] : values)
    os << name << "=" << v << " ";
  return os.str();
}

// Simplifies `count` random expressions under the symbols' ranges and divisibility and checks
// that original and simplified agree at `points` random in-range points each. Returns how many
// expressions simplify() changed.
int checkRandom(uint64_t seed, const std::vector<SymbolSpec> &syms, int count, int depth,
                int points) {
  Facts facts;
  for (const SymbolSpec &s : syms) {
    facts.setRange(s.name, s.lo, s.hi);
    facts.addDivisibility(s.name, s.divisor);
  }
  RandomExprs gen(seed, syms);
  int changed = 0;
  for (int n = 0; n < count; ++n) {
    IndexExpr e = gen.expr(depth);
    IndexExpr s = facts.simplify(e);
    changed += s.str() != e.str();
    for (int p = 0; p < points; ++p) {
      auto values = gen.point();
      auto expected = e.evaluate(values);
      EXPECT_TRUE(expected.has_value()) << "seed " << seed << ": " << e.str();
      auto actual = s.evaluate(values);
      if (actual != expected) {
        ADD_FAILURE() << "seed " << seed << " expression #" << n << "\n  original:   " << e.str()
                      << "\n  simplified: " << s.str() << "\n  at " << describe(values);
        return changed;
      }
    }
  }
  return changed;
}

TEST(SymbolicRandom, SimplifyPreservesValues) {
  const std::vector<SymbolSpec> syms = {
      {"t", 0, 63, 1}, {"w", 0, 3, 1}, {"$T0", 0, 255, 1}, {"K", 0, 1024, 16},
      {"M", 1, 100, 1}, {"i", 0, 7, 1}, {"n", -8, 8, 1},  {"$WG0", 0, 20, 1},
  };
  for (uint64_t seed : {20261122u, 7u, 99u}) {
    int changed = checkRandom(seed, syms, 1000, 4, 24);
    EXPECT_GT(changed, 200) << "seed " << seed; // the test exercises rewrites, not identity
  }
}

TEST(SymbolicRandom, HardwareIndicesPreserveValues) {
  const std::vector<SymbolSpec> syms = {
      {"$T0", 0, 127, 1}, {"$T1", 0, 1, 1}, {"$WG0", 0, 7, 1}, {"$IV_K", 0, 15, 1},
      {"l", 0, 31, 1},    {"g", 0, 3, 1},   {"N", 0, 512, 64},
  };
  int changed = checkRandom(31337, syms, 1000, 5, 20);
  EXPECT_GT(changed, 200);
}

// ---- speed -----------------------------------------------------------------------------------

TEST_F(SymbolicTest, SimplifyIsFast) {
  std::vector<IndexExpr> exprs = {
      floorDiv(mod(T0, 64) * 4 + floorDiv(T0, 64) * 256 + WG0 * 1024 + 16 * IV, 8) +
          mod(T0 + 3, 16) * 2,
      WG0 * 64 + floorDiv(T0, 64) * 16 + mod(T0, 16),
      floorDiv(64 * w + t, 64),
      mod(64 * a + t, 16) + min(t, 100),
      ceilDiv(K, 32) * 32 - K,
  };
  Facts f = aligned();
  const int rounds = 200;
  auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < rounds; ++r)
    for (const IndexExpr &e : exprs)
      f.simplify(e);
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                  .count() /
              (rounds * exprs.size());
  std::cout << "simplify: " << us << " us per expression\n";
  EXPECT_LT(us, 1000.0);
}

} // namespace
} // namespace wave::sym
