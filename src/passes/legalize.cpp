// The legalize pass: legalize.h. Each check names the emitter code whose refusal it makes
// early; the emitter keeps the same test as a backstop (`codegen-unsupported`).
#include "passes/legalize.h"
#include "passes/kernel_plan.h"

#include <algorithm>
#include <set>
#include <sstream>

namespace wave {

namespace {

std::string tn(ScalarType t) { return scalarTypeName(t); }


std::string where(const ir::Op &op) {
  if (!op.loc.valid())
    return "";
  return " (" + std::to_string(op.loc.begin.line) + ":" + std::to_string(op.loc.begin.col) + ")";
}

std::string opName(const ir::Op &op) {
  switch (op.kind) {
  case ir::OpKind::Binary: return std::string("binary ") + ir::binaryKindName(op.binary);
  case ir::OpKind::Math: return std::string("math ") + ir::mathKindName(op.math);
  case ir::OpKind::Unary: return op.unary == ir::UnaryKind::Neg ? "negation" : "bitwise not";
  case ir::OpKind::Cast: return std::string("cast to ") + scalarTypeName(op.results[0]->type.dtype);
  default: return opKindName(op.kind);
  }
}

// The plan passes' questions answered from the distribution alone: the register side of a
// read's access as codegen/emitter/shared_memory.cpp (tileAccess) prepares it; no cp.async
// (it changes no tile); refusals kept for the caller to report at the op.
class PlanRefusals final : public PlanQueries {
public:
  explicit PlanRefusals(const Distribution &d) : d_(d) {}
  DiagId id = DiagId::UnsupportedPromotionTile;
  std::string why; // empty: an access the emitter itself refuses (left to its own checks)

  bool tileAccess(const ir::Op &read, TileAccess &out) override {
    const ir::Value *mem = read.operands[0];
    const AccessIndex *ai = accessOf(d_, read);
    if (!ai || ai->dims.size() != mem->type.shape.size())
      return false;
    std::vector<DimIndex> dims;
    if (read.mapping) {
      dims = ai->regDims;
    } else {
      for (const auto &memDim : mem->type.shape) {
        const DimIndex *di = dimIndexOf(*ai, memDim);
        if (!di)
          return false;
        dims.push_back(*di);
      }
    }
    for (const auto &di : dims) {
      if (di.chunk > 0 || (di.start.dependsOn("$g") && di.elements <= 0))
        return false; // streamed or dynamic: the emitter's own checks
      out.dims.push_back({di.dim, di.start});
    }
    out.elems = laneVector(dims).elems;
    out.dtype = mem->type.dtype;
    return !out.dims.empty();
  }
  bool asyncCopyable(const Promotion &) override { return false; }
  int64_t ldsDmaCopies(const Promotion &) override { return 0; }
  bool tensorCopyable(const Promotion &) override { return false; }
  bool refuse(DiagId kind, const std::string &what, SourceRange) override {
    id = kind;
    why = what;
    return false;
  }
  bool refuseSharedMemory(int64_t) override { return false; }

private:
  const Distribution &d_;
};

// One refusal or decision per op, for the diagnostics and for printLegalize.
struct Legalizer {
  Legalizer(const ir::Kernel &kernel, const Distribution &dist, const TargetInfo &target,
            DiagnosticEngine *engine)
      : k(kernel), d(dist), t(target), diags(engine) {}
  const ir::Kernel &k;
  const Distribution &d;
  const TargetInfo &t;
  DiagnosticEngine *diags; // null: only describe
  std::ostringstream log;
  bool ok = true;

  void refuse(const ir::Op *op, SourceRange loc, DiagId id, std::vector<std::string> args,
              const std::string &what) {
    ok = false;
    if (diags)
      diags->report(id, loc, std::move(args));
    log << "    refused: " << what << " [" << diagInfo(id).id << "]\n";
    (void)op;
  }
  void note(const std::string &s) { log << "    " << s << "\n"; }

  void params() {
    log << "  parameters:\n";
    for (const auto &p : k.params) {
      const ir::Value *v = p.value;
      if (!v)
        continue;
      if (v->type.isMemory()) {
        log << "    " << p.name << ": tensor of " << tn(v->type.dtype)
            << (v->type.space == AddressSpace::Shared ? ", reads promoted to shared memory" : "")
            << "\n";
      } else if (v->type.isScalar()) {
        log << "    " << p.name << ": scalar " << tn(v->type.dtype) << "\n";
      } else {
        // mlir_emitter.cpp, emit: a register parameter has no ABI.
        log << "    " << p.name << ":\n";
        ok = false;
        if (diags)
          diags->report(DiagId::UnsupportedOperation, p.loc, {"a register parameter"});
        log << "    refused: a register parameter [unsupported-operation]\n";
      }
    }
  }

  // control.cpp, emitIf: a branch is one scf.if region on a condition every thread of the
  // workgroup shares, so its shared-memory accesses and barriers are ordered by barrier
  // insertion through both branches (barrier_insertion.h); what a branch still may not hold:
  // loops, products (their operand staging and pipelines are planned per loop) and what must
  // be placed before every branch (promoted reads, allocations).
  int ifDepth = 0;
  bool inBranch(const ir::Op &op) {
    const char *what = op.kind == ir::OpKind::Iterate ? "an iterate inside an 'if'"
                       : op.kind == ir::OpKind::Mma   ? "an mma inside an 'if'"
                       : op.kind == ir::OpKind::Read && isPromotedRead(op)
                           ? "a read of a `shared` parameter inside an 'if' (read it before)"
                       : op.kind == ir::OpKind::Allocate ? "an allocate inside an 'if'"
                                                         : nullptr;
    if (what)
      refuse(&op, op.loc, DiagId::UnsupportedIf, {what}, what);
    return !what;
  }

  // allocate (passes/allocate_access.cpp; the emitter's access.cpp, prepareAccess): one tile per
  // workgroup, placed before any loop or branch; every access lands inside its tile, at the
  // same origin as the allocation's other accesses.
  int loopDepth = 0;
  std::map<const ir::Op *, AllocatePlace> allocPlaces;
  void allocate(const ir::Op &op) {
    std::string why;
    if (loopDepth) {
      refuse(&op, op.loc, DiagId::UnsupportedAllocate,
             {"an allocate inside an 'iterate' (allocate the tile before the loop)"},
             "allocate in a loop");
      return;
    }
    if (!allocateShape(k, op, why)) {
      refuse(&op, op.loc, DiagId::UnsupportedAllocate, {why}, why);
      return;
    }
    std::string tile;
    for (size_t i = 0; i < op.tile.size(); ++i)
      tile += (i ? " x " : "") + std::to_string(op.tile[i]);
    note("shared-memory tile [" + tile + "] of " + tn(op.results[0]->type.dtype) +
         " per workgroup");
  }
  bool allocatedAccess(const ir::Op &op, const ir::Value *mem) {
    AllocatePlace place;
    std::string why;
    if (!allocateAccess(k, d, op, mem, place, why)) {
      refuse(&op, op.loc, DiagId::UnsupportedAllocate, {why}, why);
      return false;
    }
    auto [it, first] = allocPlaces.emplace(mem->def, place);
    if (!samePlace(it->second, place)) {
      const std::string w =
          it->second.loop != place.loop
              ? "an access to an allocated tile outside the iterate of its first access along "
                "the dim that iterate walks (each trip reuses the tile: keep all its accesses "
                "in that loop)"
              : "an access to an allocated tile whose workgroup part differs from that of the "
                "tile's first access (another layout of its dims: use the same workgroup tiles)";
      refuse(&op, op.loc, DiagId::UnsupportedAllocate, {w}, w);
      return false;
    }
    std::string o;
    for (size_t i = 0; i < place.origin.size(); ++i)
      o += (i ? ", " : "") + place.origin[i].str();
    note("in the workgroup's shared-memory tile at origin (" + o + ")" +
         (place.loop ? ", reused by each trip of the loop over " + place.loop->dims[0].str()
                     : std::string()));
    return true;
  }

  // Ops whose value is computed from their operands' elements where they sit (no code of their
  // own, or element-wise: elementwise.cpp, mlir_emitter.cpp).
  static bool elementwiseLike(ir::OpKind k) {
    return deferredElementwise(k) || k == ir::OpKind::ApplyExpr;
  }
  // The element-wise ops a streamed row passes through, computed again where used.
  static bool deferredElementwise(ir::OpKind k) {
    switch (k) {
    case ir::OpKind::Unary:
    case ir::OpKind::Binary:
    case ir::OpKind::Math:
    case ir::OpKind::Select:
    case ir::OpKind::Cast:
    case ir::OpKind::Broadcast:
    case ir::OpKind::Permute: return true;
    default: return false;
    }
  }
  // Whether `v` may be a streamed row (stream.cpp: a read of a dynamic or long row, and the
  // element-wise ops on it, are emitted by each consumer's loop).
  bool fromStreamedRow(const ir::Value *v, int depth = 0) const {
    const ir::Op *def = v->def;
    if (!def || depth > 64)
      return depth > 64;
    if (def->kind == ir::OpKind::Read) {
      const AccessIndex *ai = accessOf(d, *def);
      if (!ai)
        return false;
      for (const auto *dims : {&ai->dims, &ai->regDims})
        for (const auto &di : *dims)
          if (di.chunk > 0 || di.elements <= 0)
            return true;
      return false;
    }
    if (!elementwiseLike(def->kind))
      return false;
    for (const ir::Value *o : def->operands)
      if (fromStreamedRow(o, depth + 1))
        return true;
    return false;
  }
  // The dims the streamed reads feeding `v` through deferred ops stream along (stream.cpp,
  // deferStreamed: the element-wise ops, broadcasts and permutes of a streamed row; access.cpp:
  // a read's first dim with chunks).
  void streamedDims(const ir::Value *v, std::set<std::string> &dims, int depth = 0) const {
    const ir::Op *def = v->def;
    if (!def || depth > 64)
      return;
    if (def->kind == ir::OpKind::Read) {
      if (ir::indexOperand(*def) || isPromotedRead(*def)) // gathers, promoted reads: held
        return;
      if (const AccessIndex *ai = accessOf(d, *def))
        for (const auto &di : def->mapping ? ai->regDims : ai->dims)
          if (di.chunk > 0) {
            dims.insert(di.dim.str());
            break;
          }
      return;
    }
    if (elementwiseLike(def->kind) && def->kind != ir::OpKind::ApplyExpr)
      for (const ir::Value *o : def->operands)
        streamedDims(o, dims, depth + 1);
  }
  // stream.cpp: the operands of a deferred op stream along one dim, and a write of a streamed
  // row loops over the dim its own access streams, which must be the row's, unless the write
  // walks the row's dims by loops (DimIndex::walked: a transposing copy whose two dims are both
  // dynamic and unsplit streams the read along one, the write along the other) and re-reads its
  // value in its own layout; then a deferred op's operands may stream along different dims too,
  // when only such writes use it.
  void streamedRows(const ir::Op &op) {
    std::set<std::string> dims;
    const bool write = op.kind == ir::OpKind::Write;
    for (size_t i = 0; i < (write ? 1 : op.operands.size()); ++i)
      streamedDims(op.operands[i], dims);
    if (dims.empty())
      return;
    std::string why;
    if (write && !writesStreamed(op, dims, why))
      refuse(&op, op.loc, DiagId::UnsupportedStreamedRow,
             {why.empty() ? std::string("a write of a streamed row in another layout") : why},
             "a streamed row written across");
    else if (!write && dims.size() > 1 && !onlyWritesAcross(op.results[0]))
      refuse(&op, op.loc, DiagId::UnsupportedStreamedRow,
             {"operands streamed along different dims"}, "streamed rows along different dims");
  }
  // Whether write `w` can store a value whose reads stream along `dims` (stream.cpp,
  // emitStreamedWrite): it streams that one dim, or it walks each of them it does not stream
  // and re-reads the value in its own layout.
  bool writesStreamed(const ir::Op &w, const std::set<std::string> &dims, std::string &why) const {
    std::string own;
    if (const AccessIndex *ai = accessOf(d, w))
      for (const auto &di : w.mapping ? ai->regDims : ai->dims)
        if (di.chunk > 0) {
          own = di.dim.str();
          break;
        }
    if (dims.size() == 1 && *dims.begin() == own)
      return true;
    for (const auto &x : dims)
      if (x != own && !walksDim(w, x))
        return false;
    return rereadable(w.operands[0], why);
  }
  // Whether every use of `v`, through the deferred ops, is the value of a write that can store
  // it (writesStreamed).
  bool onlyWritesAcross(const ir::Value *v0) const {
    return eachDeferredUse(v0, [&](const ir::Op &u, const ir::Value *v) {
      std::set<std::string> dims;
      std::string why;
      if (u.kind != ir::OpKind::Write)
        return false;
      streamedDims(u.operands[0], dims);
      return u.operands[0] == v && !ir::indexOperand(u) && writesStreamed(u, dims, why);
    });
  }
  // Walks the uses of `v0` through the deferred element-wise ops (unary, binary, math, select,
  // cast, broadcast, permute: computed again where used) and judges every other user `u` of a
  // value `v` on the way with `use(u, v)`; false at the first use it refuses.
  template <class Use> static bool eachDeferredUse(const ir::Value *v0, Use use) {
    std::vector<const ir::Value *> work{v0};
    std::set<const ir::Value *> seen;
    while (!work.empty()) {
      const ir::Value *v = work.back();
      work.pop_back();
      if (!seen.insert(v).second)
        continue;
      for (const ir::Op *u : v->users) {
        if (deferredElementwise(u->kind))
          work.push_back(u->results[0]);
        else if (!use(*u, v))
          return false;
      }
    }
    return true;
  }
  // Whether the access of `op` walks dim `dim` by a loop (DimIndex::walked).
  bool walksDim(const ir::Op &op, const std::string &dim) const {
    if (const AccessIndex *ai = accessOf(d, op))
      for (const auto &di : op.mapping ? ai->regDims : ai->dims)
        if (di.walked && di.dim.str() == dim)
          return true;
    return false;
  }
  // stream.cpp, emitStreamedWrite: a write that streams another dim than its value (or none)
  // re-emits the value in its own layout, re-reading its streamed reads there (access.cpp,
  // prepareAccess under relayout_). The value must be made of such reads (unmapped, not
  // gathers, promoted or allocated), constants, scalars, self_index and the deferred
  // element-wise ops, broadcasts and permutes on them: a value held in registers would have to
  // move to the write's layout inside the loop.
  bool rereadable(const ir::Value *v, std::string &why, int depth = 0) const {
    const ir::Op *def = v->def;
    if (depth > 64) {
      why = "a streamed row written across through too many ops";
      return false;
    }
    if (!def || v->type.shape.empty())
      return true; // a scalar: the same in every lane
    switch (def->kind) {
    case ir::OpKind::Constant:
    case ir::OpKind::SelfIndex: return true;
    case ir::OpKind::Read:
      if (def->mapping || ir::indexOperand(*def) || isPromotedRead(*def) ||
          isAllocated(def->operands[0]) || !fromStreamedRow(v)) {
        why = "a streamed row written across, with a read that cannot be re-read in the write's "
              "layout (mapped, a gather, promoted, allocated or held in registers)";
        return false;
      }
      return true;
    default:
      if (deferredElementwise(def->kind)) {
        for (const ir::Value *o : def->operands)
          if (!rereadable(o, why, depth + 1))
            return false;
        return true;
      }
      why = std::string("a streamed row written across, combined with the result of ") +
            ir::opKindName(def->kind) + " (held in registers)";
      return false;
    }
  }
  // An access that walks a dim by a loop (DimIndex::walked: a dynamic unsplit dim that another
  // access streams): a write loops over it (stream.cpp, emitStreamedWrite); a streamed read is
  // re-emitted by the loops of the writes it feeds. Anything else would see one element of it.
  void walkedAccess(const ir::Op &op) {
    const AccessIndex *ai = accessOf(d, op);
    if (!ai)
      return;
    std::string dim;
    for (const auto *dims : {&ai->dims, &ai->regDims})
      for (const auto &di : *dims)
        if (di.walked && dim.empty())
          dim = di.dim.str();
    if (dim.empty())
      return;
    auto no = [&](const ir::Op &at, const std::string &what) {
      refuse(&at, at.loc, DiagId::UnsupportedStreamedRow,
             {what + " that walks " + dim + " in a loop (the lanes of another access run along " +
              dim + ", a dynamic dim no constraint splits); only a write can: split " + dim +
              " with a workgroup constraint"},
             "a walked row");
    };
    if (op.kind == ir::OpKind::Write) { // gathers and scatters: dynamicAccess
      if (isAllocated(op.operands[1]))
        no(op, "a write to an allocated tile");
      return;
    }
    if (op.kind != ir::OpKind::Read) {
      no(op, std::string("an ") + ir::opKindName(op.kind));
      return;
    }
    if (isPromotedRead(op) || isAllocated(op.operands[0]) || !fromStreamedRow(op.results[0])) {
      no(op, "a read held in registers");
      return;
    }
    // Every use, through the deferred ops, must be the value of a write.
    eachDeferredUse(op.results[0], [&](const ir::Op &u, const ir::Value *v) {
      if (u.kind == ir::OpKind::Write && u.operands[0] == v && !ir::indexOperand(u))
        return true;
      no(u, std::string("a streamed row, used by ") + ir::opKindName(u.kind) + ",");
      return false;
    });
  }
  // Whether `v` may be computed from thread indices only (layout.cpp, computeDeferred: a
  // self_index, an apply_expr, element-wise ops on those), so that it has no layout of its own.
  static bool mayBeDeferred(const ir::Value *v, int depth = 0) {
    const ir::Op *def = v->def;
    if (!def || depth > 64)
      return depth > 64;
    if (def->kind == ir::OpKind::SelfIndex || def->kind == ir::OpKind::ApplyExpr)
      return true;
    if (!elementwiseLike(def->kind))
      return false;
    for (const ir::Value *o : def->operands)
      if (mayBeDeferred(o, depth + 1))
        return true;
    return false;
  }
  // Whether `v` surely has a thread layout: a read of a tensor with dims, an mma, or an
  // element-wise op on one (elementwise.cpp: the result takes its operands' layout).
  static bool laidOut(const ir::Value *v, int depth = 0) {
    const ir::Op *def = v->def;
    if (!def || depth > 64)
      return false;
    if (def->kind == ir::OpKind::Mma ||
        (def->kind == ir::OpKind::Read && !v->type.shape.empty()))
      return true;
    if (!elementwiseLike(def->kind) || def->kind == ir::OpKind::ApplyExpr)
      return false;
    for (const ir::Value *o : def->operands)
      if (laidOut(o, depth + 1))
        return true;
    return false;
  }
  // control.cpp, ifResultShape: each result needs a branch whose value has a layout when either
  // is computed from thread indices only; a streamed row cannot leave a branch.
  bool ifYields(const ir::Op &op) {
    std::vector<const ir::Op *> yields;
    for (const auto &r : op.regions)
      if (!r->ops.empty() && r->ops.back()->kind == ir::OpKind::Yield)
        yields.push_back(r->ops.back().get());
    if (yields.size() != 2)
      return true;
    for (size_t i = 0; i < op.results.size(); ++i) {
      const ir::Value *a = yields[0]->operands.at(i), *b = yields[1]->operands.at(i);
      if (fromStreamedRow(a) || fromStreamedRow(b)) {
        refuse(&op, op.loc, DiagId::UnsupportedStreamedRow,
               {"a streamed row (a dynamic or long reduced row) yielded by an 'if'"},
               "a streamed row yielded by an if");
        return false;
      }
      if ((mayBeDeferred(a) || mayBeDeferred(b)) && !laidOut(a) && !laidOut(b)) {
        refuse(&op, op.loc, DiagId::UnsupportedIf,
               {"a value computed from thread indices (self_index) yielded by an 'if' whose "
                "other branch yields no value read from memory"},
               "an if yielding values of thread indices only");
        return false;
      }
    }
    return true;
  }

  // atomic.cpp, emitAtomic: global tensors of 32- or 64-bit integers, f32 or f64 (and
  // atomic_add of f16 and bf16), unmapped.
  void atomic(const ir::Op &op) {
    const char *name = op.kind == ir::OpKind::AtomicAdd   ? "atomic_add"
                       : op.kind == ir::OpKind::AtomicMin ? "atomic_min"
                                                          : "atomic_max";
    const ScalarType ty = op.operands[1]->type.dtype;
    if (ir::indexOperand(op)) {
      // scatter_add: access.cpp (indexIn) as for gather and scatter, then an atomic.
      if (!dynamicAccess(op, op.operands[1]))
        return;
    } else if (op.mapping) {
      refuse(&op, op.loc, DiagId::UnsupportedAtomic,
             {std::string("'") + name + "' with a mapping"}, "an atomic with a mapping");
      return;
    }
    const bool allocated = isAllocated(op.operands[1]);
    if (!allocated &&
        (op.operands[1]->type.space != AddressSpace::Global || op.operands[1]->paramIndex < 0)) {
      refuse(&op, op.loc, DiagId::UnsupportedAtomic,
             {std::string("'") + name +
              "' on a `shared` parameter (atomics update global tensors and allocated tiles)"},
             "an atomic on a shared parameter");
      return;
    }
    // Shared-memory atomics: 32-bit elements (every target has them on its shared memory).
    // Global f16 and bf16 atomic_add: an `atomicrmw fadd` of the 16-bit type (the target's
    // own instruction where it has one, a compare-exchange loop on the enclosing word where
    // not: LLVM's atomic expansion).
    const bool wide = bitWidth(ty) == 32 || (!allocated && bitWidth(ty) == 64);
    const bool half = !allocated && op.kind == ir::OpKind::AtomicAdd &&
                      (ty == ScalarType::F16 || ty == ScalarType::BF16);
    if (!half &&
        (!wide || isFp8(ty) || isOpaqueFloat(ty, t) || ty == ScalarType::I1 ||
         ty == ScalarType::Index || (isFloat(ty) && ty != ScalarType::F32 && ty != ScalarType::F64))) {
      refuse(&op, op.loc, DiagId::UnsupportedAtomicType,
             {std::string(name) + " on " + tn(ty) + " values" + (allocated ? " in shared memory" : ""),
              allocated ? "atomics on an allocated tile take 32-bit integers or f32"
                        : "atomics take 32- or 64-bit integers, f32 or f64; atomic_add also "
                          "f16 and bf16"},
             std::string("atomics on ") + tn(ty));
      return;
    }
    access(op, op.operands[1]);
    if (allocated && !allocatedAccess(op, op.operands[1]))
      return;
    int64_t owners[3];
    std::string why;
    if (fromStreamedRow(op.operands[0])) {
      refuse(&op, op.loc, DiagId::UnsupportedStreamedRow,
             {std::string("a streamed row updated by ") + name}, "a streamed row in an atomic");
      return;
    }
    if (!atomicOwners(k, d, op, owners, why)) {
      refuse(&op, op.loc, DiagId::UnsupportedAtomic, {why}, why);
      return;
    }
    const bool copies = owners[0] || owners[1] || owners[2];
    if (!op.results.empty() && !op.results[0]->users.empty() &&
        (copies || op.operands[0]->type.shape.size() !=
                       (ir::indexOperand(op) ? op.mapping->inputs.size()
                                             : op.operands[1]->type.shape.size()))) {
      refuse(&op, op.loc, DiagId::UnsupportedAtomic,
             {std::string("the old values of '") + name +
              "' whose value several lanes hold (a broadcast or a reduction result)"},
             "old values of a replicated atomic");
      return;
    }
    note(std::string(name) + " on " + tn(ty) + (allocated ? " in shared memory" : "") +
         ", one read-modify-write per element" +
         (copies ? ", by one lane of each group holding the same elements" : ""));
  }

  // access.cpp, indexIn: gather, scatter and scatter_add address global kernel parameters
  // element by element; the index register takes the access's register layout.
  bool dynamicAccess(const ir::Op &op, const ir::Value *mem) {
    const char *name = op.kind == ir::OpKind::Read    ? "gather"
                       : op.kind == ir::OpKind::Write ? "scatter"
                                                      : "scatter_add";
    if (isAllocated(mem) || mem->paramIndex < 0 || mem->type.space != AddressSpace::Global) {
      refuse(&op, op.loc, DiagId::UnsupportedGather,
             {std::string("'") + name + "' on " +
              (isAllocated(mem) ? "an allocated tile" : "a `shared` parameter") +
              " (it reads and writes global kernel parameters)"},
             std::string(name) + " not on a global parameter");
      return false;
    }
    const AccessIndex *ai = accessOf(d, op);
    if (ai)
      for (const auto &ri : ai->regDims)
        if (ri.chunk > 0 || ri.walked) { // streamed here, or walked (streamed elsewhere)
          refuse(&op, op.loc, DiagId::UnsupportedGather,
                 {std::string("'") + name + "' of a streamed row (dim " + ri.dim.str() +
                  " is dynamic and no workgroup or tiling constraint splits it)"},
                 std::string(name) + " of a streamed row");
          return false;
        }
    const bool before = ok;
    ok = true;
    access(op, mem);
    const bool accessed = ok;
    ok = before && accessed;
    if (!accessed)
      return false;
    note(std::string(name) + " through " + tn(op.operands.back()->type.dtype) +
         " indices along " + op.mapping->indexedDim.str() + ", element by element");
    return true;
  }

  void access(const ir::Op &op, const ir::Value *mem) {
    // access.cpp, prepareAccess: LLVM packs vector<N x i1> into bits in memory.
    if (mem->type.dtype == ScalarType::I1) {
      refuse(&op, op.loc, DiagId::UnsupportedElementType, {"a tensor of element type i1 (use i8)"},
             "a tensor of i1");
      return;
    }
    const AccessIndex *ai = accessOf(d, op);
    note("access of " + tn(mem->type.dtype) + std::string(" tensor") +
         (ai ? ", anchor " + ai->anchor : ""));
    if (op.kind == ir::OpKind::Write && op.operands[0]->type.dtype != mem->type.dtype)
      refuse(&op, op.loc, DiagId::UnsupportedElementType,
             {std::string("writing ") + tn(op.operands[0]->type.dtype) + " values to a tensor of " +
              tn(mem->type.dtype)},
             "a write of another element type");
  }

  // The promotion and cooperative-copies passes themselves (passes/promotion.cpp,
  // cooperative_copies.cpp), asked through the distribution instead of the emitter.
  void promoted(const ir::Op &op) {
    PlanRefusals q(d);
    KernelPlan plan;
    PlanContext c{k, d, t, d.facts, q, plan};
    if (!planPromotion(c, op) || !planCooperativeCopy(c, plan.promotions.at(&op))) {
      if (!q.why.empty())
        refuse(&op, op.loc, q.id, {q.why}, q.why);
      return;
    }
    const Promotion &p = plan.promotions.at(&op);
    std::string tile;
    for (size_t i = 0; i < plan.tiles[p.alloc].tile.size(); ++i)
      tile += (i ? " x " : "") + std::to_string(plan.tiles[p.alloc].tile[i]);
    note("promoted: shared-memory tile [" + tile + "], copied as " + std::to_string(p.copies) +
         " copies of " + std::to_string(p.lanes) + " elements per thread" +
         (p.wgmma ? std::string(", read by wgmma through descriptors (") +
                        (p.nMajor ? "N-major" : "K-major") + ")"
                  : ""));
  }

  void mma(const ir::Op &op) {
    if (!op.mma) {
      refuse(&op, op.loc, DiagId::UnsupportedOperation, {"an mma without a matrix kind"},
             "no mma kind");
      return;
    }
    const MmaKind &m = *op.mma;
    const bool group = m.family == MmaFamily::Wgmma;
    // mma.cpp, emitMma: clones of M, N and K step by the expansion's vector shapes, which the
    // first mma of each dim decided; a chained mma must step alike.
    const unsigned shape[3] = {m.m, m.n, m.k};
    for (int r = 0; r < 3; ++r)
      for (const auto &ex : d.expansion)
        if (ex.dim == op.dims[r] && !ex.vectorShape.equals(sym::IndexExpr(int64_t{shape[r]})) &&
            !(group && r == 2 && wgmmaKSteps(op, d) > 1)) {
          refuse(&op, op.loc, DiagId::UnsupportedMmaStep,
                 {m.name, ex.dim.str(), ex.vectorShape.str(), std::to_string(shape[r])},
                 "dim " + ex.dim.str() + " walked in steps of " + ex.vectorShape.str());
          return;
        }
    const ScalarType in = op.operands[0]->type.dtype;
    if (!group) {
      note(std::string("mma ") + m.name + " on " + tn(in));
      return;
    }
    // mma.cpp, emitWgmma: B through a shared-memory descriptor, 16-bit inputs.
    const ir::Op *b = op.operands[1]->def;
    bool lhs = true;
    if (!b || !isPromotedRead(*b) || wgmmaUser(*b, &lhs) != &op || lhs) {
      refuse(&op, op.loc, DiagId::UnsupportedWgmmaOperand,
             {"a wgmma's B operand must be a read of a `shared` parameter used only by wgmma "
              "(wgmma reads B from shared memory through a matrix descriptor)"},
             "wgmma B operand not a promoted read");
      return;
    }
    const bool fp8 = in == ScalarType::F8E4M3FN || in == ScalarType::F8E5M2;
    if (in != ScalarType::F16 && in != ScalarType::BF16 && !fp8) {
      refuse(
          &op, op.loc, DiagId::UnsupportedWgmmaOperand,
          {std::string("wgmma on ") + tn(in) +
           " operands is not supported yet (f16, bf16, f8e4m3fn and f8e5m2 are)"},
          std::string("wgmma on ") + tn(in));
      return;
    }
    const ir::Op *a = op.operands[0]->def;
    bool aLhs = false;
    const bool descA = a && isPromotedRead(*a) && wgmmaUser(*a, &aLhs) == &op && aLhs;
    // mma.cpp, emitWgmma: fp8 A only through a descriptor (no register fragments yet).
    if (fp8 && !descA) {
      refuse(&op, op.loc, DiagId::UnsupportedWgmmaOperand,
             {std::string("a wgmma on ") + tn(in) +
              " with A in registers (fp8 A must be a read of a `shared` parameter used only by "
              "wgmma)"},
             "wgmma fp8 A in registers");
      return;
    }
    note(std::string("wgmma ") + m.name + " on " + tn(in) + ", " +
         std::to_string(wgmmaKSteps(op, d)) + " K step(s) per clone, A from " +
         (descA ? "shared memory" : "registers") + ", B from shared memory");
  }

  void reduce(const ir::Op &op) {
    // reduce.cpp, combinerFor: no combiner for i1 or index (opaque floats combine in f32).
    const ScalarType ty = op.operands[0]->type.dtype;
    if (ty == ScalarType::I1 || ty == ScalarType::Index) {
      refuse(&op, op.loc, DiagId::UnsupportedReductionType, {tn(ty), t.name},
             std::string("a reduction of ") + tn(ty));
      return;
    }
    note(std::string("reduction of ") + tn(ty) + " over " + op.dims[0].str());
  }

  // Whether `v` is laid out along dim `dim` (scan.cpp needs the lanes' elements along it): a
  // read or mma result with the dim, and what elementwise ops, reductions over other dims and
  // cumsums make of one; a broadcast to the dim is uniform along it. Values of loops and
  // branches are taken to be (the emitter checks them).
  static bool alongDimLaidOut(const ir::Value *v, const ir::Dim &dim, int depth = 0) {
    const ir::Op *def = v->def;
    if (!def || depth > 64)
      return true;
    if (!ir::hasDim(v->type.shape, dim))
      return false;
    switch (def->kind) {
    case ir::OpKind::Read:
    case ir::OpKind::Mma:
    case ir::OpKind::Iterate:
    case ir::OpKind::If:
    case ir::OpKind::AtomicAdd:
    case ir::OpKind::AtomicMin:
    case ir::OpKind::AtomicMax: return true;
    case ir::OpKind::Reduce:
    case ir::OpKind::Cumsum:
    case ir::OpKind::Broadcast:
    case ir::OpKind::Permute: return alongDimLaidOut(def->operands[0], dim, depth + 1);
    default:
      if (!elementwiseLike(def->kind) || def->kind == ir::OpKind::ApplyExpr)
        return false;
      for (const ir::Value *o : def->operands)
        if (alongDimLaidOut(o, dim, depth + 1))
          return true;
      return false;
    }
  }

  // scan.cpp, emitCumsum: a held value laid out along the dim, of a type with a sum.
  void cumsum(const ir::Op &op) {
    const ScalarType ty = op.operands[0]->type.dtype;
    const std::string dim = op.dims[0].str();
    if (ty == ScalarType::I1 || ty == ScalarType::Index) {
      refuse(&op, op.loc, DiagId::UnsupportedScan,
             {"a cumsum of " + tn(ty) + " values on " + t.name}, "a cumsum of " + tn(ty));
      return;
    }
    if (fromStreamedRow(op.operands[0])) {
      refuse(&op, op.loc, DiagId::UnsupportedStreamedRow,
             {"a streamed row scanned by cumsum (bind the row's length with -D, or spread it "
              "over more threads, so that each thread holds at most 64 elements)"},
             "a cumsum of a streamed row");
      return;
    }
    if (!alongDimLaidOut(op.operands[0], op.dims[0])) {
      refuse(&op, op.loc, DiagId::UnsupportedScan,
             {"a cumsum over " + dim + " of a value that no read or mma lays out along " + dim +
              " (a broadcast to it, or a value computed from thread indices)"},
             "a cumsum of a value uniform along its dim");
      return;
    }
    note("cumsum of " + tn(ty) + " over " + dim);
  }

  // Whether `v` comes from an mma (through element-wise ops, loops and branches): its lanes hold
  // several rows.
  static bool fromMma(const ir::Value *v, int depth = 0) {
    const ir::Op *def = v->def;
    if (!def || depth > 64)
      return false;
    if (def->kind == ir::OpKind::Mma)
      return true;
    if (def->kind == ir::OpKind::Iterate || def->kind == ir::OpKind::If) {
      for (size_t i = 0; i < def->results.size(); ++i)
        if (def->results[i] == v)
          for (const auto &r : def->regions)
            if (!r->ops.empty() && r->ops.back()->kind == ir::OpKind::Yield &&
                i < r->ops.back()->operands.size() &&
                fromMma(r->ops.back()->operands[i], depth + 1))
              return true;
      return false;
    }
    if (!elementwiseLike(def->kind) && def->kind != ir::OpKind::Cumsum)
      return false;
    for (const ir::Value *o : def->operands)
      if (fromMma(o, depth + 1))
        return true;
    return false;
  }

  // scan.cpp, emitTopK: a held row along the dim (lanes along it; several waves merge through
  // shared memory), of a type with an order, not an mma's accumulator.
  void topk(const ir::Op &op) {
    const ScalarType ty = op.operands[0]->type.dtype;
    const ir::Dim &dim = op.dims[0];
    auto no = [&](const std::string &why) {
      refuse(&op, op.loc, DiagId::UnsupportedTopK, {"a topk over " + dim.str() + " " + why},
             "topk: " + why);
    };
    if (ty == ScalarType::I1 || ty == ScalarType::Index)
      return no("of " + tn(ty) + " values on " + t.name);
    if (fromStreamedRow(op.operands[0]))
      return no("of a streamed row (bind the row's length, at most 64 elements per lane)");
    if (!alongDimLaidOut(op.operands[0], dim))
      return no("of a value that no read lays out along " + dim.str());
    if (fromMma(op.operands[0]))
      return no("of an mma result (its lanes hold several rows)");
    note("topk of " + tn(ty) + " over " + dim.str() + ", " + std::to_string(op.ivalue) +
         " rounds of max-and-remove, then a merge of the waves' lists");
  }

  void elementwise(const ir::Op &op) {
    // elementwise.cpp, emitElementwise and elementwiseClone.
    // Opaque floats (fp8, bf16 on AMD) are computed on in f32 (elementwise.cpp, narrowClone).
    const std::string what = opName(op);
    const ScalarType in = op.operands.back()->type.dtype;
    if (op.kind == ir::OpKind::Binary && isFloat(in) &&
        (op.binary == ir::BinaryKind::And || op.binary == ir::BinaryKind::Or ||
         op.binary == ir::BinaryKind::Xor)) {
      refuse(&op, op.loc, DiagId::UnsupportedOperation, {what + " on " + tn(in) + " values"},
             what + " on floats");
      return;
    }
    if (op.kind == ir::OpKind::Math && !isFloat(in) && op.math != ir::MathKind::Abs &&
        op.math != ir::MathKind::Maximum && op.math != ir::MathKind::Minimum) {
      refuse(&op, op.loc, DiagId::UnsupportedOperation, {what + " on " + tn(in) + " values"},
             what + " on integers");
      return;
    }
    note(what + " on " + tn(in));
  }

  void op(const ir::Op &op) {
    log << "  " << opKindName(op.kind) << where(op) << ":\n";
    if (ifDepth && !inBranch(op))
      return;
    switch (op.kind) {
    case ir::OpKind::Read:
      if (ir::indexOperand(op)) {
        dynamicAccess(op, op.operands[0]);
        break;
      }
      access(op, op.operands[0]);
      walkedAccess(op);
      if (ok && isPromotedRead(op))
        promoted(op);
      if (isAllocated(op.operands[0]))
        allocatedAccess(op, op.operands[0]);
      break;
    case ir::OpKind::Write:
      if (ir::indexOperand(op)) {
        dynamicAccess(op, op.operands[1]);
        break;
      }
      access(op, op.operands[1]);
      streamedRows(op);
      walkedAccess(op);
      if (isAllocated(op.operands[1]) && allocatedAccess(op, op.operands[1])) {
        // access.cpp, emitWrite: one lane stores each element (atomic_owners.cpp).
        int64_t owners[3];
        std::string why;
        if (!atomicOwners(k, d, op, owners, why))
          refuse(&op, op.loc, DiagId::UnsupportedAllocate, {"a write to an allocated tile: " + why},
                 why);
      }
      break;
    case ir::OpKind::Constant: {
      note(std::string("constant of ") + tn(op.results[0]->type.dtype));
      break;
    }
    case ir::OpKind::Unary:
    case ir::OpKind::Binary:
    case ir::OpKind::Math:
    case ir::OpKind::Select:
    case ir::OpKind::Cast:
      streamedRows(op);
      elementwise(op);
      break;
    case ir::OpKind::SelfIndex: {
      // layout.cpp, computeDeferred: an index as an integer or a float with arithmetic.
      const ScalarType ty = op.results[0]->type.dtype;
      if (!isInteger(ty) && (!isFloat(ty) || isFp8(ty) || isOpaqueFloat(ty, t)))
        refuse(&op, op.loc, DiagId::UnsupportedElementType,
               {std::string("self_index of type ") + tn(ty)}, "self_index type");
      else
        note("computed in the layout of each user");
      break;
    }
    case ir::OpKind::Broadcast:
    case ir::OpKind::Permute: streamedRows(op); [[fallthrough]];
    case ir::OpKind::ApplyExpr: note("no code of its own"); break;
    case ir::OpKind::Mma: mma(op); break;
    case ir::OpKind::Reduce: reduce(op); break;
    case ir::OpKind::Cumsum: cumsum(op); break;
    case ir::OpKind::TopK: topk(op); break;
    case ir::OpKind::Iterate:
      note("loop over " + op.dims[0].str());
      ++loopDepth;
      for (const auto &r : op.regions)
        region(*r);
      --loopDepth;
      return;
    case ir::OpKind::Barrier:
    case ir::OpKind::Yield: note("supported"); break;
    case ir::OpKind::If:
      if (!ifYields(op))
        return;
      note(op.pred ? "branch on " + op.pred->str() : std::string("branch on an i1 scalar"));
      ++ifDepth;
      for (const auto &r : op.regions)
        region(*r);
      --ifDepth;
      return;
    case ir::OpKind::AtomicAdd:
    case ir::OpKind::AtomicMin:
    case ir::OpKind::AtomicMax:
      atomic(op);
      walkedAccess(op);
      break;
    case ir::OpKind::Allocate: allocate(op); return;
    }
    for (const auto &r : op.regions)
      region(*r);
  }

  void region(const ir::Region &r) {
    for (const auto &o : r.ops)
      op(*o);
  }
};

} // namespace

bool isOpaqueFloat(ScalarType t, const TargetInfo &target) {
  return isFp8(t) || (t == ScalarType::BF16 && target.vendor == Vendor::AMD);
}

int wgmmaKSteps(const ir::Op &mma, const Distribution &dist) {
  for (const auto &ex : dist.expansion)
    if (ex.dim == mma.dims[2])
      if (auto vs = ex.vectorShape.asInteger(); vs && *vs > mma.mma->k)
        return static_cast<int>(*vs / mma.mma->k);
  return 1;
}


bool legalize(const ir::Kernel &kernel, const Distribution &dist, const TargetInfo &target,
              DiagnosticEngine &diags) {
  Legalizer l(kernel, dist, target, &diags);
  l.params();
  l.region(kernel.body);
  if (!l.ok)
    diags.note(DiagId::NoteInKernel, kernel.loc, {kernel.name});
  return l.ok;
}

bool legalizeTogether(
    const std::vector<std::pair<const ir::Kernel *, const Distribution *>> &kernels,
    const TargetInfo &target, DiagnosticEngine &diags) {
  // codegen/lowering.cpp, featuresFor: one +wavefrontsize feature per code object.
  if (target.vendor != Vendor::AMD || kernels.empty())
    return true;
  const auto &[first, firstDist] = kernels.front();
  for (const auto &[k, d] : kernels)
    if (d->waveSize != firstDist->waveSize) {
      diags.report(DiagId::UnsupportedMixedWaveSize, k->loc,
                   {"kernel '" + k->name + "' runs waves of " + std::to_string(d->waveSize) +
                    " threads, but kernel '" + first->name + "' of this file runs waves of " +
                    std::to_string(firstDist->waveSize) + ", and one " + target.name +
                    " code object has one wave size (compile them apart with --kernel=NAME)"});
      return false;
    }
  return true;
}

std::string printLegalize(const ir::Kernel &kernel, const Distribution &dist,
                          const TargetInfo &target) {
  Legalizer l(kernel, dist, target, nullptr);
  l.log << "legalize kernel " << kernel.name << " for " << target.name << ":\n";
  l.params();
  l.region(kernel.body);
  l.log << "  result: " << (l.ok ? "legal" : "refused") << "\n";
  return l.log.str();
}

} // namespace wave
