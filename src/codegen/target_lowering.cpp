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

void TargetLowering::missing(const std::string &what) {
  unsupported(what + " on " + target_.name + " (a wavec bug: legalize should have refused it)",
              {});
}

void TargetLowering::bufferLoad(const std::string &, const std::string &, const std::string &,
                                const std::string &, const std::string &) {
  missing("buffer instructions");
}
void TargetLowering::bufferStore(const std::string &, const std::string &, const std::string &,
                                 const std::string &, const std::string &) {
  missing("buffer instructions");
}
void TargetLowering::asyncCopy(const std::string &, const std::string &, const std::string &) {
  missing("asynchronous copies");
}
void TargetLowering::asyncCommit() { missing("asynchronous copies"); }
void TargetLowering::ldsDmaLoad(const std::string &, const std::string &, const std::string &,
                                int) {
  missing("LDS DMA");
}
void TargetLowering::barrierInit(const std::string &, int) { missing("transaction barriers"); }
void TargetLowering::barrierInitFence() { missing("transaction barriers"); }
void TargetLowering::barrierArriveExpect(const std::string &, int64_t) {
  missing("transaction barriers");
}
void TargetLowering::tensorCopy(const std::string &, const std::string &,
                                const std::vector<std::string> &, const std::string &) {
  missing("tensor copies");
}
void TargetLowering::tensorStore2d(const std::string &, const std::string &, const std::string &,
                                   const std::string &) {
  missing("tensor stores");
}
void TargetLowering::tensorStoreWaitRead() { missing("tensor stores"); }
void TargetLowering::barrierWait(const std::string &, const std::string &) {
  missing("transaction barriers");
}
void TargetLowering::barrierArrive(const std::string &) { missing("transaction barriers"); }
void TargetLowering::setRegisterLimit(int, bool) { missing("register reconfiguration"); }
void TargetLowering::exitThread() { missing("warp specialization"); }
void TargetLowering::namedBarrier(int, int, bool) { missing("named barriers"); }
std::string TargetLowering::workgroupBarrier() const {
  if (barrierThreads > 0) // named barrier 1 of the consumers (PTX bar.sync id, count)
    return "llvm.inline_asm has_side_effects asm_dialect = att \"bar.sync 1, " +
           std::to_string(barrierThreads) + ";\", \"\" : () -> ()";
  return "gpu.barrier";
}

std::vector<std::string> TargetLowering::asyncWait(int, const std::string &) {
  missing("asynchronous copies");
  return {};
}
std::string TargetLowering::asyncProxyFence() const { return ""; }
void TargetLowering::warpgroupFence() { missing("warpgroup matrix instructions"); }
void TargetLowering::warpgroupMma(const std::string &, const MmaKind &, ScalarType,
                                  const std::string &, const std::string &, const std::string &,
                                  bool, bool) {
  missing("warpgroup matrix instructions");
}
void TargetLowering::warpgroupMmaRegisterA(
    const std::string &, const MmaKind &, ScalarType, const std::string &,
    const std::function<const std::vector<std::string> &()> &, const std::string &, bool,
    bool) {
  missing("warpgroup matrix instructions");
}
void TargetLowering::warpgroupCommit() { missing("warpgroup matrix instructions"); }
void TargetLowering::warpgroupWait(int) { missing("warpgroup matrix instructions"); }
std::string TargetLowering::matrixLoad(const std::string &, unsigned, bool, const std::string &) {
  missing("matrix loads from shared memory");
  return fresh();
}

std::string f32StructType(int64_t n) {
  std::string s = "!llvm.struct<(";
  for (int64_t j = 0; j < n; ++j)
    s += j ? ", f32" : "f32";
  return s + ")>";
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
