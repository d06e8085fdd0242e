// Loading the code generator library into the driver (see codegen_api.h for why it is loaded on
// demand). Compiled into wavec, not into the library.
#pragma once

#include "codegen/codegen_api.h"

#include <string>

namespace wave {

// Finds libwavec_codegen.so next to the wavec executable, then in ../lib; loads it once and
// returns its API, or null with `error` set (the path tried and dlerror's message).
const WaveCodegenApi *loadCodegenBackend(std::string &error);
// The library loadCodegenBackend would load (without loading it), or "" when there is none.
std::string codegenBackendPath();

} // namespace wave
