// NVIDIA's target lowering (codegen/target_lowering.h): mma.sync through the NVVM intrinsics
// and the PTX approximations of exp2, log2, sin and cos.
#pragma once

#include "codegen/target_lowering.h"

namespace wave::codegen {

class NvidiaLowering final : public TargetLowering {
public:
  using TargetLowering::TargetLowering;
  void mathIntrinsic(const std::string &res, const std::string &name, const std::string &arg,
                     ScalarType inT, int64_t e) override;
  std::string mmaInstruction(const MmaKind &k, ScalarType in, const std::string &a,
                             const std::string &b, const std::string &c) override;
};

} // namespace wave::codegen
