#include "passes/barrier_insertion.h"

#include <algorithm>
#include <climits>
#include <optional>
#include <cstddef>
#include <set>
#include <utility>

namespace wave {

namespace {

constexpr int kAny = INT_MIN; // a tile offset that may be any buffer

// Whether two distinct allocations share bytes.
struct Alias {
  const std::vector<std::vector<bool>> &overlap;
  bool operator()(int a, int b) const {
    return a >= 0 && b >= 0 && static_cast<size_t>(a) < overlap.size() &&
           static_cast<size_t>(b) < overlap[a].size() && overlap[a][b];
  }
};

// Accesses made since the last barrier, as (allocation, tile offset). Inside a loop of S
// buffers, offsets t and u touch the same buffer when t ≡ u (mod S); outside loops only when
// equal. Asynchronous writes stay in `inflight` until a wait completes them (a barrier alone
// does not); synchronous ones in `writes` until the next barrier.
struct Pending {
  std::set<std::pair<int, int>> reads, writes, inflight, atomics;
  bool operator==(const Pending &o) const {
    return reads == o.reads && writes == o.writes && inflight == o.inflight &&
           atomics == o.atomics;
  }
  void join(const Pending &o) {
    reads.insert(o.reads.begin(), o.reads.end());
    writes.insert(o.writes.begin(), o.writes.end());
    inflight.insert(o.inflight.begin(), o.inflight.end());
    atomics.insert(o.atomics.begin(), o.atomics.end());
  }
  static bool sameBuffer(int a, int b, int stages) {
    if (a == kAny || b == kAny)
      return true;
    if (stages <= 0)
      return a == b;
    return ((a - b) % stages + stages) % stages == 0;
  }
  // The newest conflicting tile offset of `s` (kAny when one may be any), or nothing. An entry
  // of another allocation that shares bytes with `res` (`alias`) conflicts in any buffer.
  static bool hits(const std::set<std::pair<int, int>> &s, int res, int tile, int stages,
                   int *newest = nullptr, const Alias *alias = nullptr) {
    bool hit = false;
    for (const auto &[r, t] : s) {
      const bool other = r != res && alias && (*alias)(r, res);
      if (other || (r == res && sameBuffer(t, tile, stages))) {
        const int at = other ? kAny : t;
        if (newest)
          *newest = hit ? (*newest == kAny || at == kAny ? kAny : std::max(*newest, at)) : at;
        hit = true;
      }
    }
    return hit;
  }
  // Whether `s` holds an entry of another allocation that shares bytes with `res`.
  static bool hitsOther(const std::set<std::pair<int, int>> &s, int res, const Alias *alias) {
    if (!alias)
      return false;
    for (const auto &[r, t] : s)
      if (r != res && (*alias)(r, res))
        return true;
    return false;
  }
  // The state as the next iteration of a loop of `stages` buffers sees it: tile i + k of
  // iteration i is tile (i + 1) + (k - 1). Reads and synchronous writes only matter modulo the
  // buffers; a copy still in flight keeps its order, and one whose tile has passed without a
  // wait becomes "any".
  Pending shifted(int stages) const {
    auto norm = [&](int t) {
      if (t == kAny || stages <= 1)
        return t;
      return ((t - 1) % stages + stages) % stages;
    };
    Pending p;
    for (const auto &[r, t] : reads)
      p.reads.insert({r, norm(t)});
    for (const auto &[r, t] : writes)
      p.writes.insert({r, norm(t)});
    for (const auto &[r, t] : inflight)
      p.inflight.insert({r, t == kAny || t - 1 < 0 || stages <= 1 ? kAny : t - 1});
    for (const auto &[r, t] : atomics)
      p.atomics.insert({r, norm(t)});
    return p;
  }
  Pending anyStage() const {
    Pending p;
    for (const auto &[r, t] : reads)
      p.reads.insert({r, kAny});
    for (const auto &[r, t] : writes)
      p.writes.insert({r, kAny});
    for (const auto &[r, t] : inflight)
      p.inflight.insert({r, kAny});
    for (const auto &[r, t] : atomics)
      p.atomics.insert({r, kAny});
    return p;
  }
};

class Placer {
public:
  Placer(const std::vector<SyncItem> &items, const std::vector<std::vector<bool>> *overlap)
      : items_(items), alias_(overlap ? std::optional<Alias>(Alias{*overlap}) : std::nullopt), before_(items.size(), BarrierPlacement::None), keep_(items.size(), 0),
        fence_(items.size(), false), match_(items.size(), -1), else_(items.size(), -1) {
    std::vector<std::size_t> stack;
    for (std::size_t i = 0; i < items.size(); ++i) {
      const SyncItem::Kind k = items[i].kind;
      if (k == SyncItem::LoopBegin || k == SyncItem::IfBegin) {
        stack.push_back(i);
      } else if (k == SyncItem::IfElse && !stack.empty()) {
        else_[stack.back()] = static_cast<long>(i);
      } else if ((k == SyncItem::LoopEnd || k == SyncItem::IfEnd) && !stack.empty()) {
        match_[stack.back()] = static_cast<long>(i);
        stack.pop_back();
      }
    }
  }

  std::vector<BarrierPlacement> run(std::vector<int> *waitKeep, std::vector<bool> *proxyFence) {
    walk(0, items_.size(), Pending{}, 0);
    if (waitKeep)
      *waitKeep = keep_;
    if (proxyFence)
      *proxyFence = fence_;
    return before_;
  }

private:
  static int tileOf(const SyncItem &it) { return it.stage < 0 ? kAny : it.stage; }

  // A barrier before item i. A read that needs asynchronous copies gets a wait first: for all
  // copy groups up to the newest one it needs (one group per tile offset, committed in tile
  // order), keeping the newer ones in flight. Every barrier orders the reads and synchronous
  // writes before it against the accesses after it.
  void barrierAt(std::size_t i, Pending &s, int stages) {
    const SyncItem &it = items_[i];
    if (it.kind == SyncItem::Read && it.asyncProxy)
      fence_[i] = true;
    int newest = 0;
    const Alias *alias = alias_ ? &*alias_ : nullptr;
    bool wait = it.kind == SyncItem::Read &&
                Pending::hits(s.inflight, it.resource, tileOf(it), stages, &newest, alias);
    if ((it.kind == SyncItem::Write || it.kind == SyncItem::Atomic) &&
        Pending::hitsOther(s.inflight, it.resource, alias)) {
      wait = true; // copies into bytes this write reuses: all of them complete first
      newest = kAny;
    }
    if (wait) {
      std::set<std::pair<int, int>> kept;
      std::set<int> newerTiles;
      for (const auto &[r, t] : s.inflight) {
        if (newest == kAny || (t != kAny && t <= newest) ||
            (r == it.resource && Pending::sameBuffer(t, tileOf(it), stages)))
          continue;
        kept.insert({r, t});
        if (t != kAny)
          newerTiles.insert(t);
      }
      // A copy of unknown age may be older than the needed one: then nothing stays in flight.
      bool unknown = false;
      for (const auto &[r, t] : kept)
        unknown |= t == kAny;
      const int keep = unknown ? 0 : static_cast<int>(newerTiles.size());
      if (unknown)
        kept.clear();
      s.inflight = kept;
      keep_[i] = before_[i] == BarrierPlacement::WaitAndBarrier ? std::min(keep_[i], keep) : keep;
      before_[i] = BarrierPlacement::WaitAndBarrier;
    } else if (before_[i] == BarrierPlacement::None) {
      before_[i] = BarrierPlacement::Barrier;
    } else if (before_[i] == BarrierPlacement::WaitAndBarrier) {
      s.inflight.clear(); // placed in an earlier round: its wait is still there
      keep_[i] = 0;
    }
    s.reads.clear();
    s.writes.clear();
    s.atomics.clear();
  }

  // Walks items [begin, end) from state `s` inside a loop of `stages` buffers (0: outside any
  // loop); returns the state after them.
  Pending walk(std::size_t begin, std::size_t end, Pending s, int stages) {
    const Alias *alias = alias_ ? &*alias_ : nullptr;
    for (std::size_t i = begin; i < end; ++i) {
      const SyncItem &it = items_[i];
      const int tile = tileOf(it);
      switch (it.kind) {
      case SyncItem::Barrier:
        s.reads.clear();
        s.writes.clear();
        s.atomics.clear();
        break;
      case SyncItem::Read:
        if (before_[i] != BarrierPlacement::None ||
            Pending::hits(s.writes, it.resource, tile, stages, nullptr, alias) ||
            Pending::hits(s.inflight, it.resource, tile, stages, nullptr, alias) ||
            Pending::hits(s.atomics, it.resource, tile, stages, nullptr, alias))
          barrierAt(i, s, stages);
        s.reads.insert({it.resource, tile});
        break;
      case SyncItem::Write:
        if (before_[i] != BarrierPlacement::None ||
            Pending::hits(s.reads, it.resource, tile, stages, nullptr, alias) ||
            Pending::hits(s.atomics, it.resource, tile, stages, nullptr, alias) ||
            (it.exclusive && Pending::hits(s.writes, it.resource, tile, stages)) ||
            Pending::hitsOther(s.writes, it.resource, alias) ||
            Pending::hitsOther(s.inflight, it.resource, alias))
          barrierAt(i, s, stages);
        if (!it.waited)
          (it.async ? s.inflight : s.writes).insert({it.resource, tile});
        break;
      case SyncItem::Atomic:
        if (before_[i] != BarrierPlacement::None ||
            Pending::hits(s.reads, it.resource, tile, stages, nullptr, alias) ||
            Pending::hits(s.writes, it.resource, tile, stages, nullptr, alias) ||
            Pending::hits(s.inflight, it.resource, tile, stages, nullptr, alias) ||
            Pending::hitsOther(s.atomics, it.resource, alias))
          barrierAt(i, s, stages);
        s.atomics.insert({it.resource, tile});
        break;
      case SyncItem::LoopBegin: {
        if (before_[i] != BarrierPlacement::None)
          barrierAt(i, s, stages);
        std::size_t close = match_[i] < 0 ? end : static_cast<std::size_t>(match_[i]);
        Pending entry = s, out;
        // Monotone: barriers are only added and pending sets only grow, so this terminates.
        for (int round = 0; round < 64; ++round) {
          std::vector<BarrierPlacement> saved = before_;
          out = walk(i + 1, close, entry, it.stages);
          Pending next = s;
          next.join(out.shifted(it.stages));
          if (next == entry && saved == before_)
            break;
          entry = next;
        }
        // After the loop the iteration count, hence the buffer, is unknown; zero trips leave
        // the state before the loop.
        s = s.anyStage();
        s.join(out.anyStage());
        i = close;
        break;
      }
      case SyncItem::IfBegin: {
        // Every thread takes the same branch: each is walked from the state before the `if`,
        // and the state after it is what either branch may leave pending.
        if (before_[i] != BarrierPlacement::None)
          barrierAt(i, s, stages);
        const std::size_t close = match_[i] < 0 ? end : static_cast<std::size_t>(match_[i]);
        const std::size_t mid = else_[i] < 0 ? close : static_cast<std::size_t>(else_[i]);
        Pending taken = walk(i + 1, mid, s, stages);
        if (mid < close)
          taken.join(walk(mid + 1, close, s, stages));
        else
          taken.join(s);
        s = taken;
        i = close;
        break;
      }
      default:
        if (before_[i] != BarrierPlacement::None)
          barrierAt(i, s, stages);
        break;
      }
    }
    return s;
  }

  const std::vector<SyncItem> &items_;
  std::optional<Alias> alias_;
  std::vector<BarrierPlacement> before_;
  std::vector<int> keep_;
  std::vector<bool> fence_;
  std::vector<long> match_;
  std::vector<long> else_; // an IfBegin's IfElse, -1 when the `if` has none
};

} // namespace

std::vector<BarrierPlacement> placeBarriers(const std::vector<SyncItem> &items,
                                            std::vector<int> *waitKeep,
                                            std::vector<bool> *proxyFence,
                                            const std::vector<std::vector<bool>> *overlap) {
  return Placer(items, overlap).run(waitKeep, proxyFence);
}

} // namespace wave
