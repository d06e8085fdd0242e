// Lowering of the emitted MLIR text to what the user asked for: canonicalized MLIR, LLVM IR,
// ISA/PTX text, an HSACO code object (object + ld.lld), or a cubin (PTX + ptxas). The only
// translation unit of the code generator that includes MLIR and LLVM headers.
#pragma once

#include "codegen/codegen_api.h"

#include <map>
#include <string>

namespace wave {

// `kernels` are the kernels the text was emitted from (their block and wave sizes);
// `dynamicShared` the dynamic shared memory of those that need it (emitMlir),
// `producerThreads` the warp-specialized kernels' producer threads beyond the block.
bool lowerModule(const std::string &mlirText, const std::vector<CodegenKernel> &kernels,
                 const TargetInfo &target, const CodegenOptions &options, DiagnosticEngine &diags,
                 std::string &out, EmuImageResult *emu = nullptr,
                 const std::map<std::string, int64_t> &dynamicShared = {},
                 const std::map<std::string, int64_t> &producerThreads = {});

} // namespace wave
