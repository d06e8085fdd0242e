// The cooperative-copies pass (kernel_plan.h): how the whole workgroup fills a promoted tile.
// Every thread copies `lanes` consecutive elements of the innermost dim per round (up to 16
// bytes, the widest global load), in as few rounds (`copies`) as cover the tile: the fewest
// global loads, each as wide as the tile's rows allow. On NVIDIA the copy is a cp.async of 16
// bytes per vector (no registers, overlapped with compute by the schedule) when the access model
// proves every vector 16-byte aligned and wholly in or out of bounds.
#include "passes/kernel_plan.h"

namespace wave {

int64_t copyLanes(const std::vector<int64_t> &tile, ScalarType t, int64_t threads) {
  int64_t elems = 1;
  for (int64_t x : tile)
    elems *= x;
  const unsigned bytes = t == ScalarType::I1 ? 1 : bitWidth(t) / 8;
  int64_t lanes = std::max<int64_t>(1, 16 / bytes);
  while (lanes > 1 && (tile.back() % lanes != 0 || elems % (threads * lanes) != 0))
    lanes /= 2;
  return lanes;
}

bool planCooperativeCopy(PlanContext &c, Promotion &p) {
  const SharedTile &al = c.plan.tiles[p.alloc];
  int64_t elems = 1;
  for (int64_t t : al.tile)
    elems *= t;
  const int64_t threads =
      static_cast<int64_t>(c.dist.block[0]) * c.dist.block[1] * c.dist.block[2];
  const int64_t lanes = copyLanes(al.tile, al.dtype, threads);
  if (elems % (threads * lanes) != 0)
    return c.queries.refuse(DiagId::UnsupportedPromotionTile,
                            "a shared-memory tile of " + std::to_string(elems) +
                                " elements that the workgroup's " + std::to_string(threads) +
                                " threads cannot copy evenly (make the tile a multiple of the "
                                "workgroup size)",
                            p.op->loc);
  p.lanes = lanes;
  p.copies = elems / (threads * lanes);
  p.async = c.queries.asyncCopyable(p);
  p.dmaCopies = c.kernel.hardware.ldsDma && c.target.ldsDma ? c.queries.ldsDmaCopies(p) : 0;
  return true;
}

} // namespace wave
