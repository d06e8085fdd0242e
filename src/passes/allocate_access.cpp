// allocateAccess and allocateShape (legalize.h): where an access to an `allocate`d tile lands
// in the workgroup's shared-memory tile. The legalize pass refuses with their `why`; the code
// generator (codegen/emitter/access.cpp, prepareAccess) addresses the tile with the origin
// they return. docs/language.md section 16 has the rules.
//
// A workgroup holds one tile of the allocated tensor: along each dim, the part that its own
// accesses reach. An access's index is the distribution's (passes/distribution.h), in which
// the workgroup ids ($WG0..2) and, inside `iterate D`, the trip ($IV_D) give the part of the
// tensor, and the thread ids, expansion clones and elements ($T*, $i_*, $g) the element inside
// it. The origin of a dim is what the workgroup ids and trips contribute (the index with them
// at 0 subtracted), and the rest, the element's place in the tile, must stay inside the
// allocated tile for every thread, clone and element of the workgroup. An origin that moves
// with a loop's trips belongs to that loop (AllocatePlace::loop): each trip reuses the tile.
#include "passes/legalize.h"

#include <functional>
#include <set>

namespace wave {

namespace {
bool isWorkgroupId(const std::string &s) { return s.rfind("$WG", 0) == 0; }
bool isTrip(const std::string &s) { return s.rfind("$IV_", 0) == 0; }
// The innermost `iterate` around `op` whose trip symbol is one of `trips`, or null.
const ir::Op *loopOf(const ir::Region &r, const ir::Op &op, const std::set<std::string> &trips,
                     const ir::Op *around, bool &found) {
  for (const auto &o : r.ops) {
    if (o.get() == &op) {
      found = true;
      return around;
    }
    const ir::Op *inner = around;
    if (o->kind == ir::OpKind::Iterate && trips.count("$IV_" + o->dims[0].str()))
      inner = o.get();
    for (const auto &sub : o->regions) {
      const ir::Op *l = loopOf(*sub, op, trips, inner, found);
      if (found)
        return l;
    }
  }
  return nullptr;
}
bool isLaneSymbol(const std::string &s) {
  return s.rfind("$T", 0) == 0 || s.rfind("$i_", 0) == 0 || s == "$g";
}
} // namespace

bool allocateShape(const ir::Kernel &k, const ir::Op &alloc, std::string &why) {
  for (const auto &w : k.workgroups) {
    auto n = w.dim.size.asInteger();
    if ((!n || *n > w.tile) && !ir::hasDim(alloc.results[0]->type.shape, w.dim))
      return (why = "an allocated tensor without dim " + w.dim.str() + " while workgroups split " +
                    w.dim.str() + " (each workgroup holds its own tile, so the workgroups along " +
                    w.dim.str() + " would each see a different tensor)"),
             false;
  }
  const ScalarType t = alloc.results[0]->type.dtype;
  if (t == ScalarType::I1 || t == ScalarType::Index)
    return (why = std::string("an allocated tensor of element type ") + scalarTypeName(t) +
                  " (use i8)"),
           false;
  return true;
}

bool samePlace(const AllocatePlace &a, const AllocatePlace &b) {
  if (a.loop != b.loop || a.origin.size() != b.origin.size())
    return false;
  for (size_t i = 0; i < a.origin.size(); ++i)
    if (!a.origin[i].equals(b.origin[i]))
      return false;
  return true;
}

bool allocateAccess(const ir::Kernel &k, const Distribution &d, const ir::Op &op,
                    const ir::Value *mem, AllocatePlace &place, std::string &why) {
  std::vector<sym::IndexExpr> &origin = place.origin;
  origin.clear();
  place.loop = nullptr;
  std::set<std::string> trips;
  const ir::Op *alloc = mem->def;
  const AccessIndex *ai = accessOf(d, op);
  if (!alloc || alloc->kind != ir::OpKind::Allocate || !ai)
    return (why = "an access to an allocated tile without a distributed index"), false;
  sym::Facts f = d.facts;
  for (int axis = 0; axis < 3; ++axis)
    f.setRange("$T" + std::to_string(axis), 0, std::max<int64_t>(d.block[axis], 1) - 1);
  for (const auto &ex : d.expansion)
    f.setRange("$i_" + ex.dim.str(), 0, std::max<int64_t>(ex.count, 1) - 1);
  std::vector<sym::IndexExpr> locals;
  int64_t elems = 1;
  for (size_t i = 0; i < mem->type.shape.size(); ++i) {
    const ir::Dim &memDim = mem->type.shape[i];
    const DimIndex *di = dimIndexOf(*ai, memDim);
    if (!di)
      return (why = "an access to an allocated tile whose index misses dim " + memDim.str()),
             false;
    if (di->chunk > 0 || (di->start.dependsOn("$g") && di->elements <= 0))
      return (why = "an access to an allocated tile along a streamed row of " + memDim.str() +
                    " (a dynamic or long row)"),
             false;
    if (di->start.dependsOn("$g"))
      elems = std::max(elems, di->elements);
    std::map<std::string, sym::IndexExpr> zero;
    for (const auto &s : di->start.freeSymbols())
      if (isWorkgroupId(s) || isTrip(s)) {
        zero[s] = sym::IndexExpr(0);
        if (isTrip(s))
          trips.insert(s);
      }
    const sym::IndexExpr local = f.simplify(di->start.subs(zero));
    const sym::IndexExpr org = f.simplify(di->start - local);
    for (const auto &s : org.freeSymbols())
      if (!isWorkgroupId(s) && !isTrip(s))
        return (why = "an access to an allocated tile whose index along " + memDim.str() +
                      " does not split into the workgroup's origin and a place in the tile"),
               false;
    for (const auto &s : local.freeSymbols())
      if (!isLaneSymbol(s))
        return (why = "an access to an allocated tile whose place in the tile along " +
                      memDim.str() + " depends on " + s),
               false;
    origin.push_back(org);
    locals.push_back(local);
  }
  if (!trips.empty()) {
    bool found = false;
    place.loop = loopOf(k.body, op, trips, nullptr, found);
    if (!place.loop)
      return (why = "an access to an allocated tile whose index moves with a loop it is not in"),
             false;
  }
  f.setRange("$g", 0, elems - 1);
  // Every element's place in the tile: from the ranges when they prove it, else by evaluating
  // it for every thread, clone and element of the workgroup.
  for (size_t i = 0; i < locals.size(); ++i) {
    const int64_t tile = alloc->tile.at(i);
    const sym::Range r = f.rangeOf(locals[i]);
    if (r.boundedBelow() && r.boundedAbove() && r.lo >= 0 && r.hi < tile)
      continue;
    // A dim no workgroup splits whose size is at most the tile (`assume(N <= 32)`): a place
    // beyond the tile is beyond the dim, an element the bounds mask leaves alone.
    const sym::Range size = f.rangeOf(mem->type.shape[i].size);
    if (origin[i].asInteger() == std::optional<int64_t>(0) && r.lo >= 0 &&
        size.boundedAbove() && size.hi <= tile)
      continue;
    std::vector<std::pair<std::string, int64_t>> syms; // symbol, count
    int64_t total = 1;
    for (const auto &s : locals[i].freeSymbols()) {
      const sym::Range sr = f.rangeOfSymbol(s);
      const int64_t n = sr.boundedAbove() ? sr.hi + 1 : 1;
      syms.push_back({s, n});
      total *= n;
      if (total > (int64_t(1) << 20))
        return (why = "an access to an allocated tile with too many elements per workgroup to "
                      "check"),
               false;
    }
    std::map<std::string, int64_t> vals;
    std::function<bool(size_t)> walk = [&](size_t j) {
      if (j == syms.size()) {
        auto v = locals[i].evaluate(vals);
        return v && *v >= 0 && *v < tile;
      }
      for (int64_t x = 0; x < syms[j].second; ++x) {
        vals[syms[j].first] = x;
        if (!walk(j + 1))
          return false;
      }
      return true;
    };
    if (!walk(0))
      return (why = "an access to an allocated tile that reaches beyond its tile of " +
                    std::to_string(tile) + " along " + mem->type.shape[i].str() +
                    " (the workgroup's accesses span more of the dim)"),
             false;
  }
  return true;
}

} // namespace wave
