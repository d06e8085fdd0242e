#include "driver/metadata.h"

#include "frontend/diagnostics.h"

#include <fmt/format.h>

namespace wave {

namespace {

// Bytes of shared memory the kernel needs, unpadded: every parameter in the shared address space
// is staged one block tile at a time (its dims' workgroup or tiling tiles × element size), and
// every `allocate` takes its tile × element size.
uint64_t sharedBytes(const ir::Kernel &k) {
  uint64_t bytes = 0;
  for (const auto &p : k.params) {
    const ir::Type &t = p.value->type;
    if (!t.isMemory() || t.space != AddressSpace::Shared)
      continue;
    uint64_t n = bitWidth(t.dtype) / 8;
    for (const auto &dim : t.shape) {
      if (const auto *w = k.workgroupFor(dim))
        n *= static_cast<uint64_t>(w->tile);
      else if (const auto *tl = k.tilingFor(dim))
        n *= static_cast<uint64_t>(tl->tile);
      else if (auto size = dim.size.asInteger())
        n *= static_cast<uint64_t>(*size);
    }
    bytes += n;
  }
  ir::walk(k.body, [&](const ir::Op &op) {
    if (op.kind != ir::OpKind::Allocate || op.results.empty())
      return;
    uint64_t n = bitWidth(op.results[0]->type.dtype) / 8;
    for (int64_t t : op.tile)
      n *= static_cast<uint64_t>(t);
    bytes += n;
  });
  return bytes;
}

std::string stringArray(const std::vector<std::string> &items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i)
    out += (i ? ", " : "") + jsonString(items[i]);
  return out + "]";
}

} // namespace

std::string kernelMetadataJson(const std::vector<HostKernel> &kernels, const TargetInfo &target,
                               const std::string &sourceName, const std::string &version) {
  static const char *kinds[] = {"pointer", "scalar", "dim"};
  std::string out = "{\n";
  out += "  \"wavec_version\": " + jsonString(version) + ",\n";
  out += "  \"source\": " + jsonString(sourceName) + ",\n";
  out += "  \"target\": " + jsonString(target.name) + ",\n";
  out += std::string("  \"vendor\": ") + (target.vendor == Vendor::AMD ? "\"amd\"" : "\"nvidia\"") +
         ",\n";
  out += "  \"kernels\": [";
  for (size_t i = 0; i < kernels.size(); ++i) {
    const ir::Kernel &k = *kernels[i].kernel;
    const Distribution &d = *kernels[i].dist;
    KernelAbi abi = kernelAbi(k, d);
    out += i ? ",\n    {\n" : "\n    {\n";
    out += "      \"name\": " + jsonString(k.name) + ",\n";
    out += fmt::format("      \"wave_size\": {},\n", d.waveSize);
    out += fmt::format("      \"block\": [{}, {}, {}],\n", d.block[0], d.block[1], d.block[2]);
    out += fmt::format("      \"waves_per_block\": [{}, {}, {}],\n", d.wavesPerBlock[0],
                       d.wavesPerBlock[1], d.wavesPerBlock[2]);
    out += "      \"grid\": " +
           stringArray({d.grid[0].str(), d.grid[1].str(), d.grid[2].str()}) + ",\n";
    out += fmt::format("      \"lds_bytes\": {},\n", sharedBytes(k));
    out += "      \"dynamic_symbols\": " + stringArray(d.dynamicSymbols) + ",\n";
    out += "      \"assumptions\": " + stringArray(k.assumptionText) + ",\n";
    out += fmt::format("      \"kernarg_size\": {},\n", abi.size);
    out += "      \"arguments\": [";
    for (size_t j = 0; j < abi.args.size(); ++j) {
      const AbiArg &a = abi.args[j];
      out += j ? ",\n" : "\n";
      out += fmt::format("        {{\"name\": {}, \"kind\": \"{}\", \"type\": \"{}\", "
                         "\"offset\": {}, \"size\": {}, \"align\": {}, \"output\": {}}}",
                         jsonString(a.name), kinds[a.kind], scalarTypeName(a.type), a.offset,
                         a.size, a.align, a.isOutput ? "true" : "false");
    }
    out += abi.args.empty() ? "]\n" : "\n      ]\n";
    out += "    }";
  }
  out += kernels.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

} // namespace wave
