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

// The clone count of each register value (the product of its dims' expansion counts), by op
// in program order; INT64_MAX where the product overflows.
template <typename F> void forEachCloneCount(const ir::Kernel &kernel, const Distribution &dist, F f) {
  std::map<std::string, int64_t> counts;
  for (const ExpansionInfo &ex : dist.expansion)
    counts[ex.dim.str()] = std::max<int64_t>(ex.count, 1);
  ir::walk(kernel.body, [&](const ir::Op &op) {
    for (const ir::Value *v : op.results) {
      if (!v || !v->type.isRegister())
        continue;
      int64_t clones = 1;
      for (const ir::Dim &d : v->type.shape) {
        auto it = counts.find(d.str());
        if (it != counts.end() && __builtin_mul_overflow(clones, it->second, &clones))
          clones = INT64_MAX;
      }
      f(op, *v, clones);
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
  forEachCloneCount(kernel, dist, [&](const ir::Op &op, const ir::Value &v, int64_t clones) {
    if (ok && clones > kMaxUnrollClones) {
      diags.report(DiagId::UnrollTooLarge, op.loc,
                   {v.type.str(), std::to_string(kMaxUnrollClones)});
      ok = false;
    }
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
  int64_t most = 1;
  const ir::Op *where = nullptr;
  const ir::Value *value = nullptr;
  forEachCloneCount(kernel, dist, [&](const ir::Op &op, const ir::Value &v, int64_t clones) {
    if (clones > most || !where) {
      most = std::max(most, clones);
      where = &op;
      value = &v;
    }
  });
  std::string out = "kernel " + kernel.name + ": clones per value (limit " +
                    std::to_string(kMaxUnrollClones) + ")\n";
  if (where)
    out += "  most: " + std::to_string(most) + ", " + std::string(ir::opKindName(where->kind)) +
           " -> " + value->type.str() + " at line " + std::to_string(where->loc.begin.line) +
           "\n";
  else
    out += "  no register values\n";
  return out;
}

} // namespace wave
