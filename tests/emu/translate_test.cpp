// The translator (src/codegen/emu_translate.cpp) on hand-written target LLVM IR, run on the
// emulator: the intrinsics the code generator emits for lane exchanges, shared memory, barriers,
// atomics, masked stores, loops with phis, MFMA (gfx942) and ldmatrix + mma.sync (sm_90), each
// checked against values the test computes itself; and the error for an unsupported intrinsic.
#include "codegen/emu_translate.h"
#include "emu/numeric.h"
#include "wave/runtime.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace {

std::string translate(const char *ir, const wave::EmuKernelInfo &k, const char *target,
                      std::string *error = nullptr) {
  llvm::LLVMContext ctx;
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> m = llvm::parseAssemblyString(ir, diag, ctx);
  if (!m) {
    std::string s;
    llvm::raw_string_ostream os(s);
    diag.print("test", os);
    ADD_FAILURE() << s;
    return "";
  }
  std::string image, why;
  bool ok = wave::translateToEmuImage(*m, {k}, target, k.waveSize, image, why);
  if (error)
    *error = why;
  else
    EXPECT_TRUE(ok) << why;
  return ok ? image : "";
}

struct Launcher {
  wave_device_t dev = nullptr;
  wave_module_t mod = nullptr;
  wave_kernel_t kernel = nullptr;
  Launcher(const char *uri, const std::string &image, const char *name) {
    EXPECT_EQ(wave_device_open(uri, &dev), WAVE_SUCCESS) << wave_last_error();
    EXPECT_EQ(wave_module_load_data(dev, image.data(), image.size(), &mod), WAVE_SUCCESS)
        << wave_last_error();
    EXPECT_EQ(wave_module_get_kernel(mod, name, &kernel), WAVE_SUCCESS) << wave_last_error();
  }
  ~Launcher() {
    wave_module_unload(mod);
    wave_device_close(dev);
  }
  void *alloc(size_t bytes, const void *init = nullptr) {
    void *p = nullptr;
    EXPECT_EQ(wave_malloc(dev, bytes, &p), WAVE_SUCCESS);
    if (init)
      EXPECT_EQ(wave_memcpy_htod(dev, p, init, bytes), WAVE_SUCCESS);
    else
      EXPECT_EQ(wave_memset(dev, p, 0, bytes), WAVE_SUCCESS);
    return p;
  }
  template <class T> std::vector<T> read(void *p, size_t n) {
    std::vector<T> v(n);
    EXPECT_EQ(wave_memcpy_dtoh(dev, v.data(), p, n * sizeof(T)), WAVE_SUCCESS);
    return v;
  }
  wave_status_t launch(uint32_t grid, uint32_t block, const std::vector<void *> &args) {
    uint32_t g[3] = {grid, 1, 1}, b[3] = {block, 1, 1};
    return wave_launch(dev, nullptr, kernel, g, b, 0, args.data(), args.size() * sizeof(void *));
  }
};

const char *kAmd = R"(
target datalayout = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-p7:160:256:256:32-p8:128:128-p9:192:256:256:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7:8:9"
target triple = "amdgcn-amd-amdhsa"

@lds = internal addrspace(3) global [64 x i32] undef, align 16

define amdgpu_kernel void @amd_ops(ptr addrspace(1) %out, ptr addrspace(1) %counter,
                                   ptr addrspace(1) %a, ptr addrspace(1) %b,
                                   ptr addrspace(1) %d) {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %lo = call i32 @llvm.amdgcn.mbcnt.lo(i32 -1, i32 0)
  %lane = call i32 @llvm.amdgcn.mbcnt.hi(i32 -1, i32 %lo)
  %rev = sub i32 63, %lane
  %addr = shl i32 %rev, 2
  %data = mul i32 %tid, 3
  %perm = call i32 @llvm.amdgcn.ds.bpermute(i32 %addr, i32 %data)
  %slot = getelementptr [64 x i32], ptr addrspace(3) @lds, i32 0, i32 %tid
  store i32 %perm, ptr addrspace(3) %slot, align 4
  call void @llvm.amdgcn.s.barrier()
  %n1 = add i32 %tid, 1
  %n = and i32 %n1, 63
  %nslot = getelementptr [64 x i32], ptr addrspace(3) @lds, i32 0, i32 %n
  %v = load i32, ptr addrspace(3) %nslot, align 4
  %tid64 = zext i32 %tid to i64
  %o = getelementptr i32, ptr addrspace(1) %out, i64 %tid64
  store i32 %v, ptr addrspace(1) %o, align 4
  %old = atomicrmw add ptr addrspace(1) %counter, i32 1 syncscope("agent") monotonic, align 4
  %c1 = getelementptr i32, ptr addrspace(1) %counter, i64 1
  %oldmax = atomicrmw max ptr addrspace(1) %c1, i32 %tid syncscope("agent") monotonic, align 4
  %c2 = getelementptr i32, ptr addrspace(1) %counter, i64 2
  %cx = cmpxchg ptr addrspace(1) %c2, i32 0, i32 %n1 monotonic monotonic, align 4
  %ai = mul i64 %tid64, 4
  %ap = getelementptr half, ptr addrspace(1) %a, i64 %ai
  %av = load <4 x half>, ptr addrspace(1) %ap, align 8
  %bp = getelementptr half, ptr addrspace(1) %b, i64 %ai
  %bv = load <4 x half>, ptr addrspace(1) %bp, align 8
  %acc = call <4 x float> @llvm.amdgcn.mfma.f32.16x16x16f16(<4 x half> %av, <4 x half> %bv, <4 x float> zeroinitializer, i32 0, i32 0, i32 0)
  %dp = getelementptr float, ptr addrspace(1) %d, i64 %ai
  store <4 x float> %acc, ptr addrspace(1) %dp, align 16
  %mo = add i64 %ai, 64
  %mp = getelementptr i32, ptr addrspace(1) %out, i64 %mo
  call void @llvm.masked.store.v4i32.p1(<4 x i32> <i32 1, i32 2, i32 3, i32 4>, ptr addrspace(1) %mp, i32 4, <4 x i1> <i1 true, i1 false, i1 true, i1 false>)
  br label %loop

loop:
  %i = phi i32 [ 0, %entry ], [ %inext, %loop ]
  %x = phi i32 [ 10, %entry ], [ %y, %loop ]
  %y = phi i32 [ 20, %entry ], [ %x, %loop ]
  %inext = add i32 %i, 1
  %more = icmp ult i32 %inext, %tid
  br i1 %more, label %loop, label %done

done:
  %rv = insertelement <4 x i32> <i32 5, i32 -7, i32 9, i32 0>, i32 %tid, i32 3
  %rmax = call i32 @llvm.vector.reduce.smax.v4i32(<4 x i32> %rv)
  %rsum = call i32 @llvm.vector.reduce.add.v4i32(<4 x i32> %rv)
  %rf = call float @llvm.vector.reduce.fadd.v4f32(float 0.5, <4 x float> <float 1.0, float 2.0, float 3.0, float 4.0>)
  %rfi = fptosi float %rf to i32
  %r1 = mul i32 %rmax, 1000
  %r2 = add i32 %r1, %rsum
  %r3 = mul i32 %r2, 100
  %r4 = add i32 %r3, %rfi
  %rp = add i64 %tid64, 384
  %rpp = getelementptr i32, ptr addrspace(1) %out, i64 %rp
  store i32 %r4, ptr addrspace(1) %rpp, align 4
  %sw = sub i32 %x, %y
  %lp = add i64 %tid64, 320
  %lo2 = getelementptr i32, ptr addrspace(1) %out, i64 %lp
  store i32 %sw, ptr addrspace(1) %lo2, align 4
  ret void
}

declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.mbcnt.lo(i32, i32)
declare i32 @llvm.amdgcn.mbcnt.hi(i32, i32)
declare i32 @llvm.amdgcn.ds.bpermute(i32, i32)
declare void @llvm.amdgcn.s.barrier()
declare <4 x float> @llvm.amdgcn.mfma.f32.16x16x16f16(<4 x half>, <4 x half>, <4 x float>, i32, i32, i32)
declare void @llvm.masked.store.v4i32.p1(<4 x i32>, ptr addrspace(1), i32, <4 x i1>)
declare i32 @llvm.vector.reduce.smax.v4i32(<4 x i32>)
declare i32 @llvm.vector.reduce.add.v4i32(<4 x i32>)
declare float @llvm.vector.reduce.fadd.v4f32(float, <4 x float>)
)";

TEST(EmuTranslate, AmdLaneExchangeSharedAtomicsMfmaMaskedPhis) {
  std::string image = translate(kAmd, {"amd_ops", {64, 1, 1}, 64}, "gfx942");
  ASSERT_FALSE(image.empty());
  Launcher r("emu:gfx942", image, "amd_ops");
  std::mt19937 rng(99);
  std::vector<uint16_t> a(256), b(256);
  std::vector<float> af(256), bf(256);
  for (int i = 0; i < 256; ++i) {
    af[i] = float(int(rng() % 17) - 8) / 4;
    bf[i] = float(int(rng() % 17) - 8) / 4;
    a[i] = wave::emu::floatToHalf(af[i]);
    b[i] = wave::emu::floatToHalf(bf[i]);
  }
  void *out = r.alloc(4 * 448), *counter = r.alloc(12), *da = r.alloc(512, a.data()),
       *db = r.alloc(512, b.data()), *dd = r.alloc(1024);
  const uint32_t grid = 3;
  ASSERT_EQ(r.launch(grid, 64, {out, counter, da, db, dd}), WAVE_SUCCESS) << wave_last_error();
  auto o = r.read<int32_t>(out, 448);
  for (int t = 0; t < 64; ++t) {
    int rmax = std::max(9, t), rsum = 5 - 7 + 9 + t;
    EXPECT_EQ(o[384 + t], (rmax * 1000 + rsum) * 100 + 10) << "reductions, thread " << t;
    EXPECT_EQ(o[t], 3 * (63 - (t + 1) % 64)) << "bpermute + shared, thread " << t;
    int x = 10, y = 20;
    for (int i = 1; i < std::max(t, 1); ++i)
      std::swap(x, y);
    EXPECT_EQ(o[320 + t], x - y) << "phi swap, thread " << t;
    EXPECT_EQ(o[64 + 4 * t], 1);
    EXPECT_EQ(o[64 + 4 * t + 1], 0);
    EXPECT_EQ(o[64 + 4 * t + 2], 3);
    EXPECT_EQ(o[64 + 4 * t + 3], 0);
  }
  auto c = r.read<int32_t>(counter, 3);
  EXPECT_EQ(c[0], int(64 * grid));
  EXPECT_EQ(c[1], 63);
  EXPECT_EQ(c[2], 1); // only thread 0 of the first workgroup finds 0
  // MFMA 16x16x16: lane l holds A[l%16][4(l/16)+g], B[4(l/16)+g][l%16], D[4(l/16)+g][l%16].
  float A[16][16], B[16][16];
  for (int l = 0; l < 64; ++l)
    for (int g = 0; g < 4; ++g) {
      A[l % 16][4 * (l / 16) + g] = af[4 * l + g];
      B[4 * (l / 16) + g][l % 16] = bf[4 * l + g];
    }
  auto d = r.read<float>(dd, 256);
  for (int l = 0; l < 64; ++l)
    for (int g = 0; g < 4; ++g) {
      int m = 4 * (l / 16) + g, n = l % 16;
      float want = 0;
      for (int k = 0; k < 16; ++k)
        want += A[m][k] * B[k][n];
      EXPECT_EQ(d[4 * l + g], want) << "lane " << l << " g " << g;
    }
}

const char *kNvidia = R"(
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@smem = internal addrspace(3) global [256 x half] undef, align 16

define void @nv_ops(ptr addrspace(1) %in, ptr addrspace(1) %bt, ptr addrspace(1) %out,
                    ptr addrspace(1) %dout) {
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %t64 = zext i32 %tid to i64
  %base = mul i64 %t64, 8
  %ip = getelementptr half, ptr addrspace(1) %in, i64 %base
  %iv = load <8 x half>, ptr addrspace(1) %ip, align 16
  %sp = getelementptr half, ptr addrspace(3) @smem, i64 %base
  store <8 x half> %iv, ptr addrspace(3) %sp, align 16
  call void @llvm.nvvm.barrier0()
  ; lane l -> row l%16, column 8*(l/16) of the 16x16 tile
  %row = and i64 %t64, 15
  %hi = lshr i64 %t64, 4
  %r16 = mul i64 %row, 16
  %c8 = mul i64 %hi, 8
  %off = add i64 %r16, %c8
  %lp = getelementptr half, ptr addrspace(3) @smem, i64 %off
  %lm = call { i32, i32, i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16(ptr addrspace(3) %lp)
  %lt = call { i32, i32, i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16(ptr addrspace(3) %lp)
  %t0 = extractvalue { i32, i32, i32, i32 } %lt, 0
  %t1 = extractvalue { i32, i32, i32, i32 } %lt, 1
  %t2 = extractvalue { i32, i32, i32, i32 } %lt, 2
  %t3 = extractvalue { i32, i32, i32, i32 } %lt, 3
  %o4 = mul i64 %t64, 4
  %op = getelementptr i32, ptr addrspace(1) %out, i64 %o4
  %tv0 = insertelement <4 x i32> undef, i32 %t0, i32 0
  %tv1 = insertelement <4 x i32> %tv0, i32 %t1, i32 1
  %tv2 = insertelement <4 x i32> %tv1, i32 %t2, i32 2
  %tv3 = insertelement <4 x i32> %tv2, i32 %t3, i32 3
  store <4 x i32> %tv3, ptr addrspace(1) %op, align 16
  %sh = call i32 @llvm.nvvm.shfl.sync.bfly.i32(i32 -1, i32 %tid, i32 5, i32 31)
  %odd = trunc i32 %tid to i1
  %bal = call i32 @llvm.nvvm.vote.ballot.sync(i32 -1, i1 %odd)
  %sx = xor i32 %sh, %bal
  %so = add i64 %t64, 128
  %sop = getelementptr i32, ptr addrspace(1) %out, i64 %so
  store i32 %sx, ptr addrspace(1) %sop, align 4
  ; mma.sync m16n8k16: A from ldmatrix, B pairs from bt (N x K row-major), C zero
  %a0 = extractvalue { i32, i32, i32, i32 } %lm, 0
  %a1 = extractvalue { i32, i32, i32, i32 } %lm, 1
  %a2 = extractvalue { i32, i32, i32, i32 } %lm, 2
  %a3 = extractvalue { i32, i32, i32, i32 } %lm, 3
  %h0 = bitcast i32 %a0 to <2 x half>
  %h1 = bitcast i32 %a1 to <2 x half>
  %h2 = bitcast i32 %a2 to <2 x half>
  %h3 = bitcast i32 %a3 to <2 x half>
  %grp = lshr i64 %t64, 2
  %tig = and i64 %t64, 3
  %g16 = mul i64 %grp, 16
  %k2 = mul i64 %tig, 2
  %bo = add i64 %g16, %k2
  %bp0 = getelementptr half, ptr addrspace(1) %bt, i64 %bo
  %b0 = load <2 x half>, ptr addrspace(1) %bp0, align 4
  %bp1 = getelementptr half, ptr addrspace(1) %bp0, i64 8
  %b1 = load <2 x half>, ptr addrspace(1) %bp1, align 4
  %mma = call { float, float, float, float } @llvm.nvvm.mma.m16n8k16.row.col.f32.f32(<2 x half> %h0, <2 x half> %h1, <2 x half> %h2, <2 x half> %h3, <2 x half> %b0, <2 x half> %b1, float 0.0, float 0.0, float 0.0, float 0.0)
  %d0 = extractvalue { float, float, float, float } %mma, 0
  %d1 = extractvalue { float, float, float, float } %mma, 1
  %d2 = extractvalue { float, float, float, float } %mma, 2
  %d3 = extractvalue { float, float, float, float } %mma, 3
  %dp = getelementptr float, ptr addrspace(1) %dout, i64 %o4
  store float %d0, ptr addrspace(1) %dp, align 4
  %dp1 = getelementptr float, ptr addrspace(1) %dp, i64 1
  store float %d1, ptr addrspace(1) %dp1, align 4
  %dp2 = getelementptr float, ptr addrspace(1) %dp, i64 2
  store float %d2, ptr addrspace(1) %dp2, align 4
  %dp3 = getelementptr float, ptr addrspace(1) %dp, i64 3
  store float %d3, ptr addrspace(1) %dp3, align 4
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare void @llvm.nvvm.barrier0()
declare { i32, i32, i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16(ptr addrspace(3))
declare { i32, i32, i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16(ptr addrspace(3))
declare i32 @llvm.nvvm.shfl.sync.bfly.i32(i32, i32, i32, i32)
declare i32 @llvm.nvvm.vote.ballot.sync(i32, i1)
declare { float, float, float, float } @llvm.nvvm.mma.m16n8k16.row.col.f32.f32(<2 x half>, <2 x half>, <2 x half>, <2 x half>, <2 x half>, <2 x half>, float, float, float, float)
)";

TEST(EmuTranslate, NvidiaLdmatrixMmaSyncShflBallot) {
  std::string image = translate(kNvidia, {"nv_ops", {32, 1, 1}, 32}, "sm_90");
  ASSERT_FALSE(image.empty());
  Launcher r("emu:sm_90", image, "nv_ops");
  std::mt19937 rng(5);
  std::vector<float> af(256), btf(128);
  std::vector<uint16_t> a(256), bt(128);
  for (int i = 0; i < 256; ++i) {
    af[i] = float(int(rng() % 9) - 4) / 2;
    a[i] = wave::emu::floatToHalf(af[i]);
  }
  for (int i = 0; i < 128; ++i) {
    btf[i] = float(int(rng() % 9) - 4) / 2;
    bt[i] = wave::emu::floatToHalf(btf[i]);
  }
  void *din = r.alloc(512, a.data()), *dbt = r.alloc(256, bt.data()), *out = r.alloc(4 * 160),
       *dout = r.alloc(4 * 128);
  ASSERT_EQ(r.launch(1, 32, {din, dbt, out, dout}), WAVE_SUCCESS) << wave_last_error();
  auto o = r.read<uint32_t>(out, 160);
  // ldmatrix .trans: matrix j's row r comes from the address of lane 8j + r; lane l's register j
  // holds (rows 2(l%4), 2(l%4)+1; column l/4) of matrix j.
  auto rowAddr = [](int lane) { return (lane % 16) * 16 + 8 * (lane / 16); };
  for (int l = 0; l < 32; ++l)
    for (int j = 0; j < 4; ++j) {
      uint16_t lo = a[rowAddr(8 * j + 2 * (l % 4)) + l / 4];
      uint16_t hi = a[rowAddr(8 * j + 2 * (l % 4) + 1) + l / 4];
      EXPECT_EQ(o[4 * l + j], uint32_t(lo) | (uint32_t(hi) << 16)) << "trans lane " << l << " reg " << j;
    }
  uint32_t ballot = 0xaaaaaaaau;
  for (uint32_t l = 0; l < 32; ++l)
    EXPECT_EQ(o[128 + l], (l ^ 5) ^ ballot) << "shfl/ballot lane " << l;
  // D = A (16x16, row-major in `in`) * B (K x N with B[k][n] = bt[n][k]).
  auto d = r.read<float>(dout, 128);
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 4; ++i) {
      int row = l / 4 + 8 * (i >> 1), col = 2 * (l % 4) + (i & 1);
      float want = 0;
      for (int k = 0; k < 16; ++k)
        want += af[row * 16 + k] * btf[col * 16 + k];
      EXPECT_EQ(d[4 * l + i], want) << "mma lane " << l << " element " << i;
    }
}

TEST(EmuTranslate, UnsupportedIntrinsicIsNamed) {
  const char *ir = R"(
target triple = "amdgcn-amd-amdhsa"
define amdgpu_kernel void @k(ptr addrspace(1) %out) {
  %p = call ptr addrspace(4) @llvm.amdgcn.implicitarg.ptr()
  %v = load i32, ptr addrspace(4) %p, align 4
  store i32 %v, ptr addrspace(1) %out, align 4
  ret void
}
declare ptr addrspace(4) @llvm.amdgcn.implicitarg.ptr()
)";
  std::string error;
  std::string image = translate(ir, {"k", {64, 1, 1}, 64}, "gfx942", &error);
  EXPECT_TRUE(image.empty());
  EXPECT_NE(error.find("the target intrinsic llvm.amdgcn.implicitarg.ptr (in kernel k)"),
            std::string::npos)
      << error;
}

// Inline PTX is matched by its exact text: a wgmma variant the emulator does not model (an f16
// accumulator) and an unknown instruction are refused with the text; a TMA multicast is named.
TEST(EmuTranslate, UnknownInlinePtxIsRefusedByItsText) {
  const char *head = R"(
target triple = "nvptx64-nvidia-cuda"
define ptx_kernel void @k(ptr addrspace(1) %out, i32 %x, i64 %d) {
)";
  const std::pair<const char *, const char *> cases[] = {
      {"  call void asm sideeffect \"nanosleep.u32 $0;\", \"r\"(i32 %x)\n",
       "the inline PTX `nanosleep.u32 $0;` (inline PTX the emulator does not model)"},
      {"  %r = call { i32, i32 } asm sideeffect \"{\\0A.reg .pred p;\\0Asetp.ne.b32 p, 1, 0;"
       "\\0Awgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16 {$0, $1}, $2, $3, p, 1, 1, 0, 0;"
       "\\0A}\", \"=r,=r,0,1,l,l\"(i32 0, i32 0, i64 %d, i64 %d)\n",
       "(a shape other than m64nNk16/k32 with f32 accumulators)"},
      {"  call void asm sideeffect \"mbarrier.try_wait.shared::cta.b64 _, [$0];\", "
       "\"r\"(i32 %x)\n",
       "(an mbarrier operation (TMA loops), which the emulator does not model)"},
  };
  for (const auto &[body, want] : cases) {
    std::string ir = std::string(head) + body + "  ret void\n}\n";
    std::string error;
    std::string image = translate(ir.c_str(), {"k", {128, 1, 1}, 32}, "sm_90a", &error);
    EXPECT_TRUE(image.empty());
    EXPECT_NE(error.find(want), std::string::npos) << error;
  }
}

// A register-A wgmma in a loop, as wavec emits it (the inline PTX of nvidia_lowering.cpp),
// translated and run on emu:sm_90a: one warp, B (8 x 16 f16 ones) in shared memory, A's four
// registers made in the loop body from %one (f16 ones), two iterations whose accumulators chain
// through a phi, and a local value computed from A right after the wgmma (without
// pinWgmmaValues it would take A's freed slot). With the wait in the loop: clean, D = 2 x 16.
// With the only wait after the loop, the second iteration's add writes A's register while the
// first wgmma is in flight: reported (docs/internals.md, "The CPU emulator").
TEST(EmuTranslate, RegisterAWgmmaLoopAndItsMissingWait) {
  const std::string head = R"(
target triple = "nvptx64-nvidia-cuda"
@lds = internal addrspace(3) global [32 x i64] undef, align 1024
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare void @llvm.nvvm.barrier0()
define ptx_kernel void @k(ptr addrspace(1) %out, i64 %desc, i32 %one, ptr addrspace(1) %side) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %t64 = zext i32 %tid to i64
  %sp = getelementptr i64, ptr addrspace(3) @lds, i64 %t64
  store i64 4323521613979991040, ptr addrspace(3) %sp, align 8
  call void @llvm.nvvm.barrier0()
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i1, %loop ]
  %c0 = phi float [ 0.0, %entry ], [ %d0, %loop ]
  %c1 = phi float [ 0.0, %entry ], [ %d1, %loop ]
  %c2 = phi float [ 0.0, %entry ], [ %d2, %loop ]
  %c3 = phi float [ 0.0, %entry ], [ %d3, %loop ]
  %a0 = add i32 %one, %i
  %a1 = or i32 %one, 0
  %a2 = or i32 %one, 0
  %a3 = or i32 %one, 0
  call void asm sideeffect "wgmma.fence.sync.aligned;", ""()
  %r = call { float, float, float, float } asm sideeffect "{\0A.reg .pred p;\0Asetp.ne.b32 p, 1, 0;\0Awgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {$0, $1, $2, $3}, {$8, $9, $10, $11}, $12, p, 1, 1, 0;\0A}", "=f,=f,=f,=f,0,1,2,3,r,r,r,r,l"(float %c0, float %c1, float %c2, float %c3, i32 %a0, i32 %a1, i32 %a2, i32 %a3, i64 %desc)
  %after = mul i32 %a1, 3
  %sidep = getelementptr i32, ptr addrspace(1) %side, i64 %t64
  store i32 %after, ptr addrspace(1) %sidep, align 4
  call void asm sideeffect "wgmma.commit_group.sync.aligned;", ""()
)";
  const std::string tail = R"(
  %d0 = extractvalue { float, float, float, float } %r, 0
  %d1 = extractvalue { float, float, float, float } %r, 1
  %d2 = extractvalue { float, float, float, float } %r, 2
  %d3 = extractvalue { float, float, float, float } %r, 3
  %i1 = add i32 %i, 1
  %more = icmp ult i32 %i1, 2
  br i1 %more, label %loop, label %done
done:
  call void asm sideeffect "wgmma.wait_group.sync.aligned $0;", "n"(i32 0)
  %v0 = insertelement <4 x float> poison, float %d0, i64 0
  %v1 = insertelement <4 x float> %v0, float %d1, i64 1
  %v2 = insertelement <4 x float> %v1, float %d2, i64 2
  %v3 = insertelement <4 x float> %v2, float %d3, i64 3
  %op = getelementptr <4 x float>, ptr addrspace(1) %out, i64 %t64
  store <4 x float> %v3, ptr addrspace(1) %op, align 16
  ret void
}
)";
  const std::string wait = "  call void asm sideeffect \"wgmma.wait_group.sync.aligned $0;\", \"n\"(i32 0)\n";
  for (bool waitInLoop : {true, false}) {
    const std::string ir = head + (waitInLoop ? wait : "") + tail;
    const std::string image = translate(ir.c_str(), {"k", {32, 1, 1}, 32}, "sm_90a");
    ASSERT_FALSE(image.empty());
    Launcher l("emu:sm_90a", image, "k");
    void *out = l.alloc(32 * 16), *side = l.alloc(32 * 4);
    // The packed arguments (8-byte words): the descriptor with the 32-byte swizzle at start 0
    // (@lds is the only shared global); two f16 ones in the low word of %one (%i = 1 makes the
    // first 1 + 2^-10, which the tolerance below covers).
    const uint64_t desc = 3ull << 62, one = 0x3c003c00u;
    wave_status_t s = l.launch(1, 32, {out, reinterpret_cast<void *>(desc),
                                       reinterpret_cast<void *>(one), side});
    if (waitInLoop) {
      ASSERT_EQ(s, WAVE_SUCCESS) << wave_last_error();
      for (float v : l.read<float>(out, 32 * 4))
        EXPECT_NEAR(v, 32.0f, 0.05f);
      continue;
    }
    EXPECT_EQ(s, WAVE_ERROR_LAUNCH);
    const std::string msg = wave_last_error();
    EXPECT_NE(msg.find("k: wgmma register hazard: a write to an A operand register of a wgmma "
                       "in flight at "),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("(no wgmma.wait_group of this thread has retired its group yet"),
              std::string::npos)
        << msg;
  }
}

// ---- named barriers: bar.sync ID, N and bar.arrive ID, N (docs/internals.md, "The CPU
// emulator") ----------------------------------------------------------------------------------

// The ping-pong of two thread groups of G threads (FlashAttention-3's consumer warpgroups):
// group 1 arrives once on barrier 2 before the loop; then in each of `iters` iterations group g
// waits at barrier 2 + g, every thread appends g to a global log through an atomic counter, the
// group's first thread reads and increments a shared word S (ordered only by the barriers: the
// race detector must see the chain) and records what it read, and the group arrives on the other
// group's barrier without waiting. Options: a third group (a producer warp) that waits on an
// mbarrier thread 0 arrives on after its loop and then writes `prod`; variants below.
struct PingPong {
  uint32_t group = 128, iters = 5;
  bool producer = false;
  bool preArrive = true;
  bool extraSync0 = false; // group 0 waits at barrier 2 once more after the loop: the token
  bool extraSync1 = false; // group 1 waits at barrier 3 once more: nobody arrives
  std::string ir() const {
    const std::string g = std::to_string(group), n = std::to_string(2 * group);
    std::string s = R"(
target triple = "nvptx64-nvidia-cuda"
@s = internal addrspace(3) global [4 x i32] undef, align 16
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare void @llvm.nvvm.barrier0()
define ptx_kernel void @k(ptr addrspace(1) %logs, ptr addrspace(1) %counters,
                          ptr addrspace(1) %seens, ptr addrspace(1) %prods) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %wg = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %wg64 = zext i32 %wg to i64
  %tid64 = zext i32 %tid to i64
  %logoff = mul i64 %wg64, LOGN
  %log = getelementptr i32, ptr addrspace(1) %logs, i64 %logoff
  %counter = getelementptr i32, ptr addrspace(1) %counters, i64 %wg64
  %seenoff = mul i64 %wg64, SEENN
  %seen = getelementptr i32, ptr addrspace(1) %seens, i64 %seenoff
  %g = udiv i32 %tid, G
  %r = urem i32 %tid, G
  %lead = icmp eq i32 %r, 0
  %t0 = icmp eq i32 %tid, 0
  br i1 %t0, label %init, label %ready
init:
  store i32 0, ptr addrspace(3) @s, align 4
  call void asm sideeffect "mbarrier.init.shared::cta.b64 [$0], 1;", "r"(i32 8)
  br label %ready
ready:
  call void @llvm.nvvm.barrier0()
  %isp = icmp eq i32 %g, 2
  br i1 %isp, label %producer, label %consumer
producer:
  call void asm sideeffect "{.reg .pred p;wave_wait_${:uid}: mbarrier.try_wait.parity.shared::cta.b64 p,[$0],$1;@!p bra wave_wait_${:uid};}", "r,r"(i32 8, i32 0)
  %prodoff = mul i64 %wg64, 1024
  %prodi = add i64 %prodoff, %tid64
  %pp = getelementptr i32, ptr addrspace(1) %prods, i64 %prodi
  store i32 7, ptr addrspace(1) %pp, align 4
  ret void
consumer:
  %is1 = icmp eq i32 %g, 1
  br i1 %is1, label %pre, label %loop
pre:
PREARRIVE  br label %loop
loop:
  %i = phi i32 [ 0, %consumer ], [ 0, %pre ], [ %i1, %latch ]
  br i1 %is1, label %s1, label %s0
s0:
  call void asm sideeffect "bar.sync 2, N;", ""()
  br label %body
s1:
  call void asm sideeffect "bar.sync 3, N;", ""()
  br label %body
body:
  %slot = atomicrmw add ptr addrspace(1) %counter, i32 1 monotonic, align 4
  %slot64 = zext i32 %slot to i64
  %lp = getelementptr i32, ptr addrspace(1) %log, i64 %slot64
  store i32 %g, ptr addrspace(1) %lp, align 4
  br i1 %lead, label %turn, label %after
turn:
  %v = load i32, ptr addrspace(3) @s, align 4
  %v1 = add i32 %v, 1
  store i32 %v1, ptr addrspace(3) @s, align 4
  %k2 = mul i32 %i, 2
  %k = add i32 %k2, %g
  %k64 = zext i32 %k to i64
  %sp = getelementptr i32, ptr addrspace(1) %seen, i64 %k64
  store i32 %v, ptr addrspace(1) %sp, align 4
  br label %after
after:
  br i1 %is1, label %a1, label %a0
a0:
  call void asm sideeffect "bar.arrive 3, N;", ""()
  br label %latch
a1:
  call void asm sideeffect "bar.arrive 2, N;", ""()
  br label %latch
latch:
  %i1 = add i32 %i, 1
  %done = icmp eq i32 %i1, ITERS
  br i1 %done, label %exit, label %loop
exit:
  br i1 %is1, label %x1, label %x0
x0:
EXTRA0  br i1 %t0, label %release, label %end
x1:
EXTRA1  br label %end
release:
  call void asm sideeffect "{.reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [$0];}", "r"(i32 8)
  br label %end
end:
  ret void
}
)";
    auto put = [&](const std::string &key, const std::string &value) {
      for (size_t at; (at = s.find(key)) != std::string::npos;)
        s.replace(at, key.size(), value);
    };
    put("PREARRIVE", preArrive ? "  call void asm sideeffect \"bar.arrive 2, N;\", \"\"()\n" : "");
    put("EXTRA0", extraSync0 ? "  call void asm sideeffect \"bar.sync 2, N;\", \"\"()\n" : "");
    put("EXTRA1", extraSync1 ? "  call void asm sideeffect \"bar.sync 3, N;\", \"\"()\n" : "");
    put("LOGN", std::to_string(logSize()));
    put("SEENN", std::to_string(2 * iters));
    put("ITERS", std::to_string(iters));
    put(" N;", " " + n + ";");
    put("%tid, G", "%tid, " + g);
    return s;
  }
  uint32_t threads() const { return (producer ? 3 : 2) * group; }
  uint32_t logSize() const { return 2 * group * iters; }
};

struct PingPongRun {
  wave_status_t status;
  std::string error;
  std::vector<int32_t> log, seen, prod;
  std::vector<uint32_t> counters;
};

PingPongRun runPingPong(const PingPong &pp, uint32_t grid) {
  const std::string image = translate(pp.ir().c_str(), {"k", {pp.threads(), 1, 1}, 32}, "sm_90a");
  EXPECT_FALSE(image.empty());
  PingPongRun out{};
  if (image.empty())
    return out;
  Launcher l("emu:sm_90a", image, "k");
  const std::vector<int32_t> poisonLog(size_t(grid) * pp.logSize(), -1),
      poisonSeen(size_t(grid) * 2 * pp.iters, -1), poisonProd(size_t(grid) * 1024, -1);
  void *log = l.alloc(poisonLog.size() * 4, poisonLog.data());
  void *counters = l.alloc(grid * 4);
  void *seen = l.alloc(poisonSeen.size() * 4, poisonSeen.data());
  void *prod = l.alloc(poisonProd.size() * 4, poisonProd.data());
  out.status = l.launch(grid, pp.threads(), {log, counters, seen, prod});
  out.error = out.status == WAVE_SUCCESS ? "" : wave_last_error();
  out.log = l.read<int32_t>(log, poisonLog.size());
  out.seen = l.read<int32_t>(seen, poisonSeen.size());
  out.prod = l.read<int32_t>(prod, poisonProd.size());
  out.counters = l.read<uint32_t>(counters, grid);
  return out;
}

// Two warpgroups (256 threads, barriers 2 and 3 with a count of 256) in two workgroups: the log
// alternates in blocks of 128 (0 x 128, 1 x 128, ...), S is read in turn order 0, 1, 2, ...
// with no race reported (the chain bar.arrive -> bar.sync orders the groups' accesses while
// neither barrier holds every thread: the vector clocks), and the token left on barrier 2 at
// the end of workgroup 0 is gone in workgroup 1. Group 0 waiting at barrier 2 once more after
// the loop takes that token: still clean.
TEST(EmuNamedBarrier, TwoWarpgroupsPingPongInTurn) {
  for (bool extra : {false, true}) {
    PingPong pp;
    pp.extraSync0 = extra;
    const PingPongRun r = runPingPong(pp, 2);
    ASSERT_EQ(r.status, WAVE_SUCCESS) << r.error;
    for (uint32_t wg = 0; wg < 2; ++wg) {
      EXPECT_EQ(r.counters[wg], pp.logSize());
      for (uint32_t j = 0; j < pp.logSize(); ++j)
        ASSERT_EQ(r.log[wg * pp.logSize() + j], int32_t((j / pp.group) % 2))
            << "workgroup " << wg << " log entry " << j;
      for (uint32_t k = 0; k < 2 * pp.iters; ++k)
        EXPECT_EQ(r.seen[wg * 2 * pp.iters + k], int32_t(k)) << "turn " << k;
    }
  }
}

// Without group 1's arrival before the loop both groups wait for ever (group 0 at barrier 2,
// group 1 at barrier 3): a deadlock naming the barrier and its arrivals. Group 1 waiting at
// barrier 3 once more after the loop, when group 0 has ended: the threads left all wait there,
// too few.
TEST(EmuNamedBarrier, AWaitNobodyArrivesForIsReported) {
  PingPong pp;
  pp.preArrive = false;
  PingPongRun r = runPingPong(pp, 1);
  EXPECT_EQ(r.status, WAVE_ERROR_LAUNCH);
  EXPECT_NE(r.error.find("k: deadlock at "), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("thread (0,0,0) waits at barrier 2, which never completes (128 of 256 "
                         "arrivals); 0 threads blocked on mbarriers, 256 at a barrier, 0 ended"),
            std::string::npos)
      << r.error;
  EXPECT_EQ(r.counters[0], 0u); // nobody got past the first wait
  pp.preArrive = true;
  pp.extraSync1 = true;
  r = runPingPong(pp, 1);
  EXPECT_EQ(r.status, WAVE_ERROR_LAUNCH);
  EXPECT_NE(r.error.find("k: barrier thread count mismatch at "), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("thread (128,0,0): 128 threads wait at barrier 3 (128 have not "
                         "ended), the barrier expects 256"),
            std::string::npos)
      << r.error;
  EXPECT_EQ(r.counters[0], pp.logSize()); // the loop ran to its end
}

// Two warps ping-pong (barriers 2 and 3 with a count of 64) while a third warp is blocked on an
// mbarrier until thread 0 arrives on it after its loop: the barriers complete while that warp
// is blocked, the log alternates in blocks of 32, and the producer warp then finishes.
TEST(EmuNamedBarrier, PingPongBesideAWarpBlockedOnAnMbarrier) {
  PingPong pp;
  pp.group = 32;
  pp.iters = 7;
  pp.producer = true;
  const PingPongRun r = runPingPong(pp, 1);
  ASSERT_EQ(r.status, WAVE_SUCCESS) << r.error;
  for (uint32_t j = 0; j < pp.logSize(); ++j)
    ASSERT_EQ(r.log[j], int32_t((j / 32) % 2)) << "log entry " << j;
  for (uint32_t k = 0; k < 2 * pp.iters; ++k)
    EXPECT_EQ(r.seen[k], int32_t(k)) << "turn " << k;
  for (uint32_t t = 0; t < 96; ++t)
    EXPECT_EQ(r.prod[t], t >= 64 ? 7 : -1) << "thread " << t;
}

// Barrier 1 with a count of 64 among two of three warps: what it orders and what it does not.
// Thread 32 writes the shared word S before or after warp 1's bar.arrive, or a warp that does
// not take part writes it (and ends, or goes on); thread 0 or 32 reads S after its bar.sync.
// Only a write before the arrival is ordered before the read; the others are races, which the
// barrier must not hide.
TEST(EmuNamedBarrier, APartialBarrierOrdersOnlyItsArrivals) {
  struct Case {
    const char *name, *body, *race;
  };
  const char *sync = "  call void asm sideeffect \"bar.sync 1, 64;\", \"\"()\n";
  const char *arrive = "  call void asm sideeffect \"bar.arrive 1, 64;\", \"\"()\n";
  const char *write = "  store i32 5, ptr addrspace(3) @s, align 4\n";
  const char *read = "  %v = load i32, ptr addrspace(3) @s, align 4\n"
                     "  store i32 %v, ptr addrspace(1) %out, align 4\n";
  const std::string writeThenArrive = std::string("w1:\n  br i1 %t32, label %w1w, label %w1a\n") +
                                      "w1w:\n" + write + "  br label %w1a\nw1a:\n" + arrive +
                                      "  ret void\n";
  const std::string arriveThenWrite =
      std::string("w1:\n") + arrive + "  br i1 %t32, label %wr, label %end\n";
  const std::string syncThenRead0 =
      std::string("w0:\n") + sync + "  br i1 %t0, label %rd, label %end\n";
  // Warp 0's thread 0 writes, warp 0 ends; warps 1 and 2 wait at barrier 1; thread 32 reads.
  const std::string endedWriter = std::string("w0:\n  br i1 %t0, label %wr, label %end\nw1:\n") +
                                  sync + "  br i1 %t32, label %rd, label %end\nw2:\n" + sync +
                                  "  ret void\n";
  const std::string cases[][2] = {
      {syncThenRead0 + writeThenArrive + "w2:\n  ret void\n", ""},
      {syncThenRead0 + arriveThenWrite + "w2:\n  ret void\n",
       "byte 0 was written by thread (32,0,0) with no barrier in between"},
      {syncThenRead0 + "w1:\n" + arrive + "  ret void\nw2:\n  br i1 %t64, label %wr, label %end\n",
       "thread (64,0,0)"},
      {endedWriter, "byte 0 was written by thread (0,0,0) with no barrier in between"},
  };
  for (const auto &c : cases) {
    const std::string ir = std::string(R"(
target triple = "nvptx64-nvidia-cuda"
@s = internal addrspace(3) global [4 x i32] undef, align 16
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
define ptx_kernel void @k(ptr addrspace(1) %out) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %w = udiv i32 %tid, 32
  %t0 = icmp eq i32 %tid, 0
  %t32 = icmp eq i32 %tid, 32
  %t64 = icmp eq i32 %tid, 64
  switch i32 %w, label %w2 [ i32 0, label %w0
                             i32 1, label %w1 ]
)") + c[0] + "rd:\n" + read + "  ret void\nwr:\n" + write + "  ret void\nend:\n  ret void\n}\n";
    const std::string image = translate(ir.c_str(), {"k", {96, 1, 1}, 32}, "sm_90a");
    ASSERT_FALSE(image.empty()) << c[0];
    Launcher l("emu:sm_90a", image, "k");
    const int32_t poison = -1;
    void *out = l.alloc(4, &poison);
    const wave_status_t s = l.launch(1, 96, {out});
    if (c[1].empty()) {
      ASSERT_EQ(s, WAVE_SUCCESS) << wave_last_error();
      EXPECT_EQ(l.read<int32_t>(out, 1)[0], 5);
      continue;
    }
    EXPECT_EQ(s, WAVE_ERROR_LAUNCH) << c[0];
    const std::string msg = wave_last_error();
    EXPECT_NE(msg.find("shared-memory race on a "), std::string::npos) << c[0] << msg;
    EXPECT_NE(msg.find(c[1]), std::string::npos) << c[0] << msg;
  }
}

// Named barriers are matched exactly; an ID above 15 or a count that is not a positive multiple
// of 32 is refused with the text, and a count that differs within a phase fails the launch.
TEST(EmuNamedBarrier, BadIdsAndCountsAreRefused) {
  struct Refused {
    const char *text, *shown, *why;
  };
  const Refused cases[] = {
      {"bar.sync 1, 0;", "bar.sync 1,0;",
       "a barrier thread count that is not a positive multiple of 32"},
      {"bar.sync 1, 100;", "bar.sync 1,100;",
       "a barrier thread count that is not a positive multiple of 32"},
      {"bar.arrive 2, 0;", "bar.arrive 2,0;",
       "a barrier thread count that is not a positive multiple of 32"},
      {"bar.arrive 16, 64;", "bar.arrive 16,64;", "a barrier ID above 15"},
      {"bar.sync 99999999999, 64;", "bar.sync 99999999999,64;",
       "inline PTX the emulator does not model"},
      {"bar.arrive 2;", "bar.arrive 2;", "inline PTX the emulator does not model"},
      {"bar.sync 2, -32;", "bar.sync 2,-32;", "inline PTX the emulator does not model"},
  };
  for (const auto &[text, shown, want] : cases) {
    const std::string ir = std::string(R"(
target triple = "nvptx64-nvidia-cuda"
define ptx_kernel void @k() {
  call void asm sideeffect ")") + text + R"(", ""()
  ret void
}
)";
    std::string error;
    const std::string image = translate(ir.c_str(), {"k", {64, 1, 1}, 32}, "sm_90a", &error);
    EXPECT_TRUE(image.empty()) << text;
    EXPECT_NE(error.find(std::string("the inline PTX `") + shown + "` (" + want + ")"),
              std::string::npos)
        << error;
    EXPECT_NE(error.find("(in kernel k)"), std::string::npos) << error;
  }
  // Warp 0 says 64 threads, warp 1 says 32 for the same phase of barrier 4.
  const char *ir = R"(
target triple = "nvptx64-nvidia-cuda"
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
define ptx_kernel void @k() {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %w0 = icmp ult i32 %tid, 32
  br i1 %w0, label %a, label %b
a:
  call void asm sideeffect "bar.sync 4, 64;", ""()
  ret void
b:
  call void asm sideeffect "bar.arrive 4, 32;", ""()
  ret void
}
)";
  const std::string image = translate(ir, {"k", {64, 1, 1}, 32}, "sm_90a");
  ASSERT_FALSE(image.empty());
  Launcher l("emu:sm_90a", image, "k");
  EXPECT_EQ(l.launch(1, 64, {}), WAVE_ERROR_LAUNCH);
  const std::string msg = wave_last_error();
  EXPECT_NE(msg.find("k: barrier thread count mismatch at "), std::string::npos) << msg;
  EXPECT_NE(msg.find("thread (32,0,0): barrier 4 expects 64 threads in this phase (since "),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("this instruction 32"), std::string::npos) << msg;
}

} // namespace
