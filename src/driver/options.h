// The command line of wavec, parsed into one struct (main.cpp fills it from the flag table
// flags.def).
#pragma once

#include "frontend/diagnostics.h"
#include "sema/sema.h"

#include <string>
#include <vector>

namespace wave {

// Default: the target's code object (HSACO on AMD, PTX on NVIDIA), or what -o's extension names.
// MLIR..Cubin and Emu are made by the code generator library (src/codegen/codegen_api.h);
// Metadata is a JSON description of the kernels from their ABI and distribution (no code
// generation).
enum class EmitKind {
  Default, AST, IR, Distribution, Metadata, MLIR, LLVM, Asm, HSACO, PTX, Cubin, Emu
};

struct DriverOptions {
  std::string input;
  std::string output;   // -o; "-" or empty = stdout for text dumps
  std::string target = "gfx942";    // the first of `targets`
  std::vector<std::string> targets; // every --target (repeated or comma-separated), in order
  std::vector<Define> defines;
  std::string kernel;   // --kernel
  bool check = false;   // --check: diagnose only
  EmitKind emit = EmitKind::Default;
  ColorMode color = ColorMode::Auto;
  DiagnosticFormat diagnosticsFormat = DiagnosticFormat::Text;
  bool werror = false;
  std::vector<std::pair<std::string, DiagnosticEngine::Override>> warningOverrides;
  unsigned errorLimit = 20;
  // Code generation.
  unsigned optLevel = 3;          // -O0..-O3
  unsigned codeObjectVersion = 5; // --code-object-version (AMD)
  bool debugNoBarriers = false;   // --debug-no-barriers (hidden)
  // The generated host API: a C header and a C stub embedding the code object.
  std::string header; // --header
  std::string stub;   // --stub
  // Make depfile (-MD, -MF, -MT, -MP).
  bool depfile = false;
  std::string depfilePath;
  std::vector<std::string> depTargets;
  bool depPhony = false;
  // Inspection.
  bool printAfterAll = false;
  std::vector<std::string> printAfter; // pass names (passes/pass_list.h)
  std::string dumpDir;
  bool timePasses = false;
  bool debugLines = false;        // -g: .wave line info in the native output
  // Compile cache: empty dir = none.
  std::string cacheDir;
};

// Runs the whole compilation (pipeline.cpp). Returns the process exit code: 0 success,
// 1 compile error. Diagnostics are printed to stderr.
int compile(const DriverOptions &options);

} // namespace wave
