// Legalize: what the code generator can generate for a target, decided before it runs
// (docs/internals.md, "Legalize").
//
// It runs after the distribution (passes/distribution.h), in the wavec driver, at --check as
// well as before code generation. It reads the kernel's graph IR, its distribution and the
// target, and refuses, at the op's .wave location and with one diagnostic id per reason
// (the `unsupported-*` ids of frontend/diagnostic_kinds.def), every construct the MLIR emitter
// (codegen/emitter/) would refuse: operations it does not generate yet (`if`, atomics,
// `allocate`), arithmetic on element types that are only moved (fp8 everywhere, bf16 on AMD),
// reductions of such types, i1 tensors, mma chains whose shapes disagree, wgmma operands and
// shared-memory tiles it cannot lay out, promoted tiles the workgroup cannot copy evenly. The
// emitter keeps its own checks as a backstop (`codegen-unsupported`, "a wavec bug").
//
// A few checks stay in the emitter, with their own ids, because they depend on decisions it
// takes while emitting (layouts of values it moves, streamed rows, loop-carried layouts, the
// shared-memory arena size after multi-buffering): docs/internals.md lists them.
#pragma once

#include "frontend/diagnostics.h"
#include "ir/graph.h"
#include "passes/distribution.h"
#include "passes/kernel_plan.h"
#include "target/target_table.h"

#include <string>
#include <vector>

namespace wave {

// Reports every construct of `kernel` the code generator cannot generate for `target`; false if
// it reported any (with a note naming the kernel).
bool legalize(const ir::Kernel &kernel, const Distribution &dist, const TargetInfo &target,
              DiagnosticEngine &diags);

// What holds between the kernels of one code object: on AMD they share one wave size (the
// code object's wavefront-size feature); reported at the first kernel that differs.
bool legalizeTogether(
    const std::vector<std::pair<const ir::Kernel *, const Distribution *>> &kernels,
    const TargetInfo &target, DiagnosticEngine &diags);

// `--print-ir-after=legalize`: per op, what legalize checked and decided (or why it refused).
std::string printLegalize(const ir::Kernel &kernel, const Distribution &dist,
                          const TargetInfo &target);

// ---- predicates shared with the code generator (pure: IR, distribution, target) ----

// A floating-point type the code generator moves as integers, with no arithmetic: fp8 kinds
// everywhere, bf16 on AMD (MLIR's ROCDL conversion turns bf16 into i16).
bool isOpaqueFloat(ScalarType t, const TargetInfo &target);
// K steps of `mma.mma->k` that one clone of a wgmma covers (its K dim's vector shape is wider).
int wgmmaKSteps(const ir::Op &mma, const Distribution &dist);
// wgmmaUser and isPromotedRead: passes/kernel_plan.h.

// Which threads of a workgroup update the elements of an atomic (passes/atomic_owners.cpp): per
// thread axis, the id bits of lanes holding copies of another lane's elements (a row's
// reduction result every lane of the row holds); only threads with none set update. `why` is
// set, and false returned, when the owners cannot be one-to-one with the elements (a tensor
// without a dim that workgroups split, a streamed row, a layout whose copies no bit pattern
// separates).
bool atomicOwners(const ir::Kernel &kernel, const Distribution &dist, const ir::Op &atomic,
                  int64_t owners[3], std::string &why);

// Explicit shared-memory tiles (`allocate`, passes/allocate_access.cpp). allocateShape: whether
// the allocated tensor can be one tile per workgroup (it has every dim that workgroups split;
// an element type that memory holds). allocateAccess: for a read, write or atomic of allocated
// tensor `mem`, the origin of the workgroup's tile per dim of `mem` (an expression of the
// workgroup ids and of the trips of the iterates around the access; the access's index minus
// it is the element's place in the tile) and the innermost of those iterates (`loop`: the tile
// is reused by each of its trips), or false with `why` when the place may leave the tile or
// cannot be separated from the origin. Every access to one allocation must have the same
// place (samePlace: the legalize pass and the code generator compare them), so all accesses
// along a dim an iterate walks are inside that one iterate.
struct AllocatePlace {
  std::vector<sym::IndexExpr> origin;
  const ir::Op *loop = nullptr;
};
bool allocateShape(const ir::Kernel &kernel, const ir::Op &alloc, std::string &why);
bool allocateAccess(const ir::Kernel &kernel, const Distribution &dist, const ir::Op &access,
                    const ir::Value *mem, AllocatePlace &place, std::string &why);
bool samePlace(const AllocatePlace &a, const AllocatePlace &b);
// Whether `mem` is a tensor that `allocate` made.
inline bool isAllocated(const ir::Value *mem) {
  return mem && mem->def && mem->def->kind == ir::OpKind::Allocate;
}

} // namespace wave
