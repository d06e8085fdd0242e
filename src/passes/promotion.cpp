// The promotion pass (kernel_plan.h): each read of a `shared` tensor parameter is staged through
// a tile of shared memory that the workgroup fills together. This file decides the tile: its
// shape (the tiling constraint's tile along a loop's dim, the workgroup's tile along a
// distributed dim, the whole dim when it is static) and its layout (padded rows, or a wgmma
// operand's swizzle atoms; on AMD, lds_layout.cpp's XOR layout where its bank model prefers
// it). docs/hardware.md section 5 has the bank facts behind the padding.
#include "passes/kernel_plan.h"

namespace wave {

using sym::IndexExpr;

namespace {

bool isLaneTerm(const std::string &s) {
  return s.rfind("$T", 0) == 0 || s == "$g" || s.rfind("$i_", 0) == 0;
}

// `e` with every thread, element and clone term set to 0: the tile's first index.
IndexExpr withoutLaneTerms(const IndexExpr &e) {
  std::map<std::string, IndexExpr> subs;
  for (const auto &s : e.freeSymbols())
    if (isLaneTerm(s))
      subs[s] = IndexExpr(0);
  return e.subs(subs);
}

unsigned elementBytes(ScalarType t) { return t == ScalarType::I1 ? 1 : bitWidth(t) / 8; }

// A wgmma operand's tile: read through matrix descriptors, its last two dims [rows, K]
// (K-major) or, for B, [K, N] (N-major), the dims before them one index per workgroup; rows of
// one swizzle atom (32, 64 or 128 bytes), or of several 128-byte atoms stored as column blocks.
bool wgmmaLayout(PlanContext &c, const ir::Op &read, const TileAccess &acc, const ir::Op &mma,
                 bool lhs, SharedTile &al, Promotion &p) {
  const size_t n = al.tile.size();
  const unsigned bytes = elementBytes(acc.dtype);
  const ir::Dim &rowDim = lhs ? mma.dims[0] : mma.dims[1], &kDim = mma.dims[2];
  bool shape = n >= 2 && (bytes == 2 || bytes == 1);
  for (size_t i = 0; shape && i + 2 < n; ++i)
    shape = al.tile[i] == 1;
  const bool kMajor = shape && acc.dims[n - 2].first == rowDim && acc.dims[n - 1].first == kDim;
  // 8-bit operands only K-major (the PTX ISA transposes 16-bit operands only).
  const bool nMajor = shape && !lhs && bytes == 2 && acc.dims[n - 2].first == kDim &&
                      acc.dims[n - 1].first == rowDim;
  if (!kMajor && !nMajor)
    return c.queries.refuse(DiagId::UnsupportedWgmmaTile,
                            "a wgmma operand whose shared-memory tile is not [" + rowDim.str() +
                                ", " + kDim.str() + "] (or, for B, [" + kDim.str() + ", " +
                                rowDim.str() + "]) of 16-bit elements; 8-bit ones K-major",
                            read.loc);
  const int64_t rows = al.tile[n - 2], rowBytes = al.tile[n - 1] * bytes;
  const bool atom = kMajor && (rowBytes == 32 || rowBytes == 64 || rowBytes == 128);
  if ((!atom && rowBytes % 128 != 0) || rows % 8 != 0)
    return c.queries.refuse(DiagId::UnsupportedWgmmaTile, "a wgmma operand tile of " + std::to_string(rows) + " rows of " +
                                std::to_string(rowBytes) +
                                " bytes (wgmma needs rows of 32, 64 or a multiple of 128 bytes, "
                                "N-major rows a multiple of 128, in groups of 8 rows)",
                            read.loc);
  const int64_t w = atom ? rowBytes : 128;
  al.xorBytes = w;
  al.blockBytes = rowBytes > w ? rows * w : 0;
  al.align = 1024;
  al.pad = 0;
  al.strides.assign(n, IndexExpr(1));
  for (size_t i = 0; i < n; ++i)
    al.strides[i] =
        IndexExpr(i + 1 == n ? 1 : i + 2 == n ? al.tile[n - 1] : rows * al.tile[n - 1]);
  al.bytes = (rows * rowBytes + al.align - 1) / al.align * al.align;
  p.wgmma = true;
  p.nMajor = nMajor;
  return true;
}

} // namespace

bool isPromotedRead(const ir::Op &op) {
  // A gather is not staged (the legalize pass refuses one of a `shared` parameter).
  return op.kind == ir::OpKind::Read && !ir::indexOperand(op) && op.operands[0]->type.space == AddressSpace::Shared &&
         op.operands[0]->paramIndex >= 0;
}

const ir::Op *wgmmaUser(const ir::Op &read, bool *lhs) {
  const ir::Value *v = read.results[0];
  const ir::Op *found = nullptr;
  bool asLhs = false;
  for (const ir::Op *u : v->users) {
    if (u->kind != ir::OpKind::Mma || !u->mma || u->mma->family != MmaFamily::Wgmma)
      return nullptr;
    const bool l = u->operands[0] == v, r = u->operands[1] == v;
    if (l == r || u->operands[2] == v || (found && asLhs != l))
      return nullptr;
    found = found ? found : u;
    asLhs = l;
  }
  if (lhs)
    *lhs = asLhs;
  return found;
}

bool wgmmaOverlaps(const ir::Op &iterate) {
  const ir::Region &body = *iterate.regions[0];
  bool ok = true;
  ir::walk(body, [&](const ir::Op &op) {
    if (op.kind != ir::OpKind::Mma || !op.mma || op.mma->family != MmaFamily::Wgmma)
      return;
    for (const ir::Op *u : op.results[0]->users) {
      if (u->kind != ir::OpKind::Yield || u->parent != &body) {
        ok = false;
        continue;
      }
      for (size_t i = 0; i < u->operands.size(); ++i)
        if (u->operands[i] == op.results[0] && i < body.args.size())
          for (const ir::Op *next : body.args[i]->users)
            ok = ok && next->kind == ir::OpKind::Mma && next->operands[2] == body.args[i] &&
                 next->operands[0] != body.args[i] && next->operands[1] != body.args[i];
    }
  });
  return ok;
}

bool planPromotion(PlanContext &c, const ir::Op &read) {
  TileAccess acc;
  if (!c.queries.tileAccess(read, acc))
    return false;
  Promotion p;
  p.op = &read;
  p.mapped = read.mapping != nullptr;
  SharedTile al;
  al.op = &read;
  al.dtype = acc.dtype;
  const size_t n = acc.dims.size();
  for (size_t i = 0; i < n; ++i) {
    const auto &[d, start] = acc.dims[i];
    int64_t tile = 0;
    const auto *t = c.kernel.tilingFor(d);
    const auto *wg = c.kernel.workgroupFor(d);
    if (t && start.dependsOn("$IV_" + d.str()))
      tile = t->tile;
    else if (wg)
      tile = wg->tile;
    else if (auto size = d.size.asInteger())
      tile = *size;
    if (tile <= 0)
      return c.queries.refuse(DiagId::UnsupportedPromotionTile,
                              "a read of a `shared` tensor is staged in shared memory, but its "
                              "dim " + d.str() +
                                  " has neither a workgroup or tiling constraint nor a static size",
                              read.loc);
    al.tile.push_back(tile);
    p.origin.push_back(c.facts.simplify(withoutLaneTerms(start)));
  }
  // Padding of the innermost dim: 16 bytes where reads are 128-bit wide (ldmatrix rows, WMMA
  // rows) or on NVIDIA, else 8 bytes (docs/hardware.md 5.1). Rows then start on distinct banks.
  const unsigned bytes = elementBytes(acc.dtype);
  const int64_t readBytes = std::min<int64_t>(16, acc.elems * bytes);
  const int64_t padBytes = c.target.vendor == Vendor::NVIDIA || readBytes >= 16 ? 16 : 8;
  const int64_t pad = std::max<int64_t>(1, padBytes / bytes);
  al.strides.assign(n, IndexExpr(1));
  int64_t stride = 1;
  for (size_t i = n; i-- > 0;) {
    al.strides[i] = IndexExpr(stride);
    stride *= al.tile[i] + (i + 1 == n ? pad : 0);
  }
  al.bytes = stride * bytes; // one buffer; offsets are placed by the shared-memory plan
  al.pad = pad;
  // Without ldmatrix (AMD), the bank model may replace the padding by an XOR layout.
  if (c.target.vendor != Vendor::NVIDIA)
    chooseLdsLayout(c, acc, al);
  bool lhs = false;
  if (const ir::Op *mma = wgmmaUser(read, &lhs))
    if (!wgmmaLayout(c, read, acc, *mma, lhs, al, p))
      return false;
  p.alloc = static_cast<int>(c.plan.tiles.size());
  c.plan.tiles.push_back(al);
  c.plan.promotions[&read] = p;
  return true;
}

} // namespace wave
