// MLIR emission: from checked kernel graphs and their distributions to the text of one
// `gpu.module` in upstream dialects (gpu, arith, vector, scf, llvm). Plain text, so this file
// needs no MLIR headers (lowering.cpp parses it), and tests can FileCheck it.
//
// Kernel ABI (the host stub and the runtime rely on it):
//   - symbol: the kernel's name; one `gpu.func ... kernel` per kernel, all in one code object;
//   - explicit arguments, in the kernel's declared parameter order: each Memory parameter as a
//     global pointer (8 bytes; `!llvm.ptr<1>`), the tensor dense and row-major, the pointer
//     16-byte aligned; each scalar parameter by value at its natural size and alignment (i1 as
//     i1/u8); then each dynamic symbol (Distribution::dynamicSymbols order) as an i64;
//   - block size fixed at Distribution::block (the max flat workgroup size / maxntid is set to
//     it); grid = Distribution::grid, evaluated by the host.
#pragma once

#include "codegen/codegen_api.h"

#include <map>
#include <optional>
#include <string>

namespace wave {

// Returns the module text, or nullopt after reporting what is not supported.
// `insertBarriers` = false leaves out the shared-memory barriers the analysis places (a debug
// switch: the emulator's race detector must then report the races). `dynamicShared` receives,
// per kernel whose shared memory exceeds the target's static limit (TargetInfo::ldsBytes, up to
// ldsOptInBytes), the bytes of dynamic shared memory its launches must request: its arena is
// then an external, unsized array (`.extern .shared` in PTX). `producerThreads` receives, per
// warp-specialized kernel, the threads its launch adds after the distribution's block (its
// producer warpgroup: KernelPlan::specialization). `persistentPerSM` receives, per kernel with
// persistent tiles (WarpSpecialization::perSM), the workgroups per SM its launch runs.
std::optional<std::string> emitMlir(const std::vector<CodegenKernel> &kernels,
                                    const TargetInfo &target, DiagnosticEngine &diags,
                                    bool insertBarriers = true,
                                    std::map<std::string, int64_t> *dynamicShared = nullptr,
                                    const std::vector<std::string> *dumpPasses = nullptr,
                                    std::vector<std::pair<std::string, std::string>> *passDumps =
                                        nullptr,
                                    std::map<std::string, std::vector<TensorMapArg>> *tensorMaps =
                                        nullptr,
                                    std::map<std::string, int64_t> *producerThreads = nullptr,
                                    std::map<std::string, int64_t> *persistentPerSM = nullptr);

} // namespace wave
