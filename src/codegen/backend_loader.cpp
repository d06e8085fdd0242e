#include "codegen/backend_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <vector>

namespace wave {

namespace {

std::string executableDir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0)
    return ".";
  std::string path(buf, static_cast<size_t>(n));
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::vector<std::string> candidatePaths() {
  const std::string dir = executableDir();
  return {dir + "/libwavec_codegen.so", dir + "/../lib/libwavec_codegen.so"};
}

} // namespace

std::string codegenBackendPath() {
  for (const auto &path : candidatePaths())
    if (::access(path.c_str(), F_OK) == 0)
      return path;
  return "";
}

const WaveCodegenApi *loadCodegenBackend(std::string &error) {
  static const WaveCodegenApi *api = nullptr;
  if (api)
    return api;
  const std::vector<std::string> candidates = candidatePaths();
  std::string tried;
  for (const auto &path : candidates) {
    if (::access(path.c_str(), F_OK) != 0) {
      tried += (tried.empty() ? "" : ", ") + path;
      continue;
    }
    // RTLD_NOW: a missing symbol is reported here, not as a crash in the middle of a compile.
    void *handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      error = ::dlerror();
      return nullptr;
    }
    using EntryFn = const WaveCodegenApi *(*)();
    auto entry = reinterpret_cast<EntryFn>(::dlsym(handle, "wave_codegen_api"));
    if (!entry) {
      error = path + " has no entry point wave_codegen_api";
      return nullptr;
    }
    const WaveCodegenApi *candidate = entry();
    if (!candidate || candidate->version != kWaveCodegenApiVersion) {
      error = path + " has API version " + std::to_string(candidate ? candidate->version : 0) +
              ", this wavec needs " + std::to_string(kWaveCodegenApiVersion);
      return nullptr;
    }
    api = candidate;
    return api;
  }
  error = "not found (tried " + tried + ")";
  return nullptr;
}

} // namespace wave
