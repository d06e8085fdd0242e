// The plan passes (src/passes/kernel_plan.h) without the emitter: kernels through sema and the
// distribution, then planKernel with a stand-in for the emitter's access model (the read's
// indices from the distribution; cp.async allowed or not as the test says). Checks the
// decisions the passes own: tile shapes and padding, copy shapes, pipeline depth against the
// target's shared memory, prefetch distance, read-ahead, and the placement of the arena.
#include "frontend/parser.h"
#include "passes/distribution.h"
#include "passes/kernel_plan.h"
#include "sema/sema.h"

#include <gtest/gtest.h>

namespace wave {
namespace {

struct FakeQueries : PlanQueries {
  const Distribution *dist = nullptr;
  bool async = true;
  std::vector<std::string> refused;
  bool tileAccess(const ir::Op &read, TileAccess &out) override {
    for (const AccessIndex &a : dist->accesses)
      if (a.op == &read) {
        for (const DimIndex &di : a.dims) {
          out.dims.push_back({di.dim, di.start});
          out.elems = std::max<int64_t>(out.elems, di.elements);
        }
        out.dtype = read.operands[0]->type.dtype;
        return true;
      }
    return refuse(DiagId::CodegenUnsupported, "no access", read.loc);
  }
  bool asyncCopyable(const Promotion &) override { return async; }
  int64_t dma = 0; // the answer to ldsDmaCopies
  int64_t ldsDmaCopies(const Promotion &) override { return dma; }
  bool tensor = false; // the answer to tensorCopyable
  int tensorAsked = 0;
  bool tensorCopyable(const Promotion &) override {
    ++tensorAsked;
    return tensor;
  }
  bool refuse(DiagId, const std::string &what, SourceRange) override {
    refused.push_back(what);
    return false;
  }
  bool refuseSharedMemory(int64_t bytes) override {
    refused.push_back(std::to_string(bytes) + " bytes of shared memory");
    return false;
  }
};

struct Planned {
  std::unique_ptr<SourceFile> file;
  std::unique_ptr<DiagnosticEngine> diags;
  std::unique_ptr<ast::Module> module;
  std::unique_ptr<Program> program;
  Distribution dist;
  KernelPlan plan;
  std::vector<std::string> passes; // the `after` calls, in order
  bool ok = false;
};

// A GEMM with A and B staged through shared memory, tiles BM x BK and BN x BK of f16.
std::string gemm(int bm, int bn, int bk) {
  return "symbol M, N, K;\n"
         "kernel gemm(a: Memory[M, K, shared, f16], b: Memory[N, K, shared, f16],\n"
         "            c: Memory[M, N, global, f32]) {\n"
         "  constraints {\n"
         "    workgroup(M, " + std::to_string(bm) + ", dim = 0);\n"
         "    workgroup(N, " + std::to_string(bn) + ", dim = 1);\n"
         "    tiling(K, " + std::to_string(bk) + ");\n"
         "    wave(M, " + std::to_string(bm / 2) + ");\n"
         "    wave(N, " + std::to_string(bn / 2) + ");\n"
         "  }\n"
         "  c_reg = Register[M, N, f32](0.0);\n"
         "  result = iterate K (acc = c_reg) {\n"
         "    yield mma(read(a), read(b), acc);\n"
         "  }\n"
         "  write(result, c);\n"
         "}\n";
}

void plan(Planned &p, const std::string &text, const char *target, bool async,
          FakeQueries &q, const char *m = "1024") {
  p.file = std::make_unique<SourceFile>("gemm.wave", text);
  p.diags = std::make_unique<DiagnosticEngine>(p.file.get());
  p.module = parseModule(*p.file, *p.diags);
  ASSERT_TRUE(p.module) << p.diags->render(false);
  SemaOptions so;
  so.target = findTarget(target);
  so.defines = {{"N", "1024"}, {"K", "1024"}};
  if (*m)
    so.defines.push_back({"M", m});
  p.program = analyze(*p.module, so, *p.diags);
  ASSERT_TRUE(p.program && !p.diags->hasErrors()) << p.diags->render(false);
  const ir::Kernel &k = *p.program->kernels[0];
  ASSERT_TRUE(distribute(k, *p.program->target, *p.diags, p.dist)) << p.diags->render(false);
  q.dist = &p.dist;
  q.async = async;
  PlanContext c{k, p.dist, *p.program->target, p.dist.facts, q, p.plan};
  p.ok = planKernel(c, [&](const char *pass) { p.passes.push_back(pass); }) &&
         planSharedMemory(c);
}

const LoopSchedule &onlyLoop(const Planned &p) {
  EXPECT_EQ(p.plan.loops.size(), 1u);
  return p.plan.loops.begin()->second;
}

// The wgmma GEMM of docs/performance.md on sm_90a: each wave a warpgroup, 128 x 64 and
// 256 x 64 f16 tiles.
const char *kWgmmaGemm = "symbol M, N, K;\n"
                         "kernel gemm(a: Memory[M, K, shared, f16], b: Memory[N, K, shared, f16],\n"
                         "            c: Memory[M, N, global, f32]) {\n"
                         "  constraints {\n"
                         "    workgroup(M, 128, dim = 0);\n"
                         "    workgroup(N, 256, dim = 1);\n"
                         "    tiling(K, 64);\n"
                         "    wave(M, 64);\n"
                         "    wave(N, 256);\n"
                         "  }\n"
                         "  c_reg = Register[M, N, f32](0.0);\n"
                         "  result = iterate K (acc = c_reg) {\n"
                         "    yield mma(read(a), read(b), acc);\n"
                         "  }\n"
                         "  write(result, c);\n"
                         "}\n";

// plan() for sm_90a with cp.async loops, whose tiles TMA may copy (`tensor`) or not.
void planSm90a(Planned &p, const char *src, bool tensor) {
  FakeQueries q;
  q.tensor = tensor;
  plan(p, src, "sm_90a", true, q);
}

// kWgmmaGemm with a `hardware(...)` line (`hw`) at the end of its constraints.
std::string wgmmaGemmWith(const char *hw) {
  std::string src(kWgmmaGemm);
  const size_t at = src.find("    wave(N, 256);\n");
  return src.replace(at, 17, std::string("    wave(N, 256);\n    ") + hw + "\n");
}

TEST(Plan, WgmmaLoopsCopyWithTmaWhenEveryTileQualifies) {
  for (bool tensor : {true, false}) {
    Planned p;
    FakeQueries q;
    q.tensor = tensor;
    plan(p, kWgmmaGemm, "sm_90a", true, q);
    ASSERT_TRUE(p.ok);
    const LoopSchedule &s = onlyLoop(p);
    EXPECT_TRUE(s.wgmma);
    EXPECT_EQ(s.copy, tensor ? LoopSchedule::Copy::Tma : LoopSchedule::Copy::CpAsync);
    // The same ring either way: 4 buffers, one wgmma group in flight, 2 tiles ahead.
    EXPECT_EQ(s.stages, 4);
    EXPECT_EQ(s.mmaInFlight, 1);
    EXPECT_EQ(s.prefetch, 2);
    EXPECT_EQ(q.tensorAsked, tensor ? 2 : 1); // all tiles, or until one fails
  }
}

// Warp specialization (planWarpSpecialization): the TMA GEMM gets a producer warpgroup of
// 128 threads after its 256, the producer at 40 registers and the consumers at 232 ((65536 -
// 128 x 40) / 256 = 236, capped); a cp.async loop and `hardware(warp_specialize = 0)` get
// none.
TEST(Plan, TmaGemmsAreWarpSpecializedUnlessTurnedOff) {
  const std::string off = wgmmaGemmWith("hardware(warp_specialize = 0);");
  for (int c = 0; c < 3; ++c) {
    Planned p;
    FakeQueries q;
    q.tensor = c != 1;
    plan(p, c == 2 ? off.c_str() : kWgmmaGemm, "sm_90a", true, q);
    ASSERT_TRUE(p.ok);
    const WarpSpecialization &w = p.plan.specialization;
    EXPECT_EQ(onlyLoop(p).specialized, c == 0);
    EXPECT_EQ(w.producerThreads, c == 0 ? 128 : 0);
    EXPECT_EQ(w.producerRegisters, c == 0 ? 40 : 0);
    EXPECT_EQ(w.consumerRegisters, c == 0 ? 232 : 0);
  }
}

// The consumers' setmaxnreg count fits the pool the launch gave the workgroup (setmaxnreg.inc
// blocks until its registers are free in that pool): 256 x 128 tiles of four 64 x 128
// warpgroups and a producer are 640 threads at 96 registers (65536 / 640, down to a multiple
// of 8), a pool of 61440; less the producer's 128 x 40 that leaves 110 per consumer lane, so
// 104. The whole file (65536) would have given 112, which hung on the H100
// (docs/performance.md, "GEMM at 4096³: tile, order, ring and occupancy knobs"). 128 x 256
// tiles of two warpgroups keep 232 (168 x 384 = 64512 at launch).
TEST(Plan, WarpSpecializedConsumersAskOnlyForTheLaunchsRegisterPool) {
  for (bool four : {true, false}) {
    std::string src(kWgmmaGemm);
    if (four) {
      src.replace(src.find("workgroup(M, 128"), 16, "workgroup(M, 256");
      src.replace(src.find("workgroup(N, 256"), 16, "workgroup(N, 128");
      src.replace(src.find("wave(N, 256)"), 12, "wave(N, 128)");
    }
    Planned p;
    FakeQueries q;
    q.tensor = true;
    plan(p, src.c_str(), "sm_90a", true, q);
    ASSERT_TRUE(p.ok);
    const WarpSpecialization &w = p.plan.specialization;
    ASSERT_TRUE(onlyLoop(p).specialized);
    EXPECT_EQ(p.dist.block[0], four ? 512 : 256);
    EXPECT_EQ(w.producerRegisters, 40);
    EXPECT_EQ(w.consumerRegisters, four ? 104 : 232);
    const int64_t atLaunch = 65536 / (p.dist.block[0] + 128) / 8 * 8;
    EXPECT_LE(128 * w.producerRegisters + p.dist.block[0] * w.consumerRegisters,
              atLaunch * (p.dist.block[0] + 128));
  }
}

// Scores ahead (LoopSchedule::scoreAhead): attention's loop of two wgmma products (S = Q K^T
// from a loop-invariant Q and a constant accumulator, then P V) issues the first product one
// tile ahead where its accumulators take at least 96 registers per lane (head dim 128: 32 +
// 64), the copies still 3 tiles ahead of 4 buffers; not at head dim 64 (32 + 32), nor with
// `hardware(score_ahead = 0)`, nor in the GEMM (one product). `hw` adds hardware fields.
std::string attentionWgmma(int d, const std::string &hw = "") {
  return "symbol B, M, K2, N, K; # N, K: plan() binds them\n"
         "symbol D = " + std::to_string(d) + ";\n"
         "kernel attention(q: Memory[B, M, D, global, f16], k: Memory[B, K2, D, shared, f16],\n"
         "                 v: Memory[B, K2, D, shared, f16], o: Memory[B, M, D, global, f16]) {\n"
         "  constraints {\n"
         "    workgroup(M, 128, dim = 0);\n"
         "    workgroup(B, 1, dim = 2);\n"
         "    wave(M, 64);\n"
         "    tiling(K2, 64);\n"
         "    hardware(vector_shapes = {B: 0}" + hw + ");\n"
         "  }\n"
         "  q_reg = read(q);\n"
         "  m0 = Register[B, M, f32](-inf);\n"
         "  acc0 = Register[B, M, D, f32](0.0);\n"
         "  _m, acc = iterate K2 (m_i = m0, acc = acc0) {\n"
         "    s = mma(q_reg, read(k), Register[B, M, K2, f32](0.0));\n"
         "    m_j = max(s, dim = K2, init = m_i);\n"
         "    alpha = exp2(m_i - m_j);\n"
         "    p = exp2(s - broadcast(m_j, [B, M, K2]));\n"
         "    acc_j = mma(cast(p, f16), read(v), acc * broadcast(alpha, [B, M, D]));\n"
         "    yield m_j, acc_j;\n"
         "  }\n"
         "  write(cast(acc, f16), o);\n"
         "}\n";
}

TEST(Plan, AttentionIssuesItsScoresAheadWhereTheAccumulatorsAreLarge) {
  const struct {
    std::string src;
    bool ahead;
  } cases[] = {{attentionWgmma(128), true},
               {attentionWgmma(64), false},
               {attentionWgmma(128, ", score_ahead = 0"), false},
               {kWgmmaGemm, false}};
  for (const auto &c : cases) {
    Planned p;
    FakeQueries q;
    plan(p, c.src, "sm_90a", true, q);
    ASSERT_TRUE(p.ok) << c.src;
    const LoopSchedule &s = onlyLoop(p);
    EXPECT_EQ(s.scoreAhead != nullptr, c.ahead) << c.src;
    if (s.scoreAhead) {
      EXPECT_EQ(s.scoreAhead->kind, ir::OpKind::Mma);
      EXPECT_EQ(s.scoreAhead->operands[1]->def, s.staged.front()); // the k tile
    }
    if (c.src != kWgmmaGemm) {
      EXPECT_EQ(s.stages, 4) << c.src;
      EXPECT_EQ(s.mmaInFlight, 0) << c.src; // the wait for everything precedes the barrier
      EXPECT_EQ(s.prefetch, 3) << c.src;
    }
  }
}

// Attention where TMA can copy K and V (tensorCopyable, emitter/tensor_copy.cpp): the loop
// copies with TMA and, being the kernel's only top-level TMA loop over two consumer
// warpgroups, is warp-specialized, and its consumers issue their scores ahead (head dim 128);
// with `hardware(tma = 0)` it keeps cp.async and issues its scores ahead there. Not at head
// dim 64 with 64-key tiles (the register rule), with `score_ahead = 0`, on the TMA loop
// without a producer (`warp_specialize = 0`). (Persistent tiles would drop them, but attention's
// grid has B along axis 2, so `persistent = 1` is not taken: perSM stays 0.) Without
// TMA-copyable tiles the cp.async form as before.
TEST(Plan, AttentionIssuesItsScoresAheadOnTheWarpSpecializedTmaLoop) {
  const struct {
    std::string src;
    bool tensor, ahead, tma, specialized;
  } cases[] = {{attentionWgmma(128), true, true, true, true},
               {attentionWgmma(128, ", tma = 0"), true, true, false, false},
               {attentionWgmma(128, ", score_ahead = 0"), true, false, true, true},
               {attentionWgmma(64), true, false, true, true},
               {attentionWgmma(128, ", warp_specialize = 0"), true, false, true, false},
               {attentionWgmma(128, ", persistent = 1"), true, true, true, true},
               {attentionWgmma(128, ", score_ahead = 0"), false, false, false, false},
               {attentionWgmma(128), false, true, false, false}};
  for (const auto &c : cases) {
    Planned p;
    FakeQueries q;
    q.tensor = c.tensor;
    plan(p, c.src, "sm_90a", true, q);
    ASSERT_TRUE(p.ok) << c.src;
    const LoopSchedule &s = onlyLoop(p);
    EXPECT_EQ(s.scoreAhead != nullptr, c.ahead) << c.src;
    EXPECT_EQ(s.copy, c.tma ? LoopSchedule::Copy::Tma : LoopSchedule::Copy::CpAsync) << c.src;
    EXPECT_EQ(s.specialized, c.specialized) << c.src;
    EXPECT_EQ(p.plan.specialization.producerThreads, c.specialized ? 128 : 0) << c.src;
    EXPECT_EQ(p.plan.specialization.perSM, 0) << c.src;
    EXPECT_EQ(s.stages, 4) << c.src;
    EXPECT_EQ(s.mmaInFlight, 0) << c.src;
  }
}

// Persistent tiles (WarpSpecialization::perSM) only where asked for (`hardware(persistent =
// 1)`: not the default, measured no faster on the H100) and where warp specialization applies.
TEST(Plan, PersistentTilesOnlyWhenAskedForAndWarpSpecialized) {
  auto with = wgmmaGemmWith;
  const std::string on = with("hardware(persistent = 1);");
  const std::string off = with("hardware(persistent = 0);");
  const std::string noSpec = with("hardware(warp_specialize = 0, persistent = 1);");
  const struct {
    const char *src;
    bool tensor;
    int64_t perSM;
  } cases[] = {{kWgmmaGemm, true, 0},   {on.c_str(), true, 1}, {off.c_str(), true, 0},
               {noSpec.c_str(), true, 0}, {on.c_str(), false, 0}};
  for (const auto &c : cases) {
    Planned p;
    planSm90a(p, c.src, c.tensor);
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.plan.specialization.perSM, c.perSM) << c.src;
  }
}

// The epilogue through shared memory (KernelPlan::epilogue): the f32 C write of the
// warp-specialized GEMM (N = 1024: rows of 4096 bytes) goes through tile 1's ring (B: 4 x 32 KB
// holds 128 x 256 f32) in boxes of 128 x 32; an f16 C write (64 KB) takes the smaller ring of A
// (4 x 16 KB) in boxes of 128 x 64. Not with stage_epilogue = 0, persistent tiles, without warp
// specialization, or with cp.async loops (no TMA: no producer).
TEST(Plan, EpilogueStagedThroughTheRingOfAWarpSpecializedGemm) {
  const std::string base(kWgmmaGemm);
  auto with = wgmmaGemmWith;
  std::string f16 = base;
  f16.replace(f16.find("c: Memory[M, N, global, f32]"), 28, "c: Memory[M, N, global, f16]");
  f16.replace(f16.find("write(result, c);"), 17, "write(cast(result, f16), c);");
  const std::string off = with("hardware(stage_epilogue = 0);");
  const std::string persistent = with("hardware(persistent = 1);");
  const std::string noSpec = with("hardware(warp_specialize = 0);");
  const struct {
    const char *src;
    bool tensor;
    int alloc;
    int64_t boxCols;
  } cases[] = {{kWgmmaGemm, true, 1, 32},  {f16.c_str(), true, 0, 64},
               {off.c_str(), true, -1, 0}, {persistent.c_str(), true, -1, 0},
               {noSpec.c_str(), true, -1, 0}, {kWgmmaGemm, false, -1, 0}};
  for (const auto &c : cases) {
    Planned p;
    planSm90a(p, c.src, c.tensor);
    ASSERT_TRUE(p.ok);
    const EpilogueStaging &e = p.plan.epilogue;
    EXPECT_EQ(e.alloc, c.alloc) << c.src;
    EXPECT_EQ(e.write != nullptr, c.alloc >= 0) << c.src;
    if (c.alloc >= 0) {
      EXPECT_EQ(e.rows, 128);
      EXPECT_EQ(e.cols, 256);
      EXPECT_EQ(e.boxCols, c.boxCols);
      EXPECT_EQ(e.axis[0], 0u);
      EXPECT_EQ(e.axis[1], 1u);
    }
  }
}

// The workgroup order's model: g x tile0 + ceil(132 / g) x tile1 operand rows, least at
// g = 16 for 128 x 256 tiles (2048 + 9 x 256 = 4352; 8: 5376, 32: 5376), a tie of 8 and 16
// for square tiles (3200) taken at 8, and 8 for 256 x 128 (4224).
TEST(Plan, RasterGroupReadsTheFewestOperandRows) {
  EXPECT_EQ(rasterGroup(128, 256, 132), 16);
  EXPECT_EQ(rasterGroup(128, 128, 132), 8);
  EXPECT_EQ(rasterGroup(256, 128, 132), 8);
  EXPECT_EQ(rasterGroup(64, 64, 1), 2);
}

// Grouped where axis 0 may have more workgroups than a group (M dynamic, or 64 of them at
// M = 8192); launch order at M = 1024 (8 workgroups along axis 0), and for mma.sync loops.
TEST(Plan, WgmmaGemmsGroupTheirWorkgroups) {
  for (const char *m : {"", "8192", "1024"}) {
    Planned p;
    FakeQueries q;
    q.tensor = true;
    plan(p, kWgmmaGemm, "sm_90a", true, q, m);
    ASSERT_TRUE(p.ok);
    const RasterPlan &r = p.plan.raster;
    if (std::string(m) == "1024") {
      EXPECT_EQ(r.group, 0);
      continue;
    }
    EXPECT_EQ(r.group, 16);
    EXPECT_EQ(r.tiles[0], 128);
    EXPECT_EQ(r.tiles[1], 256);
    EXPECT_EQ(r.resident, 132);
  }
  Planned p;
  FakeQueries q;
  plan(p, gemm(64, 64, 32), "sm_90", true, q, "");
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.plan.raster.group, 0);
}

TEST(Plan, MmaSyncLoopsNeverCopyWithTma) {
  Planned p;
  FakeQueries q;
  q.tensor = true;
  plan(p, gemm(64, 64, 32), "sm_90", true, q);
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(onlyLoop(p).copy, LoopSchedule::Copy::CpAsync);
  EXPECT_EQ(q.tensorAsked, 0);
}

TEST(Plan, PassesRunInPipelineOrder) {
  Planned p;
  FakeQueries q;
  plan(p, gemm(64, 64, 32), "sm_90", true, q);
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.passes, (std::vector<std::string>{"promotion", "cooperative-copies", "schedule"}));
}

TEST(Plan, SmallTilesGetFourSwizzledBuffersInStaticSharedMemory) {
  Planned p;
  FakeQueries q;
  plan(p, gemm(64, 64, 32), "sm_90", true, q);
  ASSERT_TRUE(p.ok);
  ASSERT_EQ(p.plan.tiles.size(), 2u);
  for (const SharedTile &t : p.plan.tiles) {
    EXPECT_EQ(t.tile, (std::vector<int64_t>{64, 32}));
    EXPECT_EQ(t.stages, 4);
    EXPECT_GT(t.swizzle, 0);
    EXPECT_EQ(t.bytes, 64 * 32 * 2); // unpadded when swizzled
  }
  const LoopSchedule &s = onlyLoop(p);
  EXPECT_TRUE(s.async);
  EXPECT_EQ(s.stages, 4);
  EXPECT_TRUE(s.readAhead);      // two K steps of 16 per tile
  EXPECT_EQ(s.prefetch, 4);      // with read-ahead: every buffer filled before the loop
  EXPECT_EQ(p.plan.sharedMemory.bytes, 2 * 4 * 4096);
  EXPECT_EQ(p.plan.sharedMemory.dynamicBytes, 0);
  EXPECT_EQ(p.plan.tiles[1].offsetBytes, 4 * 4096);
}

TEST(Plan, LargeTilesFallBackToThreeBuffersInOptInSharedMemory) {
  // 128 x 64 f16 tiles: 16 KB each, 32 KB a stage. 4 (128 KB) and 3 (96 KB) exceed sm_90's
  // static 48 KB; 3 fit the opt-in limit, which makes the arena dynamic.
  Planned p;
  FakeQueries q;
  plan(p, gemm(128, 128, 64), "sm_90", true, q);
  ASSERT_TRUE(p.ok);
  const LoopSchedule &s = onlyLoop(p);
  EXPECT_EQ(s.stages, 3);
  EXPECT_TRUE(s.swizzle);
  EXPECT_EQ(p.plan.sharedMemory.bytes, 3 * 2 * 16384);
  EXPECT_EQ(p.plan.sharedMemory.dynamicBytes, p.plan.sharedMemory.bytes);
}

TEST(Plan, NoAsyncCopyMeansRegisterPrefetchWithOnePaddedBuffer) {
  Planned p;
  FakeQueries q;
  plan(p, gemm(64, 64, 32), "sm_90", /*async=*/false, q);
  ASSERT_TRUE(p.ok);
  const LoopSchedule &s = onlyLoop(p);
  EXPECT_FALSE(s.async);
  EXPECT_EQ(s.stages, 1);
  EXPECT_FALSE(s.readAhead);
  EXPECT_EQ(s.prefetch, 1);
  for (const SharedTile &t : p.plan.tiles) {
    EXPECT_EQ(t.swizzle, 0);
    EXPECT_EQ(t.pad, 8); // 16 bytes of f16 on NVIDIA
    EXPECT_EQ(t.bytes, 64 * (32 + 8) * 2);
  }
}

TEST(Plan, CooperativeCopiesUseWidestVectorThatCoversTheTile) {
  Planned p;
  FakeQueries q;
  plan(p, gemm(64, 64, 32), "sm_90", true, q);
  ASSERT_TRUE(p.ok);
  // 64 x 32 f16 = 2048 elements; 128 threads x 8 elements (16 bytes) x 2 rounds.
  for (const auto &[op, pr] : p.plan.promotions) {
    EXPECT_EQ(pr.lanes, 8);
    EXPECT_EQ(pr.copies, 2);
    EXPECT_TRUE(pr.async);
  }
}

TEST(Plan, AmdChoosesXorUnitsWherePaddingConflicts) {
  // Rows of 32 f16 padded by 4 (8 bytes): the 16-byte stores of the copy conflict (rows 72
  // bytes apart), 8 extra wavefronts per wave; 8-byte units XOR (row / 2) % 8 are free.
  Planned p;
  FakeQueries q;
  plan(p, gemm(64, 64, 32), "gfx942", /*async=*/false, q);
  ASSERT_TRUE(p.ok);
  ASSERT_EQ(p.plan.tiles.size(), 2u);
  for (const SharedTile &t : p.plan.tiles) {
    EXPECT_EQ(t.modeledPad, 8);
    EXPECT_EQ(t.modeledXor, 0);
    EXPECT_EQ(t.xorUnit, 8); // gfx942's MFMA operand reads are 8 bytes
    EXPECT_EQ(t.pad, 0);
    EXPECT_EQ(t.bytes, 64 * 32 * 2);
  }
}

TEST(Plan, AmdKeepsPaddingWhereUnitsDoNotTileTheRow) {
  // Rows of 48 f16 (96 bytes): no power-of-two XOR fits. Every aligned padding (0, 16, 32
  // bytes) conflicts at least as much as the 8 bytes of promotion.cpp (4 wavefronts per wave,
  // on the copy's 8-byte stores: 12 lanes fill a row, the next row's 4 share its first banks),
  // so the rows stay padded by 8 bytes.
  Planned p;
  FakeQueries q;
  plan(p, gemm(64, 64, 48), "gfx942", /*async=*/false, q);
  ASSERT_TRUE(p.ok);
  for (const SharedTile &t : p.plan.tiles) {
    EXPECT_EQ(t.xorUnit, 0);
    EXPECT_EQ(t.pad, 4);
    EXPECT_EQ(t.modeledPad, 4);
    EXPECT_EQ(t.modeledXor, -1);
  }
}

TEST(Plan, AmdLargestTileFitsWithoutPadding) {
  // 256 x 64 f16 per operand: 2 x 32 KiB unpadded is exactly gfx942's 64 KiB (padded rows
  // needed 69,632 bytes).
  Planned p;
  FakeQueries q;
  plan(p, gemm(256, 256, 64), "gfx942", /*async=*/false, q);
  ASSERT_TRUE(p.ok) << (q.refused.empty() ? "" : q.refused.back());
  EXPECT_EQ(p.plan.sharedMemory.bytes, 65536);
  for (const SharedTile &t : p.plan.tiles)
    EXPECT_EQ(t.xorUnit, 8);
}

TEST(Plan, AmdDropsConflictFreePaddingOnlyWhereTheBytesMatter) {
  // Padded rows are conflict-free for 64-element rows too. 128 x 64 tiles: 34,816 padded bytes
  // leave room for one workgroup in 64 KiB, 32,768 unpadded for two: XOR. 256 x 128 x 64:
  // 52,224 or 49,152 bytes, one workgroup either way: the padding stays.
  for (int bn : {128, 256}) {
    Planned p;
    FakeQueries q;
    plan(p, gemm(bn == 128 ? 128 : 256, 128, 64), "gfx942", /*async=*/false, q);
    ASSERT_TRUE(p.ok);
    for (const SharedTile &t : p.plan.tiles) {
      EXPECT_EQ(t.modeledPad, 0);
      EXPECT_EQ(t.modeledXor, 0);
      EXPECT_EQ(t.xorUnit, bn == 128 ? 8 : 0) << bn;
    }
    EXPECT_EQ(p.plan.sharedMemory.bytes, bn == 128 ? 32768 : 52224);
  }
}

// hardware(lds_dma = 1) (LoopSchedule::ldsDma): only where the kernel asks, the target has LDS
// DMA (gfx942, not gfx1100) and every tile's copy qualifies (PlanQueries::ldsDmaCopies); the
// 256 x 128 x 64 tiles, padded for the register copy, take their conflict-free XOR layout (the
// DMA fills unpadded rows); no MFMA interleaving hints on such a loop.
TEST(Plan, LdsDmaOnlyWhereAskedForAvailableAndEveryTileQualifies) {
  auto asked = [](std::string text) {
    return text.replace(text.find("    wave(N, "), 0, "    hardware(lds_dma = 1);\n");
  };
  struct {
    std::string text;
    const char *target;
    int64_t dma;
    bool want;
  } cases[] = {{asked(gemm(256, 128, 64)), "gfx942", 16, true},
               {asked(gemm(64, 64, 32)), "gfx90a", 4, true},
               {gemm(256, 128, 64), "gfx942", 16, false},        // not asked for
               {asked(gemm(256, 128, 64)), "gfx942", 0, false},  // a tile does not qualify
               {asked(gemm(64, 64, 32)), "gfx1100", 4, false}};  // no LDS DMA
  for (const auto &c : cases) {
    Planned p;
    FakeQueries q;
    q.dma = c.dma;
    plan(p, c.text, c.target, /*async=*/false, q);
    ASSERT_TRUE(p.ok);
    const LoopSchedule &s = onlyLoop(p);
    EXPECT_EQ(s.ldsDma, c.want) << c.target << " " << c.dma;
    EXPECT_FALSE(s.async);
    if (c.want) {
      EXPECT_FALSE(s.interleave);
      for (const SharedTile &t : p.plan.tiles)
        EXPECT_EQ(t.pad, 0);
    }
    if (c.want && c.dma == 16) {
      EXPECT_EQ(p.plan.sharedMemory.bytes, 49152); // XOR instead of 52,224 padded bytes
    }
  }
}

TEST(Plan, Gfx1100ModelsEach16BytePieceOfAWmmaRead) {
  // WMMA reads 32 bytes per lane, as two 16-byte instructions: 16-byte units XOR (row / 2) % 4
  // are conflict-free; rows padded by 16 bytes conflict on the copy's stores (4 per wave).
  Planned p;
  FakeQueries q;
  plan(p, gemm(64, 64, 32), "gfx1100", /*async=*/false, q);
  ASSERT_TRUE(p.ok);
  for (const SharedTile &t : p.plan.tiles) {
    EXPECT_EQ(t.modeledPad, 4);
    EXPECT_EQ(t.modeledXor, 0);
    EXPECT_EQ(t.xorUnit, 16);
  }
}

TEST(Plan, NvidiaKeepsItsLayouts) {
  Planned p;
  FakeQueries q;
  plan(p, gemm(64, 64, 32), "sm_80", /*async=*/false, q);
  ASSERT_TRUE(p.ok);
  for (const SharedTile &t : p.plan.tiles) {
    EXPECT_EQ(t.xorUnit, 0);
    EXPECT_EQ(t.modeledPad, -1);
  }
}

TEST(Plan, TooMuchSharedMemoryIsRefused) {
  // One 512 x 256 f16 tile pair: 512 KB even with one buffer.
  Planned p;
  FakeQueries q;
  plan(p, gemm(512, 512, 256), "sm_90", false, q);
  EXPECT_FALSE(p.ok);
  ASSERT_FALSE(q.refused.empty());
  EXPECT_NE(q.refused.back().find("bytes of shared memory"), std::string::npos) << q.refused.back();
}

} // namespace
} // namespace wave
