// The compiler's passes, in pipeline order: the one table that `wavec --list-passes` prints and
// that --print-ir-after=NAME, --print-ir-after-all, --dump-dir and --time-passes name.
//
// A pass runs on one of two sides. The driver's passes (parse .. legalize) run in wavec itself;
// the code generator's passes (promotion .. asm) run in libwavec_codegen.so, which the driver
// loads only when code is asked for (codegen/codegen_api.h), because they need its access model
// or LLVM. Each side binds the names of its passes to their `run` and `print` functions
// (driver/pipeline.cpp; codegen/mlir_emitter.cpp and codegen/lowering.cpp); this table is the
// order and the description both sides share. docs/internals.md has a paragraph per pass.
#pragma once

#include <string>
#include <vector>

namespace wave {

enum class PassSide { Driver, CodeGenerator };

struct PassInfo {
  const char *name;    // as --print-ir-after names it
  PassSide side;
  const char *dumpExt; // the extension of its --dump-dir file
  const char *reads;   // one line each for --list-passes: what it reads,
  const char *decides; // and what it decides or writes
};

// Every pass, in the order they run.
const std::vector<PassInfo> &passList();
// The pass called `name`; null when there is none.
const PassInfo *findPass(const std::string &name);
// Its position in passList() (the N of --dump-dir's STEM.N-NAME.EXT); -1 when unknown.
int passIndex(const std::string &name);
// The text of --list-passes.
std::string listPassesText();

} // namespace wave
