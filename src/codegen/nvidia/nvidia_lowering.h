// NVIDIA's target lowering (codegen/target_lowering.h): mma.sync through the NVVM intrinsics,
// the PTX approximations of exp2, log2, sin and cos, cp.async copies with their groups, waits
// and the async-proxy fence, wgmma (sm_90a) and ldmatrix.
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
  bool asyncCopies() const override { return true; }
  void asyncCopy(const std::string &dst, const std::string &src, const std::string &bytes) override;
  bool tensorCopies() const override;
  void barrierInit(const std::string &bar, int count) override;
  void barrierInitFence() override;
  void barrierArriveExpect(const std::string &bar, int64_t bytes) override;
  void tensorCopy(const std::string &dst, const std::string &map,
                  const std::vector<std::string> &coords, const std::string &bar) override;
  void tensorStore2d(const std::string &src, const std::string &map, const std::string &col,
                     const std::string &row) override;
  void tensorStoreWaitRead() override;
  void barrierWait(const std::string &bar, const std::string &parity) override;
  void barrierArrive(const std::string &bar) override;
  void setRegisterLimit(int regs, bool increase) override;
  void exitThread() override;
  void namedBarrier(int id, int threads, bool arrive) override;
  std::string registerFence(const std::string &x) override;
  void asyncCommit() override;
  std::vector<std::string> asyncWait(int keep, const std::string &name) override;
  std::string asyncProxyFence() const override;
  void warpgroupFence() override;
  void warpgroupMma(const std::string &res, const MmaKind &k, ScalarType in,
                    const std::string &aDesc, const std::string &bDesc, const std::string &acc,
                    bool bNMajor, bool zeroC) override;
  void warpgroupMmaRegisterA(const std::string &res, const MmaKind &k, ScalarType in,
                             const std::string &acc,
                             const std::function<const std::vector<std::string> &()> &fragments,
                             const std::string &bDesc, bool bNMajor, bool zeroC) override;
  void warpgroupCommit() override;
  void warpgroupWait(int keep) override;
  std::string matrixLoad(const std::string &ptr, unsigned regs, bool trans,
                         const std::string &structType) override;
  // ptxas honours setmaxnreg only where it knows the register count at entry, which takes
  // both the block size and the workgroups per SM (.maxntid and .minnctapersm); without the
  // latter it drops the instructions (its note C7508) and allocates every thread the entry
  // count (168 for 384 threads), so the consumers' wider register budget went unused.
  std::string kernelAttributes(const std::string &block, bool movesRegisters) const override {
    return ", nvvm.maxntid = array<i32: " + block + ">" +
           (movesRegisters ? ", nvvm.minctasm = 1 : i32" : "");
  }
};

} // namespace wave::codegen
