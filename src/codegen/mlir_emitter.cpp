// MLIR emission (see mlir_emitter.h for the kernel ABI).
//
// Takes the kernel graph and the distribution's per-access index expressions; emits, per
// kernel: thread/workgroup ids, index arithmetic (IndexExpr -> arith on `index`), one clone of
// every op per expansion index ($i_<dim>), each clone holding a `vector<E x T>` of the lane's
// elements ($g), or a scalar when E = 1. `iterate` becomes an scf.for whose iter_args are every
// clone of every carried value; `mma` becomes one matrix instruction per (M, N) clone, chained
// over the K clones (MFMA / WMMA through ROCDL, mma.sync through the NVVM intrinsic, wgmma on
// sm_90a through NVVM's wgmma ops with A and B read by the tensor cores from shared memory
// through matrix descriptors: emitWgmma).
//
// Shared memory (promotion of `shared` kernel parameters, wave-facts.md section 5): each
// promoted read gets a tile of one per-workgroup arena (`llvm.mlir.global` in address space 3),
// padded on the innermost dim against bank conflicts; the whole workgroup copies the tile with
// 128-bit global loads (masked as the original read), stores it to shared memory, and the read
// itself then loads its MMA-operand layout from the tile (`ldmatrix` where the target table
// gives one). Inside `iterate`, later tiles are fetched while the current one is used: on
// NVIDIA through a cp.async pipeline of S buffers (with several K steps per tile, the fragments
// of the next tile's first step are read ahead too: emitLoopOnce), otherwise the copy of tile
// i + 1 is loaded into registers at the top of iteration i and stored at its end (register
// prefetch: global latency hides behind the MMAs).
// Barriers are not emitted by hand: the stream of shared-memory accesses goes through
// barrier_insertion.h, which places the fewest that make it race-free.
//
// Accesses: contiguous elements become `llvm.load`/`llvm.store` of vectors of at most 128 bits,
// aligned as far as the distribution's facts prove. On AMD a masked or possibly misaligned
// global access becomes buffer loads/stores (`rocdl.raw.buffer.*`, see bufferEligible): the
// hardware's range check against the descriptor's num_records, or a voffset beyond it, masks
// without branches, and the few partial vectors at the tensor's edge share one branch per op.
// Elsewhere (NVIDIA, shared memory, lane offsets the facts cannot bound to 31 bits) a masked
// access (DimIndex::masked) takes a uniform fast path: when the vector's last element is in
// bounds, the wide access; otherwise one guarded scalar access per element (a masked-off load
// reads 0 through a clamped address and a select, no branch). A masked store of elements along
// one contiguous dim stores its in-bounds prefix in one loop (storePrefix) rather than one
// branch per element: fewer basic blocks and instructions is what LLVM's AMDGPU code generation
// time scales with (docs/performance.md). MLIR 19's vector.maskedload/maskedstore are not used:
// they are scalarized into per-element branches on AMDGPU anyway.
//
// Reductions (emitReduce): from the operand's layout, in-thread, then butterfly
// `gpu.shuffle xor` steps over the lane bits that move along the dim, then across waves through
// shared memory. Rows of a dynamic length are streamed: their consumers loop over the row and
// re-emit what the value depends on per chunk (see the sections at emitReduce).
//
// Layouts: every value has a thread layout (RegVal::layout; MMA results the kind's accumulator
// layout). A value needed in another layout (an mma operand from an earlier mma, an elementwise
// partner, a write's anchor) is moved by convertTo: register permutation or cross-lane
// shuffles, as passes/thread_layout.h plans. self_index/apply_expr values are computed in the
// layout of their user (RegVal::deferred).
//
// Mapped reads and writes (language.md section 14): the value is laid out over the register
// dims (the iterators, AccessIndex::regDims), the addresses are the mapping's expressions of
// them; the checks are the iteration bounds plus the memory-side bounds the distribution could
// not prove (Access::iter, DimIndex::masked/maskedBelow), and the pieces logic groups the
// elements whose offsets are provably consecutive. A promoted mapped read stages a tile of the
// register side, gathered through the mapping.
//
// Not supported yet (reported as `codegen-unsupported`): if, atomics, allocate, arithmetic on
// fp8 types, values that would have to cross waves to change layout.
#include "codegen/mlir_emitter.h"

#include "codegen/barrier_insertion.h"
#include "passes/thread_layout.h"

#include "symbolic/ginac_functions.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/SmallString.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <tuple>

namespace wave {

namespace {

using sym::IndexExpr;

std::string mlirType(ScalarType t) {
  switch (t) {
  case ScalarType::I1: return "i1";
  case ScalarType::I8:
  case ScalarType::U8: return "i8";
  case ScalarType::I16: return "i16";
  case ScalarType::I32:
  case ScalarType::U32: return "i32";
  case ScalarType::I64:
  case ScalarType::Index: return "i64";
  case ScalarType::F16: return "f16";
  case ScalarType::BF16: return "bf16";
  case ScalarType::F32: return "f32";
  case ScalarType::F64: return "f64";
  // fp8 values are moved as bytes (LLVM has no fp8 type); only matrix instructions read them.
  case ScalarType::F8E4M3FN:
  case ScalarType::F8E5M2:
  case ScalarType::F8E4M3FNUZ:
  case ScalarType::F8E5M2FNUZ: return "i8";
  default: return "";
  }
}

unsigned byteSize(ScalarType t) { return t == ScalarType::I1 ? 1 : bitWidth(t) / 8; }

// One register value after expansion: a layout (per register dim, the index its elements sit
// at) and one SSA value per clone.
struct RegVal {
  ScalarType dtype = ScalarType::F32;
  std::map<std::string, DimIndex> layout;    // by dim name; absent dims: uniform along them
  std::string vecDim;                        // the dim with E > 1, if any
  int64_t elems = 1;                         // E
  std::set<std::string> cloneSyms;           // $i_<dim> symbols the clones vary over
  std::map<std::string, std::string> clones; // clone key -> SSA value
  // Set for a value computed only from thread indices and uniform values (self_index,
  // apply_expr of one, and elementwise ops on those): it has no layout of its own and is
  // computed by this op wherever it is used, in the user's layout (`computeDeferred`).
  const ir::Op *deferred = nullptr;
  bool laidOut() const { return !layout.empty(); }
  // A streamed row (DimIndex::chunk): not emitted where it is defined; each consumer (a
  // reduction, a write) re-emits `lazy` and its streamed operands inside its loop over the row
  // of dim `streamDim`, one chunk per trip. `clones` is empty.
  const ir::Op *lazy = nullptr;
  std::string streamDim;
  // A wgmma operand: one i64 shared-memory matrix descriptor per clone (no register layout), of
  // the tile in allocation `descAlloc`, buffer `descStage` (the SyncItem stage of the reads the
  // wgmma that consumes it makes; -1 outside multi-buffered loops).
  int descAlloc = -1;
  int descStage = -1;
  bool descNMajor = false; // the tile is [K, N] (a wgmma B operand read with imm-trans-b)
};

std::string cloneKey(const CloneAssign &a, const std::set<std::string> &syms) {
  std::string key;
  for (const auto &s : syms)
    key += s + "=" + std::to_string(a.at(s)) + ";";
  return key;
}

class KernelEmitter {
public:
  KernelEmitter(const ir::Kernel &k, const Distribution &d, const TargetInfo &t,
                DiagnosticEngine &diags, bool insertBarriers)
      : k_(k), d_(d), target_(t), diags_(diags), facts_(d.facts),
        insertBarriers_(insertBarriers) {
    machine_.waveSize = d.groupSize;
    machine_.shuffleWidth = d.waveSize;
    for (int i = 0; i < 3; ++i)
      machine_.block[i] = d.block[i];
    for (const auto &ex : d.expansion)
      machine_.cloneCounts["$i_" + ex.dim.str()] = std::max<int64_t>(ex.count, 1);
  }

  bool emit(std::ostream &os);
  // Dynamic shared memory the kernel's launch must provide (0: all static); set by emit.
  int64_t dynamicShared() const { return dynamicShared_; }

private:
  // ---- diagnostics ----
  bool unsupported(const std::string &what, SourceRange loc) {
    if (!failed_)
      diags_.report(DiagId::CodegenUnsupported, loc, {what});
    failed_ = true;
    return false;
  }

  // MLIR 19's ROCDL conversion turns bf16 into i16, so on AMD bf16 values are moved as i16
  // (only matrix instructions read them there).
  std::string mlirType(ScalarType t) const {
    if (t == ScalarType::BF16 && target_.vendor == Vendor::AMD)
      return "i16";
    return wave::mlirType(t);
  }
  // A float type moved as integers (bf16 on AMD, fp8): no float arithmetic or literals.
  bool opaque(ScalarType t) const { return isFloat(t) && mlirType(t)[0] == 'i'; }
  std::string zeroLit(ScalarType t) const { return isFloat(t) && !opaque(t) ? "0.0" : "0"; }

  // ---- text helpers ----
  std::string fresh() { return "%v" + std::to_string(next_++); }
  // Each emitted op carries the `.wave` location of the op it implements (loc_), which survives
  // into LLVM IR as line info (lowering.cpp) and into the emulator image. Lines that open or
  // close a region take none.
  void line(const std::string &s) {
    bool bare = loc_.empty() || s.empty() || s.back() == '{' || s.front() == '}';
    items_.push_back({indent_ + s + (bare ? "" : " " + loc_), lds_});
  }
  std::string locOf(SourceRange r) const {
    if (!r.valid() || !diags_.file())
      return "";
    std::string name = diags_.file()->name(), quoted;
    for (char c : name.substr(name.rfind('/') + 1))
      quoted += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
    return "loc(\"" + quoted + "\":" + std::to_string(r.begin.line) + ":" +
           std::to_string(r.begin.col) + ")";
  }
  // A line that emits nothing but a shared-memory access for barrier insertion (a wgmma's reads
  // through descriptors, which have no line of their own): a barrier placed before it still is.
  void mark(const SyncItem &s) { items_.push_back({indent_, s}); }
  // Lines emitted while this is set are shared-memory accesses (for barrier insertion).
  SyncItem lds_;
  struct LdsScope {
    KernelEmitter &e;
    SyncItem saved;
    LdsScope(KernelEmitter &em, int alloc, bool write, int stage = -1, bool async = false)
        : e(em), saved(em.lds_) {
      e.lds_ = {write ? SyncItem::Write : SyncItem::Read, alloc, stage, async};
    }
    ~LdsScope() { e.lds_ = saved; }
  };
  std::string constIndex(int64_t v) {
    auto it = indexConsts_.find(v);
    if (it != indexConsts_.end())
      return it->second;
    std::string n = "%c" + (v < 0 ? "m" + std::to_string(-v) : std::to_string(v));
    head_ << "      " << n << " = arith.constant " << v << " : index\n";
    return indexConsts_[v] = n;
  }
  std::string vecType(ScalarType t, int64_t e) {
    return e == 1 ? mlirType(t) : "vector<" + std::to_string(e) + "x" + mlirType(t) + ">";
  }

  // ---- index expressions ----
  std::string lowerIndex(const IndexExpr &e);
  std::string lowerEx(const GiNaC::ex &e);
  std::string binop(const char *op, const std::string &a, const std::string &b) {
    std::string r = fresh();
    line(r + " = arith." + op + " " + a + ", " + b + " : index");
    return r;
  }
  std::string cmpLt(const std::string &a, const std::string &b) {
    std::string r = fresh();
    line(r + " = arith.cmpi slt, " + a + ", " + b + " : index");
    return r;
  }
  std::string andAll(const std::vector<std::string> &conds) {
    std::string acc = conds.front();
    for (size_t i = 1; i < conds.size(); ++i) {
      std::string r = fresh();
      line(r + " = arith.andi " + acc + ", " + conds[i] + " : i1");
      acc = r;
    }
    return acc;
  }

  // ---- ops ----
  bool emitOp(const ir::Op &op);
  bool emitRead(const ir::Op &op);
  bool emitWrite(const ir::Op &op);
  bool emitElementwise(const ir::Op &op);
  bool emitMma(const ir::Op &op);
  bool emitIterate(const ir::Op &op);
  bool emitReduce(const ir::Op &op);

  // ---- thread layouts (passes/thread_layout.h) ----
  ThreadLayout layoutOf(const RegVal &v) const;
  // An empty value carrying the layout `dims` (the index of each dim), `elems` elements per
  // lane and the clone symbols its indices vary over: the shape a converted value takes.
  RegVal layoutFrom(const std::vector<DimIndex> &dims, int64_t elems, ScalarType t) const;
  // `v` as a value in `like`'s layout (dims, elements, clones): `v` itself when it already is or
  // when it is uniform; else its elements permuted within each thread, or fetched from other
  // lanes of the wave by shuffles; a deferred value is computed in that layout. False (after
  // reporting) when the layout needs elements no lane of the wave holds.
  // `asIs` (when given) is set when `out` is `v` itself (already in the layout, or uniform).
  bool convertTo(const RegVal &v, const RegVal &like, RegVal &out, SourceRange loc,
                 bool *asIs = nullptr);
  // Clone `a` of a deferred or uniform value, in `like`'s layout (`like.elems` elements).
  std::string operandIn(const RegVal &v, const RegVal &like, const CloneAssign &a);
  // Clone `a` of the deferred value computed by `op`, in `like`'s layout.
  std::string computeDeferred(const ir::Op &op, const RegVal &like, const CloneAssign &a);
  // One clone of an elementwise op (unary, binary, math, select, cast) on operands of `e`
  // elements each; `inT` is the element type of the last operand.
  std::string elementwiseClone(const ir::Op &op, const std::vector<std::string> &x,
                               ScalarType inT, int64_t e);
  // One clone of apply_expr on integer elements `x`.
  std::string applyExprClone(const ir::Op &op, const std::string &x, ScalarType t, int64_t e);
  std::string lowerPred(const sym::Pred &p);
  // A vector (or scalar, e == 1) from `e` scalar SSA values.
  std::string buildVector(const std::vector<std::string> &elems, ScalarType t);
  std::string extractElem(const std::string &v, ScalarType t, int64_t e, int64_t i);
  LayoutMachine machine_;
  // ---- reductions and streamed rows (emitReduce and below) ----
  // The combiner of a reduction on one element type.
  struct Combiner {
    ScalarType t;
    std::string ety, op, vkind, identity;
  };
  std::optional<Combiner> combinerFor(ir::ReduceKind k, ScalarType t);
  std::string combine(const Combiner &c, const std::string &a, const std::string &b,
                      int64_t e = 1);
  std::string identitySplat(const Combiner &c, int64_t e);
  // Element-wise in-bounds condition (i1, or vector<e x i1>) of clone `a` of a value whose dim
  // has layout `di` with e elements per lane; empty when the dim needs no mask.
  std::string rowMask(const DimIndex &di, const CloneAssign &a, int64_t e);
  // Replaces masked-off elements by the combiner's identity.
  std::string maskToIdentity(const Combiner &c, const DimIndex &di, const CloneAssign &a,
                             const std::string &v, int64_t e);
  // gpu.shuffle (`mode` xor or idx, `offset` an i32) of one element of any type: 32-bit values
  // as they are, narrower ones through f32 / i32 (exact), 64-bit ones as two halves.
  std::string shuffle(const char *mode, const std::string &v, ScalarType t,
                      const std::string &offset);
  std::string shuffleXor(const std::string &v, ScalarType t, int64_t mask);
  // The reduction of a value held in registers; `masked`: apply the dim's row mask.
  bool reduceHeld(const ir::Op &op, const RegVal &x, bool masked);
  bool emitStreamedReduce(const ir::Op &op);
  bool emitStreamedWrite(const ir::Op &op);
  // The loop of a consumer of a streamed row: stream_ is set while its body is emitted;
  // streamTrips emits the trip count, streamChunk rewrites the streamed dim's index for the
  // current trip, materialize re-emits a streamed value (and what it depends on) for it.
  struct Stream {
    std::string dim, sym;
    int64_t chunk = 0;
  };
  std::optional<Stream> stream_;
  std::string streamTrips(const DimIndex &di);
  DimIndex streamChunk(const DimIndex &di, bool innermost) const;
  bool materialize(const ir::Value *v, std::vector<std::pair<const ir::Value *, RegVal>> &saved);
  void restore(std::vector<std::pair<const ir::Value *, RegVal>> &saved);
  const DimIndex *streamedDim(const ir::Op &op);
  bool deferStreamed(const ir::Op &op);
  std::map<const ir::Op *, int> scratch_; // cross-wave reductions -> their shared allocation
  // One emission of an iterate with carried values of the shapes `carried`; fills `yielded`.
  bool emitLoopOnce(const ir::Op &op, const std::vector<RegVal> &carried,
                    std::vector<RegVal> &yielded);
  // Whether a yielded value can be carried in the loop's value `c` as it stands: a uniform
  // value whose clones `c` has, or anything once `c` has a layout (converted at the yield).
  bool carriedFits(const RegVal &c, const RegVal &y) const {
    if (c.laidOut())
      return true;
    return !y.laidOut() && !y.deferred &&
           std::includes(c.cloneSyms.begin(), c.cloneSyms.end(), y.cloneSyms.begin(),
                         y.cloneSyms.end()) &&
           (y.elems == c.elems || y.elems == 1);
  }
  std::string mmaInstr(const MmaKind &k, ScalarType in, const std::string &a, const std::string &b,
                       const std::string &c);
  int64_t expansionCount(const std::string &cloneSym) const {
    for (const auto &ex : d_.expansion)
      if ("$i_" + ex.dim.str() == cloneSym)
        return std::max<int64_t>(ex.count, 1);
    return 1;
  }
  // ---- shared memory ----
  struct LdsAlloc {
    int64_t offsetBytes = 0, bytes = 0;
    std::vector<int64_t> tile;    // per memory dim (unpadded)
    std::vector<IndexExpr> strides; // in elements, padded innermost
    std::string base;             // !llvm.ptr<3> SSA in the kernel head
    int stages = 1;               // buffers (2 or 3: the loop's cp.async pipeline)
    int64_t pad = 0;              // elements of padding per innermost row
    int64_t swizzle = 0;          // > 0: rows unpadded, 16-byte chunks rotated (see relayout)
    // > 0: a wgmma operand tile in the canonical K-major layout of rows of this many bytes
    // (32, 64 or 128), unpadded, 16-byte chunk c of row r stored at chunk c XOR the row's
    // phase (the hardware's 32/64/128-byte swizzle, offsetOf); each buffer starts at a multiple
    // of `align` bytes of the arena, whose base is aligned to it at run time.
    int64_t xorBytes = 0;
    // > 0: rows wider than 128 bytes are stored as column blocks of 128 bytes (every row's
    // first 128 bytes, then every row's next 128 bytes, ...), this many bytes apart.
    int64_t blockBytes = 0;
    int64_t align = 16;
  };
  // Recomputes strides and bytes: padded rows, or (swizzle) unpadded rows whose 16-byte chunks
  // are rotated by the row number so that 8 consecutive rows hit distinct banks. A wgmma tile
  // keeps its layout.
  void relayout(LdsAlloc &al, ScalarType t, bool swizzle);
  // Byte offsets of the allocations in the arena (each aligned to its `align`) and the arena's
  // size, with room to align its base at run time when an allocation needs more than 16 bytes.
  int64_t placeAllocs(std::vector<LdsAlloc> &allocs) const;
  // The buffer that LDS accesses emitted now touch: (stage index expr, stage for the analysis).
  IndexExpr stageIndex_ = IndexExpr(0);
  int stageTag_ = -1;
  // Called by emitMma after the instructions of each step kk (of count) along clone symbol
  // `kSym`: where a pipelined loop puts the reads of its next tile (emitLoopOnce).
  std::function<void(const std::string &kSym, int64_t kk, int64_t count)> afterKStep_;

  struct Promotion {
    const ir::Op *op = nullptr;
    int alloc = -1;
    int64_t lanes = 1;  // elements per cooperative load (L)
    int64_t copies = 1; // cooperative loads per thread
    std::vector<IndexExpr> origin; // per tile dim: the tile's first index (WG, IV terms)
    // A mapped read: the tile is over the register dims (the iterators), filled through the
    // mapping (copyAccess); the read itself loads its layout from it like an unmapped one.
    bool mapped = false;
    bool wgmma = false; // read by wgmma only, through descriptors (LdsAlloc::xorBytes)
    bool nMajor = false; // a wgmma B tile stored [K, N] (N innermost)
  };
  bool asyncCopyable(const Promotion &p);
  void cpAsyncCopy(const Promotion &p);
  std::map<const ir::Op *, Promotion> promotions_;
  std::set<const ir::Op *> staged_; // promoted reads whose tile the enclosing loop staged
  std::vector<LdsAlloc> allocs_;
  int64_t ldsBytes_ = 0;
  int64_t dynamicShared_ = 0;
  bool promote(const ir::Op &op); // plans promotions_[&op]
  bool isPromoted(const ir::Op &op) const {
    return op.kind == ir::OpKind::Read && op.operands[0]->type.space == AddressSpace::Shared &&
           op.operands[0]->paramIndex >= 0;
  }
  std::vector<std::string> coopLoad(const Promotion &p);
  void coopStore(const Promotion &p, const std::vector<std::string> &regs);
  // The read's value from its shared tile (all clones, or those `keep` accepts) into `out`.
  using CloneFilter = std::function<bool(const CloneAssign &)>;
  bool ldsRead(const ir::Op &op, const Promotion &p, RegVal &out, const CloneFilter &keep = {});
  // ---- wgmma (sm_90a) ----
  // The wgmma that reads `read`'s value as its A (lhs) or B operand, when every user of the
  // value is one; null otherwise.
  const ir::Op *wgmmaUser(const ir::Op &read, bool *lhs = nullptr) const;
  // A wgmma operand's value: one matrix descriptor per clone of the read (ldsRead's form for
  // a Promotion::wgmma tile).
  bool wgmmaDescriptors(const ir::Op &op, const Promotion &p, RegVal &v, const CloneFilter &keep);
  bool emitWgmma(const ir::Op &op);
  int wgmmaSteps(const ir::Op &mma) const;
  // Whether the wgmma products of loop `iterate` may stay in flight into the next iteration:
  // their results only accumulate (yielded, and in the next iteration only the accumulator of
  // a wgmma). A product whose result other ops use (attention's scores) is waited for at once.
  bool wgmmaOverlaps(const ir::Op &iterate) const;
  // Inside a loop body: how many wgmma groups may stay in flight after an mma's commit (1 with a
  // pipeline of 3 or more buffers: the reads of tile i - 1 retire in iteration i), the loop's
  // buffer count, and whether the loop left groups in flight (waited for after it).
  int wgmmaKeep_ = 0;
  int wgmmaStages_ = 0;
  bool wgmmaInFlight_ = false;
  IndexExpr laneZero(const IndexExpr &e);
  const AccessIndex *accessOf(const ir::Op &op) {
    for (const auto &a : d_.accesses)
      if (a.op == &op)
        return &a;
    return nullptr;
  }
  // Clone assignments over `syms` (each $i_<dim> ranges over its expansion count).
  std::vector<CloneAssign> clonesOver(const std::set<std::string> &syms);
  // The value of clone `a` of `v` as a `vecType(dtype, e)`: splats a uniform scalar.
  std::string operandAt(const RegVal &v, const CloneAssign &a, int64_t e);
  // Memory access helpers.
  struct Access {
    const ir::Value *mem = nullptr;
    std::string base;
    std::string ptr = "!llvm.ptr<1>"; // global; !llvm.ptr<3> for shared memory
    ScalarType dtype = ScalarType::F32;
    std::vector<DimIndex> dims;     // memory dim order
    std::vector<IndexExpr> sizes;   // memory dim sizes (bounds of masked dims)
    std::vector<IndexExpr> strides; // in elements
    int vecDim = -1;                // the one dim element g runs along, -1 when several/none
    int64_t elems = 1;
    IndexExpr extra = IndexExpr(0); // added to the linear offset (a shared-memory buffer)
    int64_t swizzle = 0;            // see LdsAlloc
    // A mapped access (language.md section 3.2): `dims` are the memory side (the mapping's
    // expressions; `masked`/`maskedBelow` where they may leave the tensor), `iter` the register
    // dims whose iteration bound needs a check (index < the register dim's size).
    bool mapped = false;
    std::vector<DimIndex> iter;
    std::vector<DimIndex> reg; // a mapped access: the register side (the value's layout)
    bool mayBeEmpty = false;   // a global access whose tensor may have no elements
    int64_t xorBytes = 0;           // see LdsAlloc
    int64_t blockBytes = 0;         // see LdsAlloc
  };
  // One check of an access's bounds: `start` (element g's index) < size and/or >= 0.
  struct Bound {
    const IndexExpr *start;
    IndexExpr size;
    bool upper = true, lower = false;
  };
  // The checks of an access: its masked memory dims in order, then its iteration bounds.
  std::vector<Bound> boundsOf(const Access &acc) const;
  // Whether the in-bounds elements of every clone of `acc` are a prefix of g (so the last
  // element decides "all" and the first "any"): elements along one contiguous dim, or, for a
  // mapped access, every checked index that moves with g moves up and has no lower check.
  bool prefixBounds(const Access &acc) const;
  // Whether index `start` grows by exactly 1 (`unit`) or by >= 0 from element g to g + 1.
  bool stepsInG(const IndexExpr &start, int64_t elems, bool unit) const;
  // The offset of element (idx...) of the access's tensor.
  IndexExpr offsetOf(const Access &acc, const std::vector<IndexExpr> &idx) const;
  // Pieces (first element, count) of clone `a` that are consecutive in memory, <= 128 bits.
  std::vector<std::pair<int64_t, int64_t>> pieces(const Access &acc, const CloneAssign &a);
  // The global side (copy = cooperative load i) and LDS side of a promoted tensor.
  Access copyAccess(const Promotion &p, bool global, int64_t copy);
  // `trans`: the tile stores the operand's row dim innermost (ldmatrix .trans).
  void ldmatrixClones(const Access &acc, const LaneLayout &layout, int rowIdx, int colIdx,
                      const std::vector<CloneAssign> &assigns, RegVal &v, bool trans);

  // The access of a read or write: its memory side, with the iteration bounds of a mapped one.
  // `registerSide` (a mapped read of a promoted tensor): the register dims instead, as if the
  // value were read from a tensor of the register's shape (its shared-memory tile).
  bool prepareAccess(const ir::Op &op, const ir::Value *mem, Access &acc,
                     bool registerSide = false);
  // Whether dim d may have size 0 in a launch that runs: not when the facts prove d >= 1, nor
  // when d sets the grid of a workgroup axis (a size of 0 launches nothing).
  bool mayBeEmptyDim(const ir::Dim &d) const {
    for (const auto &w : k_.workgroups)
      if (w.primary && w.dim == d)
        return false;
    return !facts_.prove(sym::Pred::cmp(sym::Pred::Ge, d.size, IndexExpr(1))).value_or(false);
  }
  // Sets vecDim and elems from the dims whose index depends on g; false (after reporting) for
  // a dynamic number of elements.
  bool setVectorDim(Access &acc, SourceRange loc);
  IndexExpr linearOffset(const Access &acc, const CloneAssign &a, int64_t g);
  IndexExpr dimIndex(const Access &acc, size_t d, const CloneAssign &a, int64_t g);
  // `start` for element g of clone `a` (with the pending substitutions).
  IndexExpr indexAt(const IndexExpr &start, const CloneAssign &a, int64_t g) const;
  std::string gep(const Access &acc, const IndexExpr &offset);
  unsigned provenAlignment(const Access &acc, const IndexExpr &offset, int64_t maxElems);
  // The checks of one bound of an access (index `idx` < size, index >= 0), appended to `out`.
  void boundChecks(const Bound &b, const std::string &idx, std::vector<std::string> &out);
  // Condition (i1) that element g (or the whole vector, g = -1 meaning "last element") is in
  // bounds; empty when no dim is masked.
  std::string inBounds(const Access &acc, const CloneAssign &a, int64_t g);
  std::string loadClone(const Access &acc, const CloneAssign &a);
  void storeClone(const Access &acc, const CloneAssign &a, const std::string &value);
  // Whether the elements of a vector access lie along one contiguous, unswizzled dim, so that
  // the in-bounds ones are a prefix (storePrefix).
  bool prefixMasked(const Access &acc) const;
  void storePrefix(const Access &acc, const CloneAssign &a, const std::string &value);
  std::string wideLoad(const Access &acc, const CloneAssign &a, bool checkedAligned);
  void wideStore(const Access &acc, const CloneAssign &a, const std::string &value,
                 bool checkedAligned);
  // The element count P whose alignment wide accesses want (a power of two, <= 128 bits).
  int64_t wantedAlignElems(const Access &acc);
  // An i1 that the vector's first element is P-aligned, when the facts cannot prove it;
  // empty when proven or when the access is not a wide one.
  std::string alignmentCheck(const Access &acc, const CloneAssign &a);
  // The fast-path condition (in bounds and aligned), empty when the wide access is always safe.
  std::string fastPath(const Access &acc, const CloneAssign &a, bool &checkedAligned);
  // One element; `guarded`: masked-off elements read 0, through a branch (`branchy`, for a lone
  // scalar access) or a clamped address and a select (inside the vector slow path).
  std::string elementLoad(const Access &acc, const CloneAssign &a, int64_t g, bool guarded,
                          bool branchy = true);

  // ---- AMD buffer instructions for checked global accesses (wave-facts.md 2.4) ----
  // A masked or possibly misaligned global access on a target with buffer resources becomes
  // buffer loads/stores through a descriptor (V#) whose 64-bit base holds the access's
  // wave-uniform offset (any tensor size); the lane-dependent rest is the 32-bit voffset, which
  // bufferEligible proves to stay below 2^31. Out-of-range words read 0 and are not written.
  // Two ways to mask:
  //  - row: the elements run along a stride-1 dim whose row the whole wave shares (the other
  //    dims' indices are uniform). num_records is where that row ends (0 when another masked
  //    dim is out of bounds), rounded down to a 32-bit word, so the hardware's per-word range
  //    check masks exactly (no word straddles it); the element(s) of a 16/8-bit row sharing
  //    their word with the next row's first element (the "tail") are done alone.
  //  - select: otherwise num_records is 2^31 and the voffset of a piece not wholly in bounds is
  //    replaced by 2^31; a piece partly in bounds (the tensor's edge) is redone element by
  //    element.
  // Tails and partial pieces are rare (the edge lanes): every access of a batch (the clones of
  // an op) puts them under one shared branch, so a batch costs at most one `scf.if`. Misaligned
  // wide accesses are fine: AMD's HSA runtime runs kernels in unaligned mode.
  struct BufferPiece {
    int64_t first = 0, count = 1;
    std::string full;  // i1: every element in bounds, else the voffset is 2^31 ("" = always)
    std::string needs; // i1: partly in bounds, redone element by element ("" = never)
  };
  struct BufferAccess {
    Access acc;
    CloneAssign clone;
    IndexExpr uniform = IndexExpr(0); // in the base (elements)
    std::string rsrc;
    std::string rowBytes; // row masking: index, bytes from the base to the row's end
    std::vector<BufferPiece> pieces;
    int64_t word = 4;      // row masking: the range check's unit (bytes)
    std::string tailNeeds; // row masking: i1, the row ends inside a word this lane holds
    std::string value;  // a load's value before the fallback / a store's value
    std::string result; // a load's final result, defined by the fallback branch
    bool load = true;
  };
  // Whether clone `a` of `acc` takes the buffer path; sets `uniform`.
  bool bufferEligible(const Access &acc, const CloneAssign &a, IndexExpr &uniform);
  // Descriptor, masks and pieces of one buffer access (emits the uniform and mask code).
  BufferAccess bufferPrepare(const Access &acc, const CloneAssign &a, const IndexExpr &uniform);
  bool rowMaskable(const Access &acc, const CloneAssign &a, const IndexExpr &uniform,
                   const std::vector<std::pair<int64_t, int64_t>> &parts, int64_t &word);
  std::string bufferRsrc(const Access &acc, const IndexExpr &uniform, const std::string &records);
  std::string bufferOffset(const BufferAccess &b, int64_t g, const std::string &cond);
  std::string bufferLoadPiece(const BufferAccess &b, const std::string &voff, int64_t n);
  void bufferStorePiece(const BufferAccess &b, const std::string &voff, const std::string &value,
                        int64_t n);
  std::string bufferLoad(const Access &acc, const CloneAssign &a, const IndexExpr &uniform);
  void bufferStore(const Access &acc, const CloneAssign &a, const IndexExpr &uniform,
                   const std::string &value);
  // Emits the pending tails and partial pieces under one branch.
  void flushBufferFallback();
  void bufferFallback(const BufferAccess &b, std::string &vec);
  std::string constI32(int64_t v);
  std::string constTrue() {
    if (intConsts_.emplace("true:i1", "%true").second)
      head_ << "      %true = arith.constant true\n";
    return "%true";
  }
  std::vector<BufferAccess> pendingBuffer_;
  int bufferBatch_ = 0;
  struct BufferBatch {
    KernelEmitter &e;
    explicit BufferBatch(KernelEmitter &em) : e(em) { ++e.bufferBatch_; }
    ~BufferBatch() {
      if (--e.bufferBatch_ == 0)
        e.flushBufferFallback();
    }
  };

  const ir::Kernel &k_;
  const Distribution &d_;
  const TargetInfo &target_;
  DiagnosticEngine &diags_;
  sym::Facts facts_; // the distribution's, plus the emitter's own symbols
  bool insertBarriers_ = true;
  bool failed_ = false;
  unsigned next_ = 0;
  std::string indent_ = "      ";
  std::string loc_; // loc(...) of the op being emitted
  std::ostringstream head_;
  struct Item {
    std::string text;
    SyncItem sync;
  };
  std::vector<Item> items_;
  std::map<int64_t, std::string> indexConsts_;
  std::map<std::string, std::string> intConsts_; // "value:type" -> SSA
  // Extra substitutions applied to every access index (the prefetch's IV + 1).
  std::map<std::string, IndexExpr> subs_;
  std::map<std::string, std::string> symbols_;   // IndexExpr symbol -> index SSA
  std::map<std::string, std::string> exprCache_; // within the straight-line region only
  std::map<const ir::Value *, RegVal> values_;
  std::map<const ir::Value *, std::string> pointers_; // Memory params -> pointer SSA
};

std::string KernelEmitter::lowerIndex(const IndexExpr &e) {
  std::string key = e.str();
  auto it = exprCache_.find(key);
  if (it != exprCache_.end())
    return it->second;
  std::string r = lowerEx(e.ex());
  if (!failed_)
    exprCache_[key] = r;
  return r;
}

std::string KernelEmitter::lowerEx(const GiNaC::ex &e) {
  using namespace GiNaC;
  if (is_a<numeric>(e)) {
    const numeric &n = ex_to<numeric>(e);
    auto v = n.is_integer() ? sym::detail::toInt64(n) : std::nullopt;
    if (!v) {
      unsupported("a non-integer index constant", {});
      return "%error";
    }
    return constIndex(*v);
  }
  if (is_a<symbol>(e)) {
    std::string name = ex_to<symbol>(e).get_name();
    auto it = symbols_.find(name);
    if (it == symbols_.end()) {
      unsupported("index symbol '" + name + "'", {});
      return "%error";
    }
    return it->second;
  }
  if (is_a<add>(e) || is_a<mul>(e)) {
    // Rational coefficients (exact divisions proven by sema): scale by the common denominator,
    // then divide exactly.
    numeric den = 1;
    sym::detail::forEachTerm(
        e, [&](const ex &t) { den = lcm(den, sym::detail::splitTerm(t).coeff.denom()); });
    if (den != 1) {
      std::string scaled = lowerEx((e * den).expand());
      return binop("divsi", scaled, constIndex(*sym::detail::toInt64(den)));
    }
  }
  if (is_a<add>(e) || is_a<mul>(e)) {
    // GiNaC orders operands by hashes seeded with type addresses, which vary from run to run;
    // ordering them by their printed form keeps the emitted text deterministic.
    std::vector<std::pair<std::string, ex>> ops;
    for (size_t i = 0; i < e.nops(); ++i)
      ops.emplace_back(IndexExpr(e.op(i)).str(), e.op(i));
    std::stable_sort(ops.begin(), ops.end(),
                     [](const auto &x, const auto &y) { return x.first < y.first; });
    std::string acc;
    for (const auto &op : ops) {
      std::string t = lowerEx(op.second);
      acc = acc.empty() ? t : binop(is_a<add>(e) ? "addi" : "muli", acc, t);
    }
    return acc;
  }
  if (is_a<power>(e)) {
    auto exp = is_a<numeric>(e.op(1)) && ex_to<numeric>(e.op(1)).is_pos_integer()
                   ? sym::detail::toInt64(ex_to<numeric>(e.op(1)))
                   : std::nullopt;
    if (!exp || *exp > 8) {
      unsupported("index power " + IndexExpr(e).str(), {});
      return "%error";
    }
    std::string b = lowerEx(e.op(0)), acc = b;
    for (int64_t i = 1; i < *exp; ++i)
      acc = binop("muli", acc, b);
    return acc;
  }
  using sym::detail::Fn;
  Fn fn = sym::detail::fnKind(e);
  if (fn == Fn::None || fn == Fn::ExactDiv) {
    unsupported("index expression " + IndexExpr(e).str(), {});
    return "%error";
  }
  std::string a = lowerEx(e.op(0)), b = lowerEx(e.op(1));
  switch (fn) {
  case Fn::FloorDiv: return binop("floordivsi", a, b);
  case Fn::CeilDiv: return binop("ceildivsi", a, b);
  case Fn::Min: return binop("minsi", a, b);
  case Fn::Max: return binop("maxsi", a, b);
  case Fn::Mod: {
    // Non-negative modulo for a positive divisor: a - b * floor(a / b).
    std::string q = binop("floordivsi", a, b);
    return binop("subi", a, binop("muli", q, b));
  }
  default: return "%error";
  }
}

std::vector<CloneAssign> KernelEmitter::clonesOver(const std::set<std::string> &syms) {
  std::vector<CloneAssign> out(1);
  for (const auto &s : syms) {
    int64_t count = 1;
    for (const auto &ex : d_.expansion)
      if ("$i_" + ex.dim.str() == s)
        count = std::max<int64_t>(ex.count, 1);
    std::vector<CloneAssign> next;
    for (const auto &a : out)
      for (int64_t i = 0; i < count; ++i) {
        CloneAssign b = a;
        b[s] = i;
        next.push_back(b);
      }
    out = std::move(next);
  }
  return out;
}

std::string KernelEmitter::operandAt(const RegVal &v, const CloneAssign &a, int64_t e) {
  const std::string &ssa = v.clones.at(cloneKey(a, v.cloneSyms));
  if (v.elems == e)
    return ssa;
  // v.elems == 1: a value uniform along the vector dim.
  std::string r = fresh();
  line(r + " = vector.splat " + ssa + " : " + vecType(v.dtype, e));
  return r;
}

// ---- memory accesses ---------------------------------------------------------------------

bool KernelEmitter::prepareAccess(const ir::Op &op, const ir::Value *mem, Access &acc,
                                  bool registerSide) {
  if (mem->paramIndex < 0)
    return unsupported("an access to a tensor that is not a kernel parameter", op.loc);
  // i1 tensors are excluded: LLVM packs vector<N x i1> into bits in memory.
  if (mlirType(mem->type.dtype).empty() || mem->type.dtype == ScalarType::I1)
    return unsupported(std::string("tensors of element type ") + scalarTypeName(mem->type.dtype),
                       op.loc);
  const AccessIndex *ai = accessOf(op);
  if (!ai || ai->dims.size() != mem->type.shape.size())
    return unsupported("an access without a distributed index", op.loc);
  acc.mem = mem;
  acc.base = pointers_.at(mem);
  acc.dtype = mem->type.dtype;
  for (const auto &memDim : mem->type.shape) {
    const DimIndex *di = nullptr;
    for (const auto &x : ai->dims)
      if (x.dim == memDim)
        di = &x;
    if (!di)
      return unsupported("an access whose index misses dim " + memDim.str(), op.loc);
    acc.dims.push_back(*di);
    acc.sizes.push_back(memDim.size);
  }
  if (op.mapping) {
    acc.mapped = true;
    acc.reg = ai->regDims;
    if (registerSide) {
      acc.mapped = false;
      acc.reg.clear();
      acc.dims = ai->regDims;
      acc.sizes.clear();
      for (const auto &ri : ai->regDims)
        acc.sizes.push_back(ri.dim.size);
    }
  }
  // A streamed row (of a register dim of a mapped access): every index that moves with g,
  // on either side, takes the chunk of the current trip.
  for (const auto &ri : acc.reg) {
    if (ri.chunk <= 0)
      continue;
    if (!stream_ || stream_->dim != ri.dim.str())
      return unsupported("a streamed row of " + ri.dim.str() + " outside the loop of a consumer",
                         op.loc);
    for (auto &r : acc.reg)
      if (r.start.dependsOn("$g"))
        r = streamChunk(r, true);
    for (size_t i = 0; i < acc.dims.size(); ++i)
      if (acc.dims[i].start.dependsOn("$g"))
        acc.dims[i] = streamChunk(acc.dims[i], i + 1 == acc.dims.size());
    break;
  }
  for (const auto &ri : acc.reg)
    if (ri.masked)
      acc.iter.push_back(ri);
  // A tensor that may have no elements has no element 0 for a masked-off load to clamp to.
  // (A streamed dim is exempt: when it is empty its consumer's loop runs no trips.)
  for (const auto &d : acc.dims)
    acc.mayBeEmpty |= d.chunk <= 0 && mayBeEmptyDim(d.dim);
  // A streamed row is accessed one chunk per trip of its consumer's loop.
  for (size_t i = 0; i < acc.dims.size(); ++i) {
    if (acc.dims[i].chunk <= 0)
      continue;
    if (!stream_ || stream_->dim != acc.dims[i].dim.str())
      return unsupported("a streamed row of " + acc.dims[i].dim.str() +
                             " outside the loop of a consumer",
                         op.loc);
    acc.dims[i] = streamChunk(acc.dims[i], i + 1 == acc.dims.size());
  }
  acc.strides.assign(acc.sizes.size(), IndexExpr(1));
  for (size_t i = acc.sizes.size(); i-- > 1;)
    acc.strides[i - 1] = acc.strides[i] * acc.sizes[i];
  return setVectorDim(acc, op.loc);
}

bool KernelEmitter::setVectorDim(Access &acc, SourceRange loc) {
  // Element g runs along the dims whose index depends on it (one for plain and MFMA layouts,
  // two for mma.sync's A fragment, several for a mapped access).
  int along = 0;
  acc.vecDim = -1;
  for (size_t i = 0; i < acc.dims.size(); ++i) {
    if (!acc.dims[i].start.dependsOn("$g"))
      continue;
    if (acc.dims[i].elements <= 0)
      return unsupported("a dynamic number of elements per thread", loc);
    ++along;
    acc.vecDim = static_cast<int>(i);
    acc.elems = std::max(acc.elems, acc.dims[i].elements);
  }
  if (along != 1)
    acc.vecDim = -1;
  return true;
}

std::vector<std::pair<int64_t, int64_t>> KernelEmitter::pieces(const Access &acc,
                                                               const CloneAssign &a) {
  const int64_t e = acc.elems, most = std::max<int64_t>(1, 16 / byteSize(acc.dtype));
  std::vector<std::pair<int64_t, int64_t>> out;
  if (e == 1)
    return {{0, 1}};
  if (acc.vecDim >= 0 && acc.dims[acc.vecDim].contiguous) {
    for (int64_t k0 = 0; k0 < e; k0 += most)
      out.push_back({k0, std::min(most, e - k0)});
    return out;
  }
  // Runs of elements at consecutive addresses, split into powers of two.
  int64_t g0 = 0;
  for (int64_t g = 1; g <= e; ++g) {
    bool next = g < e && g - g0 < most &&
                facts_.provesEqual(linearOffset(acc, a, g) - linearOffset(acc, a, g - 1), 1);
    if (next)
      continue;
    int64_t n = g - g0;
    while (n > 0) {
      int64_t p = 1;
      while (p * 2 <= n)
        p *= 2;
      out.push_back({g0, p});
      g0 += p;
      n -= p;
    }
  }
  return out;
}

IndexExpr KernelEmitter::indexAt(const IndexExpr &start, const CloneAssign &a, int64_t g) const {
  std::map<std::string, IndexExpr> subs{{"$g", IndexExpr(g)}};
  for (const auto &[name, value] : subs_)
    subs[name] = value;
  for (const auto &[s, v] : a)
    subs[s] = IndexExpr(v);
  return start.subs(subs);
}

IndexExpr KernelEmitter::dimIndex(const Access &acc, size_t d, const CloneAssign &a, int64_t g) {
  return indexAt(acc.dims[d].start, a, g);
}

std::vector<KernelEmitter::Bound> KernelEmitter::boundsOf(const Access &acc) const {
  std::vector<Bound> out;
  for (size_t i = 0; i < acc.dims.size(); ++i)
    if (acc.dims[i].masked || acc.dims[i].maskedBelow)
      out.push_back(
          {&acc.dims[i].start, acc.sizes[i], acc.dims[i].masked, acc.dims[i].maskedBelow});
  for (const auto &ri : acc.iter)
    out.push_back({&ri.start, ri.dim.size, true, false});
  return out;
}

bool KernelEmitter::stepsInG(const IndexExpr &start, int64_t elems, bool unit) const {
  if (elems <= 1)
    return true;
  sym::Facts f = facts_;
  f.setRange("$g", 0, elems - 2);
  const IndexExpr g = IndexExpr::symbol("$g");
  const IndexExpr step = f.simplify(start.subs({{"$g", g + 1}}) - start);
  if (unit)
    return f.provesEqual(step, IndexExpr(1));
  return f.rangeOf(step).lo >= 0;
}

bool KernelEmitter::prefixBounds(const Access &acc) const {
  if (acc.elems == 1)
    return true;
  if (!acc.mapped)
    return acc.vecDim >= 0 && acc.dims[acc.vecDim].contiguous;
  for (const Bound &b : boundsOf(acc))
    if (b.start->dependsOn("$g") && (b.lower || !stepsInG(*b.start, acc.elems, false)))
      return false;
  return true;
}

IndexExpr KernelEmitter::linearOffset(const Access &acc, const CloneAssign &a, int64_t g) {
  std::vector<IndexExpr> idx;
  for (size_t i = 0; i < acc.dims.size(); ++i)
    idx.push_back(dimIndex(acc, i, a, g));
  return offsetOf(acc, idx);
}

IndexExpr KernelEmitter::offsetOf(const Access &acc, const std::vector<IndexExpr> &idx) const {
  IndexExpr off = acc.extra;
  const size_t n = idx.size();
  for (size_t i = 0; i < n; ++i)
    if ((!acc.swizzle && !acc.xorBytes) || i + 2 < n)
      off += idx[i] * acc.strides[i];
  if (acc.xorBytes && n >= 2) {
    // wgmma's canonical K-major layout with the W-byte swizzle (W = 32, 64, 128; PTX ISA,
    // "Shared memory matrix layout"): rows of W bytes, 16-byte chunk c of row r at chunk
    // c XOR ((r * W / 128) % (W / 16)), the hardware's XOR of address bits 4.. with bits 7..
    // (the tile starts at a multiple of 1024 bytes). XOR of the bits, one at a time.
    const int64_t b = byteSize(acc.dtype), q = 16 / b, w = acc.xorBytes;
    const int64_t chunks = w / 16, period = 128 / w;
    const IndexExpr &r = idx[n - 2];
    IndexExpr col = idx[n - 1];
    if (acc.blockBytes) {
      // Rows wider than W: column block col / (W / b), each a [rows, W bytes] tile.
      off += floorDiv(col, w / b) * (acc.blockBytes / b);
      col = mod(col, w / b);
    }
    const IndexExpr phase = mod(floorDiv(r, period), chunks), chunk = floorDiv(col, q);
    IndexExpr x = 0;
    for (int64_t bit = 1; bit < chunks; bit *= 2)
      x += bit * mod(floorDiv(chunk, bit) + floorDiv(phase, bit), 2);
    return off + r * (w / b) + x * q + mod(col, q);
  }
  if (acc.swizzle && n >= 2) {
    // Row r, column c of a tile with C columns, in chunks of q elements (16 bytes), rows per
    // 128-byte bank period p: chunk (c / q + r / p) % (C / q).
    const int64_t q = acc.swizzle, c = acc.sizes[n - 1].asInteger().value_or(q);
    const int64_t period = std::max<int64_t>(1, 128 / (c * byteSize(acc.dtype)));
    const IndexExpr &r = idx[n - 2], &col = idx[n - 1];
    off += r * c + mod(floorDiv(col, q) + floorDiv(r, period), c / q) * q + mod(col, q);
  }
  return off;
}

std::string KernelEmitter::gep(const Access &acc, const IndexExpr &offset) {
  std::string idx = lowerIndex(offset);
  std::string i64 = fresh(), p = fresh();
  line(i64 + " = arith.index_cast " + idx + " : index to i64");
  line(p + " = llvm.getelementptr " + acc.base + "[" + i64 + "] : (" + acc.ptr + ", i64) -> " +
       acc.ptr + ", " + mlirType(acc.dtype));
  return p;
}

unsigned KernelEmitter::provenAlignment(const Access &acc, const IndexExpr &offset,
                                        int64_t maxElems) {
  int64_t p = 1;
  while (p * 2 <= maxElems && facts_.provesExact(offset, IndexExpr(p * 2)))
    p *= 2;
  return static_cast<unsigned>(p * byteSize(acc.dtype));
}

void KernelEmitter::boundChecks(const Bound &b, const std::string &idx,
                                std::vector<std::string> &out) {
  if (b.upper)
    out.push_back(cmpLt(idx, lowerIndex(b.size)));
  if (b.lower) {
    std::string r = fresh();
    line(r + " = arith.cmpi sge, " + idx + ", " + constIndex(0) + " : index");
    out.push_back(r);
  }
}

std::string KernelEmitter::inBounds(const Access &acc, const CloneAssign &a, int64_t g) {
  std::vector<std::string> conds;
  for (const Bound &b : boundsOf(acc))
    boundChecks(b, lowerIndex(indexAt(*b.start, a, g)), conds);
  return conds.empty() ? "" : andAll(conds);
}

std::string KernelEmitter::elementLoad(const Access &acc, const CloneAssign &a, int64_t g,
                                       bool guarded, bool branchy) {
  std::string ty = mlirType(acc.dtype);
  std::string cond = guarded ? inBounds(acc, a, g) : "";
  auto load = [&]() {
    std::string p = gep(acc, linearOffset(acc, a, g)), v = fresh();
    line(v + " = llvm.load " + p + " {alignment = " + std::to_string(byteSize(acc.dtype)) +
         " : i64} : " + acc.ptr + " -> " + ty);
    return v;
  };
  if (cond.empty())
    return load();
  if (!branchy) {
    // Branch-free: a masked-off lane loads element 0 (valid: a launched grid is never empty)
    // and the select replaces the value with 0.
    std::string safe = fresh(), p = fresh(), i64 = fresh(), v = fresh(), z = fresh(), r = fresh();
    line(safe + " = arith.select " + cond + ", " + lowerIndex(linearOffset(acc, a, g)) + ", " +
         constIndex(0) + " : index");
    line(i64 + " = arith.index_cast " + safe + " : index to i64");
    line(p + " = llvm.getelementptr " + acc.base + "[" + i64 + "] : (" + acc.ptr + ", i64) -> " +
         acc.ptr + ", " + ty);
    line(v + " = llvm.load " + p + " {alignment = " + std::to_string(byteSize(acc.dtype)) +
         " : i64} : " + acc.ptr + " -> " + ty);
    line(z + " = arith.constant " + zeroLit(acc.dtype) + " : " + ty);
    line(r + " = arith.select " + cond + ", " + v + ", " + z + " : " + ty);
    return r;
  }
  std::string r = fresh();
  line(r + " = scf.if " + cond + " -> (" + ty + ") {");
  std::string saved = indent_;
  indent_ += "  ";
  auto cache = exprCache_;
  line("scf.yield " + load() + " : " + ty);
  exprCache_ = cache;
  indent_ = saved;
  line("} else {");
  std::string z = fresh();
  indent_ += "  ";
  line(z + " = arith.constant " + zeroLit(acc.dtype) + " : " + ty);
  line("scf.yield " + z + " : " + ty);
  indent_ = saved;
  line("}");
  return r;
}

// Contiguous: pieces of at most 128 bits; otherwise one element at a time.
int64_t KernelEmitter::wantedAlignElems(const Access &acc) {
  if (acc.elems <= 1 || acc.vecDim < 0 || !acc.dims[acc.vecDim].contiguous)
    return 1;
  int64_t limit = std::min<int64_t>(acc.elems, std::max<int64_t>(1, 16 / byteSize(acc.dtype)));
  int64_t p = 1;
  while (p * 2 <= limit)
    p *= 2;
  return p;
}

std::string KernelEmitter::alignmentCheck(const Access &acc, const CloneAssign &a) {
  int64_t p = wantedAlignElems(acc);
  if (p <= 1)
    return "";
  IndexExpr off = linearOffset(acc, a, 0);
  if (provenAlignment(acc, off, p) >= p * byteSize(acc.dtype))
    return "";
  std::string low = fresh(), r = fresh();
  line(low + " = arith.andi " + lowerIndex(off) + ", " + constIndex(p - 1) + " : index");
  line(r + " = arith.cmpi eq, " + low + ", " + constIndex(0) + " : index");
  return r;
}

std::string KernelEmitter::fastPath(const Access &acc, const CloneAssign &a, bool &checkedAligned) {
  std::vector<std::string> conds;
  // Contiguous elements are in bounds when the last one is; others are checked one by one.
  const bool contiguous = prefixBounds(acc);
  for (int64_t g = contiguous ? acc.elems - 1 : 0; g < acc.elems; ++g) {
    std::string inb = inBounds(acc, a, g);
    if (!inb.empty())
      conds.push_back(inb);
  }
  std::string al = alignmentCheck(acc, a);
  checkedAligned = !al.empty();
  if (checkedAligned)
    conds.push_back(al);
  return conds.empty() ? "" : andAll(conds);
}

std::string KernelEmitter::wideLoad(const Access &acc, const CloneAssign &a, bool checkedAligned) {
  const int64_t e = acc.elems;
  const std::string vty = vecType(acc.dtype, e);
  if (e == 1)
    return elementLoad(acc, a, 0, false);
  std::string vec = fresh();
  line(vec + " = arith.constant dense<" + zeroLit(acc.dtype) +
       "> : " + vty);
  for (const auto &[k0, n] : pieces(acc, a)) {
    IndexExpr off = linearOffset(acc, a, k0);
    if (n == 1) {
      std::string s = elementLoad(acc, a, k0, false), r = fresh();
      line(r + " = vector.insert " + s + ", " + vec + " [" + std::to_string(k0) +
           "] : " + mlirType(acc.dtype) + " into " + vty);
      vec = r;
      continue;
    }
    std::string p = gep(acc, off), piece = fresh();
    std::string pty = vecType(acc.dtype, n);
    unsigned align =
        checkedAligned ? wantedAlignElems(acc) * byteSize(acc.dtype) : provenAlignment(acc, off, n);
    line(piece + " = llvm.load " + p + " {alignment = " + std::to_string(align) +
         " : i64} : " + acc.ptr + " -> " + pty);
    if (n == e)
      return piece;
    for (int64_t j = 0; j < n; ++j) {
      std::string x = fresh(), r = fresh();
      line(x + " = vector.extract " + piece + "[" + std::to_string(j) +
           "] : " + mlirType(acc.dtype) + " from " + pty);
      line(r + " = vector.insert " + x + ", " + vec + " [" + std::to_string(k0 + j) +
           "] : " + mlirType(acc.dtype) + " into " + vty);
      vec = r;
    }
  }
  return vec;
}

std::string KernelEmitter::loadClone(const Access &acc, const CloneAssign &a) {
  IndexExpr uniform(0);
  if (bufferEligible(acc, a, uniform))
    return bufferLoad(acc, a, uniform);
  const int64_t e = acc.elems;
  bool checkedAligned = false;
  std::string fast = fastPath(acc, a, checkedAligned);
  if (fast.empty())
    return wideLoad(acc, a, false);
  if (e == 1)
    return elementLoad(acc, a, 0, true);
  const std::string vty = vecType(acc.dtype, e);
  std::string r = fresh(), saved = indent_;
  auto cache = exprCache_;
  line(r + " = scf.if " + fast + " -> (" + vty + ") {");
  indent_ += "  ";
  line("scf.yield " + wideLoad(acc, a, checkedAligned) + " : " + vty);
  indent_ = saved;
  exprCache_ = cache;
  line("} else {");
  indent_ += "  ";
  std::string vec = fresh();
  line(vec + " = arith.constant dense<" + zeroLit(acc.dtype) +
       "> : " + vty);
  for (int64_t g = 0; g < e; ++g) {
    // Branch-free masking loads element 0 for a masked-off element, which exists when the
    // launch covers an element of the tensor; a mapped access may read a tensor with no
    // elements at all (a gather from an empty source): it branches instead.
    std::string s = elementLoad(acc, a, g, true, /*branchy=*/acc.mayBeEmpty), n = fresh();
    line(n + " = vector.insert " + s + ", " + vec + " [" + std::to_string(g) +
         "] : " + mlirType(acc.dtype) + " into " + vty);
    vec = n;
  }
  line("scf.yield " + vec + " : " + vty);
  indent_ = saved;
  exprCache_ = cache;
  line("}");
  return r;
}

void KernelEmitter::wideStore(const Access &acc, const CloneAssign &a, const std::string &value,
                              bool checkedAligned) {
  const int64_t e = acc.elems;
  const std::string ty = mlirType(acc.dtype), vty = vecType(acc.dtype, e);
  auto storeElement = [&](int64_t g, const std::string &scalar) {
    std::string p = gep(acc, linearOffset(acc, a, g));
    line("llvm.store " + scalar + ", " + p + " {alignment = " +
         std::to_string(byteSize(acc.dtype)) + " : i64} : " + ty + ", " + acc.ptr);
  };
  auto extract = [&](int64_t g) {
    std::string x = fresh();
    line(x + " = vector.extract " + value + "[" + std::to_string(g) + "] : " + ty + " from " + vty);
    return x;
  };
  if (e == 1) {
    storeElement(0, value);
    return;
  }
  for (const auto &[k0, n] : pieces(acc, a)) {
    if (n == 1) {
      storeElement(k0, extract(k0));
      continue;
    }
    std::string pty = vecType(acc.dtype, n), piece = value;
    if (n != e) {
      piece = fresh();
      std::string mask;
      for (int64_t j = 0; j < n; ++j)
        mask += (j ? ", " : "") + std::to_string(k0 + j);
      line(piece + " = vector.shuffle " + value + ", " + value + " [" + mask + "] : " + vty + ", " +
           vty);
    }
    IndexExpr off = linearOffset(acc, a, k0);
    std::string p = gep(acc, off);
    unsigned align =
        checkedAligned ? wantedAlignElems(acc) * byteSize(acc.dtype) : provenAlignment(acc, off, n);
    line("llvm.store " + piece + ", " + p + " {alignment = " + std::to_string(align) +
         " : i64} : " + pty + ", " + acc.ptr);
  }
}

bool KernelEmitter::prefixMasked(const Access &acc) const {
  if (acc.vecDim < 0 || !acc.dims[acc.vecDim].contiguous || acc.swizzle || acc.elems <= 1)
    return false;
  // A mapped access: every check that moves with g must be an upper bound moving by 1.
  for (const Bound &b : boundsOf(acc))
    if (b.start->dependsOn("$g") && (b.lower || !stepsInG(*b.start, acc.elems, true)))
      return false;
  return true;
}

// Along the contiguous dim, element g's index is idx0 + g: the in-bounds elements are the first
// clamp(size - idx0, 0, E) (0 when another masked dim is out of bounds, which does not depend on
// g). A mapped access may have several checked indices moving by 1 with g (the memory dim and
// an iteration bound): the prefix is the shortest. One loop stores them: a single small block
// instead of one branch per element.
void KernelEmitter::storePrefix(const Access &acc, const CloneAssign &a, const std::string &value) {
  const int64_t e = acc.elems;
  const size_t vd = static_cast<size_t>(acc.vecDim);
  const std::string ty = mlirType(acc.dtype), vty = vecType(acc.dtype, e);
  std::string n = constIndex(e);
  const std::vector<Bound> bounds = boundsOf(acc);
  for (const Bound &b : bounds) {
    if (!b.start->dependsOn("$g"))
      continue;
    std::string rem = binop("subi", lowerIndex(b.size), lowerIndex(indexAt(*b.start, a, 0)));
    std::string lo = binop("maxsi", rem, constIndex(0));
    n = binop("minsi", lo, n);
  }
  std::vector<std::string> others;
  for (const Bound &b : bounds) {
    if (b.start->dependsOn("$g"))
      continue;
    boundChecks(b, lowerIndex(indexAt(*b.start, a, 0)), others);
  }
  if (!others.empty()) {
    std::string r = fresh();
    line(r + " = arith.select " + andAll(others) + ", " + n + ", " + constIndex(0) + " : index");
    n = r;
  }
  std::string first = lowerIndex(linearOffset(acc, a, 0));
  std::string stride = lowerIndex(acc.strides[vd]);
  std::string g = fresh(), saved = indent_;
  auto cache = exprCache_;
  line("scf.for " + g + " = " + constIndex(0) + " to " + n + " step " + constIndex(1) + " {");
  indent_ += "  ";
  std::string x = fresh(), step = binop("muli", g, stride), off = binop("addi", first, step);
  line(x + " = vector.extract " + value + "[" + g + "] : " + ty + " from " + vty);
  std::string i64 = fresh(), p = fresh();
  line(i64 + " = arith.index_cast " + off + " : index to i64");
  line(p + " = llvm.getelementptr " + acc.base + "[" + i64 + "] : (" + acc.ptr + ", i64) -> " +
       acc.ptr + ", " + ty);
  line("llvm.store " + x + ", " + p + " {alignment = " + std::to_string(byteSize(acc.dtype)) +
       " : i64} : " + ty + ", " + acc.ptr);
  indent_ = saved;
  exprCache_ = cache;
  line("}");
}

void KernelEmitter::storeClone(const Access &acc, const CloneAssign &a, const std::string &value) {
  IndexExpr uniform(0);
  if (bufferEligible(acc, a, uniform))
    return bufferStore(acc, a, uniform, value);
  const int64_t e = acc.elems;
  bool checkedAligned = false;
  std::string fast = fastPath(acc, a, checkedAligned);
  if (fast.empty()) {
    wideStore(acc, a, value, false);
    return;
  }
  std::string saved = indent_;
  auto cache = exprCache_;
  line("scf.if " + fast + " {");
  indent_ += "  ";
  wideStore(acc, a, value, checkedAligned);
  indent_ = saved;
  exprCache_ = cache;
  if (e > 1 && prefixMasked(acc)) {
    line("} else {");
    indent_ += "  ";
    storePrefix(acc, a, value);
    indent_ = saved;
    exprCache_ = cache;
  } else if (e > 1) {
    line("} else {");
    indent_ += "  ";
    const std::string ty = mlirType(acc.dtype), vty = vecType(acc.dtype, e);
    for (int64_t g = 0; g < e; ++g) {
      std::string cond = inBounds(acc, a, g);
      if (cond.empty()) { // unaligned but in bounds: plain element stores
        std::string x = fresh();
        line(x + " = vector.extract " + value + "[" + std::to_string(g) + "] : " + ty + " from " +
             vty);
        std::string p = gep(acc, linearOffset(acc, a, g));
        line("llvm.store " + x + ", " + p + " {alignment = " + std::to_string(byteSize(acc.dtype)) +
             " : i64} : " + ty + ", " + acc.ptr);
        continue;
      }
      line("scf.if " + cond + " {");
      std::string inner = indent_;
      auto innerCache = exprCache_;
      indent_ += "  ";
      std::string x = fresh();
      line(x + " = vector.extract " + value + "[" + std::to_string(g) + "] : " + ty + " from " +
           vty);
      std::string p = gep(acc, linearOffset(acc, a, g));
      line("llvm.store " + x + ", " + p + " {alignment = " + std::to_string(byteSize(acc.dtype)) +
           " : i64} : " + ty + ", " + acc.ptr);
      indent_ = inner;
      exprCache_ = innerCache;
      line("}");
    }
    indent_ = saved;
    exprCache_ = cache;
  }
  line("}");
}

// ---- AMD buffer instructions -----------------------------------------------------------------

namespace {
// num_records of every descriptor, and the voffset of a masked-off access: in-bounds voffsets
// are below 2^31 - 16 (bufferEligible), so every 32-bit word of a masked-off access lies at or
// beyond num_records and is out of range whatever the hardware's rule for partial words.
constexpr int64_t kBufferNumRecords = int64_t(1) << 31;
constexpr int64_t kBufferOob = int64_t(1) << 31;
} // namespace

std::string KernelEmitter::constI32(int64_t v) {
  int32_t w = static_cast<int32_t>(static_cast<uint32_t>(v));
  std::string key = std::to_string(w) + ":i32";
  auto it = intConsts_.find(key);
  if (it != intConsts_.end())
    return it->second;
  std::string n = "%ci32_" + (w < 0 ? "m" + std::to_string(-int64_t(w)) : std::to_string(w));
  head_ << "      " << n << " = arith.constant " << w << " : i32\n";
  return intConsts_[key] = n;
}

bool KernelEmitter::bufferEligible(const Access &acc, const CloneAssign &a, IndexExpr &uniform) {
  if (!target_.bufferRsrcWord3 || acc.ptr != "!llvm.ptr<1>" || acc.swizzle)
    return false;
  bool masked = false;
  for (const auto &d : acc.dims)
    masked = masked || d.masked;
  if (!masked) {
    // Unmasked: worth it only for a wide access whose alignment the facts do not prove.
    int64_t p = wantedAlignElems(acc);
    if (p <= 1 || provenAlignment(acc, linearOffset(acc, a, 0), p) >= p * byteSize(acc.dtype))
      return false;
  }
  // The wave-uniform part: every lane-dependent symbol at 0 (workgroup ids, clone indices,
  // loop variables and sizes stay).
  std::map<std::string, IndexExpr> lane0;
  for (const char *t : {"$T0", "$T1", "$T2"})
    lane0[t] = IndexExpr(0);
  uniform = linearOffset(acc, a, 0).subs(lane0);
  const int64_t bytes = byteSize(acc.dtype);
  for (const auto &[k0, n] : pieces(acc, a))
    for (int64_t g : {k0, k0 + n - 1}) {
      sym::Range r = facts_.rangeOf(facts_.simplify(linearOffset(acc, a, g) - uniform));
      if (!r.boundedBelow() || r.lo < 0 || !r.boundedAbove() || r.hi > (kBufferOob - 16) / bytes)
        return false;
    }
  return true;
}

std::string KernelEmitter::bufferRsrc(const Access &acc, const IndexExpr &uniform,
                                      const std::string &records) {
  // Base address (48 bits; stride 0 in the high half of word 1), num_records, word 3. The
  // select-masked descriptor depends on the base alone: once per region.
  const std::string key = "rsrc " + acc.base + " " + uniform.str() + " " + records;
  auto it = exprCache_.find(key);
  if (it != exprCache_.end())
    return it->second;
  std::string u64 = fresh(), p = fresh(), addr = fresh(), lo = fresh(), sh = fresh(), hi = fresh(),
              hi16 = fresh(), c32 = fresh(), r = fresh();
  line(u64 + " = arith.index_cast " + lowerIndex(uniform) + " : index to i64");
  line(p + " = llvm.getelementptr " + acc.base + "[" + u64 + "] : (!llvm.ptr<1>, i64) -> " +
       "!llvm.ptr<1>, " + mlirType(acc.dtype));
  line(addr + " = llvm.ptrtoint " + p + " : !llvm.ptr<1> to i64");
  line(lo + " = arith.trunci " + addr + " : i64 to i32");
  line(c32 + " = arith.constant 32 : i64");
  line(sh + " = arith.shrui " + addr + ", " + c32 + " : i64");
  line(hi + " = arith.trunci " + sh + " : i64 to i32");
  line(hi16 + " = arith.andi " + hi + ", " + constI32(0xffff) + " : i32");
  line(r + " = vector.from_elements " + lo + ", " + hi16 + ", " + records + ", " +
       constI32(target_.bufferRsrcWord3) + " : vector<4xi32>");
  return exprCache_[key] = r;
}

// Row masking applies when the pieces run along a stride-1 dim `vd`, every other dim's index
// is the same in all lanes, and the range check's units (32-bit words, or the whole access
// when it is smaller) start at the same phase in every lane, so that a num_records on a unit
// boundary splits no unit. `word` is the unit.
bool KernelEmitter::rowMaskable(const Access &acc, const CloneAssign &a,
                                const IndexExpr &uniform,
                                const std::vector<std::pair<int64_t, int64_t>> &parts,
                                int64_t &word) {
  const int vd = acc.vecDim;
  if (vd < 0 || !acc.dims[vd].contiguous || !facts_.provesEqual(acc.strides[vd], IndexExpr(1)))
    return false;
  // num_records holds one upper bound of the row: iteration bounds and lower bounds (a mapped
  // access) take the select masking.
  if (!acc.iter.empty())
    return false;
  for (const auto &d : acc.dims)
    if (d.maskedBelow)
      return false;
  for (size_t i = 0; i < acc.dims.size(); ++i)
    if (static_cast<int>(i) != vd)
      for (const auto &sym : dimIndex(acc, i, a, 0).freeSymbols())
        if (sym.rfind("$T", 0) == 0)
          return false;
  const int64_t bytes = byteSize(acc.dtype);
  word = 4;
  if (parts.size() == 1 && parts[0].second * bytes < 4)
    word = parts[0].second * bytes; // one access of 1 or 2 bytes
  for (const auto &[k0, n] : parts)
    if ((n * bytes) % word != 0 || (k0 * bytes) % word != 0)
      return false;
  IndexExpr lane = linearOffset(acc, a, 0) - uniform;
  return facts_.provesExact(facts_.simplify(lane * bytes), IndexExpr(word));
}

KernelEmitter::BufferAccess KernelEmitter::bufferPrepare(const Access &acc, const CloneAssign &a,
                                                         const IndexExpr &uniform) {
  BufferAccess b;
  b.acc = acc;
  b.clone = a;
  b.uniform = uniform;
  // Pieces whose bytes are no word multiple (3 x f16) go element by element.
  const int64_t bytes = byteSize(acc.dtype);
  std::vector<std::pair<int64_t, int64_t>> parts;
  for (const auto &[k0, n] : pieces(acc, a)) {
    if (n > 1 && (n * bytes) % 4 != 0 && n * bytes != 2) {
      for (int64_t j = 0; j < n; ++j)
        parts.push_back({k0 + j, 1});
      continue;
    }
    parts.push_back({k0, n});
  }
  int64_t word = 4;
  if (rowMaskable(acc, a, uniform, parts, word)) {
    const size_t vd = static_cast<size_t>(acc.vecDim);
    std::map<std::string, IndexExpr> lane0;
    for (const char *t : {"$T0", "$T1", "$T2"})
      lane0[t] = IndexExpr(0);
    std::vector<std::string> others;
    for (size_t i = 0; i < acc.dims.size(); ++i)
      if (i != vd && acc.dims[i].masked)
        others.push_back(cmpLt(lowerIndex(dimIndex(acc, i, a, 0)), lowerIndex(acc.sizes[i])));
    std::string valid = others.empty() ? "" : andAll(others);
    std::string records = constIndex(kBufferNumRecords), exact;
    if (acc.dims[vd].masked) {
      // Bytes from the base to the row's end, clamped to [0, 2^31].
      IndexExpr rem = (acc.sizes[vd] - dimIndex(acc, vd, a, 0).subs(lane0)) * bytes;
      exact = binop("minsi", binop("maxsi", lowerIndex(rem), constIndex(0)),
                    constIndex(kBufferNumRecords));
      records = word == bytes ? exact : binop("andi", exact, constIndex(-word));
    }
    if (!valid.empty()) {
      std::string r = fresh();
      line(r + " = arith.select " + valid + ", " + records + ", " + constIndex(0) + " : index");
      records = r;
    }
    std::string r32 = fresh();
    line(r32 + " = arith.index_cast " + records + " : index to i32");
    b.rsrc = bufferRsrc(acc, uniform, r32);
    for (const auto &[k0, n] : parts) {
      BufferPiece piece;
      piece.first = k0;
      piece.count = n;
      b.pieces.push_back(piece);
    }
    b.word = word;
    if (exact.empty() || bytes >= word)
      return b;
    // The tail: the row ends inside a word (the word's range check drops it whole), which
    // happens to at most one lane: the one holding the row's last element. (The same for every
    // clone but the row's validity: shared after CSE.)
    std::string inside = fresh(), holds = fresh(), tail = binop("andi", exact, constIndex(word - 1));
    line(inside + " = arith.cmpi ne, " + tail + ", " + constIndex(0) + " : index");
    std::string last = lowerIndex(acc.sizes[vd] - 1 - dimIndex(acc, vd, a, 0));
    line(holds + " = arith.cmpi ult, " + last + ", " + constIndex(acc.elems) + " : index");
    std::string needs = fresh();
    line(needs + " = arith.andi " + inside + ", " + holds + " : i1");
    if (!valid.empty()) {
      std::string r = fresh();
      line(r + " = arith.andi " + needs + ", " + valid + " : i1");
      needs = r;
    }
    b.tailNeeds = needs;
    b.rowBytes = exact;
    return b;
  }
  b.rsrc = bufferRsrc(acc, uniform, constI32(kBufferNumRecords));
  for (const auto &[k0, n] : parts) {
    BufferPiece piece;
    piece.first = k0;
    piece.count = n;
    // Whether a checked index varies inside the piece; if not, the piece is wholly in or out.
    bool varies = false;
    for (const Bound &bd : boundsOf(acc))
      if (n > 1 &&
          !facts_.provesEqual(indexAt(*bd.start, a, k0), indexAt(*bd.start, a, k0 + n - 1)))
        varies = true;
    // Along a contiguous dim the in-bounds elements are a prefix: the last one decides "all",
    // the first one "any"; otherwise every element is asked.
    const bool prefix = prefixBounds(acc);
    std::vector<std::string> all, any;
    for (int64_t g = k0; g < k0 + n; ++g) {
      if (prefix && g != k0 && g != k0 + n - 1)
        continue;
      if (!prefix || g == k0 + n - 1)
        all.push_back(inBounds(acc, a, g));
      if (varies && (!prefix || g == k0))
        any.push_back(inBounds(acc, a, g));
    }
    piece.full = all.front().empty() ? "" : andAll(all);
    if (varies) {
      std::string some = any.front();
      for (size_t i = 1; i < any.size(); ++i) {
        std::string r = fresh();
        line(r + " = arith.ori " + some + ", " + any[i] + " : i1");
        some = r;
      }
      std::string notFull = fresh(), needs = fresh();
      line(notFull + " = arith.xori " + piece.full + ", " + constTrue() + " : i1");
      line(needs + " = arith.andi " + some + ", " + notFull + " : i1");
      piece.needs = needs;
    }
    b.pieces.push_back(piece);
  }
  return b;
}

std::string KernelEmitter::bufferOffset(const BufferAccess &b, int64_t g, const std::string &cond) {
  IndexExpr bytes =
      (linearOffset(b.acc, b.clone, g) - b.uniform) * static_cast<int64_t>(byteSize(b.acc.dtype));
  std::string v = fresh();
  line(v + " = arith.index_cast " + lowerIndex(bytes) + " : index to i32");
  if (cond.empty())
    return v;
  std::string r = fresh();
  line(r + " = arith.select " + cond + ", " + v + ", " + constI32(kBufferOob) + " : i32");
  return r;
}

namespace {
// The type a buffer access of `n` elements of `bytes` each moves: words for more than 4 bytes
// (the instructions are dword loads/stores), else one integer or the element itself.
std::string bufferDataType(const std::string &elem, int64_t n, int64_t bytes) {
  const int64_t total = n * bytes;
  if (total > 4)
    return "vector<" + std::to_string(total / 4) + "xi32>";
  if (n == 1)
    return elem;
  return "i" + std::to_string(total * 8);
}
} // namespace

std::string KernelEmitter::bufferLoadPiece(const BufferAccess &b, const std::string &voff,
                                           int64_t n) {
  const std::string ty = vecType(b.acc.dtype, n);
  const std::string raw = bufferDataType(mlirType(b.acc.dtype), n, byteSize(b.acc.dtype));
  std::string r = fresh();
  line(r + " = rocdl.raw.buffer.load " + b.rsrc + ", " + voff + ", " + constI32(0) + ", " +
       constI32(0) + " : " + raw);
  if (raw == ty)
    return r;
  std::string c = fresh();
  line(c + " = llvm.bitcast " + r + " : " + raw + " to " + ty);
  return c;
}

void KernelEmitter::bufferStorePiece(const BufferAccess &b, const std::string &voff,
                                     const std::string &value, int64_t n) {
  const std::string ty = vecType(b.acc.dtype, n);
  const std::string raw = bufferDataType(mlirType(b.acc.dtype), n, byteSize(b.acc.dtype));
  std::string v = value;
  if (raw != ty) {
    v = fresh();
    line(v + " = llvm.bitcast " + value + " : " + ty + " to " + raw);
  }
  line("rocdl.raw.buffer.store " + v + ", " + b.rsrc + ", " + voff + ", " + constI32(0) + ", " +
       constI32(0) + " : " + raw);
}

std::string KernelEmitter::bufferLoad(const Access &acc, const CloneAssign &a,
                                      const IndexExpr &uniform) {
  BufferBatch batch(*this);
  BufferAccess b = bufferPrepare(acc, a, uniform);
  const int64_t e = acc.elems;
  const std::string ty = mlirType(acc.dtype), vty = vecType(acc.dtype, e);
  std::string vec;
  if (b.pieces.size() > 1) {
    vec = fresh();
    line(vec + " = arith.constant dense<" + zeroLit(acc.dtype) + "> : " + vty);
  }
  bool fallback = false;
  for (const auto &pc : b.pieces) {
    std::string v = bufferLoadPiece(b, bufferOffset(b, pc.first, pc.full), pc.count);
    fallback = fallback || !pc.needs.empty();
    if (b.pieces.size() == 1) {
      vec = v;
      continue;
    }
    std::string r = fresh();
    if (pc.count == 1)
      line(r + " = vector.insert " + v + ", " + vec + " [" + std::to_string(pc.first) + "] : " +
           ty + " into " + vty);
    else
      line(r + " = vector.insert_strided_slice " + v + ", " + vec + " {offsets = [" +
           std::to_string(pc.first) + "], strides = [1]} : " + vecType(acc.dtype, pc.count) +
           " into " + vty);
    vec = r;
  }
  b.value = vec;
  if (!fallback && b.tailNeeds.empty())
    return vec;
  b.result = fresh();
  b.load = true;
  pendingBuffer_.push_back(b);
  return b.result;
}

void KernelEmitter::bufferStore(const Access &acc, const CloneAssign &a, const IndexExpr &uniform,
                                const std::string &value) {
  BufferBatch batch(*this);
  BufferAccess b = bufferPrepare(acc, a, uniform);
  const int64_t e = acc.elems;
  const std::string ty = mlirType(acc.dtype), vty = vecType(acc.dtype, e);
  bool fallback = false;
  for (const auto &pc : b.pieces) {
    std::string piece = value;
    if (pc.count == 1 && e > 1) {
      piece = fresh();
      line(piece + " = vector.extract " + value + "[" + std::to_string(pc.first) + "] : " + ty +
           " from " + vty);
    } else if (pc.count != e) {
      piece = fresh();
      line(piece + " = vector.extract_strided_slice " + value + " {offsets = [" +
           std::to_string(pc.first) + "], sizes = [" + std::to_string(pc.count) +
           "], strides = [1]} : " + vty + " to " + vecType(acc.dtype, pc.count));
    }
    bufferStorePiece(b, bufferOffset(b, pc.first, pc.full), piece, pc.count);
    fallback = fallback || !pc.needs.empty();
  }
  if (!fallback && b.tailNeeds.empty())
    return;
  b.value = value;
  b.load = false;
  pendingBuffer_.push_back(b);
}

void KernelEmitter::flushBufferFallback() {
  if (pendingBuffer_.empty())
    return;
  std::vector<BufferAccess> items = std::move(pendingBuffer_);
  pendingBuffer_.clear();
  std::vector<std::string> needs;
  for (const auto &b : items) {
    for (const auto &pc : b.pieces)
      if (!pc.needs.empty())
        needs.push_back(pc.needs);
    if (!b.tailNeeds.empty())
      needs.push_back(b.tailNeeds);
  }
  std::string any = needs.front();
  for (size_t i = 1; i < needs.size(); ++i) {
    std::string r = fresh();
    line(r + " = arith.ori " + any + ", " + needs[i] + " : i1");
    any = r;
  }
  std::string results, types, before, after;
  for (const auto &b : items)
    if (b.load) {
      results += (results.empty() ? "" : ", ") + b.result;
      types += (types.empty() ? "" : ", ") + vecType(b.acc.dtype, b.acc.elems);
      before += (before.empty() ? "" : ", ") + b.value;
    }
  const std::string saved = indent_;
  auto cache = exprCache_;
  line((results.empty() ? "scf.if " : results + " = scf.if ") + any +
       (results.empty() ? " {" : " -> (" + types + ") {"));
  indent_ += "  ";
  for (const auto &b : items) {
    std::string vec = b.value;
    bufferFallback(b, vec);
    if (b.load)
      after += (after.empty() ? "" : ", ") + vec;
  }
  if (!results.empty()) {
    line("scf.yield " + after + " : " + types);
    indent_ = saved;
    line("} else {");
    indent_ += "  ";
    line("scf.yield " + before + " : " + types);
  }
  indent_ = saved;
  exprCache_ = cache;
  line("}");
}

// Inside the fallback branch: the tails and partial pieces of `b`, one element at a time, each
// masked off (voffset 2^31) where the lane does not need it; a load updates `vec`.
void KernelEmitter::bufferFallback(const BufferAccess &access, std::string &vec) {
  // The row descriptor drops the tail's word: the fallback goes through the plain one (masked
  // by its voffsets).
  BufferAccess b = access;
  if (!b.tailNeeds.empty())
    b.rsrc = bufferRsrc(b.acc, b.uniform, constI32(kBufferNumRecords));
  const int64_t e = b.acc.elems;
  const std::string ty = mlirType(b.acc.dtype), vty = vecType(b.acc.dtype, e);
  // Element `pos` (an index SSA or constant) of the access: loaded and kept where `cond`, or
  // stored.
  auto element = [&](const std::string &pos, const std::string &voff, const std::string &cond) {
    if (!b.load) {
      std::string x = b.value;
      if (e > 1) {
        x = fresh();
        line(x + " = vector.extract " + b.value + "[" + pos + "] : " + ty + " from " + vty);
      }
      bufferStorePiece(b, voff, x, 1);
      return;
    }
    std::string one = bufferLoadPiece(b, voff, 1), old = fresh(), pick = fresh(), next = fresh();
    line(old + " = vector.extract " + vec + "[" + pos + "] : " + ty + " from " + vty);
    line(pick + " = arith.select " + cond + ", " + one + ", " + old + " : " + ty);
    line(next + " = vector.insert " + pick + ", " + vec + " [" + pos + "] : " + ty + " into " + vty);
    vec = next;
  };
  if (!b.tailNeeds.empty()) {
    // The tail's elements size - k (k = 1 .. while the tail has k elements) at the row's end
    // minus k elements, at lane position size - k - first (clamped for the lanes without it).
    const size_t vd = static_cast<size_t>(b.acc.vecDim);
    const int64_t bytes = byteSize(b.acc.dtype);
    std::string ends = fresh();
    line(ends + " = arith.index_cast " + b.rowBytes + " : index to i32");
    for (int64_t k = 1; k * bytes < b.word; ++k) {
      std::string cond = b.tailNeeds;
      if (k > 1) {
        std::string tail = binop("andi", b.rowBytes, constIndex(b.word - 1));
        std::string more = fresh(), c = fresh();
        line(more + " = arith.cmpi sge, " + tail + ", " + constIndex(k * bytes) + " : index");
        line(c + " = arith.andi " + cond + ", " + more + " : i1");
        cond = c;
      }
      std::string pos = binop("minui",
                              lowerIndex(b.acc.sizes[vd] - k - dimIndex(b.acc, vd, b.clone, 0)),
                              constIndex(e - 1));
      std::string at = fresh(), voff = fresh();
      line(at + " = arith.subi " + ends + ", " + constI32(k * bytes) + " : i32");
      line(voff + " = arith.select " + cond + ", " + at + ", " + constI32(kBufferOob) + " : i32");
      element(pos, voff, cond);
    }
  }
  for (const auto &pc : b.pieces) {
    if (pc.needs.empty())
      continue;
    std::string notFull = fresh();
    line(notFull + " = arith.xori " + pc.full + ", " + constTrue() + " : i1");
    for (int64_t g = pc.first; g < pc.first + pc.count; ++g) {
      std::string c = fresh();
      line(c + " = arith.andi " + inBounds(b.acc, b.clone, g) + ", " + notFull + " : i1");
      element(std::to_string(g), bufferOffset(b, g, c), c);
    }
  }
}

bool KernelEmitter::emitRead(const ir::Op &op) {
  if (isPromoted(op)) {
    if (!promotions_.count(&op) && !promote(op))
      return false;
    const Promotion &p = promotions_.at(&op);
    if (!staged_.count(&op))
      coopStore(p, coopLoad(p));
    RegVal v;
    if (!ldsRead(op, p, v))
      return false;
    values_[op.results[0]] = std::move(v);
    return true;
  }
  if (const DimIndex *sd = streamedDim(op); sd && !stream_) {
    RegVal lz;
    lz.lazy = &op;
    lz.streamDim = sd->dim.str();
    lz.dtype = op.operands[0]->type.dtype;
    for (const auto &di : op.mapping ? accessOf(op)->regDims : accessOf(op)->dims) {
      lz.layout[di.dim.str()] = di;
      for (const auto &s : di.start.freeSymbols())
        if (s.rfind("$i_", 0) == 0)
          lz.cloneSyms.insert(s);
    }
    values_[op.results[0]] = std::move(lz);
    return true;
  }
  Access acc;
  if (!prepareAccess(op, op.operands[0], acc))
    return false;
  RegVal v;
  if (acc.mapped) {
    // The value is laid out over the register dims (the iterators); the memory side follows.
    v = layoutFrom(acc.reg, acc.elems, acc.dtype);
  } else {
    v.dtype = acc.dtype;
    v.elems = acc.elems;
    for (size_t i = 0; i < acc.dims.size(); ++i) {
      v.layout[acc.dims[i].dim.str()] = acc.dims[i];
      for (const auto &s : acc.dims[i].start.freeSymbols())
        if (s.rfind("$i_", 0) == 0)
          v.cloneSyms.insert(s);
    }
    if (acc.vecDim >= 0)
      v.vecDim = acc.dims[acc.vecDim].dim.str();
  }
  BufferBatch batch(*this);
  for (const auto &a : clonesOver(v.cloneSyms))
    v.clones[cloneKey(a, v.cloneSyms)] = loadClone(acc, a);
  values_[op.results[0]] = std::move(v);
  return true;
}

// ---- shared memory -------------------------------------------------------------------------

namespace {
bool isGlobalTerm(const std::string &s) { return s.rfind("$WG", 0) == 0 || s.rfind("$IV", 0) == 0; }
bool isLaneTerm(const std::string &s) {
  return s.rfind("$T", 0) == 0 || s == "$g" || s.rfind("$i_", 0) == 0;
}
IndexExpr zeroed(const IndexExpr &e, bool (*pick)(const std::string &)) {
  std::map<std::string, IndexExpr> subs;
  for (const auto &s : e.freeSymbols())
    if (pick(s))
      subs[s] = IndexExpr(0);
  return e.subs(subs);
}
} // namespace

bool KernelEmitter::promote(const ir::Op &op) {
  const ir::Value *mem = op.operands[0];
  Access acc;
  if (!prepareAccess(op, mem, acc, /*registerSide=*/true))
    return false;
  Promotion p;
  p.op = &op;
  p.mapped = op.mapping != nullptr;
  LdsAlloc al;
  const size_t n = acc.dims.size();
  int64_t elems = 1;
  for (size_t i = 0; i < n; ++i) {
    const ir::Dim &d = acc.dims[i].dim;
    const IndexExpr &start = acc.dims[i].start;
    int64_t tile = 0;
    const auto *t = k_.tilingFor(d);
    const auto *wg = k_.workgroupFor(d);
    if (t && start.dependsOn("$IV_" + d.str()))
      tile = t->tile;
    else if (wg)
      tile = wg->tile;
    else if (auto c = d.size.asInteger())
      tile = *c;
    if (tile <= 0)
      return unsupported("promoting to shared memory a dim (" + d.str() +
                             ") with neither a tile nor a static size",
                         op.loc);
    al.tile.push_back(tile);
    elems *= tile;
    p.origin.push_back(facts_.simplify(zeroed(start, isLaneTerm)));
  }
  const int64_t threads = static_cast<int64_t>(d_.block[0]) * d_.block[1] * d_.block[2];
  const unsigned bytes = byteSize(acc.dtype);
  int64_t lanes = std::max<int64_t>(1, 16 / bytes);
  while (lanes > 1 && (al.tile.back() % lanes != 0 || elems % (threads * lanes) != 0))
    lanes /= 2;
  if (elems % (threads * lanes) != 0)
    return unsupported("a shared-memory tile of " + std::to_string(elems) +
                           " elements that the workgroup's " + std::to_string(threads) +
                           " threads cannot copy evenly",
                       op.loc);
  p.lanes = lanes;
  p.copies = elems / (threads * lanes);
  // Padding of the innermost dim: 16 bytes where reads are 128-bit wide (ldmatrix rows, WMMA
  // rows) or on NVIDIA, else 8 bytes (wave-facts.md 5.1). Rows then start on distinct banks.
  const int64_t readBytes = std::min<int64_t>(16, acc.elems * bytes);
  const int64_t padBytes = target_.vendor == Vendor::NVIDIA || readBytes >= 16 ? 16 : 8;
  const int64_t pad = std::max<int64_t>(1, padBytes / bytes);
  al.strides.assign(n, IndexExpr(1));
  int64_t stride = 1;
  for (size_t i = n; i-- > 0;) {
    al.strides[i] = IndexExpr(stride);
    stride *= al.tile[i] + (i + 1 == n ? pad : 0);
  }
  al.bytes = stride * bytes; // one buffer; offsets are placed at the end of the kernel
  al.pad = pad;
  bool lhs = false;
  if (const ir::Op *mma = wgmmaUser(op, &lhs)) {
    // wgmma reads the tile through descriptors. Its last two dims are [rows, K] (K-major) or,
    // for B, [K, N] (N-major); the dims before them cover one index per workgroup. Rows of one
    // swizzle atom (32, 64 or 128 bytes), or of several 128-byte atoms stored as column blocks.
    const ir::Dim &rowDim = lhs ? mma->dims[0] : mma->dims[1], &kDim = mma->dims[2];
    bool shape = n >= 2 && bytes == 2;
    for (size_t i = 0; shape && i + 2 < n; ++i)
      shape = al.tile[i] == 1;
    const bool kMajor = shape && acc.dims[n - 2].dim == rowDim && acc.dims[n - 1].dim == kDim;
    const bool nMajor = shape && !lhs && acc.dims[n - 2].dim == kDim &&
                        acc.dims[n - 1].dim == rowDim;
    if (!kMajor && !nMajor)
      return unsupported("a wgmma operand whose shared-memory tile is not [" + rowDim.str() +
                             ", " + kDim.str() + "] (or, for B, [" + kDim.str() + ", " +
                             rowDim.str() + "]) of 16-bit elements",
                         op.loc);
    const int64_t rows = al.tile[n - 2], rowBytes = al.tile[n - 1] * bytes;
    const bool atom = kMajor && (rowBytes == 32 || rowBytes == 64 || rowBytes == 128);
    if ((!atom && rowBytes % 128 != 0) || rows % 8 != 0)
      return unsupported("a wgmma operand tile of " + std::to_string(rows) + " rows of " +
                             std::to_string(rowBytes) +
                             " bytes (wgmma needs rows of 32, 64 or a multiple of 128 bytes, "
                             "N-major rows a multiple of 128, in groups of 8 rows)",
                         op.loc);
    const int64_t w = atom ? rowBytes : 128;
    al.xorBytes = w;
    al.blockBytes = rowBytes > w ? rows * w : 0;
    al.align = 1024;
    al.pad = 0;
    al.strides.assign(n, IndexExpr(1));
    for (size_t i = 0; i < n; ++i)
      al.strides[i] = IndexExpr(i + 1 == n ? 1 : i + 2 == n ? al.tile[n - 1] : rows * al.tile[n - 1]);
    al.bytes = (rows * rowBytes + al.align - 1) / al.align * al.align;
    p.wgmma = true;
    p.nMajor = nMajor;
  }
  al.base = "%lds_" + std::to_string(allocs_.size());
  p.alloc = static_cast<int>(allocs_.size());
  allocs_.push_back(al);
  promotions_[&op] = p;
  return true;
}

void KernelEmitter::relayout(LdsAlloc &al, ScalarType t, bool swizzle) {
  if (al.xorBytes)
    return;
  const size_t n = al.tile.size();
  const int64_t bytes = byteSize(t);
  al.swizzle = swizzle ? 16 / bytes : 0;
  int64_t stride = 1;
  for (size_t i = n; i-- > 0;) {
    al.strides[i] = IndexExpr(stride);
    stride *= al.tile[i] + (i + 1 == n && !swizzle ? al.pad : 0);
  }
  al.bytes = stride * bytes;
}

int64_t KernelEmitter::placeAllocs(std::vector<LdsAlloc> &allocs) const {
  int64_t end = 0, align = 16;
  for (auto &al : allocs) {
    al.offsetBytes = (end + al.align - 1) / al.align * al.align;
    end = al.offsetBytes + al.bytes * al.stages;
    align = std::max(align, al.align);
  }
  return end > 0 && align > 16 ? end + align - 16 : end;
}

// Rotating 16-byte chunks needs rows of 2, 4 or 8 whole chunks that divide the 128-byte bank
// period, and 16-byte-aligned accesses (ldmatrix rows, cp.async).
bool swizzlable(const std::vector<int64_t> &tile, ScalarType t) {
  const int64_t rowBytes = tile.back() * (bitWidth(t) / 8);
  return tile.size() >= 2 && rowBytes % 16 == 0 && rowBytes >= 32 && 128 % rowBytes == 0 &&
         bitWidth(t) == 16;
}

KernelEmitter::Access KernelEmitter::copyAccess(const Promotion &p, bool global, int64_t copy) {
  const LdsAlloc &al = allocs_[p.alloc];
  const ir::Value *mem = p.op->operands[0];
  // The tile's dims: the tensor's, or the register's for a mapped read.
  const ir::Shape &tileShape = p.mapped ? p.op->results[0]->type.shape : mem->type.shape;
  Access acc;
  acc.mem = mem;
  acc.dtype = mem->type.dtype;
  acc.elems = p.lanes;
  const size_t n = al.tile.size();
  acc.vecDim = static_cast<int>(n) - 1;
  const int64_t b0 = d_.block[0], b1 = d_.block[1];
  const int64_t threads = b0 * b1 * d_.block[2];
  IndexExpr tid = IndexExpr::symbol("$T0") + IndexExpr::symbol("$T1") * b0 +
                  IndexExpr::symbol("$T2") * (b0 * b1);
  IndexExpr lin = tid * p.lanes + copy * threads * p.lanes;
  int64_t inner = 1;
  std::vector<IndexExpr> pos(n);
  for (size_t i = n; i-- > 0;) {
    pos[i] = mod(floorDiv(lin, inner), al.tile[i]);
    inner *= al.tile[i];
  }
  const AccessIndex *ai = accessOf(*p.op);
  for (size_t i = 0; i < n; ++i) {
    DimIndex di;
    di.dim = tileShape[i];
    IndexExpr start = pos[i] + (i + 1 == n ? IndexExpr::symbol("$g") : IndexExpr(0));
    if (global)
      start = start + p.origin[i];
    di.start = facts_.simplify(start);
    di.elements = i + 1 == n ? p.lanes : 1;
    di.contiguous = i + 1 == n;
    di.masked = false;
    if (global)
      for (const auto &x : p.mapped ? ai->regDims : ai->dims)
        if (x.dim == di.dim)
          di.masked = x.masked;
    acc.dims.push_back(di);
  }
  if (global && p.mapped) {
    // The tile's elements (register indices) through the mapping: the memory side checks what
    // the distribution could not prove inside the tensor, the register side the iteration
    // bounds.
    std::map<std::string, IndexExpr> subs;
    for (const auto &[d, value] : p.op->mapping->outputs)
      for (const auto &di : acc.dims)
        if (auto name = value.asSymbol(); name && di.dim == d)
          subs[*name] = di.start;
    for (const auto &di : acc.dims)
      if (di.masked)
        acc.iter.push_back(di);
    acc.dims.clear();
    acc.elems = 1;
    sym::Facts f = facts_;
    f.setRange("$g", 0, p.lanes - 1);
    for (const auto &d : mem->type.shape)
      for (const auto &[md, value] : p.op->mapping->inputs)
        if (md == d) {
          DimIndex di;
          di.dim = d;
          di.start = f.simplify(value.subs(subs));
          di.elements = p.lanes;
          for (const auto &x : ai->dims)
            if (x.dim == d) {
              di.masked = x.masked;
              di.maskedBelow = x.maskedBelow;
            }
          acc.dims.push_back(di);
        }
    acc.mapped = true;
    setVectorDim(acc, p.op->loc);
    acc.elems = p.lanes;
    if (acc.vecDim + 1 == static_cast<int>(acc.dims.size()))
      acc.dims.back().contiguous = stepsInG(acc.dims.back().start, p.lanes, true);
  }
  if (global) {
    acc.base = pointers_.at(mem);
    for (const auto &d : mem->type.shape) {
      acc.sizes.push_back(d.size);
      acc.mayBeEmpty |= mayBeEmptyDim(d);
    }
    acc.strides.assign(acc.sizes.size(), IndexExpr(1));
    for (size_t i = acc.sizes.size(); i-- > 1;)
      acc.strides[i - 1] = acc.strides[i] * acc.sizes[i];
  } else {
    acc.base = al.base;
    acc.ptr = "!llvm.ptr<3>";
    acc.mayBeEmpty = false; // a shared tile always has its elements
    for (int64_t t : al.tile)
      acc.sizes.push_back(IndexExpr(t));
    acc.strides = al.strides;
    acc.extra = stageIndex_ * (al.bytes / static_cast<int64_t>(byteSize(acc.dtype)));
    acc.swizzle = al.swizzle;
    acc.xorBytes = al.xorBytes;
    acc.blockBytes = al.blockBytes;
  }
  return acc;
}

std::vector<std::string> KernelEmitter::coopLoad(const Promotion &p) {
  std::vector<std::string> regs;
  BufferBatch batch(*this);
  for (int64_t c = 0; c < p.copies; ++c)
    regs.push_back(loadClone(copyAccess(p, true, c), {}));
  return regs;
}

void KernelEmitter::coopStore(const Promotion &p, const std::vector<std::string> &regs) {
  LdsScope scope(*this, p.alloc, /*write=*/true, stageTag_);
  for (int64_t c = 0; c < p.copies; ++c)
    wideStore(copyAccess(p, false, c), {}, regs[c], false);
}

// cp.async (sm_80+) copies 16 bytes from global to shared memory without registers; a copy
// of 0 source bytes fills zeros, which is how a masked-off vector reads 0. Usable when every
// vector is 16-byte aligned and wholly in or out of bounds (its innermost dim a multiple of it).
bool KernelEmitter::asyncCopyable(const Promotion &p) {
  if (target_.vendor != Vendor::NVIDIA)
    return false;
  Access g = copyAccess(p, true, 0);
  if (p.lanes * static_cast<int64_t>(byteSize(g.dtype)) != 16)
    return false;
  if (provenAlignment(g, linearOffset(g, {}, 0), p.lanes) < 16)
    return false;
  if (g.mapped) {
    // The vector must be consecutive in memory and each bound that moves with it must hold
    // for all of it or for none (a multiple of the vector from an aligned start).
    if (g.vecDim + 1 != static_cast<int>(g.dims.size()) || !g.dims.back().contiguous)
      return false;
    for (const Bound &b : boundsOf(g))
      if (b.start->dependsOn("$g") &&
          (b.lower || !stepsInG(*b.start, p.lanes, true) ||
           !facts_.provesExact(b.size, IndexExpr(p.lanes)) ||
           !facts_.provesExact(indexAt(*b.start, {}, 0), IndexExpr(p.lanes))))
        return false;
    return true;
  }
  return !g.dims.back().masked || facts_.provesExact(g.sizes.back(), IndexExpr(p.lanes));
}

void KernelEmitter::cpAsyncCopy(const Promotion &p) {
  for (int64_t c = 0; c < p.copies; ++c) {
    Access g = copyAccess(p, true, c), l = copyAccess(p, false, c);
    std::string cond = inBounds(g, {}, p.lanes - 1);
    std::string off = lowerIndex(linearOffset(g, {}, 0)), size = fresh();
    if (!cond.empty()) {
      std::string safe = fresh(), full = fresh(), none = fresh();
      line(safe + " = arith.select " + cond + ", " + off + ", " + constIndex(0) + " : index");
      off = safe;
      line(full + " = arith.constant 16 : i32");
      line(none + " = arith.constant 0 : i32");
      line(size + " = arith.select " + cond + ", " + full + ", " + none + " : i32");
    } else {
      line(size + " = arith.constant 16 : i32");
    }
    std::string i64 = fresh(), src = fresh();
    line(i64 + " = arith.index_cast " + off + " : index to i64");
    line(src + " = llvm.getelementptr " + g.base + "[" + i64 + "] : (!llvm.ptr<1>, i64) -> " +
         "!llvm.ptr<1>, " + mlirType(g.dtype));
    LdsScope scope(*this, p.alloc, /*write=*/true, stageTag_, /*async=*/true);
    std::string dst = gep(l, linearOffset(l, {}, 0));
    line("llvm.call_intrinsic \"llvm.nvvm.cp.async.cg.shared.global.16.s\"(" + dst + ", " + src +
         ", " + size + ") : (!llvm.ptr<3>, !llvm.ptr<1>, i32) -> ()");
  }
}

IndexExpr KernelEmitter::laneZero(const IndexExpr &e) {
  const int64_t w = d_.groupSize;
  sym::Facts f = facts_;
  f.setRange("$wv", 0, std::max<int64_t>(d_.block[0] / w - 1, 0));
  f.setRange("$ln", 0, w - 1);
  IndexExpr split =
      f.simplify(e.subs({{"$T0", IndexExpr::symbol("$wv") * w + IndexExpr::symbol("$ln")}}));
  return f.simplify(split.subs({{"$ln", IndexExpr(0)},
                                {"$g", IndexExpr(0)},
                                {"$wv", floorDiv(IndexExpr::symbol("$T0"), w)}}));
}

bool KernelEmitter::ldsRead(const ir::Op &op, const Promotion &p, RegVal &v,
                            const CloneFilter &keep) {
  if (p.wgmma)
    return wgmmaDescriptors(op, p, v, keep);
  const LdsAlloc &al = allocs_[p.alloc];
  Access acc;
  if (!prepareAccess(op, op.operands[0], acc, /*registerSide=*/p.mapped))
    return false;
  acc.base = al.base;
  acc.ptr = "!llvm.ptr<3>";
  acc.mayBeEmpty = false; // a shared tile always has its elements
  acc.strides = al.strides;
  acc.extra = stageIndex_ * (al.bytes / static_cast<int64_t>(byteSize(acc.dtype)));
  acc.swizzle = al.swizzle;
  for (size_t i = 0; i < acc.dims.size(); ++i) {
    acc.dims[i].start = facts_.simplify(zeroed(acc.dims[i].start, isGlobalTerm));
    acc.dims[i].masked = false;
    acc.sizes[i] = IndexExpr(al.tile[i]);
  }
  v = RegVal();
  v.dtype = acc.dtype;
  v.elems = acc.elems;
  for (size_t i = 0; i < acc.dims.size(); ++i) {
    v.layout[acc.dims[i].dim.str()] =
        p.mapped ? accessOf(op)->regDims[i] : accessOf(op)->dims[i];
    for (const auto &s : acc.dims[i].start.freeSymbols())
      if (s.rfind("$i_", 0) == 0)
        v.cloneSyms.insert(s);
  }
  if (acc.vecDim >= 0)
    v.vecDim = acc.dims[acc.vecDim].dim.str();

  // ldmatrix: an mma.sync operand of 16-bit elements whose K dim is the innermost memory dim,
  // or (.trans) whose row dim is (attention's V as the A operand of Vᵀ·Pᵀ).
  const ir::Op *mma = nullptr;
  for (const ir::Op *u : op.results[0]->users)
    if (u->kind == ir::OpKind::Mma &&
        (u->operands[0] == op.results[0]) != (u->operands[1] == op.results[0]))
      mma = u;
  const LaneLayout *layout = nullptr;
  int rowIdx = -1, colIdx = -1;
  bool trans = false;
  if (mma && mma->mma && bitWidth(acc.dtype) == 16) {
    const bool lhs = mma->operands[0] == op.results[0];
    layout = lhs ? &mma->mma->a : &mma->mma->b;
    const ir::Dim &rowDim = lhs ? mma->dims[0] : mma->dims[1];
    for (size_t i = 0; i < acc.dims.size(); ++i) {
      if (acc.dims[i].dim == rowDim)
        rowIdx = static_cast<int>(i);
      if (acc.dims[i].dim == mma->dims[2])
        colIdx = static_cast<int>(i);
    }
    const int inner = static_cast<int>(acc.dims.size()) - 1;
    trans = colIdx != inner && rowIdx == inner && layout->ldTransRow;
    if (layout->ldTiles == 0 || (colIdx != inner && !trans) || rowIdx < 0 || colIdx < 0 ||
        layout->ldTiles * 2 != static_cast<unsigned>(acc.elems))
      layout = nullptr;
  }
  LdsScope scope(*this, p.alloc, /*write=*/false, stageTag_);
  std::vector<CloneAssign> assigns;
  for (const auto &a : clonesOver(v.cloneSyms))
    if (!keep || keep(a))
      assigns.push_back(a);
  if (layout)
    ldmatrixClones(acc, *layout, rowIdx, colIdx, assigns, v, trans);
  else
    for (const auto &a : assigns)
      v.clones[cloneKey(a, v.cloneSyms)] = loadClone(acc, a);
  return true;
}

const ir::Op *KernelEmitter::wgmmaUser(const ir::Op &read, bool *lhs) const {
  const ir::Value *v = read.results[0];
  const ir::Op *found = nullptr;
  bool asLhs = false;
  for (const ir::Op *u : v->users) {
    if (u->kind != ir::OpKind::Mma || !u->mma || u->mma->family != MmaFamily::Wgmma)
      return nullptr;
    const bool l = u->operands[0] == v, r = u->operands[1] == v;
    if (l == r || u->operands[2] == v || (found && asLhs != l))
      return nullptr;
    found = found ? found : u;
    asLhs = l;
  }
  if (lhs)
    *lhs = asLhs;
  return found;
}

// A matrix descriptor (PTX ISA, "Matrix Descriptor Format") per clone of a wgmma operand and
// K step of 16 inside the clone (`wgmmaSteps`; the clone's key, then key + "#s"): bits 0-13 the
// start address >> 4, 16-29 the leading-dimension byte offset >> 4, 32-45 the stride byte
// offset >> 4, 62-63 the swizzle (1: 128 bytes, 2: 64, 3: 32). K-major tiles ([rows, K]): the
// start of (row r0, K k0) is r0 * W + 2 (k0 mod W / 2) bytes into k0's column block; r0 is a
// multiple of 8 (the warpgroup's 64 rows), so the unswizzled address of the 8-row group, and
// K steps inside a row advance it by 32 bytes, which the hardware swizzles like the rest of the
// address; the leading offset is unused (1), the stride offset is 8 rows (8 W). N-major B tiles
// ([K, N], 128-byte swizzle): (k0, n0) starts at row k0 of n0's column block (n0 a multiple of
// 64); the leading offset is the distance between column blocks (64 N apart), the stride
// offset 8 rows (1024 bytes). Starts that differ by a constant share one computation.
bool KernelEmitter::wgmmaDescriptors(const ir::Op &op, const Promotion &p, RegVal &v,
                                     const CloneFilter &keep) {
  const LdsAlloc &al = allocs_[p.alloc];
  Access acc;
  if (!prepareAccess(op, op.operands[0], acc))
    return false;
  v = RegVal();
  v.dtype = ScalarType::I64;
  v.descAlloc = p.alloc;
  v.descStage = stageTag_;
  v.descNMajor = p.nMajor;
  for (auto &di : acc.dims) {
    di.start = facts_.simplify(zeroed(di.start, isGlobalTerm));
    for (const auto &s : di.start.freeSymbols())
      if (s.rfind("$i_", 0) == 0)
        v.cloneSyms.insert(s);
  }
  const size_t n = acc.dims.size();
  const int64_t w = al.xorBytes, b = byteSize(acc.dtype);
  const uint64_t mode = w == 128 ? 1 : w == 64 ? 2 : 3;
  const uint64_t lbo = p.nMajor ? uint64_t(al.blockBytes ? al.blockBytes : al.tile[n - 2] * w) / 16
                                : 1;
  const uint64_t hi = (lbo << 16) | (uint64_t(8 * w / 16) << 32) | (mode << 62);
  const ir::Op *mma = wgmmaUser(op);
  const int steps = wgmmaSteps(*mma);
  auto i64 = [&](int64_t c) {
    std::string r = fresh();
    line(r + " = arith.constant " + std::to_string(c) + " : i64");
    return r;
  };
  auto op64 = [&](const char *o, const std::string &a, const std::string &x) {
    std::string r = fresh();
    line(r + " = arith." + o + " " + a + ", " + x + " : i64");
    return r;
  };
  // Byte offset of (row r, column c) of the tile's last two dims, at a 16-byte chunk boundary.
  auto at = [&](const IndexExpr &r, const IndexExpr &c) {
    const int64_t per = w / b;
    IndexExpr off = r * w + mod(c, per) * b;
    if (al.blockBytes)
      off += floorDiv(c, per) * al.blockBytes;
    return off;
  };
  std::string base = fresh();
  line(base + " = llvm.ptrtoint " + al.base + " : !llvm.ptr<3> to i64");
  std::vector<std::pair<IndexExpr, std::string>> starts; // byte offset -> descriptor
  for (const auto &a : clonesOver(v.cloneSyms)) {
    if (keep && !keep(a))
      continue;
    const IndexExpr r0 = laneZero(dimIndex(acc, n - 2, a, 0)),
                    c0 = laneZero(dimIndex(acc, n - 1, a, 0));
    const std::string key = cloneKey(a, v.cloneSyms);
    for (int st = 0; st < steps; ++st) {
      const IndexExpr off = facts_.simplify(
          stageIndex_ * al.bytes + (p.nMajor ? at(r0 + 16 * st, c0) : at(r0, c0 + 16 * st)));
      std::string desc;
      for (const auto &[o, d] : starts)
        if (auto c = facts_.simplify(off - o).asInteger()) {
          desc = *c == 0 ? d : op64("addi", d, i64(*c / 16));
          break;
        }
      if (desc.empty()) {
        std::string x = fresh();
        line(x + " = arith.index_cast " + lowerIndex(off) + " : index to i64");
        std::string addr = op64("addi", base, x);
        std::string field = op64("andi", op64("shrui", addr, i64(4)), i64(0x3fff));
        desc = op64("ori", field, i64(static_cast<int64_t>(hi)));
        starts.push_back({off, desc});
      }
      v.clones[st ? key + "#" + std::to_string(st) : key] = desc;
    }
  }
  return true;
}

bool KernelEmitter::wgmmaOverlaps(const ir::Op &iterate) const {
  const ir::Region &body = *iterate.regions[0];
  bool ok = true;
  ir::walk(body, [&](const ir::Op &op) {
    if (op.kind != ir::OpKind::Mma || !op.mma || op.mma->family != MmaFamily::Wgmma)
      return;
    for (const ir::Op *u : op.results[0]->users) {
      if (u->kind != ir::OpKind::Yield || u->parent != &body) {
        ok = false;
        continue;
      }
      for (size_t i = 0; i < u->operands.size(); ++i)
        if (u->operands[i] == op.results[0] && i < body.args.size())
          for (const ir::Op *next : body.args[i]->users)
            ok = ok && next->kind == ir::OpKind::Mma && next->operands[2] == body.args[i] &&
                 next->operands[0] != body.args[i] && next->operands[1] != body.args[i];
    }
  });
  return ok;
}

// K steps of 16 that a wgmma makes inside each clone of its K dim: the dim's step / the kind's K
// (1 unless the dim is also another product's M or N: distribution.cpp, mmaVectorShapes).
int KernelEmitter::wgmmaSteps(const ir::Op &mma) const {
  for (const auto &ex : d_.expansion)
    if (ex.dim == mma.dims[2])
      if (auto vs = ex.vectorShape.asInteger(); vs && *vs > mma.mma->k)
        return static_cast<int>(*vs / mma.mma->k);
  return 1;
}

// ldmatrix loads for the clones of one mma.sync operand. A fragment of fewer than four 8x8
// matrices (B of m16n8k16: two) is grouped with the next clones along the fastest clone dim
// into one .x4: lanes [8t·j, 8t·j + 8t) address clone j of the group, whose registers then are
// j·t .. j·t + t - 1 (t = the layout's ldTiles). Clones whose offsets differ by a constant share
// one pointer (a constant GEP from it), so the loop keeps one lane-dependent address per
// distinct swizzle phase rather than one per instruction.
void KernelEmitter::ldmatrixClones(const Access &acc, const LaneLayout &layout, int rowIdx,
                                   int colIdx, const std::vector<CloneAssign> &assigns,
                                   RegVal &v, bool trans) {
  auto ldRow = trans ? layout.ldTransRow : layout.ldRow;
  auto ldCol = trans ? layout.ldTransCol : layout.ldCol;
  const unsigned t = layout.ldTiles;
  const int64_t group = t < 4 && 4 % t == 0 ? 4 / t : 1;
  const IndexExpr lane = mod(IndexExpr::symbol("$T0"), static_cast<int64_t>(d_.groupSize));
  const int64_t span = 8 * t; // lanes addressing one clone
  const size_t nd = acc.dims.size();
  std::vector<std::pair<IndexExpr, std::string>> bases; // offset -> pointer
  // The buffer's base first, then the lane's offset in it: LLVM keeps the constant steps between
  // clones as immediates of the instructions instead of hoisting one address per clone.
  Access inBuffer = acc;
  inBuffer.extra = IndexExpr(0);
  if (!acc.extra.isInteger() || *acc.extra.asInteger() != 0)
    inBuffer.base = gep(acc, acc.extra);
  auto pointerTo = [&](const IndexExpr &off) {
    for (const auto &[base, ptr] : bases)
      if (auto c = facts_.simplify(off - base).asInteger()) {
        if (*c == 0)
          return ptr;
        std::string p = fresh();
        line(p + " = llvm.getelementptr " + ptr + "[" + std::to_string(*c) +
             "] : (!llvm.ptr<3>) -> !llvm.ptr<3>, " + mlirType(acc.dtype));
        return p;
      }
    std::string p = gep(inBuffer, off);
    bases.push_back({off, p});
    return p;
  };
  auto emitGroup = [&](size_t first, int64_t count) {
    std::vector<std::vector<IndexExpr>> at(count, std::vector<IndexExpr>(nd));
    for (int64_t j = 0; j < count; ++j)
      for (size_t i = 0; i < nd; ++i)
        at[j][i] = laneZero(dimIndex(acc, i, assigns[first + j], 0));
    std::vector<IndexExpr> idx(nd);
    const IndexExpr which = floorDiv(lane, span), sub = mod(lane, span);
    for (size_t i = 0; i < nd; ++i) {
      IndexExpr x = at[0][i];
      if (count > 1)
        x = x + which * facts_.simplify(at[1][i] - at[0][i]);
      if (static_cast<int>(i) == rowIdx)
        x = x + ldRow(count > 1 ? sub : lane);
      else if (static_cast<int>(i) == colIdx)
        x = x + ldCol(count > 1 ? sub : lane);
      idx[i] = x;
    }
    std::string ptr = pointerTo(facts_.simplify(offsetOf(inBuffer, idx)));
    const unsigned regs = t * static_cast<unsigned>(count);
    std::string sty = "!llvm.struct<(";
    for (unsigned j = 0; j < regs; ++j)
      sty += std::string(j ? ", " : "") + "i32";
    sty += ")>";
    std::string s = fresh();
    line(s + " = llvm.call_intrinsic \"llvm.nvvm.ldmatrix.sync.aligned.m8n8.x" +
         std::to_string(regs) + (trans ? ".trans" : "") + ".b16\"(" + ptr +
         ") : (!llvm.ptr<3>) -> " + sty);
    const std::string ity = "vector<" + std::to_string(t) + "xi32>";
    for (int64_t j = 0; j < count; ++j) {
      std::string vec = fresh();
      line(vec + " = llvm.mlir.undef : " + ity);
      for (unsigned r = 0; r < t; ++r) {
        std::string x = fresh(), pos = fresh(), n = fresh();
        line(x + " = llvm.extractvalue " + s + "[" + std::to_string(j * t + r) + "] : " + sty);
        line(pos + " = llvm.mlir.constant(" + std::to_string(r) + " : i32) : i32");
        line(n + " = llvm.insertelement " + x + ", " + vec + "[" + pos + " : i32] : " + ity);
        vec = n;
      }
      std::string r = fresh();
      line(r + " = llvm.bitcast " + vec + " : " + ity + " to " + vecType(acc.dtype, acc.elems));
      v.clones[cloneKey(assigns[first + j], v.cloneSyms)] = r;
    }
  };
  // A group: `group` consecutive clones that differ from the first in one clone dim only, by
  // 1, 2, ... there, and whose origins are evenly spaced (the lane picks its clone by a
  // multiple of one step). Anything else gets one instruction per clone.
  auto groupAt = [&](size_t c) {
    if (group == 1 || c + group > assigns.size())
      return false;
    std::string along;
    for (int64_t j = 1; j < group; ++j)
      for (const auto &[sym, val] : assigns[c + j]) {
        const int64_t d = val - assigns[c].at(sym);
        if (d == 0)
          continue;
        if (d != j || (!along.empty() && along != sym))
          return false;
        along = sym;
      }
    if (along.empty())
      return false;
    for (int64_t j = 2; j < group; ++j)
      for (size_t i = 0; i < nd; ++i) {
        IndexExpr a0 = laneZero(dimIndex(acc, i, assigns[c], 0));
        IndexExpr a1 = laneZero(dimIndex(acc, i, assigns[c + 1], 0));
        IndexExpr aj = laneZero(dimIndex(acc, i, assigns[c + j], 0));
        if (!facts_.provesEqual(aj - a0, (a1 - a0) * j))
          return false;
      }
    return true;
  };
  for (size_t c = 0; c < assigns.size();) {
    const int64_t n = groupAt(c) ? group : 1;
    emitGroup(c, n);
    c += static_cast<size_t>(n);
  }
}

// ---- mma ---------------------------------------------------------------------------------

std::string KernelEmitter::mmaInstr(const MmaKind &k, ScalarType in, const std::string &a,
                                    const std::string &b, const std::string &c) {
  const std::string cty = vecType(k.acc, k.c.elements);
  auto bitcast = [&](const std::string &x, const std::string &from, const std::string &to) {
    if (from == to)
      return x;
    std::string r = fresh();
    line(r + " = llvm.bitcast " + x + " : " + from + " to " + to);
    return r;
  };
  auto half = [&](const std::string &x, int64_t n, int64_t part) {
    std::string r = fresh(), mask;
    for (int64_t j = 0; j < n / 2; ++j)
      mask += (j ? ", " : "") + std::to_string(part * n / 2 + j);
    const std::string ty = vecType(in, n);
    line(r + " = vector.shuffle " + x + ", " + x + " [" + mask + "] : " + ty + ", " + ty);
    return r;
  };
  if (k.family == MmaFamily::MFMA) {
    if (k.isVirtual) {
      // Two native instructions of half the K, each on half of the lane's elements
      // (wave-facts.md 3.2; legal by the K-permutation rule).
      MmaKind native = k;
      native.k = k.k / 2;
      native.isVirtual = false;
      native.a.elements = k.a.elements / 2;
      native.b.elements = k.b.elements / 2;
      std::string r = c;
      for (int part = 0; part < 2; ++part)
        r = mmaInstr(native, in, half(a, k.a.elements, part), half(b, k.b.elements, part), r);
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
  if (k.family == MmaFamily::WMMA) {
    const int64_t e = k.a.elements;
    const std::string vty = vecType(in, e);
    const bool bf = in == ScalarType::BF16;
    const std::string oty = bf ? "vector<" + std::to_string(e) + "xi16>" : vty;
    std::string x = bitcast(a, vty, oty), y = bitcast(b, vty, oty), r = fresh();
    line(r + " = rocdl.wmma.f32.16x16x16." + (bf ? "bf16 " : "f16 ") + x + ", " + y + ", " + c +
         " : (" + oty + ", " + oty + ", " + cty + ") -> " + cty);
    return r;
  }
  // mma.sync through the NVVM intrinsic (MLIR 19's nvvm.mma.sync rejects bf16).
  const bool bf = in == ScalarType::BF16;
  auto regs = [&](const std::string &x, int64_t e) {
    const int64_t words = e / 2;
    std::string w = bitcast(x, vecType(in, e), "vector<" + std::to_string(words) + "xi32>");
    std::vector<std::string> out;
    for (int64_t j = 0; j < words; ++j) {
      std::string r = fresh();
      line(r + " = vector.extract " + w + "[" + std::to_string(j) + "] : i32 from vector<" +
           std::to_string(words) + "xi32>");
      out.push_back(bf ? r : bitcast(r, "i32", vecType(in, 2)));
    }
    return out;
  };
  std::vector<std::string> args = regs(a, k.a.elements), bs = regs(b, k.b.elements);
  args.insert(args.end(), bs.begin(), bs.end());
  std::string sig;
  const std::string rty = bf ? "i32" : vecType(in, 2);
  for (size_t j = 0; j < args.size(); ++j)
    sig += (j ? ", " : "") + rty;
  for (unsigned j = 0; j < k.c.elements; ++j) {
    std::string x = fresh();
    line(x + " = vector.extract " + c + "[" + std::to_string(j) + "] : f32 from " + cty);
    args.push_back(x);
    sig += ", f32";
  }
  std::string list;
  for (size_t j = 0; j < args.size(); ++j)
    list += (j ? ", " : "") + args[j];
  const std::string shape = "m" + std::to_string(k.m) + "n" + std::to_string(k.n) + "k" +
                            std::to_string(k.k);
  std::string sty = "!llvm.struct<(f32, f32, f32, f32)>", s = fresh();
  line(s + " = llvm.call_intrinsic \"llvm.nvvm.mma." + shape + ".row.col." +
       (bf ? "bf16" : "f32.f32") + "\"(" + list + ") : (" + sig + ") -> " + sty);
  std::string vec = fresh();
  line(vec + " = llvm.mlir.undef : " + cty);
  for (unsigned j = 0; j < k.c.elements; ++j) {
    std::string x = fresh(), r = fresh();
    line(x + " = llvm.extractvalue " + s + "[" + std::to_string(j) + "] : " + sty);
    line(r + " = vector.insert " + x + ", " + vec + " [" + std::to_string(j) + "] : f32 into " +
         cty);
    vec = r;
  }
  return vec;
}

bool KernelEmitter::emitMma(const ir::Op &op) {
  const MmaKind &k = *op.mma;
  const ScalarType in = op.operands[0]->type.dtype;
  // Clones of M, N and K step by the vector shapes of the expansion, which the first mma of
  // each dim decided; a chained mma must step alike.
  const unsigned shape[3] = {k.m, k.n, k.k};
  const bool group = k.family == MmaFamily::Wgmma;
  for (int r = 0; r < 3; ++r)
    for (const auto &ex : d_.expansion)
      if (ex.dim == op.dims[r] && !ex.vectorShape.equals(IndexExpr(int64_t{shape[r]})) &&
          !(group && r == 2 && wgmmaSteps(op) > 1))
        return unsupported("an mma of kind " + std::string(k.name) + " whose dim " +
                               ex.dim.str() + " is walked in steps of " +
                               ex.vectorShape.str() + " (another mma's shape) instead of " +
                               std::to_string(shape[r]),
                           op.loc);
  if (k.family == MmaFamily::Wgmma)
    return emitWgmma(op);
  // Each operand in the kind's layout: values read for this mma already are; an earlier mma's
  // result is permuted in registers or shuffled across lanes (chained products).
  // An operand used as it is stays the value in values_ (not a copy): the fragment pipeline
  // (afterKStep_) adds the clones of later K steps of a read to it while the instructions of
  // earlier steps are emitted.
  RegVal converted[3];
  const RegVal *opnd[3];
  const LaneLayout *lanes[3] = {&k.a, &k.b, &k.c};
  for (int i = 0; i < 3; ++i) {
    const RegVal &v = values_.at(op.operands[i]);
    RegVal like = layoutFrom(mmaOperandIndex(k_, d_, op, i, op.operands[i]->type.shape),
                             lanes[i]->elements, v.dtype);
    bool asIs = false;
    if (!convertTo(v, like, converted[i], op.loc, &asIs))
      return false;
    opnd[i] = asIs ? &v : &converted[i];
  }
  RegVal out = layoutFrom(mmaOperandIndex(k_, d_, op, 2, op.results[0]->type.shape),
                          k.c.elements, k.acc);
  const std::string kSym = "$i_" + op.dims[2].str();
  const int64_t kCount =
      opnd[0]->cloneSyms.count(kSym) || opnd[1]->cloneSyms.count(kSym) ? expansionCount(kSym) : 1;
  // K outermost: consecutive instructions update different accumulators, so none waits for
  // the previous one's result.
  const std::vector<CloneAssign> assigns = clonesOver(out.cloneSyms);
  for (const auto &a : assigns)
    out.clones[cloneKey(a, out.cloneSyms)] = operandAt(*opnd[2], a, out.elems);
  for (int64_t kk = 0; kk < kCount; ++kk) {
    for (const auto &a : assigns) {
      CloneAssign b = a;
      b[kSym] = kk;
      std::string &c = out.clones[cloneKey(a, out.cloneSyms)];
      c = mmaInstr(k, in, operandAt(*opnd[0], b, k.a.elements),
                   operandAt(*opnd[1], b, k.b.elements), c);
    }
    if (afterKStep_)
      afterKStep_(kSym, kk, kCount);
  }
  values_[op.results[0]] = std::move(out);
  return !failed_;
}

// wgmma (sm_90a): per accumulator clone and K step one `wgmma.mma_async` of the warpgroup,
// A and B through their descriptors, the accumulator (the kind's C layout) in registers as a
// struct of f32. `wgmma.fence` first (the accumulators were written by other instructions),
// then the instructions, one commit group, and a wait that leaves `wgmmaKeep_` groups in flight
// (1 inside a pipelined loop: the next iteration's barrier and copies overlap this tile's
// products). For the barrier analysis the shared-memory reads happen twice: at issue (they
// need the tile: a barrier there, preceded by the async-proxy fence) and when the wait retires
// them (the tile's buffer may be overwritten after a barrier that follows the wait).
bool KernelEmitter::emitWgmma(const ir::Op &op) {
  const MmaKind &k = *op.mma;
  const ScalarType in = op.operands[0]->type.dtype;
  const RegVal &a0 = values_.at(op.operands[0]), &b = values_.at(op.operands[1]);
  if (b.descAlloc < 0)
    return unsupported("a wgmma B operand that is not the tile of a read of a shared-memory "
                       "parameter used only by wgmma (wgmma reads B through a shared-memory "
                       "descriptor)",
                       op.loc);
  if (in != ScalarType::F16 && in != ScalarType::BF16)
    return unsupported(std::string("wgmma on ") + scalarTypeName(in), op.loc);
  const int steps = wgmmaSteps(op);
  // A from registers (the fragments of every K step of a clone, in the register-fragment
  // layout of the PTX ISA), or from shared memory through descriptors like B.
  const bool regA = a0.descAlloc < 0;
  RegVal aConv;
  if (regA && !convertTo(a0,
                         layoutFrom(mmaOperandIndex(k_, d_, op, 0, op.operands[0]->type.shape),
                                    k.a.elements * steps, in),
                         aConv, op.loc))
    return false;
  const RegVal &a = regA ? aConv : a0;
  RegVal acc;
  const RegVal &c0 = values_.at(op.operands[2]);
  if (!convertTo(c0,
                 layoutFrom(mmaOperandIndex(k_, d_, op, 2, op.operands[2]->type.shape),
                            k.c.elements, c0.dtype),
                 acc, op.loc))
    return false;
  RegVal out = layoutFrom(mmaOperandIndex(k_, d_, op, 2, op.results[0]->type.shape),
                          k.c.elements, k.acc);
  const std::string kSym = "$i_" + op.dims[2].str();
  const int64_t kCount =
      a.cloneSyms.count(kSym) || b.cloneSyms.count(kSym) ? expansionCount(kSym) : 1;
  const int64_t n = k.c.elements;
  const std::string vty = vecType(ScalarType::F32, n);
  std::string sty = "!llvm.struct<(";
  for (int64_t j = 0; j < n; ++j)
    sty += j ? ", f32" : "f32";
  sty += ")>";
  const std::vector<CloneAssign> assigns = clonesOver(out.cloneSyms);
  std::vector<std::string> regs;
  for (const auto &ca : assigns) {
    const std::string v = operandAt(acc, ca, n);
    std::string st = fresh();
    line(st + " = llvm.mlir.undef : " + sty);
    for (int64_t j = 0; j < n; ++j) {
      std::string x = fresh(), r = fresh();
      line(x + " = vector.extract " + v + "[" + std::to_string(j) + "] : f32 from " + vty);
      line(r + " = llvm.insertvalue " + x + ", " + st + "[" + std::to_string(j) + "] : " + sty);
      st = r;
    }
    regs.push_back(st);
  }
  // The A fragments of a register operand: per clone and K step, elements 8 st .. 8 st + 7 as
  // four 32-bit registers of two 16-bit values each.
  std::map<std::string, std::vector<std::string>> fragments;
  auto fragmentsOf = [&](const CloneAssign &ab, int st) -> const std::vector<std::string> & {
    const std::string key = cloneKey(ab, a.cloneSyms) + "#" + std::to_string(st);
    auto it = fragments.find(key);
    if (it != fragments.end())
      return it->second;
    const std::string whole = operandAt(a, ab, k.a.elements * steps);
    const std::string wty = vecType(in, k.a.elements * steps);
    std::vector<std::string> words;
    for (int j = 0; j < 4; ++j) {
      std::string pair = fresh();
      line(pair + " = vector.extract_strided_slice " + whole + " {offsets = [" +
           std::to_string(8 * st + 2 * j) + "], sizes = [2], strides = [1]} : " + wty + " to " +
           vecType(in, 2));
      std::string word = fresh();
      line(word + " = vector.bitcast " + pair + " : " + vecType(in, 2) + " to vector<1xi32>");
      std::string x = fresh();
      line(x + " = vector.extract " + word + "[0] : i32 from vector<1xi32>");
      words.push_back(x);
    }
    return fragments[key] = words;
  };
  auto descAt = [&](const RegVal &v, const CloneAssign &ab, int st) {
    const std::string key = cloneKey(ab, v.cloneSyms);
    return v.clones.at(st ? key + "#" + std::to_string(st) : key);
  };
  line("nvvm.wgmma.fence.aligned");
  auto reads = [&](const std::function<int(int)> &stageOf, bool issue) {
    for (const RegVal *x : {&a, &b}) {
      if (x->descAlloc < 0 ||
          (x == &b && b.descAlloc == a.descAlloc && b.descStage == a.descStage))
        continue;
      SyncItem it{SyncItem::Read, x->descAlloc, stageOf(x->descStage)};
      it.asyncProxy = issue;
      mark(it);
    }
  };
  reads([](int st) { return st; }, true);
  const std::string ty = in == ScalarType::F16 ? "f16" : "bf16";
  const std::string shape = "#nvvm.shape<m = " + std::to_string(k.m) +
                            ", n = " + std::to_string(k.n) + ", k = " + std::to_string(k.k) + ">";
  const std::string ptxShape = "m" + std::to_string(k.m) + "n" + std::to_string(k.n) + "k" +
                               std::to_string(k.k);
  for (int64_t kk = 0; kk < kCount; ++kk)
    for (int st = 0; st < steps; ++st)
      for (size_t i = 0; i < assigns.size(); ++i) {
        CloneAssign ab = assigns[i];
        ab[kSym] = kk;
        std::string r = fresh();
        if (!regA) {
          line(r + " = nvvm.wgmma.mma_async " + descAt(a, ab, st) + ", " + descAt(b, ab, st) +
               ", " + regs[i] + ", " + shape + ", D [<f32>, #nvvm.wgmma_scale_out<one>], A [<" +
               ty + ">, #nvvm.wgmma_scale_in<one>, <row>], B [<" + ty +
               ">, #nvvm.wgmma_scale_in<one>, <" + (b.descNMajor ? "row" : "col") + ">] : " +
               sty + " -> " + sty);
        } else {
          // MLIR 19's nvvm.wgmma.mma_async takes A only through a descriptor: the register
          // form as inline PTX, the accumulators tied to the results.
          std::string text = "{\\0A.reg .pred p;\\0Asetp.ne.b32 p, 1, 0;\\0Awgmma.mma_async.sync.aligned." +
                             ptxShape + ".f32." + ty + "." + ty + " {";
          std::string cons, args, types;
          for (int64_t j = 0; j < n; ++j) {
            text += (j ? ", $" : "$") + std::to_string(j);
            cons += "=f,";
          }
          text += "}, {";
          for (int j = 0; j < 4; ++j)
            text += (j ? ", $" : "$") + std::to_string(2 * n + j);
          text += "}, $" + std::to_string(2 * n + 4) + ", p, 1, 1, " +
                  (b.descNMajor ? "1" : "0") + ";\\0A}";
          std::string accs = fresh();
          for (int64_t j = 0; j < n; ++j) {
            std::string x = fresh();
            line(x + " = llvm.extractvalue " + regs[i] + "[" + std::to_string(j) + "] : " + sty);
            args += (j ? ", " : "") + x;
            types += j ? ", f32" : "f32";
            cons += std::to_string(j) + ",";
          }
          for (const std::string &wd : fragmentsOf(ab, st)) {
            args += ", " + wd;
            types += ", i32";
            cons += "r,";
          }
          args += ", " + descAt(b, ab, st);
          types += ", i64";
          cons += "l";
          line(r + " = llvm.inline_asm has_side_effects asm_dialect = att \"" + text + "\", \"" +
               cons + "\" " + args + " : (" + types + ") -> " + sty);
        }
        regs[i] = r;
      }
  line("nvvm.wgmma.commit.group.sync.aligned");
  // The wait retires the groups before the newest `keep`: with keep = 1 in a loop of S
  // buffers, the reads of tile i - 1 (buffer stage S - 1 relative to this iteration's).
  const int keep = wgmmaKeep_;
  line("nvvm.wgmma.wait.group.sync.aligned " + std::to_string(keep));
  if (keep > 0)
    wgmmaInFlight_ = true;
  const int stagesN = wgmmaStages_;
  reads(
      [&](int st) {
        return st < 0 || stagesN <= 0 ? st : ((st - keep) % stagesN + stagesN) % stagesN;
      },
      false);
  for (size_t i = 0; i < assigns.size(); ++i) {
    std::string vec = fresh();
    line(vec + " = llvm.mlir.undef : " + vty);
    for (int64_t j = 0; j < n; ++j) {
      std::string x = fresh(), r = fresh();
      line(x + " = llvm.extractvalue " + regs[i] + "[" + std::to_string(j) + "] : " + sty);
      line(r + " = vector.insert " + x + ", " + vec + " [" + std::to_string(j) + "] : f32 into " +
           vty);
      vec = r;
    }
    out.clones[cloneKey(assigns[i], out.cloneSyms)] = vec;
  }
  values_[op.results[0]] = std::move(out);
  return !failed_;
}

// ---- iterate -----------------------------------------------------------------------------

bool KernelEmitter::emitIterate(const ir::Op &op) {
  std::vector<RegVal> carried;
  for (const ir::Value *o : op.operands)
    carried.push_back(values_.at(o));
  // The carried values' shapes are those of their inits widened by what the body yields
  // (a splat 0 init of an MMA accumulator becomes one vector per clone): emit, compare, and
  // emit again with the wider shapes until they settle.
  for (int round = 0; round < 4; ++round) {
    const size_t mark = items_.size();
    auto cache = exprCache_;
    std::vector<RegVal> yielded;
    if (!emitLoopOnce(op, carried, yielded))
      return false;
    bool settled = true;
    for (size_t i = 0; i < carried.size(); ++i) {
      RegVal &c = carried[i];
      const RegVal &y = yielded[i];
      if (carriedFits(c, y))
        continue;
      settled = false;
      if (c.laidOut() || y.deferred)
        return unsupported("a loop-carried value whose layout changes in the loop", op.loc);
      // A uniform init (a splat) takes the layout of what the body yields.
      c.cloneSyms.insert(y.cloneSyms.begin(), y.cloneSyms.end());
      c.elems = y.elems;
      c.vecDim = y.vecDim;
      c.layout = y.layout;
    }
    if (settled)
      return true;
    items_.resize(mark);
    exprCache_ = cache;
  }
  return unsupported("a loop whose carried values do not settle", op.loc);
}

bool KernelEmitter::emitLoopOnce(const ir::Op &op, const std::vector<RegVal> &carried,
                                 std::vector<RegVal> &yielded) {
  const ir::Dim &dim = op.dims[0];
  const LoopInfo *li = nullptr;
  for (const auto &l : d_.loops)
    if (l.dim == dim)
      li = &l;
  if (!li)
    return unsupported("iterate over " + dim.str() + " without a loop", op.loc);
  const std::string ivSym = "$IV_" + dim.str();
  const ir::Region &body = *op.regions[0];
  std::vector<const ir::Op *> staged;
  for (const auto &o : body.ops)
    if (isPromoted(*o)) {
      if (!promotions_.count(o.get()) && !promote(*o))
        return false;
      staged.push_back(o.get());
    }
  // Two schedules. With cp.async (every staged copy can use it): S buffers per tile, later
  // tiles copied while the current one is read (below); otherwise one buffer and a register
  // prefetch (load tile i + 1 at the top of iteration i, store it at the end). Either way the
  // barriers come from the analysis.
  bool async = !staged.empty();
  for (const ir::Op *o : staged)
    async = async && asyncCopyable(promotions_.at(o));
  // Tiles read by wgmma: the products of tile i stay in flight into iteration i + 1 (the wait
  // after them keeps one group), so tile i's buffer is free only after iteration i + 1's
  // barrier: the copy issued in iteration i, after the products, fetches tile i + S - 2 (S >= 3;
  // with 2 buffers the wait keeps nothing and the copy fetches tile i + 1). Depth: 4 buffers,
  // else 3, else 2 within the opt-in shared memory.
  bool wgLoop = false;
  for (const ir::Op *o : staged)
    wgLoop |= promotions_.at(o).wgmma;
  // Pipeline depth: the first of these that fits: 4 or 3 swizzled buffers within the static
  // shared memory, 3 within the opt-in limit (NVIDIA dynamic shared memory: bigger block tiles
  // need it, and 3 buffers measured best there, docs/performance.md), then 2 swizzled or padded
  // ones, then padded ones within the opt-in limit (rows longer than 128 bytes, e.g.
  // attention's head dim 128, cannot be swizzled); 1 (register prefetch) otherwise.
  int stages = 1;
  bool swizzle = false;
  for (const ir::Op *o : staged)
    allocs_[promotions_.at(o).alloc].stages = 1;
  struct Depth {
    int stages;
    bool swizzle;
    int64_t budget;
  };
  const int64_t staticLds = target_.ldsBytes, optInLds = target_.ldsOptInBytes;
  const std::vector<Depth> depths =
      wgLoop ? std::vector<Depth>{{4, true, optInLds}, {3, true, optInLds}, {2, true, optInLds},
                                  {2, false, optInLds}}
             : std::vector<Depth>{{4, true, staticLds}, {3, true, staticLds}, {3, true, optInLds},
                                  {2, true, staticLds}, {2, false, staticLds}, {3, false, optInLds},
                                  {2, true, optInLds}, {2, false, optInLds}};
  for (Depth c : depths) {
    if (!async || stages > 1)
      break;
    bool ok = true;
    for (const ir::Op *o : staged) {
      LdsAlloc &al = allocs_[promotions_.at(o).alloc];
      ok = ok && (!c.swizzle || al.xorBytes || swizzlable(al.tile, o->operands[0]->type.dtype));
    }
    if (!ok)
      continue;
    int64_t total = 0;
    std::vector<LdsAlloc> trial = allocs_;
    for (size_t i = 0; i < allocs_.size(); ++i) {
      LdsAlloc &al = trial[i];
      bool mine = false;
      for (const ir::Op *o : staged)
        mine |= promotions_.at(o).alloc == static_cast<int>(i);
      if (mine) {
        relayout(al, staged.front()->operands[0]->type.dtype, c.swizzle);
        al.stages = c.stages;
      }
      total += (al.bytes + 15) / 16 * 16 * al.stages;
    }
    if (wgLoop)
      total = placeAllocs(trial);
    if (total <= c.budget) {
      stages = c.stages;
      swizzle = c.swizzle;
    }
  }
  if (stages == 1)
    async = false;
  for (const ir::Op *o : staged) {
    LdsAlloc &al = allocs_[promotions_.at(o).alloc];
    relayout(al, o->operands[0]->type.dtype, swizzle);
    al.stages = stages;
  }
  // Fragment pipelining (with cp.async, when the staged reads have several clones along the
  // loop's dim, i.e. several K steps of an mma): step 0 of tile i + 1 is read at the end of
  // iteration i and carried into iteration i + 1, the other steps at its top. The end of the
  // iteration then holds the one barrier (after the reads of step 1.. of tile i, before those
  // of tile i + 1), so the copy of tile i + S goes into tile i's buffer right behind it, and the
  // ldmatrix latency after the barrier overlaps the last step's MMAs (emitMid, placed by
  // emitMma's afterKStep_ hook before the last K step).
  const std::string kSym = "$i_" + dim.str();
  bool pipe = async && expansionCount(kSym) >= 2 && !wgLoop;
  for (const ir::Op *o : staged) {
    bool alongLoop = false;
    for (const auto &di : accessOf(*o)->dims)
      alongLoop |= di.start.dependsOn(kSym);
    pipe = pipe && alongLoop;
  }
  auto firstStep = [&](const CloneAssign &a) { return a.at(kSym) == 0; };
  // Step by step when every user of the staged reads is an mma over the loop's dim (emitMma's
  // hook then runs between its K steps): step 1 at the top, step k + 2 after the MMAs of step k,
  // so at most two steps' fragments (and the carried step 0) are live. Otherwise all later
  // steps at the top.
  bool stepwise = pipe;
  for (const ir::Op *o : staged)
    for (const ir::Op *u : o->results[0]->users)
      stepwise = stepwise && u->kind == ir::OpKind::Mma && u->dims.size() == 3 &&
                 u->dims[2] == dim;
  auto laterStep = [&](const CloneAssign &a) {
    return stepwise ? a.at(kSym) == 1 : a.at(kSym) != 0;
  };
  // Prologue: tiles 0 .. ahead - 1 into buffers 0 .. ahead - 1 (clamped to the last tile), one
  // commit group per tile. `wgKeep`: wgmma groups left in flight at the end of an iteration.
  const int wgKeep = wgLoop && async && stages >= 3 && wgmmaOverlaps(op) ? 1 : 0;
  const int ahead = pipe ? stages : std::max(1, stages - 1 - wgKeep);
  for (int t = 0; t < ahead; ++t) {
    subs_[ivSym] = max(min(IndexExpr(t), li->tripCount - 1), IndexExpr(0)); // no trips: tile 0, masked
    stageIndex_ = IndexExpr(t);
    stageTag_ = async ? t : -1;
    for (const ir::Op *o : staged) {
      if (async)
        cpAsyncCopy(promotions_.at(o));
      else
        coopStore(promotions_.at(o), coopLoad(promotions_.at(o)));
    }
    if (async)
      line("llvm.call_intrinsic \"llvm.nvvm.cp.async.commit.group\"() : () -> ()");
  }
  subs_.erase(ivSym);
  std::vector<RegVal> stepZero(staged.size());
  if (pipe) {
    stageIndex_ = IndexExpr(0);
    stageTag_ = 0;
    for (size_t s = 0; s < staged.size(); ++s)
      if (!ldsRead(*staged[s], promotions_.at(staged[s]), stepZero[s], firstStep))
        return false;
  }
  stageIndex_ = IndexExpr(0);
  stageTag_ = -1;

  const std::string trips = lowerIndex(li->tripCount);
  const unsigned n = next_++;
  const std::string loop = "%loop" + std::to_string(n), iv = "%iv" + std::to_string(n);
  std::vector<std::string> inits, types, args;
  auto iterArg = [&](const std::string &init, const std::string &type) {
    inits.push_back(init);
    types.push_back(type);
    args.push_back("%it" + std::to_string(n) + "_" + std::to_string(args.size()));
    return args.back();
  };
  std::vector<std::vector<CloneAssign>> clones;
  for (size_t i = 0; i < carried.size(); ++i) {
    clones.push_back(clonesOver(carried[i].cloneSyms));
    for (const auto &a : clones.back())
      iterArg(operandAt(values_.at(op.operands[i]), a, carried[i].elems),
              vecType(carried[i].dtype, carried[i].elems));
  }
  // The carried K step 0 fragments (by clone key) and the buffer index: a loop-carried index
  // rotated by a compare and select rather than IV % S, which LLVM's loop strength reduction
  // would turn into one induction variable per shared-memory address.
  std::vector<std::map<std::string, std::string>> stepZeroArgs(staged.size());
  for (size_t s = 0; s < staged.size(); ++s)
    for (const auto &[key, ssa] : stepZero[s].clones)
      stepZeroArgs[s][key] = iterArg(ssa, vecType(stepZero[s].dtype, stepZero[s].elems));
  const std::string stage = async ? iterArg(constIndex(0), "index") : "";
  std::string head = "scf.for " + iv + " = " + constIndex(0) + " to " + trips + " step " +
                     constIndex(1);
  if (!args.empty()) {
    std::string ia, ty;
    for (size_t j = 0; j < args.size(); ++j) {
      ia += (j ? ", " : "") + args[j] + " = " + inits[j];
      ty += (j ? ", " : "") + types[j];
    }
    head = loop + ":" + std::to_string(args.size()) + " = " + head + " iter_args(" + ia +
           ") -> (" + ty + ")";
  }
  {
    SyncItem saved = lds_;
    lds_ = {SyncItem::LoopBegin, -1};
    lds_.stages = stages;
    line(head + " {");
    lds_ = saved;
  }
  const std::string outer = indent_;
  auto cache = exprCache_;
  indent_ += "  ";
  symbols_[ivSym] = iv;
  size_t j = 0;
  for (size_t i = 0; i < carried.size(); ++i) {
    RegVal r = carried[i];
    r.clones.clear();
    for (const auto &a : clones[i])
      r.clones[cloneKey(a, r.cloneSyms)] = args[j++];
    values_[body.args[i]] = std::move(r);
  }
  // Buffer indices: this iteration's tile i in buffer `stage`, i + 1 in `stageNext`, the copy
  // of tile i + S - 1 (without fragment pipelining) in `stagePrev` = (i + S - 1) % S.
  const std::string stSym = "$ST_" + dim.str(), stNextSym = "$STnext_" + dim.str(),
                    stPrevSym = "$STprev_" + dim.str();
  std::string stageNext;
  if (async) {
    std::string inc = binop("addi", stage, constIndex(1)), wrap = fresh(), zero = fresh();
    line(wrap + " = arith.cmpi eq, " + inc + ", " + constIndex(stages) + " : index");
    stageNext = fresh();
    line(stageNext + " = arith.select " + wrap + ", " + constIndex(0) + ", " + inc + " : index");
    std::string dec = binop("subi", stage, constIndex(1)), prev = fresh();
    line(zero + " = arith.cmpi eq, " + stage + ", " + constIndex(0) + " : index");
    line(prev + " = arith.select " + zero + ", " + constIndex(stages - 1) + ", " + dec +
         " : index");
    for (const auto &[sym, ssa] : {std::pair<std::string, std::string>{stSym, stage},
                                   {stNextSym, stageNext},
                                   {stPrevSym, prev}}) {
      symbols_[sym] = ssa;
      facts_.setRange(sym, 0, stages - 1);
    }
  }
  // wgmma: the copy of this iteration fetches tile i + wgAhead into buffer (i + wgAhead) % S.
  const int wgAhead = stages - 1 - wgKeep;
  std::string wgBufSym = wgAhead == 1 ? stNextSym : stPrevSym;
  if (wgLoop && async && wgAhead != 1 && wgAhead != stages - 1) {
    wgBufSym = "$STplus" + std::to_string(wgAhead) + "_" + dim.str();
    std::string inc = binop("addi", stage, constIndex(wgAhead)), wrap = fresh(), sel = fresh();
    line(wrap + " = arith.cmpi sge, " + inc + ", " + constIndex(stages) + " : index");
    line(sel + " = arith.select " + wrap + ", " + binop("subi", inc, constIndex(stages)) + ", " +
         inc + " : index");
    symbols_[wgBufSym] = sel;
    facts_.setRange(wgBufSym, 0, stages - 1);
  }
  const int savedKeep = wgmmaKeep_, savedStages = wgmmaStages_;
  const bool savedInFlight = wgmmaInFlight_;
  wgmmaKeep_ = wgKeep;
  wgmmaStages_ = async ? stages : 0;
  wgmmaInFlight_ = false;
  // The tile the copies of this iteration fetch (the last iterations fetch the last tile
  // again: no bounds question).
  std::vector<std::vector<std::string>> prefetched;
  const std::string nextSym = "$IVnext_" + dim.str();
  if (!staged.empty()) {
    std::string one =
        binop("addi", iv, constIndex(pipe ? stages : async ? stages - 1 - wgKeep : 1));
    std::string last = binop("subi", trips, constIndex(1));
    symbols_[nextSym] = binop("minsi", one, last);
    sym::Range r = facts_.rangeOfSymbol(ivSym);
    facts_.setRange(nextSym, r.lo, r.hi);
    staged_.insert(staged.begin(), staged.end());
  }
  if (!staged.empty() && !async) {
    subs_[ivSym] = IndexExpr::symbol(nextSym);
    for (const ir::Op *o : staged)
      prefetched.push_back(coopLoad(promotions_.at(o)));
    subs_.erase(ivSym);
  }
  auto copyAhead = [&](const std::string &bufferSym, int tag) {
    subs_[ivSym] = IndexExpr::symbol(nextSym);
    stageIndex_ = IndexExpr::symbol(bufferSym);
    stageTag_ = tag;
    for (const ir::Op *st : staged)
      cpAsyncCopy(promotions_.at(st));
    line("llvm.call_intrinsic \"llvm.nvvm.cp.async.commit.group\"() : () -> ()");
    subs_.erase(ivSym);
    stageIndex_ = IndexExpr(0);
    stageTag_ = -1;
  };
  // Step 0 of tile i + 1 from the next buffer, then the copy of tile i + S into this
  // iteration's buffer, whose reads are all before the barrier the analysis puts here.
  std::vector<RegVal> nextStepZero(staged.size());
  bool midDone = !pipe, midOk = true;
  auto emitMid = [&]() {
    midDone = true;
    std::string savedLoc = loc_;
    stageIndex_ = IndexExpr::symbol(stNextSym);
    stageTag_ = 1;
    for (size_t s = 0; s < staged.size() && midOk; ++s) {
      loc_ = locOf(staged[s]->loc);
      midOk = ldsRead(*staged[s], promotions_.at(staged[s]), nextStepZero[s], firstStep);
    }
    loc_ = locOf(staged.front()->loc);
    copyAhead(stSym, stages);
    loc_ = savedLoc;
  };
  auto savedHook = afterKStep_;
  std::set<int64_t> stepsRead = {0, 1};
  afterKStep_ = [&](const std::string &sym, int64_t kk, int64_t count) {
    if (sym != kSym)
      return;
    if (stepwise && kk + 2 < count && stepsRead.insert(kk + 2).second) {
      // Step kk + 2 of tile i, behind the MMAs of step kk + 1; added to the reads' values,
      // which emitMma looks up per step.
      std::string savedLoc = loc_;
      stageIndex_ = IndexExpr::symbol(stSym);
      stageTag_ = 0;
      for (const ir::Op *o : staged) {
        if (!midOk)
          break;
        loc_ = locOf(o->loc);
        RegVal v;
        midOk = ldsRead(*o, promotions_.at(o), v, [&](const CloneAssign &a) {
          return a.at(kSym) == kk + 2;
        });
        for (const auto &[key, ssa] : v.clones)
          values_.at(o->results[0]).clones[key] = ssa;
      }
      stageIndex_ = IndexExpr(0);
      stageTag_ = -1;
      loc_ = savedLoc;
    }
    if (!midDone && kk == count - 2)
      emitMid();
  };
  const ir::Op *lastStaged = staged.empty() ? nullptr : staged.back();
  const ir::Op *yield = nullptr;
  bool ok = true;
  for (const auto &o : body.ops) {
    if (o->kind == ir::OpKind::Yield) {
      yield = o.get();
      break;
    }
    // Reads of a multi-buffered tile use this iteration's buffer.
    if (async && staged_.count(o.get())) {
      stageIndex_ = IndexExpr::symbol(stSym);
      stageTag_ = 0;
    }
    if (pipe && staged_.count(o.get())) {
      // Steps 1.. of tile i; step 0 came with the previous iteration (or the prologue).
      const size_t s = std::find(staged.begin(), staged.end(), o.get()) - staged.begin();
      std::string savedLoc = locOf(o->loc);
      std::swap(loc_, savedLoc);
      RegVal v;
      ok = ldsRead(*o, promotions_.at(o.get()), v, laterStep);
      std::swap(loc_, savedLoc);
      for (const auto &[key, arg] : stepZeroArgs[s])
        v.clones[key] = arg;
      values_[o->results[0]] = std::move(v);
    } else {
      ok = emitOp(*o);
    }
    stageIndex_ = IndexExpr(0);
    stageTag_ = -1;
    if (!ok || !midOk)
      break;
    if (async && !pipe && !wgLoop && o.get() == lastStaged)
      copyAhead(stPrevSym, stages - 1); // tile i + S - 1, behind this iteration's reads
  }
  afterKStep_ = savedHook;
  const bool wgOpen = wgmmaInFlight_;
  wgmmaKeep_ = savedKeep;
  wgmmaStages_ = savedStages;
  wgmmaInFlight_ = savedInFlight;
  if (!ok || !midOk)
    return false;
  if (!midDone)
    emitMid();
  if (!midOk)
    return false;
  if (wgLoop && async) // behind the products, after this iteration's barrier
    copyAhead(wgBufSym, wgAhead);
  for (const ir::Op *o : staged)
    staged_.erase(o);
  for (size_t s = 0; s < prefetched.size(); ++s)
    coopStore(promotions_.at(staged[s]), prefetched[s]);
  if (yield ? yield->operands.size() != carried.size() : !carried.empty())
    return unsupported("an iterate body without a matching yield", op.loc);
  bool fits = true;
  for (size_t i = 0; i < carried.size(); ++i) {
    if (values_.at(yield->operands[i]).lazy)
      return unsupported("a streamed row (a dynamic or long reduced row) yielded by a loop",
                         op.loc);
    yielded.push_back(values_.at(yield->operands[i]));
    fits &= carriedFits(carried[i], yielded.back());
  }
  if (fits && !args.empty()) {
    std::vector<std::string> ys;
    for (size_t i = 0; i < carried.size(); ++i) {
      RegVal y;
      if (!convertTo(yielded[i], carried[i], y, op.loc))
        return false;
      for (const auto &a : clones[i])
        ys.push_back(operandAt(y, a, carried[i].elems));
    }
    for (size_t s = 0; s < staged.size(); ++s)
      for (const auto &[key, arg] : stepZeroArgs[s])
        ys.push_back(nextStepZero[s].clones.at(key));
    if (async)
      ys.push_back(stageNext);
    std::string list, ty;
    for (size_t k = 0; k < ys.size(); ++k) {
      list += (k ? ", " : "") + ys[k];
      ty += (k ? ", " : "") + types[k];
    }
    line("scf.yield " + list + " : " + ty);
  }
  indent_ = outer;
  exprCache_ = cache;
  symbols_.erase(ivSym);
  {
    SyncItem saved = lds_;
    lds_ = {SyncItem::LoopEnd, -1};
    line("}");
    lds_ = saved;
  }
  if (async) // nothing may stay in flight into shared memory the kernel no longer owns
    line("llvm.call_intrinsic \"llvm.nvvm.cp.async.wait.all\"() : () -> ()");
  if (wgOpen) // the last tile's products, before anything reads the accumulators
    line("nvvm.wgmma.wait.group.sync.aligned 0");
  j = 0;
  for (size_t i = 0; i < carried.size(); ++i) {
    RegVal r = carried[i];
    r.clones.clear();
    for (const auto &a : clones[i])
      r.clones[cloneKey(a, r.cloneSyms)] = loop + "#" + std::to_string(j++);
    values_[op.results[i]] = std::move(r);
  }
  return !failed_;
}

bool KernelEmitter::emitWrite(const ir::Op &op) {
  Access acc;
  if (!prepareAccess(op, op.operands[1], acc))
    return false;
  const RegVal &value = values_.at(op.operands[0]);
  if (value.dtype != acc.dtype)
    return unsupported("a write of a different element type", op.loc);
  // The value in the write's layout (the distribution's anchor for it; over the register dims
  // of a mapped write).
  RegVal v;
  if (!convertTo(value,
                 layoutFrom(acc.mapped ? acc.reg : acc.dims, acc.elems, acc.dtype),
                 v, op.loc))
    return false;
  std::set<std::string> syms = v.cloneSyms;
  for (const auto &di : acc.dims)
    for (const auto &s : di.start.freeSymbols())
      if (s.rfind("$i_", 0) == 0)
        syms.insert(s);
  BufferBatch batch(*this);
  for (const auto &a : clonesOver(syms))
    storeClone(acc, a, operandAt(v, a, acc.elems));
  return true;
}

bool KernelEmitter::emitElementwise(const ir::Op &op) {
  const ir::Value *res = op.results[0];
  RegVal out;
  out.dtype = res->type.dtype;
  if (mlirType(out.dtype).empty())
    return unsupported(std::string("element type ") + scalarTypeName(out.dtype), op.loc);
  auto isF8 = [](ScalarType t) {
    return t == ScalarType::F8E4M3FN || t == ScalarType::F8E5M2 || t == ScalarType::F8E4M3FNUZ ||
           t == ScalarType::F8E5M2FNUZ;
  };
  if (isF8(out.dtype) || opaque(out.dtype))
    return unsupported(std::string("arithmetic on ") + scalarTypeName(out.dtype) + " values on " +
                           target_.name,
                       op.loc);
  // The result takes the layout of the operand with the most dims (then the most elements per
  // lane); the other laid-out operands are converted to it, deferred ones computed in it.
  std::vector<const RegVal *> ins;
  const RegVal *like = nullptr;
  bool deferred = false;
  for (const ir::Value *o : op.operands) {
    const RegVal &v = values_.at(o);
    if (mlirType(v.dtype).empty() || isF8(v.dtype) || opaque(v.dtype))
      return unsupported(std::string("element type ") + scalarTypeName(v.dtype), op.loc);
    ins.push_back(&v);
    deferred |= v.deferred != nullptr;
    if (v.laidOut() && (!like || v.layout.size() > like->layout.size() ||
                        (v.layout.size() == like->layout.size() && v.elems > like->elems)))
      like = &v;
  }
  if (!like && deferred) {
    out.deferred = &op;
    values_[res] = std::move(out);
    return true;
  }
  if (like) {
    out.layout = like->layout;
    out.elems = like->elems;
    out.vecDim = like->vecDim;
    out.cloneSyms = like->cloneSyms;
  }
  std::vector<RegVal> converted(ins.size());
  for (size_t i = 0; i < ins.size(); ++i) {
    if (!ins[i]->laidOut())
      out.cloneSyms.insert(ins[i]->cloneSyms.begin(), ins[i]->cloneSyms.end());
    else if (ins[i] != like) {
      if (!convertTo(*ins[i], out, converted[i], op.loc))
        return false;
      ins[i] = &converted[i];
    }
  }
  const ScalarType inT = ins.empty() ? out.dtype : ins.back()->dtype;
  for (const auto &a : clonesOver(out.cloneSyms)) {
    std::vector<std::string> x;
    for (const RegVal *v : ins)
      x.push_back(operandIn(*v, out, a));
    out.clones[cloneKey(a, out.cloneSyms)] = elementwiseClone(op, x, inT, out.elems);
    if (failed_)
      return false;
  }
  values_[res] = std::move(out);
  return true;
}

std::string floatLiteral(double v, ScalarType t);

// ---- f64 math without libm ----------------------------------------------------------------
//
// Neither back end lowers llvm.exp2/log2/sin/cos on f64 (AMDGPU: "no libcall available";
// NVPTX: none), and the NVIDIA approximations are f32. So f64 exp, exp2, log, log2, sin, cos and
// tanh are expanded here into arith ops on the element type (language.md section 12, "f64 math"):
// the range reductions and kernel polynomials of fdlibm (k_sin.c, k_cos.c, e_log.c), a Taylor
// polynomial for exp, and exponent-field arithmetic for the scaling by 2^n. Accuracy: a few ulp;
// sin/cos reduce by a 212-bit pi/2 in fused multiply-adds, for |x| < 2^52 (NaN beyond).
class F64Math {
public:
  F64Math(std::function<std::string()> fresh, std::function<void(const std::string &)> line,
          int64_t elems)
      : fresh_(std::move(fresh)), line_(std::move(line)), e_(elems) {
    auto vt = [&](const char *s) {
      return e_ == 1 ? std::string(s) : "vector<" + std::to_string(e_) + "x" + s + ">";
    };
    f_ = vt("f64");
    i_ = vt("i64");
    b_ = vt("i1");
  }

  std::string emit(ir::MathKind k, const std::string &x) {
    using M = ir::MathKind;
    switch (k) {
    case M::Exp: return exp(x);
    case M::Exp2: return exp2(x);
    case M::Log: return log(x, false);
    case M::Log2: return log(x, true);
    case M::Sin: return sinCos(x, false);
    case M::Cos: return sinCos(x, true);
    case M::Tanh: return tanh(x);
    default: return "";
    }
  }

private:
  std::string op(const std::string &name, const std::string &a, const std::string &b,
                 const std::string &ty) {
    std::string r = fresh_();
    line_(r + " = " + name + " " + a + ", " + b + " : " + ty);
    return r;
  }
  std::string splat(const std::string &lit, const std::string &ty) {
    std::string r = fresh_();
    line_(r + " = arith.constant " + (e_ == 1 ? lit : "dense<" + lit + ">") + " : " + ty);
    return r;
  }
  std::string c(double v) { return splat(floatLiteral(v, ScalarType::F64), f_); }
  std::string ci(int64_t v) { return splat(std::to_string(v), i_); }
  std::string add(const std::string &a, const std::string &b) { return op("arith.addf", a, b, f_); }
  std::string sub(const std::string &a, const std::string &b) { return op("arith.subf", a, b, f_); }
  std::string mul(const std::string &a, const std::string &b) { return op("arith.mulf", a, b, f_); }
  std::string div(const std::string &a, const std::string &b) { return op("arith.divf", a, b, f_); }
  std::string neg(const std::string &a) {
    std::string r = fresh_();
    line_(r + " = arith.negf " + a + " : " + f_);
    return r;
  }
  std::string cmpf(const char *pred, const std::string &a, const std::string &b) {
    std::string r = fresh_();
    line_(r + " = arith.cmpf " + pred + ", " + a + ", " + b + " : " + f_);
    return r;
  }
  std::string cmpi(const char *pred, const std::string &a, const std::string &b) {
    std::string r = fresh_();
    line_(r + " = arith.cmpi " + pred + ", " + a + ", " + b + " : " + i_);
    return r;
  }
  std::string select(const std::string &cond, const std::string &a, const std::string &b,
                     const std::string &ty) {
    std::string r = fresh_();
    line_(r + " = arith.select " + cond + ", " + a + ", " + b + " : " + b_ + ", " + ty);
    return r;
  }
  std::string cast(const char *name, const std::string &a, const std::string &from,
                   const std::string &to) {
    std::string r = fresh_();
    line_(r + " = " + name + " " + a + " : " + from + " to " + to);
    return r;
  }
  std::string floor(const std::string &a) {
    std::string r = fresh_();
    line_(r + " = llvm.call_intrinsic \"llvm.floor." + std::string(e_ == 1 ? "" : "v" +
          std::to_string(e_)) + "f64\"(" + a + ") : (" + f_ + ") -> " + f_);
    return r;
  }
  // The nearest integer to a (ties up), as a float, and as an i64 (0 for NaN and for
  // magnitudes beyond 2^62, where fptosi would be poison).
  std::pair<std::string, std::string> nearest(const std::string &a) {
    std::string n = floor(add(a, c(0.5)));
    std::string absN = fresh_();
    line_(absN + " = llvm.call_intrinsic \"llvm.fabs." + std::string(e_ == 1 ? "" : "v" +
          std::to_string(e_)) + "f64\"(" + n + ") : (" + f_ + ") -> " + f_);
    std::string small = cmpf("olt", absN, c(0x1p62));
    std::string safe = select(small, n, c(0.0), f_);
    return {safe, cast("arith.fptosi", safe, f_, i_)};
  }
  // 2^k for an integer k in [-1022, 1023], from its exponent field.
  std::string pow2(const std::string &k) {
    std::string biased = op("arith.addi", k, ci(1023), i_);
    std::string bits = op("arith.shli", biased, ci(52), i_);
    return cast("arith.bitcast", bits, i_, f_);
  }
  // p * 2^k for k in [-2044, 2046]: two steps, so that each factor is a normal number and the
  // result is rounded once.
  std::string scale(const std::string &p, const std::string &k) {
    std::string k1 = op("arith.shrsi", k, ci(1), i_);
    std::string k2 = op("arith.subi", k, k1, i_);
    return mul(mul(p, pow2(k1)), pow2(k2));
  }
  // a0 + r*(a1 + r*(a2 + ...)).
  std::string horner(const std::string &r, const std::vector<double> &coef) {
    std::string acc = c(coef.back());
    for (size_t i = coef.size() - 1; i-- > 0;)
      acc = add(mul(acc, r), c(coef[i]));
    return acc;
  }
  // e^r - 1 for |r| <= 0.35 (Taylor to r^13: the next term is below 2^-60 of the result).
  std::string expm1Poly(const std::string &r) {
    std::vector<double> coef; // 1/1!, 1/2!, ..., 1/13!
    double f = 1;
    for (int k = 1; k <= 13; ++k) {
      f /= k;
      coef.push_back(f);
    }
    return mul(r, horner(r, coef));
  }
  // x = n ln2 + r, |r| <= ln2 / 2 (Cody and Waite: n * LN2_HI is exact).
  std::pair<std::string, std::string> reduceLn2(const std::string &x) {
    auto [nf, n] = nearest(mul(x, c(1.4426950408889634)));
    std::string r = sub(sub(x, mul(nf, c(6.93147180369123816490e-01))),
                        mul(nf, c(1.90821492927058770002e-10)));
    return {r, n};
  }
  std::string clamp(const std::string &x, double lo, double hi) {
    // maximumf/minimumf propagate NaN.
    return op("arith.minimumf", op("arith.maximumf", x, c(lo), f_), c(hi), f_);
  }

  std::string exp(const std::string &x) {
    // Beyond [-746, 710] the result is 0 or infinity either way.
    std::string xc = clamp(x, -746.0, 710.0);
    auto [r, n] = reduceLn2(xc);
    return scale(add(expm1Poly(r), c(1.0)), n);
  }
  std::string exp2(const std::string &x) {
    std::string xc = clamp(x, -1080.0, 1030.0);
    auto [nf, n] = nearest(xc);
    std::string r = mul(sub(xc, nf), c(0.69314718055994531)); // x - n is exact
    return scale(add(expm1Poly(r), c(1.0)), n);
  }
  std::string tanh(const std::string &x) {
    // tanh(x) = m / (m + 2), m = e^(2x) - 1 = 2^n (1 + q) - 1 = 2^n q + (2^n - 1): accurate
    // near 0 as well. |x| >= 20 rounds to +-1, so x is clamped there (n stays within 58).
    std::string xc = clamp(x, -20.0, 20.0);
    auto [r, n] = reduceLn2(add(xc, xc));
    std::string q = expm1Poly(r), s = pow2(n);
    std::string m = add(mul(s, q), sub(s, c(1.0)));
    return div(m, add(m, c(2.0)));
  }
  std::string log(const std::string &x, bool base2) {
    // Subnormals are scaled into the normal range first.
    std::string tiny = cmpf("olt", x, c(0x1p-1022));
    std::string xs = select(tiny, mul(x, c(0x1p54)), x, f_);
    std::string bits = cast("arith.bitcast", xs, f_, i_);
    std::string ebits = op("arith.andi", op("arith.shrui", bits, ci(52), i_), ci(0x7FF), i_);
    std::string k0 = op("arith.subi", ebits, ci(1023), i_);
    k0 = select(tiny, op("arith.subi", k0, ci(54), i_), k0, i_);
    std::string mbits = op("arith.ori", op("arith.andi", bits, ci(0x000FFFFFFFFFFFFFLL), i_),
                           ci(0x3FF0000000000000LL), i_);
    std::string m0 = cast("arith.bitcast", mbits, i_, f_); // [1, 2)
    // m in [sqrt(2)/2, sqrt(2)).
    std::string big = cmpf("ogt", m0, c(1.4142135623730951));
    std::string m = select(big, mul(m0, c(0.5)), m0, f_);
    std::string k = select(big, op("arith.addi", k0, ci(1), i_), k0, i_);
    std::string kf = cast("arith.sitofp", k, i_, f_);
    // fdlibm e_log.c: log(1 + f) = f - hfsq + s (hfsq + R(s^2)), s = f / (2 + f).
    std::string f = sub(m, c(1.0));
    std::string s = div(f, add(c(2.0), f));
    std::string z = mul(s, s), w = mul(z, z);
    std::string t1 = mul(w, horner(w, {3.999999999940941908e-01, 2.222219843214978396e-01,
                                       1.531383769920937332e-01}));
    std::string t2 = mul(z, horner(w, {6.666666666666735130e-01, 2.857142874366239149e-01,
                                       1.818357216161805012e-01, 1.479819860511658591e-01}));
    std::string R = add(t2, t1);
    std::string hfsq = mul(mul(c(0.5), f), f);
    std::string logm = sub(f, sub(hfsq, mul(s, add(hfsq, R)))); // log(m)
    std::string res;
    if (base2) {
      res = add(kf, mul(logm, c(1.4426950408889634)));
    } else {
      res = add(mul(kf, c(6.93147180369123816490e-01)),
                add(mul(kf, c(1.90821492927058770002e-10)), logm));
    }
    // x = +inf: inf; x = 0: -inf; x < 0 or NaN: NaN.
    std::string inf = c(INFINITY);
    res = select(cmpf("oeq", x, inf), inf, res, f_);
    res = select(cmpf("oeq", x, c(0.0)), c(-INFINITY), res, f_);
    return select(cmpf("oge", x, c(0.0)), res, c(NAN), f_);
  }
  std::string fma(const std::string &a, const std::string &b, const std::string &c3) {
    std::string r = fresh_();
    line_(r + " = llvm.call_intrinsic \"llvm.fma." + std::string(e_ == 1 ? "" : "v" +
          std::to_string(e_)) + "f64\"(" + a + ", " + b + ", " + c3 + ") : (" + f_ + ", " + f_ +
          ", " + f_ + ") -> " + f_);
    return r;
  }
  // r - n pi/2, with pi/2 as four doubles (212 bits) and each product exact inside an fma.
  std::string subPio2(const std::string &r, const std::string &nf) {
    std::string mn = neg(nf), out = r;
    for (double p : {1.5707963267948966, 6.123233995736766e-17, -1.4973849048591698e-33,
                     5.562271104316826e-50})
      out = fma(mn, c(p), out);
    return out;
  }
  // n mod 4 of an integer-valued float n (exact), as an i64.
  std::string mod4(const std::string &nf) {
    std::string q = sub(nf, mul(c(4.0), floor(mul(nf, c(0.25)))));
    return cast("arith.fptosi", q, f_, i_);
  }
  std::string sinCos(const std::string &x, bool cosine) {
    // x = n pi/2 + r, |r| <= pi/4 (a little more when x * 2/pi rounds across a half: a second
    // step corrects that). n is an integer below 2^53, so n * P1 is exact inside the fma and each
    // step rounds at most at the ulp of r. Beyond |x| = 2^52 n no longer fits a double (a
    // Payne-Hanek reduction would be needed): the result is NaN there (documented, language.md
    // section 12), as it is for infinities and NaN.
    std::string absX = fresh_();
    line_(absX + " = llvm.call_intrinsic \"llvm.fabs." + std::string(e_ == 1 ? "" : "v" +
          std::to_string(e_)) + "f64\"(" + x + ") : (" + f_ + ") -> " + f_);
    std::string inRange = cmpf("olt", absX, c(0x1p52));
    std::string xs = select(inRange, x, c(0.0), f_); // no NaN or infinity below
    std::string twoOverPi = c(6.36619772367581382433e-01);
    std::string n1 = floor(add(mul(xs, twoOverPi), c(0.5)));
    std::string r1 = subPio2(xs, n1);
    std::string n2 = floor(add(mul(r1, twoOverPi), c(0.5)));
    std::string r = subPio2(r1, n2);
    std::string n = op("arith.addi", mod4(n1), mod4(n2), i_);
    std::string z = mul(r, r);
    // k_sin.c: sin(r) = r + r^3 (S1 + z P(z)).
    std::string ps = horner(z, {8.33333333332248946124e-03, -1.98412698298579493134e-04,
                                2.75573137070700676789e-06, -2.50507602534068634195e-08,
                                1.58969099521155010221e-10});
    std::string sinR = add(r, mul(mul(z, r), add(c(-1.66666666666666324348e-01), mul(z, ps))));
    // k_cos.c: cos(r) = w + (((1 - w) - z/2) + z^2 C(z)), w = 1 - z/2.
    std::string pc = horner(z, {4.16666666666666019037e-02, -1.38888888888741095749e-03,
                                2.48015872894767294178e-05, -2.75573143513906633035e-07,
                                2.08757232129817482790e-09, -1.13596475577881948265e-11});
    std::string hz = mul(c(0.5), z), w = sub(c(1.0), hz);
    std::string cosR = add(w, add(sub(sub(c(1.0), w), hz), mul(mul(z, z), pc)));
    // Quadrant n mod 4: sin -> sin r, cos r, -sin r, -cos r; cos -> cos r, -sin r, -cos r, sin r.
    std::string q = op("arith.andi", cosine ? op("arith.addi", n, ci(1), i_) : n, ci(3), i_);
    std::string odd = cmpi("ne", op("arith.andi", q, ci(1), i_), ci(0));
    std::string a = select(odd, cosR, sinR, f_);
    std::string negate = cmpi("ne", op("arith.andi", q, ci(2), i_), ci(0));
    std::string res = select(negate, neg(a), a, f_);
    return select(inRange, res, c(NAN), f_);
  }

  std::function<std::string()> fresh_;
  std::function<void(const std::string &)> line_;
  int64_t e_;
  std::string f_, i_, b_;
};

std::string KernelEmitter::elementwiseClone(const ir::Op &op, const std::vector<std::string> &x,
                                            ScalarType inT, int64_t e) {
  const ScalarType outT = op.results[0]->type.dtype;
  auto unsupportedIn = [&](const std::string &what, SourceRange loc) {
    unsupported(what, loc);
    return std::string("%error");
  };
  const std::string rty = vecType(outT, e), ity = vecType(inT, e);
  const bool fl = isFloat(inT), sg = isSigned(inT);
  std::string r = fresh();
  auto un = [&](const std::string &o) { line(r + " = " + o + " " + x[0] + " : " + ity); };
  auto bin = [&](const std::string &o) {
    line(r + " = " + o + " " + x[0] + ", " + x[1] + " : " + ity);
  };
  auto splatConst = [&](const std::string &lit, const std::string &ty) {
    std::string c = fresh();
    line(c + " = arith.constant " + (e == 1 ? lit : "dense<" + lit + ">") + " : " + ty);
    return c;
  };
  // LLVM intrinsics through llvm.call_intrinsic: the GPU-to-ROCDL/NVVM conversions mark the
  // llvm.intr.exp2/log2/sin/... ops illegal (they turn them into ocml/libdevice calls, which
  // we do not link), while the AMDGPU/NVPTX back ends lower these intrinsics themselves.
  const std::string mangled = (e == 1 ? "" : "v" + std::to_string(e)) + mlirType(inT);
  auto callIntr = [&](const std::string &res, const std::string &name, const std::string &arg) {
    static const std::map<std::string, std::string> nvApprox = {{"exp2", "ex2.approx.f"},
                                                                {"log2", "lg2.approx.f"},
                                                                {"sin", "sin.approx.f"},
                                                                {"cos", "cos.approx.f"}};
    auto nv = nvApprox.find(name);
    if (target_.vendor != Vendor::NVIDIA || nv == nvApprox.end()) {
      line(res + " = llvm.call_intrinsic \"llvm." + name + "." + mangled + "\"(" + arg + ") : (" +
           ity + ") -> " + ity);
      return;
    }
    // NVPTX has no lowering for llvm.exp2/log2/sin/cos: the PTX approximations, in f32,
    // one element at a time.
    const std::string ety = mlirType(inT);
    const bool f32 = inT == ScalarType::F32;
    std::string vec;
    if (e > 1) {
      vec = fresh();
      line(vec + " = arith.constant dense<0.0> : " + ity);
    }
    for (int64_t k = 0; k < e; ++k) {
      const bool last = k + 1 == e;
      std::string x = arg;
      if (e > 1) {
        x = fresh();
        line(x + " = vector.extract " + arg + "[" + std::to_string(k) + "] : " + ety + " from " +
             ity);
      }
      if (!f32) {
        std::string w = fresh();
        line(w + " = arith.extf " + x + " : " + ety + " to f32");
        x = w;
      }
      std::string y = e == 1 && f32 ? res : fresh();
      line(y + " = llvm.call_intrinsic \"llvm.nvvm." + nv->second + "\"(" + x +
           ") : (f32) -> f32");
      if (!f32) {
        std::string n = e == 1 ? res : fresh();
        line(n + " = arith.truncf " + y + " : f32 to " + ety);
        y = n;
      }
      if (e > 1) {
        std::string n = last ? res : fresh();
        line(n + " = vector.insert " + y + ", " + vec + " [" + std::to_string(k) + "] : " + ety +
             " into " + ity);
        vec = n;
      }
    }
  };
  auto intr = [&](const std::string &name, const std::vector<std::string> &args) {
    callIntr(r, name, args[0]);
  };
  switch (op.kind) {
  case ir::OpKind::Unary:
    if (op.unary == ir::UnaryKind::Neg) {
      if (fl)
        un("arith.negf");
      else
        line(r + " = arith.subi " + splatConst("0", ity) + ", " + x[0] + " : " + ity);
    } else {
      line(r + " = arith.xori " + x[0] + ", " + splatConst("-1", ity) + " : " + ity);
    }
    break;
  case ir::OpKind::Binary: {
    using B = ir::BinaryKind;
    // One row per binary kind: the float op, the signed and unsigned integer ops, or the
    // float and signed/unsigned integer predicates of a comparison (null: no such form).
    struct BinaryForm {
      B kind;
      const char *f, *si, *ui;     // arith ops
      const char *cf, *csi, *cui;  // cmpf / cmpi predicates
    };
    static const BinaryForm forms[] = {
        {B::Add, "arith.addf", "arith.addi", "arith.addi", nullptr, nullptr, nullptr},
        {B::Sub, "arith.subf", "arith.subi", "arith.subi", nullptr, nullptr, nullptr},
        {B::Mul, "arith.mulf", "arith.muli", "arith.muli", nullptr, nullptr, nullptr},
        {B::Div, "arith.divf", "arith.divsi", "arith.divui", nullptr, nullptr, nullptr},
        {B::Mod, "arith.remf", "arith.remsi", "arith.remui", nullptr, nullptr, nullptr},
        {B::FloorDiv, nullptr, "arith.floordivsi", "arith.divui", nullptr, nullptr, nullptr},
        {B::And, nullptr, "arith.andi", "arith.andi", nullptr, nullptr, nullptr},
        {B::Or, nullptr, "arith.ori", "arith.ori", nullptr, nullptr, nullptr},
        {B::Xor, nullptr, "arith.xori", "arith.xori", nullptr, nullptr, nullptr},
        {B::Eq, nullptr, nullptr, nullptr, "oeq", "eq", "eq"},
        {B::Ne, nullptr, nullptr, nullptr, "une", "ne", "ne"},
        {B::Lt, nullptr, nullptr, nullptr, "olt", "slt", "ult"},
        {B::Le, nullptr, nullptr, nullptr, "ole", "sle", "ule"},
        {B::Gt, nullptr, nullptr, nullptr, "ogt", "sgt", "ugt"},
        {B::Ge, nullptr, nullptr, nullptr, "oge", "sge", "uge"},
    };
    const char *pf = nullptr, *pi = nullptr, *cf = nullptr, *ci = nullptr;
    for (const BinaryForm &form : forms)
      if (form.kind == op.binary) {
        pf = form.f;
        pi = sg ? form.si : form.ui;
        cf = form.cf;
        ci = sg ? form.csi : form.cui;
      }
    if (cf) {
      line(r + " = arith." + (fl ? std::string("cmpf ") + cf : std::string("cmpi ") + ci) + ", " +
           x[0] + ", " + x[1] + " : " + ity);
    } else if (op.binary == B::FloorDiv && fl) {
      std::string q = fresh();
      line(q + " = arith.divf " + x[0] + ", " + x[1] + " : " + ity);
      callIntr(r, "floor", q);
    } else if (op.binary == B::Mod && !fl && sg) {
      // Python modulo (the sign of the divisor), as the language's `%`.
      std::string q = fresh(), m = fresh();
      line(q + " = arith.floordivsi " + x[0] + ", " + x[1] + " : " + ity);
      line(m + " = arith.muli " + q + ", " + x[1] + " : " + ity);
      line(r + " = arith.subi " + x[0] + ", " + m + " : " + ity);
    } else if (fl && (op.binary == B::Add || op.binary == B::Sub || op.binary == B::Mul)) {
      // Contractible (a * b + c may become one fused multiply-add), as nvcc and hipcc compile
      // by default (docs/language.md section 13).
      line(r + " = " + pf + " " + x[0] + ", " + x[1] + " fastmath<contract> : " + ity);
    } else if (fl ? pf != nullptr : pi != nullptr) {
      bin(fl ? pf : pi);
    } else {
      return unsupportedIn(std::string("binary ") + ir::binaryKindName(op.binary) + " on " +
                             scalarTypeName(inT),
                         op.loc);
    }
    break;
  }
  case ir::OpKind::Math: {
    using M = ir::MathKind;
    if (!fl && op.math != M::Abs && op.math != M::Maximum && op.math != M::Minimum)
      return unsupportedIn(std::string("math ") + ir::mathKindName(op.math) + " on integers",
                         op.loc);
    if (inT == ScalarType::F64) {
      F64Math m([&] { return fresh(); }, [&](const std::string &l) { line(l); }, e);
      std::string v = m.emit(op.math, x[0]);
      if (!v.empty())
        return v;
    }
    auto one = [&]() { return splatConst("1.0", ity); };
    auto scaled = [&](const char *name, const char *scale, bool before) {
      std::string c = splatConst(scale, ity), t = fresh();
      if (before) { // name(x * scale)
        line(t + " = arith.mulf " + x[0] + ", " + c + " : " + ity);
        callIntr(r, name, t);
      } else { // name(x) * scale
        callIntr(t, name, x[0]);
        line(r + " = arith.mulf " + t + ", " + c + " : " + ity);
      }
    };
    switch (op.math) {
    case M::Exp: scaled("exp2", "1.4426950408889634", true); break;
    case M::Exp2: intr("exp2", {x[0]}); break;
    case M::Log: scaled("log2", "0.69314718055994531", false); break;
    case M::Log2: intr("log2", {x[0]}); break;
    case M::Sqrt: intr("sqrt", {x[0]}); break;
    case M::Rsqrt: {
      std::string s = fresh();
      callIntr(s, "sqrt", x[0]);
      line(r + " = arith.divf " + one() + ", " + s + " : " + ity);
      break;
    }
    case M::Reciprocal: line(r + " = arith.divf " + one() + ", " + x[0] + " : " + ity); break;
    case M::Abs:
      if (fl)
        intr("fabs", {x[0]});
      else {
        std::string n = fresh(), c = fresh(), z = splatConst("0", ity);
        line(n + " = arith.subi " + z + ", " + x[0] + " : " + ity);
        line(c + " = arith.cmpi slt, " + x[0] + ", " + z + " : " + ity);
        line(r + " = arith.select " + c + ", " + n + ", " + x[0] + " : " +
             vecType(ScalarType::I1, e) + ", " + ity);
      }
      break;
    case M::Tanh: {
      // tanh(x) = 1 - 2 / (exp(2x) + 1): exact at both tails, no libm call.
      std::string c = splatConst("2.8853900817779268", ity), t = fresh(), ex = fresh(),
                  den = fresh(), q = fresh(), two = splatConst("2.0", ity), o = one();
      line(t + " = arith.mulf " + x[0] + ", " + c + " : " + ity);
      callIntr(ex, "exp2", t);
      line(den + " = arith.addf " + ex + ", " + o + " : " + ity);
      line(q + " = arith.divf " + two + ", " + den + " : " + ity);
      line(r + " = arith.subf " + o + ", " + q + " : " + ity);
      break;
    }
    case M::Sin: intr("sin", {x[0]}); break;
    case M::Cos: intr("cos", {x[0]}); break;
    case M::Maximum: bin(fl ? "arith.maximumf" : sg ? "arith.maxsi" : "arith.maxui"); break;
    case M::Minimum: bin(fl ? "arith.minimumf" : sg ? "arith.minsi" : "arith.minui"); break;
    }
    break;
  }
  case ir::OpKind::Select:
    line(r + " = arith.select " + x[0] + ", " + x[1] + ", " + x[2] + " : " +
         vecType(ScalarType::I1, e) + ", " + rty);
    break;
  case ir::OpKind::Cast: {
    const ScalarType to = outT;
    const unsigned wi = bitWidth(inT), wo = bitWidth(to);
    std::string opName;
    if (mlirType(inT) == mlirType(to))
      return x[0];
    if (fl && isFloat(to))
      opName = wo > wi ? "arith.extf" : "arith.truncf";
    else if (fl)
      opName = isSigned(to) ? "arith.fptosi" : "arith.fptoui";
    else if (isFloat(to))
      opName = sg ? "arith.sitofp" : "arith.uitofp";
    else if (wo > wi)
      opName = sg && inT != ScalarType::I1 ? "arith.extsi" : "arith.extui";
    else
      opName = "arith.trunci";
    line(r + " = " + opName + " " + x[0] + " : " + ity + " to " + rty);
    break;
  }
  default: unsupported(opKindName(op.kind), op.loc); return "%error";
  }
  return r;
}

// ---- thread layouts ----------------------------------------------------------------------

ThreadLayout KernelEmitter::layoutOf(const RegVal &v) const {
  ThreadLayout l;
  for (const auto &[dim, di] : v.layout)
    l.index[dim] = di.start;
  l.elems = v.elems;
  l.cloneSyms = v.cloneSyms;
  return l;
}

RegVal KernelEmitter::layoutFrom(const std::vector<DimIndex> &dims, int64_t elems,
                                 ScalarType t) const {
  RegVal r;
  r.dtype = t;
  r.elems = elems;
  int along = 0;
  for (const auto &di : dims) {
    r.layout[di.dim.str()] = di;
    for (const auto &s : di.start.freeSymbols())
      if (s.rfind("$i_", 0) == 0)
        r.cloneSyms.insert(s);
    if (di.start.dependsOn("$g") && elems > 1) {
      ++along;
      r.vecDim = di.dim.str();
    }
  }
  if (along != 1)
    r.vecDim.clear();
  return r;
}

std::string KernelEmitter::extractElem(const std::string &v, ScalarType t, int64_t e, int64_t i) {
  if (e == 1)
    return v;
  std::string r = fresh();
  line(r + " = vector.extract " + v + "[" + std::to_string(i) + "] : " + mlirType(t) + " from " +
       vecType(t, e));
  return r;
}

std::string KernelEmitter::buildVector(const std::vector<std::string> &elems, ScalarType t) {
  const int64_t e = static_cast<int64_t>(elems.size());
  if (e == 1)
    return elems[0];
  std::string vec = fresh();
  line(vec + " = llvm.mlir.undef : " + vecType(t, e));
  for (int64_t i = 0; i < e; ++i) {
    std::string r = fresh();
    line(r + " = vector.insert " + elems[i] + ", " + vec + " [" + std::to_string(i) + "] : " +
         mlirType(t) + " into " + vecType(t, e));
    vec = r;
  }
  return vec;
}

bool KernelEmitter::convertTo(const RegVal &v, const RegVal &like, RegVal &out,
                              SourceRange loc, bool *asIs) {
  if (asIs)
    *asIs = false;
  out = RegVal();
  out.dtype = v.dtype;
  out.layout = like.layout;
  out.elems = like.elems;
  out.vecDim = like.vecDim;
  out.cloneSyms = like.cloneSyms;
  if (v.deferred) {
    for (const auto &a : clonesOver(out.cloneSyms))
      out.clones[cloneKey(a, out.cloneSyms)] = computeDeferred(*v.deferred, like, a);
    return !failed_;
  }
  if (!v.laidOut()) {
    out = v;
    if (asIs)
      *asIs = true;
    return true;
  }
  const RelayoutPlan plan = planRelayout(layoutOf(v), layoutOf(out), machine_, facts_);
  const ScalarType t = v.dtype;
  auto srcElem = [&](const RelayoutPlan::Pick &p) {
    const std::string &ssa = v.clones.at(cloneKey(plan.srcClones[p.srcClone], v.cloneSyms));
    return extractElem(ssa, t, v.elems, p.elem);
  };
  switch (plan.kind) {
  case RelayoutPlan::Same:
    out = v;
    if (asIs)
      *asIs = true;
    return true;
  case RelayoutPlan::Impossible:
    return unsupported("moving a value between thread layouts: " + plan.why, loc);
  case RelayoutPlan::InLane:
    for (size_t c = 0; c < plan.dstClones.size(); ++c) {
      const auto &picks = plan.inLane[c];
      bool whole = v.elems == out.elems;
      for (int64_t e = 0; e < out.elems; ++e)
        whole &= picks[e].srcClone == picks[0].srcClone && picks[e].elem == e;
      std::string r;
      if (whole) {
        r = v.clones.at(cloneKey(plan.srcClones[picks[0].srcClone], v.cloneSyms));
      } else {
        std::vector<std::string> elems;
        for (const auto &p : picks)
          elems.push_back(srcElem(p));
        r = buildVector(elems, t);
      }
      out.clones[cloneKey(plan.dstClones[c], out.cloneSyms)] = r;
    }
    return true;
  case RelayoutPlan::CrossLane:
    break;
  }
  // Shuffles within the wave: element e of a lane comes from lane `p.lane(l)`, source element
  // `p.candidates[p.choice(l)]`. gpu.shuffle moves 32- or 64-bit values: elements narrower
  // than 32 bits move as the 32-bit words that hold them (two f16, whose half is then picked),
  // each word once per source lane; other narrow values are widened around the shuffle.
  // Lanes are numbered over the group (a warpgroup for wgmma); the plan keeps every source in
  // the lane's own hardware wave, whose lane id a shuffle takes.
  const int64_t w = d_.groupSize;
  const IndexExpr lane = mod(IndexExpr::symbol("$T0"), w);
  auto bitLinear = [&](const BitLinear &f, bool shuffleLane = false) {
    IndexExpr e = f.base;
    for (size_t j = 0; j < f.weight.size(); ++j)
      if (f.weight[j] != 0)
        e = e + f.weight[j] * mod(floorDiv(lane, int64_t{1} << j), 2);
    if (shuffleLane && d_.groupSize != d_.waveSize)
      e = mod(e, static_cast<int64_t>(d_.waveSize));
    return lowerIndex(facts_.simplify(e));
  };
  const std::string ety = mlirType(t);
  const unsigned bits = t == ScalarType::I1 ? 1 : bitWidth(t);
  const int64_t perWord = bits < 32 && bits > 1 && v.elems % (32 / bits) == 0 ? 32 / bits : 1;
  std::map<size_t, std::string> words;                           // source clone -> i32 words
  std::map<std::tuple<std::string, size_t, int64_t>, std::string> moved; // (lane, clone, slot)
  const std::string wty = vecType(ScalarType::I32, v.elems / perWord); // one word: a plain i32
  auto fetch = [&](const std::string &from, const RelayoutPlan::Pick &cand) {
    const int64_t slot = cand.elem / perWord;
    std::string &got = moved[{from, cand.srcClone, slot}];
    if (got.empty()) {
      if (perWord > 1) {
        std::string &ws = words[cand.srcClone];
        if (ws.empty()) {
          ws = fresh();
          line(ws + " = llvm.bitcast " +
               v.clones.at(cloneKey(plan.srcClones[cand.srcClone], v.cloneSyms)) + " : " +
               vecType(t, v.elems) + " to " + wty);
        }
        got = extractElem(ws, ScalarType::I32, v.elems / perWord, slot);
        if (!from.empty())
          got = shuffle("idx", got, ScalarType::I32, from);
      } else {
        got = srcElem(cand);
        if (!from.empty())
          got = shuffle("idx", got, t, from);
      }
    }
    if (perWord == 1)
      return got;
    std::string pair = fresh();
    line(pair + " = llvm.bitcast " + got + " : i32 to " + vecType(t, perWord));
    return extractElem(pair, t, perWord, cand.elem % perWord);
  };
  for (size_t c = 0; c < plan.dstClones.size(); ++c) {
    std::vector<std::string> elems;
    for (int64_t e = 0; e < out.elems; ++e) {
      const RelayoutPlan::LanePick &p = plan.crossLane[c][e];
      std::string from;
      if (!p.lane.isIdentity()) {
        from = fresh();
        line(from + " = arith.index_cast " + bitLinear(p.lane, true) + " : index to i32");
      }
      std::vector<std::string> got;
      for (const auto &cand : p.candidates)
        got.push_back(fetch(from, cand));
      std::string r = got[0];
      if (got.size() > 1) {
        const std::string which = bitLinear(p.choice);
        for (size_t k = 1; k < got.size(); ++k) {
          std::string is = fresh(), sel = fresh();
          line(is + " = arith.cmpi eq, " + which + ", " + constIndex(static_cast<int64_t>(k)) +
               " : index");
          line(sel + " = arith.select " + is + ", " + got[k] + ", " + r + " : " + ety);
          r = sel;
        }
      }
      elems.push_back(r);
    }
    out.clones[cloneKey(plan.dstClones[c], out.cloneSyms)] = buildVector(elems, t);
  }
  return true;
}

std::string KernelEmitter::operandIn(const RegVal &v, const RegVal &like, const CloneAssign &a) {
  if (v.deferred)
    return computeDeferred(*v.deferred, like, a);
  return operandAt(v, a, like.elems);
}

std::string KernelEmitter::computeDeferred(const ir::Op &op, const RegVal &like,
                                       const CloneAssign &a) {
  const int64_t e = like.elems;
  const ScalarType t = op.results[0]->type.dtype;
  switch (op.kind) {
  case ir::OpKind::SelfIndex: {
    auto it = like.layout.find(op.dims[0].str());
    if (it == like.layout.end()) {
      unsupported("self_index(" + op.dims[0].str() + ") used in a value without that dim",
                  op.loc);
      return "%error";
    }
    if (!isInteger(t) && (!isFloat(t) || opaque(t))) {
      unsupported(std::string("self_index of type ") + scalarTypeName(t), op.loc);
      return "%error";
    }
    std::vector<std::string> elems;
    for (int64_t g = 0; g < e; ++g) {
      std::map<std::string, IndexExpr> subs{{"$g", IndexExpr(g)}};
      for (const auto &[sym, v] : a)
        subs[sym] = IndexExpr(v);
      std::string idx = lowerIndex(facts_.simplify(it->second.start.subs(subs)));
      std::string r = fresh();
      if (isFloat(t)) {
        std::string i = fresh();
        line(i + " = arith.index_cast " + idx + " : index to i64");
        line(r + " = arith.sitofp " + i + " : i64 to " + mlirType(t));
      } else {
        line(r + " = arith.index_cast " + idx + " : index to " + mlirType(t));
      }
      elems.push_back(r);
    }
    return buildVector(elems, t);
  }
  case ir::OpKind::ApplyExpr: {
    const RegVal &x = values_.at(op.operands[0]);
    return applyExprClone(op, operandIn(x, like, a), x.dtype, e);
  }
  case ir::OpKind::Broadcast:
  case ir::OpKind::Permute: return operandIn(values_.at(op.operands[0]), like, a);
  case ir::OpKind::Unary:
  case ir::OpKind::Binary:
  case ir::OpKind::Math:
  case ir::OpKind::Select:
  case ir::OpKind::Cast: {
    std::vector<std::string> x;
    for (const ir::Value *o : op.operands)
      x.push_back(operandIn(values_.at(o), like, a));
    return elementwiseClone(op, x, values_.at(op.operands.back()).dtype, e);
  }
  default:
    unsupported(std::string("computing ") + opKindName(op.kind) + " in another op's layout",
                op.loc);
    return "%error";
  }
}

std::string KernelEmitter::lowerPred(const sym::Pred &p) {
  std::string r = fresh();
  switch (p.kind) {
  case sym::Pred::Const: line(r + " = arith.constant " + (p.value ? "true" : "false")); break;
  case sym::Pred::Not: {
    std::string x = lowerPred(p.children[0]), one = fresh();
    line(one + " = arith.constant true");
    line(r + " = arith.xori " + x + ", " + one + " : i1");
    break;
  }
  case sym::Pred::And:
  case sym::Pred::Or: {
    std::string acc = lowerPred(p.children[0]);
    for (size_t i = 1; i < p.children.size(); ++i) {
      std::string y = lowerPred(p.children[i]), z = fresh();
      line(z + " = arith." + (p.kind == sym::Pred::And ? "andi " : "ori ") + acc + ", " + y +
           " : i1");
      acc = z;
    }
    return acc;
  }
  case sym::Pred::Cmp: {
    static const char *preds[] = {"eq", "ne", "slt", "sle", "sgt", "sge"};
    std::string a = lowerIndex(p.lhs), b = lowerIndex(p.rhs);
    line(r + " = arith.cmpi " + preds[p.op] + ", " + a + ", " + b + " : index");
    break;
  }
  }
  return r;
}

std::string KernelEmitter::applyExprClone(const ir::Op &op, const std::string &x, ScalarType t,
                                          int64_t e) {
  const ScalarType rt = op.results[0]->type.dtype;
  // The lambda variable is bound to each element in turn, so no lowered expression may be
  // reused across elements.
  auto saved = exprCache_;
  std::vector<std::string> out;
  for (int64_t i = 0; i < e; ++i) {
    exprCache_.clear();
    std::string xi = extractElem(x, t, e, i), v = fresh();
    line(v + " = arith.index_cast " + xi + " : " + mlirType(t) + " to index");
    symbols_[op.lambdaVar] = v;
    if (op.pred) {
      out.push_back(lowerPred(*op.pred));
    } else {
      std::string r = fresh();
      line(r + " = arith.index_cast " + lowerIndex(op.expr) + " : index to " + mlirType(rt));
      out.push_back(r);
    }
  }
  symbols_.erase(op.lambdaVar);
  exprCache_ = saved;
  return buildVector(out, rt);
}

// A float constant of type t as MLIR parses it back exactly: `v` rounded once to t (to nearest,
// ties to even: the reference evaluator's rounding, language.md section 11). A value that t
// holds exactly is printed in decimal (%.17g identifies the double, and so the value, and MLIR's
// float literals need a '.': `1e-08` becomes `1.0e-08`); anything else (a value t rounds,
// infinities, NaN) as t's bit pattern in hex, which MLIR takes as the bits.
std::string floatLiteral(double v, ScalarType t) {
  const llvm::fltSemantics *sem = &llvm::APFloat::IEEEsingle();
  switch (t) {
  case ScalarType::F16: sem = &llvm::APFloat::IEEEhalf(); break;
  case ScalarType::BF16: sem = &llvm::APFloat::BFloat(); break;
  case ScalarType::F64: sem = &llvm::APFloat::IEEEdouble(); break;
  default: break;
  }
  llvm::APFloat f(v);
  bool lost = false;
  llvm::APFloat::opStatus st = f.convert(*sem, llvm::APFloat::rmNearestTiesToEven, &lost);
  if (std::isfinite(v) && f.isFinite() && !lost && st == llvm::APFloat::opOK) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    std::string s = buf;
    if (s.find('.') == std::string::npos) {
      size_t e = s.find_first_of("eE");
      s.insert(e == std::string::npos ? s.size() : e, ".0");
    }
    return s;
  }
  llvm::APInt bits = f.bitcastToAPInt();
  llvm::SmallString<32> hex;
  bits.toStringUnsigned(hex, 16);
  std::string digits(hex.begin(), hex.end());
  for (char &c : digits)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  size_t width = bits.getBitWidth() / 4;
  if (digits.size() < width)
    digits.insert(0, width - digits.size(), '0');
  return "0x" + digits;
}

// An integer constant of type t as MLIR parses it: its bit pattern read as a signed number of
// t's width (sema keeps literals within the width: `literal-out-of-range`).
std::string intLiteral(int64_t v, ScalarType t) {
  unsigned n = bitWidth(t);
  if (n > 0 && n < 64) {
    uint64_t mask = (uint64_t(1) << n) - 1, u = static_cast<uint64_t>(v) & mask;
    if (u >> (n - 1))
      u |= ~mask; // sign-extend
    v = static_cast<int64_t>(u);
  }
  return std::to_string(v);
}

// ---- reductions ----------------------------------------------------------------------------
//
// sum/max/min over dim D of a value in any layout the emitter holds (wave-facts.md section 4.1):
//  1. masked-off elements (a row shorter than its tile) become the combiner's identity;
//  2. the clones along D are combined element-wise, then in-thread the lane's elements whose
//     coordinates on the other dims agree (the result may keep several elements per lane);
//  3. the lanes: D's index is evaluated for every lane of a wave (other symbols 0); each lane
//     bit whose flip changes D but no other coordinate is one butterfly step `gpu.shuffle xor`
//     2^b (f16/bf16 travel as f32, narrow integers as i32, 64-bit values as two i32 halves);
//  4. the waves, when D's index depends on a wave id: every lane stores its partial result in
//     a small shared-memory scratch (its own slot), a barrier (placed by the analysis of
//     barrier_insertion.h), then every thread combines the slots of the waves along D in wave
//     order, so that every thread holds the same bits;
//  5. `init`, combined last.
// Accumulation stays in the element type (the language's rule). The result drops D and is
// uniform along it, so `broadcast` back is the value itself. A streamed operand (a dynamic or
// long row) is first accumulated chunk by chunk in a loop (emitStreamedReduce).

std::optional<KernelEmitter::Combiner> KernelEmitter::combinerFor(ir::ReduceKind k, ScalarType t) {
  Combiner c;
  c.t = t;
  c.ety = mlirType(t);
  if (c.ety.empty() || opaque(t) || t == ScalarType::I1 || t == ScalarType::Index)
    return std::nullopt;
  const bool fl = isFloat(t), sg = isSigned(t);
  const unsigned w = bitWidth(t);
  auto intLimit = [&](bool maxLimit) -> std::string {
    if (!sg)
      return maxLimit ? "-1" : "0"; // all ones is the largest unsigned value
    if (w == 64)
      return maxLimit ? "9223372036854775807" : "-9223372036854775808";
    int64_t m = (int64_t(1) << (w - 1));
    return std::to_string(maxLimit ? m - 1 : -m);
  };
  switch (k) {
  case ir::ReduceKind::Sum:
    c.vkind = "add";
    c.op = fl ? "arith.addf" : "arith.addi";
    c.identity = fl ? "0.0" : "0";
    break;
  case ir::ReduceKind::Max:
    c.vkind = fl ? "maximumf" : sg ? "maxsi" : "maxui";
    c.op = fl ? "arith.maximumf" : sg ? "arith.maxsi" : "arith.maxui";
    c.identity = fl ? floatLiteral(-INFINITY, t) : intLimit(false);
    break;
  case ir::ReduceKind::Min:
    c.vkind = fl ? "minimumf" : sg ? "minsi" : "minui";
    c.op = fl ? "arith.minimumf" : sg ? "arith.minsi" : "arith.minui";
    c.identity = fl ? floatLiteral(INFINITY, t) : intLimit(true);
    break;
  }
  return c;
}

std::string KernelEmitter::combine(const Combiner &c, const std::string &a, const std::string &b,
                                   int64_t e) {
  std::string r = fresh();
  line(r + " = " + c.op + " " + a + ", " + b + " : " + vecType(c.t, e));
  return r;
}

std::string KernelEmitter::identitySplat(const Combiner &c, int64_t e) {
  std::string r = fresh();
  line(r + " = arith.constant " + (e == 1 ? c.identity : "dense<" + c.identity + ">") + " : " +
       vecType(c.t, e));
  return r;
}

std::string KernelEmitter::rowMask(const DimIndex &di, const CloneAssign &a, int64_t e) {
  if (!di.masked)
    return "";
  auto at = [&](int64_t g) {
    std::map<std::string, IndexExpr> subs{{"$g", IndexExpr(g)}};
    for (const auto &[name, value] : subs_)
      subs[name] = value;
    for (const auto &[sname, v] : a)
      subs[sname] = IndexExpr(v);
    return facts_.simplify(di.start.subs(subs));
  };
  const IndexExpr base = at(0);
  const std::string size = lowerIndex(di.dim.size);
  if (e == 1)
    return cmpLt(lowerIndex(base), size);
  // Element g sits at base + off[g]: compare the constant offsets with size - base at once.
  std::vector<int64_t> off;
  for (int64_t g = 0; g < e; ++g) {
    auto o = facts_.simplify(at(g) - base).asInteger();
    if (!o)
      break;
    off.push_back(*o);
  }
  if (static_cast<int64_t>(off.size()) == e) {
    const int64_t lo = std::min<int64_t>(0, *std::min_element(off.begin(), off.end()));
    const int64_t hi = *std::max_element(off.begin(), off.end()) + 1;
    std::string lim = binop("subi", size, lowerIndex(base));
    lim = binop("maxsi", binop("minsi", lim, constIndex(hi)), constIndex(lo));
    std::string l32 = fresh(), splat = fresh(), offs = fresh(), m = fresh(), list;
    for (int64_t g = 0; g < e; ++g)
      list += (g ? ", " : "") + std::to_string(off[g]);
    line(l32 + " = arith.index_cast " + lim + " : index to i32");
    line(splat + " = vector.splat " + l32 + " : vector<" + std::to_string(e) + "xi32>");
    line(offs + " = arith.constant dense<[" + list + "]> : vector<" + std::to_string(e) + "xi32>");
    line(m + " = arith.cmpi slt, " + offs + ", " + splat + " : vector<" + std::to_string(e) +
         "xi32>");
    return m;
  }
  std::string m = fresh();
  line(m + " = arith.constant dense<false> : vector<" + std::to_string(e) + "xi1>");
  for (int64_t g = 0; g < e; ++g) {
    std::string c = cmpLt(lowerIndex(at(g)), size), n = fresh();
    line(n + " = vector.insert " + c + ", " + m + " [" + std::to_string(g) + "] : i1 into vector<" +
         std::to_string(e) + "xi1>");
    m = n;
  }
  return m;
}

std::string KernelEmitter::maskToIdentity(const Combiner &c, const DimIndex &di,
                                          const CloneAssign &a, const std::string &v,
                                          int64_t e) {
  std::string m = rowMask(di, a, e);
  if (m.empty())
    return v;
  std::string id = identitySplat(c, e), r = fresh();
  line(r + " = arith.select " + m + ", " + v + ", " + id + " : " + vecType(ScalarType::I1, e) +
       ", " + vecType(c.t, e));
  return r;
}

// gpu.shuffle moves i32, i64, f32 and f64; MLIR 19 lowers only the 32-bit ones to both ROCDL and
// NVVM, so narrower values are widened (exactly) and 64-bit ones split into halves.
std::string KernelEmitter::shuffle(const char *mode, const std::string &v, ScalarType t,
                                   const std::string &offset) {
  const std::string ety = mlirType(t);
  auto move = [&](const std::string &x, const std::string &ty) {
    std::string w = fresh(), r = fresh();
    line(w + " = arith.constant " + std::to_string(d_.waveSize) + " : i32");
    line(r + ", " + fresh() + " = gpu.shuffle " + mode + " " + x + ", " + offset + ", " + w +
         " : " + ty);
    return r;
  };
  auto cast = [&](const char *op, const std::string &x, const std::string &from,
                  const std::string &to) {
    std::string r = fresh();
    line(r + " = " + op + " " + x + " : " + from + " to " + to);
    return r;
  };
  const unsigned w = t == ScalarType::I1 ? 1 : bitWidth(t);
  if (w == 32)
    return move(v, ety);
  if (w < 32 && isFloat(t) && !opaque(t))
    return cast("arith.truncf", move(cast("arith.extf", v, ety, "f32"), "f32"), "f32", ety);
  if (w < 32)
    return cast("arith.trunci", move(cast("arith.extui", v, ety, "i32"), "i32"), "i32", ety);
  // 64 bits: two 32-bit halves.
  std::string bits = isFloat(t) ? cast("arith.bitcast", v, ety, "i64") : v;
  std::string c32 = fresh(), hiBits = fresh();
  line(c32 + " = arith.constant 32 : i64");
  line(hiBits + " = arith.shrui " + bits + ", " + c32 + " : i64");
  std::string lo = move(cast("arith.trunci", bits, "i64", "i32"), "i32");
  std::string hi = move(cast("arith.trunci", hiBits, "i64", "i32"), "i32");
  std::string lo64 = cast("arith.extui", lo, "i32", "i64"), hi64 = cast("arith.extui", hi, "i32", "i64");
  std::string sh = fresh(), r = fresh();
  line(sh + " = arith.shli " + hi64 + ", " + c32 + " : i64");
  line(r + " = arith.ori " + sh + ", " + lo64 + " : i64");
  return isFloat(t) ? cast("arith.bitcast", r, "i64", ety) : r;
}

std::string KernelEmitter::shuffleXor(const std::string &v, ScalarType t, int64_t mask) {
  std::string o = fresh();
  line(o + " = arith.constant " + std::to_string(mask) + " : i32");
  return shuffle("xor", v, t, o);
}

namespace {
// The coordinates of one element of a layout for concrete thread ids and element index, with
// every other symbol 0 (workgroup, loop and clone terms are the same for the lanes compared).
struct LayoutProbe {
  std::vector<std::pair<std::string, IndexExpr>> dims; // reduced dim first
  std::set<std::string> syms;
  std::optional<std::vector<int64_t>> at(int64_t t0, int64_t t1, int64_t t2, int64_t g) const {
    std::map<std::string, int64_t> vals;
    for (const auto &s : syms)
      vals[s] = 0;
    vals["$T0"] = t0;
    vals["$T1"] = t1;
    vals["$T2"] = t2;
    vals["$g"] = g;
    std::vector<int64_t> out;
    for (const auto &[name, e] : dims) {
      auto v = e.evaluate(vals);
      if (!v)
        return std::nullopt;
      out.push_back(*v);
    }
    return out;
  }
};
} // namespace

bool KernelEmitter::reduceHeld(const ir::Op &op, const RegVal &x, bool masked) {
  const std::string dim = op.dims[0].str();
  const ScalarType t = x.dtype;
  auto cmb = combinerFor(op.reduce, t);
  if (!cmb)
    return unsupported(std::string("a reduction of ") + scalarTypeName(t) + " values on " +
                           target_.name,
                       op.loc);
  const Combiner &c = *cmb;
  const RegVal *init = op.operands.size() > 1 ? &values_.at(op.operands[1]) : nullptr;
  if (init && init->lazy)
    return unsupported("a reduction init that is a streamed row", op.loc);
  if (x.deferred)
    return unsupported("a reduction of a value computed from thread indices only", op.loc);
  auto lay = x.layout.find(dim);
  if (lay == x.layout.end()) {
    // Uniform along D: max and min of copies are the value itself (combined with init below).
    if (op.reduce == ir::ReduceKind::Sum)
      return unsupported("a sum over " + dim + " of a value uniform along it", op.loc);
  }
  const DimIndex rowDi = lay == x.layout.end() ? DimIndex{} : lay->second;
  const int64_t e = std::max<int64_t>(x.elems, 1);
  const std::string cloneSym = "$i_" + dim;

  // Element groups: the lane's elements with equal coordinates on the other dims.
  sym::Facts gf = facts_;
  gf.setRange("$g", 0, e - 1);
  auto others = [&](int64_t g) {
    std::string key;
    for (const auto &[name, di] : x.layout)
      if (name != dim)
        key += gf.simplify(di.start.subs({{"$g", IndexExpr(g)}})).str() + ";";
    return key;
  };
  std::vector<std::vector<int64_t>> groups;
  {
    std::map<std::string, size_t> byKey;
    for (int64_t g = 0; g < e; ++g) {
      auto [it, added] = byKey.emplace(others(g), groups.size());
      if (added)
        groups.emplace_back();
      groups[it->second].push_back(g);
    }
  }
  const int64_t eo = static_cast<int64_t>(groups.size());
  const int64_t step = eo > 1 ? groups[1][0] : 1;
  for (int64_t j = 0; j < eo; ++j)
    if (groups[j][0] != j * step || groups[j].size() != groups[0].size())
      return unsupported("a reduction over " + dim +
                             " of a value whose other coordinates are not spread evenly over "
                             "the lane's elements",
                         op.loc);
  RegVal out;
  out.dtype = t;
  out.elems = eo;
  out.cloneSyms = x.cloneSyms;
  out.cloneSyms.erase(cloneSym);
  {
    sym::Facts of = facts_;
    of.setRange("$g", 0, eo - 1);
    for (const auto &[name, di] : x.layout) {
      if (name == dim)
        continue;
      DimIndex d = di;
      d.start = of.simplify(di.start.subs({{"$g", IndexExpr::symbol("$g") * step}}));
      d.elements = d.start.dependsOn("$g") ? eo : 1;
      if (d.start.dependsOn("$g"))
        out.vecDim = name;
      out.layout[name] = d;
    }
  }

  // The lanes and waves that hold the other elements of D (step 3 and 4).
  LayoutProbe probe;
  probe.dims.push_back({dim, rowDi.start});
  for (const auto &[name, di] : x.layout)
    if (name != dim)
      probe.dims.push_back({name, di.start});
  for (const auto &[name, pe] : probe.dims)
    for (const auto &s : pe.freeSymbols())
      if (s != "$T0" && s != "$T1" && s != "$T2" && s != "$g")
        probe.syms.insert(s);
  const int64_t w = d_.groupSize; // lanes of one wave of the constraints (a warpgroup: 4 waves)
  std::vector<int64_t> laneMasks;
  std::vector<int> waveAxes; // workgroup axes whose wave id moves along D
  if (rowDi.start.dependsOn("$T0") || rowDi.start.dependsOn("$T1") ||
      rowDi.start.dependsOn("$T2")) {
    auto sameOther = [](const std::vector<int64_t> &a, const std::vector<int64_t> &b) {
      return std::equal(a.begin() + 1, a.end(), b.begin() + 1);
    };
    std::vector<std::vector<std::vector<int64_t>>> co(w); // [lane][group] -> coordinates
    for (int64_t l = 0; l < w; ++l)
      for (int64_t j = 0; j < eo; ++j) {
        auto v = probe.at(l, 0, 0, groups[j][0]);
        if (!v)
          return unsupported("a reduction over " + dim + " whose index " + rowDi.start.str() +
                                 " cannot be evaluated per lane",
                             op.loc);
        co[l].push_back(*v);
      }
    // A lane bit that moves D for every lane and no other coordinate is a butterfly step; one
    // that moves neither is a replication and one that moves other coordinates pairs lanes of
    // different results (both skipped); one that moves D for only some lanes is unsupported.
    // The orbit check below then proves that the steps meet every position of D once.
    for (int64_t m = 1; m < w; m *= 2) {
      bool allOther = true, allD = true, anyD = false;
      for (int64_t l = 0; l < w; ++l)
        for (int64_t j = 0; j < eo; ++j) {
          bool so = sameOther(co[l][j], co[l ^ m][j]), sd = co[l][j][0] == co[l ^ m][j][0];
          allOther &= so;
          allD &= !sd;
          anyD |= !sd;
        }
      if (allOther && allD && m >= static_cast<int64_t>(d_.waveSize))
        return unsupported("a reduction over " + dim + " across the waves of a warpgroup (" +
                               rowDi.start.str() + ")",
                           op.loc);
      if (allOther && allD)
        laneMasks.push_back(m);
      else if (allOther && anyD)
        return unsupported("a reduction over " + dim + " in a lane layout (" +
                               rowDi.start.str() + ") that a butterfly cannot combine",
                           op.loc);
    }
    // Every lane's butterfly orbit must meet each D position of its class exactly once.
    for (int64_t l = 0; l < w; ++l)
      for (int64_t j = 0; j < eo; ++j) {
        std::set<int64_t> orbit, cls;
        size_t n = 1;
        for (size_t k = 0; k < laneMasks.size(); ++k)
          n *= 2;
        for (size_t bits = 0; bits < n; ++bits) {
          int64_t p = l;
          for (size_t k = 0; k < laneMasks.size(); ++k)
            if (bits >> k & 1)
              p ^= laneMasks[k];
          orbit.insert(co[p][j][0]);
        }
        for (int64_t p = 0; p < w; ++p)
          if (sameOther(co[l][j], co[p][j]))
            cls.insert(co[p][j][0]);
        if (orbit.size() != n || orbit != cls)
          return unsupported("a reduction over " + dim + " in a lane layout (" +
                                 rowDi.start.str() + ") that a butterfly cannot combine",
                             op.loc);
      }
    for (int a = 0; a < 3; ++a) {
      const int64_t n = d_.wavesPerBlock[a];
      if (n <= 1)
        continue;
      auto waveAt = [&](int64_t k, int64_t l, int64_t g) {
        return probe.at(a == 0 ? k * w + l : l, a == 1 ? k : 0, a == 2 ? k : 0, g);
      };
      bool moves = false, othersMove = false;
      for (int64_t k = 1; k < n; ++k)
        for (int64_t l = 0; l < w; ++l)
          for (int64_t j = 0; j < eo; ++j) {
            auto p = waveAt(0, l, groups[j][0]), q = waveAt(k, l, groups[j][0]);
            if (!p || !q)
              return unsupported("a reduction over " + dim + " whose index cannot be evaluated",
                                 op.loc);
            moves |= (*p)[0] != (*q)[0];
            othersMove |= !sameOther(*p, *q);
          }
      if (moves && othersMove)
        return unsupported("a reduction over " + dim + " whose waves also move along another dim",
                           op.loc);
      if (moves)
        waveAxes.push_back(a);
    }
  }

  // Steps 1 and 2, then 3, per result clone.
  const std::vector<CloneAssign> outClones = clonesOver(out.cloneSyms);
  std::vector<std::vector<std::string>> parts; // [clone][element]
  for (const auto &a : outClones) {
    std::vector<CloneAssign> along(1, a);
    if (x.cloneSyms.count(cloneSym)) {
      along.clear();
      for (const auto &cc : clonesOver({cloneSym})) {
        CloneAssign b = a;
        b[cloneSym] = cc.at(cloneSym);
        along.push_back(b);
      }
    }
    std::string acc;
    for (const auto &cl : along) {
      std::string v = operandAt(x, cl, e);
      if (masked && lay != x.layout.end())
        v = maskToIdentity(c, rowDi, cl, v, e);
      acc = acc.empty() ? v : combine(c, acc, v, e);
    }
    std::vector<std::string> elems;
    auto extract = [&](int64_t g) {
      std::string r = fresh();
      line(r + " = vector.extract " + acc + "[" + std::to_string(g) + "] : " + c.ety + " from " +
           vecType(t, e));
      return r;
    };
    if (e == 1) {
      elems.push_back(acc);
    } else if (eo == 1) {
      std::string r = fresh();
      line(r + " = vector.reduction <" + c.vkind + ">, " + acc + " : " + vecType(t, e) +
           " into " + c.ety);
      elems.push_back(r);
    } else {
      for (const auto &grp : groups) {
        std::string r;
        for (int64_t g : grp)
          r = r.empty() ? extract(g) : combine(c, r, extract(g));
        elems.push_back(r);
      }
    }
    for (int64_t m : laneMasks)
      for (auto &v : elems)
        v = combine(c, v, shuffleXor(v, t, m));
    parts.push_back(elems);
  }

  // Step 4: across the waves along D, through a shared-memory scratch.
  if (!waveAxes.empty()) {
    const int64_t waves =
        int64_t(d_.wavesPerBlock[0]) * d_.wavesPerBlock[1] * d_.wavesPerBlock[2];
    const int64_t nc = static_cast<int64_t>(outClones.size());
    const int64_t slots = waves * nc * eo * w;
    auto [it, added] = scratch_.emplace(&op, static_cast<int>(allocs_.size()));
    if (added) {
      LdsAlloc al;
      al.tile = {slots};
      al.strides = {IndexExpr(1)};
      al.bytes = slots * byteSize(t);
      al.base = "%lds_" + std::to_string(allocs_.size());
      allocs_.push_back(al);
    }
    const int alloc = it->second;
    const IndexExpr t0 = IndexExpr::symbol("$T0");
    using WaveIds = std::array<IndexExpr, 3>; // wave ids along workgroup axes 0, 1, 2
    const WaveIds ids = {floorDiv(t0, w), IndexExpr::symbol("$T1"), IndexExpr::symbol("$T2")};
    auto linear = [&](const WaveIds &id) {
      return id[0] + int64_t(d_.wavesPerBlock[0]) * (id[1] + int64_t(d_.wavesPerBlock[1]) * id[2]);
    };
    const IndexExpr lane = mod(t0, w);
    auto slot = [&](const IndexExpr &wave, int64_t ci, int64_t j) {
      return facts_.simplify((wave * (nc * eo) + ci * eo + j) * w + lane);
    };
    auto addr = [&](const IndexExpr &off) {
      std::string i64 = fresh(), p = fresh();
      line(i64 + " = arith.index_cast " + lowerIndex(off) + " : index to i64");
      line(p + " = llvm.getelementptr " + allocs_[alloc].base + "[" + i64 +
           "] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, " + c.ety);
      return p;
    };
    const std::string align = std::to_string(byteSize(t));
    {
      LdsScope scope(*this, alloc, /*write=*/true);
      for (int64_t ci = 0; ci < nc; ++ci)
        for (int64_t j = 0; j < eo; ++j)
          line("llvm.store " + parts[ci][j] + ", " + addr(slot(linear(ids), ci, j)) +
               " {alignment = " + align + " : i64} : " + c.ety + ", !llvm.ptr<3>");
    }
    // The waves of this thread's group, in the same order for every thread: its own wave ids
    // except along the axes of D, which take every value.
    std::vector<WaveIds> group(1, ids);
    for (int a : waveAxes) {
      std::vector<WaveIds> next;
      for (const auto &g : group)
        for (int64_t k = 0; k < d_.wavesPerBlock[a]; ++k) {
          WaveIds n = g;
          n[a] = IndexExpr(k);
          next.push_back(n);
        }
      group = std::move(next);
    }
    LdsScope scope(*this, alloc, /*write=*/false);
    for (int64_t ci = 0; ci < nc; ++ci)
      for (int64_t j = 0; j < eo; ++j) {
        std::string acc;
        for (const auto &wave : group) {
          std::string v = fresh();
          line(v + " = llvm.load " + addr(slot(linear(wave), ci, j)) + " {alignment = " + align +
               " : i64} : !llvm.ptr<3> -> " + c.ety);
          acc = acc.empty() ? v : combine(c, acc, v);
        }
        parts[ci][j] = acc;
      }
  }

  // Step 5: the vector of the lane's results, then init (in the result's layout).
  RegVal initIn;
  if (init && !convertTo(*init, out, initIn, op.loc))
    return false;
  for (size_t ci = 0; ci < outClones.size(); ++ci) {
    const auto &a = outClones[ci];
    std::string r = parts[ci][0];
    if (eo > 1) {
      r = identitySplat(c, eo);
      for (int64_t j = 0; j < eo; ++j) {
        std::string n = fresh();
        line(n + " = vector.insert " + parts[ci][j] + ", " + r + " [" + std::to_string(j) +
             "] : " + c.ety + " into " + vecType(t, eo));
        r = n;
      }
    }
    if (init)
      r = combine(c, r, operandAt(initIn, a, eo), eo);
    out.clones[cloneKey(a, out.cloneSyms)] = r;
  }
  values_[op.results[0]] = std::move(out);
  return !failed_;
}

bool KernelEmitter::emitReduce(const ir::Op &op) {
  const RegVal &x = values_.at(op.operands[0]);
  if (x.lazy)
    return emitStreamedReduce(op);
  return reduceHeld(op, x, /*masked=*/true);
}

// ---- streamed rows -------------------------------------------------------------------------
//
// A row of a dynamic length, or too long to hold in registers, is *streamed* (the
// distribution's DimIndex::chunk): a read of it, and element-wise ops on such values, emit
// nothing where they stand. Each consumer, a reduction or a write, runs one loop over the row
// with `chunk` elements per lane per trip, and re-emits inside it the ops its value depends on
// for the current chunk (materialize): softmax's `v = read(x)`, used by the max, by the sum of
// exp and by the write, is read three times (the later passes hit the cache when few rows are
// in flight). Inside a trip the values are ordinary register values (the chunk's index:
// g -> trip * chunk + g).

const DimIndex *KernelEmitter::streamedDim(const ir::Op &op) {
  const AccessIndex *ai = accessOf(op);
  if (!ai)
    return nullptr;
  for (const auto &di : op.mapping ? ai->regDims : ai->dims)
    if (di.chunk > 0)
      return &di;
  return nullptr;
}

DimIndex KernelEmitter::streamChunk(const DimIndex &di, bool innermost) const {
  sym::Facts f = facts_;
  f.setRange("$g", 0, stream_->chunk - 1);
  const IndexExpr g = IndexExpr::symbol("$g");
  DimIndex r = di;
  r.start = f.simplify(
      di.start.subs({{"$g", IndexExpr::symbol(stream_->sym) * stream_->chunk + g}}));
  r.elements = stream_->chunk;
  r.chunk = 0;
  r.contiguous = innermost && f.provesEqual(r.start.subs({{"$g", g + 1}}) - r.start, 1);
  return r;
}

// Trips of the loop over a streamed row: the extent of the row one wave walks (the dim, or its
// vector shape when a workgroup or tiling splits it) over the distance of consecutive chunks.
std::string KernelEmitter::streamTrips(const DimIndex &di) {
  const IndexExpr s = IndexExpr::symbol("$Sprobe");
  sym::Facts f = facts_;
  f.setRange("$Sprobe", 0);
  const IndexExpr e0 = di.start.subs({{"$g", s * di.chunk}});
  const IndexExpr e1 = di.start.subs({{"$g", (s + 1) * di.chunk}});
  auto stride = f.simplify(e1 - e0).asInteger();
  if (!stride || *stride <= 0) {
    unsupported("a streamed row whose chunks are not evenly spaced (" + di.start.str() + ")", {});
    return "";
  }
  IndexExpr extent = di.dim.size;
  if (k_.workgroupFor(di.dim) || k_.tilingFor(di.dim))
    if (auto vs = k_.vectorShapeFor(di.dim))
      extent = *vs;
  return lowerIndex(facts_.simplify(ceilDiv(extent, IndexExpr(*stride))));
}

bool KernelEmitter::materialize(const ir::Value *v,
                                std::vector<std::pair<const ir::Value *, RegVal>> &saved) {
  auto it = values_.find(v);
  if (it == values_.end() || !it->second.lazy)
    return true;
  const ir::Op *def = it->second.lazy;
  for (const ir::Value *o : def->operands)
    if (!materialize(o, saved))
      return false;
  saved.push_back({v, values_.at(v)});
  return emitOp(*def);
}

void KernelEmitter::restore(std::vector<std::pair<const ir::Value *, RegVal>> &saved) {
  for (auto it = saved.rbegin(); it != saved.rend(); ++it)
    values_[it->first] = it->second;
  saved.clear();
}

bool KernelEmitter::deferStreamed(const ir::Op &op) {
  RegVal lz;
  lz.lazy = &op;
  lz.dtype = op.results[0]->type.dtype;
  for (const ir::Value *o : op.operands) {
    const RegVal &v = values_.at(o);
    if (v.lazy) {
      if (!lz.streamDim.empty() && lz.streamDim != v.streamDim)
        return unsupported("operands streamed along different dims", op.loc);
      lz.streamDim = v.streamDim;
    }
    for (const auto &[dim, di] : v.layout)
      lz.layout.emplace(dim, di);
    lz.cloneSyms.insert(v.cloneSyms.begin(), v.cloneSyms.end());
  }
  values_[op.results[0]] = std::move(lz);
  return true;
}

bool KernelEmitter::emitStreamedReduce(const ir::Op &op) {
  const ir::Value *xv = op.operands[0];
  const RegVal x = values_.at(xv);
  const std::string dim = op.dims[0].str();
  if (x.streamDim != dim)
    return unsupported("a reduction over " + dim + " of a row streamed along " + x.streamDim,
                       op.loc);
  auto cmb = combinerFor(op.reduce, x.dtype);
  if (!cmb)
    return unsupported(std::string("a reduction of ") + scalarTypeName(x.dtype) + " values on " +
                           target_.name,
                       op.loc);
  const Combiner &c = *cmb;
  const DimIndex &di = x.layout.at(dim);
  const int64_t u = di.chunk;
  const std::string trips = streamTrips(di);
  if (failed_)
    return false;
  const unsigned n = next_++;
  const std::string sym = "$S" + std::to_string(n), loop = "%sloop" + std::to_string(n),
                    k = "%sk" + std::to_string(n);
  facts_.setRange(sym, 0);
  const std::vector<CloneAssign> clones = clonesOver(x.cloneSyms);
  const std::string vty = vecType(x.dtype, u), id = identitySplat(c, u);
  std::string ia, tys;
  for (size_t i = 0; i < clones.size(); ++i) {
    ia += (i ? ", " : "") + loop + "_" + std::to_string(i) + " = " + id;
    tys += (i ? ", " : "") + vty;
  }
  line(loop + ":" + std::to_string(clones.size()) + " = scf.for " + k + " = " + constIndex(0) +
       " to " + trips + " step " + constIndex(1) + " iter_args(" + ia + ") -> (" + tys + ") {");
  const std::string outer = indent_;
  auto cache = exprCache_;
  indent_ += "  ";
  stream_ = Stream{dim, sym, u};
  symbols_[sym] = k;
  std::vector<std::pair<const ir::Value *, RegVal>> saved;
  bool ok = materialize(xv, saved);
  RegVal chunk;
  if (ok) {
    chunk = values_.at(xv);
    ok = chunk.elems == u && chunk.layout.count(dim);
    if (!ok)
      unsupported("a streamed value with " + std::to_string(chunk.elems) +
                      " elements per lane per trip",
                  op.loc);
  }
  if (ok) {
    std::string ys;
    for (size_t i = 0; i < clones.size(); ++i) {
      std::string v = maskToIdentity(c, chunk.layout.at(dim), clones[i], operandAt(chunk, clones[i], u), u);
      ys += (i ? ", " : "") + combine(c, loop + "_" + std::to_string(i), v, u);
    }
    line("scf.yield " + ys + " : " + tys);
  }
  restore(saved);
  stream_.reset();
  symbols_.erase(sym);
  indent_ = outer;
  exprCache_ = cache;
  line("}");
  if (!ok || failed_)
    return false;
  // The per-lane partial results: the chunk's layout at trip 0, nothing masked any more.
  RegVal held = chunk;
  held.clones.clear();
  for (size_t i = 0; i < clones.size(); ++i)
    held.clones[cloneKey(clones[i], held.cloneSyms)] = loop + "#" + std::to_string(i);
  for (auto &[name, d] : held.layout) {
    d.start = facts_.simplify(d.start.subs({{sym, IndexExpr(0)}}));
    d.masked = false;
  }
  return reduceHeld(op, held, /*masked=*/false);
}

bool KernelEmitter::emitStreamedWrite(const ir::Op &op) {
  const DimIndex *di = streamedDim(op);
  const RegVal &v = values_.at(op.operands[0]);
  if (!di || (v.lazy && v.streamDim != di->dim.str()))
    return unsupported("a write of a streamed row in another layout", op.loc);
  const std::string trips = streamTrips(*di);
  if (failed_)
    return false;
  const unsigned n = next_++;
  const std::string sym = "$S" + std::to_string(n), k = "%sk" + std::to_string(n);
  facts_.setRange(sym, 0);
  line("scf.for " + k + " = " + constIndex(0) + " to " + trips + " step " + constIndex(1) + " {");
  const std::string outer = indent_;
  auto cache = exprCache_;
  indent_ += "  ";
  stream_ = Stream{di->dim.str(), sym, di->chunk};
  symbols_[sym] = k;
  std::vector<std::pair<const ir::Value *, RegVal>> saved;
  bool ok = materialize(op.operands[0], saved) && emitWrite(op);
  restore(saved);
  stream_.reset();
  symbols_.erase(sym);
  indent_ = outer;
  exprCache_ = cache;
  line("}");
  return ok && !failed_;
}

bool KernelEmitter::emitOp(const ir::Op &op) {
  std::string outerLoc = locOf(op.loc);
  std::swap(loc_, outerLoc);
  struct Restore {
    std::string &loc, saved;
    ~Restore() { loc = saved; }
  } restore{loc_, outerLoc};
  if (!stream_) {
    // Streamed rows: element-wise ops on them are deferred; reductions and writes loop.
    bool streamedIn = false;
    for (const ir::Value *o : op.operands) {
      auto it = values_.find(o);
      streamedIn |= it != values_.end() && it->second.lazy;
    }
    switch (op.kind) {
    case ir::OpKind::Unary:
    case ir::OpKind::Binary:
    case ir::OpKind::Math:
    case ir::OpKind::Select:
    case ir::OpKind::Cast:
    case ir::OpKind::Broadcast:
      if (streamedIn)
        return deferStreamed(op);
      break;
    case ir::OpKind::Write:
      if (streamedIn || streamedDim(op))
        return emitStreamedWrite(op);
      break;
    case ir::OpKind::Reduce: break;
    default:
      if (streamedIn)
        return unsupported(std::string("a streamed row (a dynamic or long reduced row) used by ") +
                               opKindName(op.kind),
                           op.loc);
    }
  }
  switch (op.kind) {
  case ir::OpKind::Read: return emitRead(op);
  case ir::OpKind::Write: return emitWrite(op);
  case ir::OpKind::Constant: {
    RegVal v;
    v.dtype = op.results[0]->type.dtype;
    std::string ty = mlirType(v.dtype);
    if (ty.empty() || opaque(v.dtype))
      return unsupported(std::string("element type ") + scalarTypeName(v.dtype), op.loc);
    std::string lit = isFloat(v.dtype)            ? floatLiteral(op.fvalue, v.dtype)
                      : v.dtype == ScalarType::I1 ? ((op.ivalue & 1) ? "true" : "false")
                                                  : intLiteral(op.ivalue, v.dtype);
    std::string r = fresh();
    line(r + " = arith.constant " + lit + " : " + ty);
    v.clones[""] = r;
    values_[op.results[0]] = std::move(v);
    return true;
  }
  case ir::OpKind::Broadcast:
  case ir::OpKind::Permute:
    // Values are uniform along dims they lack and layouts name dims, not positions: a
    // broadcast or a permutation is the value itself.
    values_[op.results[0]] = values_.at(op.operands[0]);
    values_[op.results[0]].dtype = op.results[0]->type.dtype;
    return true;
  case ir::OpKind::SelfIndex: {
    RegVal v;
    v.dtype = op.results[0]->type.dtype;
    v.deferred = &op;
    values_[op.results[0]] = std::move(v);
    return true;
  }
  case ir::OpKind::ApplyExpr: {
    const RegVal &x = values_.at(op.operands[0]);
    RegVal v;
    v.dtype = op.results[0]->type.dtype;
    if (x.deferred || !x.laidOut()) {
      v.deferred = &op;
    } else {
      v.layout = x.layout;
      v.elems = x.elems;
      v.vecDim = x.vecDim;
      v.cloneSyms = x.cloneSyms;
      for (const auto &a : clonesOver(x.cloneSyms))
        v.clones[cloneKey(a, v.cloneSyms)] =
            applyExprClone(op, operandAt(x, a, x.elems), x.dtype, x.elems);
    }
    values_[op.results[0]] = std::move(v);
    return !failed_;
  }
  case ir::OpKind::Unary:
  case ir::OpKind::Binary:
  case ir::OpKind::Math:
  case ir::OpKind::Select:
  case ir::OpKind::Cast: return emitElementwise(op);
  case ir::OpKind::Mma: return emitMma(op);
  case ir::OpKind::Reduce: return emitReduce(op);
  case ir::OpKind::Iterate: return emitIterate(op);
  case ir::OpKind::Barrier: {
    SyncItem saved = lds_;
    lds_ = {SyncItem::Barrier, -1};
    line("gpu.barrier");
    lds_ = saved;
    return true;
  }
  case ir::OpKind::If: return unsupported("if", op.loc);
  case ir::OpKind::AtomicAdd:
  case ir::OpKind::AtomicMin: return unsupported("atomics", op.loc);
  case ir::OpKind::Allocate: return unsupported("allocate (shared memory)", op.loc);
  default: return unsupported(opKindName(op.kind), op.loc);
  }
}

bool KernelEmitter::emit(std::ostream &os) {
  // Signature: memory pointers and scalars in parameter order, then dynamic symbols as i64.
  std::string sig;
  unsigned argNo = 0;
  auto arg = [&](const std::string &ty) {
    std::string n = "%arg" + std::to_string(argNo++);
    sig += (sig.empty() ? "" : ", ") + n + ": " + ty;
    return n;
  };
  for (const auto &p : k_.params) {
    const ir::Value *v = p.value;
    if (v->type.isMemory()) {
      // A `shared` parameter is a global tensor too; its reads are promoted.
      pointers_[v] = arg("!llvm.ptr<1>");
    } else if (v->type.isScalar()) {
      std::string ty = mlirType(v->type.dtype);
      if (ty.empty())
        return unsupported(std::string("a parameter of type ") + scalarTypeName(v->type.dtype),
                           p.loc);
      RegVal rv;
      rv.dtype = v->type.dtype;
      rv.clones[""] = arg(ty);
      values_[v] = std::move(rv);
    } else {
      return unsupported("a register parameter", p.loc);
    }
  }
  for (const auto &s : d_.dynamicSymbols) {
    std::string a = arg("i64"), n = "%dyn_" + std::to_string(symbols_.size());
    head_ << "      " << n << " = arith.index_cast " << a << " : i64 to index\n";
    symbols_[s] = n;
  }
  const char *xyz[] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i) {
    head_ << "      %tid_" << xyz[i] << " = gpu.thread_id " << xyz[i] << "\n";
    head_ << "      %wg_" << xyz[i] << " = gpu.block_id " << xyz[i] << "\n";
    symbols_["$T" + std::to_string(i)] = std::string("%tid_") + xyz[i];
    symbols_["$WG" + std::to_string(i)] = std::string("%wg_") + xyz[i];
  }

  for (const auto &op : k_.body.ops)
    if (!emitOp(*op))
      return false;
  if (failed_)
    return false;
  ldsBytes_ = placeAllocs(allocs_);
  int64_t align = 16;
  for (const auto &al : allocs_)
    align = std::max(align, al.align);
  if (ldsBytes_ > 0) {
    if (ldsBytes_ > target_.ldsOptInBytes)
      return unsupported("a kernel needing " + std::to_string(ldsBytes_) +
                             " bytes of shared memory (" + target_.name + " has " +
                             std::to_string(target_.ldsOptInBytes) + " per workgroup)",
                         k_.loc);
    if (align > 16) {
      // The arena's base rounded up to `align` (placeAllocs left room): the declared alignment
      // of dynamic shared memory is not something to count on.
      head_ << "      %lds_raw = llvm.mlir.addressof @__wave_lds_" << k_.name
            << " : !llvm.ptr<3>\n"
            << "      %lds_at = llvm.ptrtoint %lds_raw : !llvm.ptr<3> to i64\n"
            << "      %lds_zero = llvm.mlir.constant(0 : i64) : i64\n"
            << "      %lds_neg = llvm.sub %lds_zero, %lds_at : i64\n"
            << "      %lds_mask = llvm.mlir.constant(" << align - 1 << " : i64) : i64\n"
            << "      %lds_pad = llvm.and %lds_neg, %lds_mask : i64\n"
            << "      %lds = llvm.getelementptr %lds_raw[%lds_pad] : (!llvm.ptr<3>, i64) -> "
            << "!llvm.ptr<3>, i8\n";
    } else {
      head_ << "      %lds = llvm.mlir.addressof @__wave_lds_" << k_.name << " : !llvm.ptr<3>\n";
    }
    for (const auto &al : allocs_)
      head_ << "      " << al.base << " = llvm.getelementptr %lds[" << al.offsetBytes
            << "] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8\n";
    // Above the static limit the arena is dynamic shared memory: an external array of no size
    // (PTX `.extern .shared`), sized by the launch (dynamicShared(), the host stub).
    dynamicShared_ = ldsBytes_ > target_.ldsBytes ? ldsBytes_ : 0;
    os << "    llvm.mlir.global " << (dynamicShared_ ? "external" : "internal") << " @__wave_lds_"
       << k_.name << "() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<"
       << (dynamicShared_ ? 0 : ldsBytes_) << " x i8>\n";
  }

  std::string blk = std::to_string(d_.block[0]) + ", " + std::to_string(d_.block[1]) + ", " +
                    std::to_string(d_.block[2]);
  os << "    gpu.func @" << k_.name << "(" << sig << ") kernel attributes {known_block_size = "
     << "array<i32: " << blk << ">";
  if (target_.vendor == Vendor::NVIDIA)
    os << ", nvvm.maxntid = array<i32: " << blk << ">";
  os << "} {\n" << head_.str();
  std::vector<SyncItem> sync;
  for (const auto &it : items_)
    sync.push_back(it.sync);
  std::vector<int> keepInFlight;
  std::vector<bool> proxyFence;
  std::vector<BarrierPlacement> barrier = placeBarriers(sync, &keepInFlight, &proxyFence);
  for (size_t i = 0; i < items_.size(); ++i) {
    const std::string &t = items_[i].text;
    const std::string ind = t.substr(0, t.find_first_not_of(' '));
    if (barrier[i] == BarrierPlacement::WaitAndBarrier) {
      // The reads here need their own tile; the newest `keep` copy groups (later tiles) may
      // still be in flight.
      const int keep = keepInFlight[i];
      if (keep > 0)
        os << ind << "%wait_" << i << " = llvm.mlir.constant(" << keep << " : i32) : i32\n"
           << ind << "llvm.call_intrinsic \"llvm.nvvm.cp.async.wait.group\"(%wait_" << i
           << ") : (i32) -> ()\n";
      else
        os << ind << "llvm.call_intrinsic \"llvm.nvvm.cp.async.wait.all\"() : () -> ()\n";
    }
    if (barrier[i] != BarrierPlacement::None && proxyFence[i])
      os << ind << "nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, "
         << "space = #nvvm.shared_space<cta>}\n";
    if (barrier[i] != BarrierPlacement::None && insertBarriers_)
      os << ind << "gpu.barrier\n";
    if (t.find_first_not_of(' ') != std::string::npos) // not a mark()
      os << items_[i].text << "\n";
  }
  os << "      gpu.return\n    } " << locOf(k_.loc) << "\n";
  return true;
}

} // namespace

std::optional<std::string> emitMlir(const std::vector<CodegenKernel> &kernels,
                                    const TargetInfo &target, DiagnosticEngine &diags,
                                    bool insertBarriers,
                                    std::map<std::string, int64_t> *dynamicShared) {
  std::ostringstream os;
  os << "module attributes {gpu.container_module} {\n  gpu.module @wave_kernels {\n";
  bool ok = true;
  for (const auto &ck : kernels) {
    KernelEmitter e(*ck.kernel, *ck.dist, target, diags, insertBarriers);
    if (!e.emit(os)) {
      diags.note(DiagId::NoteInKernel, ck.kernel->loc, {ck.kernel->name});
      ok = false;
    } else if (dynamicShared && e.dynamicShared() > 0) {
      (*dynamicShared)[ck.kernel->name] = e.dynamicShared();
    }
  }
  os << "  }\n}\n";
  if (!ok)
    return std::nullopt;
  return os.str();
}

} // namespace wave
