#include "driver/metadata.h"

#include "frontend/diagnostics.h"
#include "occupancy.h"

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

// A limit in workgroups per compute unit, or null for none.
std::string limitOrNull(uint32_t n) { return n == UINT32_MAX ? "null" : std::to_string(n); }

// Resident workgroups and waves per compute unit by the target's limits (occupancy.h, shared
// with the emulator's profiler), from the block, the shared memory and the registers.
std::string occupancyJson(const TargetInfo &target, const Distribution &d,
                          const KernelResources &r) {
  occupancy::Registers regs;
  if (target.vendor == Vendor::AMD) {
    regs.vgprs = static_cast<int>(r.registers);
    regs.agprs = static_cast<int>(r.agprs);
    regs.sgprs = static_cast<int>(r.sgprs);
  } else {
    regs.regs = static_cast<int>(r.registers);
  }
  const int64_t lds = std::max<int64_t>(r.sharedBytes, 0) + r.dynamicSharedBytes;
  const occupancy::Occupancy o = occupancy::occupancy(
      target.name, d.waveSize, (d.block[0] + r.producerThreads) * d.block[1] * d.block[2],
      static_cast<uint32_t>(std::min<int64_t>(lds, UINT32_MAX)), regs);
  if (!o.knownTarget)
    return "      \"occupancy\": null,\n";
  return fmt::format("      \"occupancy\": {{\"unit\": \"{}\", \"workgroups\": {}, \"waves\": {}, "
                     "\"max_waves\": {}, \"limited_by\": \"{}\", \"by_waves\": {}, "
                     "\"by_lds\": {}, \"by_registers\": {}}},\n",
                     o.unit, o.blocks, o.waves(), o.maxWaves, o.limitedBy,
                     limitOrNull(o.byWaves), limitOrNull(o.byLds),
                     o.registersKnown ? limitOrNull(o.byRegisters) : "null");
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
    int64_t producers = 0, perSM = 0; // a warp-specialized kernel's producer warpgroup
    for (const auto &candidate : resources)
      if (candidate.name == k.name) {
        producers = candidate.producerThreads;
        perSM = candidate.persistentPerSM;
      }
    out += fmt::format("      \"block\": [{}, {}, {}],\n", d.block[0] + producers, d.block[1],
                       d.block[2]);
    out += fmt::format("      \"waves_per_block\": [{}, {}, {}],\n", d.wavesPerBlock[0],
                       d.wavesPerBlock[1], d.wavesPerBlock[2]);
    out += "      \"grid\": " +
           stringArray({d.grid[0].str(), d.grid[1].str(), d.grid[2].str()}) + ",\n";
    if (perSM > 0) // the launch runs min(tiles, perSM x SMs) workgroups along axis 0
      out += fmt::format("      \"persistent_workgroups_per_sm\": {},\n", perSM);
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
    out += occupancyJson(target, d, r);
    std::string loops;
    for (int64_t n : r.loopMatrixOps)
      loops += (loops.empty() ? "" : ", ") + std::to_string(n);
    out += "      \"loop_matrix_ops\": [" + loops + "],\n";
    out += "      \"dynamic_symbols\": " + stringArray(d.dynamicSymbols) + ",\n";
    out += "      \"assumptions\": " + stringArray(k.assumptionText) + ",\n";
    out += fmt::format("      \"kernarg_size\": {},\n", abi.size);
    // TMA tensor maps (kernel_abi.h, TensorMapArg): device addresses after the arguments.
    out += "      \"tensor_maps\": [";
    for (size_t j = 0; j < r.tensorMaps.size(); ++j) {
      const TensorMapArg &m = r.tensorMaps[j];
      std::string box; // one extent per dim of the tensor
      for (uint32_t i = 0; i < m.rank; ++i)
        box += (i ? ", " : "") + std::to_string(m.box(i));
      out += fmt::format("{}{{\"param\": {}, \"type\": \"{}\", \"offset\": {}, \"box\": [{}], "
                         "\"swizzle_bytes\": {}}}",
                         j ? ", " : "", jsonString(k.params.at(m.param).name),
                         scalarTypeName(m.dtype), abi.size + 8 * j, box, m.swizzleBytes);
    }
    out += "],\n";
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
