// The code generator's plan of one kernel: what the promotion, cooperative-copies, schedule and
// shared-memory-plan passes (passes/pass_list.h) decided, as data. The MLIR emitter reads it and
// decides none of it; --print-ir-after=NAME prints each pass's part (printPlan).
//
// These passes run in the code generator (libwavec_codegen.so), before any op is emitted,
// because they ask the emitter's access model questions it alone can answer (PlanQueries: the
// index of each dim of a read, whether a copy can be cp.async). Their files are compiled into
// that library (src/codegen/CMakeLists.txt), like thread_layout.cpp.
//
//   promotion          promotion.cpp           which reads are staged, each tile's shape and
//                                              layout (padding, or the wgmma swizzle atoms)
//   cooperative-copies cooperative_copies.cpp  elements per load and loads per thread of each
//                                              tile's copy; cp.async or through registers
//   schedule           schedule.cpp            per loop: buffers, swizzle, copy kind, prefetch
//                                              distance, fragment read-ahead, wgmma overlap
//   shared-memory-plan shared_memory_plan.cpp  reduction scratch sizes (before emission,
//                                              codegen/emitter/reduction_scratch.cpp), then
//                                              offsets, sharing of bytes, alignment, static or
//                                              dynamic (after emission: live spans)
#pragma once

#include "frontend/diagnostics.h"
#include "ir/graph.h"
#include "passes/distribution.h"
#include "symbolic/index_expr.h"
#include "target/target_table.h"

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace wave {

// One tile of the workgroup's shared-memory arena.
struct SharedTile {
  const ir::Op *op = nullptr;   // the promoted read, or the reduction whose scratch it is
  bool scratch = false;         // a cross-wave reduction's scratch (sized before emission)
  bool relayout = false;        // a move between thread layouts (codegen/emitter/relayout.cpp)
  int64_t pieces = 1;           // a layout move made in this many pieces of the tile, one by one
  ScalarType dtype = ScalarType::F32;
  int64_t offsetBytes = 0, bytes = 0;  // offset in the arena (shared-memory-plan); one buffer
  std::vector<int64_t> tile;           // per memory dim (unpadded)
  std::vector<sym::IndexExpr> strides; // in elements, padded innermost
  int stages = 1;               // buffers (2..4: the loop's cp.async pipeline)
  int64_t pad = 0;              // elements of padding per innermost row
  int64_t swizzle = 0;          // > 0: rows unpadded, 16-byte chunks rotated by the row number
  // > 0: a wgmma operand tile in the canonical K-major layout of rows of this many bytes
  // (32, 64 or 128), unpadded, 16-byte chunk c of row r stored at chunk c XOR the row's phase
  // (the hardware's 32/64/128-byte swizzle); each buffer starts at a multiple of `align` bytes
  // of the arena, whose base is aligned to it at run time.
  int64_t xorBytes = 0;
  // > 0: rows wider than 128 bytes are stored as column blocks of 128 bytes (every row's first
  // 128 bytes, then every row's next 128 bytes, ...), this many bytes apart.
  int64_t blockBytes = 0;
  // > 0: rows unpadded, read in units of this many bytes (the operand read's bytes per lane);
  // unit u of row r is stored at unit u XOR ((r / period) % phases) (xorUnitPhases below).
  // Chosen by lds_layout.cpp where its bank model finds the layout conflict-free for both the
  // copy's stores and the operand reads (and, if the padding is too, where it saves LDS that
  // matters).
  int64_t xorUnit = 0;
  // The bank model's conflicting wavefronts per wave (lds_layout.cpp) of the padded and the
  // XOR layouts, stores plus reads; -1: not modeled. For the --print-ir-after dump.
  int64_t modeledPad = -1, modeledXor = -1;
  int64_t xorCandidate = 0; // the unit of an XOR layout the model found conflict-free
  int64_t align = 16;
  // The span of the emitted code that uses the tile (indices of the emitter's item stream,
  // from its first access to its last, widened to the whole of the outermost loop around any
  // of them); -1: not known, live throughout. Tiles whose spans are disjoint may share bytes
  // (shared-memory-plan).
  long liveFirst = -1, liveLast = -1;
};

// A read of a `shared` tensor staged through a tile.
struct Promotion {
  const ir::Op *op = nullptr;
  int alloc = -1;                     // its SharedTile
  std::vector<sym::IndexExpr> origin; // per tile dim: the tile's first index (WG, IV terms)
  // A mapped read: the tile is over the register dims (the iterators), filled through the
  // mapping; the read itself loads its layout from it like an unmapped one.
  bool mapped = false;
  bool wgmma = false;  // read by wgmma only, through descriptors (SharedTile::xorBytes)
  bool nMajor = false; // a wgmma B tile stored [K, N] (N innermost)
  // cooperative-copies: the workgroup copies the tile in `copies` rounds of one `lanes`-element
  // vector per thread; `async` when every vector can be one 16-byte cp.async.
  int64_t lanes = 1;
  int64_t copies = 1;
  bool async = false;
  // The AMD LDS-DMA copy (LoopSchedule::ldsDma): dwords per thread of the tile in an unpadded
  // layout, where each dword can be one lane of a `buffer_load_dword ... lds` (whole, in or out
  // of bounds as a unit, within the buffer offset's range; PlanQueries::ldsDmaCopies); 0: not.
  int64_t dmaCopies = 0;
};

// How a loop (an `iterate`) stages its promoted reads.
struct LoopSchedule {
  const ir::Op *loop = nullptr;
  std::vector<const ir::Op *> staged; // the promoted reads of its body, in body order
  // cp.async: `stages` buffers per tile, later tiles copied while the current one is read;
  // otherwise a register prefetch (tile i + 1 loaded at the top of iteration i, stored at its
  // end) into one buffer (`stages` 1) or, on AMD, into the other of two (`stages` 2: tile i is
  // read from buffer IV & 1).
  bool async = false;
  // How an async schedule copies its tiles: cp.async (16 bytes per thread, completed by the
  // copy-group waits that barrier insertion places), or TMA (sm_90a wgmma loops whose tiles
  // qualify and that do not issue their scores ahead, PlanQueries::tensorCopyable: one thread
  // issues one cp.async.bulk.tensor per 128-byte column block of each tile, completed on one
  // mbarrier per buffer that every thread waits on; the tensor maps come from the launch).
  enum class Copy { CpAsync, Tma } copy = Copy::CpAsync;
  int stages = 1;
  bool swizzle = false; // 16-byte chunks rotated instead of padded rows
  bool wgmma = false;   // some staged tile is read by wgmma
  // Fragment read-ahead (with cp.async and several K steps per tile): step 0 of tile i + 1 is
  // read at the end of iteration i; `stepwise`: step k + 2 after the MMAs of step k.
  bool readAhead = false;
  bool stepwise = false;
  int mmaInFlight = 0; // wgmma groups left in flight at the end of an iteration
  // Scores ahead (schedule.cpp, scoreAheadOp): a cp.async or warp-specialized TMA wgmma loop
  // of two products where
  // the first reads only a staged tile, a loop-invariant A and a constant accumulator
  // (attention's S = Q * K^T) and the second uses what the first's result becomes (P * V).
  // The first product of tile i + 1 is issued in iteration i, before the second product of
  // tile i, so the wait for it leaves the second in flight while iteration i + 1 works on its
  // result; tile 0's is issued before the loop. The first product, when set.
  const ir::Op *scoreAhead = nullptr;
  int prefetch = 1;    // tiles copied before the loop (the prefetch distance)
  // Warp-specialized (TMA loops only, planWarpSpecialization): a producer warpgroup added to
  // the block issues the copies into the ring, one "full" barrier per buffer (expect-tx) and
  // one "empty" barrier per buffer that the consumer warps arrive on once the products that
  // read it retired; no workgroup barrier in the loop.
  bool specialized = false;
  // AMD MFMA loops with the register prefetch (schedule.cpp): the wave's priority raised
  // (s_setprio 1) from this tile's first LDS read to the end of the body, and at the end of
  // the body a pipeline of llvm.amdgcn.sched.group.barrier groups that interleaves the MFMAs
  // with the memory instructions of that region (src/codegen/emitter/iterate.cpp; AmdLowering::
  // interleaveMatrixOps):
  // step 0's LDS reads first, then per MFMA an even share of the later steps' LDS reads (over
  // all but the last step's MFMAs) and one global load (from the first MFMA on, where the
  // region has any), the LDS stores after the last MFMA. The prefetch's global loads stay at
  // the top of the body, before the barrier (issued behind the LDS reads instead, docs/
  // performance.md "AMD schedules", they cost the 128x128x64 GEMM 64 VGPRs and a workgroup).
  bool interleave = false;
  int kSteps = 1; // MMA K steps per tile
  // Registers per lane that the accumulators of the MMAs reading the staged tiles take.
  int64_t accRegisters = 0;
  // AMD LDS DMA (`hardware(lds_dma = 1)` on a target with TargetInfo::ldsDma; every staged tile
  // with Promotion::dmaCopies and an unpadded layout): the register prefetch's buffers and
  // barriers, but tile i + 1 is copied by `buffer_load_dword ... lds` right behind this
  // iteration's reads of tile i (no registers, no LDS stores), completed by s_waitcnt vmcnt(0)
  // before the barrier that precedes the next reads (codegen/emitter/shared_memory.cpp, ldsDmaCopy).
  bool ldsDma = false;
};

// The arena: its size, the alignment of its base, and whether the launch provides it
// (dynamic shared memory, above the target's static limit).
struct SharedMemoryPlan {
  int64_t bytes = 0;
  int64_t align = 16;
  int64_t dynamicBytes = 0;
  int64_t sequentialBytes = 0; // the arena with every tile in bytes of its own
  bool reused = false;         // tiles with disjoint live spans share bytes
};

// The order in which the workgroups take their output tiles (schedule.cpp, planRaster). With
// `group` > 0 the kernel remaps its workgroup ids at its start: the launch order's linear id
// (axis 0 fastest) walks groups of `group` workgroups along grid axis 0, each group down every
// workgroup of axis 1 (axis 0 fastest within the group) before the next, so the workgroups
// resident at once share a few tiles of both operands in L2 instead of one column of one and
// every row of the other. 0: the launch order.
struct RasterPlan {
  int64_t group = 0;
  int64_t tiles[2] = {0, 0}; // the workgroup tile along grid axes 0 and 1
  int64_t resident = 0;      // workgroups the model counts as running at once
  // Heaviest first (planRaster): axis a's ids run backwards (grid - 1 - block id) where a
  // tiling's `end` gives the workgroups of higher ids along it more trips (causal attention's
  // loop over keys stops at its query tile), so the longest workgroups start first and the
  // short ones fill the last wave.
  bool reverse[3] = {false, false, false};
};

// Warp specialization (schedule.cpp, planWarpSpecialization): `producerThreads` > 0 adds a
// producer warpgroup after the distribution's block (threads block[0] .. block[0] +
// producerThreads - 1 along axis 0); its first thread issues the TMA copies of the specialized
// loop, the rest exit. setmaxnreg moves registers: the producer warpgroup down to
// `producerRegisters`, the consumers up to `consumerRegisters` (0: leave as launched).
struct WarpSpecialization {
  int64_t producerThreads = 0;
  int producerRegisters = 0, consumerRegisters = 0;
  // Persistent tiles (planWarpSpecialization): the launch runs at most `perSM` workgroups per
  // multiprocessor (the stub clamps grid axis 0 to that times the device's SM count, axes 1
  // and 2 to 1); each walks the output tiles t = block_id.x, t + grid_dim.x, ... of the grid
  // the distribution gives (in the raster order), the producer running into the next tile's
  // ring while the consumers store the last one. 0: one tile per workgroup.
  int64_t perSM = 0;
  // Ping-pong (planWarpSpecialization): > 0, the consumer warpgroups (this many, 2 or more)
  // of the specialized loop take turns issuing their products, FlashAttention-3's
  // inter-warpgroup overlap: warpgroup k waits on named barrier 2 + k before issuing an
  // iteration's products and, once they are committed, arrives on warpgroup k + 1's (mod
  // `pingpong`), so one warpgroup's softmax runs while the tensor cores work through the
  // other's products. Each barrier counts 256 threads (its warpgroup's and the arriving
  // one's); before the loop the last warpgroup arrives on barrier 2 so warpgroup 0 goes first
  // (one arrival stays pending at the end: a token that goes round). Only for a loop whose
  // body needs no workgroup barrier (the emitter refuses one there as a wavec bug).
  int64_t pingpong = 0;
};
// The epilogue's store staged through shared memory (planEpilogueStaging, schedule.cpp): the
// kernel's last op, a write of a [rows, cols] workgroup tile of a 2-D global tensor parameter,
// goes after the warp-specialized TMA loop's last product into the ring's buffers of tile
// `alloc` (free then: every copy was waited for, every product retired), in boxes of `rows` x
// `boxCols` elements (rows of 128 bytes, the 128-byte swizzle, `rows` x 128 bytes apart), and
// one thread stores the boxes with TMA (cp.async.bulk.tensor shared::cta -> global) through a
// tensor map of the output (clipped at the tensor's edges by the hardware).
struct EpilogueStaging {
  const ir::Op *write = nullptr; // null: the write stores from registers
  int alloc = -1;
  int64_t rows = 0, cols = 0, boxCols = 0;
  unsigned axis[2] = {0, 1}; // the workgroup axis of each tensor dim
};
struct KernelPlan {
  std::vector<SharedTile> tiles;
  WarpSpecialization specialization;
  EpilogueStaging epilogue;
  std::map<const ir::Op *, Promotion> promotions;
  std::map<const ir::Op *, LoopSchedule> loops;
  RasterPlan raster;
  SharedMemoryPlan sharedMemory;
};

// What the plan passes ask the code generator's access model.
struct TileAccess {
  std::vector<std::pair<ir::Dim, sym::IndexExpr>> dims; // per memory dim: its index
  int64_t elems = 1;                                    // elements per lane
  ScalarType dtype = ScalarType::F32;
};
class PlanQueries {
public:
  virtual ~PlanQueries() = default;
  // The register-side access of a promoted read; false after reporting.
  virtual bool tileAccess(const ir::Op &read, TileAccess &out) = 0;
  // Whether every vector of the tile's cooperative copy can be one 16-byte cp.async.
  virtual bool asyncCopyable(const Promotion &p) = 0;
  // The dwords per thread of the tile's LDS-DMA copy (Promotion::dmaCopies), or 0 where the
  // target has none or a dword of the copy could be partly in bounds, misaligned, or beyond the
  // buffer offset's range.
  virtual int64_t ldsDmaCopies(const Promotion &p) = 0;
  // Whether TMA boxes of its tensor can write the tile (its layout planned), one per 128-byte
  // column block: a tile of a tensor of rank 2 to 5, extent 1 but in the last two dims, read
  // by wgmma (K- or N-major) in the 128-byte swizzle, at most 256 rows, the tensor's rows a
  // proven multiple of 16 bytes, on a target with TMA (src/codegen/emitter/tensor_copy.cpp).
  virtual bool tensorCopyable(const Promotion &p) = 0;
  // Reports that the kernel needs what code generation cannot do (`id`, an unsupported-* kind
  // whose message is `what`); returns false.
  virtual bool refuse(DiagId id, const std::string &what, SourceRange loc) = 0;
  // Reports that the arena needs `bytes` of shared memory, more than the target has; false.
  virtual bool refuseSharedMemory(int64_t bytes) = 0;
};

// The XOR layout of rows of `rowBytes` in units of `unitBytes` (SharedTile::xorUnit): row r's
// phase is (r / period) mod phases, where `period` rows share one 128-byte bank period and
// `phases` units fill it; false when the units do not tile the row by a power of two.
inline bool xorUnitPhases(int64_t rowBytes, int64_t unitBytes, int64_t &period,
                          int64_t &phases) {
  if (unitBytes < 4 || unitBytes > 16 || (unitBytes & (unitBytes - 1)) || rowBytes <= 0)
    return false;
  period = rowBytes >= 128 ? 1 : 128 / rowBytes;
  phases = std::min<int64_t>(rowBytes, 128) / unitBytes;
  return phases >= 2 && (phases & (phases - 1)) == 0 && period * rowBytes >= 128 &&
         (period & (period - 1)) == 0 && rowBytes % (phases * unitBytes) == 0;
}

// The context of the plan passes.
struct PlanContext {
  const ir::Kernel &kernel;
  const Distribution &dist;
  const TargetInfo &target;
  const sym::Facts &facts;
  PlanQueries &queries;
  KernelPlan &plan;
};

// Whether a read is of a promoted (`shared`) tensor parameter.
bool isPromotedRead(const ir::Op &op);
// The wgmma that reads `read`'s value as its A (lhs) or B operand, when every user of the value
// is one; null otherwise.
const ir::Op *wgmmaUser(const ir::Op &read, bool *lhs = nullptr);
// Whether the wgmma products of loop `iterate` may stay in flight into the next iteration:
// their results only accumulate (yielded, and in the next iteration only the accumulator of a
// wgmma). A product whose result other ops use (attention's scores) is waited for at once.
bool wgmmaOverlaps(const ir::Op &iterate);

// promotion.cpp: the tile of promoted read `read` (a new SharedTile) and its Promotion.
bool planPromotion(PlanContext &c, const ir::Op &read);
// cooperative_copies.cpp: lanes, copies and async of a Promotion.
bool planCooperativeCopy(PlanContext &c, Promotion &p);
// The elements per thread of a tile's cooperative copy (up to 16 bytes; planCooperativeCopy).
int64_t copyLanes(const std::vector<int64_t> &tile, ScalarType t, int64_t threads);
// lds_layout.cpp: on targets without ldmatrix (AMD), models the banks for one wave's copy
// stores and operand reads of a promoted tile, padded and in the XOR layout
// (SharedTile::xorUnit), and takes the XOR layout where it is conflict-free and the padding not.
void chooseLdsLayout(PlanContext &c, const TileAccess &read, SharedTile &tile);
// lds_layout.cpp, after every promotion: the tiles whose padded rows are conflict-free too take
// the XOR layout only where dropping the padding makes the promoted tiles fit the target's
// shared memory or lets more workgroups share it.
void settleLdsLayouts(PlanContext &c);
// lds_layout.cpp: the XOR layout of the tile's candidate unit (SharedTile::xorCandidate), its
// rows unpadded.
void applyXor(SharedTile &al);
// schedule.cpp: the LoopSchedule of `iterate`, whose staged reads are planned; sets the
// stages, swizzle and layout of their tiles.
bool planLoop(PlanContext &c, const ir::Op &iterate);
// schedule.cpp, after every loop: the workgroup order (KernelPlan::raster). Grouped where a
// loop is an async wgmma GEMM pipeline (one staged operand along the dim of workgroup axis 0
// and not of axis 1, one the other way round), the kernel's grid has workgroup axes 0 and 1,
// the target counts its compute units, and axis 0 may have more workgroups than one group.
void planRaster(PlanContext &c);
// schedule.cpp, after planRaster: warp specialization (KernelPlan::specialization,
// LoopSchedule::specialized) of the kernel's one TMA loop, when it is a top-level op of the
// kernel, the block is one axis of whole warpgroups with room for one more, and the kernel
// does not turn it off (`hardware(..., warp_specialize = 0)`). Then persistent tiles
// (WarpSpecialization::perSM) where the kernel asks for them (`hardware(..., persistent = 1)`)
// and the grid has no axis 2.
void planWarpSpecialization(PlanContext &c);
// schedule.cpp, after planWarpSpecialization: EpilogueStaging of a warp-specialized kernel
// without persistent tiles (whose producer fills the ring for the next tile during the
// epilogue) whose last op writes a 2-D f16/bf16/f32 global tensor parameter tile by tile (both
// dims workgroup-tiled, unmapped), rows a proven multiple of 16 bytes, the tile's bytes within
// one ring tile's buffers, unless `hardware(..., stage_epilogue = 0)`.
void planEpilogueStaging(PlanContext &c);
// The group of the raster order for workgroup tiles of `tile0` x `tile1` rows of the two
// operands and `resident` workgroups running at once: the power of two from 2 to 64 that
// minimizes the operand rows those workgroups read, group x tile0 + ceil(resident / group) x
// tile1 (the smaller on a tie).
int64_t rasterGroup(int64_t tile0, int64_t tile1, int64_t resident);
// shared_memory_plan.cpp
// Recomputes strides and bytes: padded rows, or (swizzle) unpadded rows whose 16-byte chunks
// are rotated by the row number so that 8 consecutive rows hit distinct banks. A wgmma tile
// keeps its layout.
void relayout(SharedTile &tile, ScalarType t, bool swizzle);
// Whether a tile's 16-byte chunks may be rotated instead of padding its rows.
bool swizzlable(const std::vector<int64_t> &tile, ScalarType t);
// Byte offsets of the tiles in the arena (each aligned to its `align`) and the arena's size,
// with room to align its base at run time when a tile needs more than 16 bytes. Each tile goes
// above every earlier tile, or with `reuse`, above every earlier tile live at the same time
// (SharedTile::liveFirst/liveLast), so tiles with disjoint spans may share bytes.
int64_t placeTiles(std::vector<SharedTile> &tiles, bool reuse = false);
// Whether two tiles' bytes overlap in the arena (after placeTiles).
bool tilesOverlap(const SharedTile &a, const SharedTile &b);
// The arena of the emitted kernel (its tiles complete, with their live spans); false after
// reporting when it exceeds the target's shared memory. Tiles share bytes only when the arena
// with a place of its own for every tile would exceed the target's static shared memory
// (sharing costs a barrier between the uses; below that limit it buys nothing that matters).
bool planSharedMemory(PlanContext &c);

// The plan passes before emission, in pipeline order: promotion (tiles numbered in the order
// the kernel's code reaches the reads: a loop's staged reads as the loop begins), cooperative
// copies, then the schedule of each loop in program order. `after(pass)` runs after each.
bool planKernel(PlanContext &c, const std::function<void(const char *)> &after);

// --print-ir-after=NAME for "promotion", "cooperative-copies", "schedule",
// "shared-memory-plan": the kernel's plan as that pass left it.
std::string printPlan(const std::string &pass, const ir::Kernel &kernel, const KernelPlan &plan,
                      const Distribution &dist);

} // namespace wave
