// MLIR emission for memory-bound kernels (see mlir_emitter.h for the kernel ABI).
//
// Takes the kernel graph and the distribution's per-access index expressions; emits, per
// kernel, straight-line code: thread/workgroup ids, index arithmetic (IndexExpr -> arith on
// `index`), one clone of every op per expansion index ($i_<dim>), each clone holding a
// `vector<E x T>` of the lane's `elements_per_thread` elements ($g), or a scalar when E = 1.
//
// Accesses: contiguous elements become `llvm.load`/`llvm.store` of vectors of at most 128 bits,
// aligned as far as the distribution's facts prove. A masked access (DimIndex::masked) takes a
// uniform fast path: when the vector's last element is in bounds, the wide access; otherwise one
// guarded scalar access per element (a masked-off load reads 0, a masked-off store does
// nothing). MLIR 19's vector.maskedload is not used: it is scalarized on AMDGPU anyway.
//
// Not supported yet (reported as `codegen-unsupported`): mappings, shared memory, mma,
// reductions, iterate/if, atomics, allocate, permute, self_index, apply_expr, fp8 types.
#include "codegen/mlir_emitter.h"

#include "symbolic/ginac_functions.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

namespace wave {

namespace {

using sym::IndexExpr;

std::string mlirType(ScalarType t) {
  switch (t) {
  case ScalarType::I1: return "i1";
  case ScalarType::I8:
  case ScalarType::U8: return "i8";
  case ScalarType::I16: return "i16";
  case ScalarType::I32:
  case ScalarType::U32: return "i32";
  case ScalarType::I64:
  case ScalarType::Index: return "i64";
  case ScalarType::F16: return "f16";
  case ScalarType::BF16: return "bf16";
  case ScalarType::F32: return "f32";
  case ScalarType::F64: return "f64";
  default: return "";
  }
}

unsigned byteSize(ScalarType t) { return t == ScalarType::I1 ? 1 : bitWidth(t) / 8; }

// One register value after expansion: a layout (per register dim, the index its elements sit
// at) and one SSA value per clone.
struct RegVal {
  ScalarType dtype = ScalarType::F32;
  std::map<std::string, DimIndex> layout;    // by dim name; absent dims: uniform along them
  std::string vecDim;                        // the dim with E > 1, if any
  int64_t elems = 1;                         // E
  std::set<std::string> cloneSyms;           // $i_<dim> symbols the clones vary over
  std::map<std::string, std::string> clones; // clone key -> SSA value
};

using CloneAssign = std::map<std::string, int64_t>; // $i_<dim> -> value

std::string cloneKey(const CloneAssign &a, const std::set<std::string> &syms) {
  std::string key;
  for (const auto &s : syms)
    key += s + "=" + std::to_string(a.at(s)) + ";";
  return key;
}

class KernelEmitter {
public:
  KernelEmitter(const ir::Kernel &k, const Distribution &d, const TargetInfo &t,
                DiagnosticEngine &diags)
      : k_(k), d_(d), target_(t), diags_(diags) {}

  bool emit(std::ostream &os);

private:
  // ---- diagnostics ----
  bool unsupported(const std::string &what, SourceRange loc) {
    if (!failed_)
      diags_.report(DiagId::CodegenUnsupported, loc, {what});
    failed_ = true;
    return false;
  }

  // ---- text helpers ----
  std::string fresh() { return "%v" + std::to_string(next_++); }
  // Each emitted op carries the `.wave` location of the op it implements (loc_), which survives
  // into LLVM IR as line info (lowering.cpp) and into the emulator image. Lines that open or
  // close a region take none.
  void line(const std::string &s) {
    bool bare = loc_.empty() || s.empty() || s.back() == '{' || s.front() == '}';
    body_ << indent_ << s << (bare ? "" : " " + loc_) << "\n";
  }
  std::string locOf(SourceRange r) const {
    if (!r.valid() || !diags_.file())
      return "";
    std::string name = diags_.file()->name(), quoted;
    for (char c : name.substr(name.rfind('/') + 1))
      quoted += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
    return "loc(\"" + quoted + "\":" + std::to_string(r.begin.line) + ":" +
           std::to_string(r.begin.col) + ")";
  }
  std::string constIndex(int64_t v) {
    auto it = indexConsts_.find(v);
    if (it != indexConsts_.end())
      return it->second;
    std::string n = "%c" + (v < 0 ? "m" + std::to_string(-v) : std::to_string(v));
    head_ << "      " << n << " = arith.constant " << v << " : index\n";
    return indexConsts_[v] = n;
  }
  std::string vecType(ScalarType t, int64_t e) {
    return e == 1 ? mlirType(t) : "vector<" + std::to_string(e) + "x" + mlirType(t) + ">";
  }

  // ---- index expressions ----
  std::string lowerIndex(const IndexExpr &e);
  std::string lowerEx(const GiNaC::ex &e);
  std::string binop(const char *op, const std::string &a, const std::string &b) {
    std::string r = fresh();
    line(r + " = arith." + op + " " + a + ", " + b + " : index");
    return r;
  }
  std::string cmpLt(const std::string &a, const std::string &b) {
    std::string r = fresh();
    line(r + " = arith.cmpi slt, " + a + ", " + b + " : index");
    return r;
  }
  std::string andAll(const std::vector<std::string> &conds) {
    std::string acc = conds.front();
    for (size_t i = 1; i < conds.size(); ++i) {
      std::string r = fresh();
      line(r + " = arith.andi " + acc + ", " + conds[i] + " : i1");
      acc = r;
    }
    return acc;
  }

  // ---- ops ----
  bool emitOp(const ir::Op &op);
  bool emitRead(const ir::Op &op);
  bool emitWrite(const ir::Op &op);
  bool emitElementwise(const ir::Op &op);
  const AccessIndex *accessOf(const ir::Op &op) {
    for (const auto &a : d_.accesses)
      if (a.op == &op)
        return &a;
    return nullptr;
  }
  // Clone assignments over `syms` (each $i_<dim> ranges over its expansion count).
  std::vector<CloneAssign> clonesOver(const std::set<std::string> &syms);
  // The value of clone `a` of `v` as a `vecType(dtype, e)`: splats a uniform scalar.
  std::string operandAt(const RegVal &v, const CloneAssign &a, int64_t e);
  // Memory access helpers.
  struct Access {
    const ir::Value *mem;
    std::string base;
    ScalarType dtype;
    std::vector<DimIndex> dims;   // memory dim order
    std::vector<IndexExpr> sizes; // memory dim sizes
    int vecDim = -1;              // index into dims of the dim with E > 1
    int64_t elems = 1;
  };
  bool prepareAccess(const ir::Op &op, const ir::Value *mem, Access &acc);
  IndexExpr linearOffset(const Access &acc, const CloneAssign &a, int64_t g);
  IndexExpr dimIndex(const Access &acc, size_t d, const CloneAssign &a, int64_t g);
  std::string gep(const Access &acc, const IndexExpr &offset);
  unsigned provenAlignment(const Access &acc, const IndexExpr &offset, int64_t maxElems);
  // Condition (i1) that element g (or the whole vector, g = -1 meaning "last element") is in
  // bounds; empty when no dim is masked.
  std::string inBounds(const Access &acc, const CloneAssign &a, int64_t g);
  std::string loadClone(const Access &acc, const CloneAssign &a);
  void storeClone(const Access &acc, const CloneAssign &a, const std::string &value);
  std::string wideLoad(const Access &acc, const CloneAssign &a, bool checkedAligned);
  void wideStore(const Access &acc, const CloneAssign &a, const std::string &value,
                 bool checkedAligned);
  // The element count P whose alignment wide accesses want (a power of two, <= 128 bits).
  int64_t wantedAlignElems(const Access &acc);
  // An i1 that the vector's first element is P-aligned, when the facts cannot prove it;
  // empty when proven or when the access is not a wide one.
  std::string alignmentCheck(const Access &acc, const CloneAssign &a);
  // The fast-path condition (in bounds and aligned), empty when the wide access is always safe.
  std::string fastPath(const Access &acc, const CloneAssign &a, bool &checkedAligned);
  // One element; `guarded`: masked-off elements read 0, through a branch (`branchy`, for a lone
  // scalar access) or a clamped address and a select (inside the vector slow path).
  std::string elementLoad(const Access &acc, const CloneAssign &a, int64_t g, bool guarded,
                          bool branchy = true);

  const ir::Kernel &k_;
  const Distribution &d_;
  const TargetInfo &target_;
  DiagnosticEngine &diags_;
  bool failed_ = false;
  unsigned next_ = 0;
  std::string indent_ = "      ";
  std::string loc_; // loc(...) of the op being emitted
  std::ostringstream head_, body_;
  std::map<int64_t, std::string> indexConsts_;
  std::map<std::string, std::string> symbols_;   // IndexExpr symbol -> index SSA
  std::map<std::string, std::string> exprCache_; // within the straight-line region only
  std::map<const ir::Value *, RegVal> values_;
  std::map<const ir::Value *, std::string> pointers_; // Memory params -> pointer SSA
};

std::string KernelEmitter::lowerIndex(const IndexExpr &e) {
  std::string key = e.str();
  auto it = exprCache_.find(key);
  if (it != exprCache_.end())
    return it->second;
  std::string r = lowerEx(e.ex());
  if (!failed_)
    exprCache_[key] = r;
  return r;
}

std::string KernelEmitter::lowerEx(const GiNaC::ex &e) {
  using namespace GiNaC;
  if (is_a<numeric>(e)) {
    const numeric &n = ex_to<numeric>(e);
    auto v = n.is_integer() ? sym::detail::toInt64(n) : std::nullopt;
    if (!v) {
      unsupported("a non-integer index constant", {});
      return "%error";
    }
    return constIndex(*v);
  }
  if (is_a<symbol>(e)) {
    std::string name = ex_to<symbol>(e).get_name();
    auto it = symbols_.find(name);
    if (it == symbols_.end()) {
      unsupported("index symbol '" + name + "'", {});
      return "%error";
    }
    return it->second;
  }
  if (is_a<add>(e) || is_a<mul>(e)) {
    // Rational coefficients (exact divisions proven by sema): scale by the common denominator,
    // then divide exactly.
    numeric den = 1;
    sym::detail::forEachTerm(
        e, [&](const ex &t) { den = lcm(den, sym::detail::splitTerm(t).coeff.denom()); });
    if (den != 1) {
      std::string scaled = lowerEx((e * den).expand());
      return binop("divsi", scaled, constIndex(*sym::detail::toInt64(den)));
    }
  }
  if (is_a<add>(e) || is_a<mul>(e)) {
    // GiNaC orders operands by hashes seeded with type addresses, which vary from run to run;
    // ordering them by their printed form keeps the emitted text deterministic.
    std::vector<std::pair<std::string, ex>> ops;
    for (size_t i = 0; i < e.nops(); ++i)
      ops.emplace_back(IndexExpr(e.op(i)).str(), e.op(i));
    std::stable_sort(ops.begin(), ops.end(),
                     [](const auto &x, const auto &y) { return x.first < y.first; });
    std::string acc;
    for (const auto &op : ops) {
      std::string t = lowerEx(op.second);
      acc = acc.empty() ? t : binop(is_a<add>(e) ? "addi" : "muli", acc, t);
    }
    return acc;
  }
  if (is_a<power>(e)) {
    auto exp = is_a<numeric>(e.op(1)) && ex_to<numeric>(e.op(1)).is_pos_integer()
                   ? sym::detail::toInt64(ex_to<numeric>(e.op(1)))
                   : std::nullopt;
    if (!exp || *exp > 8) {
      unsupported("index power " + IndexExpr(e).str(), {});
      return "%error";
    }
    std::string b = lowerEx(e.op(0)), acc = b;
    for (int64_t i = 1; i < *exp; ++i)
      acc = binop("muli", acc, b);
    return acc;
  }
  using sym::detail::Fn;
  Fn fn = sym::detail::fnKind(e);
  if (fn == Fn::None || fn == Fn::ExactDiv) {
    unsupported("index expression " + IndexExpr(e).str(), {});
    return "%error";
  }
  std::string a = lowerEx(e.op(0)), b = lowerEx(e.op(1));
  switch (fn) {
  case Fn::FloorDiv: return binop("floordivsi", a, b);
  case Fn::CeilDiv: return binop("ceildivsi", a, b);
  case Fn::Min: return binop("minsi", a, b);
  case Fn::Max: return binop("maxsi", a, b);
  case Fn::Mod: {
    // Non-negative modulo for a positive divisor: a - b * floor(a / b).
    std::string q = binop("floordivsi", a, b);
    return binop("subi", a, binop("muli", q, b));
  }
  default: return "%error";
  }
}

std::vector<CloneAssign> KernelEmitter::clonesOver(const std::set<std::string> &syms) {
  std::vector<CloneAssign> out(1);
  for (const auto &s : syms) {
    int64_t count = 1;
    for (const auto &ex : d_.expansion)
      if ("$i_" + ex.dim.str() == s)
        count = std::max<int64_t>(ex.count, 1);
    std::vector<CloneAssign> next;
    for (const auto &a : out)
      for (int64_t i = 0; i < count; ++i) {
        CloneAssign b = a;
        b[s] = i;
        next.push_back(b);
      }
    out = std::move(next);
  }
  return out;
}

std::string KernelEmitter::operandAt(const RegVal &v, const CloneAssign &a, int64_t e) {
  const std::string &ssa = v.clones.at(cloneKey(a, v.cloneSyms));
  if (v.elems == e)
    return ssa;
  // v.elems == 1: a value uniform along the vector dim.
  std::string r = fresh();
  line(r + " = vector.splat " + ssa + " : " + vecType(v.dtype, e));
  return r;
}

// ---- memory accesses ---------------------------------------------------------------------

bool KernelEmitter::prepareAccess(const ir::Op &op, const ir::Value *mem, Access &acc) {
  if (op.mapping)
    return unsupported("an index mapping on " + std::string(opKindName(op.kind)), op.loc);
  if (mem->type.space != AddressSpace::Global || mem->paramIndex < 0)
    return unsupported("shared memory (or a non-parameter tensor)", op.loc);
  // i1 tensors are excluded: LLVM packs vector<N x i1> into bits in memory.
  if (mlirType(mem->type.dtype).empty() || mem->type.dtype == ScalarType::I1)
    return unsupported(std::string("tensors of element type ") + scalarTypeName(mem->type.dtype),
                       op.loc);
  const AccessIndex *ai = accessOf(op);
  if (!ai || ai->dims.size() != mem->type.shape.size())
    return unsupported("an access without a distributed index", op.loc);
  acc.mem = mem;
  acc.base = pointers_.at(mem);
  acc.dtype = mem->type.dtype;
  for (const auto &memDim : mem->type.shape) {
    const DimIndex *di = nullptr;
    for (const auto &x : ai->dims)
      if (x.dim == memDim)
        di = &x;
    if (!di)
      return unsupported("an access whose index misses dim " + memDim.str(), op.loc);
    acc.dims.push_back(*di);
    acc.sizes.push_back(memDim.size);
  }
  for (size_t i = 0; i < acc.dims.size(); ++i) {
    if (acc.dims[i].elements <= 1)
      continue;
    if (acc.vecDim >= 0)
      return unsupported("several elements per thread along more than one dim", op.loc);
    acc.vecDim = static_cast<int>(i);
    acc.elems = acc.dims[i].elements;
  }
  return true;
}

IndexExpr KernelEmitter::dimIndex(const Access &acc, size_t d, const CloneAssign &a, int64_t g) {
  std::map<std::string, IndexExpr> subs{{"$g", IndexExpr(g)}};
  for (const auto &[s, v] : a)
    subs[s] = IndexExpr(v);
  return acc.dims[d].start.subs(subs);
}

IndexExpr KernelEmitter::linearOffset(const Access &acc, const CloneAssign &a, int64_t g) {
  IndexExpr off = 0, stride = 1;
  for (size_t i = acc.dims.size(); i-- > 0;) {
    off += dimIndex(acc, i, a, g) * stride;
    stride = stride * acc.sizes[i];
  }
  return off;
}

std::string KernelEmitter::gep(const Access &acc, const IndexExpr &offset) {
  std::string idx = lowerIndex(offset);
  std::string i64 = fresh(), p = fresh();
  line(i64 + " = arith.index_cast " + idx + " : index to i64");
  line(p + " = llvm.getelementptr " + acc.base + "[" + i64 + "] : (!llvm.ptr<1>, i64) -> " +
       "!llvm.ptr<1>, " + mlirType(acc.dtype));
  return p;
}

unsigned KernelEmitter::provenAlignment(const Access &acc, const IndexExpr &offset,
                                        int64_t maxElems) {
  int64_t p = 1;
  while (p * 2 <= maxElems && d_.facts.provesExact(offset, IndexExpr(p * 2)))
    p *= 2;
  return static_cast<unsigned>(p * byteSize(acc.dtype));
}

std::string KernelEmitter::inBounds(const Access &acc, const CloneAssign &a, int64_t g) {
  std::vector<std::string> conds;
  for (size_t i = 0; i < acc.dims.size(); ++i) {
    if (!acc.dims[i].masked)
      continue;
    int64_t gi = static_cast<int>(i) == acc.vecDim ? g : 0;
    conds.push_back(cmpLt(lowerIndex(dimIndex(acc, i, a, gi)), lowerIndex(acc.sizes[i])));
  }
  return conds.empty() ? "" : andAll(conds);
}

std::string KernelEmitter::elementLoad(const Access &acc, const CloneAssign &a, int64_t g,
                                       bool guarded, bool branchy) {
  std::string ty = mlirType(acc.dtype);
  std::string cond = guarded ? inBounds(acc, a, g) : "";
  auto load = [&]() {
    std::string p = gep(acc, linearOffset(acc, a, g)), v = fresh();
    line(v + " = llvm.load " + p + " {alignment = " + std::to_string(byteSize(acc.dtype)) +
         " : i64} : !llvm.ptr<1> -> " + ty);
    return v;
  };
  if (cond.empty())
    return load();
  if (!branchy) {
    // Branch-free: a masked-off lane loads element 0 (valid: a launched grid is never empty)
    // and the select replaces the value with 0.
    std::string safe = fresh(), p = fresh(), i64 = fresh(), v = fresh(), z = fresh(), r = fresh();
    line(safe + " = arith.select " + cond + ", " + lowerIndex(linearOffset(acc, a, g)) + ", " +
         constIndex(0) + " : index");
    line(i64 + " = arith.index_cast " + safe + " : index to i64");
    line(p + " = llvm.getelementptr " + acc.base + "[" + i64 + "] : (!llvm.ptr<1>, i64) -> " +
         "!llvm.ptr<1>, " + ty);
    line(v + " = llvm.load " + p + " {alignment = " + std::to_string(byteSize(acc.dtype)) +
         " : i64} : !llvm.ptr<1> -> " + ty);
    line(z + " = arith.constant " + std::string(isFloat(acc.dtype) ? "0.0" : "0") + " : " + ty);
    line(r + " = arith.select " + cond + ", " + v + ", " + z + " : " + ty);
    return r;
  }
  std::string r = fresh();
  line(r + " = scf.if " + cond + " -> (" + ty + ") {");
  std::string saved = indent_;
  indent_ += "  ";
  auto cache = exprCache_;
  line("scf.yield " + load() + " : " + ty);
  exprCache_ = cache;
  indent_ = saved;
  line("} else {");
  std::string z = fresh();
  indent_ += "  ";
  line(z + " = arith.constant " + std::string(isFloat(acc.dtype) ? "0.0" : "0") + " : " + ty);
  line("scf.yield " + z + " : " + ty);
  indent_ = saved;
  line("}");
  return r;
}

// Contiguous: pieces of at most 128 bits; otherwise one element at a time.
int64_t KernelEmitter::wantedAlignElems(const Access &acc) {
  if (acc.elems <= 1 || !acc.dims[acc.vecDim].contiguous)
    return 1;
  int64_t limit = std::min<int64_t>(acc.elems, std::max<int64_t>(1, 16 / byteSize(acc.dtype)));
  int64_t p = 1;
  while (p * 2 <= limit)
    p *= 2;
  return p;
}

std::string KernelEmitter::alignmentCheck(const Access &acc, const CloneAssign &a) {
  int64_t p = wantedAlignElems(acc);
  if (p <= 1)
    return "";
  IndexExpr off = linearOffset(acc, a, 0);
  if (provenAlignment(acc, off, p) >= p * byteSize(acc.dtype))
    return "";
  std::string low = fresh(), r = fresh();
  line(low + " = arith.andi " + lowerIndex(off) + ", " + constIndex(p - 1) + " : index");
  line(r + " = arith.cmpi eq, " + low + ", " + constIndex(0) + " : index");
  return r;
}

std::string KernelEmitter::fastPath(const Access &acc, const CloneAssign &a, bool &checkedAligned) {
  std::vector<std::string> conds;
  // Contiguous elements are in bounds when the last one is; others are checked one by one.
  const bool contiguous = acc.vecDim < 0 || acc.dims[acc.vecDim].contiguous;
  for (int64_t g = contiguous ? acc.elems - 1 : 0; g < acc.elems; ++g) {
    std::string inb = inBounds(acc, a, g);
    if (!inb.empty())
      conds.push_back(inb);
  }
  std::string al = alignmentCheck(acc, a);
  checkedAligned = !al.empty();
  if (checkedAligned)
    conds.push_back(al);
  return conds.empty() ? "" : andAll(conds);
}

std::string KernelEmitter::wideLoad(const Access &acc, const CloneAssign &a, bool checkedAligned) {
  const int64_t e = acc.elems;
  const std::string vty = vecType(acc.dtype, e);
  if (e == 1)
    return elementLoad(acc, a, 0, false);
  const bool contiguous = acc.dims[acc.vecDim].contiguous;
  const int64_t chunk = contiguous ? std::max<int64_t>(1, 16 / byteSize(acc.dtype)) : 1;
  std::string vec = fresh();
  line(vec + " = arith.constant dense<" + std::string(isFloat(acc.dtype) ? "0.0" : "0") +
       "> : " + vty);
  for (int64_t k0 = 0; k0 < e; k0 += chunk) {
    int64_t n = std::min(chunk, e - k0);
    IndexExpr off = linearOffset(acc, a, k0);
    if (n == 1) {
      std::string s = elementLoad(acc, a, k0, false), r = fresh();
      line(r + " = vector.insert " + s + ", " + vec + " [" + std::to_string(k0) +
           "] : " + mlirType(acc.dtype) + " into " + vty);
      vec = r;
      continue;
    }
    std::string p = gep(acc, off), piece = fresh();
    std::string pty = vecType(acc.dtype, n);
    unsigned align =
        checkedAligned ? wantedAlignElems(acc) * byteSize(acc.dtype) : provenAlignment(acc, off, n);
    line(piece + " = llvm.load " + p + " {alignment = " + std::to_string(align) +
         " : i64} : !llvm.ptr<1> -> " + pty);
    if (n == e)
      return piece;
    for (int64_t j = 0; j < n; ++j) {
      std::string x = fresh(), r = fresh();
      line(x + " = vector.extract " + piece + "[" + std::to_string(j) +
           "] : " + mlirType(acc.dtype) + " from " + pty);
      line(r + " = vector.insert " + x + ", " + vec + " [" + std::to_string(k0 + j) +
           "] : " + mlirType(acc.dtype) + " into " + vty);
      vec = r;
    }
  }
  return vec;
}

std::string KernelEmitter::loadClone(const Access &acc, const CloneAssign &a) {
  const int64_t e = acc.elems;
  bool checkedAligned = false;
  std::string fast = fastPath(acc, a, checkedAligned);
  if (fast.empty())
    return wideLoad(acc, a, false);
  if (e == 1)
    return elementLoad(acc, a, 0, true);
  const std::string vty = vecType(acc.dtype, e);
  std::string r = fresh(), saved = indent_;
  auto cache = exprCache_;
  line(r + " = scf.if " + fast + " -> (" + vty + ") {");
  indent_ += "  ";
  line("scf.yield " + wideLoad(acc, a, checkedAligned) + " : " + vty);
  indent_ = saved;
  exprCache_ = cache;
  line("} else {");
  indent_ += "  ";
  std::string vec = fresh();
  line(vec + " = arith.constant dense<" + std::string(isFloat(acc.dtype) ? "0.0" : "0") +
       "> : " + vty);
  for (int64_t g = 0; g < e; ++g) {
    std::string s = elementLoad(acc, a, g, true, /*branchy=*/false), n = fresh();
    line(n + " = vector.insert " + s + ", " + vec + " [" + std::to_string(g) +
         "] : " + mlirType(acc.dtype) + " into " + vty);
    vec = n;
  }
  line("scf.yield " + vec + " : " + vty);
  indent_ = saved;
  exprCache_ = cache;
  line("}");
  return r;
}

void KernelEmitter::wideStore(const Access &acc, const CloneAssign &a, const std::string &value,
                              bool checkedAligned) {
  const int64_t e = acc.elems;
  const std::string ty = mlirType(acc.dtype), vty = vecType(acc.dtype, e);
  auto storeElement = [&](int64_t g, const std::string &scalar) {
    std::string p = gep(acc, linearOffset(acc, a, g));
    line("llvm.store " + scalar + ", " + p + " {alignment = " +
         std::to_string(byteSize(acc.dtype)) + " : i64} : " + ty + ", !llvm.ptr<1>");
  };
  auto extract = [&](int64_t g) {
    std::string x = fresh();
    line(x + " = vector.extract " + value + "[" + std::to_string(g) + "] : " + ty + " from " + vty);
    return x;
  };
  if (e == 1) {
    storeElement(0, value);
    return;
  }
  const bool contiguous = acc.dims[acc.vecDim].contiguous;
  const int64_t chunk = contiguous ? std::max<int64_t>(1, 16 / byteSize(acc.dtype)) : 1;
  for (int64_t k0 = 0; k0 < e; k0 += chunk) {
    int64_t n = std::min(chunk, e - k0);
    if (n == 1) {
      storeElement(k0, extract(k0));
      continue;
    }
    std::string pty = vecType(acc.dtype, n), piece = value;
    if (n != e) {
      piece = fresh();
      std::string mask;
      for (int64_t j = 0; j < n; ++j)
        mask += (j ? ", " : "") + std::to_string(k0 + j);
      line(piece + " = vector.shuffle " + value + ", " + value + " [" + mask + "] : " + vty + ", " +
           vty);
    }
    IndexExpr off = linearOffset(acc, a, k0);
    std::string p = gep(acc, off);
    unsigned align =
        checkedAligned ? wantedAlignElems(acc) * byteSize(acc.dtype) : provenAlignment(acc, off, n);
    line("llvm.store " + piece + ", " + p + " {alignment = " + std::to_string(align) +
         " : i64} : " + pty + ", !llvm.ptr<1>");
  }
}

void KernelEmitter::storeClone(const Access &acc, const CloneAssign &a, const std::string &value) {
  const int64_t e = acc.elems;
  bool checkedAligned = false;
  std::string fast = fastPath(acc, a, checkedAligned);
  if (fast.empty()) {
    wideStore(acc, a, value, false);
    return;
  }
  std::string saved = indent_;
  auto cache = exprCache_;
  line("scf.if " + fast + " {");
  indent_ += "  ";
  wideStore(acc, a, value, checkedAligned);
  indent_ = saved;
  exprCache_ = cache;
  if (e > 1) {
    line("} else {");
    indent_ += "  ";
    const std::string ty = mlirType(acc.dtype), vty = vecType(acc.dtype, e);
    for (int64_t g = 0; g < e; ++g) {
      std::string cond = inBounds(acc, a, g);
      if (cond.empty()) { // unaligned but in bounds: plain element stores
        std::string x = fresh();
        line(x + " = vector.extract " + value + "[" + std::to_string(g) + "] : " + ty + " from " +
             vty);
        std::string p = gep(acc, linearOffset(acc, a, g));
        line("llvm.store " + x + ", " + p + " {alignment = " + std::to_string(byteSize(acc.dtype)) +
             " : i64} : " + ty + ", !llvm.ptr<1>");
        continue;
      }
      line("scf.if " + cond + " {");
      std::string inner = indent_;
      auto innerCache = exprCache_;
      indent_ += "  ";
      std::string x = fresh();
      line(x + " = vector.extract " + value + "[" + std::to_string(g) + "] : " + ty + " from " +
           vty);
      std::string p = gep(acc, linearOffset(acc, a, g));
      line("llvm.store " + x + ", " + p + " {alignment = " + std::to_string(byteSize(acc.dtype)) +
           " : i64} : " + ty + ", !llvm.ptr<1>");
      indent_ = inner;
      exprCache_ = innerCache;
      line("}");
    }
    indent_ = saved;
    exprCache_ = cache;
  }
  line("}");
}

bool KernelEmitter::emitRead(const ir::Op &op) {
  Access acc;
  if (!prepareAccess(op, op.operands[0], acc))
    return false;
  RegVal v;
  v.dtype = acc.dtype;
  v.elems = acc.elems;
  for (size_t i = 0; i < acc.dims.size(); ++i) {
    v.layout[acc.dims[i].dim.str()] = acc.dims[i];
    for (const auto &s : acc.dims[i].start.freeSymbols())
      if (s.rfind("$i_", 0) == 0)
        v.cloneSyms.insert(s);
  }
  if (acc.vecDim >= 0)
    v.vecDim = acc.dims[acc.vecDim].dim.str();
  for (const auto &a : clonesOver(v.cloneSyms))
    v.clones[cloneKey(a, v.cloneSyms)] = loadClone(acc, a);
  values_[op.results[0]] = std::move(v);
  return true;
}

// The value's layout must be the write's on every dim it has (no re-layout through LDS yet).
bool KernelEmitter::emitWrite(const ir::Op &op) {
  Access acc;
  if (!prepareAccess(op, op.operands[1], acc))
    return false;
  const RegVal &v = values_.at(op.operands[0]);
  if (v.dtype != acc.dtype)
    return unsupported("a write of a different element type", op.loc);
  std::set<std::string> syms = v.cloneSyms;
  for (const auto &di : acc.dims) {
    for (const auto &s : di.start.freeSymbols())
      if (s.rfind("$i_", 0) == 0)
        syms.insert(s);
    auto it = v.layout.find(di.dim.str());
    if (it == v.layout.end())
      continue;
    if (!it->second.start.equals(di.start) || it->second.elements != di.elements)
      return unsupported("a write whose thread layout on " + di.dim.str() + " (" + di.start.str() +
                             ") differs from its value's (" + it->second.start.str() + ")",
                         op.loc);
  }
  if (v.elems != 1 && v.elems != acc.elems)
    return unsupported("a write whose elements per thread differ from its value's", op.loc);
  for (const auto &a : clonesOver(syms))
    storeClone(acc, a, operandAt(v, a, acc.elems));
  return true;
}

bool KernelEmitter::emitElementwise(const ir::Op &op) {
  const ir::Value *res = op.results[0];
  RegVal out;
  out.dtype = res->type.dtype;
  if (mlirType(out.dtype).empty())
    return unsupported(std::string("element type ") + scalarTypeName(out.dtype), op.loc);
  std::vector<const RegVal *> ins;
  for (const ir::Value *o : op.operands) {
    const RegVal &v = values_.at(o);
    if (mlirType(v.dtype).empty())
      return unsupported(std::string("element type ") + scalarTypeName(v.dtype), op.loc);
    for (const auto &[dim, di] : v.layout) {
      auto [it, inserted] = out.layout.emplace(dim, di);
      if (!inserted && (!it->second.start.equals(di.start) || it->second.elements != di.elements))
        return unsupported("operands with different thread layouts on " + dim, op.loc);
    }
    out.cloneSyms.insert(v.cloneSyms.begin(), v.cloneSyms.end());
    if (v.elems > 1) {
      if (out.elems > 1 && (out.elems != v.elems || out.vecDim != v.vecDim))
        return unsupported("operands with their elements per thread along different dims",
                           op.loc);
      out.elems = v.elems;
      out.vecDim = v.vecDim;
    }
    ins.push_back(&v);
  }
  const int64_t e = out.elems;
  const ScalarType inT = ins.empty() ? out.dtype : ins.back()->dtype;
  const std::string rty = vecType(out.dtype, e), ity = vecType(inT, e);
  const bool fl = isFloat(inT), sg = isSigned(inT);
  for (const auto &a : clonesOver(out.cloneSyms)) {
    std::vector<std::string> x;
    for (const RegVal *v : ins)
      x.push_back(operandAt(*v, a, e));
    std::string r = fresh();
    auto un = [&](const std::string &o) { line(r + " = " + o + " " + x[0] + " : " + ity); };
    auto bin = [&](const std::string &o) {
      line(r + " = " + o + " " + x[0] + ", " + x[1] + " : " + ity);
    };
    auto splatConst = [&](const std::string &lit, const std::string &ty) {
      std::string c = fresh();
      line(c + " = arith.constant " + (e == 1 ? lit : "dense<" + lit + ">") + " : " + ty);
      return c;
    };
    // LLVM intrinsics through llvm.call_intrinsic: the GPU-to-ROCDL/NVVM conversions mark the
    // llvm.intr.exp2/log2/sin/... ops illegal (they turn them into ocml/libdevice calls, which
    // we do not link), while the AMDGPU/NVPTX back ends lower these intrinsics themselves.
    const std::string mangled = (e == 1 ? "" : "v" + std::to_string(e)) + mlirType(inT);
    auto callIntr = [&](const std::string &res, const std::string &name, const std::string &arg) {
      static const std::map<std::string, std::string> nvApprox = {{"exp2", "ex2.approx.f"},
                                                                  {"log2", "lg2.approx.f"},
                                                                  {"sin", "sin.approx.f"},
                                                                  {"cos", "cos.approx.f"}};
      auto nv = nvApprox.find(name);
      if (target_.vendor != Vendor::NVIDIA || nv == nvApprox.end()) {
        line(res + " = llvm.call_intrinsic \"llvm." + name + "." + mangled + "\"(" + arg + ") : (" +
             ity + ") -> " + ity);
        return;
      }
      // NVPTX has no lowering for llvm.exp2/log2/sin/cos: the PTX approximations, in f32,
      // one element at a time.
      const std::string ety = mlirType(inT);
      const bool f32 = inT == ScalarType::F32;
      std::string vec;
      if (e > 1) {
        vec = fresh();
        line(vec + " = arith.constant dense<0.0> : " + ity);
      }
      for (int64_t k = 0; k < e; ++k) {
        const bool last = k + 1 == e;
        std::string x = arg;
        if (e > 1) {
          x = fresh();
          line(x + " = vector.extract " + arg + "[" + std::to_string(k) + "] : " + ety + " from " +
               ity);
        }
        if (!f32) {
          std::string w = fresh();
          line(w + " = arith.extf " + x + " : " + ety + " to f32");
          x = w;
        }
        std::string y = e == 1 && f32 ? res : fresh();
        line(y + " = llvm.call_intrinsic \"llvm.nvvm." + nv->second + "\"(" + x +
             ") : (f32) -> f32");
        if (!f32) {
          std::string n = e == 1 ? res : fresh();
          line(n + " = arith.truncf " + y + " : f32 to " + ety);
          y = n;
        }
        if (e > 1) {
          std::string n = last ? res : fresh();
          line(n + " = vector.insert " + y + ", " + vec + " [" + std::to_string(k) + "] : " + ety +
               " into " + ity);
          vec = n;
        }
      }
    };
    auto intr = [&](const std::string &name, const std::vector<std::string> &args) {
      callIntr(r, name, args[0]);
    };
    switch (op.kind) {
    case ir::OpKind::Unary:
      if (op.unary == ir::UnaryKind::Neg) {
        if (fl)
          un("arith.negf");
        else
          line(r + " = arith.subi " + splatConst("0", ity) + ", " + x[0] + " : " + ity);
      } else {
        line(r + " = arith.xori " + x[0] + ", " + splatConst("-1", ity) + " : " + ity);
      }
      break;
    case ir::OpKind::Binary: {
      using B = ir::BinaryKind;
      const char *pf = nullptr, *pi = nullptr;
      switch (op.binary) {
      case B::Add:
        pf = "arith.addf";
        pi = "arith.addi";
        break;
      case B::Sub:
        pf = "arith.subf";
        pi = "arith.subi";
        break;
      case B::Mul:
        pf = "arith.mulf";
        pi = "arith.muli";
        break;
      case B::Div:
        pf = "arith.divf";
        pi = sg ? "arith.divsi" : "arith.divui";
        break;
      case B::Mod:
        pf = "arith.remf";
        pi = sg ? "arith.remsi" : "arith.remui";
        break;
      case B::FloorDiv: pi = sg ? "arith.floordivsi" : "arith.divui"; break;
      case B::And: pi = "arith.andi"; break;
      case B::Or: pi = "arith.ori"; break;
      case B::Xor: pi = "arith.xori"; break;
      default: break;
      }
      const char *cf = nullptr, *ci = nullptr;
      switch (op.binary) {
      case B::Eq:
        cf = "oeq";
        ci = "eq";
        break;
      case B::Ne:
        cf = "une";
        ci = "ne";
        break;
      case B::Lt:
        cf = "olt";
        ci = sg ? "slt" : "ult";
        break;
      case B::Le:
        cf = "ole";
        ci = sg ? "sle" : "ule";
        break;
      case B::Gt:
        cf = "ogt";
        ci = sg ? "sgt" : "ugt";
        break;
      case B::Ge:
        cf = "oge";
        ci = sg ? "sge" : "uge";
        break;
      default: break;
      }
      if (cf) {
        line(r + " = arith." + (fl ? std::string("cmpf ") + cf : std::string("cmpi ") + ci) + ", " +
             x[0] + ", " + x[1] + " : " + ity);
      } else if (op.binary == B::FloorDiv && fl) {
        std::string q = fresh();
        line(q + " = arith.divf " + x[0] + ", " + x[1] + " : " + ity);
        callIntr(r, "floor", q);
      } else if (op.binary == B::Mod && !fl && sg) {
        // Python modulo (the sign of the divisor), as the language's `%`.
        std::string q = fresh(), m = fresh();
        line(q + " = arith.floordivsi " + x[0] + ", " + x[1] + " : " + ity);
        line(m + " = arith.muli " + q + ", " + x[1] + " : " + ity);
        line(r + " = arith.subi " + x[0] + ", " + m + " : " + ity);
      } else if (fl ? pf != nullptr : pi != nullptr) {
        bin(fl ? pf : pi);
      } else {
        return unsupported(std::string("binary ") + ir::binaryKindName(op.binary) + " on " +
                               scalarTypeName(inT),
                           op.loc);
      }
      break;
    }
    case ir::OpKind::Math: {
      using M = ir::MathKind;
      if (!fl && op.math != M::Abs && op.math != M::Maximum && op.math != M::Minimum)
        return unsupported(std::string("math ") + ir::mathKindName(op.math) + " on integers",
                           op.loc);
      auto one = [&]() { return splatConst("1.0", ity); };
      auto scaled = [&](const char *name, const char *scale, bool before) {
        std::string c = splatConst(scale, ity), t = fresh();
        if (before) { // name(x * scale)
          line(t + " = arith.mulf " + x[0] + ", " + c + " : " + ity);
          callIntr(r, name, t);
        } else { // name(x) * scale
          callIntr(t, name, x[0]);
          line(r + " = arith.mulf " + t + ", " + c + " : " + ity);
        }
      };
      switch (op.math) {
      case M::Exp: scaled("exp2", "1.4426950408889634", true); break;
      case M::Exp2: intr("exp2", {x[0]}); break;
      case M::Log: scaled("log2", "0.69314718055994531", false); break;
      case M::Log2: intr("log2", {x[0]}); break;
      case M::Sqrt: intr("sqrt", {x[0]}); break;
      case M::Rsqrt: {
        std::string s = fresh();
        callIntr(s, "sqrt", x[0]);
        line(r + " = arith.divf " + one() + ", " + s + " : " + ity);
        break;
      }
      case M::Reciprocal: line(r + " = arith.divf " + one() + ", " + x[0] + " : " + ity); break;
      case M::Abs:
        if (fl)
          intr("fabs", {x[0]});
        else {
          std::string n = fresh(), c = fresh(), z = splatConst("0", ity);
          line(n + " = arith.subi " + z + ", " + x[0] + " : " + ity);
          line(c + " = arith.cmpi slt, " + x[0] + ", " + z + " : " + ity);
          line(r + " = arith.select " + c + ", " + n + ", " + x[0] + " : " +
               vecType(ScalarType::I1, e) + ", " + ity);
        }
        break;
      case M::Tanh: {
        // tanh(x) = 1 - 2 / (exp(2x) + 1): exact at both tails, no libm call.
        std::string c = splatConst("2.8853900817779268", ity), t = fresh(), ex = fresh(),
                    den = fresh(), q = fresh(), two = splatConst("2.0", ity), o = one();
        line(t + " = arith.mulf " + x[0] + ", " + c + " : " + ity);
        callIntr(ex, "exp2", t);
        line(den + " = arith.addf " + ex + ", " + o + " : " + ity);
        line(q + " = arith.divf " + two + ", " + den + " : " + ity);
        line(r + " = arith.subf " + o + ", " + q + " : " + ity);
        break;
      }
      case M::Sin: intr("sin", {x[0]}); break;
      case M::Cos: intr("cos", {x[0]}); break;
      case M::Maximum: bin(fl ? "arith.maximumf" : sg ? "arith.maxsi" : "arith.maxui"); break;
      case M::Minimum: bin(fl ? "arith.minimumf" : sg ? "arith.minsi" : "arith.minui"); break;
      }
      break;
    }
    case ir::OpKind::Select:
      line(r + " = arith.select " + x[0] + ", " + x[1] + ", " + x[2] + " : " +
           vecType(ScalarType::I1, e) + ", " + rty);
      break;
    case ir::OpKind::Cast: {
      const ScalarType to = out.dtype;
      const unsigned wi = bitWidth(inT), wo = bitWidth(to);
      std::string opName;
      if (mlirType(inT) == mlirType(to)) {
        out.clones[cloneKey(a, out.cloneSyms)] = x[0];
        continue;
      }
      if (fl && isFloat(to))
        opName = wo > wi ? "arith.extf" : "arith.truncf";
      else if (fl)
        opName = isSigned(to) ? "arith.fptosi" : "arith.fptoui";
      else if (isFloat(to))
        opName = sg ? "arith.sitofp" : "arith.uitofp";
      else if (wo > wi)
        opName = sg && inT != ScalarType::I1 ? "arith.extsi" : "arith.extui";
      else
        opName = "arith.trunci";
      line(r + " = " + opName + " " + x[0] + " : " + ity + " to " + rty);
      break;
    }
    default: return unsupported(opKindName(op.kind), op.loc);
    }
    out.clones[cloneKey(a, out.cloneSyms)] = r;
  }
  values_[res] = std::move(out);
  return true;
}

std::string floatLiteral(double v, ScalarType t) {
  if (std::isfinite(v)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos)
      s += ".0";
    return s;
  }
  // Non-finite values as bit patterns.
  const bool neg = std::signbit(v), nan = std::isnan(v);
  char buf[32];
  switch (t) {
  case ScalarType::F16:
    std::snprintf(buf, sizeof buf, "0x%04X", nan ? 0x7E00 : neg ? 0xFC00 : 0x7C00);
    break;
  case ScalarType::BF16:
    std::snprintf(buf, sizeof buf, "0x%04X", nan ? 0x7FC0 : neg ? 0xFF80 : 0x7F80);
    break;
  case ScalarType::F64:
    std::snprintf(buf, sizeof buf, "0x%016llX",
                  nan   ? 0x7FF8000000000000ULL
                  : neg ? 0xFFF0000000000000ULL
                        : 0x7FF0000000000000ULL);
    break;
  default:
    std::snprintf(buf, sizeof buf, "0x%08X", nan ? 0x7FC00000u : neg ? 0xFF800000u : 0x7F800000u);
    break;
  }
  return buf;
}

bool KernelEmitter::emitOp(const ir::Op &op) {
  std::string outerLoc = locOf(op.loc);
  std::swap(loc_, outerLoc);
  struct Restore {
    std::string &loc, saved;
    ~Restore() { loc = saved; }
  } restore{loc_, outerLoc};
  switch (op.kind) {
  case ir::OpKind::Read: return emitRead(op);
  case ir::OpKind::Write: return emitWrite(op);
  case ir::OpKind::Constant: {
    RegVal v;
    v.dtype = op.results[0]->type.dtype;
    std::string ty = mlirType(v.dtype);
    if (ty.empty())
      return unsupported(std::string("element type ") + scalarTypeName(v.dtype), op.loc);
    std::string lit = isFloat(v.dtype)            ? floatLiteral(op.fvalue, v.dtype)
                      : v.dtype == ScalarType::I1 ? (op.ivalue ? "true" : "false")
                                                  : std::to_string(op.ivalue);
    std::string r = fresh();
    line(r + " = arith.constant " + lit + " : " + ty);
    v.clones[""] = r;
    values_[op.results[0]] = std::move(v);
    return true;
  }
  case ir::OpKind::Broadcast:
    // Values are uniform along dims they lack, so a broadcast is the value itself.
    values_[op.results[0]] = values_.at(op.operands[0]);
    values_[op.results[0]].dtype = op.results[0]->type.dtype;
    return true;
  case ir::OpKind::Unary:
  case ir::OpKind::Binary:
  case ir::OpKind::Math:
  case ir::OpKind::Select:
  case ir::OpKind::Cast: return emitElementwise(op);
  case ir::OpKind::Mma: return unsupported("mma", op.loc);
  case ir::OpKind::Reduce: return unsupported("reductions", op.loc);
  case ir::OpKind::Iterate: return unsupported("iterate", op.loc);
  case ir::OpKind::If: return unsupported("if", op.loc);
  case ir::OpKind::AtomicAdd:
  case ir::OpKind::AtomicMin: return unsupported("atomics", op.loc);
  case ir::OpKind::Allocate: return unsupported("allocate (shared memory)", op.loc);
  default: return unsupported(opKindName(op.kind), op.loc);
  }
}

bool KernelEmitter::emit(std::ostream &os) {
  // Signature: memory pointers and scalars in parameter order, then dynamic symbols as i64.
  std::string sig;
  unsigned argNo = 0;
  auto arg = [&](const std::string &ty) {
    std::string n = "%arg" + std::to_string(argNo++);
    sig += (sig.empty() ? "" : ", ") + n + ": " + ty;
    return n;
  };
  for (const auto &p : k_.params) {
    const ir::Value *v = p.value;
    if (v->type.isMemory()) {
      if (v->type.space != AddressSpace::Global)
        return unsupported("a shared-memory parameter", p.loc);
      pointers_[v] = arg("!llvm.ptr<1>");
    } else if (v->type.isScalar()) {
      std::string ty = mlirType(v->type.dtype);
      if (ty.empty())
        return unsupported(std::string("a parameter of type ") + scalarTypeName(v->type.dtype),
                           p.loc);
      RegVal rv;
      rv.dtype = v->type.dtype;
      rv.clones[""] = arg(ty);
      values_[v] = std::move(rv);
    } else {
      return unsupported("a register parameter", p.loc);
    }
  }
  for (const auto &s : d_.dynamicSymbols) {
    std::string a = arg("i64"), n = "%dyn_" + std::to_string(symbols_.size());
    head_ << "      " << n << " = arith.index_cast " << a << " : i64 to index\n";
    symbols_[s] = n;
  }
  const char *xyz[] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i) {
    head_ << "      %tid_" << xyz[i] << " = gpu.thread_id " << xyz[i] << "\n";
    head_ << "      %wg_" << xyz[i] << " = gpu.block_id " << xyz[i] << "\n";
    symbols_["$T" + std::to_string(i)] = std::string("%tid_") + xyz[i];
    symbols_["$WG" + std::to_string(i)] = std::string("%wg_") + xyz[i];
  }

  for (const auto &op : k_.body.ops)
    if (!emitOp(*op))
      return false;
  if (failed_)
    return false;

  std::string blk = std::to_string(d_.block[0]) + ", " + std::to_string(d_.block[1]) + ", " +
                    std::to_string(d_.block[2]);
  os << "    gpu.func @" << k_.name << "(" << sig << ") kernel attributes {known_block_size = "
     << "array<i32: " << blk << ">";
  if (target_.vendor == Vendor::NVIDIA)
    os << ", nvvm.maxntid = array<i32: " << blk << ">";
  os << "} {\n" << head_.str() << body_.str() << "      gpu.return\n    } " << locOf(k_.loc)
     << "\n";
  return true;
}

} // namespace

std::optional<std::string> emitMlir(const std::vector<CodegenKernel> &kernels,
                                    const TargetInfo &target, DiagnosticEngine &diags) {
  std::ostringstream os;
  os << "module attributes {gpu.container_module} {\n  gpu.module @wave_kernels {\n";
  bool ok = true;
  for (const auto &ck : kernels) {
    KernelEmitter e(*ck.kernel, *ck.dist, target, diags);
    if (!e.emit(os)) {
      diags.note(DiagId::NoteInKernel, ck.kernel->loc, {ck.kernel->name});
      ok = false;
    }
  }
  os << "  }\n}\n";
  if (!ok)
    return std::nullopt;
  return os.str();
}

} // namespace wave
