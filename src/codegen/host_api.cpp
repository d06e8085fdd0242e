#include "codegen/host_api.h"

#include "symbolic/lowering.h"

#include <fmt/format.h>
#include <functional>
#include <ginac/ginac.h>

namespace wave {

namespace {

// C for index expressions: int64_t arithmetic with the stub's floor/ceil/mod helpers.
class CLowering : public sym::IndexLowering<std::string> {
public:
  std::string constant(int64_t v) override {
    return v < 0 ? fmt::format("(INT64_C({}))", v) : fmt::format("INT64_C({})", v);
  }
  std::optional<std::string> symbol(const std::string &name) override {
    if (name.empty() || name[0] == '$')
      return std::nullopt; // thread ids etc. have no meaning on the host
    return "(int64_t)" + name;
  }
  std::string add(std::string a, std::string b) override { return "(" + a + " + " + b + ")"; }
  std::string mul(std::string a, std::string b) override { return "(" + a + " * " + b + ")"; }
  std::string floorDiv(std::string a, std::string b) override {
    return "wave_floordiv_(" + a + ", " + b + ")";
  }
  std::string ceilDiv(std::string a, std::string b) override {
    return "wave_ceildiv_(" + a + ", " + b + ")";
  }
  std::string mod(std::string a, std::string b) override {
    return "wave_mod_(" + a + ", " + b + ")";
  }
  std::string min(std::string a, std::string b) override { return "wave_min_(" + a + ", " + b + ")"; }
  std::string max(std::string a, std::string b) override { return "wave_max_(" + a + ", " + b + ")"; }
  std::string exactDiv(std::string a, std::string b) override { return "(" + a + " / " + b + ")"; }
};

std::optional<std::string> cPred(const sym::Pred &p) {
  switch (p.kind) {
  case sym::Pred::Const:
    return std::string(p.value ? "1" : "0");
  case sym::Pred::Cmp: {
    auto l = cExpr(p.lhs), r = cExpr(p.rhs);
    if (!l || !r)
      return std::nullopt;
    static const char *ops[] = {"==", "!=", "<", "<=", ">", ">="};
    return "(" + *l + " " + ops[p.op] + " " + *r + ")";
  }
  case sym::Pred::Not: {
    auto x = cPred(p.children[0]);
    return x ? std::optional<std::string>("(!" + *x + ")") : std::nullopt;
  }
  case sym::Pred::And:
  case sym::Pred::Or: {
    std::string out;
    for (const auto &c : p.children) {
      auto x = cPred(c);
      if (!x)
        return std::nullopt;
      out += (out.empty() ? "" : (p.kind == sym::Pred::And ? " && " : " || ")) + *x;
    }
    return "(" + out + ")";
  }
  }
  return std::nullopt;
}

const char *cScalarType(ScalarType t) {
  switch (t) {
  case ScalarType::I1:
    return "bool";
  case ScalarType::I8:
    return "int8_t";
  case ScalarType::I16:
    return "int16_t";
  case ScalarType::I32:
    return "int32_t";
  case ScalarType::I64:
  case ScalarType::Index:
    return "int64_t";
  case ScalarType::U8:
    return "uint8_t";
  case ScalarType::U32:
    return "uint32_t";
  case ScalarType::F16:
  case ScalarType::BF16:
  case ScalarType::F32:
    return "float"; // 16-bit floats are passed as float and converted by the stub
  case ScalarType::F64:
    return "double";
  default:
    return "uint8_t"; // f8 scalars: the raw byte
  }
}

// DLPack type codes: int 0, uint 1, float 2, bfloat 4, bool 6.
int dlpackCode(ScalarType t) {
  if (t == ScalarType::I1)
    return 6;
  if (t == ScalarType::BF16)
    return 4;
  if (isFloat(t))
    return 2;
  return isSigned(t) ? 0 : 1;
}

// The parameters of NAME_launch. With `kernel` (the header), each pointer says in a comment the
// element type and shape it points to.
std::string paramList(const KernelAbi &abi, bool withDims, const ir::Kernel *kernel = nullptr) {
  std::string out = "wave_stream_t stream";
  for (const auto &a : abi.args) {
    switch (a.kind) {
    case AbiArg::Pointer: {
      std::string note;
      if (kernel)
        for (const auto &p : kernel->params)
          if (p.name == a.name) {
            std::string shape;
            for (const auto &dim : p.value->type.shape)
              shape += (shape.empty() ? "" : ", ") + dim.str();
            note = fmt::format(" /* {}[{}] */", scalarTypeName(p.value->type.dtype), shape);
          }
      out += fmt::format(", {}void *{}{}", a.isOutput ? "" : "const ", a.name, note);
      break;
    }
    case AbiArg::Scalar:
      out += fmt::format(", {} {}", cScalarType(a.type), a.name);
      break;
    case AbiArg::DynamicDim:
      if (withDims)
        out += ", int64_t " + a.name;
      break;
    }
  }
  return out;
}

std::string tensorParamList(const KernelAbi &abi) {
  std::string out = "wave_stream_t stream";
  for (const auto &a : abi.args) {
    if (a.kind == AbiArg::Pointer)
      out += ", const wave_tensor_t *" + a.name;
    else if (a.kind == AbiArg::Scalar)
      out += fmt::format(", {} {}", cScalarType(a.type), a.name);
  }
  return out;
}

// Text placed inside a printf format: '%' doubled, quotes and backslashes escaped.
std::string formatText(const std::string &s) {
  std::string out;
  for (char c : s) {
    if (c == '%')
      out += '%';
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out;
}

std::string cString(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

// One launch geometry of a kernel: block, grid and shared memory, with the code objects that
// use it. Targets may differ (wave64 vs warp32 blocks, dynamic shared memory); emulator images
// count a kernel's dynamic shared memory as their own, so they request none.
struct Geometry {
  const Distribution *dist = nullptr;
  uint64_t dynamicShared = 0;
  uint64_t sharedBytes = 0;
  std::vector<TensorMapArg> maps; // TMA tensor maps after the ABI's arguments
  std::vector<std::string> targets;
  uint32_t producers = 0; // a warp-specialized kernel's producer threads after the block
  uint32_t perSM = 0;     // persistent tiles: workgroups per SM (the grid clamped at launch)
  uint32_t block0() const { return dist->block[0] + producers; }
  std::string key() const {
    std::string m;
    for (const TensorMapArg &t : maps)
      m += fmt::format(" {}:{}:{}:{}:{}:{}", t.param, static_cast<int>(t.dtype), t.boxRows,
                       t.boxCols, t.swizzleBytes, t.rank);
    return fmt::format("{} {} {} {} {} {} {} {}{} p{}", block0(), dist->block[1],
                       dist->block[2], dist->grid[0].str(), dist->grid[1].str(),
                       dist->grid[2].str(), dynamicShared, sharedBytes, m, perSM);
  }
  std::string targetList() const {
    std::string t;
    for (const auto &x : targets)
      t += (t.empty() ? "" : " ") + x;
    return t;
  }
};

// The distinct geometries of a kernel over `objects`, and for each object its geometry.
std::vector<Geometry> geometriesOf(const HostKernel &hk, const std::vector<CodeObject> &objects,
                                   std::vector<size_t> *geometryOf = nullptr) {
  std::vector<Geometry> geometries;
  for (const auto &obj : objects) {
    Geometry x;
    x.dist = hk.variants.empty() ? hk.dist : hk.variants.at(obj.variant);
    bool emu = obj.target.rfind("emu:", 0) == 0;
    if (obj.variant < hk.dynamicShared.size() && !emu)
      x.dynamicShared = hk.dynamicShared[obj.variant];
    x.sharedBytes = obj.variant < hk.variantShared.size() ? hk.variantShared[obj.variant]
                                                           : hk.sharedBytes;
    // The emulator (emu:sm_90a) runs the TMA loops and the producer warpgroup too.
    if (obj.variant < hk.tensorMaps.size())
      x.maps = hk.tensorMaps[obj.variant];
    if (obj.variant < hk.producerThreads.size())
      x.producers = hk.producerThreads[obj.variant];
    if (obj.variant < hk.persistentPerSM.size())
      x.perSM = hk.persistentPerSM[obj.variant];
    size_t g = 0;
    while (g < geometries.size() && geometries[g].key() != x.key())
      ++g;
    if (g == geometries.size())
      geometries.push_back(x);
    geometries[g].targets.push_back(obj.target);
    if (geometryOf)
      geometryOf->push_back(g);
  }
  if (geometries.empty())
    geometries.push_back({hk.dist, 0, hk.sharedBytes, {}, {}});
  return geometries;
}

// The banner comment of one kernel, shared by header and stub: its parameters (element type and
// shape of each tensor) and, per group of targets that launch alike, the block, grid and shared
// memory.
std::string kernelComment(const HostKernel &hk, const HostApiOptions &o) {
  const ir::Kernel &k = *hk.kernel;
  std::string params;
  for (const auto &p : k.params)
    params += (params.empty() ? "" : ", ") + p.name + ": " + p.value->type.str() +
              (p.isOutput ? " (output)" : "");
  std::string out = fmt::format("/* {}({})\n", k.name, params);
  for (const Geometry &g : geometriesOf(hk, o.objects)) {
    const Distribution &d = *g.dist;
    out += fmt::format(" *   targets: {}; block [{}, {}, {}]; grid [{}, {}, {}]; shared memory {} "
                       "bytes\n", g.targetList(), g.block0(), d.block[1], d.block[2],
                       d.grid[0].str(), d.grid[1].str(), d.grid[2].str(), g.sharedBytes);
    for (const TensorMapArg &m : g.maps) {
      std::string box;
      for (uint32_t i = 0; i < m.rank; ++i)
        box += (i ? " x " : "") + std::to_string(m.box(i));
      out += fmt::format(" *     TMA tensor map of {}: boxes of {}, {}-byte swizzle\n",
                         k.params.at(m.param).name, box, m.swizzleBytes);
    }
  }
  return out + " */\n";
}

} // namespace

std::optional<std::string> cExpr(const sym::IndexExpr &e) {
  CLowering lowering;
  return sym::lowerIndexExpr<std::string>(e, lowering);
}

std::string generateHeader(const std::vector<HostKernel> &kernels, const HostApiOptions &o) {
  std::string out = fmt::format("/* Generated by wavec from {}. Do not edit. */\n", o.sourceName);
  out += fmt::format("#ifndef {0}\n#define {0}\n\n", o.guard);
  out += "#include <stdbool.h>\n#include <stdint.h>\n\n#include <wave/kernel_api.h>\n\n";
  out += "/* The version of the generated API (2: NULL streams launch on the default device;\n"
         " * NAME_info_for). Headers of one version may be included together. */\n"
         "#define WAVEC_GENERATED_API_VERSION 2\n"
         "#if !defined(WAVE_RUNTIME_VERSION_MAJOR) || WAVE_RUNTIME_VERSION_MAJOR != 0 || \\\n"
         "    WAVE_RUNTIME_VERSION_MINOR < 2\n"
         "#error \"this header needs wave/runtime.h 0.2 or newer (the runtime of wavec 0.1.x)\"\n"
         "#endif\n\n";
  out += "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  for (const auto &hk : kernels) {
    KernelAbi abi = kernelAbi(*hk.kernel, *hk.dist);
    const std::string &name = hk.kernel->name;
    out += kernelComment(hk, o);
    out += fmt::format("wave_status_t {}_launch({});\n", name, paramList(abi, true, hk.kernel));
    out += fmt::format("wave_status_t {}_launch_tensors({});\n", name, tensorParamList(abi));
    out += fmt::format("/* {0}_info(): the launch facts of the first target; {0}_info_for(arch): those of\n"
                       " * the code object for `arch` as this stub lists it (\"sm_90\", \"emu:gfx942\"),\n"
                       " * NULL if it has none. */\n", name);
    out += fmt::format("const wave_kernel_info_t *{}_info(void);\n", name);
    out += fmt::format("const wave_kernel_info_t *{}_info_for(const char *arch);\n\n", name);
  }
  out += "#ifdef __cplusplus\n}\n#endif\n\n#endif\n";
  return out;
}

namespace {

const char *kHelpers = R"(/* Index arithmetic of the grid formulas and assumptions (floor semantics). */
static inline int64_t wave_floordiv_(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t wave_ceildiv_(int64_t a, int64_t b) { return -wave_floordiv_(-a, b); }
static inline int64_t wave_mod_(int64_t a, int64_t b) { return a - b * wave_floordiv_(a, b); }
static inline int64_t wave_min_(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t wave_max_(int64_t a, int64_t b) { return a > b ? a : b; }
/* Round-to-nearest-even float -> f16 / bf16 bits, for 16-bit scalar parameters. */
static inline uint16_t wave_f16_bits_(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
  int32_t exp = (int32_t)((x >> 23) & 0xffu) - 127 + 15;
  if (((x >> 23) & 0xffu) == 0xffu)
    return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));
  if (exp >= 31)
    return (uint16_t)(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10)
      return (uint16_t)sign;
    mant |= 0x800000u;
    uint32_t shift = (uint32_t)(14 - exp), half = 1u << (shift - 1);
    uint32_t v = mant >> shift, rest = mant & ((1u << shift) - 1u);
    if (rest > half || (rest == half && (v & 1u)))
      ++v;
    return (uint16_t)(sign | v);
  }
  uint32_t v = ((uint32_t)exp << 10) | (mant >> 13), rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (v & 1u)))
    ++v;
  return (uint16_t)(sign | v);
}
/* "f32", "bf16", "i8", "bool"... for a descriptor's element type, into buf (messages). */
static inline const char *wave_dtype_name_(const wave_tensor_t *t, char buf[32]) {
  static const char *const kinds[] = {"i", "u", "f", "?", "bf", "c", "bool"};
  unsigned code = t->dtype.code, bits = t->dtype.bits;
  if (code == 6)
    return "bool";
  if (code > 6 || code == 3)
    snprintf(buf, 32, "type code %u, %u bits", code, bits);
  else
    snprintf(buf, 32, "%s%u", kinds[code], bits);
  return buf;
}
static inline uint16_t wave_bf16_bits_(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((x >> 16) | 0x40u);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
)";

// Bytes of an image as a C array body, 16 per line.
std::string byteArray(const std::string &bytes) {
  std::string out;
  for (size_t i = 0; i < bytes.size(); ++i) {
    out += fmt::format("{}0x{:02x},", i % 16 == 0 ? "\n  " : " ",
                       static_cast<unsigned char>(bytes[i]));
  }
  return out + "\n";
}

// The stub's code that builds a code object's TMA tensor maps (wave_tensor_map_2d for rank 2,
// wave_tensor_map otherwise: the parameter's dims, row-major strides and the box) and puts
// their addresses after the ABI's arguments; sets args_size.
std::string tensorMapCode(const ir::Kernel &k, const KernelAbi &abi,
                          const std::vector<TensorMapArg> &maps, const std::string &ind) {
  std::string s;
  for (size_t j = 0; j < maps.size(); ++j) {
    const TensorMapArg &m = maps[j];
    const ir::Param &p = k.params.at(m.param);
    const ir::Shape &shape = p.value->type.shape;
    const unsigned bytes = bitWidth(m.dtype) / 8;
    std::vector<std::string> dims;
    for (uint32_t i = 0; i < m.rank; ++i)
      dims.push_back("(uint64_t)(" + cExpr(shape.at(i).size).value_or("INT64_C(-1)") + ")");
    if (m.rank == 2) {
      s += fmt::format("{0}{{\n{0}  const wave_dtype_t dtype = {{{1}, {2}, 1}};\n"
                       "{0}  uint64_t map = 0;\n"
                       "{0}  st = wave_tensor_map_2d(device, {3}, dtype, {4}, "
                       "{5}, {5} * {6}, {7}, {8}, {9}, &map);\n"
                       "{0}  if (st != WAVE_SUCCESS)\n{0}    return st;\n"
                       "{0}  memcpy(args + {10}, &map, 8);\n{0}}}\n",
                       ind, m.dtype == ScalarType::BF16 ? 4 : 2, bytes * 8, p.name, dims[0],
                       dims[1], bytes, m.boxRows, m.boxCols, m.swizzleBytes, abi.size + 8 * j);
      continue;
    }
    // Row-major strides: dim i's is the product of the later dims times the element bytes.
    std::string dimList, strideList, boxList;
    for (uint32_t i = 0; i < m.rank; ++i) {
      dimList += (i ? ", " : "") + dims[i];
      boxList += (i ? ", " : "") + std::to_string(m.box(i));
      if (i + 1 < m.rank) {
        std::string stride = std::to_string(bytes);
        for (uint32_t l = i + 1; l < m.rank; ++l)
          stride += " * " + dims[l];
        strideList += (i ? ", " : "") + stride;
      }
    }
    s += fmt::format("{0}{{\n{0}  const wave_dtype_t dtype = {{{1}, {2}, 1}};\n"
                     "{0}  const uint64_t dims[{3}] = {{{4}}}, strides[{5}] = {{{6}}};\n"
                     "{0}  const uint32_t box[{3}] = {{{7}}};\n"
                     "{0}  uint64_t map = 0;\n"
                     "{0}  st = wave_tensor_map(device, {8}, dtype, {3}, dims, strides, box, "
                     "{9}, &map);\n"
                     "{0}  if (st != WAVE_SUCCESS)\n{0}    return st;\n"
                     "{0}  memcpy(args + {10}, &map, 8);\n{0}}}\n",
                     ind, m.dtype == ScalarType::BF16 ? 4 : 2, bytes * 8, m.rank, dimList,
                     m.rank - 1, strideList, boxList, p.name, m.swizzleBytes, abi.size + 8 * j);
  }
  return s + fmt::format("{}args_size = {};\n", ind, abi.size + 8 * maps.size());
}

// Calls f(arg, type) for every tensor (pointer) argument of the ABI, with its parameter's type.
void forEachTensor(const KernelAbi &abi, const ir::Kernel &k,
                   const std::function<void(const AbiArg &, const ir::Type &)> &f) {
  size_t pi = 0; // the ABI's arguments follow the parameters (pointers and scalars) in order
  for (const auto &a : abi.args) {
    if (a.kind == AbiArg::Pointer)
      f(a, k.params[pi].value->type);
    ++pi;
  }
}

void emitLaunch(std::string &out, const HostKernel &hk, const KernelAbi &abi,
                const std::vector<CodeObject> &objects) {
  const ir::Kernel &k = *hk.kernel;
  const std::string &n = k.name;
  out += fmt::format("wave_status_t {}_launch({}) {{\n", n, paramList(abi, true));
  for (const auto &a : abi.args)
    if (a.kind == AbiArg::DynamicDim)
      out += fmt::format(
          "  if ({0} < 0 || {0} > WAVE_MAX_DIM)\n    return wave_fail(WAVE_ERROR_INVALID_ARGUMENT, "
          "\"{1}_launch: {0} = %lld is out of range\", (long long){0});\n", a.name, n);
  // A tensor without elements may have no storage (torch gives such tensors a NULL pointer);
  // the kernel touches none of it (docs/language.md section 13, empty tensors).
  forEachTensor(abi, k, [&](const AbiArg &a, const ir::Type &t) {
    std::string empty;
    for (const auto &d : t.shape)
      if (auto c = cExpr(d.size))
        empty += (empty.empty() ? "" : " || ") + fmt::format("({}) == 0", *c);
    out += fmt::format("  if (!{0}{2})\n    return wave_fail(WAVE_ERROR_INVALID_ARGUMENT, "
                       "\"{1}_launch: tensor '{0}' is NULL\");\n",
                       a.name, n, empty.empty() ? "" : " && !(" + empty + ")");
  });
  for (size_t i = 0; i < k.assumptions.size(); ++i) {
    auto c = cPred(k.assumptions[i]);
    if (!c)
      continue;
    std::string values;
    for (const auto &s : k.assumptions[i].freeSymbols())
      values += (values.empty() ? "" : ", ") + s + " = %lld";
    std::string args;
    for (const auto &s : k.assumptions[i].freeSymbols())
      args += ", (long long)" + s;
    out += fmt::format("  if (!{})\n    return wave_fail(WAVE_ERROR_UNSUPPORTED_SHAPE, "
                       "\"{}_launch: the assumption '{}' does not hold ({})\"{});\n",
                       *c, n, formatText(k.assumptionText[i]), values, args);
  }
  // Launch geometries: one per distinct (block, grid, shared memory) among the code objects.
  std::vector<size_t> geometryOf;
  std::vector<Geometry> geometries = geometriesOf(hk, objects, &geometryOf);
  auto gridOf = [&](const Distribution *x, const char *indent) {
    std::string s;
    for (int a = 0; a < 3; ++a)
      s += fmt::format("{}grid{} = {};\n", indent, a, cExpr(x->grid[a]).value_or("INT64_C(-1)"));
    return s;
  };
  const std::string select = "  wave_device_t device;\n  wave_kernel_t kernel;\n";
  if (geometries.size() == 1) {
    const Distribution *g0 = geometries[0].dist;
    for (int a = 0; a < 3; ++a)
      out += fmt::format("  int64_t grid{} = {};\n", a,
                         cExpr(g0->grid[a]).value_or("INT64_C(-1)"));
    out += "  if (grid0 == 0 || grid1 == 0 || grid2 == 0)\n    return WAVE_SUCCESS; /* nothing to do */\n";
    out += select;
    out += fmt::format("  wave_status_t st = wave_select_kernel(stream, {0}_objects_, "
                       "sizeof {0}_objects_ / sizeof {0}_objects_[0], \"{0}\", &device, &kernel);\n"
                       "  if (st != WAVE_SUCCESS)\n    return st;\n", n);
    out += fmt::format("  const uint32_t block[3] = {{{}, {}, {}}};\n", geometries[0].block0(),
                       g0->block[1], g0->block[2]);
    out += fmt::format("  const uint32_t shared = {};\n", geometries[0].dynamicShared);
    if (geometries[0].perSM > 0)
      out += fmt::format("  const uint32_t persistent = {};\n", geometries[0].perSM);
  } else {
    // The geometry follows the code object the runtime picks for the device.
    out += select;
    out += "  size_t object = 0;\n";
    out += fmt::format("  wave_status_t st = wave_select_kernel_index(stream, {0}_objects_, "
                       "sizeof {0}_objects_ / sizeof {0}_objects_[0], \"{0}\", &device, &kernel, "
                       "&object);\n  if (st != WAVE_SUCCESS)\n    return st;\n", n);
    std::string table;
    for (size_t g : geometryOf)
      table += (table.empty() ? "" : ", ") + std::to_string(g);
    out += fmt::format("  static const unsigned char geometry[] = {{{}}};\n", table);
    bool anyPersistent = false;
    for (const Geometry &g : geometries)
      anyPersistent |= g.perSM > 0;
    out += std::string("  int64_t grid0, grid1, grid2;\n  uint32_t block[3], shared") +
           (anyPersistent ? ", persistent = 0" : "") + ";\n  switch (geometry[object]) {\n";
    for (size_t g = 0; g < geometries.size(); ++g) {
      const Distribution *x = geometries[g].dist;
      out += g + 1 == geometries.size() ? "  default:\n" : fmt::format("  case {}:\n", g);
      out += gridOf(x, "    ");
      out += fmt::format("    block[0] = {};\n    block[1] = {};\n    block[2] = {};\n"
                         "    shared = {};\n",
                         geometries[g].block0(), x->block[1], x->block[2],
                         geometries[g].dynamicShared);
      if (geometries[g].perSM > 0)
        out += fmt::format("    persistent = {};\n", geometries[g].perSM);
      out += "    break;\n";
    }
    out += "  }\n";
    out += "  if (grid0 == 0 || grid1 == 0 || grid2 == 0)\n    return WAVE_SUCCESS; /* nothing to do */\n";
  }
  out += fmt::format("  if (grid0 < 0 || grid1 < 0 || grid2 < 0 || grid0 > UINT32_MAX || "
                     "grid1 > UINT32_MAX || grid2 > UINT32_MAX)\n    return wave_fail("
                     "WAVE_ERROR_INVALID_ARGUMENT, \"{}_launch: grid [%lld, %lld, %lld] is out "
                     "of range\", (long long)grid0, (long long)grid1, (long long)grid2);\n", n);
  bool persistent = false;
  for (const Geometry &g : geometries)
    persistent |= g.perSM > 0;
  if (persistent)
    // Persistent tiles (KernelPlan::specialization): at most `persistent` workgroups per SM,
    // each walking the grid's tiles; the kernel takes the tile count from the sizes.
    out += "  if (persistent > 0) { /* persistent tiles: a workgroup per SM walks the tiles */\n"
           "    wave_device_info_t info;\n"
           "    st = wave_device_info(device, &info);\n"
           "    if (st != WAVE_SUCCESS)\n      return st;\n"
           "    const uint64_t tiles = (uint64_t)grid0 * (uint64_t)grid1 * (uint64_t)grid2;\n"
           "    const uint64_t most = (uint64_t)info.multiprocessor_count * persistent;\n"
           "    grid0 = (int64_t)(most > 0 && tiles > most ? most : tiles);\n"
           "    grid1 = 1;\n    grid2 = 1;\n  }\n";
  size_t maxMaps = 0;
  for (const Geometry &g : geometries)
    maxMaps = std::max(maxMaps, g.maps.size());
  out += fmt::format("  unsigned char args[{}];\n  memset(args, 0, sizeof args);\n",
                     std::max<size_t>(abi.size + 8 * maxMaps, 8));
  for (const auto &a : abi.args) {
    if (a.kind == AbiArg::Scalar && (a.type == ScalarType::F16 || a.type == ScalarType::BF16)) {
      out += fmt::format("  {{ uint16_t bits = wave_{}_bits_({}); memcpy(args + {}, &bits, 2); }}\n",
                         a.type == ScalarType::F16 ? "f16" : "bf16", a.name, a.offset);
    } else if (a.kind == AbiArg::Scalar && a.type == ScalarType::I1) {
      out += fmt::format("  args[{}] = {} ? 1 : 0;\n", a.offset, a.name);
    } else {
      out += fmt::format("  memcpy(args + {}, &{}, {});\n", a.offset, a.name, a.size);
    }
  }
  std::string size = "sizeof args";
  if (maxMaps > 0) {
    // The TMA tensor maps of the code object picked (kernel_abi.h, TensorMapArg), after the
    // ABI's arguments: built (or found in the runtime's cache) for these tensors.
    out += fmt::format("  size_t args_size = {};\n", abi.size);
    if (geometries.size() == 1) {
      out += tensorMapCode(k, abi, geometries[0].maps, "  ");
    } else {
      out += "  switch (geometry[object]) {\n";
      for (size_t g = 0; g < geometries.size(); ++g)
        if (!geometries[g].maps.empty())
          out += fmt::format("  case {}:\n", g) +
                 tensorMapCode(k, abi, geometries[g].maps, "    ") + "    break;\n";
      out += "  default:\n    break;\n  }\n";
    }
    size = "args_size";
  }
  out += "  const uint32_t grid[3] = {(uint32_t)grid0, (uint32_t)grid1, (uint32_t)grid2};\n";
  out += "  return wave_launch(device, stream, kernel, grid, block, shared, args, " + size +
         ");\n}\n\n";
}

// The descriptor entry point: checks each tensor against the kernel's types, derives the
// dynamic dims from the shapes, and calls NAME_launch.
// A dim `a * S + b` (a != 0, a and b rational) of one dynamic symbol S that no tensor dim is
// exactly: C that gives S from the dim's extent `actual`, (q * (s * E - r)) / (s * p) for
// a = p / q and b = r / s, which the derived-dim checks then confirm (N / 2 with extent E gives
// N = 2 * E; a floor division `N // 2` is not linear and gives nothing).
std::optional<std::string> invertLinear(const sym::IndexExpr &size, const std::string &s,
                                        const std::string &actual) {
  const auto syms = size.freeSymbols();
  if (syms.size() != 1 || *syms.begin() != s)
    return std::nullopt;
  auto at = [&](int64_t v) -> std::optional<GiNaC::numeric> {
    GiNaC::ex e = size.subs({{s, sym::IndexExpr(v)}}).ex();
    if (!GiNaC::is_a<GiNaC::numeric>(e) || !GiNaC::ex_to<GiNaC::numeric>(e).is_rational())
      return std::nullopt;
    return GiNaC::ex_to<GiNaC::numeric>(e);
  };
  auto b = at(0), one = at(1), seven = at(7), big = at(1000003);
  if (!b || !one || !seven || !big)
    return std::nullopt;
  const GiNaC::numeric a = *one - *b;
  if (a.is_zero() || *seven != 7 * a + *b || *big != 1000003 * a + *b)
    return std::nullopt;
  const GiNaC::numeric p = a.numer(), q = a.denom(), r = b->numer(), d = b->denom();
  if (!p.is_pos_integer() && !(-p).is_pos_integer())
    return std::nullopt;
  for (const auto &n : {p, q, r, d, d * p})
    if (abs(n) > GiNaC::numeric(1 << 20))
      return std::nullopt; // coefficients of a dim are small; keep the C arithmetic far from overflow
  return fmt::format("wave_floordiv_(INT64_C({}) * (INT64_C({}) * {} - (INT64_C({}))), INT64_C({}))",
                     q.to_long(), d.to_long(), actual, r.to_long(), (d * p).to_long());
}

void emitLaunchTensors(std::string &out, const HostKernel &hk, const KernelAbi &abi) {
  const ir::Kernel &k = *hk.kernel;
  const std::string &n = k.name;
  out += fmt::format("wave_status_t {}_launch_tensors({}) {{\n", n, tensorParamList(abi));
  out += "  char dtype_name[32];\n  (void)dtype_name;\n";
  for (const auto &a : abi.args)
    if (a.kind == AbiArg::DynamicDim)
      out += fmt::format("  int64_t {} = -1;\n", a.name);
  forEachTensor(abi, k, [&](const AbiArg &a, const ir::Type &t) {
    out += fmt::format("  if (!{0})\n    return wave_fail(WAVE_ERROR_INVALID_ARGUMENT, "
                       "\"{1}_launch_tensors: tensor '{0}' is NULL\");\n", a.name, n);
    out += fmt::format(
        "  if ({0}->ndim != {2} || {0}->dtype.bits != {3} || {0}->dtype.lanes != 1 || "
        "({4} >= 0 && {0}->dtype.code != {4}))\n    return wave_fail(WAVE_ERROR_INVALID_ARGUMENT, "
        "\"{1}_launch_tensors: tensor '{0}' must be {5} (rank {2}, {6}), got rank %d with "
        "%d-bit elements of type code %d (%s)\", (int){0}->ndim, (int){0}->dtype.bits, "
        "(int){0}->dtype.code, wave_dtype_name_({0}, dtype_name));\n",
        a.name, n, t.shape.size(), bitWidth(t.dtype) == 1 ? 8 : bitWidth(t.dtype),
        bitWidth(t.dtype) == 8 && isFloat(t.dtype) ? -1 : dlpackCode(t.dtype), t.str(),
        scalarTypeName(t.dtype));
    if (!t.shape.empty())
      out += fmt::format("  if (!{0}->shape)\n    return wave_fail(WAVE_ERROR_INVALID_ARGUMENT, "
                         "\"{1}_launch_tensors: tensor '{0}' has no shape\");\n"
                         "  for (int32_t d = 0; d < {2}; ++d)\n    if ({0}->shape[d] < 0)\n"
                         "      return wave_fail(WAVE_ERROR_INVALID_ARGUMENT, \"{1}_launch_tensors: "
                         "dim %d of '{0}' is negative (%lld)\", (int)d, (long long){0}->shape[d]);\n",
                         a.name, n, t.shape.size());
    // No storage is fine for a tensor without elements (torch's empty tensors).
    std::string empty;
    for (size_t i = 0; i < t.shape.size(); ++i)
      empty += (empty.empty() ? "" : " || ") + fmt::format("{}->shape[{}] == 0", a.name, i);
    out += fmt::format("  if (!{0}->data{2})\n    return wave_fail(WAVE_ERROR_INVALID_ARGUMENT, "
                       "\"{1}_launch_tensors: tensor '{0}' has no data\");\n",
                       a.name, n, empty.empty() ? "" : " && !(" + empty + ")");
    out += fmt::format("  if (!wave_tensor_is_compact({}))\n    return wave_fail("
                       "WAVE_ERROR_INVALID_ARGUMENT, \"{}_launch_tensors: tensor '{}' must be "
                       "compact row-major (strides NULL or dense)\");\n", a.name, n, a.name);
    for (size_t i = 0; i < t.shape.size(); ++i) {
      const ir::Dim &dim = t.shape[i];
      std::string actual = fmt::format("{}->shape[{}]", a.name, i);
      if (auto sym = dim.size.asSymbol(); sym && (*sym)[0] != '$') {
        // A dim that is exactly a dynamic symbol defines it (or must agree with it).
        out += fmt::format("  if ({0} < 0)\n    {0} = {1};\n  else if ({0} != {1})\n    return "
                           "wave_fail(WAVE_ERROR_INVALID_ARGUMENT, \"{2}_launch_tensors: dim {3} "
                           "of '{4}' is %lld but {0} is %lld from an earlier tensor\", "
                           "(long long){1}, (long long){0});\n",
                           *sym, actual, n, i, a.name);
      }
    }
  });
  // A dynamic symbol that no tensor dim is exactly comes from a dim that is a linear expression
  // of it alone (`N / 2`, `2 * N`); one that none gives is an error, not a launch with -1.
  for (const auto &sa : abi.args) {
    if (sa.kind != AbiArg::DynamicDim)
      continue;
    std::optional<std::string> from;
    std::string where, fromExtent;
    bool plain = false; // some tensor dim is exactly the symbol: the loop above set it
    forEachTensor(abi, k, [&](const AbiArg &, const ir::Type &t) {
      for (const auto &d : t.shape)
        plain |= d.size.asSymbol() == sa.name;
    });
    if (plain)
      continue;
    forEachTensor(abi, k, [&](const AbiArg &a, const ir::Type &t) {
      for (size_t i = 0; i < t.shape.size() && !from; ++i)
        if ((from = invertLinear(t.shape[i].size, sa.name, fmt::format("{}->shape[{}]", a.name, i)))) {
          where = fmt::format("dim {} of '{}' ({})", i, a.name, t.shape[i].str());
          fromExtent = fmt::format("{}->shape[{}]", a.name, i);
        }
    });
    if (from)
      out += fmt::format("  if ({0} < 0 && {3} <= WAVE_MAX_DIM) /* from {1} */\n    {0} = {2};\n",
                         sa.name, where, *from, fromExtent);
    out += fmt::format("  if ({0} < 0)\n    return wave_fail(WAVE_ERROR_INVALID_ARGUMENT, "
                       "\"{1}_launch_tensors: no tensor dim gives {0} (or its extent is out of range); "
                       "call {1}_launch with it\");\n",
                       sa.name, n);
  }
  // Derived dims are checked after every dynamic symbol is known.
  forEachTensor(abi, k, [&](const AbiArg &a, const ir::Type &t) {
    for (size_t i = 0; i < t.shape.size(); ++i) {
      const ir::Dim &dim = t.shape[i];
      if (dim.size.asSymbol())
        continue;
      auto c = cExpr(dim.size);
      if (!c)
        continue;
      out += fmt::format("  if ({0}->shape[{1}] != {2})\n    return wave_fail("
                         "WAVE_ERROR_INVALID_ARGUMENT, \"{3}_launch_tensors: dim {1} of '{0}' is "
                         "%lld, the kernel needs {4} = %lld\", (long long){0}->shape[{1}], "
                         "(long long)({2}));\n", a.name, i, *c, n, dim.str());
    }
  });
  std::string call;
  for (const auto &a : abi.args) {
    if (a.kind == AbiArg::Pointer)
      call += fmt::format(", (char *){0}->data + {0}->byte_offset", a.name);
    else
      call += ", " + a.name;
  }
  out += fmt::format("  return {}_launch(stream{});\n}}\n\n", n, call);
}

void emitInfo(std::string &out, const HostKernel &hk, const KernelAbi &abi,
              const HostApiOptions &o) {
  const ir::Kernel &k = *hk.kernel;
  const std::string &n = k.name;
  static const char *kinds[] = {"pointer", "scalar", "dim"};
  out += fmt::format("static const wave_arg_info_t {}_args_[] = {{\n", n);
  for (const auto &a : abi.args)
    out += fmt::format("  {{\"{}\", \"{}\", \"{}\", {}, {}, {}}},\n", a.name, kinds[a.kind],
                       scalarTypeName(a.type), a.offset, a.size, a.isOutput ? 1 : 0);
  if (abi.args.empty())
    out += "  {\"\", \"\", \"\", 0, 0, 0},\n";
  out += "};\n";
  std::vector<size_t> geometryOf;
  std::vector<Geometry> geometries = geometriesOf(hk, o.objects, &geometryOf);
  for (size_t g = 0; g < geometries.size(); ++g) {
    const Distribution &d = *geometries[g].dist;
    out += fmt::format("static const wave_kernel_info_t {0}_info_{11}_ = {{\"{0}\", {1}, "
                       "{{{2}, {3}, {4}}}, {{{5}, {6}, {7}}}, {8}, {9}, {0}_args_, {10}}};\n",
                       n, cString(geometries[g].targetList()), geometries[g].block0(), d.block[1],
                       d.block[2],
                       cString(d.grid[0].str()), cString(d.grid[1].str()),
                       cString(d.grid[2].str()), geometries[g].sharedBytes, abi.args.size(),
                       abi.size, g);
  }
  out += fmt::format("const wave_kernel_info_t *{0}_info(void) {{ return &{0}_info_0_; }}\n", n);
  out += fmt::format("const wave_kernel_info_t *{0}_info_for(const char *arch) {{\n"
                     "  if (!arch)\n    return NULL;\n", n);
  for (size_t i = 0; i < o.objects.size(); ++i)
    out += fmt::format("  if (strcmp(arch, {}) == 0)\n    return &{}_info_{}_;\n",
                       cString(o.objects[i].target), n, geometryOf[i]);
  out += "  return NULL;\n}\n\n";
}

} // namespace

std::string generateStub(const std::vector<HostKernel> &kernels, const HostApiOptions &o) {
  std::string out = fmt::format("/* Generated by wavec from {}. Do not edit. */\n", o.sourceName);
  out += fmt::format("#include \"{}\"\n\n#include <stdio.h>\n#include <string.h>\n\n", o.headerName);
  out += "#define WAVE_MAX_DIM (INT64_C(1) << 47)\n\n";
  out += kHelpers;
  out += "\n";
  // The code objects, shared by every kernel of the file.
  for (size_t i = 0; i < o.objects.size(); ++i) {
    if (!o.loadPaths.empty())
      continue;
    out += fmt::format("static const unsigned char wave_image_{}_[{}] = {{{}}};\n", i,
                       o.objects[i].bytes.size(), byteArray(o.objects[i].bytes));
  }
  out += "static const wave_code_object_t wave_objects_[] = {\n";
  for (size_t i = 0; i < o.objects.size(); ++i) {
    if (o.loadPaths.empty())
      out += fmt::format("  {{\"{}\", wave_image_{}_, sizeof wave_image_{}_, NULL}},\n",
                         o.objects[i].target, i, i);
    else
      out += fmt::format("  {{\"{}\", NULL, 0, {}}},\n", o.objects[i].target,
                         cString(o.loadPaths[i]));
  }
  out += "};\n\n";
  for (const auto &hk : kernels) {
    KernelAbi abi = kernelAbi(*hk.kernel, *hk.dist);
    out += kernelComment(hk, o);
    out += fmt::format("#define {0}_objects_ wave_objects_\n", hk.kernel->name);
    emitInfo(out, hk, abi, o);
    emitLaunch(out, hk, abi, o.objects);
    emitLaunchTensors(out, hk, abi);
  }
  return out;
}

} // namespace wave
