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

// A candidate layout: rows padded by `pad` elements, or (unit > 0) unpadded rows with the XOR
// layout of `unit` bytes (the emitter's offsetOf computes the same addresses).
struct Layout {
  int64_t pad = 0, unit = 0, period = 1, phases = 1;
};

int64_t addressOf(const SharedTile &al, const Layout &l, const std::vector<int64_t> &idx) {
  const size_t n = idx.size();
  const int64_t bytes = al.dtype == ScalarType::I1 ? 1 : bitWidth(al.dtype) / 8;
  int64_t off = 0, stride = 1;
  for (size_t i = n; i-- > 0;) {
    if (!l.unit || i + 2 < n)
      off += idx[i] * stride;
    stride *= al.tile[i] + (i + 1 == n && !l.unit ? l.pad : 0);
  }
  if (!l.unit)
    return off * bytes;
  const int64_t q = l.unit / bytes, r = idx[n - 2], col = idx[n - 1];
  const int64_t u = (col / q) ^ ((r / l.period) % l.phases);
  return (off + r * al.tile[n - 1] + u * q + col % q) * bytes;
}

// One wave instruction: per lane, the tile element its access starts at and its bytes.
struct Instr {
  std::vector<std::pair<int64_t, std::vector<int64_t>>> lanes;
  int64_t bytes = 0;
};

int64_t cost(const SharedTile &al, const Layout &l, const std::vector<Instr> &instrs) {
  int64_t total = 0;
  for (const Instr &in : instrs) {
    std::vector<LaneBytes> acc;
    for (const auto &[lane, idx] : in.lanes)
      acc.push_back({lane, addressOf(al, l, idx), in.bytes});
    total += conflicts(acc);
  }
  return total;
}

int64_t unpaddedBytes(const SharedTile &al) {
  int64_t elems = 1;
  for (int64_t t : al.tile)
    elems *= t;
  return elems * (al.dtype == ScalarType::I1 ? 1 : bitWidth(al.dtype) / 8);
}

} // namespace

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

namespace {


// One wave's operand read (its first two clones) as instructions of at most 16 bytes per lane
// (the emitter's `pieces`): lane l's element indices in the tile, every term but the thread's 0
// (the tile's origin); false when they are not consecutive along the rows (not modeled).
// `aligned`: every lane starts at a multiple of `unit` bytes.
bool readInstrs(PlanContext &c, const TileAccess &read, const SharedTile &al, int64_t unit,
                std::vector<Instr> &out, bool &aligned) {
  const size_t n = al.tile.size();
  const int64_t bytes = al.dtype == ScalarType::I1 ? 1 : bitWidth(al.dtype) / 8;
  const int64_t readBytes = read.elems * bytes;
  auto indexAt = [&](int64_t lane, int64_t g, int64_t clone, std::vector<int64_t> &idx) {
    for (size_t i = 0; i < n; ++i) {
      std::map<std::string, int64_t> v;
      for (const auto &s : read.dims[i].second.freeSymbols())
        v[s] = s == "$T0" ? lane : s == "$g" ? g : s.rfind("$i_", 0) == 0 ? clone : 0;
      auto x = read.dims[i].second.evaluate(v);
      if (!x || *x < 0 || *x >= al.tile[i])
        return false;
      idx[i] = *x;
    }
    return true;
  };
  aligned = true;
  for (int64_t clone = 0; clone < 2; ++clone) {
    std::vector<Instr> pieces(readBytes / unit);
    for (int64_t lane = 0; lane < c.dist.groupSize; ++lane) {
      std::vector<int64_t> first(n), last(n);
      if (!indexAt(lane, 0, clone, first) || !indexAt(lane, read.elems - 1, clone, last)) {
        if (clone == 0)
          return false;
        pieces.clear();
        break;
      }
      for (size_t i = 0; i + 1 < n; ++i)
        if (first[i] != last[i])
          return false;
      if (last[n - 1] - first[n - 1] != read.elems - 1)
        return false;
      aligned = aligned && (first[n - 1] * bytes) % unit == 0;
      for (int64_t k = 0; k < readBytes; k += unit) {
        std::vector<int64_t> at = first;
        at[n - 1] += k / bytes;
        pieces[k / unit].lanes.push_back({lane, at});
        pieces[k / unit].bytes = unit;
      }
    }
    out.insert(out.end(), pieces.begin(), pieces.end());
  }
  return true;
}

// The copy's stores of one wave (cooperative-copies: `lanes` consecutive elements per thread,
// threads in row-major order over the tile), in pieces of `piece` bytes.
std::vector<Instr> storeInstrs(PlanContext &c, const SharedTile &al, int64_t piece) {
  const size_t n = al.tile.size();
  const int64_t bytes = al.dtype == ScalarType::I1 ? 1 : bitWidth(al.dtype) / 8;
  const int64_t threads =
      static_cast<int64_t>(c.dist.block[0]) * c.dist.block[1] * c.dist.block[2];
  const int64_t lanes = copyLanes(al.tile, al.dtype, threads), vec = lanes * bytes;
  piece = std::min(piece, vec);
  std::vector<Instr> out;
  for (int64_t k = 0; k < vec; k += piece) {
    Instr st;
    st.bytes = piece;
    for (int64_t t = 0; t < std::min<int64_t>(c.dist.groupSize, threads); ++t) {
      std::vector<int64_t> at(n);
      int64_t inner = 1;
      for (size_t i = n; i-- > 0;) {
        at[i] = (t * lanes / inner) % al.tile[i];
        inner *= al.tile[i];
      }
      at[n - 1] += k / bytes;
      st.lanes.push_back({t, at});
    }
    out.push_back(st);
  }
  return out;
}

} // namespace

// The padded rows: promotion.cpp's padding, else the fewest conflicts among paddings that keep
// every access as aligned as the rows are wide (multiples of the widest access, up to 32 bytes).
// The XOR layout: units of the read's piece (at most 16 bytes) where they tile the row and every
// lane reads whole units.
void chooseLdsLayout(PlanContext &c, const TileAccess &read, SharedTile &al) {
  const size_t n = al.tile.size();
  const int64_t bytes = al.dtype == ScalarType::I1 ? 1 : bitWidth(al.dtype) / 8;
  const int64_t readBytes = read.elems * bytes, unit = std::min<int64_t>(16, readBytes);
  if (n < 2 || read.dims.size() != n || bytes > 8 || readBytes % unit != 0)
    return;
  std::vector<Instr> reads;
  bool aligned = false;
  if (!readInstrs(c, read, al, unit, reads, aligned))
    return;
  const std::vector<Instr> padStores = storeInstrs(c, al, 16);
  auto padCost = [&](int64_t pad) {
    Layout l;
    l.pad = pad;
    return cost(al, l, reads) + cost(al, l, padStores);
  };
  int64_t bestPad = al.pad, best = padCost(al.pad);
  const int64_t widest = std::max(padStores.empty() ? 0 : padStores.front().bytes, unit);
  for (int64_t b = 0; b <= 32 && best > 0; b += widest) {
    const int64_t x = b % bytes == 0 ? padCost(b / bytes) : best;
    if (x < best) {
      best = x;
      bestPad = b / bytes;
    }
  }
  al.modeledPad = best;
  Layout x;
  x.unit = unit;
  if (aligned && xorUnitPhases(al.tile[n - 1] * bytes, unit, x.period, x.phases))
    al.modeledXor = cost(al, x, reads) + cost(al, x, storeInstrs(c, al, unit));
  if (al.modeledXor == 0)
    al.xorCandidate = unit;
  if (al.modeledXor >= 0 && al.modeledXor < best) {
    applyXor(al);
    return;
  }
  if (bestPad != al.pad) { // the same rows with another padding
    al.pad = bestPad;
    int64_t stride = 1;
    for (size_t i = n; i-- > 0;) {
      al.strides[i] = sym::IndexExpr(stride);
      stride *= al.tile[i] + (i + 1 == n ? bestPad : 0);
    }
    al.bytes = stride * bytes;
  }
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
  if (any && unpadded > 0 &&
      !(padded <= lds && (padded == 0 || lds / unpadded <= lds / padded)))
    for (SharedTile &t : c.plan.tiles)
      if (!t.scratch && !t.xorUnit && t.xorCandidate)
        applyXor(t);
  // Fit before speed: where the promoted tiles still exceed the target's shared memory (its
  // opt-in limit) with their padding and fit without it, every padded tile loses its padding
  // (the XOR layout where it has a conflict-free one, else plain rows with whatever bank
  // conflicts they have): a slower kernel rather than none (the attention samples' 128 x 128
  // f16 K and V tiles on AMD: 67,584 bytes padded, 65,536 plain).
  int64_t now = 0, plain = 0;
  for (const SharedTile &t : c.plan.tiles) {
    if (t.scratch)
      continue;
    now += rounded(t.bytes) * t.stages;
    plain += rounded(t.pad > 0 && !t.xorUnit ? unpaddedBytes(t) : t.bytes) * t.stages;
  }
  const int64_t limit = std::max<int64_t>(lds, c.target.ldsOptInBytes);
  if (now > limit && plain <= limit)
    for (SharedTile &t : c.plan.tiles)
      if (!t.scratch && t.pad > 0 && !t.xorUnit)
        applyXor(t);
}

} // namespace wave
