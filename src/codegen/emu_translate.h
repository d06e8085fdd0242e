// The emulator image of a compiled module: the final target LLVM module (after LLVM's
// optimization pipeline, right before instruction selection) translated into the bytecode of
// runtime/format/emu_image.h, which the runtime's `emu` device interprets.
#pragma once

#include "codegen/codegen_api.h"

#include <map>
#include <string>
#include <vector>

namespace llvm {
class Module;
}

namespace wave {

// Translates the kernels of `module` (compiled for `target`) into an emulator image in `image`.
// Returns false with `error` naming the first instruction or intrinsic the emulator does not
// support (and where it comes from) when the module cannot be translated.
// `dynamicShared` (kernel name -> bytes, from emitMlir) is the dynamic shared memory a kernel's
// launches provide on a GPU; the image counts it as part of the kernel's own shared memory (its
// unsized arrays start where the sized ones end), so emulator launches need not request it.
bool translateToEmuImage(const llvm::Module &module, const std::vector<CodegenKernel> &kernels,
                         const TargetInfo &target, std::string &image, std::string &error,
                         const std::map<std::string, int64_t> &dynamicShared = {},
                         const std::map<std::string, int64_t> &producerThreads = {});

// The same for kernels described by name, block and wave size alone (what the image needs).
struct EmuKernelInfo {
  std::string name;
  unsigned block[3];
  unsigned waveSize;
  unsigned dynamicShared = 0; // bytes added to the kernel's shared memory for unsized arrays
};
bool translateToEmuImage(const llvm::Module &module, const std::vector<EmuKernelInfo> &kernels,
                         const std::string &targetName, unsigned defaultWaveSize,
                         std::string &image, std::string &error);

} // namespace wave
