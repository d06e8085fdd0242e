// Target lowering: the parts of MLIR emission that differ by vendor, behind one interface, so
// the emitter's generic files (codegen/emitter/) never test a vendor for them. The emitter
// (KernelEmitter, emitter/kernel_emitter.h) owns one TargetLowering, made by `create` from the
// target's vendor: AmdLowering (codegen/amd/) or NvidiaLowering (codegen/nvidia/).
//
// A lowering writes MLIR text through its host (the emitter): fresh SSA names, lines at the
// current indentation with the current `.wave` location, and the one "unsupported" report of a
// kernel. It keeps no state of its own between calls. docs/internals.md ("Target lowering")
// lists what each implementation does.
#pragma once

#include "frontend/diagnostics.h"
#include "target/target_table.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace wave::codegen {

// What the emitter offers a target lowering.
class LoweringHost {
public:
  virtual std::string fresh() = 0;                 // a new SSA name
  virtual void line(const std::string &text) = 0;  // one line of the kernel body
  virtual bool unsupported(const std::string &what, SourceRange loc) = 0; // reports; false
  virtual std::string elementType(ScalarType t) const = 0; // MLIR type, before storageType's rule

protected:
  ~LoweringHost() = default;
};

class TargetLowering {
public:
  TargetLowering(LoweringHost &host, const TargetInfo &target) : host_(host), target_(target) {}
  virtual ~TargetLowering() = default;
  // The lowering of `target`'s vendor, writing through `host`.
  static std::unique_ptr<TargetLowering> create(const TargetInfo &target, LoweringHost &host);

  // ---- storage type ----
  // The MLIR type that holds elements of type t in registers and memory ("" when none).
  virtual std::string storageType(ScalarType t) const { return host_.elementType(t); }

  // ---- math intrinsic ----
  // `res` = the LLVM math intrinsic `name` (exp2, log2, sin, cos, sqrt, fabs, floor) of `arg`,
  // `e` elements of type `inT`. By default `llvm.call_intrinsic "llvm.<name>.<type>"`.
  virtual void mathIntrinsic(const std::string &res, const std::string &name,
                             const std::string &arg, ScalarType inT, int64_t e);

  // ---- fp8 conversion ----
  // Whether the target has an exact conversion instruction from fp8 type `t` to f32 (else the
  // emitter converts in integer arithmetic, elementwise.cpp); then `res` (f32) = byte
  // `byteSel` (0..3) of the i32 `word` read as `t`.
  virtual bool hasFp8ToF32(ScalarType t) const { (void)t; return false; }
  virtual void fp8ByteToF32(const std::string &res, const std::string &word, int byteSel,
                            ScalarType t) {
    (void)res, (void)word, (void)byteSel, (void)t;
  }

  // ---- MMA instruction ----
  // One matrix instruction of kind k (not a warpgroup kind) on the lane's fragments: `a` and
  // `b` (vectors of the kind's A and B elements of type `in`) and the accumulator `c` (a vector
  // of the kind's C elements of k.acc). Returns the new accumulator.
  virtual std::string mmaInstruction(const MmaKind &k, ScalarType in, const std::string &a,
                                     const std::string &b, const std::string &c) = 0;

  // ---- masked global access ----
  // Whether a masked or possibly misaligned global access may use the target's buffer
  // instructions (emitter/access_buffer.cpp decides per access; else the generic global path).
  virtual bool bufferAccesses() const { return false; }

  // ---- buffer access (the AMD path of masked global accesses) ----
  // `res` = `type` loaded from byte offset `voff` (i32) of the resource `rsrc` (vector<4xi32>);
  // `zero` an i32 0 (the instruction's other offset and cache bits). The store writes `value`.
  virtual void bufferLoad(const std::string &res, const std::string &rsrc, const std::string &voff,
                          const std::string &zero, const std::string &type);
  virtual void bufferStore(const std::string &value, const std::string &rsrc,
                           const std::string &voff, const std::string &zero,
                           const std::string &type);

  // ---- async copy: global to shared memory without registers ----
  // Whether the target has it (16 bytes per lane; 0 source bytes fill zeros).
  virtual bool asyncCopies() const { return false; }
  // One copy of `bytes` (an i32: 16 or 0) from `src` (!llvm.ptr<1>) to `dst` (!llvm.ptr<3>).
  virtual void asyncCopy(const std::string &dst, const std::string &src, const std::string &bytes);
  // Closes the copies issued since the last commit into one group.
  virtual void asyncCommit();
  // AMD LDS DMA (TargetInfo::ldsDma): lane l's `bytes` (1, 2 or 4) at voffset `voff` (i32) of
  // the resource `rsrc` (vector<4xi32>; out of range: 0) written to LDS at `lds`
  // (!llvm.ptr<3>, wave-uniform) + bytes x l, asynchronously; asyncWait completes it.
  virtual void ldsDmaLoad(const std::string &rsrc, const std::string &lds,
                          const std::string &voff, int bytes);

  // ---- wait and fence (lines without indentation, for the barrier placement's assembly) ----
  // Waits until at most `keep` copy groups are in flight; `name` is a free SSA name for the
  // count (unused when keep is 0).
  virtual std::vector<std::string> asyncWait(int keep, const std::string &name);
  // Orders the generic proxy's shared-memory writes before the async proxy's reads that follow.
  virtual std::string asyncProxyFence() const;

  // ---- tensor copies (TMA) completed on transaction barriers ----
  // Whether the target copies 2-D boxes of a tensor into swizzled shared memory (one
  // instruction, through a tensor map the launch provides) and has barriers in shared memory
  // that count the bytes copied.
  virtual bool tensorCopies() const { return false; }
  // Initializes the barrier at `bar` (!llvm.ptr<3>, 8 bytes) for `count` arrivals.
  virtual void barrierInit(const std::string &bar, int count);
  // Makes initialized barriers visible to the copy engine (before the workgroup barrier).
  virtual void barrierInitFence();
  // One arrival at `bar` that also expects `bytes` of copies to complete on it.
  virtual void barrierArriveExpect(const std::string &bar, int64_t bytes);
  // The box at `coords` (i32 element coordinates, innermost first: column, row, ...; as many
  // as the map's rank, 1 to 5) of the tensor whose map is at `map` (!llvm.ptr<1>) into shared
  // memory at `dst` (!llvm.ptr<3>), completing on `bar`; elements outside the tensor are zeros.
  virtual void tensorCopy(const std::string &dst, const std::string &map,
                          const std::vector<std::string> &coords, const std::string &bar);
  // The box at (`col`, `row`) of the tensor whose map is at `map` written from shared memory at
  // `src` (!llvm.ptr<3>, laid out as the map's box and swizzle); elements outside the tensor
  // are not written. One bulk group per call (committed).
  virtual void tensorStore2d(const std::string &src, const std::string &map,
                             const std::string &col, const std::string &row);
  // Waits until the shared memory of this thread's committed tensor stores has been read.
  virtual void tensorStoreWaitRead();
  // Waits until the phase of `bar` of parity `parity` (an i32, 0 or 1) has completed.
  virtual void barrierWait(const std::string &bar, const std::string &parity);
  // One plain arrival at `bar` (a consumer releasing a buffer, warp specialization).
  virtual void barrierArrive(const std::string &bar);
  // ---- warp specialization (schedule.cpp, planWarpSpecialization) ----
  // The warpgroup's register limit lowered (`increase` false) or raised to `regs`.
  virtual void setRegisterLimit(int regs, bool increase);
  // The thread ends here (a producer warpgroup after its copies).
  virtual void exitThread();
  // `x` (an f32) as a new value the compiler cannot compute before this point: LLVM may move
  // arithmetic on registers across an inline-asm wait that names none of them (NVIDIA: an
  // empty side-effecting asm with a tied operand; elsewhere `x` itself).
  virtual std::string registerFence(const std::string &x) { return x; }
  // Named barrier `id` (1 .. 15) of `threads` threads: wait until that many arrived
  // (`arrive` false), or arrive without waiting (WarpSpecialization::pingpong).
  virtual void namedBarrier(int id, int threads, bool arrive);
  // > 0: the workgroup barrier is among the first `barrierThreads` threads only (the
  // consumers of a warp-specialized kernel, whose producer warpgroup takes no part).
  int barrierThreads = 0;

  // ---- warpgroup MMA (accumulators an f32Struct, operands through descriptors) ----
  virtual void warpgroupFence();
  // `res` = the product of kind k with A and B through the i64 descriptors `aDesc`, `bDesc`
  // (`bNMajor`: B is [K, N] in memory) added to the accumulator struct `acc` (`zeroC`: not
  // added, the instruction's scale-d 0; `acc` is then only the registers' initial contents).
  virtual void warpgroupMma(const std::string &res, const MmaKind &k, ScalarType in,
                            const std::string &aDesc, const std::string &bDesc,
                            const std::string &acc, bool bNMajor, bool zeroC = false);
  // The same with A in registers: `fragments` gives A's 32-bit words (called once the
  // accumulators have been taken apart, so that SSA numbering follows the text).
  virtual void warpgroupMmaRegisterA(
      const std::string &res, const MmaKind &k, ScalarType in, const std::string &acc,
      const std::function<const std::vector<std::string> &()> &fragments,
      const std::string &bDesc, bool bNMajor, bool zeroC = false);
  virtual void warpgroupCommit();
  // Waits until at most `keep` warpgroup MMA groups are in flight.
  virtual void warpgroupWait(int keep);

  // ---- matrix load from shared memory ----
  // `regs` 8x8 matrices of 16-bit elements at `ptr` (!llvm.ptr<3>, the lane's row), transposed
  // when `trans`; returns the struct `structType` of `regs` i32.
  virtual std::string matrixLoad(const std::string &ptr, unsigned regs, bool trans,
                                 const std::string &structType);

  // ---- workgroup barrier ----
  // The barrier of every thread of the workgroup that orders their shared-memory accesses
  // (the kernel's barrier() and those barrier_insertion.h places). By default `gpu.barrier`,
  // which MLIR's ROCDL and NVVM conversions lower to s_barrier and bar.sync 0 with the fences
  // shared memory needs.
  virtual std::string workgroupBarrier() const;

  // ---- instruction scheduling hints (AMD: LoopSchedule::interleave) ----
  // After the lines `block` of one block of a loop body (MFMAs over `kSteps` K steps and the
  // memory instructions around them): hints that order them for the scheduler (AMD: a
  // llvm.amdgcn.sched.group.barrier pipeline). The wave's issue priority (s_setprio). Nothing
  // by default.
  virtual void interleaveMatrixOps(const std::vector<std::string> &block, int kSteps) {
    (void)block, (void)kSteps;
  }
  virtual void setPriority(int priority) { (void)priority; }

  // ---- kernel ----
  // Attributes after known_block_size on the gpu.func (", name = value", or ""). `movesRegisters`:
  // the kernel hands registers between warpgroups (setmaxnreg, warp specialization).
  virtual std::string kernelAttributes(const std::string &block, bool movesRegisters) const {
    (void)block, (void)movesRegisters;
    return "";
  }

  // ---- shuffle ----
  // `res`'s lane's value of `x` (a 32-bit type `ty`) from the lane that `mode` (xor or idx) and
  // the i32 `offset` name, within groups of `width` lanes. By default `gpu.shuffle`.
  virtual std::string shuffle32(const char *mode, const std::string &x, const std::string &ty,
                                const std::string &offset, int64_t width);

protected:
  std::string fresh() { return host_.fresh(); }
  void line(const std::string &s) { host_.line(s); }
  bool unsupported(const std::string &what, SourceRange loc) {
    return host_.unsupported(what, loc);
  }
  std::string mlirType(ScalarType t) const { return storageType(t); }
  std::string vecType(ScalarType t, int64_t e) const {
    return e == 1 ? mlirType(t) : "vector<" + std::to_string(e) + "x" + mlirType(t) + ">";
  }
  // `x` of type `from` as type `to` (llvm.bitcast; `x` itself when the types are the same).
  std::string bitcast(const std::string &x, const std::string &from, const std::string &to);

  // Reports that this target has no `what` (legalize and the plan passes keep the emitter
  // from asking: reaching it is a wavec bug).
  void missing(const std::string &what);

  LoweringHost &host_;
  const TargetInfo &target_;
};

// "!llvm.struct<(f32, ...)>" of n f32: the accumulator registers of a warpgroup MMA.
std::string f32StructType(int64_t n);

} // namespace wave::codegen
