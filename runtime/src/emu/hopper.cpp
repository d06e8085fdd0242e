// sm_90a in the CPU emulator (runner.h): wgmma.mma_async from shared-memory descriptors or
// registers, its in-flight reads until wait_group, mbarriers (phases, arrivals, transaction
// bytes) and TMA loads and stores through the emulator's tensor maps (docs/internals.md, "The
// CPU emulator").
#include "runner.h"

namespace wave::emu::runner_detail {

// wgmma.mma_async for one warp of a warpgroup (emu_image.h, Op::Wgmma): every lane of the warp
// takes part (.aligned) with the same descriptors; the warp's 16 rows of the 64 x N product
// read their A rows and all of B from shared memory (through the race detector, as reads by the
// warp's first lane) or A from the lanes' registers.
void Runner::execWgmma(const Inst &in, Lane *const *byLane) {
  const uint32_t nn = in.imm & 0xfff, flags = in.imm >> 12;
  const WgmmaElem elem = WgmmaElem(in.aux);
  const bool fp8 = elem == WgmmaElem::E4M3 || elem == WgmmaElem::E5M2;
  const uint32_t es = fp8 ? 1 : 2, kk = fp8 ? 32 : 16;
  Lane *first = byLane[0];
  for (uint32_t l = 0; l < 32; ++l)
    if (!byLane[l]) {
      const Lane *any = first;
      for (uint32_t j = 0; !any && j < 32; ++j)
        any = byLane[j];
      fault(*any, in, "wgmma with inactive lanes",
            "lane " + std::to_string(l) +
                " of the warp does not execute it (wgmma.mma_async is .sync.aligned: every "
                "thread of the warpgroup must)");
      return;
    }
  const uint32_t warp = (first->linear / 32) % 4;
  const uint64_t descA = rd<uint64_t>(first->frame + in.a), descB = rd<uint64_t>(first->frame + in.b);
  for (uint32_t l = 1; l < 32; ++l)
    if ((!(flags & kWgmmaRegA) && rd<uint64_t>(byLane[l]->frame + in.a) != descA) ||
        rd<uint64_t>(byLane[l]->frame + in.b) != descB) {
      fault(*byLane[l], in, "wgmma with different matrix descriptors in one warp",
            "lane " + std::to_string(l) + " differs from lane 0");
      return;
    }
  std::vector<float> A(size_t(16) * kk, 0.0f), B(size_t(kk) * nn, 0.0f);
  std::vector<uint32_t> readBytes; // in flight until a wait retires this warp's group
  std::string why;
  auto fetch = [&](uint64_t desc, bool mnMajor, uint32_t mn, uint32_t k, float &out,
                   const char *which) {
    uint64_t addr = 0;
    if (!wgmmaAddress(desc, mnMajor, es, mn, k, addr, why))
      return fault(*first, in, std::string("unsupported wgmma ") + which + " descriptor",
                   why + " (descriptor " + hex(desc) + ")");
    if (!checkShared(*first, in, addr, es, true, false, false, "wgmma load"))
      return false;
    for (uint32_t i = 0; i < es; ++i)
      readBytes.push_back(uint32_t(addr + i));
    out = wgmmaElement(elem, shared_.data() + addr);
    return true;
  };
  if (flags & kWgmmaRegA) {
    for (uint32_t l = 0; l < 32; ++l)
      for (uint32_t g = 0; g < 8; ++g) {
        const uint32_t r = l / 4 + 8 * ((g >> 1) & 1), c = 2 * (l % 4) + (g & 1) + 8 * (g >> 2);
        A[size_t(r) * kk + c] = wgmmaElement(elem, byLane[l]->frame + in.a + 2 * g);
      }
  } else {
    for (uint32_t r = 0; r < 16; ++r)
      for (uint32_t k = 0; k < kk; ++k)
        if (!fetch(descA, flags & kWgmmaTransA, 16 * warp + r, k, A[size_t(r) * kk + k], "A"))
          return;
  }
  for (uint32_t k = 0; k < kk; ++k)
    for (uint32_t c = 0; c < nn; ++c)
      if (!fetch(descB, flags & kWgmmaTransB, c, k, B[size_t(k) * nn + c], "B"))
        return;
  const float sa = (flags & kWgmmaNegA) ? -1.0f : 1.0f, sb = (flags & kWgmmaNegB) ? -1.0f : 1.0f;
  std::vector<float> D(size_t(32) * (nn / 2));
  for (uint32_t l = 0; l < 32; ++l)
    for (uint32_t i = 0; i < nn / 2; ++i) {
      uint32_t row = 0, col = 0;
      wgmmaAccCoord(0, l, i, row, col);
      // Products of f16/bf16/fp8 values are exact in f32; the sum is accumulated in f32.
      float acc = (flags & kWgmmaZeroC) ? 0.0f : rd<float>(byLane[l]->frame + in.c + 4 * i);
      for (uint32_t k = 0; k < kk; ++k)
        acc += (sa * A[size_t(row) * kk + k]) * (sb * B[size_t(k) * nn + col]);
      D[size_t(l) * (nn / 2) + i] = acc;
    }
  std::sort(readBytes.begin(), readBytes.end());
  readBytes.erase(std::unique(readBytes.begin(), readBytes.end()), readBytes.end());
  for (uint32_t b : readBytes)
    ++wgmmaReads_[b];
  WgmmaQueue &q = wgmma_[first->linear / 32];
  q.reads.push_back({q.open, &in, std::move(readBytes)});
  ++wgmmaInFlight_;
  // The profile: this warp's A rows (from shared memory) and a quarter of B, which the
  // warpgroup's instruction reads once.
  if (prof)
    prof->wgmma(((flags & kWgmmaRegA) ? 0 : uint64_t(16) * kk * es) + uint64_t(nn) * kk * es / 4);
  for (uint32_t l = 0; l < 32; ++l)
    std::memcpy(byLane[l]->frame + in.dst, &D[size_t(l) * (nn / 2)], 2 * nn);
  regIssue(in, byLane);
}


// wgmma.wait_group `keep` of lane's warp: the reads of every committed group but the `keep`
// newest are retired.
bool Runner::wgmmaWait(const Lane &lane, uint32_t keep) {
  WgmmaQueue &q = wgmma_[lane.linear / 32];
  while (q.head < q.reads.size() && uint64_t(q.reads[q.head].group) + keep < q.open) {
    for (uint32_t b : q.reads[q.head].bytes)
      --wgmmaReads_[b];
    q.reads[q.head].bytes.clear();
    ++q.head;
    --wgmmaInFlight_;
  }
  if (q.head == q.reads.size()) {
    q.reads.clear();
    q.head = 0;
  }
  return true;
}

// A write to a byte that a wgmma still in flight reads.
bool Runner::wgmmaRace(const Lane &lane, const Inst &in, const char *what, uint64_t byte) {
  const WgmmaReads *r = nullptr;
  uint32_t warp = 0;
  for (uint32_t w = 0; w < wgmma_.size() && !r; ++w)
    for (size_t i = wgmma_[w].head; i < wgmma_[w].reads.size() && !r; ++i)
      if (std::binary_search(wgmma_[w].reads[i].bytes.begin(), wgmma_[w].reads[i].bytes.end(),
                             uint32_t(byte))) {
        r = &wgmma_[w].reads[i];
        warp = w;
      }
  const bool committed = r && r->group < wgmma_[warp].open;
  std::string detail = "byte " + std::to_string(byte) + " is read by a wgmma " +
                       (r ? "issued at " + where(*r->issue) + " " : std::string()) + "by warp " +
                       std::to_string(warp) + " that is still in flight (" +
                       (committed ? "no wgmma.wait_group of that warp has retired its group "
                                    "yet: is a wait count too large?"
                                  : "its group was not committed and waited for yet") +
                       ")";
  return fault(lane, in, std::string("shared-memory race on a ") + what, detail,
               /*pendingFirst=*/false);
}


// The mbarrier at shared offset `off`: 8-byte aligned, inside shared memory, initialized (except
// for mbarrier.init itself, which creates it).
Mbar *Runner::mbar(const Lane &lane, const Inst &in, uint64_t off, const char *what) {
  if (off % 8 != 0 || off > sharedBytes_ || sharedBytes_ - off < 8) {
    fault(lane, in, std::string("bad mbarrier address in ") + what,
          "offset " + std::to_string(off) + " is not an 8-byte aligned object inside the " +
              std::to_string(sharedBytes_) + " bytes of shared memory");
    return nullptr;
  }
  auto it = mbars_.find(uint32_t(off));
  if (Op(in.op) == Op::MbarInit)
    return &mbars_[uint32_t(off)];
  if (it == mbars_.end()) {
    fault(lane, in, std::string(what) + " on an uninitialized mbarrier",
          "no mbarrier.init at shared offset " + std::to_string(off) + " in this workgroup");
    return nullptr;
  }
  return &it->second;
}

// An arrival (`arrive`) and/or transaction bytes: expected (txBytes > 0, before the arrival)
// or completed (txBytes < 0, a TMA load). The phase completes when nothing is pending.
bool Runner::mbarArrive(const Lane &lane, const Inst &in, uint64_t off, int64_t txBytes,
                        bool arrive, const char *what) {
  Mbar *m = mbar(lane, in, off, what);
  if (!m)
    return false;
  m->tx += txBytes;
  if (arrive) {
    if (m->pending == 0)
      return fault(lane, in, std::string("too many arrivals on an mbarrier (") + what + ")",
                   "the mbarrier at shared offset " + std::to_string(off) + " expects " +
                       std::to_string(m->count) + " arrivals per phase");
    --m->pending;
  }
  if (m->pending == 0 && m->tx == 0) {
    ++m->phase;
    m->pending = m->count;
  }
  return true;
}

// Whether a lane blocked at an Op::MbarWait may go on: its phase has completed.
bool Runner::mbarPassed(const Lane &l) const {
  const Inst &in = k_.code[l.pc];
  auto it = mbars_.find(rd<uint32_t>(l.frame + in.a));
  return it != mbars_.end() && (it->second.phase & 1) != (rd<uint32_t>(l.frame + in.b) & 1);
}

// Why no thread can go on: the first thread blocked on an mbarrier and the first waiting at a
// barrier, and what the others do.
std::string Runner::deadlock() {
  std::string out;
  uint32_t blocked = 0, barrier = 0, done = 0, alive = 0;
  const Lane *atBarrier = nullptr;
  for (const Lane &l : lanes_)
    alive += l.state != Done;
  for (const Lane &l : lanes_) {
    if (l.state == AtBarrier && barrier++ == 0)
      atBarrier = &l;
    else if (l.state == Done)
      ++done;
    if (l.state != AtMbar)
      continue;
    if (blocked++ == 0) {
      const Inst &in = k_.code[l.pc];
      const uint32_t off = rd<uint32_t>(l.frame + in.a);
      const Mbar &m = mbars_.at(off);
      char buf[320];
      std::snprintf(buf, sizeof buf,
                    "thread (%u,%u,%u) waits for the phase of parity %u of the mbarrier at shared "
                    "offset %u, which never completes (phase %u, %u of %u arrivals and %lld "
                    "transaction bytes pending)",
                    l.tid[0], l.tid[1], l.tid[2], rd<uint32_t>(l.frame + in.b) & 1, off, m.phase,
                    m.pending, m.count, (long long)m.tx);
      out = buf;
    }
  }
  if (atBarrier) { // Op::Barrier: its ID's phase (NamedBarrier)
    const Inst &in = k_.code[atBarrier->pc];
    const NamedBarrier &b = bars_[in.aux];
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "thread (%u,%u,%u) waits at barrier %u, which never completes (%u of %u "
                  "arrivals%s)",
                  atBarrier->tid[0], atBarrier->tid[1], atBarrier->tid[2], unsigned(in.aux),
                  b.arrived, b.expect ? b.expect : alive,
                  b.expect ? "" : ": every thread that has not ended");
    out += (out.empty() ? "" : "; ") + std::string(buf);
  }
  return out + "; " + std::to_string(blocked) + " threads blocked on mbarriers, " +
         std::to_string(barrier) + " at a barrier, " + std::to_string(done) + " ended";
}

// The emulator's tensor map at global address `addr` (wave_tensor_map on an emulator device),
// for an instruction with `coords` coordinates (Inst::imm; 0 reads as 2).
bool Runner::tensorMap(const Lane &lane, const Inst &in, uint64_t addr, EmuTensorMap &map) {
  if (!checkGlobal(lane, in, addr, kTensorMapBytes, "tensor map read"))
    return false;
  std::memcpy(&map, reinterpret_cast<const void *>(uintptr_t(addr)), sizeof map);
  const uint32_t sw = map.swizzleBytes, es = map.elementBytes;
  bool ok = std::memcmp(map.magic, kTensorMapMagic, sizeof map.magic) == 0 &&
            (es == 1 || es == 2 || es == 4) && map.rank >= 1 && map.rank <= kTensorMapMaxRank &&
            (sw == 0 || sw == 32 || sw == 64 || sw == 128);
  for (uint32_t i = 0; ok && i < map.rank; ++i)
    ok = map.box[i] >= 1 && map.box[i] <= 256;
  if (ok && sw && uint64_t(map.box[map.rank - 1]) * es > sw)
    ok = false;
  if (!ok)
    return fault(lane, in, "bad TMA tensor map",
                 "the 128 bytes at " + hex(addr) +
                     " are not a tensor map of the emulator (wave_tensor_map on an emulator "
                     "device makes them)");
  const uint32_t coords = in.imm ? uint32_t(in.imm) : 2;
  if (coords != map.rank)
    return fault(lane, in, "bad TMA tensor map",
                 "a " + std::to_string(coords) + "-d TMA instruction with the tensor map at " +
                     hex(addr) + " of rank " + std::to_string(map.rank));
  return true;
}

namespace {
// The shared-memory offset of byte `b` of box row `r` (rows of `rowBytes`) from `base`, swizzled
// like wgmma's descriptors read it (Op::Wgmma: the 16-byte chunk bits XOR bits 7..).
uint64_t boxByte(uint64_t base, uint32_t rowBytes, uint32_t swizzle, uint32_t r, uint32_t b) {
  uint64_t a = base + uint64_t(r) * rowBytes + b;
  if (swizzle)
    a ^= ((a >> 7) & (swizzle / 16 - 1)) << 4;
  return a;
}

// Box row `r` (row-major over the box's outer dims) of a box at `coord` (innermost first, the
// instruction's order): whether the row lies inside the tensor in every outer dim, and then the
// global address of its element at column `col` (an index of the innermost dim).
struct BoxRow {
  bool inside = true;
  uint64_t rowBase = 0; // the row's address at column 0 of the tensor
};
BoxRow boxRow(const EmuTensorMap &map, const int64_t *coord, uint32_t r) {
  BoxRow out;
  out.rowBase = map.base;
  const uint32_t n = map.rank;
  for (uint32_t k = 0; k + 1 < n; ++k) { // dims n - 2 .. 0, innermost outer dim first
    const uint32_t dim = n - 2 - k;
    const uint32_t at = r % map.box[dim];
    r /= map.box[dim];
    const int64_t g = coord[n - 1 - dim] + at;
    if (g < 0 || uint64_t(g) >= map.dims[dim])
      out.inside = false;
    else
      out.rowBase += uint64_t(g) * map.strides[dim];
  }
  return out;
}

uint32_t boxRows(const EmuTensorMap &map) {
  uint32_t rows = 1;
  for (uint32_t i = 0; i + 1 < map.rank; ++i)
    rows *= map.box[i];
  return rows;
}
} // namespace

// cp.async.bulk.tensor.Nd global -> shared (Op::TmaLoad): the box lands now, zeros outside the
// tensor in any dim, as a write of the async proxy; then its bytes complete on the mbarrier.
bool Runner::tmaLoad(Lane &L, const Inst &in) {
  uint8_t *f = L.frame;
  EmuTensorMap map;
  if (!tensorMap(L, in, rd<uint64_t>(f + in.b), map))
    return false;
  int64_t coord[kTensorMapMaxRank];
  for (uint32_t i = 0; i < map.rank; ++i)
    coord[i] = rd<int32_t>(f + in.c + 4 * i);
  const uint64_t dst = rd<uint32_t>(f + in.a);
  const uint32_t es = map.elementBytes, cols = map.box[map.rank - 1], rowBytes = cols * es;
  const uint32_t rows = boxRows(map);
  const uint64_t boxBytes = uint64_t(rows) * rowBytes;
  const int64_t c0 = coord[0], colDim = int64_t(map.dims[map.rank - 1]);
  if (dst % 128 != 0 || (map.swizzleBytes && dst % (8 * map.swizzleBytes) != 0) ||
      dst > sharedBytes_ || sharedBytes_ - dst < boxBytes)
    return fault(L, in, "bad TMA destination",
                 "shared offset " + std::to_string(dst) + " for a box of " +
                     std::to_string(boxBytes) + " bytes (128-byte aligned, " +
                     std::to_string(8 * map.swizzleBytes) +
                     " with the swizzle, inside the workgroup's " + std::to_string(sharedBytes_) +
                     " bytes)");
  std::vector<uint8_t> row(rowBytes);
  bool firstRow = true; // the profile's accesses of this one instruction
  uint64_t fill = 0;    // the profile's zero-fill sectors
  for (uint32_t r = 0; r < rows; ++r) {
    std::fill(row.begin(), row.end(), 0);
    uint32_t inside = 0;
    if (const BoxRow br = boxRow(map, coord, r); br.inside) {
      const int64_t from = std::max<int64_t>(c0, 0), to = std::min<int64_t>(c0 + cols, colDim);
      if (from < to) {
        inside = uint32_t(to - from) * es;
        const uint64_t addr = br.rowBase + uint64_t(from) * es;
        const uint32_t n = uint32_t(to - from) * es;
        if (!checkGlobal(L, in, addr, n, "TMA load"))
          return false;
        record(L, in, addr, n, firstRow);
        firstRow = false;
        std::memcpy(row.data() + (from - c0) * es, reinterpret_cast<const void *>(uintptr_t(addr)),
                    n);
      }
    }
    fill += (rowBytes - inside + 31) / 32; // 32-byte sectors
    for (uint32_t b = 0; b < rowBytes; b += 16) {
      const uint64_t at = boxByte(dst, rowBytes, map.swizzleBytes, r, b);
      const uint32_t n = std::min<uint32_t>(16, rowBytes - b);
      for (uint32_t i = 0; i < n; ++i) {
        Shadow &s = shadow_[at + i];
        if (asyncInFlight_ && s.async != kNobody)
          return inFlight(L, in, "TMA load", at + i, s.async);
        if (wgmmaInFlight_ && wgmmaReads_[at + i])
          return wgmmaRace(L, in, "TMA load", at + i);
        s.writeStamp = stamp_;
        s.writer = kAsyncProxy;
      }
      std::memcpy(shared_.data() + at, row.data() + b, n);
    }
  }
  if (prof) { // a box wholly outside the tensor is still an instruction
    if (firstRow)
      record(L, in, map.base, 0);
    prof->tmaFill(fill);
  }
  return mbarArrive(L, in, rd<uint32_t>(f + in.dst), -int64_t(boxBytes), false,
                    "TMA load's complete_tx");
}

// cp.async.bulk.tensor.Nd shared -> global (Op::TmaStore): the box's elements inside the tensor
// are written now (clipped), read from shared memory as the issuing thread.
bool Runner::tmaStore(Lane &L, const Inst &in) {
  uint8_t *f = L.frame;
  EmuTensorMap map;
  if (!tensorMap(L, in, rd<uint64_t>(f + in.b), map))
    return false;
  int64_t coord[kTensorMapMaxRank];
  for (uint32_t i = 0; i < map.rank; ++i)
    coord[i] = rd<int32_t>(f + in.c + 4 * i);
  const uint64_t src = rd<uint32_t>(f + in.a);
  const uint32_t es = map.elementBytes, cols = map.box[map.rank - 1], rowBytes = cols * es;
  const uint32_t rows = boxRows(map);
  const uint64_t boxBytes = uint64_t(rows) * rowBytes;
  const int64_t c0 = coord[0], colDim = int64_t(map.dims[map.rank - 1]);
  if (src % 128 != 0 || (map.swizzleBytes && src % (8 * map.swizzleBytes) != 0) ||
      src > sharedBytes_ || sharedBytes_ - src < boxBytes)
    return fault(L, in, "bad TMA source",
                 "shared offset " + std::to_string(src) + " for a box of " +
                     std::to_string(boxBytes) + " bytes");
  std::vector<uint8_t> row(rowBytes);
  bool firstRow = true;
  for (uint32_t r = 0; r < rows; ++r) {
    const BoxRow br = boxRow(map, coord, r);
    if (!br.inside)
      continue;
    const int64_t from = std::max<int64_t>(c0, 0), to = std::min<int64_t>(c0 + cols, colDim);
    if (from >= to)
      continue;
    for (uint32_t b = 0; b < rowBytes; b += 16) {
      const uint64_t at = boxByte(src, rowBytes, map.swizzleBytes, r, b);
      const uint32_t n = std::min<uint32_t>(16, rowBytes - b);
      if (!checkShared(L, in, at, n, true, false, false, "TMA store"))
        return false;
      std::memcpy(row.data() + b, shared_.data() + at, n);
    }
    const uint64_t addr = br.rowBase + uint64_t(from) * es;
    const uint32_t n = uint32_t(to - from) * es;
    if (!checkGlobal(L, in, addr, n, "TMA store"))
      return false;
    record(L, in, addr, n, firstRow);
    firstRow = false;
    std::memcpy(reinterpret_cast<void *>(uintptr_t(addr)), row.data() + (from - c0) * es, n);
  }
  if (firstRow && prof) // a box wholly outside the tensor is still an instruction
    record(L, in, map.base, 0);
  return true;
}


} // namespace wave::emu::runner_detail
