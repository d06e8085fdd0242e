// Status names, the thread-local last-error message, and the shared dlopen helper.
//
// The message is thread-local so that a failure on one thread can never be reported (or
// overwritten) by another: generated stubs are called from many threads at once.
#include "internal.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>

namespace wave::rt {
namespace {
thread_local std::string lastError;
} // namespace

wave_status_t fail(wave_status_t status, std::string message) noexcept {
  // Called from catch handlers too, so it must not throw; the status still gets through.
  try {
    lastError = std::move(message);
  } catch (...) {
  }
  return status;
}

wave_status_t failf(wave_status_t status, const char *format, ...) {
  char buffer[2048];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof(buffer), format, args);
  va_end(args);
  return fail(status, buffer);
}

wave_status_t openDriverLibrary(const char *what, const char *const *names, size_t count,
                                const char *envOverride, void **handle) {
  // The override exists so a deployment can pin a driver outside the loader's path (and tests
  // can point at a library that does not exist).
  if (const char *path = std::getenv(envOverride); path && *path) {
    if ((*handle = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
      return WAVE_SUCCESS;
    const char *why = dlerror();
    return failf(WAVE_ERROR_DRIVER_NOT_FOUND, "%s: cannot load %s (from $%s): %s", what, path,
                 envOverride, why ? why : "unknown dlopen error");
  }
  // The first name is the canonical one; its dlopen error is the one worth reporting.
  std::string tried, firstWhy;
  for (size_t i = 0; i < count; ++i) {
    if ((*handle = dlopen(names[i], RTLD_NOW | RTLD_LOCAL)))
      return WAVE_SUCCESS;
    const char *why = dlerror();
    if (i == 0)
      firstWhy = why ? why : "unknown dlopen error";
    tried += (i ? ", " : "") + std::string(names[i]);
  }
  return failf(WAVE_ERROR_DRIVER_NOT_FOUND, "%s: driver library not found (tried %s): %s", what,
               tried.c_str(), firstWhy.c_str());
}

} // namespace wave::rt

extern "C" const char *wave_status_name(wave_status_t status) {
  switch (status) {
  case WAVE_SUCCESS:
    return "WAVE_SUCCESS";
  case WAVE_ERROR_INVALID_ARGUMENT:
    return "WAVE_ERROR_INVALID_ARGUMENT";
  case WAVE_ERROR_NO_DEVICE:
    return "WAVE_ERROR_NO_DEVICE";
  case WAVE_ERROR_DRIVER_NOT_FOUND:
    return "WAVE_ERROR_DRIVER_NOT_FOUND";
  case WAVE_ERROR_DRIVER:
    return "WAVE_ERROR_DRIVER";
  case WAVE_ERROR_OUT_OF_MEMORY:
    return "WAVE_ERROR_OUT_OF_MEMORY";
  case WAVE_ERROR_INVALID_IMAGE:
    return "WAVE_ERROR_INVALID_IMAGE";
  case WAVE_ERROR_NOT_FOUND:
    return "WAVE_ERROR_NOT_FOUND";
  case WAVE_ERROR_UNSUPPORTED_SHAPE:
    return "WAVE_ERROR_UNSUPPORTED_SHAPE";
  case WAVE_ERROR_LAUNCH:
    return "WAVE_ERROR_LAUNCH";
  case WAVE_ERROR_UNSUPPORTED:
    return "WAVE_ERROR_UNSUPPORTED";
  case WAVE_ERROR_STEP_LIMIT:
    return "WAVE_ERROR_STEP_LIMIT";
  }
  return "WAVE_ERROR_<unknown>";
}

extern "C" const char *wave_last_error(void) { return wave::rt::lastError.c_str(); }
