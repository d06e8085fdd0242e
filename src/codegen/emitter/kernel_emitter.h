// The MLIR emitter's private interface: KernelEmitter, which emits one kernel, and the helpers
// its files share. The overview, the per-op dispatch (emitOp), the kernel's frame (emit) and
// emitMlir are in codegen/mlir_emitter.cpp; the methods of each op family are in a file of this
// directory (docs/internals.md lists them). Only the code generator's files include this header.
#pragma once

#include "codegen/mlir_emitter.h"
#include "codegen/target_lowering.h"

#include "passes/barrier_insertion.h"
#include "passes/kernel_plan.h"
#include "passes/legalize.h"
#include "passes/thread_layout.h"

#include "symbolic/ginac_functions.h"

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

namespace wave::codegen::detail {

using sym::IndexExpr;

inline std::string mlirType(ScalarType t) {
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

inline unsigned byteSize(ScalarType t) { return t == ScalarType::I1 ? 1 : bitWidth(t) / 8; }

// RegVal::streamDim of a deferred op whose operands stream along different dims: a write that
// walks them re-reads them all in its own layout (stream.cpp, emitStreamedWrite); any other
// consumer refuses it.
inline constexpr const char *kMixedStreams = "*";

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
  // of dim `streamDim` (kMixedStreams: of several), one chunk per trip. `clones` is empty.
  const ir::Op *lazy = nullptr;
  std::string streamDim;
  // A wgmma operand: one i64 shared-memory matrix descriptor per clone (no register layout), of
  // the tile in allocation `descAlloc`, buffer `descStage` (the SyncItem stage of the reads the
  // wgmma that consumes it makes; -1 outside multi-buffered loops).
  int descAlloc = -1;
  int descStage = -1;
  bool descNMajor = false; // the tile is [K, N] (a wgmma B operand read with imm-trans-b)
};

inline std::string cloneKey(const CloneAssign &a, const std::set<std::string> &syms) {
  std::string key;
  for (const auto &s : syms)
    key += s + "=" + std::to_string(a.at(s)) + ";";
  return key;
}

// The shape of an `if` result from the shapes its branches yield (control.cpp); nullptr, or
// why it cannot be carried out of a branch, with the diagnostic id in `id`.
const char *ifYieldShape(const RegVal &a, const RegVal &b, RegVal &out, DiagId &id);

// A float constant of type t as MLIR parses it back exactly (elementwise.cpp).
std::string floatLiteral(double v, ScalarType t);
// An integer constant of type t as MLIR parses it (elementwise.cpp).
std::string intLiteral(int64_t v, ScalarType t);

// The dumps of the code generator's passes that --print-ir-after asks for (pass name -> text,
// each kernel's appended).
struct PassDumps {
  std::vector<std::string> wanted;
  std::map<std::string, std::string> text;
  bool wants(const std::string &pass) const {
    return std::find(wanted.begin(), wanted.end(), pass) != wanted.end();
  }
};

// Emits one kernel. It answers the plan passes' questions about accesses (PlanQueries) and
// emits what their plan (passes/kernel_plan.h) says.
// access.cpp: the XOR layout's column map (SharedTile::xorUnit), its own inverse.
IndexExpr xorUnitColumn(const IndexExpr &r, const IndexExpr &col, int64_t cols, int64_t bytes,
                        int64_t unit);

class KernelEmitter : private PlanQueries {
public:
  KernelEmitter(const ir::Kernel &k, const Distribution &d, const TargetInfo &t,
                DiagnosticEngine &diags, bool insertBarriers, PassDumps *dumps = nullptr)
      : k_(k), d_(d), target_(t), diags_(diags), facts_(d.facts),
        insertBarriers_(insertBarriers), dumps_(dumps) {
    machine_.waveSize = d.groupSize;
    machine_.shuffleWidth = d.waveSize;
    for (int i = 0; i < 3; ++i)
      machine_.block[i] = d.block[i];
    for (const auto &ex : d.expansion)
      machine_.cloneCounts["$i_" + ex.dim.str()] = std::max<int64_t>(ex.count, 1);
    for (const auto &wg : k.workgroups)
      if (!k.tilingFor(wg.dim))
        machine_.workgroupTiles[wg.dim.str()] = {"$WG" + std::to_string(wg.axis), wg.tile};
    for (const AccessIndex &a : d.accesses)
      for (const auto *dims : {&a.dims, &a.regDims})
        for (const DimIndex &di : *dims)
          if (std::optional<int64_t> n = di.dim.size.asInteger())
            machine_.dimSizes[di.dim.str()] = *n;
  }

  bool emit(std::ostream &os);
  // The plan passes' dumps (printPlan), the emitted lines and the barriers, when asked for.
  void dumpPlan(std::initializer_list<const char *> passes);
  std::string emittedText() const;
  std::string barrierText(const std::vector<BarrierPlacement> &barrier, const std::vector<int> &keep,
                          const std::vector<bool> &fence) const;
  // Dynamic shared memory the kernel's launch must provide (0: all static); set by emit.
  int64_t dynamicShared() const { return dynamicShared_; }
  // The TMA tensor maps the kernel takes after its ABI arguments (kernel_abi.h).
  const std::vector<TensorMapArg> &tensorMaps() const { return tensorMaps_; }
  int64_t producerThreads() const { return plan_.specialization.producerThreads; }
  int64_t persistentPerSM() const { return plan_.specialization.perSM; }

private:
  // ---- diagnostics ----
  // A construct the legalize pass (passes/legalize.h) refuses before code generation: reaching
  // it here is a wavec bug (`codegen-unsupported` says so).
  bool unsupported(const std::string &what, SourceRange loc) {
    return unsupported(DiagId::CodegenUnsupported, what, loc);
  }
  // unsupported() where a value is expected: "%error", which no caller uses once failed_ is set.
  std::string unsupportedValue(const std::string &what, SourceRange loc) {
    unsupported(what, loc);
    return "%error";
  }
  // A check only the emitter can make (it depends on layouts or loops it decides while
  // emitting), with its own id (docs/internals.md, "Legalize", lists them).
  bool unsupported(DiagId id, const std::string &what, SourceRange loc) {
    if (probing_) // asking whether something can be generated, not generating it
      return false;
    if (!failed_)
      diags_.report(id, loc, {what});
    failed_ = true;
    return false;
  }

  // The element type as the target stores it (bf16 as i16 on AMD: TargetLowering).
  std::string mlirType(ScalarType t) const { return lower_->storageType(t); }
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
    lds_.exclusive = false; // an exclusive write's first line only (barrier_insertion.h)
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
  // gather / scatter (docs/language.md section 14, "Data-dependent indices"): element by
  // element, the index register moved into the access's register layout (indexIn), each
  // element's index bound to the mapping's value symbol (bindIndexValue) before its address
  // and bounds are lowered.
  bool emitGather(const ir::Op &op);
  bool emitScatter(const ir::Op &op);
  void bindIndexValue(const ir::Op &op, const RegVal &index, const std::string &clone,
                      int64_t g);
  void unbindIndexValue(const ir::Op &op);
  void forgetIndexValue(const std::string &name);
  bool emitElementwise(const ir::Op &op);
  bool boundsMaskSelect(const ir::Op &op, const std::vector<const RegVal *> &ins,
                        const RegVal &out, const CloneAssign &a, std::string &r);
  std::optional<IndexExpr> laneIndexExtreme(const std::string &dim, const RegVal &out,
                                            const CloneAssign &a, bool largest);
  bool indexTests(const ir::Op *cond, const RegVal &out, const CloneAssign &a,
                  std::vector<std::string> &tests);
  bool emitMma(const ir::Op &op);
  bool emitIterate(const ir::Op &op);
  bool emitReduce(const ir::Op &op);
  // `if` (control.cpp): the condition, one branch's ops and yields, a result's shape.
  bool emitIf(const ir::Op &op);
  std::string ifCondition(const ir::Op &op);
  bool emitBranch(const ir::Op &op, size_t which, std::vector<RegVal> &yielded);
  // Atomics (atomic.cpp): one read-modify-write per element of global memory.
  bool emitAtomic(const ir::Op &op);
  std::string ownerCondition(const int64_t owners[3]);
  // One element's update at `ptr` (of type `ptrTy`); returns the old value.
  std::string atomicElement(const ir::Op &op, ScalarType t, const std::string &ptr,
                            const std::string &ptrTy, const std::string &val);

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
  // elementwiseClone of an op reading or producing opaque floats (fp8 as bytes, bf16 as i16 on
  // AMD; not a select, which moves their bits): operands widened to f32, the op computed there,
  // the result rounded back.
  std::string narrowClone(const ir::Op &op, const std::vector<std::string> &x, int64_t e);
  // A cast of `x` (`e` elements of `from`) to `to`, neither of them opaque.
  std::string castValue(const std::string &x, ScalarType from, ScalarType to, int64_t e);
  // fp8 conversions in integer arithmetic (exact, every target, elementwise.cpp): the bytes `x`
  // of fp8 type `t` as f32; an f32 or f64 value `x` rounded to fp8 type `t` as its bytes
  // (docs/language.md section 11: to nearest even, overflow to inf or NaN).
  std::string fp8ToF32(const std::string &x, ScalarType t, int64_t e);
  std::string floatToFp8(const std::string &x, ScalarType from, ScalarType t, int64_t e);
  // The same for bf16 held as i16 (AMD targets): widening is a shift; rounding from f32 is to
  // nearest even on the bits, from f64 through f32 rounded to odd (one rounding in all).
  std::string bf16ToF32(const std::string &x, int64_t e);
  std::string floatToBf16(const std::string &x, ScalarType from, int64_t e);
  // Either pair, by the opaque type `t` (fp8, or bf16 where it is i16).
  std::string narrowToF32(const std::string &x, ScalarType t, int64_t e);
  std::string floatToNarrow(const std::string &x, ScalarType from, ScalarType t, int64_t e);
  // elementwiseClone's binary and math ops (into the clone's result `r`; elementwise.cpp).
  std::string binaryClone(const ir::Op &op, const std::vector<std::string> &x, ScalarType inT,
                          int64_t e, const std::string &r);
  std::string mathClone(const ir::Op &op, const std::vector<std::string> &x, ScalarType inT,
                        int64_t e, const std::string &r);
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
  // reduceHeld's steps (reduce.cpp): the lane bits and wave axes that hold the rest of the
  // reduced dim; the in-thread and butterfly steps per result clone; the cross-wave step.
  bool reduceSpread(const ir::Op &op, const RegVal &x, const DimIndex &rowDi,
                    const std::vector<std::vector<int64_t>> &groups,
                    std::vector<int64_t> &laneMasks, std::vector<int> &waveAxes);
  std::vector<std::vector<std::string>>
  reduceInLanes(const RegVal &x, const std::string &dim, const Combiner &c, const DimIndex &rowDi,
                bool masked, const std::vector<std::vector<int64_t>> &groups,
                const std::vector<int64_t> &laneMasks, const std::vector<CloneAssign> &outClones);
  bool reduceAcrossWaves(const ir::Op &op, const Combiner &c, int64_t eo,
                         const std::vector<int> &waveAxes,
                         std::vector<std::vector<std::string>> &parts);
  // cumsum (scan.cpp): the plan of its levels (in the lane, butterfly, units, waves), checked
  // on the operand's layout; one unit's in-lane and butterfly steps; the cross-wave step.
  struct ScanPlan;
  bool emitCumsum(const ir::Op &op);
  bool planScan(const ir::Op &op, const RegVal &x, ScanPlan &p);
  bool planScanLanes(const ir::Op &op, ScanPlan &p, const std::vector<std::vector<int64_t>> &A,
                     const std::vector<std::vector<std::vector<int64_t>>> &other,
                     const std::vector<int64_t> &B, const std::vector<int64_t> &C);
  bool planScanUnits(
      const ir::Op &op, ScanPlan &p, const std::vector<std::vector<int64_t>> &A,
      const std::vector<int64_t> &B, const std::vector<int64_t> &C,
      const std::function<void(int64_t, size_t, const std::vector<int64_t> &, int64_t &,
                               int64_t &)> &block);
  std::string scanUnit(const Combiner &c, const ScanPlan &p, const std::vector<std::string> &upper,
                       const std::vector<std::string> &el, const std::vector<int64_t> &seg,
                       std::map<int64_t, std::string> &out);
  std::vector<std::vector<std::vector<std::string>>>
  scanAcrossWaves(const ir::Op &op, const Combiner &c, const ScanPlan &p,
                  const std::vector<std::vector<std::vector<std::string>>> &totals);
  // topk (scan.cpp): K rounds of max-and-remove per wave, then a merge of the waves' lists.
  bool emitTopK(const ir::Op &op);
  std::string topkBetter(ScalarType t, const std::string &av, const std::string &ai,
                         const std::string &bv, const std::string &bi);
  void topkAcrossWaves(const ir::Op &op, const ScanPlan &p, const Combiner &c,
                       std::vector<std::vector<std::string>> &vals,
                       std::vector<std::vector<std::string>> &idxs);
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
  // Set while a write re-emits a streamed value that its own access lays out otherwise (it
  // streams another dim, or none, and walks the value's streamed dim: DimIndex::walked): the
  // write's register-side layout by dim name, which the reads of the value take instead of
  // their own (prepareAccess), so no element changes lanes.
  std::optional<std::map<std::string, DimIndex>> relayout_;
  // The dims of a write's access that loops walk (DimIndex::walked), in the access's order.
  std::vector<const DimIndex *> walkedDims(const ir::Op &op);
  std::string streamTrips(const DimIndex &di, SourceRange loc); // loc: the consumer, for errors
  DimIndex streamChunk(const DimIndex &di, bool innermost) const;
  bool materialize(const ir::Value *v, std::vector<std::pair<const ir::Value *, RegVal>> &saved);
  void restore(std::vector<std::pair<const ir::Value *, RegVal>> &saved);
  const DimIndex *streamedDim(const ir::Op &op);
  bool deferStreamed(const ir::Op &op);
  std::map<const ir::Op *, int> scratch_; // cross-wave reductions -> their shared allocation
  bool probing_ = false; // unsupported() reports nothing (planScratchTiles)
  std::map<const ir::Op *, int> scratch2_; // a cross-wave topk's second (index) allocation
  // One emission of an iterate with carried values of the shapes `carried`; fills `yielded`.
  bool emitLoopOnce(const ir::Op &op, const std::vector<RegVal> &carried,
                    std::vector<RegVal> &yielded);
  // Its steps, in order, over the state they share (iterate.cpp).
  struct LoopState;
  bool loopPrologue(LoopState &s);
  bool scoreAheadPrologue(LoopState &s);                 // LoopSchedule::scoreAhead
  bool scoreAheadIssue(LoopState &s, const sym::IndexExpr &buffer, int tag, bool wait,
                       RegVal &out);
  bool emitWgmmaKeeping(const ir::Op &mma, int keep, int stages);
  bool scoreAheadBefore(LoopState &s, const ir::Op &o, bool &skip);
  void loopTmaTop(LoopState &s, int wgAhead); // TMA: a later tile's copy, this tile's wait
  void loopOpen(LoopState &s, const std::vector<RegVal> &carried);
  void loopBufferIndices(LoopState &s);
  bool loopBody(LoopState &s);
  void loopRelease(LoopState &s, int keep); // warp-specialized: the consumers release a buffer
  void loopDmaAhead(LoopState &s); // LDS DMA: tile i + 1 behind the reads of tile i
  void loopReleaseLast(LoopState &s); // persistent tiles: the loop's last tile's buffer
  bool loopClose(LoopState &s, const std::vector<RegVal> &carried, std::vector<RegVal> &yielded);
  void loopStores(LoopState &s, size_t from, bool interleave);
  // The carried-shapes pass (carried_shapes.cpp): shapes of values without emitting them.
  using ShapeMap = std::map<const ir::Value *, RegVal>;
  const RegVal *shapeIn(const ShapeMap &shapes, const ir::Value *v) const;
  bool readShape(const ir::Op &op, RegVal &out) const;
  bool streamedReadShape(const ir::Op &op, RegVal &out) const;
  bool streamedOpShape(const ir::Op &op, const std::vector<const RegVal *> &ins,
                       RegVal &out) const;
  bool atomicShape(const ir::Op &op, const RegVal *value, RegVal &out) const;
  static RegVal streamedPartials(const RegVal &x);
  // The scratch tiles of cross-wave reductions, cumsums and topks and the tiles of `allocate`,
  // sized before emission from shapes alone (reduction_scratch.cpp) and placed by the
  // shared-memory plan after it.
  void planScratchTiles();
  // Rebinds $WG0/$WG1 to the plan's workgroup order (KernelPlan::raster), if it has one.
  void remapWorkgroups();
  // Persistent tiles (WarpSpecialization::perSM; mlir_emitter.cpp). persistentCount, at the
  // kernel's top level: the output tiles (the distribution's grid axes 0 x 1) and the launch's
  // grid_dim.x. persistentOpen: `scf.for` over tiles t = block_id.x, t + grid_dim.x, ... below
  // the count, $WG0/$WG1 bound to tile t's ids in the raster order (tileIds), and
  // persistBase_ = the ring's tiles this workgroup consumed before (its tiles so far times the
  // specialized loop's trip count), from which the loop's buffers and phases continue;
  // `marked` puts LoopBegin/LoopEnd items around it for the barrier analysis (the consumers).
  // persistentClose ends it and restores the symbols.
  void persistentCount();
  void persistentOpen(bool marked);
  void persistentClose(bool marked);
  void tileIds(const std::string &lin);
  // The warp-specialized loop's schedule and loop info (null when the plan has none).
  std::pair<const LoopSchedule *, const LoopInfo *> specializedLoop() const;
  std::string persistTiles_, persistStride_, persistBase_;
  struct PersistSaved {
    std::string wg0, wg1, indent;
    std::map<std::string, std::string> cache;
  };
  std::vector<PersistSaved> persistSaved_;
  void scratchIn(const std::vector<std::unique_ptr<ir::Op>> &ops, ShapeMap &shapes);
  void planScratch(const ir::Op &op, const ShapeMap &shapes);
  void planScanScratch(const ir::Op &op, const RegVal &x);
  void planAllocate(const ir::Op &op);
  // Row-major strides of al.tile (innermost dim last, unpadded) and al.bytes for al.dtype.
  static void rowMajorTile(SharedTile &al);
  void allocatesIn(const std::vector<std::unique_ptr<ir::Op>> &ops);
  int64_t scratchSlots(int64_t nc, int64_t eo) const;
  int64_t wavesPerWorkgroup() const {
    return int64_t(d_.wavesPerBlock[0]) * d_.wavesPerBlock[1] * d_.wavesPerBlock[2];
  }
  bool refuseScan(const ir::Op &op, const std::string &why);
  int64_t topkRows(const ScanPlan &p, IndexExpr *row) const;
  // The scratch tile of op in `tiles` (scratch_, scratch2_), added with `slots` elements of t
  // the first time; its allocation index.
  int scratchTile(std::map<const ir::Op *, int> &tiles, const ir::Op &op, ScalarType t,
                  int64_t slots);
  int plannedScratch(const std::map<const ir::Op *, int> &tiles, const ir::Op &op, ScalarType t,
                     int64_t slots, DiagId id);
  // Moves between layouts through shared memory (relayout.cpp): planned before emission for
  // the conversions elementwise ops and writes make that shuffles cannot, looked up by
  // convertTo.
  struct PlannedRelayout {
    SharedRelayout plan;
    int alloc = -1;
    // > 0: the move goes in pieces of this many cells of the tile (row-major over its extent),
    // one after the other through one tile of that size (splitRelayouts); pieceCell[k] is a
    // cell of piece k that is stored (relative to the piece; -1: piece k stores nothing).
    int64_t piece = 0;
    std::vector<int64_t> pieceCell;
  };
  // Where one element of a layout move sits: its cell of the whole tile and, when it may fall
  // outside the tile, the condition that it does not.
  struct RelayoutPlace {
    IndexExpr cell;
    std::string inside;
  };
  std::map<std::string, PlannedRelayout> relayouts_;
  std::map<std::string, std::string> relayoutFailures_; // key -> why the shared move failed
  std::string relayoutKey(const RegVal &from, const RegVal &to) const;
  void planRelayoutTile(const ir::Op &op, const RegVal &from, const RegVal &to);
  void planRelayouts(const ir::Op &op, const ShapeMap &shapes);
  bool writeShape(const ir::Op &op, RegVal &out) const;
  bool relayoutShared(const RegVal &v, RegVal &out, const PlannedRelayout &r);
  void splitRelayouts();
  RelayoutPlace relayoutPlace(const SharedRelayout &p, bool dst, const CloneAssign &a,
                              int64_t g);
  std::string relayoutPiece(const IndexExpr &cell, const PlannedRelayout &r, int64_t k,
                            bool &never);
  std::string relayoutPtr(int alloc, const std::string &off, ScalarType st);
  void relayoutStores(const RegVal &v, const PlannedRelayout &r, int64_t k);
  void relayoutLoads(RegVal &out, const PlannedRelayout &r, int64_t k,
                     std::vector<std::vector<std::string>> &elems, std::string &zero);
  void relayoutStore(std::string x, const std::string &ptr, ScalarType st, bool exchange);
  bool ifShape(const ir::Op &op, ShapeMap &shapes) const;
  bool opShape(const ir::Op &op, ShapeMap &shapes) const;
  bool predictCarried(const ir::Op &op, std::vector<RegVal> &carried) const;
  static void widenCarried(RegVal &c, const RegVal &y);
  void dumpCarried(const ir::Op &op, const std::vector<RegVal> &carried, bool predicted);
  std::string carriedText_; // the dump, one paragraph per loop in emission order
  static const RegVal *widestLaidOut(const std::vector<const RegVal *> &ins);
  bool unionLayout(const std::vector<const RegVal *> &ins, const RegVal &like, ScalarType t,
                   RegVal &out) const;
  bool reducedShape(const ir::Op &op, const RegVal &x, RegVal &out,
                    std::vector<std::vector<int64_t>> &groups) const;
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
  int64_t expansionCount(const std::string &cloneSym) const {
    for (const auto &ex : d_.expansion)
      if ("$i_" + ex.dim.str() == cloneSym)
        return std::max<int64_t>(ex.count, 1);
    return 1;
  }
  // ---- shared memory (the tiles and promotions of plan_: passes/kernel_plan.h) ----
  using LdsAlloc = SharedTile;
  // The SSA name of tile i's base pointer (defined in the kernel's head).
  static std::string ldsBase(int i) { return "%lds_" + std::to_string(i); }
  // The AMD LDS-DMA copy of a promoted tile (shared_memory.cpp; LoopSchedule::ldsDma): copy
  // `copy`'s global side, one dword (Promotion::dmaCopies) per lane, at the element the tile's
  // layout stores at the lane's LDS dword; and the copy itself.
  void ldsDmaCopy(const Promotion &p);
  // PlanQueries, for the plan passes (shared_memory.cpp).
  bool tileAccess(const ir::Op &read, TileAccess &out) override;
  bool asyncCopyable(const Promotion &p) override;
  int64_t ldsDmaCopies(const Promotion &p) override;
  bool refuse(DiagId id, const std::string &what, SourceRange loc) override {
    return unsupported(id, what, loc);
  }
  bool refuseSharedMemory(int64_t bytes) override {
    if (!failed_)
      diags_.report(DiagId::AllocateTooLarge, k_.loc,
                    {k_.name, std::to_string(bytes), target_.name,
                     std::to_string(target_.ldsOptInBytes)});
    failed_ = true;
    return false;
  }
  // The buffer that LDS accesses emitted now touch: (stage index expr, stage for the analysis).
  IndexExpr stageIndex_ = IndexExpr(0);
  int stageTag_ = -1;
  // Called by emitMma after the instructions of each step kk (of count) along clone symbol
  // `kSym`: where a pipelined loop puts the reads of its next tile (emitLoopOnce).
  std::function<void(const std::string &kSym, int64_t kk, int64_t count)> afterKStep_;

  void cpAsyncCopy(const Promotion &p);
  // ---- TMA copies of a loop's staged tiles (tensor_copy.cpp; LoopSchedule::Copy::Tma) ----
  bool tensorCopyable(const Promotion &p) override;
  // After the plan: one tensor-map parameter (!llvm.ptr<1>, made by `arg`) per staged read of
  // each TMA loop, after the ABI's (kernel_abi.h, TensorMapArg).
  void tensorMapArguments(const std::function<std::string(const std::string &)> &arg);
  // `stages` transaction barriers of a new module global; the SSA pointer to the first.
  std::string tmaBarriers(int stages);
  // The barrier `index` (an index SSA value) of the array at `bars`.
  std::string tmaBarrier(const std::string &bars, const std::string &index);
  std::string firstThread(); // thread 0 of the workgroup (an i1)
  // Initializes the barriers (one thread), then a workgroup barrier.
  void tmaInit(const std::string &bars, int stages);
  // Thread 0, when tile `tile` (an index expression; `ivSym` in the tiles' origins stands for
  // it) is below `trips`: the expected bytes on barrier `buffer` and one box per staged tile
  // into buffer `buffer` (an index expression), for the barrier analysis tile `tag`.
  void tmaIssue(const std::vector<const ir::Op *> &staged, const IndexExpr &tile,
                const std::string &ivSym, const IndexExpr &trips, const IndexExpr &buffer,
                int tag, const std::string &bars);
  // The expected bytes on barrier `buffer` of `bars` and one box per staged tile at tile
  // `tile` into buffer `buffer` (tmaIssue's body, and the producer's).
  void tmaCopies(const std::vector<const ir::Op *> &staged, const IndexExpr &tile,
                 const std::string &ivSym, const IndexExpr &buffer, const std::string &bars);
  // Warp specialization (KernelPlan::specialization), at the kernel's start: the full and empty
  // barriers of the specialized loop, and the producer warpgroup's branch (its first thread
  // copies every tile of the loop into the ring, then the warpgroup exits); the consumers go on.
  bool warpSpecializedProducer();
  void producerCopies(const LoopSchedule &s, const LoopInfo &li);
  std::string wsFull_, wsEmpty_; // the specialized loop's barriers
  // Ping-pong (WarpSpecialization::pingpong, tensor_copy.cpp): each consumer warpgroup waits
  // for its turn (named barrier 2 + k) or, `arrive`, hands it to the next warpgroup.
  void pingpongTurn(bool arrive);
  // Each f32 of value `v` (`elems` per clone) re-made behind TargetLowering::registerFence.
  std::string fenceRegisters(const std::string &v, int64_t elems);
  // The emitter's items of the ping-pong loop's body (the barrier placement may put no
  // workgroup barrier there, mlir_emitter.cpp); -1: none.
  long pingpongFirst_ = -1, pingpongLast_ = -1;
  // Every thread: waits for tile `iv` (an index SSA value) in buffer `stage` (its barrier).
  void tmaWait(const std::string &bars, const std::string &stage, const std::string &iv,
               int stages);
  std::map<const ir::Op *, std::string> tensorMapArgs_; // staged read -> its map
  std::string epilogueMap_; // the output's tensor-map parameter
  std::vector<TensorMapArg> tensorMaps_;                // in argument order
  std::vector<std::string> moduleGlobals_;              // lines before the kernel's gpu.func
  KernelPlan plan_;
  std::map<const ir::Op *, Promotion> &promotions_ = plan_.promotions;
  std::vector<LdsAlloc> &allocs_ = plan_.tiles;
  void liveSpans(); // each tile's SharedTile::liveFirst/liveLast from the emitted items
  std::set<const ir::Op *> staged_; // promoted reads whose tile the enclosing loop staged
  int64_t dynamicShared_ = 0;
  bool isPromoted(const ir::Op &op) const { return isPromotedRead(op); }
  std::vector<std::string> coopLoad(const Promotion &p);
  void coopStore(const Promotion &p, const std::vector<std::string> &regs);
  // The read's value from its shared tile (all clones, or those `keep` accepts) into `out`.
  using CloneFilter = std::function<bool(const CloneAssign &)>;
  bool ldsRead(const ir::Op &op, const Promotion &p, RegVal &out, const CloneFilter &keep = {});
  // ---- wgmma (sm_90a) ----
  // A wgmma operand's value: one matrix descriptor per clone of the read (ldsRead's form for
  // a Promotion::wgmma tile).
  bool wgmmaDescriptors(const ir::Op &op, const Promotion &p, RegVal &v, const CloneFilter &keep);
  bool emitWgmma(const ir::Op &op);
  // emitWgmma's pieces (mma.cpp): accumulators to and from the instruction's struct, the A
  // fragments of a register operand, the register-A instruction (inline PTX).
  std::string wgmmaPack(const std::string &v, int64_t n);
  std::string wgmmaUnpack(const std::string &st, int64_t n);
  const std::vector<std::string> &
  wgmmaFragments(const RegVal &a, const CloneAssign &ab, int st, int steps, ScalarType in,
                 const MmaKind &k, std::map<std::string, std::vector<std::string>> &cache);
  int wgmmaSteps(const ir::Op &mma) const;
  // Inside a loop body: how many wgmma groups may stay in flight after an mma's commit (1 with a
  // pipeline of 3 or more buffers: the reads of tile i - 1 retire in iteration i), the loop's
  // buffer count, and whether the loop left groups in flight (waited for after it).
  int wgmmaKeep_ = 0;
  int wgmmaStages_ = 0;
  bool wgmmaInFlight_ = false;
  bool wgmmaNoWait_ = false; // emitWgmma issues and commits only (LoopSchedule::scoreAhead)
  bool wgmmaArrive_ = false; // emitWgmma hands the ping-pong turn on after its commit
  IndexExpr laneZero(const IndexExpr &e);
  const AccessIndex *accessOf(const ir::Op &op) { return wave::accessOf(d_, op); }
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
    // A mapped access (docs/language.md section 3): `dims` are the memory side (the mapping's
    // expressions; `masked`/`maskedBelow` where they may leave the tensor), `iter` the register
    // dims whose iteration bound needs a check (index < the register dim's size).
    bool mapped = false;
    std::vector<DimIndex> iter;
    std::vector<DimIndex> reg; // a mapped access: the register side (the value's layout)
    bool mayBeEmpty = false;   // a global access whose tensor may have no elements
    int64_t xorBytes = 0;           // see LdsAlloc
    int64_t blockBytes = 0;         // see LdsAlloc
    int64_t xorUnit = 0;            // see LdsAlloc (bytes)
    int alloc = -1;                 // an access to an `allocate`d tile: its LdsAlloc
  };
  // The epilogue through shared memory (KernelPlan::epilogue, tensor_copy.cpp): the write's
  // value `v` (in the write's layout, clones over `syms`) stored into the ring's buffers in the
  // TMA boxes' swizzled layout, then one consumer thread's TMA stores of the boxes.
  bool stagedStore(const ir::Op &op, const Access &acc, const RegVal &v,
                   const std::set<std::string> &syms);
  // `allocate` (access.cpp): each allocation's tile in allocs_ (planAllocate), and the origin of
  // the workgroup's tile that its first access found (passes/allocate_access.cpp); an access to
  // it addresses the tile at its index minus that origin (rebaseAllocated).
  std::map<const ir::Op *, int> allocated_;
  std::map<const ir::Op *, AllocatePlace> allocPlaces_;
  bool emitAllocate(const ir::Op &op);
  bool indexIn(const ir::Op &op, const Access &acc, RegVal &out);
  bool rebaseAllocated(const ir::Op &op, const ir::Value *mem, Access &acc);
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
  Access dmaAccess(const Promotion &p, int64_t copy);
  IndexExpr dmaOrigin(const Access &acc, const Promotion &p);
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
  // when d sets the grid of a workgroup axis (a size of 0 launches nothing) unless that axis
  // runs a workgroup for an empty dim too (Distribution::gridCoversEmpty).
  bool mayBeEmptyDim(const ir::Dim &d) const {
    const auto &covers = d_.gridCoversEmpty;
    for (const auto &w : k_.workgroups)
      if (w.primary && w.dim == d && std::find(covers.begin(), covers.end(), d) == covers.end())
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

  // ---- AMD buffer instructions for checked global accesses (docs/hardware.md 2.4) ----
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
  // ---- target lowering (codegen/target_lowering.h): the vendor's MMA instructions, math
  // intrinsics, storage types, buffer-access choice and shuffles, writing through host_ ----
  struct Host final : LoweringHost {
    KernelEmitter &e;
    explicit Host(KernelEmitter &em) : e(em) {}
    std::string fresh() override { return e.fresh(); }
    void line(const std::string &s) override { e.line(s); }
    bool unsupported(const std::string &what, SourceRange loc) override {
      return e.unsupported(what, loc);
    }
    std::string elementType(ScalarType t) const override { return codegen::detail::mlirType(t); }
  };
  Host host_{*this};
  std::unique_ptr<TargetLowering> lower_ = TargetLowering::create(target_, host_);
  DiagnosticEngine &diags_;
  sym::Facts facts_; // the distribution's, plus the emitter's own symbols
  bool insertBarriers_ = true;
  PassDumps *dumps_ = nullptr;
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

} // namespace wave::codegen::detail
