// libFuzzer harness for the front end: everything `wavec --check` does to a source text (the
// read-side checks of src/frontend/parser.cpp, the ANTLR lexer and parser, the AST builder,
// sema, the static size limits, the distribution and the unroll limit; src/driver/pipeline.cpp,
// compile()), then both diagnostic renderings. No file is read or written.
//
// Any input must end in a clean return: a crash, an ASan/UBSan report, an uncaught exception, a
// timeout or a runaway allocation is a finding. docs/reliability.md ("Front-end fuzzing") has the
// build, the committed corpus (tests/fuzz_frontend/corpus) and the long-run command.
#include "target/target_table.h"
#include "frontend/diagnostics.h"
#include "frontend/parser.h"
#include "frontend/source.h"
#include "passes/distribution.h"
#include "passes/size_limits.h"
#include "sema/sema.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace {

// The target is picked by the input (its length), so every target's rules are reached while a
// given input always takes the same path.
const char *const kTargets[] = {"gfx942", "sm_90", "gfx90a", "gfx1100", "sm_80", "sm_90a"};

} // namespace

// CLN's start-up allocation that it never frees (scripts/lsan.supp says more), so that the
// harness runs clean without LSAN_OPTIONS.
extern "C" const char *__lsan_default_suppressions() { return "leak:cln::xmalloc\n"; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace wave;
  SourceFile file("fuzz.wave", std::string(reinterpret_cast<const char *>(data), size));
  DiagnosticEngine diags;
  diags.setFile(&file);
  std::unique_ptr<ast::Module> module = parseModule(file, diags);
  if (!diags.hasErrors() && module) {
    SemaOptions options;
    options.target = findTarget(kTargets[size % (sizeof(kTargets) / sizeof(kTargets[0]))]);
    std::unique_ptr<Program> program = analyze(*module, options, diags);
    if (program && !diags.hasErrors()) {
      for (const auto &kernel : program->kernels) {
        Distribution dist;
        if (!checkStaticSizes(*kernel, diags) ||
            !distribute(*kernel, *program->target, diags, dist))
          continue;
        checkUnroll(*kernel, dist, diags);
      }
    }
  }
  // The renderers read every location the passes reported.
  (void)diags.render(false);
  (void)diags.renderJson();
  return 0;
}
