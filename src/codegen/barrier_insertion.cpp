#include "codegen/barrier_insertion.h"

#include <cstddef>
#include <set>
#include <utility>

namespace wave {

namespace {

// Accesses made since the last barrier, as (allocation, stage); stage -1 = any stage.
struct Pending {
  std::set<std::pair<int, int>> reads, writes;
  bool async = false; // some pending write is asynchronous
  bool operator==(const Pending &o) const {
    return reads == o.reads && writes == o.writes && async == o.async;
  }
  void join(const Pending &o) {
    reads.insert(o.reads.begin(), o.reads.end());
    writes.insert(o.writes.begin(), o.writes.end());
    async |= o.async;
  }
  void clear() {
    reads.clear();
    writes.clear();
    async = false;
  }
  static bool hits(const std::set<std::pair<int, int>> &s, int res, int stage) {
    for (const auto &[r, st] : s)
      if (r == res && (st < 0 || stage < 0 || st == stage))
        return true;
    return false;
  }
  // The state as the next iteration of a loop of `stages` buffers sees it: what iteration i
  // did to buffer (i + k) % S, iteration i + 1 calls buffer (i + 1 + k - 1) % S.
  Pending shifted(int stages) const {
    Pending p;
    p.async = async;
    for (const auto &[r, st] : reads)
      p.reads.insert({r, st < 0 || stages <= 1 ? st : (st + stages - 1) % stages});
    for (const auto &[r, st] : writes)
      p.writes.insert({r, st < 0 || stages <= 1 ? st : (st + stages - 1) % stages});
    return p;
  }
  Pending anyStage() const {
    Pending p;
    p.async = async;
    for (const auto &[r, st] : reads)
      p.reads.insert({r, -1});
    for (const auto &[r, st] : writes)
      p.writes.insert({r, -1});
    return p;
  }
};

class Placer {
public:
  explicit Placer(const std::vector<SyncItem> &items)
      : items_(items), before_(items.size(), BarrierPlacement::None), match_(items.size(), -1) {
    std::vector<std::size_t> stack;
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (items[i].kind == SyncItem::LoopBegin)
        stack.push_back(i);
      else if (items[i].kind == SyncItem::LoopEnd && !stack.empty()) {
        match_[stack.back()] = static_cast<long>(i);
        stack.pop_back();
      }
    }
  }

  std::vector<BarrierPlacement> run() {
    walk(0, items_.size(), Pending{});
    return before_;
  }

private:
  void barrierAt(std::size_t i, Pending &s) {
    if (s.async)
      before_[i] = BarrierPlacement::WaitAndBarrier;
    else if (before_[i] == BarrierPlacement::None)
      before_[i] = BarrierPlacement::Barrier;
    s.clear();
  }

  // Walks items [begin, end) from state `s`; returns the state after them.
  Pending walk(std::size_t begin, std::size_t end, Pending s) {
    for (std::size_t i = begin; i < end; ++i) {
      const SyncItem &it = items_[i];
      if (before_[i] != BarrierPlacement::None)
        barrierAt(i, s);
      switch (it.kind) {
      case SyncItem::Barrier: s.clear(); break;
      case SyncItem::Read:
        if (Pending::hits(s.writes, it.resource, it.stage))
          barrierAt(i, s);
        s.reads.insert({it.resource, it.stage});
        break;
      case SyncItem::Write:
        if (Pending::hits(s.reads, it.resource, it.stage))
          barrierAt(i, s);
        s.writes.insert({it.resource, it.stage});
        s.async |= it.async;
        break;
      case SyncItem::LoopBegin: {
        std::size_t close = match_[i] < 0 ? end : static_cast<std::size_t>(match_[i]);
        Pending entry = s, out;
        // Monotone: barriers are only added and pending sets only grow, so this terminates.
        for (int round = 0; round < 64; ++round) {
          std::vector<BarrierPlacement> saved = before_;
          out = walk(i + 1, close, entry);
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
      default: break;
      }
    }
    return s;
  }

  const std::vector<SyncItem> &items_;
  std::vector<BarrierPlacement> before_;
  std::vector<long> match_;
};

} // namespace

std::vector<BarrierPlacement> placeBarriers(const std::vector<SyncItem> &items) {
  return Placer(items).run();
}

} // namespace wave
