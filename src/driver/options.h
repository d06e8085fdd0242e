// The command line of wavec, parsed into one struct (main.cpp fills it with CLI11).
#pragma once

#include "frontend/diagnostics.h"
#include "sema/sema.h"

#include <string>
#include <vector>

namespace wave {

// Default: the target's code object (HSACO on AMD, PTX on NVIDIA), or what -o's extension names.
// MLIR..Cubin are made by the code generator library (src/codegen/codegen_api.h).
enum class EmitKind { Default, AST, IR, Distribution, MLIR, LLVM, Asm, HSACO, PTX, Cubin };

struct DriverOptions {
  std::string input;
  std::string output;   // -o; "-" or empty = stdout for text dumps
  std::string target = "gfx942";
  std::vector<Define> defines;
  std::string kernel;   // --kernel
  bool check = false;   // --check: diagnose only
  EmitKind emit = EmitKind::Default;
  ColorMode color = ColorMode::Auto;
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
};

// Runs the whole compilation (pipeline.cpp). Returns the process exit code: 0 success,
// 1 compile error. Diagnostics are printed to stderr.
int compile(const DriverOptions &options);

} // namespace wave
