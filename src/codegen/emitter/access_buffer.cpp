// AMD buffer instructions for checked global accesses (the comment at
// KernelEmitter::BufferPiece in kernel_emitter.h says how they mask).
#include "codegen/emitter/kernel_emitter.h"

namespace wave::codegen::detail {

namespace {
// num_records of every descriptor, and the voffset of a masked-off access: in-bounds voffsets
// are below 2^31 - 16 (bufferEligible), so every 32-bit word of a masked-off access lies at or
// beyond num_records and is out of range whatever the hardware's rule for partial words.
constexpr int64_t kBufferNumRecords = int64_t(1) << 31;
constexpr int64_t kBufferOob = int64_t(1) << 31;
} // namespace

std::string KernelEmitter::constI32(int64_t v) {
  int32_t w = static_cast<int32_t>(static_cast<uint32_t>(v));
  std::string key = std::to_string(w) + ":i32";
  auto it = intConsts_.find(key);
  if (it != intConsts_.end())
    return it->second;
  std::string n = "%ci32_" + (w < 0 ? "m" + std::to_string(-int64_t(w)) : std::to_string(w));
  head_ << "      " << n << " = arith.constant " << w << " : i32\n";
  return intConsts_[key] = n;
}

bool KernelEmitter::bufferEligible(const Access &acc, const CloneAssign &a, IndexExpr &uniform) {
  if (!lower_->bufferAccesses() || acc.ptr != "!llvm.ptr<1>" || acc.swizzle)
    return false;
  bool masked = false;
  for (const auto &d : acc.dims) {
    masked = masked || d.masked;
    if (d.maskedTile) // its descriptor would check the tensor's end only
      return false;
  }
  if (!masked) {
    // Unmasked: worth it only for a wide access whose alignment the facts do not prove.
    int64_t p = wantedAlignElems(acc);
    if (p <= 1 || provenAlignment(acc, linearOffset(acc, a, 0), p) >= p * byteSize(acc.dtype))
      return false;
  }
  // The wave-uniform part: every lane-dependent symbol at 0 (workgroup ids, clone indices,
  // loop variables and sizes stay).
  std::map<std::string, IndexExpr> lane0;
  for (const char *t : {"$T0", "$T1", "$T2"})
    lane0[t] = IndexExpr(0);
  uniform = linearOffset(acc, a, 0).subs(lane0);
  const int64_t bytes = byteSize(acc.dtype);
  for (const auto &[k0, n] : pieces(acc, a))
    for (int64_t g : {k0, k0 + n - 1}) {
      sym::Range r = facts_.rangeOf(facts_.simplify(linearOffset(acc, a, g) - uniform));
      if (!r.boundedBelow() || r.lo < 0 || !r.boundedAbove() || r.hi > (kBufferOob - 16) / bytes)
        return false;
    }
  return true;
}

std::string KernelEmitter::bufferRsrc(const Access &acc, const IndexExpr &uniform,
                                      const std::string &records) {
  // Base address (48 bits; stride 0 in the high half of word 1), num_records, word 3. The
  // select-masked descriptor depends on the base alone: once per region.
  const std::string key = "rsrc " + acc.base + " " + uniform.str() + " " + records;
  auto it = exprCache_.find(key);
  if (it != exprCache_.end())
    return it->second;
  std::string u64 = fresh(), p = fresh(), addr = fresh(), lo = fresh(), sh = fresh(), hi = fresh(),
              hi16 = fresh(), c32 = fresh(), r = fresh();
  line(u64 + " = arith.index_cast " + lowerIndex(uniform) + " : index to i64");
  line(p + " = llvm.getelementptr " + acc.base + "[" + u64 + "] : (!llvm.ptr<1>, i64) -> " +
       "!llvm.ptr<1>, " + mlirType(acc.dtype));
  line(addr + " = llvm.ptrtoint " + p + " : !llvm.ptr<1> to i64");
  line(lo + " = arith.trunci " + addr + " : i64 to i32");
  line(c32 + " = arith.constant 32 : i64");
  line(sh + " = arith.shrui " + addr + ", " + c32 + " : i64");
  line(hi + " = arith.trunci " + sh + " : i64 to i32");
  line(hi16 + " = arith.andi " + hi + ", " + constI32(0xffff) + " : i32");
  line(r + " = vector.from_elements " + lo + ", " + hi16 + ", " + records + ", " +
       constI32(target_.bufferRsrcWord3) + " : vector<4xi32>");
  return exprCache_[key] = r;
}

// Row masking applies when the pieces run along a stride-1 dim `vd`, every other dim's index
// is the same in all lanes, and the range check's units (32-bit words, or the whole access
// when it is smaller) start at the same phase in every lane, so that a num_records on a unit
// boundary splits no unit. `word` is the unit.
bool KernelEmitter::rowMaskable(const Access &acc, const CloneAssign &a,
                                const IndexExpr &uniform,
                                const std::vector<std::pair<int64_t, int64_t>> &parts,
                                int64_t &word) {
  const int vd = acc.vecDim;
  if (vd < 0 || !acc.dims[vd].contiguous || !facts_.provesEqual(acc.strides[vd], IndexExpr(1)))
    return false;
  // num_records holds one upper bound of the row: iteration bounds and lower bounds (a mapped
  // access) take the select masking.
  if (!acc.iter.empty())
    return false;
  for (const auto &d : acc.dims)
    if (d.maskedBelow)
      return false;
  for (size_t i = 0; i < acc.dims.size(); ++i)
    if (static_cast<int>(i) != vd)
      for (const auto &sym : dimIndex(acc, i, a, 0).freeSymbols())
        if (sym.rfind("$T", 0) == 0)
          return false;
  const int64_t bytes = byteSize(acc.dtype);
  word = 4;
  if (parts.size() == 1 && parts[0].second * bytes < 4)
    word = parts[0].second * bytes; // one access of 1 or 2 bytes
  for (const auto &[k0, n] : parts)
    if ((n * bytes) % word != 0 || (k0 * bytes) % word != 0)
      return false;
  IndexExpr lane = linearOffset(acc, a, 0) - uniform;
  return facts_.provesExact(facts_.simplify(lane * bytes), IndexExpr(word));
}

KernelEmitter::BufferAccess KernelEmitter::bufferPrepare(const Access &acc, const CloneAssign &a,
                                                         const IndexExpr &uniform) {
  BufferAccess b;
  b.acc = acc;
  b.clone = a;
  b.uniform = uniform;
  // Pieces whose bytes are no word multiple (3 x f16) go element by element.
  const int64_t bytes = byteSize(acc.dtype);
  std::vector<std::pair<int64_t, int64_t>> parts;
  for (const auto &[k0, n] : pieces(acc, a)) {
    if (n > 1 && (n * bytes) % 4 != 0 && n * bytes != 2) {
      for (int64_t j = 0; j < n; ++j)
        parts.push_back({k0 + j, 1});
      continue;
    }
    parts.push_back({k0, n});
  }
  int64_t word = 4;
  if (rowMaskable(acc, a, uniform, parts, word)) {
    const size_t vd = static_cast<size_t>(acc.vecDim);
    std::map<std::string, IndexExpr> lane0;
    for (const char *t : {"$T0", "$T1", "$T2"})
      lane0[t] = IndexExpr(0);
    std::vector<std::string> others;
    for (size_t i = 0; i < acc.dims.size(); ++i)
      if (i != vd && acc.dims[i].masked)
        others.push_back(cmpLt(lowerIndex(dimIndex(acc, i, a, 0)), lowerIndex(acc.sizes[i])));
    std::string valid = others.empty() ? "" : andAll(others);
    std::string records = constIndex(kBufferNumRecords), exact;
    if (acc.dims[vd].masked) {
      // Bytes from the base to the row's end, clamped to [0, 2^31].
      IndexExpr rem = (acc.sizes[vd] - dimIndex(acc, vd, a, 0).subs(lane0)) * bytes;
      exact = binop("minsi", binop("maxsi", lowerIndex(rem), constIndex(0)),
                    constIndex(kBufferNumRecords));
      records = word == bytes ? exact : binop("andi", exact, constIndex(-word));
    }
    if (!valid.empty()) {
      std::string r = fresh();
      line(r + " = arith.select " + valid + ", " + records + ", " + constIndex(0) + " : index");
      records = r;
    }
    std::string r32 = fresh();
    line(r32 + " = arith.index_cast " + records + " : index to i32");
    b.rsrc = bufferRsrc(acc, uniform, r32);
    for (const auto &[k0, n] : parts) {
      BufferPiece piece;
      piece.first = k0;
      piece.count = n;
      b.pieces.push_back(piece);
    }
    b.word = word;
    if (exact.empty() || bytes >= word)
      return b;
    // The tail: the row ends inside a word (the word's range check drops it whole), which
    // happens to at most one lane: the one holding the row's last element. (The same for every
    // clone but the row's validity: shared after CSE.)
    std::string inside = fresh(), holds = fresh(), tail = binop("andi", exact, constIndex(word - 1));
    line(inside + " = arith.cmpi ne, " + tail + ", " + constIndex(0) + " : index");
    std::string last = lowerIndex(acc.sizes[vd] - 1 - dimIndex(acc, vd, a, 0));
    line(holds + " = arith.cmpi ult, " + last + ", " + constIndex(acc.elems) + " : index");
    std::string needs = fresh();
    line(needs + " = arith.andi " + inside + ", " + holds + " : i1");
    if (!valid.empty()) {
      std::string r = fresh();
      line(r + " = arith.andi " + needs + ", " + valid + " : i1");
      needs = r;
    }
    b.tailNeeds = needs;
    b.rowBytes = exact;
    return b;
  }
  b.rsrc = bufferRsrc(acc, uniform, constI32(kBufferNumRecords));
  for (const auto &[k0, n] : parts) {
    BufferPiece piece;
    piece.first = k0;
    piece.count = n;
    // Whether a checked index varies inside the piece; if not, the piece is wholly in or out.
    bool varies = false;
    for (const Bound &bd : boundsOf(acc))
      if (n > 1 &&
          !facts_.provesEqual(indexAt(*bd.start, a, k0), indexAt(*bd.start, a, k0 + n - 1)))
        varies = true;
    // Along a contiguous dim the in-bounds elements are a prefix: the last one decides "all",
    // the first one "any"; otherwise every element is asked.
    const bool prefix = prefixBounds(acc);
    std::vector<std::string> all, any;
    for (int64_t g = k0; g < k0 + n; ++g) {
      if (prefix && g != k0 && g != k0 + n - 1)
        continue;
      if (!prefix || g == k0 + n - 1)
        all.push_back(inBounds(acc, a, g));
      if (varies && (!prefix || g == k0))
        any.push_back(inBounds(acc, a, g));
    }
    piece.full = all.front().empty() ? "" : andAll(all);
    if (varies) {
      std::string some = any.front();
      for (size_t i = 1; i < any.size(); ++i) {
        std::string r = fresh();
        line(r + " = arith.ori " + some + ", " + any[i] + " : i1");
        some = r;
      }
      std::string notFull = fresh(), needs = fresh();
      line(notFull + " = arith.xori " + piece.full + ", " + constTrue() + " : i1");
      line(needs + " = arith.andi " + some + ", " + notFull + " : i1");
      piece.needs = needs;
    }
    b.pieces.push_back(piece);
  }
  return b;
}

std::string KernelEmitter::bufferOffset(const BufferAccess &b, int64_t g, const std::string &cond) {
  IndexExpr bytes =
      (linearOffset(b.acc, b.clone, g) - b.uniform) * static_cast<int64_t>(byteSize(b.acc.dtype));
  std::string v = fresh();
  line(v + " = arith.index_cast " + lowerIndex(bytes) + " : index to i32");
  if (cond.empty())
    return v;
  std::string r = fresh();
  line(r + " = arith.select " + cond + ", " + v + ", " + constI32(kBufferOob) + " : i32");
  return r;
}

namespace {
// The type a buffer access of `n` elements of `bytes` each moves: words for more than 4 bytes
// (the instructions are dword loads/stores), else one integer or the element itself.
std::string bufferDataType(const std::string &elem, int64_t n, int64_t bytes) {
  const int64_t total = n * bytes;
  if (total > 4)
    return "vector<" + std::to_string(total / 4) + "xi32>";
  if (n == 1)
    return elem;
  return "i" + std::to_string(total * 8);
}
} // namespace

std::string KernelEmitter::bufferLoadPiece(const BufferAccess &b, const std::string &voff,
                                           int64_t n) {
  const std::string ty = vecType(b.acc.dtype, n);
  const std::string raw = bufferDataType(mlirType(b.acc.dtype), n, byteSize(b.acc.dtype));
  std::string r = fresh();
  lower_->bufferLoad(r, b.rsrc, voff, constI32(0), raw);
  if (raw == ty)
    return r;
  std::string c = fresh();
  line(c + " = llvm.bitcast " + r + " : " + raw + " to " + ty);
  return c;
}

void KernelEmitter::bufferStorePiece(const BufferAccess &b, const std::string &voff,
                                     const std::string &value, int64_t n) {
  const std::string ty = vecType(b.acc.dtype, n);
  const std::string raw = bufferDataType(mlirType(b.acc.dtype), n, byteSize(b.acc.dtype));
  std::string v = value;
  if (raw != ty) {
    v = fresh();
    line(v + " = llvm.bitcast " + value + " : " + ty + " to " + raw);
  }
  lower_->bufferStore(v, b.rsrc, voff, constI32(0), raw);
}

std::string KernelEmitter::bufferLoad(const Access &acc, const CloneAssign &a,
                                      const IndexExpr &uniform) {
  BufferBatch batch(*this);
  BufferAccess b = bufferPrepare(acc, a, uniform);
  const int64_t e = acc.elems;
  const std::string ty = mlirType(acc.dtype), vty = vecType(acc.dtype, e);
  std::string vec;
  if (b.pieces.size() > 1) {
    vec = fresh();
    line(vec + " = arith.constant dense<" + zeroLit(acc.dtype) + "> : " + vty);
  }
  bool fallback = false;
  for (const auto &pc : b.pieces) {
    std::string v = bufferLoadPiece(b, bufferOffset(b, pc.first, pc.full), pc.count);
    fallback = fallback || !pc.needs.empty();
    if (b.pieces.size() == 1) {
      vec = v;
      continue;
    }
    std::string r = fresh();
    if (pc.count == 1)
      line(r + " = vector.insert " + v + ", " + vec + " [" + std::to_string(pc.first) + "] : " +
           ty + " into " + vty);
    else
      line(r + " = vector.insert_strided_slice " + v + ", " + vec + " {offsets = [" +
           std::to_string(pc.first) + "], strides = [1]} : " + vecType(acc.dtype, pc.count) +
           " into " + vty);
    vec = r;
  }
  b.value = vec;
  if (!fallback && b.tailNeeds.empty())
    return vec;
  b.result = fresh();
  b.load = true;
  pendingBuffer_.push_back(b);
  return b.result;
}

void KernelEmitter::bufferStore(const Access &acc, const CloneAssign &a, const IndexExpr &uniform,
                                const std::string &value) {
  BufferBatch batch(*this);
  BufferAccess b = bufferPrepare(acc, a, uniform);
  const int64_t e = acc.elems;
  const std::string ty = mlirType(acc.dtype), vty = vecType(acc.dtype, e);
  bool fallback = false;
  for (const auto &pc : b.pieces) {
    std::string piece = value;
    if (pc.count == 1 && e > 1) {
      piece = fresh();
      line(piece + " = vector.extract " + value + "[" + std::to_string(pc.first) + "] : " + ty +
           " from " + vty);
    } else if (pc.count != e) {
      piece = fresh();
      line(piece + " = vector.extract_strided_slice " + value + " {offsets = [" +
           std::to_string(pc.first) + "], sizes = [" + std::to_string(pc.count) +
           "], strides = [1]} : " + vty + " to " + vecType(acc.dtype, pc.count));
    }
    bufferStorePiece(b, bufferOffset(b, pc.first, pc.full), piece, pc.count);
    fallback = fallback || !pc.needs.empty();
  }
  if (!fallback && b.tailNeeds.empty())
    return;
  b.value = value;
  b.load = false;
  pendingBuffer_.push_back(b);
}

void KernelEmitter::flushBufferFallback() {
  if (pendingBuffer_.empty())
    return;
  std::vector<BufferAccess> items = std::move(pendingBuffer_);
  pendingBuffer_.clear();
  std::vector<std::string> needs;
  for (const auto &b : items) {
    for (const auto &pc : b.pieces)
      if (!pc.needs.empty())
        needs.push_back(pc.needs);
    if (!b.tailNeeds.empty())
      needs.push_back(b.tailNeeds);
  }
  std::string any = needs.front();
  for (size_t i = 1; i < needs.size(); ++i) {
    std::string r = fresh();
    line(r + " = arith.ori " + any + ", " + needs[i] + " : i1");
    any = r;
  }
  std::string results, types, before, after;
  for (const auto &b : items)
    if (b.load) {
      results += (results.empty() ? "" : ", ") + b.result;
      types += (types.empty() ? "" : ", ") + vecType(b.acc.dtype, b.acc.elems);
      before += (before.empty() ? "" : ", ") + b.value;
    }
  const std::string saved = indent_;
  auto cache = exprCache_;
  line((results.empty() ? "scf.if " : results + " = scf.if ") + any +
       (results.empty() ? " {" : " -> (" + types + ") {"));
  indent_ += "  ";
  for (const auto &b : items) {
    std::string vec = b.value;
    bufferFallback(b, vec);
    if (b.load)
      after += (after.empty() ? "" : ", ") + vec;
  }
  if (!results.empty()) {
    line("scf.yield " + after + " : " + types);
    indent_ = saved;
    line("} else {");
    indent_ += "  ";
    line("scf.yield " + before + " : " + types);
  }
  indent_ = saved;
  exprCache_ = cache;
  line("}");
}

// Inside the fallback branch: the tails and partial pieces of `b`, one element at a time, each
// masked off (voffset 2^31) where the lane does not need it; a load updates `vec`.
void KernelEmitter::bufferFallback(const BufferAccess &access, std::string &vec) {
  // The row descriptor drops the tail's word: the fallback goes through the plain one (masked
  // by its voffsets).
  BufferAccess b = access;
  if (!b.tailNeeds.empty())
    b.rsrc = bufferRsrc(b.acc, b.uniform, constI32(kBufferNumRecords));
  const int64_t e = b.acc.elems;
  const std::string ty = mlirType(b.acc.dtype), vty = vecType(b.acc.dtype, e);
  // Element `pos` (an index SSA or constant) of the access: loaded and kept where `cond`, or
  // stored.
  auto element = [&](const std::string &pos, const std::string &voff, const std::string &cond) {
    if (!b.load) {
      std::string x = b.value;
      if (e > 1) {
        x = fresh();
        line(x + " = vector.extract " + b.value + "[" + pos + "] : " + ty + " from " + vty);
      }
      bufferStorePiece(b, voff, x, 1);
      return;
    }
    std::string one = bufferLoadPiece(b, voff, 1), old = fresh(), pick = fresh(), next = fresh();
    line(old + " = vector.extract " + vec + "[" + pos + "] : " + ty + " from " + vty);
    line(pick + " = arith.select " + cond + ", " + one + ", " + old + " : " + ty);
    line(next + " = vector.insert " + pick + ", " + vec + " [" + pos + "] : " + ty + " into " + vty);
    vec = next;
  };
  if (!b.tailNeeds.empty()) {
    // The tail's elements size - k (k = 1 .. while the tail has k elements) at the row's end
    // minus k elements, at lane position size - k - first (clamped for the lanes without it).
    const size_t vd = static_cast<size_t>(b.acc.vecDim);
    const int64_t bytes = byteSize(b.acc.dtype);
    std::string ends = fresh();
    line(ends + " = arith.index_cast " + b.rowBytes + " : index to i32");
    for (int64_t k = 1; k * bytes < b.word; ++k) {
      std::string cond = b.tailNeeds;
      if (k > 1) {
        std::string tail = binop("andi", b.rowBytes, constIndex(b.word - 1));
        std::string more = fresh(), c = fresh();
        line(more + " = arith.cmpi sge, " + tail + ", " + constIndex(k * bytes) + " : index");
        line(c + " = arith.andi " + cond + ", " + more + " : i1");
        cond = c;
      }
      std::string pos = binop("minui",
                              lowerIndex(b.acc.sizes[vd] - k - dimIndex(b.acc, vd, b.clone, 0)),
                              constIndex(e - 1));
      std::string at = fresh(), voff = fresh();
      line(at + " = arith.subi " + ends + ", " + constI32(k * bytes) + " : i32");
      line(voff + " = arith.select " + cond + ", " + at + ", " + constI32(kBufferOob) + " : i32");
      element(pos, voff, cond);
    }
  }
  for (const auto &pc : b.pieces) {
    if (pc.needs.empty())
      continue;
    std::string notFull = fresh();
    line(notFull + " = arith.xori " + pc.full + ", " + constTrue() + " : i1");
    for (int64_t g = pc.first; g < pc.first + pc.count; ++g) {
      std::string c = fresh();
      line(c + " = arith.andi " + inBounds(b.acc, b.clone, g) + ", " + notFull + " : i1");
      element(std::to_string(g), bufferOffset(b, g, c), c);
    }
  }
}

} // namespace wave::codegen::detail
