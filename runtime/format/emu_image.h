// The emulator image ("WAVEEMU1"): the device-level program wavec produced for a GPU target,
// translated from the final target LLVM module (src/codegen/emu_translate.cpp) into a compact
// register bytecode that the CPU emulator (runtime/src/emu/) interprets.
//
// This header is shared by the translator (in libwavec_codegen) and the interpreter (in
// libwave_runtime): constants and plain structs only, no LLVM, no runtime internals.
//
// ---- File layout (all integers little-endian; `str` = u32 length + bytes, no terminator) -----
//   magic      8 bytes "WAVEEMU1"
//   u32        version (kImageVersion)
//   u64        checksum: imageChecksum() (64-bit FNV-1a) of every byte after this field, so a
//              damaged image is refused at load instead of running (kPayloadOffset)
//   str        target ("gfx942", "sm_90", ...)
//   u32        wave size of the target (64 CDNA, 32 RDNA3 / NVIDIA)
//   u32        string count, then each `str` (file names of source locations)
//   u32        kernel count, then per kernel:
//     str      name
//     u32 x3   block size (x, y, z) the kernel was compiled for (0 = any)
//     u32      static shared (LDS) bytes; dynamic shared memory starts at this offset
//     u32      frame bytes: the per-thread register file (constants first, then SSA values)
//     u32      argument count, then per argument: u32 frame slot, u32 offset in the packed
//              argument buffer, u32 size in bytes
//     u32      constant bytes, then the bytes (copied to frame offset 0 at thread start)
//     u32      instruction count, then `Inst` records (32 bytes each, fields in order)
//     u32      extra-table length, then u32 words (variable-length operands, see Op)
//     u32      location count, then per location: u32 string index, u32 line, u32 col
//              (location 0 is "unknown": string index 0xffffffff)
//
// ---- Values -------------------------------------------------------------------------------
// Every SSA value lives at a byte offset ("slot") of the thread's frame, 8-byte aligned, holding
// `lanes` elements of `type` packed (i1 takes one byte, 0 or 1). Pointers are 8 bytes: global
// pointers are host addresses; shared-memory (LDS) pointers are byte offsets into the
// workgroup's shared memory. Struct values (cmpxchg results, mma.sync results) are their fields
// at natural alignment. Phi nodes are slots written by ParCopy on the incoming edges.
//
// The loader (runtime/src/emu/loader.cpp) checks the checksum, then validates every field of an
// image (indices, slot ranges against the frame size, branch targets, the extra table) and
// rejects anything else with WAVE_ERROR_INVALID_IMAGE: an image whose bytes were changed does
// not load, and one whose checksum was recomputed over bad content still cannot make the
// interpreter read outside its own buffers.
#ifndef WAVE_EMU_IMAGE_H
#define WAVE_EMU_IMAGE_H

#include <cstddef>
#include <cstdint>

namespace wave::emu {

constexpr char kImageMagic[8] = {'W', 'A', 'V', 'E', 'E', 'M', 'U', '1'};
// Version 2 added the checksum and the asynchronous copies (Op::AsyncCopy, AsyncCommit,
// AsyncWait; version 1 images did a cp.async as a load and a store at issue). Version 3 added
// named barriers: Op::Barrier's barrier ID (aux) and Op::BarArrive (version 2 images ran every
// barrier as one workgroup-wide barrier).
constexpr uint32_t kImageVersion = 3;
constexpr uint32_t kBarrierIds = 16; // named barriers 0..15 per workgroup (PTX bar.sync/arrive)
constexpr uint32_t kChecksumOffset = 12; // after the magic and the version
constexpr uint32_t kPayloadOffset = 20;  // the checksum covers [kPayloadOffset, end)
constexpr uint32_t kNoString = 0xffffffffu;
constexpr uint32_t kMaxLanes = 128;       // widest vector value (aux fields hold a lane count)
constexpr uint32_t kMaxFrameBytes = 1u << 20;

// 64-bit FNV-1a of `size` bytes: the image checksum (of the bytes from kPayloadOffset on).
inline uint64_t imageChecksum(const void *data, size_t size) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i)
    h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

enum class Type : uint8_t { I1, I8, I16, I32, I64, F16, BF16, F32, F64, Ptr, Count };

inline uint32_t typeSize(Type t) {
  static const uint8_t sizes[] = {1, 1, 2, 4, 8, 2, 2, 4, 8, 8};
  return t < Type::Count ? sizes[static_cast<unsigned>(t)] : 0;
}
inline bool isFloatType(Type t) {
  return t == Type::F16 || t == Type::BF16 || t == Type::F32 || t == Type::F64;
}

// Address spaces (the imm of memory operations): LLVM's numbering on AMDGPU; NVPTX's generic (0)
// and global (1) are both Global, its shared (3) is Shared.
enum class Space : uint8_t { Global = 1, Shared = 3 };

// Special registers (Op::Special imm).
enum class Special : uint8_t {
  TidX, TidY, TidZ, WgX, WgY, WgZ, NtidX, NtidY, NtidZ, NwgX, NwgY, NwgZ, Lane, WaveSize, Count
};

// Comparison predicates (aux of ICmp/FCmp): LLVM's CmpInst::Predicate values.
// Float: 0 false, 1 oeq, 2 ogt, 3 oge, 4 olt, 5 ole, 6 one, 7 ord, 8 uno, 9 ueq, 10 ugt,
// 11 uge, 12 ult, 13 ule, 14 une, 15 true. Int: 32 eq, 33 ne, 34 ugt, 35 uge, 36 ult, 37 ule,
// 38 sgt, 39 sge, 40 slt, 41 sle.

// Atomic read-modify-write kinds (aux of AtomicRmw).
enum class Rmw : uint8_t { Xchg, Add, Sub, And, Or, Xor, Max, Min, UMax, UMin, FAdd, FMax, FMin,
                           Count };

// Matrix and lane-exchange kinds (imm of Mma / aux of WaveOp).
enum class Mma : uint8_t {
  Mfma16x16x16F16, Mfma16x16x16BF16, Mfma32x32x8F16, Mfma32x32x8BF16, Mfma16x16x16I8,
  Mfma32x32x8I8, Mfma16x16x32Fp8, Mfma32x32x16Fp8, Mfma16x16x32I8, Mfma32x32x16I8,
  Wmma16x16x16F16, Wmma16x16x16BF16, Mma16x8x16F16, Mma16x8x16BF16, Mma16x8x8F16,
  Mfma16x16x32Bf8, Mfma32x32x16Bf8, Count
};
enum class WaveOp : uint8_t {
  Bpermute,      // a: i32 byte address, b: i32 data (AMD ds_bpermute)
  Readlane,      // a: value (type), b: i32 lane
  Readfirstlane, // a: value
  Ballot,        // a: i1; result i32 or i64 (type)
  ShflIdx, ShflUp, ShflDown, ShflBfly, // NVIDIA shfl.sync: a value, b i32 b, c i32 c; imm bit0:
                                       // result is {T, i1}
  Ldmatrix,      // a: shared pointer; imm = count (1, 2, 4) | 8 for .trans; result count x i32
  Count
};

// Opcodes. Fields: dst/a/b/c are frame slots unless said otherwise; `type`/`lanes` describe the
// result; `aux` the source type of casts/compares or a sub-kind.
enum class Op : uint16_t {
  // control
  Ret,         // end of the thread
  Br,          // a: target pc
  CondBr,      // a: i1 cond; b: true pc; c: false pc
  Switch,      // a: value (type, scalar int); imm: extra [n, default pc, (value lo, value hi, pc)*n]
  ParCopy,     // imm: extra [n, (dst, src, bytes)*n] copied in parallel (phi moves on an edge)
  Trap,        // llvm.trap / unreachable: fails the launch
  Barrier,     // barrier aux (the ID, 0..15; s_barrier, gpu.barrier and bar.sync 0 are 0): the
               // thread arrives and waits until the barrier completes. imm 0: it completes when
               // every thread that has not ended waits at it; imm N > 0 (bar.sync ID, N, a
               // multiple of 32): when N threads have arrived in this phase (BarArrive counts)
  // data movement
  Copy,        // dst <- a, imm bytes
  Special,     // dst (i32 or i64 by type) <- special register imm
  // arithmetic, elementwise over lanes of `type`
  Add, Sub, Mul, UDiv, SDiv, URem, SRem, Shl, LShr, AShr, And, Or, Xor,
  SMin, SMax, UMin, UMax,
  FAdd, FSub, FMul, FDiv, FRem, MinNum, MaxNum, Minimum, Maximum, CopySign, Pow,
  FNeg, FAbs, Sqrt, Rsq, Rcp, Exp, Exp2, Log, Log2, Sin, Cos, Tanh, Floor, Ceil, Trunc, Round,
  Rint, Abs, Ctpop, Ctlz, Cttz,
  Fma,         // a*b + c
  Select,      // a: i1 (aux 1: scalar condition, else lanes), b, c
  ICmp, FCmp,  // dst i1 x lanes; a, b of type aux; imm predicate
  // casts: dst `type` <- a of type aux, lanes each
  TruncI, ZExt, SExt, FPTrunc, FPExt, FPToSI, FPToUI, SIToFP, UIToFP,
  // vectors
  Extract,     // dst scalar <- a[b] (b: i64 index slot); aux: source lanes
  Insert,      // dst (lanes) <- a with a[c] = b (c: i64 index slot)
  Shuffle,     // dst (lanes) <- lanes of a ++ b; imm: extra [src lanes, index*lanes] (-1: zero)
  // memory (imm: Space; aux: 1 = the value is read-only / atomic hints unused)
  PtrAdd,      // dst ptr <- a + b (i64) * imm (signed scale)
  PtrAddConst, // dst ptr <- a + (int32_t)imm
  PtrToInt, IntToPtr, // dst <- a (int of type / aux)
  Load,        // dst (type x lanes) <- *a
  Store,       // *a <- b (type x lanes)
  MaskedLoad,  // dst <- a with lanes where b (i1 x lanes), else c
  MaskedStore, // *a <- b where c (i1 x lanes)
  AtomicRmw,   // dst <- old *a; *a <- op(old, b); aux Rmw; type scalar
  CmpXchg,     // dst {T, i1} <- *a == b ? (*a = c, old) : old
  // per-lane AMD helpers
  Mbcnt,       // dst i32 <- b + popcount(a & lanes below, in the 32-bit half aux (0 lo, 1 hi))
  CvtFp8ToF32, // dst f32 <- fp8 byte b of a (i32); aux 0 fnuz e4m3, 1 fnuz e5m2
  CvtPkF32ToFp8, // dst i32 <- c with half imm (0 lo, 1 hi) = fp8(a), fp8(b); aux as above
  CvtBf16Pack,   // reserved
  // wave-collective (the thread stops until its wave reaches the instruction)
  Wave,        // aux WaveOp; a, b, c, imm as per WaveOp
  Mma,         // imm Mma kind; dst D <- A (a) * B (b) + C (c), each contiguous per lane
  // vector reductions (llvm.vector.reduce.*): dst scalar `type` <- reduce of a (aux lanes);
  // imm Reduce kind; FAdd/FMul start from b (ordered, like LLVM without reassoc)
  Reduce,
  // AMD raw buffer accesses (llvm.amdgcn.raw.buffer.load/store with a <4 x i32> descriptor V#:
  // base = w0 | (w1 & 0xffff) << 32, stride = (w1 >> 16) & 0x3fff, which must be 0 (raw),
  // num_records = w2, word 3 = w3). The address is base + soffset + voffset; the range check
  // looks at voffset alone: an access of at most 4 bytes is one unit, a longer one is checked
  // per 32-bit word j at sat32(voffset + 4j) (the rule LLVM's AMDGPUUsage states under "Relaxed
  // Buffer OOB Mode"), and a unit is in range when it ends at or before num_records. Out-of-range units read 0 / are not written; in-range
  // units still go through the global out-of-bounds detector. aux bit 0: the gfx10+ rules,
  // under which word 3's OOB_SELECT (bits 28-29) must be 3 (check) or 2 (no check); without it
  // (gfx9) word 3's data format (bits 15-18) must be nonzero. Descriptors outside these rules
  // (strides, add-tid, other OOB modes) fail the launch.
  BufferLoad,  // dst (type x lanes) <- descriptor a, voffset b (u32), soffset c (u32)
  BufferStore, // descriptor a, data b (type x lanes), voffset c, soffset dst
  // NVIDIA cp.async: per-thread asynchronous copies from global to shared memory, in groups.
  // The source is read when the copy is issued; its destination is written only when a wait
  // completes the copy's group. Until then the destination bytes are "in flight": any access
  // to them (a read, a write, another copy) is reported as a race, so a wait that leaves a
  // group in flight too long is caught; at the wait the write counts as the waiting thread's
  // store in that barrier epoch (other threads need a barrier after it).
  AsyncCopy,   // a: shared destination pointer, b: global source pointer, c: i32 source
               // bytes (cp.async src-size; beyond it the copy writes zeros); imm: bytes (1-16)
  AsyncCommit, // closes the thread's open group (cp.async.commit_group)
  AsyncWait,   // imm N: completes every committed group but the N most recent
               // (cp.async.wait_group N; wait_all is AsyncCommit + AsyncWait 0)
  // AMD LDS DMA (llvm.amdgcn.raw.buffer.load.lds): the buffer load of imm bytes (1, 2 or 4)
  // at descriptor a, voffset c, soffset dst, with Op::BufferLoad's descriptor rules and range
  // check (aux bit 0 likewise), lands in shared memory at the wave-uniform base b plus
  // imm * (the lane's index in its wave), asynchronously: the copy is its own group of
  // Op::AsyncCopy's queue, in flight until a wait completes it (an AMD s_waitcnt with vmcnt N
  // translates to AsyncWait N: every DMA of the thread but the N newest lands).
  BufferLoadLds,
  // NVIDIA wgmma.mma_async (sm_90a), m64nNk16 (f16/bf16) or m64nNk32 (e4m3/e5m2) with f32
  // accumulators: warpgroup-collective, executed per warp (the thread stops until its warp
  // reaches it, like Wave): warp w of a warpgroup (w = the warp's index in the workgroup mod 4)
  // computes rows 16w .. 16w + 15 of the 64 x N product. dst: D, N/2 f32 per lane; c: C (the
  // same layout); a: the A matrix descriptor (i64) or, with kWgmmaRegA, A's fragment (4 x i32);
  // b: the B matrix descriptor (i64). Descriptors (PTX ISA "Matrix Descriptor Format"): start
  // address >> 4 (bits 0-13), leading byte offset >> 4 (16-29), stride byte offset >> 4
  // (32-45), base offset (49-51, must be 0), swizzle (62-63: 1 128-byte, 2 64-byte, 3 32-byte;
  // 0, no swizzle, is not modelled and fails the launch). imm: N (bits 0-11) | flags << 12;
  // aux: WgmmaElem. The product is computed at issue (its shared-memory reads happen then); the
  // bytes read stay in flight until Op::WgmmaWait retires the group; wgmma.fence translates to
  // nothing.
  Wgmma,
  // NVIDIA mbarriers (sm_90a; the 8-byte barrier object at a shared-memory offset, its state
  // kept by the interpreter): pending arrivals (reset to the init count when a phase
  // completes), a transaction byte count and the phase number. A phase completes when no
  // arrival and no transaction byte is pending.
  MbarInit,    // a: i32 shared offset; imm: arrival count (mbarrier.init)
  MbarArrive,  // a: i32 shared offset; imm: transaction bytes expected first (arrive.expect_tx;
               // 0: mbarrier.arrive)
  MbarWait,    // a: i32 shared offset; b: i32 parity. Blocks the thread until the phase of that
               // parity has completed (try_wait.parity in a loop); the scheduler runs others
  // TMA (cp.async.bulk.tensor.Nd) through an EmuTensorMap in global memory (built by the
  // runtime's wave_tensor_map on an emulator device): a box at coordinates c0 (innermost dim,
  // columns), c1, ... Loads land at issue (zeros outside the tensor in any dim) in the box's
  // row-major order, swizzled like Op::Wgmma's addresses, then complete the box's bytes on the
  // mbarrier; stores write the box's elements inside the tensor from shared memory (clipped).
  // imm: N, the coordinates (the map's rank; 0 reads as 2).
  TmaLoad,     // a: i32 shared destination; b: map pointer; c: N x i32; dst: i32 mbarrier
  TmaStore,    // a: i32 shared source; b: map pointer; c: N x i32
  // wgmma.commit_group / wait_group N (per warp: the instructions of lane 0 count). The shared
  // memory an Op::Wgmma reads stays "read in flight" until a wait retires its group (every
  // committed group but the N newest): a write to it before then is a race.
  WgmmaCommit,
  WgmmaWait,   // imm N
  // NVIDIA bar.arrive aux, imm (ID 0..15, N > 0 a multiple of 32): the thread counts as an
  // arrival on barrier aux (completing it if that makes N) and goes on without waiting.
  BarArrive,
  Count
};

// The emulator's TMA tensor map (wave_tensor_map on an emulator device), kTensorMapBytes in
// global memory: a tensor of `rank` (1..5) dims, row-major (dims[rank - 1] contiguous),
// strides[i] the byte stride of dim i < rank - 1, copied in boxes of box[i] elements per dim.
constexpr char kTensorMapMagic[8] = {'W', 'A', 'V', 'E', 'T', 'M', 'A', 'P'};
constexpr uint32_t kTensorMapBytes = 128;
constexpr uint32_t kTensorMapMaxRank = 5;
struct EmuTensorMap {
  char magic[8];
  uint64_t base;
  uint32_t rank, elementBytes, swizzleBytes, reserved; // swizzle 0, 32, 64 or 128
  uint64_t dims[kTensorMapMaxRank];
  uint64_t strides[kTensorMapMaxRank - 1];
  uint32_t box[kTensorMapMaxRank];
};
static_assert(sizeof(EmuTensorMap) <= kTensorMapBytes, "the map fits its allocation");

enum class WgmmaElem : uint8_t { F16, BF16, E4M3, E5M2, Count };
constexpr uint32_t kWgmmaRegA = 1;    // A from registers (else from its descriptor)
constexpr uint32_t kWgmmaTransA = 2;  // imm-trans-a 1: A is M-major in shared memory
constexpr uint32_t kWgmmaTransB = 4;  // imm-trans-b 1: B is N-major in shared memory
constexpr uint32_t kWgmmaZeroC = 8;   // scale-d false: D = A * B
constexpr uint32_t kWgmmaNegA = 16;   // imm-scale-a -1
constexpr uint32_t kWgmmaNegB = 32;   // imm-scale-b -1
constexpr uint32_t kWgmmaFlags = 63;

enum class Reduce : uint8_t { Add, Mul, And, Or, Xor, SMax, SMin, UMax, UMin, FAdd, FMul, FMax,
                              FMin, FMaximum, FMinimum, Count };

struct Inst {
  uint16_t op;
  uint8_t type;
  uint8_t aux;
  uint32_t lanes;
  uint32_t dst, a, b, c;
  uint32_t imm;
  uint32_t loc;
};
static_assert(sizeof(Inst) == 32, "Inst is 32 bytes in the file");

// An instruction of the image (the translator's and the tests' hand-built images).
inline Inst makeInst(Op op, Type type, uint32_t lanes, uint32_t dst, uint32_t a, uint32_t b,
                     uint32_t c, uint32_t imm, uint8_t aux, uint32_t loc) {
  Inst i{};
  i.op = uint16_t(op);
  i.type = uint8_t(type);
  i.aux = aux;
  i.lanes = lanes;
  i.dst = dst;
  i.a = a;
  i.b = b;
  i.c = c;
  i.imm = imm;
  i.loc = loc;
  return i;
}

// Per-lane operand sizes of the matrix kinds (bytes of A, B, C/D per lane) and their names.
struct MmaShape {
  const char *name;
  uint32_t waveSize, m, n, k;
  uint32_t aBytes, bBytes, cBytes;
};
inline const MmaShape &mmaShape(Mma kind) {
  static const MmaShape shapes[] = {
      {"mfma.f32.16x16x16f16", 64, 16, 16, 16, 8, 8, 16},
      {"mfma.f32.16x16x16bf16.1k", 64, 16, 16, 16, 8, 8, 16},
      {"mfma.f32.32x32x8f16", 64, 32, 32, 8, 8, 8, 64},
      {"mfma.f32.32x32x8bf16.1k", 64, 32, 32, 8, 8, 8, 64},
      {"mfma.i32.16x16x16i8", 64, 16, 16, 16, 4, 4, 16},
      {"mfma.i32.32x32x8i8", 64, 32, 32, 8, 4, 4, 64},
      {"mfma.f32.16x16x32.fp8.fp8", 64, 16, 16, 32, 8, 8, 16},
      {"mfma.f32.32x32x16.fp8.fp8", 64, 32, 32, 16, 8, 8, 64},
      {"mfma.i32.16x16x32.i8", 64, 16, 16, 32, 8, 8, 16},
      {"mfma.i32.32x32x16.i8", 64, 32, 32, 16, 8, 8, 64},
      {"wmma.f32.16x16x16.f16", 32, 16, 16, 16, 32, 32, 32},
      {"wmma.f32.16x16x16.bf16", 32, 16, 16, 16, 32, 32, 32},
      {"mma.m16n8k16.row.col.f32.f16", 32, 16, 8, 16, 16, 8, 16},
      {"mma.m16n8k16.row.col.f32.bf16", 32, 16, 8, 16, 16, 8, 16},
      {"mma.m16n8k8.row.col.f32.f16", 32, 16, 8, 8, 8, 4, 16},
      {"mfma.f32.16x16x32.bf8.bf8", 64, 16, 16, 32, 8, 8, 16},
      {"mfma.f32.32x32x16.bf8.bf8", 64, 32, 32, 16, 8, 8, 64},
  };
  return shapes[static_cast<unsigned>(kind) < static_cast<unsigned>(Mma::Count)
                    ? static_cast<unsigned>(kind)
                    : 0];
}

} // namespace wave::emu

#endif // WAVE_EMU_IMAGE_H
