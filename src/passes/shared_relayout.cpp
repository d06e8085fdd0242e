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
// 2^20 elements per side: the unrolling limits (1,024 elements per value, 1,024 threads)
// keep every value of an accepted kernel within it.
constexpr int64_t kMaxEvaluations = int64_t(1) << 23;

struct Side {
  std::vector<const sym::CompiledExpr *> local; // per tile dim
  std::vector<CloneAssign> clones;
  int64_t elems = 1;
};

bool threadSymbol(const std::string &s) {
  return s == "$T0" || s == "$T1" || s == "$T2" || s == "$g" || s.rfind("$i_", 0) == 0;
}

// The planning state: both layouts compiled over the thread, clone and element symbols, the
// tile's box and which of its cells some source element is stored to. Each step returns false
// with p.why set when the move cannot be planned.
class Planner {
public:
  Planner(const ThreadLayout &src, const ThreadLayout &dst, const LayoutMachine &machine,
          const sym::Facts &facts)
      : src_(src), dst_(dst), machine_(machine), facts_(facts) {
    for (int k = 0; k < 3; ++k)
      block_[k] = machine.block[k];
  }
  SharedRelayout p;

  bool run() {
    if (!localIndices() || !compile() || !sizeTile())
      return false;
    findOwners();
    if (!assignWriters() && !assignCopies())
      return false;
    if (!checkCovered())
      return false;
    for (size_t i = 0; i < n_; ++i) {
      p.srcLocal[i] = facts_.simplify(p.srcLocal[i] - sym::IndexExpr(lo_[i]));
      p.dstLocal[i] = facts_.simplify(p.dstLocal[i] - sym::IndexExpr(lo_[i]));
    }
    p.ok = true;
    return true;
  }

private:
  const ThreadLayout &src_, &dst_;
  const LayoutMachine &machine_;
  const sym::Facts &facts_;
  int64_t block_[3];
  size_t n_ = 0;
  // Per tile dim that a workgroup splits (LayoutMachine::workgroupTiles): where the origin sits
  // in the workgroup's tile and the tile (0: none); a destination element outside it is dead
  // (another workgroup's: every write masks it), so nobody needs to hold it.
  std::vector<std::pair<int64_t, int64_t>> wgTile_;
  // Per tile dim: the first local coordinate past the dim's end (INT64_MAX: unknown).
  std::vector<int64_t> extentEnd_;
  std::map<std::string, sym::IndexExpr> zero_;
  std::vector<std::string> slots_;
  sym::ExprPool pool_;
  Side sides_[2];
  std::vector<int64_t> vals_, at_, lo_;
  bool evaluable_ = true;
  std::vector<bool> written_;

  bool fail(const std::string &why) {
    p.why = why;
    return false;
  }

  // Both layouts' indices relative to the source's element of thread 0, clone 0, element 0.
  bool localIndices() {
    zero_ = {{"$T0", sym::IndexExpr(0)}, {"$T1", sym::IndexExpr(0)}, {"$T2", sym::IndexExpr(0)},
             {"$g", sym::IndexExpr(0)}};
    for (const auto &l : {&src_, &dst_})
      for (const auto &[dim, e] : l->index)
        for (const auto &s : e.freeSymbols())
          if (s.rfind("$i_", 0) == 0)
            zero_[s] = sym::IndexExpr(0);
    for (const auto &[dim, e] : src_.index) {
      auto d = dst_.index.find(dim);
      if (d == dst_.index.end())
        return fail("the destination layout has no dim " + dim);
      const sym::IndexExpr origin = e.subs(zero_);
      std::pair<int64_t, int64_t> t{0, 0};
      if (auto it = machine_.workgroupTiles.find(dim);
          it != machine_.workgroupTiles.end() && it->second.second > 0) {
        const sym::IndexExpr base =
            facts_.simplify(origin - sym::IndexExpr::symbol(it->second.first) *
                                         sym::IndexExpr(it->second.second));
        if (std::optional<int64_t> b = base.asInteger())
          t = {*b, it->second.second};
      }
      wgTile_.push_back(t);
      // A dim of a known size with the origin at a known place: elements at or past its end
      // are dead too (every write and atomic bounds-checks them; loads give them 0 below).
      auto size = machine_.dimSizes.find(dim);
      std::optional<int64_t> at = facts_.simplify(origin).asInteger();
      extentEnd_.push_back(size != machine_.dimSizes.end() && at && size->second > *at
                               ? size->second - *at
                               : INT64_MAX);
      p.dims.push_back(dim);
      p.srcLocal.push_back(facts_.simplify(e - origin));
      p.dstLocal.push_back(facts_.simplify(d->second - origin));
      for (const auto *x : {&p.srcLocal.back(), &p.dstLocal.back()})
        for (const auto &s : x->freeSymbols())
          if (!threadSymbol(s))
            return fail("an index of dim " + dim +
                        " whose place in the workgroup's tile moves with " + s);
    }
    if (p.dims.empty())
      return fail("a value without dims");
    n_ = p.dims.size();
    return true;
  }

  bool compile() {
    slots_ = {"$T0", "$T1", "$T2", "$g"};
    for (const auto &[s, v] : zero_)
      if (s.rfind("$i_", 0) == 0)
        slots_.push_back(s);
    sides_[0].clones = machine_.clones(src_.cloneSyms);
    sides_[1].clones = machine_.clones(dst_.cloneSyms);
    sides_[0].elems = std::max<int64_t>(src_.elems, 1);
    sides_[1].elems = std::max<int64_t>(dst_.elems, 1);
    for (size_t i = 0; i < n_; ++i) {
      sides_[0].local.push_back(pool_.compile(p.srcLocal[i], slots_));
      sides_[1].local.push_back(pool_.compile(p.dstLocal[i], slots_));
      if (!sides_[0].local.back() || !sides_[1].local.back())
        return fail("an index of dim " + p.dims[i] + " that cannot be evaluated");
    }
    const int64_t threads = block_[0] * block_[1] * block_[2];
    for (const Side &s : sides_)
      if (threads * int64_t(s.clones.size()) * s.elems * 8 > kMaxEvaluations)
        return fail("more than 2^20 elements per workgroup to check");
    vals_.assign(slots_.size(), 0);
    at_.assign(n_, 0);
    return true;
  }

  // The coordinates of element g of clone c of thread t (into at_).
  void coords(const Side &s, const int64_t t[3], size_t c, int64_t g) {
    vals_[0] = t[0], vals_[1] = t[1], vals_[2] = t[2], vals_[3] = g;
    for (size_t k = 4; k < slots_.size(); ++k) {
      auto it = s.clones[c].find(slots_[k]);
      vals_[k] = it == s.clones[c].end() ? 0 : it->second;
    }
    for (size_t i = 0; i < n_; ++i) {
      bool ok = true;
      at_[i] = sym::evaluate(*s.local[i], vals_.data(), ok);
      evaluable_ &= ok;
    }
  }

  bool forThreads(const std::function<bool(const int64_t t[3])> &f) const {
    int64_t t[3];
    for (t[2] = 0; t[2] < block_[2]; ++t[2])
      for (t[1] = 0; t[1] < block_[1]; ++t[1])
        for (t[0] = 0; t[0] < block_[0]; ++t[0])
          if (!f(t))
            return false;
    return true;
  }

  // Whether the element at at_ lies inside the workgroup's tile (is live).
  bool live() const {
    for (size_t i = 0; i < n_; ++i) {
      if (wgTile_[i].second > 0 &&
          (wgTile_[i].first + at_[i] < 0 || wgTile_[i].first + at_[i] >= wgTile_[i].second))
        return false;
      if (at_[i] >= extentEnd_[i])
        return false;
    }
    return true;
  }

  // The tile: the box of every live element the destination holds.
  bool sizeTile() {
    std::vector<int64_t> hi(n_, INT64_MIN);
    lo_.assign(n_, INT64_MAX);
    forThreads([&](const int64_t t[3]) {
      for (size_t c = 0; c < sides_[1].clones.size(); ++c)
        for (int64_t g = 0; g < sides_[1].elems; ++g) {
          coords(sides_[1], t, c, g);
          if (!live())
            continue;
          for (size_t i = 0; i < n_; ++i)
            lo_[i] = std::min(lo_[i], at_[i]), hi[i] = std::max(hi[i], at_[i]);
        }
      return evaluable_;
    });
    if (!evaluable_)
      return fail("a destination index that cannot be evaluated for some thread");
    int64_t total = 1;
    for (size_t i = 0; i < n_; ++i) {
      if (lo_[i] > hi[i])
        return fail("a destination without live elements");
      if (hi[i] - lo_[i] >= kMaxTileElements)
        return fail("a tile of more than 65536 elements");
      p.extent.push_back(hi[i] - lo_[i] + 1);
      total *= p.extent.back();
      if (total > kMaxTileElements)
        return fail("a tile of more than 65536 elements");
    }
    written_.assign(total, false);
    p.srcOverruns.assign(n_, false);
    p.dstOverruns.assign(n_, false);
    return true;
  }

  // The cell of an element in the tile, or -1 outside it (recording which dims overrun).
  int64_t cell(const Side &s, const int64_t t[3], size_t c, int64_t g,
               std::vector<bool> *overruns) {
    coords(s, t, c, g);
    int64_t off = 0;
    bool inside = true;
    for (size_t i = 0; i < n_; ++i) {
      const int64_t v = at_[i] - lo_[i];
      if (v < 0 || v >= p.extent[i]) {
        inside = false;
        if (overruns)
          (*overruns)[i] = true;
      }
      off = off * p.extent[i] + std::clamp<int64_t>(v, 0, p.extent[i] - 1);
    }
    return inside ? off : -1;
  }

  // Owner bits: flipping them never changes what a thread holds in the tile.
  void findOwners() {
    for (int axis = 0; axis < 3; ++axis)
      for (int64_t m = 1; m < block_[axis]; m *= 2)
        if (forThreads([&](const int64_t t[3]) {
              int64_t u[3] = {t[0], t[1], t[2]};
              u[axis] ^= m;
              if (u[axis] >= block_[axis])
                return true;
              for (size_t c = 0; c < sides_[0].clones.size(); ++c)
                for (int64_t g = 0; g < sides_[0].elems; ++g)
                  if (cell(sides_[0], t, c, g, nullptr) != cell(sides_[0], u, c, g, nullptr))
                    return false;
              return true;
            }))
          p.owners[axis] |= m;
  }

  struct Held {
    int64_t t[3];
    int64_t cell;
  };

  // One writer per cell: within one (clone, element) pair the owners hit distinct cells; of a
  // pair, the threads whose cells no earlier pair stored write, which must be all of them, none
  // (the pair is skipped) or a box of thread ids (clones that slide over each other).
  bool assignWriters() {
    for (size_t c = 0; c < sides_[0].clones.size(); ++c)
      for (int64_t g = 0; g < sides_[0].elems; ++g) {
        std::vector<Held> held;
        if (!heldBy(c, g, held))
          return false;
        if (!assignPair({sides_[0].clones[c], g}, held))
          return false;
      }
    return true;
  }

  // The fallback of assignWriters: every thread stores each of its elements that lands in the
  // tile (SharedRelayout::copiesStore).
  bool assignCopies() {
    if (!evaluable_)
      return false;
    const std::string why = p.why;
    p.owners[0] = p.owners[1] = p.owners[2] = 0;
    p.skip.clear();
    p.ranges.clear();
    std::fill(written_.begin(), written_.end(), false);
    for (size_t c = 0; c < sides_[0].clones.size(); ++c)
      for (int64_t g = 0; g < sides_[0].elems; ++g) {
        bool any = false;
        forThreads([&](const int64_t t[3]) {
          const int64_t x = cell(sides_[0], t, c, g, &p.srcOverruns);
          if (x >= 0)
            any = written_[x] = true;
          return evaluable_;
        });
        if (!evaluable_)
          return fail("a source index that cannot be evaluated for some thread");
        if (!any)
          p.skip.insert({sides_[0].clones[c], g});
      }
    p.copiesStore = true;
    p.why = why;
    return true;
  }

  // The owners' cells of source pair (c, g), in thread order; false unless they are distinct.
  bool heldBy(size_t c, int64_t g, std::vector<Held> &held) {
    std::vector<bool> seen(written_.size(), false);
    bool distinct = true;
    forThreads([&](const int64_t t[3]) {
      if ((t[0] & p.owners[0]) || (t[1] & p.owners[1]) || (t[2] & p.owners[2]))
        return true;
      const int64_t x = cell(sides_[0], t, c, g, &p.srcOverruns);
      if (x >= 0) {
        distinct &= !seen[x];
        seen[x] = true;
        held.push_back({{t[0], t[1], t[2]}, x});
      }
      return evaluable_ && distinct;
    });
    if (!evaluable_)
      return fail("a source index that cannot be evaluated for some thread");
    if (!distinct)
      return fail("a source layout whose copies of an element cannot be reduced to one writer");
    return true;
  }

  bool assignPair(const std::pair<CloneAssign, int64_t> &pair, const std::vector<Held> &held) {
    SharedRelayout::ThreadBox box{{INT64_MAX, INT64_MAX, INT64_MAX},
                                  {INT64_MIN, INT64_MIN, INT64_MIN}};
    size_t fresh = 0;
    for (const Held &h : held)
      if (!written_[h.cell]) {
        ++fresh;
        for (int k = 0; k < 3; ++k)
          box.lo[k] = std::min(box.lo[k], h.t[k]), box.hi[k] = std::max(box.hi[k], h.t[k]);
      }
    if (fresh == 0) {
      p.skip.insert(pair);
      return true;
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
        written_[h.cell] = true;
    return true;
  }

  // The source holds every live element the destination needs.
  bool checkCovered() {
    std::string missing;
    forThreads([&](const int64_t t[3]) {
      for (size_t c = 0; c < sides_[1].clones.size(); ++c)
        for (int64_t g = 0; g < sides_[1].elems; ++g) {
          // Dead elements fall outside the tile (the box of the live ones lies inside the
          // workgroup's tile): their loads read writtenCell and take 0 (dstOverruns).
          const int64_t x = cell(sides_[1], t, c, g, &p.dstOverruns);
          if (!live())
            continue;
          if (x < 0 || !written_[x]) {
            for (size_t i = 0; i < n_; ++i)
              missing += (i ? ", " : "") + p.dims[i] + " + " + std::to_string(at_[i]);
            return false;
          }
        }
      return true;
    });
    if (!missing.empty())
      return fail("no lane of the workgroup holds the element at (" + missing +
                  ") from the origin of the tile");
    // Loads of elements outside the tile read a written cell (and take 0): the box's first
    // cell may be a hole no source element lands on.
    p.writtenCell = std::find(written_.begin(), written_.end(), true) - written_.begin();
    p.stored = written_;
    return true;
  }
};
} // namespace

SharedRelayout planSharedRelayout(const ThreadLayout &src, const ThreadLayout &dst,
                                  const LayoutMachine &machine, const sym::Facts &facts) {
  Planner planner(src, dst, machine, facts);
  planner.run();
  return std::move(planner.p);
}

} // namespace wave
