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
bool fitBitLinear(const std::vector<int64_t> &v, BitLinear &out) {
  out.base = v[0];
  out.weight.clear();
  for (size_t bit = 1; bit < v.size(); bit <<= 1)
    out.weight.push_back(v[bit] - v[0]);
  for (size_t l = 0; l < v.size(); ++l)
    if (out.at(static_cast<int64_t>(l)) != v[l])
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

// Where one element of a value sits, for one lane: the source element that holds it.
struct Hit {
  size_t clone;
  int64_t elem;
  int64_t lane;
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
      for (size_t c = 0; c < nd; ++c) {
        setClone(plan.dstClones[c]);
        for (int64_t e = 0; e < dst.elems; ++e)
          for (int64_t l = 0; l < w; ++l) {
            coordinates(dstExpr, l, e);
            auto it = held.find(key);
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
                              int64_t elems, int64_t w) {
  const size_t nd = plan.dstClones.size();
  bool ownLane = true, fixed = true;
  for (size_t c = 0; c < nd; ++c)
    for (int64_t e = 0; e < elems; ++e)
      for (int64_t l = 0; l < w; ++l) {
        const Hit &h = choice[c][e][l];
        ownLane &= h.lane == l;
        fixed &= h.clone == choice[c][e][0].clone && h.elem == choice[c][e][0].elem;
      }
  if (ownLane && fixed) {
    plan.kind = RelayoutPlan::InLane;
    plan.inLane.assign(nd, std::vector<RelayoutPlan::Pick>(elems));
    for (size_t c = 0; c < nd; ++c)
      for (int64_t e = 0; e < elems; ++e)
        plan.inLane[c][e] = {choice[c][e][0].clone, choice[c][e][0].elem};
    return plan;
  }
  plan.kind = RelayoutPlan::CrossLane;
  plan.crossLane.assign(nd, std::vector<RelayoutPlan::LanePick>(elems));
  for (size_t c = 0; c < nd; ++c)
    for (int64_t e = 0; e < elems; ++e) {
      RelayoutPlan::LanePick &p = plan.crossLane[c][e];
      std::vector<int64_t> lanes(w), which(w);
      for (int64_t l = 0; l < w; ++l) {
        const Hit &h = choice[c][e][l];
        lanes[l] = h.lane;
        RelayoutPlan::Pick pick{h.clone, h.elem};
        auto at = std::find(p.candidates.begin(), p.candidates.end(), pick);
        if (at == p.candidates.end())
          at = p.candidates.insert(p.candidates.end(), pick);
        which[l] = at - p.candidates.begin();
      }
      if (!fitBitLinear(lanes, p.lane) || !fitBitLinear(which, p.choice)) {
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
  return classifyRelayout(std::move(plan), choice, dst.elems, w);
}

} // namespace wave
