// checkStaticSizes and checkUnroll: size_limits.h.
#include "passes/size_limits.h"

#include <algorithm>
#include <climits>
#include <map>
#include <optional>
#include <string>

namespace wave {

namespace {
unsigned bytesOf(ScalarType t) { return t == ScalarType::I1 ? 1 : (bitWidth(t) + 7) / 8; }
} // namespace

// A parameter's static size in bytes; nullopt when a dim is dynamic or the product overflows.
std::optional<int64_t> staticBytes(const ir::Type &t, bool &overflow) {
  int64_t bytes = bytesOf(t.dtype);
  bool dynamic = false;
  overflow = false;
  for (const ir::Dim &d : t.shape) {
    std::optional<int64_t> n = d.size.asInteger();
    if (!n) {
      dynamic = true; // checked by nobody at compile time
      continue;
    }
    if (*n < 0 || __builtin_mul_overflow(bytes, *n, &bytes) || bytes >= kMaxStaticBytes)
      overflow = true;
  }
  if (dynamic || overflow)
    return std::nullopt;
  return bytes;
}

// Elements per lane of one clone of each access op's value: the product over its register
// dims of the elements each lane holds (a streamed row's chunk per trip); the most over the
// op's accesses. Matrix operands are left out: their tiles are copied cooperatively (or read
// by the matrix instruction from shared memory), not unrolled per element.
std::map<const ir::Op *, int64_t> elementsPerClone(const Distribution &dist) {
  std::map<const ir::Op *, int64_t> out;
  for (const AccessIndex &a : dist.accesses) {
    if (a.anchor.rfind("mma", 0) == 0)
      continue;
    int64_t n = 1;
    for (const DimIndex &d : a.regDims.empty() ? a.dims : a.regDims) {
      int64_t e = d.elements > 0 ? d.elements : std::max<int64_t>(d.chunk, 1);
      if (__builtin_mul_overflow(n, e, &n))
        n = INT64_MAX;
    }
    int64_t &slot = out[a.op];
    slot = std::max(slot, n);
  }
  return out;
}

// The clone count of each register value (the product of its dims' expansion counts) and the
// elements per thread all its clones hold: clones times the elements per clone, which an access
// op's value takes from its access (elementsPerClone) and an elementwise op's from its widest
// operand (reductions, top-k and matrix products count one per clone: their results are
// narrower); by op in program order, INT64_MAX where a product overflows.
template <typename F> void forEachCloneCount(const ir::Kernel &kernel, const Distribution &dist, F f) {
  std::map<std::string, int64_t> counts;
  for (const ExpansionInfo &ex : dist.expansion)
    counts[ex.dim.str()] = std::max<int64_t>(ex.count, 1);
  std::map<const ir::Op *, int64_t> fromAccess = elementsPerClone(dist);
  std::map<const ir::Value *, int64_t> perClone;
  ir::walk(kernel.body, [&](const ir::Op &op) {
    int64_t width = 1;
    if (auto it = fromAccess.find(&op); it != fromAccess.end())
      width = it->second;
    else if (op.kind != ir::OpKind::Reduce && op.kind != ir::OpKind::Mma &&
             op.kind != ir::OpKind::TopK)
      for (const ir::Value *x : op.operands)
        if (auto it = perClone.find(x); it != perClone.end())
          width = std::max(width, it->second);
    for (const ir::Value *v : op.results) {
      if (!v || !v->type.isRegister())
        continue;
      int64_t clones = 1;
      for (const ir::Dim &d : v->type.shape) {
        auto it = counts.find(d.str());
        if (it != counts.end() && __builtin_mul_overflow(clones, it->second, &clones))
          clones = INT64_MAX;
      }
      perClone[v] = width;
      int64_t elements = INT64_MAX;
      if (__builtin_mul_overflow(clones, width, &elements))
        elements = INT64_MAX;
      f(op, *v, clones, elements);
    }
  });
}

bool checkStaticSizes(const ir::Kernel &kernel, DiagnosticEngine &diags) {
  bool ok = true;
  for (const ir::Param &p : kernel.params) {
    if (!p.value)
      continue;
    bool overflow = false;
    staticBytes(p.value->type, overflow);
    if (overflow) {
      diags.report(DiagId::SizeOverflow, p.loc, {p.name, p.value->type.str(), "2^62"});
      ok = false;
    }
  }
  return ok;
}

bool checkUnroll(const ir::Kernel &kernel, const Distribution &dist, DiagnosticEngine &diags) {
  bool ok = true;
  int64_t total = 0;
  forEachCloneCount(kernel, dist,
                    [&](const ir::Op &op, const ir::Value &v, int64_t clones, int64_t elements) {
                      if (!ok)
                        return;
                      if (__builtin_add_overflow(total, elements, &total))
                        total = INT64_MAX;
                      if (clones > kMaxUnrollClones)
                        diags.report(DiagId::UnrollTooLarge, op.loc,
                                     {v.type.str(), std::to_string(kMaxUnrollClones)});
                      else if (elements > kMaxUnrollElements)
                        diags.report(DiagId::UnrollTooManyElements, op.loc,
                                     {v.type.str(), std::to_string(elements),
                                      std::to_string(kMaxUnrollElements)});
                      else if (total > kMaxUnrollKernelElements)
                        diags.report(DiagId::UnrollKernelTooLarge, op.loc,
                                     {v.type.str(), std::to_string(total),
                                      std::to_string(kMaxUnrollKernelElements)});
                      else
                        return;
                      ok = false;
                    });
  return ok;
}

std::string printStaticSizes(const ir::Kernel &kernel) {
  std::string out = "kernel " + kernel.name + ": static sizes (limit 2^62 bytes)\n";
  for (const ir::Param &p : kernel.params) {
    if (!p.value || !p.value->type.isMemory())
      continue;
    bool overflow = false;
    std::optional<int64_t> bytes = staticBytes(p.value->type, overflow);
    out += "  " + p.name + ": " + p.value->type.str() + ": " +
           (overflow ? std::string("overflows")
            : bytes  ? std::to_string(*bytes) + " bytes"
                     : std::string("dynamic (no compile-time size)")) +
           "\n";
  }
  return out;
}

std::string printUnroll(const ir::Kernel &kernel, const Distribution &dist) {
  struct Most {
    int64_t n = 0;
    const ir::Op *op = nullptr;
    const ir::Value *value = nullptr;
    void take(int64_t m, const ir::Op &o, const ir::Value &v) {
      if (m > n || !op)
        n = std::max(n, m), op = &o, value = &v;
    }
    std::string str(const char *what) const {
      return "  most " + std::string(what) + ": " + std::to_string(n) + ", " +
             std::string(ir::opKindName(op->kind)) + " -> " + value->type.str() + " at line " +
             std::to_string(op->loc.begin.line) + "\n";
    }
  } clones, elements;
  int64_t total = 0;
  forEachCloneCount(kernel, dist,
                    [&](const ir::Op &op, const ir::Value &v, int64_t c, int64_t e) {
                      clones.take(c, op, v);
                      elements.take(e, op, v);
                      if (__builtin_add_overflow(total, e, &total))
                        total = INT64_MAX;
                    });
  std::string out = "kernel " + kernel.name + ": clones per value (limit " +
                    std::to_string(kMaxUnrollClones) + "), elements per thread (limit " +
                    std::to_string(kMaxUnrollElements) + ", all values " +
                    std::to_string(kMaxUnrollKernelElements) + ")\n";
  if (!clones.op)
    return out + "  no register values\n";
  return out + clones.str("clones") + elements.str("elements per thread") +
         "  all values: " + std::to_string(total) + " elements per thread\n";
}

} // namespace wave
