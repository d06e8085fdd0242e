// Distribution: from a checked kernel's constraints to the shape of its launch and the index
// every thread uses (docs/internals.md, "Pipeline"; docs/hardware.md section 1).
//
// Per kernel it derives the wave size, waves per block, block and grid sizes (the grid as a
// formula of dynamic symbols), loop trip counts, expansion counts, and for every tensor access
// the index expression of each memory dim as a sum of workgroup, wave, loop, thread and
// expansion terms, simplified with the range facts of the hardware ids and the kernel's
// assumptions; for a mapped access also the index of each register dim (the iterators) and
// which memory-side bounds need a check. It also decides each access's thread layout (its
// "anchor": an MMA operand or accumulator, a reduction, or the plain read/write layout).
#pragma once

#include "target/target_table.h"
#include "frontend/diagnostics.h"
#include "ir/graph.h"
#include "symbolic/facts.h"

#include <string>
#include <vector>

namespace wave {

struct DimIndex {
  ir::Dim dim;             // memory-side dim (a register dim in AccessIndex::regDims)
  sym::IndexExpr start;    // index of element g of clone (i_*) of this thread
  int64_t elements = 1;    // elements per thread along this dim (g ranges over them)
  bool contiguous = false; // the g elements are consecutive along this dim
  // The index may reach the dim's size: compare it with the size (a tile can overrun the dim,
  // or a mapped index is not proven to stay inside the tensor) and no assumption proves
  // otherwise.
  bool masked = false;
  // The index may be negative (only a mapped memory-side index can be): compare it with 0.
  bool maskedBelow = false;
  // A write or atomic whose layout may reach past its workgroup's tile of a dim that a
  // workgroup splits (clones or elements that overrun the tile): those elements are another
  // workgroup's, dead here (LayoutMachine::workgroupTiles, passes/thread_layout.h), and the
  // access also compares the index with `tileEnd` (the end of the workgroup's tile); `masked`
  // is then set too.
  bool maskedTile = false;
  sym::IndexExpr tileEnd = sym::IndexExpr(0);
  // A streamed row (elements == 0: a dynamic or long reduced row): its consumers walk it in a
  // loop, `chunk` elements per lane per trip (g = trip * chunk + 0 .. chunk - 1).
  int64_t chunk = 0;
  // A dynamic dim that no constraint splits and no lane of this access runs along, while the
  // lanes of another access run along it (a transposing copy whose two dims are both dynamic
  // and unsplit): its index is the symbol `$W_<dim>`, and a write walks it one element per trip
  // of a loop over the whole dim (stream.cpp, emitLoopedWrite), with the streamed reads its
  // value depends on re-read in the write's layout. Not masked: the loop stays inside the dim.
  bool walked = false;
};

struct AccessIndex {
  const ir::Op *op = nullptr;
  std::string tensor;
  std::string anchor; // "mma lhs F32_16x16x16_F16", "reduction", "read/write"
  std::vector<DimIndex> dims; // the memory side, one per dim of the tensor
  // An access with a mapping (docs/language.md section 3): the register side, one per dim of the
  // register value (the mapping's iterators), in the order of the mapping's register side (a
  // read's: the value's dims in order). Its `start` is the
  // iterator's value for element g, the thread layout of the register value; `masked` is the
  // iteration bound (the index may reach the register dim's size). `dims` are then the
  // mapping's expressions of these indices. Empty without a mapping: the memory dims are the
  // register dims.
  std::vector<DimIndex> regDims;
};

struct LoopInfo {
  ir::Dim dim;
  int64_t tile;
  // ceildiv(size, tile), or with the tiling's `end` the workgroup's own count (it may depend
  // on the workgroup ids $WGa).
  sym::IndexExpr tripCount;
};

struct ExpansionInfo {
  ir::Dim dim;
  sym::IndexExpr vectorShape;
  int64_t count;
};

struct Distribution {
  unsigned waveSize = 64; // threads of one hardware wave (threads_per_wave)
  // Threads that one wave of the constraints stands for: waveSize, or a warpgroup (waveSize x
  // MmaKind::groupWaves) in a kernel whose mma runs on warpgroups (wgmma). Wave ids, lane
  // layouts and the block are in these units; shuffles stay within a hardware wave.
  unsigned groupSize = 64;
  unsigned wavesPerBlock[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  sym::IndexExpr grid[3];
  std::vector<std::string> dynamicSymbols;
  std::vector<LoopInfo> loops;
  std::vector<ExpansionInfo> expansion;
  std::vector<AccessIndex> accesses;
  sym::Facts facts; // hardware ranges + assumptions, for later passes
  // Workgroup dims whose grid axis runs one workgroup even when the dim is empty (a tensor the
  // kernel writes lacks the dim: a reduction over it writes the identity). Every other
  // workgroup dim is non-empty in any launch that runs a workgroup.
  std::vector<ir::Dim> gridCoversEmpty;
};

// Fills `out`; reports conflicts (e.g. an elements_per_thread that contradicts an MMA layout).
// Returns false on error.
bool distribute(const ir::Kernel &kernel, const TargetInfo &target, DiagnosticEngine &diags,
                Distribution &out);

// The part of dim d's index at `op` that is the same for every lane of a wave: the workgroup,
// wave, loop (inside `iterate d`) and expansion terms (docs/hardware.md 1.3).
sym::IndexExpr uniformIndex(const ir::Kernel &kernel, const Distribution &dist, const ir::Op &op,
                            const ir::Dim &dim);

// The index of every dim of `shape` for operand `operand` (0 lhs, 1 rhs, 2 accumulator and
// result) of an mma: its uniform terms plus the kind's lane layout on the operand's two matrix
// dims (element g of lane T0 % W); batch dims have only uniform terms.
std::vector<DimIndex> mmaOperandIndex(const ir::Kernel &kernel, const Distribution &dist,
                                      const ir::Op &mma, int operand, const ir::Shape &shape);

// Elements per thread of that operand: the kind's, times the K steps of a wgmma whose K dim is
// walked in a wider step (a register A operand then holds every step's fragments).
int64_t mmaOperandElements(const Distribution &dist, const ir::Op &mma, int operand);

// `wavec --emit=distribution`.
// The access the distribution made for `op` (null when there is none).
const AccessIndex *accessOf(const Distribution &d, const ir::Op &op);
// The index of memory dim `dim` in an access (null when the access has none for it).
const DimIndex *dimIndexOf(const AccessIndex &a, const ir::Dim &dim);

// The vector of an access over `dims`: elements per lane, the most along a dim whose index
// depends on the element g (1 when none), and the one dim g runs along (empty when none or
// several). The emitter's rule (codegen/emitter/access.cpp, setVectorDim); used by the passes
// that predict its accesses (legalize, carried shapes).
struct LaneVector {
  int64_t elems = 1;
  std::string dim;
};
LaneVector laneVector(const std::vector<DimIndex> &dims);

std::string printDistribution(const ir::Kernel &kernel, const TargetInfo &target,
                              const Distribution &d);

} // namespace wave
