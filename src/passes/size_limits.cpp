// checkStaticSizes and checkUnroll: size_limits.h.
#include "passes/size_limits.h"

#include <algorithm>
#include <map>
#include <string>

namespace wave {

namespace {
unsigned bytesOf(ScalarType t) { return t == ScalarType::I1 ? 1 : (bitWidth(t) + 7) / 8; }
} // namespace

bool checkStaticSizes(const ir::Kernel &kernel, DiagnosticEngine &diags) {
  bool ok = true;
  for (const ir::Param &p : kernel.params) {
    if (!p.value)
      continue;
    const ir::Type &t = p.value->type;
    int64_t bytes = bytesOf(t.dtype);
    bool overflow = false;
    for (const ir::Dim &d : t.shape) {
      std::optional<int64_t> n = d.size.asInteger();
      if (!n)
        continue; // dynamic: checked by nobody at compile time
      if (*n < 0 || __builtin_mul_overflow(bytes, *n, &bytes) || bytes >= kMaxStaticBytes)
        overflow = true;
    }
    if (overflow) {
      diags.report(DiagId::SizeOverflow, p.loc, {p.name, t.str(), "2^62"});
      ok = false;
    }
  }
  return ok;
}

bool checkUnroll(const ir::Kernel &kernel, const Distribution &dist, DiagnosticEngine &diags) {
  std::map<std::string, int64_t> counts;
  for (const ExpansionInfo &ex : dist.expansion)
    counts[ex.dim.str()] = std::max<int64_t>(ex.count, 1);
  bool ok = true;
  ir::walk(kernel.body, [&](const ir::Op &op) {
    if (!ok)
      return;
    for (const ir::Value *v : op.results) {
      if (!v || !v->type.isRegister())
        continue;
      int64_t clones = 1;
      bool over = false;
      for (const ir::Dim &d : v->type.shape) {
        auto it = counts.find(d.str());
        if (it != counts.end() &&
            (__builtin_mul_overflow(clones, it->second, &clones) || clones > kMaxUnrollClones))
          over = true;
      }
      if (over) {
        diags.report(DiagId::UnrollTooLarge, op.loc,
                     {v->type.str(), std::to_string(kMaxUnrollClones)});
        ok = false;
        return;
      }
    }
  });
  return ok;
}

} // namespace wave
