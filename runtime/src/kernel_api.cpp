// The helpers that wavec's generated host stubs call besides the runtime API proper
// (wave/kernel_api.h): code-object selection with a launch-path cache, the printf-style error
// setter, and the tensor-layout check.
//
// wave_select_kernel runs on every launch, so it must not hash a code object each time (which
// wave_module_load_data does to find its module): it keeps its own map from (device, code-object
// table entry, kernel name) to the kernel handle. Stubs embed their tables as static data, so
// the table's addresses identify it for the life of the process.
#include "wave/kernel_api.h"
#include "internal.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#define WAVE_EXPORT __attribute__((visibility("default")))

using namespace wave::rt;

namespace {

using SelectionKey = std::tuple<wave_device_t, const wave_code_object_t *, std::string>;

std::mutex selectionMutex;
std::map<SelectionKey, wave_kernel_t> &selections() {
  // Leaked like the device registry; entries go when their device does (forgetSelections).
  static auto *map = new std::map<SelectionKey, wave_kernel_t>();
  return *map;
}

/// "sm_90a" -> 90 and true for the arch-specific flavour; -1 when `arch` is not sm_NN[a].
int smVersion(const char *arch, bool *specific) {
  int version = 0;
  char suffix = 0;
  if (std::sscanf(arch, "sm_%d%c", &version, &suffix) < 1)
    return -1;
  *specific = suffix == 'a';
  return version;
}

} // namespace

const wave_code_object_t *
wave::rt::pickCodeObject(const char *arch, const wave_code_object_t *objects, size_t count) {
  for (size_t i = 0; i < count; ++i)
    if (objects[i].arch && std::strcmp(objects[i].arch, arch) == 0)
      return &objects[i];
  bool deviceSpecific = false;
  int device = smVersion(arch, &deviceSpecific);
  if (device < 0)
    return nullptr;
  const wave_code_object_t *best = nullptr;
  int bestVersion = -1;
  for (size_t i = 0; i < count; ++i) {
    bool specific = false;
    int version = objects[i].arch ? smVersion(objects[i].arch, &specific) : -1;
    if (version < 0)
      continue;
    if (specific && version == device)
      return &objects[i];
    CudaImageKind kind;
    bool ptx = objects[i].image &&
               validateCudaImage(objects[i].image, objects[i].size, &kind) == WAVE_SUCCESS &&
               kind == CudaImageKind::Ptx;
    if (!specific && ptx && version < device && version > bestVersion) {
      best = &objects[i];
      bestVersion = version;
    }
  }
  return best;
}

namespace {

wave_status_t noMatch(const char *kernel, const char *arch, const wave_code_object_t *objects,
                      size_t count) {
  std::string offered;
  for (size_t i = 0; i < count; ++i)
    offered += (i ? " " : "") + std::string(objects[i].arch ? objects[i].arch : "?");
  return failf(WAVE_ERROR_NOT_FOUND, "%s: no code object for the device's arch %s (built for: %s)",
               kernel, arch, offered.empty() ? "nothing" : offered.c_str());
}

wave_status_t loadObject(wave_device_t device, const wave_code_object_t &object,
                         wave_module_t *module) {
  if (object.image)
    return wave_module_load_data(device, object.image, object.size, module);
  if (object.path)
    return wave_module_load_file(device, object.path, module);
  return failf(WAVE_ERROR_INVALID_ARGUMENT, "code object for %s has neither bytes nor a path",
               object.arch ? object.arch : "?");
}

} // namespace

void wave::rt::forgetSelections(wave_device_t device) {
  std::lock_guard<std::mutex> lock(selectionMutex);
  auto &map = selections();
  for (auto it = map.begin(); it != map.end();)
    it = std::get<0>(it->first) == device ? map.erase(it) : std::next(it);
}

extern "C" WAVE_EXPORT wave_status_t wave_select_kernel(wave_stream_t stream,
                                                        const wave_code_object_t *objects,
                                                        size_t count, const char *kernel_name,
                                                        wave_device_t *device,
                                                        wave_kernel_t *kernel) {
  size_t index = 0;
  return wave_select_kernel_index(stream, objects, count, kernel_name, device, kernel, &index);
}

extern "C" WAVE_EXPORT wave_status_t wave_select_kernel_index(
    wave_stream_t stream, const wave_code_object_t *objects, size_t count,
    const char *kernel_name, wave_device_t *device, wave_kernel_t *kernel, size_t *index) {
  try {
    if (!device || !kernel || !index)
      return failf(WAVE_ERROR_INVALID_ARGUMENT, "wave_select_kernel: NULL output pointer");
    *device = nullptr;
    *kernel = nullptr;
    if (!kernel_name || (!objects && count))
      return failf(WAVE_ERROR_INVALID_ARGUMENT, "wave_select_kernel: NULL kernel name or table");
    if (wave_status_t s = wave_stream_device(stream, device))
      return s;
    wave_device_info_t info;
    if (wave_status_t s = wave_device_info(*device, &info))
      return s;
    const wave_code_object_t *object = pickCodeObject(info.arch, objects, count);
    // `auto` without a GPU driver opened emu:gfx942; an artifact built for other targets runs on
    // the emulator of the first of them it carries an emulator image for.
    wave_device_t target = *device;
    if (!object && info.vendor == WAVE_VENDOR_EMULATOR && isAutoEmulator(*device)) {
      for (size_t i = 0; i < count && !object; ++i)
        if (objects[i].arch && std::strncmp(objects[i].arch, "emu:", 4) == 0 &&
            emuOrdinal(objects[i].arch + 4) >= 0)
          object = &objects[i];
      if (object)
        if (wave_status_t s = openEmulatorForAuto(object->arch + 4, &target))
          return s;
    }
    if (!object)
      return noMatch(kernel_name, info.arch, objects, count);
    *index = size_t(object - objects);

    // Held across the load so concurrent first launches load once.
    std::lock_guard<std::mutex> lock(selectionMutex);
    SelectionKey key(*device, object, kernel_name);
    if (auto it = selections().find(key); it != selections().end()) {
      *kernel = it->second;
      *device = kernelDevice(*kernel);
      return WAVE_SUCCESS;
    }
    const char *arch = target != *device && object->arch ? object->arch : info.arch;
    wave_module_t module = nullptr;
    if (wave_status_t s = loadObject(target, *object, &module))
      return fail(s, std::string(kernel_name) + " (" + arch + "): " + wave_last_error());
    if (wave_status_t s = wave_module_get_kernel(module, kernel_name, kernel))
      return s;
    selections()[key] = *kernel;
    *device = target;
    return WAVE_SUCCESS;
  } catch (const std::bad_alloc &) {
    return fail(WAVE_ERROR_OUT_OF_MEMORY, "wave_select_kernel: out of host memory");
  } catch (...) {
    return fail(WAVE_ERROR_DRIVER, "wave_select_kernel: internal error");
  }
}

extern "C" WAVE_EXPORT wave_status_t wave_fail(wave_status_t status, const char *format, ...) {
  char buffer[2048];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof(buffer), format ? format : "", args);
  va_end(args);
  try {
    return fail(status, buffer);
  } catch (...) {
    return status;
  }
}

extern "C" WAVE_EXPORT bool wave_tensor_is_compact(const wave_tensor_t *tensor) {
  if (!tensor || !tensor->strides || tensor->ndim <= 0)
    return true;
  if (!tensor->shape)
    return false;
  // A tensor without elements addresses nothing: any strides will do (torch gives a [3, 0]
  // tensor the strides [1, 1]).
  for (int32_t i = 0; i < tensor->ndim; ++i)
    if (tensor->shape[i] == 0)
      return true;
  int64_t expected = 1;
  for (int32_t i = tensor->ndim - 1; i >= 0; --i) {
    // A dimension of extent 1 is never stepped over, so frameworks leave any stride there.
    if (tensor->shape[i] != 1 && tensor->strides[i] != expected)
      return false;
    expected *= tensor->shape[i];
  }
  return true;
}
