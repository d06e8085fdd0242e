// The generated host API (--header / --stub): for each kernel a C function
//   NAME_launch(wave_stream_t, <tensors as pointers>, <scalars>, <dynamic dims as int64_t>)
// that checks its arguments and the kernel's assumptions, computes the grid and launches
// through libwave_runtime; NAME_launch_tensors taking DLPack-compatible descriptors; and
// NAME_info() / NAME_info_for(arch) describing the kernel (per target: block, grid and shared
// memory may differ between targets). The stub embeds every code object (one per target, and
// the emulator image of each target) and the runtime picks the one matching the device at load
// time; when targets need different launch geometries the stub picks the geometry of the code
// object the runtime chose.
#pragma once

#include "codegen/kernel_abi.h"
#include "passes/distribution.h"

#include <string>
#include <vector>

namespace wave {

struct CodeObject {
  std::string target; // gfx942, sm_90, emu:gfx942, ... (the device arch it is picked for)
  std::string bytes;  // the image (HSACO, PTX text, cubin, emulator image)
  size_t variant = 0; // which of each HostKernel's `variants` it was compiled with
};

struct HostKernel {
  const ir::Kernel *kernel;
  const Distribution *dist;
  // Per compiled target, the kernel's distribution (block and grid may differ between targets,
  // e.g. wave64 and warp32); empty = every code object uses `dist`.
  std::vector<const Distribution *> variants = {};
  // Shared memory (LDS) bytes of the first target's code object, static and dynamic
  // (NAME_info).
  uint64_t sharedBytes = 0;
  // Per compiled target (parallel to `variants`), the dynamic shared memory its launches request
  // (the kernel's arena beyond the static limit); empty = none.
  std::vector<uint64_t> dynamicShared = {};
  // Per compiled target (parallel to `variants`), its shared memory bytes, static and dynamic
  // (NAME_info_for); empty = `sharedBytes` for every target.
  std::vector<uint64_t> variantShared = {};
  // Per compiled target (parallel to `variants`), the TMA tensor maps its launches build and
  // pass after the ABI's arguments (kernel_abi.h); empty = none.
  std::vector<std::vector<TensorMapArg>> tensorMaps = {};
  // Per compiled target (parallel to `variants`), the threads its launches add after the
  // distribution's block along axis 0 (a warp-specialized kernel's producer warpgroup); empty
  // = none.
  std::vector<uint32_t> producerThreads = {};
  // Per compiled target (parallel to `variants`), the workgroups per SM of a kernel with
  // persistent tiles: the launch clamps grid axis 0 to that times the device's SM count
  // (wave_device_info) and axes 1 and 2 to 1; empty or 0 = the grid as it is.
  std::vector<uint32_t> persistentPerSM = {};
};

struct HostApiOptions {
  std::string sourceName;  // the .wave file, for the banner
  std::string headerName;  // how the stub includes the header
  std::string guard;       // include guard
  std::vector<CodeObject> objects;
  // Load the code objects from these paths at run time instead of embedding them (one per
  // object, same order); empty = embed.
  std::vector<std::string> loadPaths;
};

std::string generateHeader(const std::vector<HostKernel> &kernels, const HostApiOptions &o);
std::string generateStub(const std::vector<HostKernel> &kernels, const HostApiOptions &o);

// The C expression for an index expression over the dynamic symbols (each a local int64_t of
// the same name); nullopt when it cannot be expressed.
std::optional<std::string> cExpr(const sym::IndexExpr &e);

} // namespace wave
