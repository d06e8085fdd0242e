#include "passes/thread_layout.h"

#include "symbolic/compiled_expr.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

namespace wave {

std::vector<CloneAssign> LayoutMachine::clones(const std::set<std::string> &syms) const {
  std::vector<CloneAssign> out(1);
  for (const auto &s : syms) {
    auto it = cloneCounts.find(s);
    const int64_t count = it == cloneCounts.end() ? 1 : std::max<int64_t>(it->second, 1);
    std::vector<CloneAssign> next;
    for (const auto &a : out)
      for (int64_t i = 0; i < count; ++i) {
        CloneAssign b = a;
        b[s] = i;
        next.push_back(std::move(b));
      }
    out = std::move(next);
  }
  return out;
}

int64_t BitLinear::at(int64_t lane) const {
  int64_t v = base;
  for (size_t j = 0; j < weight.size(); ++j)
    if (lane >> j & 1)
      v += weight[j];
  return v;
}

bool BitLinear::isIdentity() const {
  if (base != 0)
    return false;
  for (size_t j = 0; j < weight.size(); ++j)
    if (weight[j] != (int64_t{1} << j))
      return false;
  return true;
}

bool BitLinear::isConstant() const {
  return std::all_of(weight.begin(), weight.end(), [](int64_t w) { return w == 0; });
}

bool sameLayout(const ThreadLayout &src, const ThreadLayout &dst, const sym::Facts &facts) {
  bool srcUsesG = false;
  for (const auto &[dim, e] : src.index) {
    auto it = dst.index.find(dim);
    if (it == dst.index.end() || !facts.provesEqual(it->second, e))
      return false;
    srcUsesG |= e.dependsOn("$g");
  }
  if (src.elems == dst.elems)
    return true;
  return src.elems == 1 && !srcUsesG;
}

namespace {

// Fits values v[l], l < n (n a power of two), as a bit-linear function; false when they are not.
// Lanes with live[l] false are free: the fit takes the base from lane 0 and each weight from
// the first live lane whose other set bits have known weights (0 for a weight no live lane
// decides), and must then give every live lane its value.
bool fitBitLinear(const std::vector<int64_t> &v, BitLinear &out,
                  const std::vector<bool> *live = nullptr) {
  const size_t n = v.size();
  auto isLive = [&](size_t l) { return !live || (*live)[l]; };
  out.weight.clear();
  if (!isLive(0)) {
    size_t first = 0;
    while (first < n && !isLive(first))
      ++first;
    if (first == n) { // nothing live: any function will do
      out.base = 0;
      for (size_t bit = 1; bit < n; bit <<= 1)
        out.weight.push_back(0);
      return true;
    }
    return false; // a base only a live lane 0 decides here
  }
  out.base = v[0];
  std::vector<bool> known;
  for (size_t bit = 1; bit < n; bit <<= 1) {
    out.weight.push_back(0);
    known.push_back(false);
  }
  for (size_t j = 0; j < known.size(); ++j)
    for (size_t l = size_t{1} << j; l < n && !known[j]; ++l) {
      if (!(l >> j & 1) || !isLive(l))
        continue;
      bool othersKnown = true;
      for (size_t k = 0; k < known.size(); ++k)
        othersKnown &= k == j || !(l >> k & 1) || known[k];
      if (othersKnown) { // weight[j] is still 0, so at(l) is l's value without bit j
        out.weight[j] = v[l] - out.at(static_cast<int64_t>(l));
        known[j] = true;
      }
    }
  for (size_t l = 0; l < n; ++l)
    if (isLive(l) && out.at(static_cast<int64_t>(l)) != v[l])
      return false;
  return true;
}

struct KeyHash {
  size_t operator()(const std::vector<int64_t> &k) const {
    size_t h = 1469598103934665603ull;
    for (int64_t x : k)
      h = (h ^ static_cast<size_t>(x)) * 1099511628211ull;
    return h;
  }
};

// Where one element of a value sits, for one lane: the source element that holds it. A dead
// element (outside the workgroup's tile, held by no lane of the wave) has lane kDead.
constexpr int64_t kDead = -1;
struct Hit {
  size_t clone;
  int64_t elem;
  int64_t lane;
  bool dead() const { return lane == kDead; }
  bool operator==(const Hit &o) const {
    return clone == o.clone && elem == o.elem && lane == o.lane;
  }
};

// planRelayout's evaluation slots: the lane's thread id, the element, every clone symbol of
// either layout, then every other symbol (from `firstOther` on).
std::vector<std::string> relayoutSlots(const ThreadLayout &src, const ThreadLayout &dst,
                                       size_t &firstOther) {
  std::vector<std::string> slots = {"$T0", "$g"};
  std::set<std::string> others;
  auto collect = [&](const ThreadLayout &l) {
    std::set<std::string> clones = l.cloneSyms;
    for (const auto &[dim, e] : l.index)
      for (const auto &s : e.freeSymbols())
        if (s.rfind("$i_", 0) == 0)
          clones.insert(s);
        else if (s != "$T0" && s != "$g")
          others.insert(s);
    for (const auto &s : clones)
      if (std::find(slots.begin(), slots.end(), s) == slots.end())
        slots.push_back(s);
  };
  collect(src);
  collect(dst);
  firstOther = slots.size();
  slots.insert(slots.end(), others.begin(), others.end());
  return slots;
}

// For each element e of each destination clone d and each lane, the source element it takes
// (choice[d][e][lane]), evaluated at two samples of the other symbols and in the first and last
// wave along axis 0, which must all agree. False (with plan.why) when some element has no
// holder in the lane's wave or the samples disagree.
bool chooseSources(const ThreadLayout &src, const ThreadLayout &dst, const LayoutMachine &machine,
                   const std::vector<std::string> &slots, size_t firstOther,
                   const std::vector<const sym::CompiledExpr *> &srcExpr,
                   const std::vector<const sym::CompiledExpr *> &dstExpr, RelayoutPlan &plan,
                   std::vector<std::vector<std::vector<Hit>>> &choice) {
  const int64_t w = machine.waveSize;
  const int64_t sw = machine.shuffleWidth > 0 ? machine.shuffleWidth : w;
  const int64_t waves0 = std::max<int64_t>(machine.block[0] / w, 1);
  const size_t nd = plan.dstClones.size(), ns = plan.srcClones.size();
  bool first = true;
  std::vector<int64_t> vals(slots.size(), 0);
  // Per source dim (in key order) that a workgroup splits: the slot of its workgroup id and
  // the tile (LayoutMachine::workgroupTiles); slot -1 for other dims.
  std::vector<std::pair<int, int64_t>> wgTile;
  for (const auto &[dim, e] : src.index) {
    std::pair<int, int64_t> t{-1, 0};
    if (auto it = machine.workgroupTiles.find(dim); it != machine.workgroupTiles.end()) {
      auto at = std::find(slots.begin() + firstOther, slots.end(), it->second.first);
      if (at != slots.end() && it->second.second > 0)
        t = {static_cast<int>(at - slots.begin()), it->second.second};
    }
    wgTile.push_back(t);
  }
  auto setClone = [&](const CloneAssign &a) {
    for (size_t k = 2; k < firstOther; ++k) {
      auto it = a.find(slots[k]);
      vals[k] = it == a.end() ? 0 : it->second;
    }
  };
  for (int sample = 0; sample < 2; ++sample) {
    for (size_t k = firstOther; k < slots.size(); ++k) {
      const std::string &s = slots[k];
      int64_t v = sample == 0 ? 0 : 3 + 2 * static_cast<int64_t>(k);
      if (s == "$T1")
        v = sample == 0 ? 0 : machine.block[1] - 1;
      if (s == "$T2")
        v = sample == 0 ? 0 : machine.block[2] - 1;
      vals[k] = v;
    }
    for (int64_t wave : {int64_t{0}, waves0 - 1}) {
      std::unordered_map<std::vector<int64_t>, std::vector<Hit>, KeyHash> held;
      bool ok = true;
      std::vector<int64_t> key(srcExpr.size());
      // The coordinates (on the source's dims) of element e of lane l, into `key`.
      auto coordinates = [&](const std::vector<const sym::CompiledExpr *> &exprs, int64_t l,
                             int64_t e) {
        vals[0] = wave * w + l;
        vals[1] = e;
        for (size_t d = 0; d < exprs.size(); ++d)
          key[d] = sym::evaluate(*exprs[d], vals.data(), ok);
      };
      for (size_t c = 0; c < ns; ++c) {
        setClone(plan.srcClones[c]);
        for (int64_t e = 0; e < src.elems; ++e)
          for (int64_t l = 0; l < w; ++l) {
            coordinates(srcExpr, l, e);
            held[key].push_back({c, e, l});
          }
      }
      // Whether the element at `key` lies outside the workgroup's tile.
      auto deadAt = [&]() {
        for (size_t d = 0; d < wgTile.size(); ++d)
          if (wgTile[d].first >= 0) {
            const int64_t rel = key[d] - vals[wgTile[d].first] * wgTile[d].second;
            if (rel < 0 || rel >= wgTile[d].second)
              return true;
          }
        return false;
      };
      for (size_t c = 0; c < nd; ++c) {
        setClone(plan.dstClones[c]);
        for (int64_t e = 0; e < dst.elems; ++e)
          for (int64_t l = 0; l < w; ++l) {
            coordinates(dstExpr, l, e);
            auto it = held.find(key);
            const bool heldHere =
                it != held.end() && std::any_of(it->second.begin(), it->second.end(),
                                                [&](const Hit &x) { return x.lane / sw == l / sw; });
            if (!heldHere && deadAt()) {
              const Hit h{0, 0, kDead};
              if (first)
                choice[c][e][l] = h;
              else if (!(choice[c][e][l] == h)) {
                plan.why = "a layout whose lanes are not arranged alike in every wave";
                return false;
              }
              continue;
            }
            if (it == held.end()) {
              std::string at;
              size_t d = 0;
              for (const auto &[dim, x] : src.index)
                at += fmt::format("{}{} = {}", at.empty() ? "" : ", ", dim, key[d++]);
              plan.why = fmt::format("the element at ({}) that lane {} of wave {} needs is held "
                                     "by no lane of that wave",
                                     at, l, wave);
              return false;
            }
            // Prefer the lane's own element, then the lowest lane a shuffle reaches.
            Hit h = it->second.front();
            for (const Hit &x : it->second)
              if (x.lane / sw == l / sw) {
                h = x;
                break;
              }
            for (const Hit &x : it->second)
              if (x.lane == l) {
                h = x;
                break;
              }
            if (h.lane / sw != l / sw) {
              plan.why = fmt::format("the element that lane {} of wave {} needs is held only "
                                     "by another hardware wave of its group of {} lanes",
                                     l, wave, w);
              return false;
            }
            if (first)
              choice[c][e][l] = h;
            else if (!(choice[c][e][l] == h)) {
              plan.why = "a layout whose lanes are not arranged alike in every wave";
              return false;
            }
          }
      }
      if (!ok) {
        plan.why = "an index that divides by zero";
        return false;
      }
      first = false;
    }
  }

  return true;
}

// The plan from the chosen sources (`elems` elements per destination clone, `w` lanes): in
// the lane when every lane takes the same element of its own, else a bit-linear shuffle.
RelayoutPlan classifyRelayout(RelayoutPlan plan,
                              const std::vector<std::vector<std::vector<Hit>>> &choice,
                              int64_t elems, int64_t w, int64_t sw) {
  const size_t nd = plan.dstClones.size();
  // The first live lane's pick of each destination element ({0, 0} when every lane's is dead).
  auto firstLive = [&](size_t c, int64_t e) {
    for (int64_t l = 0; l < w; ++l)
      if (!choice[c][e][l].dead())
        return choice[c][e][l];
    return Hit{0, 0, kDead};
  };
  bool ownLane = true, fixed = true;
  for (size_t c = 0; c < nd; ++c)
    for (int64_t e = 0; e < elems; ++e) {
      const Hit ref = firstLive(c, e);
      for (int64_t l = 0; l < w; ++l) {
        const Hit &h = choice[c][e][l];
        if (h.dead())
          continue;
        ownLane &= h.lane == l;
        fixed &= h.clone == ref.clone && h.elem == ref.elem;
      }
    }
  if (ownLane && fixed) {
    plan.kind = RelayoutPlan::InLane;
    plan.inLane.assign(nd, std::vector<RelayoutPlan::Pick>(elems));
    for (size_t c = 0; c < nd; ++c)
      for (int64_t e = 0; e < elems; ++e) {
        const Hit ref = firstLive(c, e);
        plan.inLane[c][e] = {ref.clone, ref.elem};
      }
    return plan;
  }
  plan.kind = RelayoutPlan::CrossLane;
  plan.crossLane.assign(nd, std::vector<RelayoutPlan::LanePick>(elems));
  for (size_t c = 0; c < nd; ++c)
    for (int64_t e = 0; e < elems; ++e) {
      RelayoutPlan::LanePick &p = plan.crossLane[c][e];
      std::vector<int64_t> lanes(w), which(w);
      std::vector<bool> live(w, true);
      for (int64_t l = 0; l < w; ++l) {
        const Hit &h = choice[c][e][l];
        if (h.dead()) {
          live[l] = false;
          continue;
        }
        lanes[l] = h.lane;
        RelayoutPlan::Pick pick{h.clone, h.elem};
        auto at = std::find(p.candidates.begin(), p.candidates.end(), pick);
        if (at == p.candidates.end())
          at = p.candidates.insert(p.candidates.end(), pick);
        which[l] = at - p.candidates.begin();
      }
      if (p.candidates.empty())
        p.candidates.push_back({0, 0});
      // A dead lane takes what the fitted pattern gives it, which must still be a lane of its
      // own hardware wave and one of the candidates.
      bool inRange = fitBitLinear(lanes, p.lane, &live) && fitBitLinear(which, p.choice, &live);
      for (int64_t l = 0; l < w && inRange; ++l) {
        const int64_t from = p.lane.at(l), k = p.choice.at(l);
        inRange = from >= 0 && from < w && from / sw == l / sw && k >= 0 &&
                  k < static_cast<int64_t>(p.candidates.size());
      }
      if (!inRange) {
        plan.kind = RelayoutPlan::Impossible;
        plan.crossLane.clear();
        plan.why = "a lane pattern that is not a bit-linear function of the lane id";
        return plan;
      }
    }
  return plan;
}

} // namespace

RelayoutPlan planRelayout(const ThreadLayout &src, const ThreadLayout &dst,
                          const LayoutMachine &machine, const sym::Facts &facts) {
  RelayoutPlan plan;
  plan.dstClones = machine.clones(dst.cloneSyms);
  plan.srcClones = machine.clones(src.cloneSyms);
  for (const auto &[dim, e] : src.index)
    if (!dst.index.count(dim)) {
      plan.why = "the destination layout has no dim " + dim;
      return plan;
    }
  if (sameLayout(src, dst, facts)) {
    plan.kind = RelayoutPlan::Same;
    return plan;
  }

  size_t firstOther = 0;
  const std::vector<std::string> slots = relayoutSlots(src, dst, firstOther);

  sym::ExprPool pool;
  std::vector<const sym::CompiledExpr *> srcExpr, dstExpr; // over src's dims, in map order
  for (const auto &[dim, e] : src.index) {
    srcExpr.push_back(pool.compile(e, slots));
    dstExpr.push_back(pool.compile(dst.index.at(dim), slots));
    if (!srcExpr.back() || !dstExpr.back()) {
      plan.why = "an index of dim " + dim + " that cannot be evaluated";
      return plan;
    }
  }

  const int64_t w = machine.waveSize;
  // choice[d][e][lane], filled by the first (sample, wave) and compared with the others.
  std::vector<std::vector<std::vector<Hit>>> choice(
      plan.dstClones.size(), std::vector<std::vector<Hit>>(dst.elems, std::vector<Hit>(w)));
  if (!chooseSources(src, dst, machine, slots, firstOther, srcExpr, dstExpr, plan, choice))
    return plan;
  return classifyRelayout(std::move(plan), choice, dst.elems, w,
                          machine.shuffleWidth > 0 ? machine.shuffleWidth : w);
}

} // namespace wave
