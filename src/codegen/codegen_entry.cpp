// The code generator library's entry point: emit MLIR (mlir_emitter.h), then lower it
// (lowering.h). See codegen_api.h for how the driver finds and calls it.
#include "codegen/codegen_api.h"
#include "codegen/lowering.h"
#include "codegen/mlir_emitter.h"

#include <chrono>

namespace wave {
namespace {

bool generate(const std::vector<CodegenKernel> &kernels, const TargetInfo &target,
              const CodegenOptions &options, DiagnosticEngine &diags, std::string &out,
              EmuImageResult *emu) {
  std::map<std::string, int64_t> dynamicShared;
  std::map<std::string, std::vector<TensorMapArg>> tensorMaps;
  std::map<std::string, int64_t> producerThreads, persistentPerSM;
  const auto start = std::chrono::steady_clock::now();
  std::optional<std::string> mlir = emitMlir(kernels, target, diags, options.insertBarriers,
                                             &dynamicShared, &options.dumpPasses,
                                             options.passDumps, &tensorMaps,
                                             &producerThreads, &persistentPerSM);
  if (options.timings)
    options.timings->push_back(
        {"plan and emit", std::chrono::duration<double, std::milli>(
                              std::chrono::steady_clock::now() - start)
                              .count()});
  if (!mlir)
    return false;
  if (!lowerModule(*mlir, kernels, target, options, diags, out, emu, dynamicShared,
                   producerThreads))
    return false;
  if (options.resources)
    for (KernelResources &r : *options.resources)
    {
      if (auto it = tensorMaps.find(r.name); it != tensorMaps.end())
        r.tensorMaps = it->second;
      if (auto it = producerThreads.find(r.name); it != producerThreads.end())
        r.producerThreads = it->second;
      if (auto it = persistentPerSM.find(r.name); it != persistentPerSM.end())
        r.persistentPerSM = it->second;
    }
  return true;
}

const WaveCodegenApi kApi = {kWaveCodegenApiVersion, &generate};

} // namespace
} // namespace wave

extern "C" __attribute__((visibility("default"))) const wave::WaveCodegenApi *
wave_codegen_api(void) {
  return &wave::kApi;
}
