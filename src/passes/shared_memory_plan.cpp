// The shared-memory-plan pass (kernel_plan.h): where each tile sits in the workgroup's arena,
// and whether the arena is static shared memory or provided by the launch. It runs after
// emission, because the emitter adds the scratch tiles of cross-wave reductions (their size
// follows from the operand's layout, known only there). Tile layouts (padding, swizzle) are
// decided here too, for the promotion and schedule passes.
#include "passes/kernel_plan.h"

namespace wave {

void relayout(SharedTile &al, ScalarType t, bool swizzle) {
  if (al.xorBytes)
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

int64_t placeTiles(std::vector<SharedTile> &tiles) {
  int64_t end = 0, align = 16;
  for (auto &al : tiles) {
    al.offsetBytes = (end + al.align - 1) / al.align * al.align;
    end = al.offsetBytes + al.bytes * al.stages;
    align = std::max(align, al.align);
  }
  return end > 0 && align > 16 ? end + align - 16 : end;
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
  m.bytes = placeTiles(c.plan.tiles);
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
