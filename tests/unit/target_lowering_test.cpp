// The target lowering (src/codegen/target_lowering.h) alone: each vendor's MMA instruction, math
// intrinsic, storage type and buffer-access choice, written through a host that records text.
#include "codegen/target_lowering.h"

#include <gtest/gtest.h>

namespace wave::codegen {
namespace {

struct TextHost final : LoweringHost {
  int next = 0;
  std::string text, report;
  std::string fresh() override { return "%v" + std::to_string(next++); }
  void line(const std::string &s) override { text += s + "\n"; }
  bool unsupported(const std::string &what, SourceRange) override {
    report = what;
    return false;
  }
  std::string elementType(ScalarType t) const override {
    switch (t) {
    case ScalarType::F16: return "f16";
    case ScalarType::BF16: return "bf16";
    case ScalarType::F32: return "f32";
    case ScalarType::F64: return "f64";
    case ScalarType::I8: return "i8";
    case ScalarType::I32: return "i32";
    default: return "";
    }
  }
};

struct Lowered {
  TextHost host;
  std::unique_ptr<TargetLowering> lower;
  const TargetInfo *target;
  explicit Lowered(const char *name) : target(findTarget(name)) {
    EXPECT_NE(target, nullptr) << name;
    lower = TargetLowering::create(*target, host);
  }
  const MmaKind &kind(const char *name) const {
    const MmaKind *k = findMmaKind(*target, name);
    EXPECT_NE(k, nullptr) << name;
    return *k;
  }
};

TEST(TargetLowering, StorageTypeAndBufferChoice) {
  Lowered amd("gfx942"), nv("sm_80");
  EXPECT_EQ(amd.lower->storageType(ScalarType::BF16), "i16");
  EXPECT_EQ(amd.lower->storageType(ScalarType::F16), "f16");
  EXPECT_EQ(nv.lower->storageType(ScalarType::BF16), "bf16");
  EXPECT_TRUE(amd.lower->bufferAccesses());
  EXPECT_FALSE(nv.lower->bufferAccesses());
}

TEST(TargetLowering, WorkgroupBarrier) {
  // The kernel's barrier() and the placed ones: one line, which MLIR's ROCDL and NVVM
  // conversions lower (docs/language.md section 16).
  for (const char *t : {"gfx942", "gfx90a", "gfx1100", "sm_80", "sm_90", "sm_90a"}) {
    Lowered l(t);
    EXPECT_EQ(l.lower->workgroupBarrier(), "gpu.barrier") << t;
    EXPECT_TRUE(l.host.text.empty()) << t;
  }
}

TEST(TargetLowering, MfmaAndWmma) {
  Lowered cdna("gfx942"), rdna("gfx1100");
  std::string r = cdna.lower->mmaInstruction(cdna.kind("F32_16x16x16_F16"), ScalarType::F16,
                                             "%a", "%b", "%c");
  EXPECT_NE(cdna.host.text.find(r + " = rocdl.mfma.f32.16x16x16f16 %a, %b, %c"),
            std::string::npos)
      << cdna.host.text;
  r = rdna.lower->mmaInstruction(rdna.kind("F32_16x16x16_BF16"), ScalarType::BF16, "%a", "%b",
                                 "%c");
  // bf16 is stored as i16 on AMD: no bitcast of the operands is needed.
  EXPECT_EQ(rdna.host.text, r + " = rocdl.wmma.f32.16x16x16.bf16 %a, %b, %c : (vector<16xi16>, "
                                "vector<16xi16>, vector<8xf32>) -> vector<8xf32>\n");
  // An operand type MFMA has no instruction for is reported, the accumulator kept.
  EXPECT_EQ(cdna.lower->mmaInstruction(cdna.kind("F32_16x16x16_F16"), ScalarType::F64, "%a",
                                       "%b", "%c"),
            "%c");
  EXPECT_EQ(cdna.host.report, "mma on f64");
}

TEST(TargetLowering, MmaSync) {
  Lowered nv("sm_80");
  std::string r = nv.lower->mmaInstruction(nv.kind("F32_16x8x16_F16"), ScalarType::F16, "%a",
                                           "%b", "%c");
  EXPECT_NE(nv.host.text.find("llvm.call_intrinsic \"llvm.nvvm.mma.m16n8k16.row.col.f32.f32\""),
            std::string::npos)
      << nv.host.text;
  EXPECT_NE(nv.host.text.find(r + " = vector.insert "), std::string::npos) << nv.host.text;
}

TEST(TargetLowering, MathIntrinsics) {
  Lowered amd("gfx942"), nv("sm_90");
  amd.lower->mathIntrinsic("%r", "exp2", "%x", ScalarType::F32, 2);
  EXPECT_EQ(amd.host.text,
            "%r = llvm.call_intrinsic \"llvm.exp2.v2f32\"(%x) : (vector<2xf32>) -> vector<2xf32>\n");
  nv.lower->mathIntrinsic("%r", "sqrt", "%x", ScalarType::F32, 1);
  EXPECT_EQ(nv.host.text, "%r = llvm.call_intrinsic \"llvm.sqrt.f32\"(%x) : (f32) -> f32\n");
  nv.host.text.clear();
  // exp2 has no NVPTX lowering: the PTX approximation, in f32.
  nv.lower->mathIntrinsic("%r", "exp2", "%x", ScalarType::F16, 1);
  EXPECT_EQ(nv.host.text, "%v0 = arith.extf %x : f16 to f32\n"
                          "%v1 = llvm.call_intrinsic \"llvm.nvvm.ex2.approx.ftz.f\"(%v0) : (f32) -> f32\n"
                          "%r = arith.truncf %v1 : f32 to f16\n");
}

} // namespace
} // namespace wave::codegen
