#include "driver/metadata.h"

#include "frontend/diagnostics.h"

#include <fmt/format.h>

namespace wave {

namespace {

// A count, or null where the code object does not tell (-1).
std::string countOrNull(int64_t n) { return n < 0 ? "null" : std::to_string(n); }

std::string stringArray(const std::vector<std::string> &items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i)
    out += (i ? ", " : "") + jsonString(items[i]);
  return out + "]";
}

} // namespace

std::string kernelMetadataJson(const std::vector<HostKernel> &kernels,
                               const std::vector<KernelResources> &resources,
                               const TargetInfo &target,
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
    KernelResources r;
    for (const auto &candidate : resources)
      if (candidate.name == k.name)
        r = candidate;
    out += fmt::format("      \"lds_bytes\": {},\n", std::max<int64_t>(r.sharedBytes, 0));
    out += fmt::format("      \"dynamic_lds_bytes\": {},\n", r.dynamicSharedBytes);
    if (target.vendor == Vendor::AMD)
      out += fmt::format("      \"registers\": {{\"vgprs\": {}, \"agprs\": {}, \"sgprs\": {}, "
                         "\"scratch_bytes\": {}, \"spills\": {}}},\n",
                         countOrNull(r.registers), countOrNull(r.agprs), countOrNull(r.sgprs),
                         countOrNull(r.scratchBytes), countOrNull(r.spills));
    else
      out += fmt::format("      \"registers\": {{\"registers\": {}, \"stack_bytes\": {}, "
                         "\"spill_store_bytes\": {}}},\n",
                         countOrNull(r.registers), countOrNull(r.scratchBytes),
                         countOrNull(r.spills));
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
