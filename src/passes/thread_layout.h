// Thread layouts of register values, and how to move a value from one layout to another
// (docs/language.md section 13: every move between layouts is explicit).
//
// A layout says where every element a thread holds sits in the value's tensor: per dim, an
// index expression over the thread ids ($T0, $T1, $T2), the expansion clone ($i_<dim>), the
// element within the thread's vector ($g, 0 <= g < elems) and symbols that are the same for
// every thread of a workgroup ($WG*, $IV_*, problem sizes). A dim the layout does not name is
// one the value is uniform along (a reduction result, a broadcast).
//
// planRelayout() answers, for two layouts of values with the same dims (or the source having a
// subset: it is broadcast along the rest), where each destination element comes from: the same
// place (nothing to do), another element of the same thread (a register permutation: chained
// matrix products whose accumulator layout is the next operand's layout up to element order),
// or another lane of the same wave (a shuffle; e.g. an mma.sync accumulator feeding the next
// mma as its B operand is an 8x8 transpose across lanes). Elements no lane of the wave holds
// (another wave's) make the plan Impossible, with the reason, unless they lie outside the
// workgroup's tile (LayoutMachine::workgroupTiles): those are dead and take whatever the plan's
// pattern gives them.
//
// The answer is found by evaluating both layouts for every lane (compiled expressions, two
// assignments of the thread-independent symbols, the first and last wave of axis 0), and a
// Same answer is proven symbolically. Lane patterns are described as "bit-linear" functions of
// the lane id (base + the sum of a weight per set bit), which covers the permutations and
// replications of every matrix layout in the target table.
#pragma once

#include "symbolic/facts.h"
#include "symbolic/index_expr.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace wave {

using CloneAssign = std::map<std::string, int64_t>; // $i_<dim> -> clone index

struct ThreadLayout {
  std::map<std::string, sym::IndexExpr> index; // by dim name
  int64_t elems = 1;
  std::set<std::string> cloneSyms; // the $i_<dim> symbols the value's clones vary over
};

// The launch shape layouts live in.
struct LayoutMachine {
  unsigned waveSize = 64; // threads of one wave of the constraints (a warpgroup for wgmma)
  // Lanes a shuffle reaches (the hardware wave); 0: the whole waveSize. An element held only
  // by another hardware wave of the group makes the plan Impossible.
  unsigned shuffleWidth = 0;
  unsigned block[3] = {64, 1, 1};
  std::map<std::string, int64_t> cloneCounts; // $i_<dim> -> expansion count
  // Per dim that a workgroup constraint splits and no `iterate` tiles: the workgroup-id symbol
  // of its grid axis ($WG0..2) and the workgroup's tile. An element of a value outside its
  // workgroup's tile ([$WG * tile, $WG * tile + tile) along such a dim) belongs to another
  // workgroup and is dead here: every write and atomic masks it (DimIndex::tileEnd,
  // passes/distribution.h), and no other operation moves it to a place inside the tile. So a
  // move may leave such an element with any value when no lane of the wave holds it (clones
  // that overrun the tile, docs/language.md section 13).
  std::map<std::string, std::pair<std::string, int64_t>> workgroupTiles;
  // Per dim of a known size: the size. A place at or past it holds no element of any tensor
  // (every write and atomic compares its index with the size), so the shared-memory move
  // (planSharedRelayout) counts it dead as well, where the origin's place is known.
  std::map<std::string, int64_t> dimSizes;
  // Every assignment of the clone symbols `syms` (each over its count), in a fixed order.
  std::vector<CloneAssign> clones(const std::set<std::string> &syms) const;
};

// A function of the lane id l (0 <= l < wave size): base + sum over bits j set in l of weight[j].
struct BitLinear {
  int64_t base = 0;
  std::vector<int64_t> weight;
  int64_t at(int64_t lane) const;
  bool isIdentity() const; // at(l) == l for every lane
  bool isConstant() const;
};

struct RelayoutPlan {
  enum Kind { Same, InLane, CrossLane, Impossible } kind = Impossible;
  std::vector<CloneAssign> dstClones, srcClones; // enumeration orders the picks refer to
  struct Pick {
    size_t srcClone = 0;
    int64_t elem = 0;
    bool operator==(const Pick &o) const { return srcClone == o.srcClone && elem == o.elem; }
  };
  // InLane: inLane[dst clone][element] = where it comes from in the same thread.
  std::vector<std::vector<Pick>> inLane;
  // CrossLane: per destination element, the lane it comes from and which source element; when
  // the source element differs between lanes, `choice` indexes `candidates` per lane.
  struct LanePick {
    BitLinear lane;
    std::vector<Pick> candidates;
    BitLinear choice;
  };
  std::vector<std::vector<LanePick>> crossLane;
  std::string why; // Impossible: the first element no lane of the wave holds
};

// `facts` proves the Same case (index expressions equal under the kernel's facts).
RelayoutPlan planRelayout(const ThreadLayout &src, const ThreadLayout &dst,
                          const LayoutMachine &machine, const sym::Facts &facts);

// True when a value in layout `src` is already a value in layout `dst`: every dim of src has
// the same index in dst, and the elements correspond (same count, or src has one element that
// does not depend on $g and is splat).
bool sameLayout(const ThreadLayout &src, const ThreadLayout &dst, const sym::Facts &facts);

// A move between layouts through a shared-memory tile, for when planRelayout finds elements
// that no lane of the wave holds (docs/language.md section 13): every thread stores the
// elements it holds at their place in a tile of the value, and after a barrier loads those it
// needs. The tile is the box of the live elements the destination holds (those inside the
// workgroup's tile, LayoutMachine::workgroupTiles; relative to the source's first element: the
// same for every workgroup), with the source's dims, row-major; the source must hold every one
// of them, its elements outside the box are not stored, and destination elements outside the
// box (the dead ones: the box lies inside the workgroup's tile) load a stored cell and take 0.
struct SharedRelayout {
  bool ok = false;
  std::string why;                               // !ok: the reason
  std::vector<std::string> dims;                 // tile dims, outermost first
  std::vector<int64_t> extent;                   // per dim
  std::vector<sym::IndexExpr> srcLocal, dstLocal; // per dim: the place in the tile
  std::vector<bool> srcOverruns, dstOverruns;    // per dim: some element falls outside the tile
  int64_t writtenCell = 0; // a cell some thread stores: where loads from outside the tile read
  // Thread-id bits (per axis) whose threads hold only copies of what a thread without them
  // holds: those threads do not store (one writer per element).
  int64_t owners[3] = {0, 0, 0};
  // Source (clone, element) pairs that store nothing: outside the tile, or elements an earlier
  // pair stores.
  std::set<std::pair<CloneAssign, int64_t>> skip;
  // Pairs that only some threads store: the box of thread ids (per axis, first and last
  // included) whose threads do.
  struct ThreadBox {
    int64_t lo[3], hi[3];
  };
  std::map<std::pair<CloneAssign, int64_t>, ThreadBox> ranges;
  // Copies of an element that no owner bits or thread box reduce to one writer (e.g. rows held
  // by three waves): then every thread stores every element it holds inside the tile with an
  // atomic exchange (owners, skip and ranges are empty). All copies of an element hold the same
  // value, so the stores agree, and atomics do not race with each other.
  bool copiesStore = false;
  // Per cell of the tile (row-major over `extent`): whether some thread stores it. A move too
  // large for shared memory goes in pieces (codegen/emitter/relayout.cpp), each loading from
  // outside the tile at a cell of its own that is stored.
  std::vector<bool> stored;
  int64_t elements() const;
};

SharedRelayout planSharedRelayout(const ThreadLayout &src, const ThreadLayout &dst,
                                  const LayoutMachine &machine, const sym::Facts &facts);

} // namespace wave
