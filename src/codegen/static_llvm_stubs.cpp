// Definitions the static LLVM archives expect from the tool that links them, for the static
// build of libwavec_codegen.so (src/codegen/CMakeLists.txt, WAVEC_STATIC_LLVM).
//
// LLVM's LTO back end (pulled in by lld's ELF driver) names Polly's pass plugin, which Debian
// ships only as the loadable LLVMPolly.so. wavec never runs LTO, so the plugin is empty: no
// name, no callback.
#include "llvm/Passes/PassPlugin.h"

llvm::PassPluginLibraryInfo getPollyPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "", "", [](llvm::PassBuilder &) {}};
}

// lld's driver initializes every LLVM target for LTO. wavec links AMDGPU objects only and
// never runs LTO, so the other targets' initializers are empty here: the link then leaves
// their code generators (most of LLVM by size) out of the library.
#define WAVEC_NO_TARGET(T)                                                                         \
  extern "C" void LLVMInitialize##T##TargetInfo() {}                                              \
  extern "C" void LLVMInitialize##T##Target() {}                                                  \
  extern "C" void LLVMInitialize##T##TargetMC() {}                                                \
  extern "C" void LLVMInitialize##T##AsmPrinter() {}
#define WAVEC_NO_ASM_PARSER(T) extern "C" void LLVMInitialize##T##AsmParser() {}
#define WAVEC_NO_TARGET_AT_ALL(T) WAVEC_NO_TARGET(T) WAVEC_NO_ASM_PARSER(T)

WAVEC_NO_TARGET_AT_ALL(AArch64)
WAVEC_NO_TARGET_AT_ALL(ARM)
WAVEC_NO_TARGET_AT_ALL(AVR)
WAVEC_NO_TARGET_AT_ALL(BPF)
WAVEC_NO_TARGET_AT_ALL(Hexagon)
WAVEC_NO_TARGET_AT_ALL(Lanai)
WAVEC_NO_TARGET_AT_ALL(LoongArch)
WAVEC_NO_TARGET_AT_ALL(M68k)
WAVEC_NO_TARGET_AT_ALL(MSP430)
WAVEC_NO_TARGET_AT_ALL(Mips)
WAVEC_NO_TARGET_AT_ALL(PowerPC)
WAVEC_NO_TARGET_AT_ALL(RISCV)
WAVEC_NO_TARGET_AT_ALL(Sparc)
WAVEC_NO_TARGET_AT_ALL(SystemZ)
WAVEC_NO_TARGET_AT_ALL(VE)
WAVEC_NO_TARGET_AT_ALL(WebAssembly)
WAVEC_NO_TARGET_AT_ALL(X86) // (host code generation, e.g. a JIT, would need this line removed)
WAVEC_NO_TARGET(XCore)
WAVEC_NO_TARGET_AT_ALL(Xtensa)
