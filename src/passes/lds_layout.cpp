// The LDS layout of a promoted tile on targets without ldmatrix (AMD; promotion.cpp calls it):
// padded rows (promotion.cpp's default) or unpadded rows whose read units are XOR-swizzled by
// the row (SharedTile::xorUnit). The choice is the pass's data: a model of the banks evaluates
// one wave's cooperative-copy stores and operand reads under both layouts. The XOR layout is
// taken when the model finds it free of conflicts and the padding not; where both are free,
// when dropping the padding's bytes makes the tiles fit (a 256x256x64 f16 GEMM tile on gfx942's
// 64 KiB) or lets more workgroups share the LDS (settleLdsLayouts; docs/performance.md).
//
// The model is the emulator profiler's (runtime/src/emu/profile.h, BankRules and
// lanesPerPhase): 32 banks of 4 bytes; an access of W bytes per lane (rounded up to a power of
// two, at least 4) serves 128 / W consecutive lanes per phase; a phase costs as many wavefronts
// as the most distinct words any one bank holds. Conflicts are the wavefronts beyond one per
// phase.
#include "passes/kernel_plan.h"

#include <map>
#include <set>
#include <tuple>

namespace wave {

namespace {

struct LaneBytes {
  int64_t lane, addr, bytes;
};

int64_t conflicts(const std::vector<LaneBytes> &accesses) {
  if (accesses.empty())
    return 0;
  int64_t width = 4;
  while (width < accesses.front().bytes)
    width <<= 1;
  const int64_t perPhase = std::max<int64_t>(1, 128 / width);
  std::set<std::tuple<int64_t, int64_t, int64_t>> words; // phase, bank, word
  for (const auto &a : accesses)
    for (int64_t w = a.addr / 4; w <= (a.addr + a.bytes - 1) / 4; ++w)
      words.insert({a.lane / perPhase, w % 32, w});
  std::map<std::pair<int64_t, int64_t>, int64_t> perBank;
  for (const auto &[phase, bank, word] : words)
    ++perBank[{phase, bank}];
  std::map<int64_t, int64_t> most;
  for (const auto &[key, n] : perBank)
    most[key.first] = std::max(most[key.first], n);
  int64_t extra = 0;
  for (const auto &[phase, n] : most)
    extra += n - 1;
  return extra;
}

// Byte address of element `idx` of the tile: padded rows (strides of `al`), or unpadded rows
// with the XOR layout of `unit` bytes (the emitter's offsetOf computes the same).
int64_t addressOf(const SharedTile &al, const std::vector<int64_t> &idx, int64_t unit,
                  int64_t period, int64_t phases) {
  const size_t n = idx.size();
  const int64_t bytes = al.dtype == ScalarType::I1 ? 1 : bitWidth(al.dtype) / 8;
  int64_t off = 0;
  if (!unit) {
    for (size_t i = 0; i < n; ++i)
      off += idx[i] * *al.strides[i].asInteger();
    return off * bytes;
  }
  int64_t stride = 1;
  for (size_t i = n; i-- > 0;) {
    if (i + 2 < n)
      off += idx[i] * stride;
    stride *= al.tile[i];
  }
  const int64_t q = unit / bytes, r = idx[n - 2], col = idx[n - 1];
  const int64_t u = (col / q) ^ ((r / period) % phases);
  return (off + r * al.tile[n - 1] + u * q + col % q) * bytes;
}

int64_t unpaddedBytes(const SharedTile &al) {
  int64_t elems = 1;
  for (int64_t t : al.tile)
    elems *= t;
  return elems * (al.dtype == ScalarType::I1 ? 1 : bitWidth(al.dtype) / 8);
}

// Unpadded rows, read units at unit XOR the row's phase (SharedTile::xorUnit).
void applyXor(SharedTile &al) {
  al.xorUnit = al.xorCandidate;
  al.pad = 0;
  int64_t stride = 1;
  for (size_t i = al.tile.size(); i-- > 0;) {
    al.strides[i] = sym::IndexExpr(stride);
    stride *= al.tile[i];
  }
  al.bytes = unpaddedBytes(al);
}

} // namespace

void chooseLdsLayout(PlanContext &c, const TileAccess &read, SharedTile &al) {
  const size_t n = al.tile.size();
  const int64_t bytes = al.dtype == ScalarType::I1 ? 1 : bitWidth(al.dtype) / 8;
  const int64_t readBytes = read.elems * bytes, unit = std::min<int64_t>(16, readBytes);
  int64_t period = 0, phases = 0;
  if (n < 2 || read.dims.size() != n || bytes > 8 || readBytes % unit != 0 ||
      !xorUnitPhases(al.tile[n - 1] * bytes, unit, period, phases))
    return;
  for (const auto &s : al.strides)
    if (!s.isInteger())
      return;
  const int64_t wave = c.dist.groupSize, q = unit / bytes;
  // One wave's operand read (its first two clones): lane l's element indices in the tile, every
  // term but the thread's 0 (the tile's origin). The lane's elements must be consecutive along
  // the rows and whole units.
  std::vector<std::vector<LaneBytes>> reads[2], stores[2];
  auto indexAt = [&](int64_t lane, int64_t g, int64_t clone, std::vector<int64_t> &out) {
    for (size_t i = 0; i < n; ++i) {
      std::map<std::string, int64_t> v;
      for (const auto &s : read.dims[i].second.freeSymbols())
        v[s] = s == "$T0" ? lane : s == "$g" ? g : s.rfind("$i_", 0) == 0 ? clone : 0;
      auto x = read.dims[i].second.evaluate(v);
      if (!x || *x < 0 || *x >= al.tile[i])
        return false;
      out[i] = *x;
    }
    return true;
  };
  for (int64_t clone = 0; clone < 2; ++clone) {
    // One instruction per piece of at most 16 bytes (the emitter's `pieces`).
    std::vector<std::vector<LaneBytes>> pad(readBytes / unit), xr(readBytes / unit);
    bool inTile = true;
    for (int64_t lane = 0; lane < wave && inTile; ++lane) {
      std::vector<int64_t> first(n), last(n);
      inTile = indexAt(lane, 0, clone, first) && indexAt(lane, read.elems - 1, clone, last);
      if (!inTile)
        break;
      for (size_t i = 0; i + 1 < n; ++i)
        if (first[i] != last[i])
          return;
      if (last[n - 1] - first[n - 1] != read.elems - 1 || first[n - 1] % q != 0)
        return;
      for (int64_t k = 0; k < readBytes; k += unit) {
        std::vector<int64_t> at = first;
        at[n - 1] += k / bytes;
        pad[k / unit].push_back({lane, addressOf(al, at, 0, 0, 0), unit});
        xr[k / unit].push_back({lane, addressOf(al, at, unit, period, phases), unit});
      }
    }
    if (!inTile && clone == 0)
      return; // not modeled: keep the padding
    if (inTile) {
      reads[0].insert(reads[0].end(), pad.begin(), pad.end());
      reads[1].insert(reads[1].end(), xr.begin(), xr.end());
    }
  }
  // The copy's stores of one wave (cooperative-copies: `lanes` consecutive elements per
  // thread, threads in row-major order over the tile), split into units in the XOR layout.
  const int64_t threads =
      static_cast<int64_t>(c.dist.block[0]) * c.dist.block[1] * c.dist.block[2];
  const int64_t lanes = copyLanes(al.tile, al.dtype, threads), vec = lanes * bytes;
  for (int layout = 0; layout < 2; ++layout) {
    const int64_t piece = layout ? std::min(vec, unit) : vec;
    for (int64_t k = 0; k < vec; k += piece) {
      std::vector<LaneBytes> st;
      for (int64_t t = 0; t < std::min(wave, threads); ++t) {
        std::vector<int64_t> at(n);
        int64_t inner = 1;
        for (size_t i = n; i-- > 0;) {
          at[i] = (t * lanes / inner) % al.tile[i];
          inner *= al.tile[i];
        }
        at[n - 1] += k / bytes;
        st.push_back({t, addressOf(al, at, layout ? unit : 0, period, phases), piece});
      }
      stores[layout].push_back(st);
    }
  }
  int64_t cost[2] = {0, 0};
  for (int layout = 0; layout < 2; ++layout) {
    for (const auto &r : reads[layout])
      cost[layout] += conflicts(r);
    for (const auto &s : stores[layout])
      cost[layout] += conflicts(s);
  }
  al.modeledPad = cost[0];
  al.modeledXor = cost[1];
  if (cost[1] == 0)
    al.xorCandidate = unit;
  if (cost[1] == 0 && cost[0] > 0)
    applyXor(al);
}

// Where the padded rows are conflict-free too, the XOR layout costs address arithmetic (a lane
// address per K step, 64-bit stores for 128-bit vectors) and buys only bytes: it is taken when
// the promoted tiles would not fit the target's static shared memory with their padding, or
// when without it more workgroups fit in that many bytes (the CU's LDS on CDNA: a 128x128x64 f16
// GEMM, 34,816 padded bytes, one workgroup; 32,768 unpadded, two).
void settleLdsLayouts(PlanContext &c) {
  auto rounded = [](int64_t b) { return (b + 15) / 16 * 16; };
  int64_t padded = 0, unpadded = 0;
  bool any = false;
  for (const SharedTile &t : c.plan.tiles) {
    if (t.scratch)
      continue;
    const bool candidate = !t.xorUnit && t.xorCandidate;
    any |= candidate;
    padded += rounded(t.bytes) * t.stages;
    unpadded += rounded(candidate ? unpaddedBytes(t) : t.bytes) * t.stages;
  }
  const int64_t lds = c.target.ldsBytes;
  if (!any || unpadded == 0 ||
      (padded <= lds && (padded == 0 || lds / unpadded <= lds / padded)))
    return;
  for (SharedTile &t : c.plan.tiles)
    if (!t.scratch && !t.xorUnit && t.xorCandidate)
      applyXor(t);
}

} // namespace wave
