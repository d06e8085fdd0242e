// atomicOwners (legalize.h): which lanes of a workgroup update the elements of an atomic, found
// by evaluating its access's layout for every thread. The legalize pass refuses with its `why`;
// the code generator (codegen/emitter/atomic.cpp) emits the owner condition it returns.
#include "passes/legalize.h"

#include <functional>
#include <set>

namespace wave {

namespace {
using Tuple = std::vector<int64_t>;

// The element (index per tensor dim) that element g of clone `a` of thread t updates; every
// other symbol is 0 (workgroup ids, loop counters: the same for all threads of a workgroup).
struct ElementProbe {
  std::vector<const DimIndex *> dims;
  std::map<std::string, int64_t> base;
  std::optional<Tuple> at(const int64_t t[3], const std::map<std::string, int64_t> &a,
                          int64_t g) const {
    std::map<std::string, int64_t> vals = base;
    vals["$T0"] = t[0];
    vals["$T1"] = t[1];
    vals["$T2"] = t[2];
    vals["$g"] = g;
    for (const auto &[s, v] : a)
      vals[s] = v;
    Tuple out;
    for (const DimIndex *di : dims) {
      auto v = di->start.evaluate(vals);
      if (!v)
        return std::nullopt;
      out.push_back(*v);
    }
    return out;
  }
};

// Every assignment of the clone symbols of `dims` ($i_<dim>, each over its expansion count).
std::vector<std::map<std::string, int64_t>> cloneAssignments(const Distribution &d,
                                                             const ElementProbe &p) {
  std::vector<std::map<std::string, int64_t>> out(1);
  for (const auto &[s, v] : p.base) {
    if (s.rfind("$i_", 0) != 0)
      continue;
    int64_t count = 1;
    for (const auto &ex : d.expansion)
      if ("$i_" + ex.dim.str() == s)
        count = std::max<int64_t>(ex.count, 1);
    std::vector<std::map<std::string, int64_t>> next;
    for (const auto &a : out)
      for (int64_t i = 0; i < count; ++i) {
        next.push_back(a);
        next.back()[s] = i;
      }
    out = std::move(next);
  }
  return out;
}
} // namespace

bool atomicOwners(const ir::Kernel &k, const Distribution &d, const ir::Op &atomic,
                  int64_t owners[3], std::string &why) {
  owners[0] = owners[1] = owners[2] = 0;
  const ir::Value *mem = atomic.operands[1];
  const AccessIndex *ai = accessOf(d, atomic);
  if (!ai)
    return (why = "an atomic without a distributed index"), false;
  ElementProbe probe;
  int64_t elems = 1;
  // scatter_add: the elements are those of the register side (the memory side's index is data).
  std::vector<const DimIndex *> side;
  if (ir::indexOperand(atomic)) {
    for (const auto &ri : ai->regDims)
      side.push_back(&ri);
  } else {
    for (const auto &memDim : mem->type.shape)
      side.push_back(dimIndexOf(*ai, memDim));
  }
  for (size_t i = 0; i < side.size(); ++i) {
    const DimIndex *di = side[i];
    const ir::Dim memDim = di ? di->dim : mem->type.shape[i];
    if (!di)
      return (why = "an atomic whose index misses dim " + memDim.str()), false;
    if (di->chunk > 0 || (di->start.dependsOn("$g") && di->elements <= 0))
      return (why = "an atomic on a streamed row (a dynamic or long row of " + memDim.str() +
                    ")"),
             false;
    if (di->start.dependsOn("$g"))
      elems = std::max(elems, di->elements);
    probe.dims.push_back(di);
    for (const auto &s : di->start.freeSymbols())
      probe.base[s] = 0;
  }
  for (const auto &w : k.workgroups) {
    auto n = w.dim.size.asInteger();
    bool follows = false;
    for (const DimIndex *di : probe.dims)
      follows |= di->start.dependsOn("$WG" + std::to_string(w.axis));
    if ((!n || *n > w.tile) && !follows)
      return (why = "an atomic on a tensor without dim " + w.dim.str() + " while workgroups split " +
                    w.dim.str() + " (every workgroup along it would update the same elements)"),
             false;
  }
  const auto clones = cloneAssignments(d, probe);
  const int64_t block[3] = {d.block[0], d.block[1], d.block[2]};
  if (block[0] * block[1] * block[2] * int64_t(clones.size()) * elems > (int64_t(1) << 18))
    return (why = "an atomic with more than 2^18 elements per workgroup"), false;
  auto forThreads = [&](const std::function<bool(const int64_t t[3])> &f) {
    int64_t t[3];
    for (t[2] = 0; t[2] < block[2]; ++t[2])
      for (t[1] = 0; t[1] < block[1]; ++t[1])
        for (t[0] = 0; t[0] < block[0]; ++t[0])
          if (!f(t))
            return false;
    return true;
  };
  // Per axis, the thread-id bits that never change the element (found on one clone and
  // element; the check below covers the rest).
  for (int axis = 0; axis < 3; ++axis)
    for (int64_t m = 1; m < block[axis]; m *= 2)
      if (forThreads([&](const int64_t t[3]) {
            int64_t u[3] = {t[0], t[1], t[2]};
            u[axis] ^= m;
            return u[axis] >= block[axis] ||
                   probe.at(t, clones.front(), 0) == probe.at(u, clones.front(), 0);
          }))
        owners[axis] |= m;
  // The owners (no owner bit set) must hit distinct elements over all clones and elements, and
  // every element another thread holds must be one an owner updates.
  std::set<Tuple> own, others;
  bool oneToOne = forThreads([&](const int64_t t[3]) {
    const bool owner = !(t[0] & owners[0]) && !(t[1] & owners[1]) && !(t[2] & owners[2]);
    for (const auto &a : clones)
      for (int64_t g = 0; g < elems; ++g) {
        auto e = probe.at(t, a, g);
        if (!e || (owner && !own.insert(*e).second))
          return false;
        if (!owner)
          others.insert(*e);
      }
    return true;
  });
  for (const Tuple &e : others)
    oneToOne &= own.count(e) > 0;
  if (!oneToOne)
    return (why = "an atomic whose value's layout holds an element in several lanes in a way "
                  "that cannot be reduced to one updating lane"),
           false;
  return true;
}

} // namespace wave
