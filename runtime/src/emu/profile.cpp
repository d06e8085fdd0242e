// The emulator's profiler: counting rules, the recorder the interpreter feeds, and the reports
// (profile.h; the rules are described in docs/internals.md, "Profiling counters").
#include "profile.h"

#include "emu.h"

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>

namespace wave::emu::profile {

// ---- pure counting -------------------------------------------------------------------------

void GlobalCost::add(const GlobalCost &o) {
  requested += o.requested;
  unique += o.unique;
  sectors += o.sectors;
  segments64 += o.segments64;
  segments128 += o.segments128;
}

double GlobalCost::efficiency() const {
  return sectors ? double(unique) / double(sectors * kSectorBytes) : 0.0;
}

void SharedCost::add(const SharedCost &o) {
  requested += o.requested;
  phases += o.phases;
  wavefronts += o.wavefronts;
}

GlobalCost globalCost(const LaneAccess *accesses, size_t n) {
  GlobalCost c;
  std::vector<std::pair<uint64_t, uint64_t>> spans; // [begin, end)
  std::vector<uint64_t> sectors;
  for (size_t i = 0; i < n; ++i) {
    const LaneAccess &a = accesses[i];
    if (!a.bytes)
      continue;
    c.requested += a.bytes;
    spans.push_back({a.addr, a.addr + a.bytes});
    for (uint64_t s = a.addr / kSectorBytes; s <= (a.addr + a.bytes - 1) / kSectorBytes; ++s)
      sectors.push_back(s);
  }
  std::sort(spans.begin(), spans.end());
  uint64_t end = 0;
  bool open = false;
  for (const auto &[b, e] : spans) {
    if (!open || b >= end) {
      c.unique += e - b;
      end = e;
      open = true;
    } else if (e > end) {
      c.unique += e - end;
      end = e;
    }
  }
  std::sort(sectors.begin(), sectors.end());
  sectors.erase(std::unique(sectors.begin(), sectors.end()), sectors.end());
  c.sectors = sectors.size();
  for (unsigned shift = 1; shift <= 2; ++shift) {
    uint64_t count = 0, last = UINT64_MAX;
    for (uint64_t s : sectors)
      if ((s >> shift) != last) {
        last = s >> shift;
        ++count;
      }
    (shift == 1 ? c.segments64 : c.segments128) = count;
  }
  return c;
}

uint32_t lanesPerPhase(uint32_t width, const BankRules &rules) {
  uint32_t w = std::max(width, rules.bankBytes), p2 = 1;
  while (p2 < w)
    p2 <<= 1;
  return std::max(1u, rules.banks * rules.bankBytes / p2);
}

SharedCost sharedCost(const LaneAccess *accesses, size_t n, uint32_t width,
                      const BankRules &rules) {
  SharedCost c;
  const uint32_t perPhase = lanesPerPhase(width, rules);
  // (phase, bank, word) of every word a lane touches; distinct triples, then per phase the
  // bank with the most distinct words.
  struct Key {
    uint32_t phase, bank;
    uint64_t word;
    bool operator<(const Key &o) const {
      return phase != o.phase ? phase < o.phase : bank != o.bank ? bank < o.bank : word < o.word;
    }
    bool operator==(const Key &o) const {
      return phase == o.phase && bank == o.bank && word == o.word;
    }
  };
  std::vector<Key> keys;
  for (size_t i = 0; i < n; ++i) {
    const LaneAccess &a = accesses[i];
    if (!a.bytes)
      continue;
    c.requested += a.bytes;
    for (uint64_t w = a.addr / rules.bankBytes; w <= (a.addr + a.bytes - 1) / rules.bankBytes; ++w)
      keys.push_back({a.lane / perPhase, uint32_t(w % rules.banks), w});
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  for (size_t i = 0; i < keys.size();) {
    const uint32_t phase = keys[i].phase;
    uint64_t most = 0;
    while (i < keys.size() && keys[i].phase == phase) {
      const uint32_t bank = keys[i].bank;
      uint64_t words = 0;
      for (; i < keys.size() && keys[i].phase == phase && keys[i].bank == bank; ++i)
        ++words;
      most = std::max(most, words);
    }
    ++c.phases;
    c.wavefronts += most;
  }
  return c;
}

BankRules bankRules(const std::string &) { return BankRules{}; }

// ---- instruction classes and sites ---------------------------------------------------------

const char *className(Class c) {
  static const char *names[] = {"mma", "alu", "global_memory", "shared_memory",
                                "barrier", "shuffle", "other"};
  return c < kClasses ? names[c] : "?";
}

Class classify(const Inst &in) {
  const Op op = Op(in.op);
  const bool shared = in.imm == uint32_t(Space::Shared);
  switch (op) {
  case Op::Mma: case Op::Wgmma: return Mma;
  case Op::Wave: return WaveOp(in.aux) == WaveOp::Ldmatrix ? SharedMem : Shuffle;
  case Op::Barrier: case Op::BarArrive: return Barrier;
  case Op::Load: case Op::Store: case Op::MaskedLoad: case Op::MaskedStore:
  case Op::AtomicRmw: case Op::CmpXchg:
    return shared ? SharedMem : GlobalMem;
  case Op::BufferLoad: case Op::BufferStore: case Op::AsyncCopy: case Op::BufferLoadLds:
  case Op::TmaLoad: case Op::TmaStore:
    return GlobalMem;
  case Op::Mbcnt: case Op::CvtFp8ToF32: case Op::CvtPkF32ToFp8: case Op::CvtBf16Pack:
  case Op::Reduce:
    return Alu;
  default:
    return op >= Op::Add && op <= Op::IntToPtr ? Alu : Other;
  }
}

namespace {

// The op name and bytes per lane of a memory instruction.
void describe(const Inst &in, Site &s) {
  const uint32_t es = typeSize(Type(in.type));
  s.shared = in.imm == uint32_t(Space::Shared);
  s.width = es * std::max(in.lanes, 1u);
  switch (Op(in.op)) {
  case Op::Load: s.op = "load"; break;
  case Op::MaskedLoad: s.op = "masked_load"; break;
  case Op::Store: s.op = "store"; break;
  case Op::MaskedStore: s.op = "masked_store"; break;
  case Op::AtomicRmw: s.op = "atomic"; s.width = es; break;
  case Op::CmpXchg: s.op = "cmpxchg"; s.width = es; break;
  case Op::BufferLoad: s.op = "buffer_load"; s.shared = false; break;
  case Op::BufferStore: s.op = "buffer_store"; s.shared = false; break;
  case Op::AsyncCopy: s.op = "cp.async"; s.shared = false; s.width = in.imm; break;
  case Op::BufferLoadLds: s.op = "buffer_load_lds"; s.shared = false; s.width = in.imm; break;
  // TMA: one thread's instruction moving a box (its rows inside the tensor are its accesses);
  // the GPU serves it in the TMA unit, not the LSU pipe (docs/internals.md, "Profiling
  // counters"), so reports and bench/profile_vs_ncu.py keep these sites apart.
  case Op::TmaLoad: s.op = "tma_load"; s.shared = false; s.width = 16; break;
  case Op::TmaStore: s.op = "tma_store"; s.shared = false; s.width = 16; break;
  case Op::Wave: s.op = "ldmatrix"; s.shared = true; s.width = 16; break;
  default: s.op = "memory"; break;
  }
}

} // namespace

void KernelProfile::merge(const KernelProfile &o) {
  if (name.empty()) {
    name = o.name;
    target = o.target;
    waveSize = o.waveSize;
  }
  launches += o.launches;
  std::copy(o.grid, o.grid + 3, grid);
  std::copy(o.block, o.block + 3, block);
  ldsBytes = o.ldsBytes;
  threads += o.threads;
  waves += o.waves;
  for (unsigned c = 0; c < kClasses; ++c)
    threadInsts[c] += o.threadInsts[c];
  mmaWaveInsts += o.mmaWaveInsts;
  wgmmaWaveInsts += o.wgmmaWaveInsts;
  wgmmaSharedBytes += o.wgmmaSharedBytes;
  tmaFillSectors += o.tmaFillSectors;
  for (const Site &s : o.sites) {
    auto it = std::lower_bound(sites.begin(), sites.end(), s.pc,
                               [](const Site &a, uint32_t pc) { return a.pc < pc; });
    if (it == sites.end() || it->pc != s.pc) {
      sites.insert(it, s);
      continue;
    }
    it->executions += s.executions;
    it->laneAccesses += s.laneAccesses;
    it->global.add(s.global);
    it->lds.add(s.lds);
  }
}

GlobalCost KernelProfile::globalTotal() const {
  GlobalCost c;
  for (const Site &s : sites)
    c.add(s.global);
  return c;
}

SharedCost KernelProfile::sharedTotal() const {
  SharedCost c;
  for (const Site &s : sites)
    c.add(s.lds);
  return c;
}

void Collector::add(const KernelProfile &k) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (KernelProfile &have : kernels_)
    if (have.name == k.name && have.target == k.target) {
      have.merge(k);
      return;
    }
  kernels_.push_back(k);
}

std::vector<KernelProfile> Collector::kernels() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return kernels_;
}

namespace {
std::atomic<Collector *> installed{nullptr};
} // namespace

void setCollector(Collector *c) { installed.store(c); }
Collector *collector() { return installed.load(); }

// ---- the recorder --------------------------------------------------------------------------

Recorder::Recorder(const Program &p, const KernelCode &k, uint32_t threads, uint32_t waveSize,
                   const std::string &target)
    : k_(k), strings_(&p.strings), wave_(waveSize), rules_(bankRules(target)), events_(threads) {
  prefix_.assign((k.code.size() + 1) * kClasses, 0);
  for (size_t i = 0; i < k.code.size(); ++i) {
    for (unsigned c = 0; c < kClasses; ++c)
      prefix_[(i + 1) * kClasses + c] = prefix_[i * kClasses + c];
    ++prefix_[(i + 1) * kClasses + classify(k.code[i])];
  }
  profile_.name = k.name;
  profile_.target = target;
  profile_.waveSize = waveSize;
}

Site &Recorder::site(uint32_t pc) {
  auto it = sites_.find(pc);
  if (it != sites_.end())
    return profile_.sites[it->second];
  Site s;
  s.pc = pc;
  const Inst &in = k_.code[pc];
  describe(in, s);
  if (in.loc < k_.locs.size()) {
    const KernelCode::Loc &l = k_.locs[in.loc];
    if (l.file != kNoString && l.file < strings_->size()) {
      s.file = (*strings_)[l.file];
      s.line = l.line;
      s.col = l.col;
    }
  }
  sites_[pc] = profile_.sites.size();
  profile_.sites.push_back(s);
  return profile_.sites.back();
}

void Recorder::waveExecution(uint32_t pc, const std::vector<LaneAccess> &lanes) {
  Site &s = site(pc);
  ++s.executions;
  s.laneAccesses += lanes.size();
  if (s.shared)
    s.lds.add(sharedCost(lanes.data(), lanes.size(), s.width, rules_));
  else
    s.global.add(globalCost(lanes.data(), lanes.size()));
}

void Recorder::flushWave(uint32_t first, uint32_t count) {
  struct Rec {
    uint32_t pc, occurrence, lane;
    uint64_t addr;
    uint32_t bytes;
  };
  std::vector<Rec> recs;
  std::unordered_map<uint32_t, uint32_t> seen;
  for (uint32_t t = first; t < first + count && t < events_.size(); ++t) {
    std::vector<Event> &ev = events_[t];
    if (ev.empty())
      continue;
    seen.clear();
    uint32_t occurrence = 0;
    for (const Event &e : ev) {
      if (e.first)
        occurrence = seen[e.pc]++;
      recs.push_back({e.pc, occurrence, t - first, e.addr, e.bytes});
    }
    ev.clear();
  }
  std::stable_sort(recs.begin(), recs.end(), [](const Rec &a, const Rec &b) {
    return a.pc != b.pc ? a.pc < b.pc : a.occurrence < b.occurrence;
  });
  std::vector<LaneAccess> lanes;
  for (size_t i = 0; i < recs.size();) {
    size_t j = i;
    lanes.clear();
    for (; j < recs.size() && recs[j].pc == recs[i].pc && recs[j].occurrence == recs[i].occurrence;
         ++j)
      lanes.push_back({recs[j].lane, recs[j].addr, recs[j].bytes});
    waveExecution(recs[i].pc, lanes);
    i = j;
  }
}

void Recorder::workgroup(uint32_t threads) {
  profile_.threads += threads;
  profile_.waves += (threads + wave_ - 1) / wave_;
}

KernelProfile Recorder::finish() {
  for (unsigned c = 0; c < kClasses; ++c)
    profile_.threadInsts[c] = counts_[c];
  std::sort(profile_.sites.begin(), profile_.sites.end(),
            [](const Site &a, const Site &b) { return a.pc < b.pc; });
  sites_.clear();
  for (size_t i = 0; i < profile_.sites.size(); ++i)
    sites_[profile_.sites[i].pc] = i;
  return profile_;
}

} // namespace wave::emu::profile
