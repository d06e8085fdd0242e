// AMD's target lowering (amd_lowering.h).
#include "codegen/amd/amd_lowering.h"

#include <algorithm>

namespace wave::codegen {

// MLIR 19's ROCDL conversion turns bf16 into i16, so on AMD bf16 values are moved as i16
// (only matrix instructions read them there).
std::string AmdLowering::storageType(ScalarType t) const {
  if (t == ScalarType::BF16)
    return "i16";
  return TargetLowering::storageType(t);
}

std::string AmdLowering::mmaInstruction(const MmaKind &k, ScalarType in, const std::string &a,
                                        const std::string &b, const std::string &c) {
  if (k.family == MmaFamily::MFMA)
    return mfma(k, in, a, b, c);
  return wmma(k, in, a, b, c);
}

std::string AmdLowering::mfma(const MmaKind &k, ScalarType in, const std::string &a,
                              const std::string &b, const std::string &c) {
  const std::string cty = vecType(k.acc, k.c.elements);
  auto half = [&](const std::string &x, int64_t n, int64_t part) {
    std::string r = fresh(), mask;
    for (int64_t j = 0; j < n / 2; ++j)
      mask += (j ? ", " : "") + std::to_string(part * n / 2 + j);
    const std::string ty = vecType(in, n);
    line(r + " = vector.shuffle " + x + ", " + x + " [" + mask + "] : " + ty + ", " + ty);
    return r;
  };
  if (k.isVirtual) {
    // Two native instructions of half the K, each on half of the lane's elements
    // (docs/hardware.md 3.2; legal by the K-permutation rule).
    MmaKind native = k;
    native.k = k.k / 2;
    native.isVirtual = false;
    native.a.elements = k.a.elements / 2;
    native.b.elements = k.b.elements / 2;
    std::string r = c;
    for (int part = 0; part < 2; ++part)
      r = mfma(native, in, half(a, k.a.elements, part), half(b, k.b.elements, part), r);
    return r;
  }
  const int64_t e = k.a.elements, bits = e * bitWidth(in);
  const std::string shape = std::to_string(k.m) + "x" + std::to_string(k.n) + "x" +
                            std::to_string(k.k);
  std::string name, oty;
  const std::string vty = vecType(in, e);
  switch (in) {
  case ScalarType::F16: name = "rocdl.mfma.f32." + shape + "f16"; oty = vty; break;
  case ScalarType::BF16:
    name = "rocdl.mfma.f32." + shape + "bf16.1k";
    oty = "vector<" + std::to_string(e) + "xi16>";
    break;
  case ScalarType::F8E4M3FNUZ:
  case ScalarType::F8E5M2FNUZ: {
    const char *t = in == ScalarType::F8E4M3FNUZ ? "fp8" : "bf8";
    name = "rocdl.mfma.f32." + shape + "." + t + "." + t;
    oty = "i" + std::to_string(bits);
    break;
  }
  case ScalarType::I8:
    name = bits == 64 ? "rocdl.mfma.i32." + shape + ".i8" : "rocdl.mfma.i32." + shape + "i8";
    oty = "i" + std::to_string(bits);
    break;
  default: unsupported(std::string("mma on ") + scalarTypeName(in), {}); return c;
  }
  std::string x = bitcast(a, vty, oty), y = bitcast(b, vty, oty);
  std::string z = fresh(), r = fresh();
  line(z + " = arith.constant 0 : i32");
  line(r + " = " + name + " " + x + ", " + y + ", " + c + ", " + z + ", " + z + ", " + z +
       " : (" + oty + ", " + oty + ", " + cty + ", i32, i32, i32) -> " + cty);
  return r;
}

std::string AmdLowering::wmma(const MmaKind &k, ScalarType in, const std::string &a,
                              const std::string &b, const std::string &c) {
  const std::string cty = vecType(k.acc, k.c.elements);
  const int64_t e = k.a.elements;
  const std::string vty = vecType(in, e);
  const bool bf = in == ScalarType::BF16;
  const std::string oty = bf ? "vector<" + std::to_string(e) + "xi16>" : vty;
  std::string x = bitcast(a, vty, oty), y = bitcast(b, vty, oty), r = fresh();
  line(r + " = rocdl.wmma.f32.16x16x16." + (bf ? "bf16 " : "f16 ") + x + ", " + y + ", " + c +
       " : (" + oty + ", " + oty + ", " + cty + ") -> " + cty);
  return r;
}

// gfx942's v_cvt_f32_fp8 / v_cvt_f32_bf8 (the targets with the fp8 MFMA kinds): the FNUZ kinds,
// exact (every fp8 value is an f32; 0x80 gives NaN).
bool AmdLowering::hasFp8ToF32(ScalarType t) const {
  if (t != ScalarType::F8E4M3FNUZ && t != ScalarType::F8E5M2FNUZ)
    return false;
  for (const char *k : target_.mmaKinds)
    if (std::string(k) == "F32_16x16x32_F8")
      return true;
  return false;
}

void AmdLowering::fp8ByteToF32(const std::string &res, const std::string &word, int byteSel,
                               ScalarType t) {
  std::string sel = fresh();
  line(sel + " = arith.constant " + std::to_string(byteSel) + " : i32");
  line(res + " = rocdl.cvt.f32." + (t == ScalarType::F8E4M3FNUZ ? "fp8 " : "bf8 ") + word + "[" +
       sel + "] : f32");
}

void AmdLowering::bufferLoad(const std::string &res, const std::string &rsrc,
                             const std::string &voff, const std::string &zero,
                             const std::string &type) {
  line(res + " = rocdl.raw.buffer.load " + rsrc + ", " + voff + ", " + zero + ", " + zero +
       " : " + type);
}

void AmdLowering::bufferStore(const std::string &value, const std::string &rsrc,
                              const std::string &voff, const std::string &zero,
                              const std::string &type) {
  line("rocdl.raw.buffer.store " + value + ", " + rsrc + ", " + voff + ", " + zero + ", " + zero +
       " : " + type);
}

// MLIR 19's ROCDL dialect has no op for the LDS-DMA buffer load: the intrinsic is called
// directly, with instruction offset 0 and no cache bits (immediates: constants).
void AmdLowering::ldsDmaLoad(const std::string &rsrc, const std::string &lds,
                             const std::string &voff, int bytes) {
  std::string size = fresh(), zero = fresh();
  line(size + " = llvm.mlir.constant(" + std::to_string(bytes) + " : i32) : i32");
  line(zero + " = llvm.mlir.constant(0 : i32) : i32");
  line("llvm.call_intrinsic \"llvm.amdgcn.raw.buffer.load.lds\"(" + rsrc + ", " + lds + ", " +
       size + ", " + voff + ", " + zero + ", " + zero + ", " + zero +
       ") : (vector<4xi32>, !llvm.ptr<3>, i32, i32, i32, i32, i32) -> ()");
}

// s_waitcnt vmcnt(keep) (gfx9 encoding: vmcnt in bits 3:0 and 15:14, expcnt 6:4 and lgkmcnt
// 11:8 at their maximum, i.e. not waited for). vmcnt counts every vector memory instruction,
// so this waits for at least the LDS DMAs but the `keep` newest.
std::vector<std::string> AmdLowering::asyncWait(int keep, const std::string &) {
  const int vm = std::clamp(keep, 0, 63);
  const unsigned imm = unsigned(vm & 15) | (unsigned(vm >> 4) << 14) | (7u << 4) | (15u << 8);
  return {"rocdl.waitcnt " + std::to_string(imm)};
}

// MLIR 19's ROCDL dialect has sched.barrier and s.setprio but no sched.group.barrier: the
// intrinsic is called directly (its operands are immediates: constants).
void AmdLowering::schedGroupBarrier(unsigned mask, int size, int syncId) {
  std::string args;
  for (int64_t v : {static_cast<int64_t>(mask), static_cast<int64_t>(size),
                    static_cast<int64_t>(syncId)}) {
    std::string c = fresh();
    line(c + " = llvm.mlir.constant(" + std::to_string(v) + " : i32) : i32");
    args += (args.empty() ? "" : ", ") + c;
  }
  line("llvm.call_intrinsic \"llvm.amdgcn.sched.group.barrier\"(" + args +
       ") : (i32, i32, i32) -> ()");
}

// The pipeline over one block of a loop body (LoopSchedule::interleave,
// src/codegen/emitter/iterate.cpp):
// its instructions counted by class, then step 0's LDS reads (0x100), per MFMA (0x8) an even
// share of the other LDS reads (over all MFMAs but the last K step's) and one global load
// (0x20, from the first MFMA on, where the block has any: the GEMM's prefetch loads precede
// it), then the LDS stores (0x200). Counts of MLIR operations: LLVM may merge LDS accesses
// (ds_read2), so a group may stay short; the groups only order what they get.
void AmdLowering::interleaveMatrixOps(const std::vector<std::string> &block, int kSteps) {
  int mfma = 0, dsRead = 0, dsWrite = 0, vmemRead = 0;
  for (const std::string &t : block) {
    const bool lds = t.find("!llvm.ptr<3>") != std::string::npos;
    if (t.find("rocdl.mfma") != std::string::npos)
      ++mfma;
    else if (t.find("llvm.load ") != std::string::npos)
      ++(lds ? dsRead : vmemRead);
    else if (t.find("rocdl.raw.buffer.load") != std::string::npos)
      ++vmemRead;
    else if (t.find("llvm.store ") != std::string::npos && lds)
      ++dsWrite;
  }
  if (mfma == 0)
    return;
  constexpr unsigned kMfma = 0x8, kVmemRead = 0x20, kDsRead = 0x100, kDsWrite = 0x200;
  const int steps = std::max(kSteps, 1);
  const int first = (dsRead + steps - 1) / steps;
  const int spreadReads = std::max(1, mfma - mfma / steps);
  auto share = [](int total, int slots, int j) {
    return j >= slots ? 0 : total * (j + 1) / slots - total * j / slots;
  };
  if (first > 0)
    schedGroupBarrier(kDsRead, first, 0);
  for (int j = 0; j < mfma; ++j) {
    schedGroupBarrier(kMfma, 1, 0);
    if (int r = share(dsRead - first, spreadReads, j))
      schedGroupBarrier(kDsRead, r, 0);
    if (j < vmemRead)
      schedGroupBarrier(kVmemRead, 1, 0);
  }
  if (dsWrite > 0)
    schedGroupBarrier(kDsWrite, dsWrite, 0);
}

void AmdLowering::setPriority(int priority) {
  line("rocdl.s.setprio " + std::to_string(priority));
}

} // namespace wave::codegen
