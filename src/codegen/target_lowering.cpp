// The target lowering's shared defaults and its factory (target_lowering.h).
#include "codegen/target_lowering.h"

#include "codegen/amd/amd_lowering.h"
#include "codegen/nvidia/nvidia_lowering.h"

namespace wave::codegen {

std::unique_ptr<TargetLowering> TargetLowering::create(const TargetInfo &target,
                                                       LoweringHost &host) {
  if (target.vendor == Vendor::NVIDIA)
    return std::make_unique<NvidiaLowering>(host, target);
  return std::make_unique<AmdLowering>(host, target);
}

// LLVM intrinsics through llvm.call_intrinsic: the GPU-to-ROCDL/NVVM conversions mark the
// llvm.intr.exp2/log2/sin/... ops illegal (they turn them into ocml/libdevice calls, which
// we do not link), while the AMDGPU/NVPTX back ends lower these intrinsics themselves.
void TargetLowering::mathIntrinsic(const std::string &res, const std::string &name,
                                   const std::string &arg, ScalarType inT, int64_t e) {
  const std::string ity = vecType(inT, e);
  const std::string mangled = (e == 1 ? "" : "v" + std::to_string(e)) + mlirType(inT);
  line(res + " = llvm.call_intrinsic \"llvm." + name + "." + mangled + "\"(" + arg + ") : (" +
       ity + ") -> " + ity);
}

std::string TargetLowering::shuffle32(const char *mode, const std::string &x,
                                      const std::string &ty, const std::string &offset,
                                      int64_t width) {
  std::string w = fresh(), r = fresh();
  line(w + " = arith.constant " + std::to_string(width) + " : i32");
  line(r + ", " + fresh() + " = gpu.shuffle " + mode + " " + x + ", " + offset + ", " + w +
       " : " + ty);
  return r;
}

std::string TargetLowering::bitcast(const std::string &x, const std::string &from,
                                    const std::string &to) {
  if (from == to)
    return x;
  std::string r = fresh();
  line(r + " = llvm.bitcast " + x + " : " + from + " to " + to);
  return r;
}

} // namespace wave::codegen
