// The interface between the wavec driver and the code generator library libwavec_codegen.so.
//
// The code generator links LLVM and MLIR, whose shared libraries alone cost ~40 ms to load, so
// the driver (whose `--check` takes ~12 ms) does not link it: it dlopens the library only when a
// code object or an MLIR/LLVM dump is requested (backend_loader.h) and calls the one C entry
// point `wave_codegen_api()`, which returns a table of function pointers.
//
// The library does not carry its own copy of the compiler libraries (GiNaC, the kernel graph,
// the distribution): it uses the driver's, which wavec exports (ENABLE_EXPORTS). The kernel graph
// and distribution objects therefore cross the boundary as they are. Both sides are built from
// one tree with one compiler; `version` guards against a stale library next to a newer driver.
//
// This header must stay free of LLVM and MLIR headers.
#pragma once

#include "codegen/kernel_abi.h"
#include "target/target_table.h"
#include "frontend/diagnostics.h"
#include "ir/graph.h"
#include "passes/distribution.h"

#include <string>
#include <vector>

namespace wave {

// What the code generator produces (wavec --emit=..., or -o's extension).
enum class CodegenOutput {
  MLIR,  // the emitted gpu.module (upstream dialects), canonicalized: text
  LLVM,  // LLVM IR after lowering to ROCDL/NVVM and translation: text
  Asm,   // AMDGPU ISA or PTX: text
  HSACO, // AMD code object (ELF shared object): binary
  PTX,   // NVIDIA PTX: text
  Cubin, // NVIDIA cubin via ptxas: binary
  Emu,   // the emulator image alone (runtime/format/emu_image.h): binary
};

// What a kernel of a code object uses, read from the compiled module and code object; -1 where
// unknown (registers of PTX are known only once ptxas has run: CodegenOptions::registerCounts).
struct KernelResources {
  std::string name;
  int64_t sharedBytes = -1;  // static shared memory (LDS)
  int64_t dynamicSharedBytes = 0; // dynamic shared memory each launch must request (NVIDIA)
  int64_t registers = -1;    // NVIDIA: registers per thread; AMD: VGPRs
  int64_t agprs = -1;        // AMD: accumulation VGPRs (CDNA)
  int64_t sgprs = -1;        // AMD: scalar registers
  int64_t scratchBytes = -1; // private (stack) bytes per thread
  int64_t spills = -1;       // AMD: VGPR + SGPR spill count; NVIDIA: spill store bytes
  // Matrix instructions (MFMA, WMMA, mma.sync, wgmma) per trip of each innermost loop, in the
  // order of the loops in the kernel (lowering.cpp, collectLoopMatrixOps).
  std::vector<int64_t> loopMatrixOps;
  // The TMA tensor maps the kernel takes after its ABI arguments (kernel_abi.h), which the
  // generated stub builds at launch.
  std::vector<TensorMapArg> tensorMaps;
  // Threads the launch adds after the distribution's block along axis 0 (a warp-specialized
  // kernel's producer warpgroup, KernelPlan::specialization); 0: none.
  int64_t producerThreads = 0;
  // Persistent tiles (WarpSpecialization::perSM): the launch runs at most this many workgroups
  // per SM (grid axis 0 clamped to it times the SM count), each walking the grid's tiles; 0:
  // one tile per workgroup.
  int64_t persistentPerSM = 0;
};

struct CodegenOptions {
  CodegenOutput output = CodegenOutput::HSACO;
  unsigned optLevel = 3;          // -O0..-O3
  unsigned codeObjectVersion = 5; // AMD: 4 or 5
  bool debugInfo = false;         // keep .wave line info (DWARF) in the native output
  // When set, the resources of every kernel (shared bytes always; registers from an HSACO's
  // metadata, or from `ptxas -v` for PTX/cubin when registerCounts is set and ptxas is found).
  std::vector<KernelResources> *resources = nullptr;
  bool registerCounts = false;
  bool insertBarriers = true;     // false: --debug-no-barriers (shows races to the emulator)
  // --time-passes: when set, the generator appends (step, milliseconds) for each of its steps.
  std::vector<std::pair<std::string, double>> *timings = nullptr;
  // --print-ir-after / --dump-dir: the code generator's passes (passes/pass_list.h) whose
  // result to print, and where the (pass, text) pairs go, in pipeline order.
  std::vector<std::string> dumpPasses;
  std::vector<std::pair<std::string, std::string>> *passDumps = nullptr;
};

// The emulator image made alongside a native output (HSACO, PTX, cubin, ISA): the final target
// LLVM module translated for the CPU emulator (emu_translate.h). `error` says why there is none
// (an instruction the emulator does not support); the native output is unaffected.
struct EmuImageResult {
  std::string image;
  std::string error;
};

// One kernel to compile: its graph and its distribution (both owned by the driver).
struct CodegenKernel {
  const ir::Kernel *kernel = nullptr;
  const Distribution *dist = nullptr;
};

struct WaveCodegenApi {
  unsigned version; // kWaveCodegenApiVersion of the library
  // Compiles every kernel into one module for `target`; on success fills `out` (text or binary
  // bytes) and returns true. Errors are reported to `diags`. When `emu` is non-null and the
  // output is a native code object (HSACO, PTX, cubin, ISA), the emulator image of the same
  // module is made too (a translation failure only sets emu->error). With CodegenOutput::Emu,
  // `out` is the image and a translation failure is an error.
  bool (*generate)(const std::vector<CodegenKernel> &kernels, const TargetInfo &target,
                   const CodegenOptions &options, DiagnosticEngine &diags, std::string &out,
                   EmuImageResult *emu);
};

constexpr unsigned kWaveCodegenApiVersion = 6;

} // namespace wave

extern "C" {
// The library's entry point (resolved with dlsym).
const wave::WaveCodegenApi *wave_codegen_api(void);
}
