// AMD's target lowering (codegen/target_lowering.h): MFMA and WMMA through the ROCDL dialect,
// bf16 stored as i16, and buffer instructions for checked global accesses where the target
// table gives a buffer descriptor (codegen/emitter/access_buffer.cpp).
#pragma once

#include "codegen/target_lowering.h"

namespace wave::codegen {

class AmdLowering final : public TargetLowering {
public:
  using TargetLowering::TargetLowering;
  std::string storageType(ScalarType t) const override;
  std::string mmaInstruction(const MmaKind &k, ScalarType in, const std::string &a,
                             const std::string &b, const std::string &c) override;
  bool bufferAccesses() const override { return target_.bufferRsrcWord3 != 0; }
  bool hasFp8ToF32(ScalarType t) const override;
  void fp8ByteToF32(const std::string &res, const std::string &word, int byteSel,
                    ScalarType t) override;
  void bufferLoad(const std::string &res, const std::string &rsrc, const std::string &voff,
                  const std::string &zero, const std::string &type) override;
  void bufferStore(const std::string &value, const std::string &rsrc, const std::string &voff,
                   const std::string &zero, const std::string &type) override;
  // LDS DMA (gfx9 CDNA): each DMA is counted by vmcnt; no groups to close.
  void ldsDmaLoad(const std::string &rsrc, const std::string &lds, const std::string &voff,
                  int bytes) override;
  void asyncCommit() override {}
  std::vector<std::string> asyncWait(int keep, const std::string &name) override;
  void interleaveMatrixOps(const std::vector<std::string> &block, int kSteps) override;
  void setPriority(int priority) override;

private:
  void schedGroupBarrier(unsigned mask, int size, int syncId);
  std::string mfma(const MmaKind &k, ScalarType in, const std::string &a, const std::string &b,
                   const std::string &c);
  std::string wmma(const MmaKind &k, ScalarType in, const std::string &a, const std::string &b,
                   const std::string &c);
};

} // namespace wave::codegen
