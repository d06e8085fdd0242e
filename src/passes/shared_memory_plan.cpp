// The shared-memory-plan pass (kernel_plan.h): where each tile sits in the workgroup's arena,
// which tiles share bytes, and whether the arena is static shared memory or provided by the
// launch. The scratch tiles of cross-wave reductions are sized before emission, from shapes
// alone (codegen/emitter/reduction_scratch.cpp); the placement runs after emission, because a
// tile's live span is where the emitted code uses it. Tiles that share bytes are one resource
// for barrier insertion (barrier_insertion.h, placeBarriers' `overlap`). Tile layouts (padding, swizzle) are
// decided here too, for the promotion and schedule passes.
#include "passes/kernel_plan.h"

#include <algorithm>

namespace wave {

void relayout(SharedTile &al, ScalarType t, bool swizzle) {
  if (al.xorBytes || al.xorUnit)
    return;
  const size_t n = al.tile.size();
  const int64_t bytes = t == ScalarType::I1 ? 1 : bitWidth(t) / 8;
  al.swizzle = swizzle ? 16 / bytes : 0;
  int64_t stride = 1;
  for (size_t i = n; i-- > 0;) {
    al.strides[i] = sym::IndexExpr(stride);
    stride *= al.tile[i] + (i + 1 == n && !swizzle ? al.pad : 0);
  }
  al.bytes = stride * bytes;
}

namespace {
bool liveTogether(const SharedTile &a, const SharedTile &b) {
  if (a.liveFirst < 0 || b.liveFirst < 0)
    return true;
  return a.liveFirst <= b.liveLast && b.liveFirst <= a.liveLast;
}
int64_t endOf(const SharedTile &t) { return t.offsetBytes + t.bytes * t.stages; }
} // namespace

int64_t placeTiles(std::vector<SharedTile> &tiles, bool reuse) {
  int64_t end = 0, align = 16;
  for (size_t i = 0; i < tiles.size(); ++i) {
    SharedTile &al = tiles[i];
    int64_t from = 0;
    for (size_t j = 0; j < i; ++j)
      if (!reuse || liveTogether(al, tiles[j]))
        from = std::max(from, endOf(tiles[j]));
    al.offsetBytes = (from + al.align - 1) / al.align * al.align;
    end = std::max(end, endOf(al));
    align = std::max(align, al.align);
  }
  return end > 0 && align > 16 ? end + align - 16 : end;
}

bool tilesOverlap(const SharedTile &a, const SharedTile &b) {
  return a.offsetBytes < endOf(b) && b.offsetBytes < endOf(a) && a.bytes > 0 && b.bytes > 0;
}

// Rotating 16-byte chunks needs rows of 2, 4 or 8 whole chunks that divide the 128-byte bank
// period, and 16-byte-aligned accesses (ldmatrix rows, cp.async).
bool swizzlable(const std::vector<int64_t> &tile, ScalarType t) {
  const int64_t rowBytes = tile.back() * (bitWidth(t) / 8);
  return tile.size() >= 2 && rowBytes % 16 == 0 && rowBytes >= 32 && 128 % rowBytes == 0 &&
         bitWidth(t) == 16;
}

bool planSharedMemory(PlanContext &c) {
  SharedMemoryPlan &m = c.plan.sharedMemory;
  m.bytes = m.sequentialBytes = placeTiles(c.plan.tiles);
  m.reused = false;
  if (m.bytes > c.target.ldsBytes) {
    const int64_t shared = placeTiles(c.plan.tiles, /*reuse=*/true);
    m.reused = shared < m.bytes;
    m.bytes = m.reused ? shared : placeTiles(c.plan.tiles);
  }
  m.align = 16;
  for (const auto &al : c.plan.tiles)
    m.align = std::max(m.align, al.align);
  m.dynamicBytes = 0;
  if (m.bytes == 0)
    return true;
  if (m.bytes > c.target.ldsOptInBytes) // the buffers and padding chosen make it too large
    return c.queries.refuseSharedMemory(m.bytes);
  // Above the static limit the arena is dynamic shared memory, sized by the launch.
  m.dynamicBytes = m.bytes > c.target.ldsBytes ? m.bytes : 0;
  return true;
}

} // namespace wave
