// planSharedRelayout (thread_layout.h): a move between thread layouts through a shared tile.
// Both layouts are evaluated for every thread, clone and element of the workgroup (compiled
// expressions): the tile is the box of the live elements the destination holds (those inside the
// workgroup's tile, LayoutMachine::workgroupTiles), the source must hold each of them (its
// elements anywhere else are not stored), the thread-id bits whose threads only repeat others'
// elements do not store, and every element gets one writer.
#include "passes/thread_layout.h"

#include "symbolic/compiled_expr.h"

#include <algorithm>
#include <functional>
#include <optional>

namespace wave {

int64_t SharedRelayout::elements() const {
  int64_t n = 1;
  for (int64_t e : extent)
    n *= e;
  return n;
}

namespace {
constexpr int64_t kMaxTileElements = int64_t(1) << 16;
constexpr int64_t kMaxEvaluations = int64_t(1) << 20;

struct Side {
  std::vector<const sym::CompiledExpr *> local; // per tile dim
  std::vector<CloneAssign> clones;
  int64_t elems = 1;
};

bool threadSymbol(const std::string &s) {
  return s == "$T0" || s == "$T1" || s == "$T2" || s == "$g" || s.rfind("$i_", 0) == 0;
}
} // namespace

SharedRelayout planSharedRelayout(const ThreadLayout &src, const ThreadLayout &dst,
                                  const LayoutMachine &machine, const sym::Facts &facts) {
  SharedRelayout p;
  auto fail = [&](const std::string &why) {
    p.why = why;
    return p;
  };
  // Coordinates relative to the source's element of thread 0, clone 0, element 0.
  std::map<std::string, sym::IndexExpr> zero = {
      {"$T0", sym::IndexExpr(0)}, {"$T1", sym::IndexExpr(0)}, {"$T2", sym::IndexExpr(0)},
      {"$g", sym::IndexExpr(0)}};
  for (const auto &l : {&src, &dst})
    for (const auto &[dim, e] : l->index)
      for (const auto &s : e.freeSymbols())
        if (s.rfind("$i_", 0) == 0)
          zero[s] = sym::IndexExpr(0);
  // Per tile dim that a workgroup splits (LayoutMachine::workgroupTiles): where the origin sits
  // in the workgroup's tile and the tile; a destination element outside it is dead (another
  // workgroup's: every write masks it), so nobody needs to hold it.
  std::vector<std::pair<int64_t, int64_t>> wgTile; // (origin's place, tile); tile 0: none
  for (const auto &[dim, e] : src.index) {
    auto d = dst.index.find(dim);
    if (d == dst.index.end())
      return fail("the destination layout has no dim " + dim);
    const sym::IndexExpr origin = e.subs(zero);
    std::pair<int64_t, int64_t> t{0, 0};
    if (auto it = machine.workgroupTiles.find(dim);
        it != machine.workgroupTiles.end() && it->second.second > 0) {
      const sym::IndexExpr base = facts.simplify(
          origin - sym::IndexExpr::symbol(it->second.first) * sym::IndexExpr(it->second.second));
      if (std::optional<int64_t> b = base.asInteger())
        t = {*b, it->second.second};
    }
    wgTile.push_back(t);
    p.dims.push_back(dim);
    p.srcLocal.push_back(facts.simplify(e - origin));
    p.dstLocal.push_back(facts.simplify(d->second - origin));
    for (const auto *x : {&p.srcLocal.back(), &p.dstLocal.back()})
      for (const auto &s : x->freeSymbols())
        if (!threadSymbol(s))
          return fail("an index of dim " + dim + " whose place in the workgroup's tile moves with " +
                      s);
  }
  if (p.dims.empty())
    return fail("a value without dims");
  std::vector<std::string> slots = {"$T0", "$T1", "$T2", "$g"};
  for (const auto &[s, v] : zero)
    if (s.rfind("$i_", 0) == 0)
      slots.push_back(s);
  sym::ExprPool pool;
  Side sides[2];
  sides[0].clones = machine.clones(src.cloneSyms);
  sides[1].clones = machine.clones(dst.cloneSyms);
  sides[0].elems = std::max<int64_t>(src.elems, 1);
  sides[1].elems = std::max<int64_t>(dst.elems, 1);
  for (size_t i = 0; i < p.dims.size(); ++i) {
    sides[0].local.push_back(pool.compile(p.srcLocal[i], slots));
    sides[1].local.push_back(pool.compile(p.dstLocal[i], slots));
    if (!sides[0].local.back() || !sides[1].local.back())
      return fail("an index of dim " + p.dims[i] + " that cannot be evaluated");
  }
  const int64_t block[3] = {machine.block[0], machine.block[1], machine.block[2]};
  const int64_t threads = block[0] * block[1] * block[2];
  for (const Side &s : sides)
    if (threads * int64_t(s.clones.size()) * s.elems * 8 > kMaxEvaluations)
      return fail("more than 2^17 elements per workgroup to check");
  const size_t n = p.dims.size();
  std::vector<int64_t> vals(slots.size(), 0), at(n);
  bool evaluable = true;
  // The coordinates of element g of clone c of thread t (into `at`).
  auto coords = [&](const Side &s, const int64_t t[3], size_t c, int64_t g) {
    vals[0] = t[0], vals[1] = t[1], vals[2] = t[2], vals[3] = g;
    for (size_t k = 4; k < slots.size(); ++k) {
      auto it = s.clones[c].find(slots[k]);
      vals[k] = it == s.clones[c].end() ? 0 : it->second;
    }
    for (size_t i = 0; i < n; ++i) {
      bool ok = true;
      at[i] = sym::evaluate(*s.local[i], vals.data(), ok);
      evaluable &= ok;
    }
  };
  auto forThreads = [&](const std::function<bool(const int64_t t[3])> &f) {
    int64_t t[3];
    for (t[2] = 0; t[2] < block[2]; ++t[2])
      for (t[1] = 0; t[1] < block[1]; ++t[1])
        for (t[0] = 0; t[0] < block[0]; ++t[0])
          if (!f(t))
            return false;
    return true;
  };
  // Whether the element at `at` lies inside the workgroup's tile (is live).
  auto live = [&]() {
    for (size_t i = 0; i < n; ++i)
      if (wgTile[i].second > 0 &&
          (wgTile[i].first + at[i] < 0 || wgTile[i].first + at[i] >= wgTile[i].second))
        return false;
    return true;
  };
  // The tile: the box of every live element the destination holds.
  std::vector<int64_t> lo(n, INT64_MAX), hi(n, INT64_MIN);
  forThreads([&](const int64_t t[3]) {
    for (size_t c = 0; c < sides[1].clones.size(); ++c)
      for (int64_t g = 0; g < sides[1].elems; ++g) {
        coords(sides[1], t, c, g);
        if (!live())
          continue;
        for (size_t i = 0; i < n; ++i)
          lo[i] = std::min(lo[i], at[i]), hi[i] = std::max(hi[i], at[i]);
      }
    return evaluable;
  });
  if (!evaluable)
    return fail("a destination index that cannot be evaluated for some thread");
  for (size_t i = 0; i < n; ++i)
    if (lo[i] > hi[i])
      return fail("a destination without live elements");
  int64_t total = 1;
  for (size_t i = 0; i < n; ++i) {
    if (hi[i] - lo[i] >= kMaxTileElements)
      return fail("a tile of more than 65536 elements");
    p.extent.push_back(hi[i] - lo[i] + 1);
    total *= p.extent.back();
    if (total > kMaxTileElements)
      return fail("a tile of more than 65536 elements");
  }
  // The cell of an element in the tile, or -1 outside it (recording which dims overrun).
  auto cell = [&](const Side &s, const int64_t t[3], size_t c, int64_t g,
                  std::vector<bool> *overruns) -> int64_t {
    coords(s, t, c, g);
    int64_t off = 0;
    bool inside = true;
    for (size_t i = 0; i < n; ++i) {
      const int64_t v = at[i] - lo[i];
      if (v < 0 || v >= p.extent[i]) {
        inside = false;
        if (overruns)
          (*overruns)[i] = true;
      }
      off = off * p.extent[i] + std::clamp<int64_t>(v, 0, p.extent[i] - 1);
    }
    return inside ? off : -1;
  };
  // Owner bits: flipping them never changes what a thread holds in the tile.
  for (int axis = 0; axis < 3; ++axis)
    for (int64_t m = 1; m < block[axis]; m *= 2)
      if (forThreads([&](const int64_t t[3]) {
            int64_t u[3] = {t[0], t[1], t[2]};
            u[axis] ^= m;
            if (u[axis] >= block[axis])
              return true;
            for (size_t c = 0; c < sides[0].clones.size(); ++c)
              for (int64_t g = 0; g < sides[0].elems; ++g)
                if (cell(sides[0], t, c, g, nullptr) != cell(sides[0], u, c, g, nullptr))
                  return false;
            return true;
          }))
        p.owners[axis] |= m;
  // One writer per cell: within one (clone, element) pair the owners hit distinct cells; of a
  // pair, the threads whose cells no earlier pair stored write, which must be all of them, none
  // (the pair is skipped) or a box of thread ids (clones that slide over each other).
  std::vector<bool> written(total, false);
  p.srcOverruns.assign(n, false);
  p.dstOverruns.assign(n, false);
  struct Held {
    int64_t t[3];
    int64_t cell;
  };
  for (size_t c = 0; c < sides[0].clones.size(); ++c)
    for (int64_t g = 0; g < sides[0].elems; ++g) {
      std::vector<Held> held;
      std::vector<bool> seen(total, false);
      bool distinct = true;
      forThreads([&](const int64_t t[3]) {
        if ((t[0] & p.owners[0]) || (t[1] & p.owners[1]) || (t[2] & p.owners[2]))
          return true;
        const int64_t x = cell(sides[0], t, c, g, &p.srcOverruns);
        if (x >= 0) {
          distinct &= !seen[x];
          seen[x] = true;
          held.push_back({{t[0], t[1], t[2]}, x});
        }
        return evaluable && distinct;
      });
      if (!evaluable)
        return fail("a source index that cannot be evaluated for some thread");
      if (!distinct)
        return fail("a source layout whose copies of an element cannot be reduced to one writer");
      SharedRelayout::ThreadBox box{{INT64_MAX, INT64_MAX, INT64_MAX},
                                    {INT64_MIN, INT64_MIN, INT64_MIN}};
      size_t fresh = 0;
      for (const Held &h : held)
        if (!written[h.cell]) {
          ++fresh;
          for (int k = 0; k < 3; ++k)
            box.lo[k] = std::min(box.lo[k], h.t[k]), box.hi[k] = std::max(box.hi[k], h.t[k]);
        }
      const std::pair<CloneAssign, int64_t> pair{sides[0].clones[c], g};
      if (fresh == 0) {
        p.skip.insert(pair);
        continue;
      }
      auto inBox = [&](const Held &h) {
        for (int k = 0; k < 3; ++k)
          if (h.t[k] < box.lo[k] || h.t[k] > box.hi[k])
            return false;
        return true;
      };
      size_t inside = 0;
      for (const Held &h : held)
        inside += inBox(h);
      if (inside != fresh)
        return fail("a source layout whose clones repeat some of each other's elements");
      if (fresh != held.size())
        p.ranges[pair] = box;
      for (const Held &h : held)
        if (inBox(h))
          written[h.cell] = true;
    }
  // The source holds every element the destination needs.
  std::string missing;
  forThreads([&](const int64_t t[3]) {
    for (size_t c = 0; c < sides[1].clones.size(); ++c)
      for (int64_t g = 0; g < sides[1].elems; ++g) {
        // Dead elements may fall outside the tile: their loads then take 0 (dstOverruns).
        const int64_t x = cell(sides[1], t, c, g, &p.dstOverruns);
        if (!live())
          continue; // dead: whatever the tile has at its place
        if (x < 0 || !written[x]) {
          for (size_t i = 0; i < n; ++i)
            missing += (i ? ", " : "") + p.dims[i] + " + " + std::to_string(at[i]);
          return false;
        }
      }
    return true;
  });
  if (!missing.empty())
    return fail("no lane of the workgroup holds the element at (" + missing +
                ") from the origin of the tile");
  for (size_t i = 0; i < n; ++i) {
    p.srcLocal[i] = facts.simplify(p.srcLocal[i] - sym::IndexExpr(lo[i]));
    p.dstLocal[i] = facts.simplify(p.dstLocal[i] - sym::IndexExpr(lo[i]));
  }
  p.ok = true;
  return p;
}

} // namespace wave
