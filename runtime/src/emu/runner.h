// The workgroup runner of the CPU emulator (interp.cpp: the interpreter loop, collectives,
// cp.async and the scheduler; hopper.cpp: sm_90a's wgmma, TMA and mbarriers; regcheck.cpp:
// the register hazards of wgmmas in flight). Internal to runtime/src/emu.
#pragma once

#include "emu.h"
#include "interp_values.h"
#include "profile.h"
#include "numeric.h"

#include "../internal.h"

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

namespace wave::emu::runner_detail {

// AtMbar: blocked in an mbarrier wait (Op::MbarWait) whose phase has not completed; the
// scheduler wakes it (Ready, at the same pc) once it has.
enum LaneState : uint8_t { Ready, AtBarrier, AtWave, AtMbar, Done };

struct Lane {
  uint32_t pc = 0;
  uint8_t state = Ready;
  uint8_t *frame = nullptr;
  uint32_t tid[3] = {0, 0, 0};
  uint32_t lane = 0;   // within the wave
  uint32_t linear = 0; // within the workgroup
  // wgmma register hazards (regcheck.cpp): this thread's commits and waits. Groups below
  // wgRetired are retired for it; wgLive while the newest wgmma of its warp (group wgLast) is not.
  uint32_t wgOpen = 0, wgRetired = 0, wgLast = 0;
  bool wgLive = false;
};

// kAsyncProxy: a write by a TMA load, ordered with the threads' accesses by mbarriers, which
// the barrier epochs of the detector do not see: such bytes count as written, and neither they
// nor the accesses that meet them are races.
constexpr uint16_t kNobody = 0xffff, kManyReaders = 0xfffe, kAtomic = 0xfffd,
                   kAsyncProxy = 0xfffc;

// One wgmma's shared-memory reads, in flight until a wait_group of its warp retires its group
// (Op::Wgmma, WgmmaCommit, WgmmaWait).
struct WgmmaReads {
  uint32_t group;
  const Inst *issue;
  std::vector<uint32_t> bytes; // distinct offsets read
};
// One wgmma issued in the workgroup (by serial number), for the register-hazard check.
struct WgmmaIssue {
  uint32_t group; // the warp's open group at issue
  uint32_t warp;
  const Inst *issue;
};
constexpr uint32_t kRegA = 0x80000000u; // a register tag's kind bit: an A register (else D)
// An A register of a wgmma (tag kRegA | its index): the frame word it tags, so that a tag a
// move copied elsewhere does not protect the copy.
struct WgmmaRegA {
  uint32_t serial, word;
};

struct WgmmaQueue {
  std::vector<WgmmaReads> reads; // in issue order, so in group order
  size_t head = 0;               // reads before it are retired
  uint32_t open = 0;             // the group new reads join
};

// One mbarrier's state (Op::MbarInit ... MbarWait).
struct Mbar {
  uint32_t count = 0;   // arrivals per phase
  uint32_t pending = 0; // arrivals still expected in this phase
  int64_t tx = 0;       // transaction bytes still expected in this phase
  uint32_t phase = 0;   // completed phases
};

struct Shadow {
  uint32_t writeStamp = 0, readStamp = 0;
  // The writer's and the (single) reader's clocks at the access (Runner::clockOf; named
  // barriers' happens-before within an epoch, 0 when the kernel has none).
  uint32_t writeClock = 0, readClock = 0;
  uint16_t writer = kNobody, reader = kNobody;
  uint16_t async = kNobody; // the thread whose asynchronous copy in flight writes the byte
};

// One asynchronous copy in flight (Op::AsyncCopy): its data, read from global memory at issue,
// lands in shared memory at `dst` when a wait completes its group.
struct AsyncCopy {
  uint32_t group;
  uint32_t dst, bytes;
  const Inst *issue;
  uint8_t data[16];
};
// One barrier ID of the workgroup (Op::Barrier, BarArrive): the arrivals of its current phase.
// The threads waiting at it are those AtBarrier at an instruction with its ID.
struct NamedBarrier {
  uint32_t arrived = 0; // threads counted in this phase
  uint32_t expect = 0;  // the phase's thread count (0: every thread that has not ended)
  const Inst *first = nullptr; // the phase's first arrival
};

struct AsyncQueue {
  std::vector<AsyncCopy> copies; // in issue order, so in group order
  size_t head = 0;               // copies before it have landed
  uint32_t open = 0;             // the group new copies join; groups below it are committed
};

inline std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

class Runner {
public:
  Runner(const Program &p, const KernelCode &k, const LaunchParams &lp)
      : p_(p), k_(k), lp_(lp) {
    threads_ = lp.block[0] * lp.block[1] * lp.block[2];
    wave_ = lp.waveSize;
    frameStride_ = (k.frameBytes + 15) & ~15u;
    frames_.assign(size_t(threads_) * frameStride_ + 16, 0);
    lanes_.resize(threads_);
    sharedBytes_ = k.staticShared + lp.dynamicShared;
    shared_.assign(sharedBytes_, 0);
    shadow_.assign(sharedBytes_, Shadow{});
    async_.resize(threads_);
    touched_.assign(threads_, 0);
    wgmma_.resize((threads_ + 31) / 32);
    wgmmaReads_.assign(sharedBytes_, 0);
    for (const Inst &in : k.code)
      vcOn_ = vcOn_ || Op(in.op) == Op::BarArrive || (Op(in.op) == Op::Barrier && in.imm);
    if (vcOn_) {
      vc_.assign(size_t(threads_) * threads_, 0);
      barVc_.assign(size_t(kBarrierIds) * threads_, 0);
    }
    for (const Inst &in : k.code)
      if (Op(in.op) == Op::Wgmma) {
        regTags_.assign(size_t(threads_) * (frameStride_ / 4), 0);
        regPlan();
        break;
      }
    stepLimit_ = lp.stepLimit ? lp.stepLimit : kDefaultStepLimit;
  }

  bool runWorkgroup(const uint32_t wg[3]);
  std::string error;
  profile::Recorder *prof = nullptr; // wave-run --profile (profile.h); null: not profiling
  wave_status_t status = WAVE_ERROR_LAUNCH; // of the reported error

private:
  const Program &p_;
  const KernelCode &k_;
  const LaunchParams &lp_;
  uint32_t threads_, wave_, frameStride_, sharedBytes_;
  std::vector<uint8_t> frames_, shared_;
  std::vector<Lane> lanes_;
  std::vector<Shadow> shadow_;
  uint32_t stamp_ = 0, wgStart_ = 0; // barrier epochs, counted over every workgroup
  uint32_t wg_[3] = {0, 0, 0};
  uint64_t stepLimit_, steps_ = 0; // instructions this workgroup executed
  std::vector<AsyncQueue> async_;  // per thread (linear id)
  uint32_t asyncInFlight_ = 0;     // copies in flight in the workgroup
  std::map<uint32_t, Mbar> mbars_; // by shared offset; cleared per workgroup
  std::vector<WgmmaQueue> wgmma_;  // per warp (linear id / 32)
  std::vector<uint16_t> wgmmaReads_; // per shared byte: wgmma reads of it in flight
  uint32_t wgmmaInFlight_ = 0;     // wgmma read sets in flight in the workgroup
  NamedBarrier bars_[kBarrierIds]; // cleared per workgroup
  // Happens-before of barriers that not every thread takes part in (a thread count, or
  // bar.arrive: vcOn_, set when the kernel has either). Vector clocks: vc_ row t holds, per
  // thread u, the latest clock of u whose accesses are ordered before t's next access (t's own
  // entry is its clock, which moves on at each of its arrivals); barVc_ row b joins the rows of
  // the arrivals of barrier b's phase, and the waiters take it in when the phase completes. A
  // barrier that every thread that has not ended waits at starts a new epoch instead (stamp_).
  bool vcOn_ = false;
  std::vector<uint32_t> vc_, barVc_;
  std::vector<uint32_t> touched_; // per thread: the epoch (stamp_) of its last shared access
  // Register hazards of wgmmas in flight (regcheck.cpp): per thread and frame word, the serial
  // of the wgmma whose accumulator (D) the word holds or, with kRegA, the index of the A
  // register record (WgmmaRegA) of a wgmma; 0 none. Serials and indices count over the
  // Runner's workgroups: those of earlier workgroups are below the bases and so retired, and
  // nothing is cleared between workgroups.
  std::vector<uint32_t> regTags_;
  std::vector<WgmmaIssue> regIssues_; // this workgroup's wgmmas, serial regBase_ first
  std::vector<WgmmaRegA> regA_;       // this workgroup's A registers, index regABase_ first
  std::vector<uint8_t> regSkip_;      // per pc: touches no frame word that can hold a tag
  bool regHasA_ = false;              // the kernel has a wgmma with A from registers
  uint32_t regBase_ = 1, regSerial_ = 1, regABase_ = 1;
  size_t heapHint_ = 0;
  bool faulted_ = false;
  bool framesReady_ = false;
  // The first read of unwritten shared memory in this epoch. It is reported when the epoch ends
  // (or another fault comes first), unless another thread writes the byte in the same epoch:
  // then the missing barrier is reported as the race it is.
  struct PendingRead {
    bool set = false;
    Lane lane;
    const Inst *in = nullptr;
    uint64_t byte = 0;
    std::string what;
  } pending_;

  bool reportPending() {
    if (!pending_.set)
      return true;
    pending_.set = false;
    return fault(pending_.lane, *pending_.in,
                 "read of uninitialized shared memory by a " + pending_.what,
                 "byte " + std::to_string(pending_.byte) +
                     " was never written in this workgroup");
  }

  void run(Lane &lane);
  bool asyncCopy(Lane &lane, const Inst &in, uint64_t dst, uint64_t src, uint32_t srcBytes);
  bool asyncWait(Lane &lane, const Inst &in, uint32_t keep);
  bool asyncEnqueue(Lane &lane, const Inst &in, uint64_t dst, const uint8_t *data,
                    uint32_t bytes, const char *what);
  void dropAsync();
  bool collective(uint32_t firstLane, uint32_t count, bool &progress);
  Mbar *mbar(const Lane &lane, const Inst &in, uint64_t off, const char *what);
  bool mbarArrive(const Lane &lane, const Inst &in, uint64_t off, int64_t txBytes, bool arrive,
                  const char *what);
  bool mbarPassed(const Lane &lane) const;
  bool tensorMap(const Lane &lane, const Inst &in, uint64_t addr, EmuTensorMap &map);
  bool tmaLoad(Lane &lane, const Inst &in);
  bool tmaStore(Lane &lane, const Inst &in);
  bool wgmmaWait(const Lane &lane, uint32_t keep);
  bool wgmmaRace(const Lane &lane, const Inst &in, const char *what, uint64_t byte);
  std::string deadlock();
  bool barrierArrive(Lane &lane, const Inst &in);
  bool barrierComplete(uint32_t id);
  void barrierWorkgroup();
  uint32_t clockOf(uint16_t t) const { return vcOn_ ? vc_[size_t(t) * threads_ + t] : 0; }
  // Whether thread u's access at clock c (Shadow) is ordered before thread t's accesses now by
  // the barriers both took part in (never for the kNobody ... kAsyncProxy marks).
  bool before(uint16_t u, uint32_t c, uint16_t t) const {
    return vcOn_ && u < threads_ && c <= vc_[size_t(t) * threads_ + u];
  }
  void execWave(const Inst &in, Lane **lanes, uint32_t n);
  void execWgmma(const Inst &in, Lane *const *byLane);
  void regPlan();
  void regASources(const Inst &in, uint32_t src[4]) const;
  void regIssue(const Inst &in, Lane *const *byLane);
  void regWait(Lane &lane, uint32_t keep);
  void regWorkgroup();
  bool regCheck(const Lane &lane, const Inst &in);
  // Whether `tag` on frame word `word` belongs to a wgmma that is in flight for `lane`.
  bool regLive(const Lane &lane, uint32_t tag, uint32_t word) const {
    uint32_t s = tag;
    if (tag & kRegA) {
      const uint32_t i = tag & ~kRegA;
      if (i < regABase_ || i - regABase_ >= regA_.size() || regA_[i - regABase_].word != word)
        return false;
      s = regA_[i - regABase_].serial;
    }
    return s >= regBase_ && s < regSerial_ && regIssues_[s - regBase_].group >= lane.wgRetired;
  }
  uint32_t *regTags(const Lane &lane) { return regTags_.data() + size_t(lane.linear) * (frameStride_ / 4); }
  bool regMove(const Lane &lane, const Inst &in, uint32_t dst, uint32_t src, uint32_t bytes);
  bool regHazard(const Lane &lane, const Inst &in, uint32_t word, uint32_t tag, bool write);

  // A memory access for the profiler (a no-op unless profiling).
  void record(const Lane &lane, const Inst &in, uint64_t addr, uint32_t bytes, bool first = true) {
    if (prof)
      prof->access(lane.linear, uint32_t(&in - k_.code.data()), addr, bytes, first);
  }

  std::string where(const Inst &in) const {
    const KernelCode::Loc &l = k_.locs[in.loc];
    if (l.file == kNoString)
      return "instruction " + std::to_string(&in - k_.code.data()) + " (no source location)";
    return p_.strings[l.file] + ":" + std::to_string(l.line) + ":" + std::to_string(l.col);
  }
  bool fault(const Lane &lane, const Inst &in, const std::string &what,
             const std::string &detail, bool pendingFirst = true,
             wave_status_t why = WAVE_ERROR_LAUNCH) {
    if (pendingFirst && pending_.set && !faulted_)
      return reportPending();
    if (!faulted_) {
      status = why;
      char buf[160];
      std::snprintf(buf, sizeof buf, " in workgroup (%u,%u,%u) thread (%u,%u,%u)", wg_[0], wg_[1],
                    wg_[2], lane.tid[0], lane.tid[1], lane.tid[2]);
      error = k_.name + ": " + what + " at " + where(in) + buf + (detail.empty() ? "" : ": ") +
              detail;
      faulted_ = true;
    }
    return false;
  }

  // Global memory: [addr, addr + bytes) inside one live allocation.
  bool checkGlobal(const Lane &lane, const Inst &in, uint64_t addr, uint32_t bytes,
                   const char *what) {
    const auto &heap = lp_.heap;
    if (heapHint_ < heap.size()) {
      const Allocation &h = heap[heapHint_];
      if (addr >= h.base && addr - h.base <= h.size && h.size - (addr - h.base) >= bytes)
        return true;
    }
    auto it = std::upper_bound(heap.begin(), heap.end(), addr,
                               [](uint64_t a, const Allocation &x) { return a < x.base; });
    if (it != heap.begin()) {
      const Allocation &h = *(it - 1);
      if (addr - h.base <= h.size && h.size - (addr - h.base) >= bytes) {
        heapHint_ = size_t(it - 1 - heap.begin());
        return true;
      }
    }
    std::string detail;
    if (it != heap.begin()) {
      const Allocation &h = *(it - 1);
      uint64_t end = h.base + h.size;
      if (addr < end)
        detail = "the access at " + hex(addr) + " ends " + std::to_string(addr + bytes - end) +
                 " bytes past the end of a " + std::to_string(h.size) + "-byte allocation";
      else if (addr == end)
        detail = "address " + hex(addr) + " is just past the end of a " +
                 std::to_string(h.size) + "-byte allocation";
      else
        detail = "address " + hex(addr) + " is " + std::to_string(addr - end) +
                 " bytes past the end of a " + std::to_string(h.size) + "-byte allocation";
    } else {
      detail = "address " + hex(addr) + " is not inside any live allocation of the device";
    }
    return fault(lane, in,
                 std::string("out-of-bounds global ") + what + " of " + std::to_string(bytes) +
                     " bytes",
                 detail);
  }

  // An AMD raw buffer load (store) of `bytes` at `data` (emu_image.h, Op::BufferLoad): the
  // descriptor's rules, the per-unit range check, then the global detector on what is in range.
  bool bufferAccess(const Lane &lane, const Inst &in, const uint8_t *rsrc, uint32_t voffset,
                    uint32_t soffset, uint8_t *data, uint32_t bytes, bool store) {
    const uint32_t w1 = rd<uint32_t>(rsrc + 4), records = rd<uint32_t>(rsrc + 8),
                   w3 = rd<uint32_t>(rsrc + 12);
    const uint64_t base = rd<uint32_t>(rsrc) | uint64_t(w1 & 0xffff) << 32;
    const char *what = store ? "store" : "load";
    const bool gfx10 = in.aux & 1;
    const uint32_t oobSelect = (w3 >> 28) & 3;
    const char *bad = (w1 >> 16) & 0x3fff ? "a stride (structured buffers)"
                      : (w3 >> 23) & 1    ? "ADD_TID_ENABLE"
                      : gfx10 && oobSelect < 2
                          ? "OOB_SELECT 0 or 1 (structured range checks)"
                      : !gfx10 && ((w3 >> 15) & 15) == 0 ? "data format 0"
                                                           : nullptr;
    if (bad)
      return fault(lane, in, std::string("unsupported buffer descriptor in a buffer ") + what,
                   std::string("the emulator does not model ") + bad + " (word 3 " + hex(w3) +
                       ")");
    const bool check = !(gfx10 && oobSelect == 2);
    if (!check || uint64_t(voffset) + bytes <= records) { // wholly in range: one access
      const uint64_t addr = base + soffset + uint64_t(voffset);
      if (!checkGlobal(lane, in, addr, bytes, what))
        return false;
      record(lane, in, addr, bytes);
      if (store)
        copyBytes(reinterpret_cast<uint8_t *>(uintptr_t(addr)), data, bytes);
      else
        copyBytes(data, reinterpret_cast<const uint8_t *>(uintptr_t(addr)), bytes);
      return true;
    }
    const uint32_t unit = bytes <= 4 ? bytes : 4;
    for (uint32_t at = 0; at < bytes; at += unit) {
      const uint32_t n = std::min(unit, bytes - at);
      const uint64_t off = std::min<uint64_t>(uint64_t(voffset) + at, 0xffffffffu);
      if (check && off + n > records) { // out of range: reads 0, writes nothing
        if (!store)
          std::memset(data + at, 0, n);
        continue;
      }
      const uint64_t addr = base + soffset + uint64_t(voffset) + at;
      if (!checkGlobal(lane, in, addr, n, what))
        return false;
      record(lane, in, addr, n, at == 0);
      if (store)
        copyBytes(reinterpret_cast<uint8_t *>(uintptr_t(addr)), data + at, n);
      else
        copyBytes(data + at, reinterpret_cast<const uint8_t *>(uintptr_t(addr)), n);
    }
    return true;
  }

  // Shared memory: bounds, then the race and uninitialised-read detectors.
  bool checkShared(const Lane &lane, const Inst &in, uint64_t off, uint32_t bytes, bool read,
                   bool write, bool atomic, const char *what) {
    if (off > sharedBytes_ || sharedBytes_ - off < bytes)
      return fault(lane, in,
                   std::string("out-of-bounds shared ") + what + " of " + std::to_string(bytes) +
                       " bytes",
                   "offset " + std::to_string(off) + " in a workgroup with " +
                       std::to_string(sharedBytes_) + " bytes of shared memory");
    uint16_t me = uint16_t(lane.linear);
    const uint32_t clock = clockOf(me);
    touched_[me] = stamp_;
    for (uint32_t i = 0; i < bytes; ++i) {
      Shadow &s = shadow_[off + i];
      if (asyncInFlight_ && s.async != kNobody)
        return inFlight(lane, in, what, off + i, s.async);
      if (read) {
        if (s.writeStamp < wgStart_ || s.writer == kNobody) {
          if (!pending_.set) {
            pending_.set = true;
            pending_.lane = lane;
            pending_.in = &in;
            pending_.byte = off + i;
            pending_.what = what;
          }
        } else if (s.writeStamp == stamp_ && s.writer != me && s.writer != kAsyncProxy &&
                   !(atomic && s.writer == kAtomic) && !before(s.writer, s.writeClock, me))
          return race(lane, in, what, off + i, s.writer, "written");
        if (!atomic) {
          // One reader is kept (with its clock) while each read is ordered after the last.
          if (s.readStamp == stamp_ && s.reader != me &&
              !before(s.reader, s.readClock, me))
            s.reader = kManyReaders;
          else {
            s.readStamp = stamp_;
            s.reader = me;
            s.readClock = clock;
          }
        }
      }
      if (write) {
        if (wgmmaInFlight_ && wgmmaReads_[off + i])
          return wgmmaRace(lane, in, what, off + i);
        // Another thread's access of this epoch, unless the barriers order it before this one.
        const bool otherWrite = s.writeStamp == stamp_ && s.writer != me &&
                                !before(s.writer, s.writeClock, me),
                   otherRead = s.readStamp == stamp_ && s.reader != me &&
                               !before(s.reader, s.readClock, me);
        if (!atomic) {
          if (otherWrite && s.writer != kAsyncProxy)
            return race(lane, in, what, off + i, s.writer, "written");
          if (otherRead)
            return race(lane, in, what, off + i, s.reader, "read");
        } else if (otherWrite && s.writer != kAtomic) {
          return race(lane, in, what, off + i, s.writer, "written");
        } else if (otherRead) {
          return race(lane, in, what, off + i, s.reader, "read"); // a plain read, then an atomic
        }
        s.writeStamp = stamp_;
        s.writer = atomic ? kAtomic : me;
        s.writeClock = clock;
      }
    }
    return true;
  }

  // An access to a byte that thread `owner`'s asynchronous copy in flight will write.
  bool inFlight(const Lane &lane, const Inst &in, const char *what, uint64_t byte,
                uint16_t owner) {
    const AsyncQueue &q = async_[owner];
    const AsyncCopy *copy = nullptr;
    for (size_t i = q.head; i < q.copies.size() && !copy; ++i)
      if (byte >= q.copies[i].dst && byte - q.copies[i].dst < q.copies[i].bytes)
        copy = &q.copies[i];
    const Lane &o = lanes_[owner];
    char who[64];
    std::snprintf(who, sizeof who, "thread (%u,%u,%u)", o.tid[0], o.tid[1], o.tid[2]);
    const bool dma = copy && Op(copy->issue->op) == Op::BufferLoadLds;
    std::string detail = "byte " + std::to_string(byte) + " is the destination of a " +
                         (dma ? "buffer_load ... lds " : "cp.async ") +
                         (copy ? "issued at " + where(*copy->issue) + " " : std::string()) +
                         "by " + who + " that is still in flight (";
    if (dma)
      detail += "no s_waitcnt vmcnt of " + std::string(who) + " has completed it yet";
    else if (copy && copy->group >= q.open)
      detail += "its group was not committed yet";
    else if (copy)
      detail += "no cp.async.wait_group of " + std::string(who) +
                " has completed its group yet: is a wait count too large?";
    else
      detail += "no wait has completed it yet";
    return fault(lane, in, std::string("shared-memory race on a ") + what, detail + ")",
                 /*pendingFirst=*/false);
  }

  bool race(const Lane &lane, const Inst &in, const char *what, uint64_t byte, uint16_t other,
            const char *how) {
    std::string who;
    if (other == kManyReaders)
      who = "other threads";
    else if (other == kAtomic)
      who = "atomic operations";
    else {
      const Lane &o = lanes_[other];
      char buf[64];
      std::snprintf(buf, sizeof buf, "thread (%u,%u,%u)", o.tid[0], o.tid[1], o.tid[2]);
      who = buf;
    }
    return fault(lane, in, std::string("shared-memory race on a ") + what,
                 "byte " + std::to_string(byte) + " was " + how + " by " + who +
                     " with no barrier in between",
                 /*pendingFirst=*/false);
  }
};

} // namespace wave::emu::runner_detail
