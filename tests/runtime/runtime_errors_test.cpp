// libwave_runtime without a GPU: every failure path that CI (no GPU, no vendor driver) can reach
// returns the right status with a useful, thread-local message, and never crashes or exits.
#include "internal.h"
#include "wave/runtime.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

extern "C" int wave_runtime_header_c99_check(void);

namespace {

using wave::rt::CudaImageKind;

std::string lastError() { return wave_last_error(); }

bool contains(const std::string &text, const char *part) {
  return text.find(part) != std::string::npos;
}

/// The status of opening `uri`, checking that a failure leaves the handle NULL.
wave_status_t openStatus(const char *uri) {
  wave_device_t device = reinterpret_cast<wave_device_t>(0x1);
  wave_status_t s = wave_device_open(uri, &device);
  if (s == WAVE_SUCCESS)
    wave_device_close(device);
  else
    EXPECT_EQ(device, nullptr) << uri;
  return s;
}

/// A 64-byte ELF64 little-endian header with the given e_machine.
std::vector<unsigned char> elfHeader(uint16_t machine, unsigned char elfClass = 2) {
  std::vector<unsigned char> bytes(64, 0);
  bytes[0] = 0x7f;
  bytes[1] = 'E';
  bytes[2] = 'L';
  bytes[3] = 'F';
  bytes[4] = elfClass;
  bytes[5] = 1; // little-endian
  bytes[6] = 1; // EV_CURRENT
  bytes[18] = machine & 0xff;
  bytes[19] = machine >> 8;
  return bytes;
}

TEST(RuntimeHeader, CompilesAsC99AndWorksFromC) {
  EXPECT_EQ(wave_runtime_header_c99_check(), 0) << lastError();
}

TEST(RuntimeStatus, EveryValueHasAName) {
  std::set<std::string> names;
  for (int v = WAVE_SUCCESS; v <= WAVE_ERROR_STEP_LIMIT; ++v) {
    std::string name = wave_status_name(static_cast<wave_status_t>(v));
    EXPECT_EQ(name.rfind("WAVE_", 0), 0u) << v;
    EXPECT_FALSE(contains(name, "unknown")) << v;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), size_t(WAVE_ERROR_STEP_LIMIT) + 1);
  EXPECT_STREQ(wave_status_name(WAVE_ERROR_UNSUPPORTED_SHAPE), "WAVE_ERROR_UNSUPPORTED_SHAPE");
  EXPECT_STREQ(wave_status_name(static_cast<wave_status_t>(1000)), "WAVE_ERROR_<unknown>");
}

TEST(RuntimeStatus, LastErrorIsThreadLocal) {
  ASSERT_EQ(openStatus("foo://0"), WAVE_ERROR_INVALID_ARGUMENT);
  std::string mine = lastError();
  ASSERT_TRUE(contains(mine, "foo://0")) << mine;

  std::string seenInThread = "unset", afterFailureInThread;
  std::thread other([&] {
    seenInThread = lastError(); // a fresh thread has no error yet
    openStatus("emu:gfx0");
    afterFailureInThread = lastError();
  });
  other.join();
  EXPECT_EQ(seenInThread, "");
  EXPECT_TRUE(contains(afterFailureInThread, "emu:gfx0")) << afterFailureInThread;
  EXPECT_EQ(lastError(), mine); // the other thread's failure did not touch ours
}

TEST(RuntimeDevice, EmulatorDevicesOpenPerTarget) {
  struct Want {
    const char *uri, *arch;
    uint32_t warp;
  };
  for (Want w : {Want{"emu", "emu:gfx942", 64}, Want{"emu:gfx942", "emu:gfx942", 64},
                 Want{"emu:gfx90a", "emu:gfx90a", 64}, Want{"emu:gfx1100", "emu:gfx1100", 32},
                 Want{"emu:sm_80", "emu:sm_80", 32}, Want{"emu:sm_90", "emu:sm_90", 32},
                 Want{"emu:sm_90a", "emu:sm_90a", 32}}) {
    wave_device_t dev = nullptr;
    ASSERT_EQ(wave_device_open(w.uri, &dev), WAVE_SUCCESS) << w.uri << ": " << lastError();
    wave_device_info_t info;
    ASSERT_EQ(wave_device_info(dev, &info), WAVE_SUCCESS);
    EXPECT_EQ(info.vendor, WAVE_VENDOR_EMULATOR);
    EXPECT_STREQ(info.arch, w.arch);
    EXPECT_STREQ(info.backend, "emu");
    EXPECT_EQ(info.warp_size, w.warp);
    EXPECT_EQ(wave_device_close(dev), WAVE_SUCCESS);
  }
  wave_device_t a = nullptr, b = nullptr;
  ASSERT_EQ(wave_device_open("emu", &a), WAVE_SUCCESS);
  ASSERT_EQ(wave_device_open("emu:gfx942", &b), WAVE_SUCCESS);
  EXPECT_EQ(a, b); // one device, one module cache
  wave_device_close(a);
  wave_device_close(b);
  for (const char *uri : {"emu:", "emu:gfx0", "emu:sm_100a", "emu:GFX942"}) {
    EXPECT_EQ(openStatus(uri), WAVE_ERROR_INVALID_ARGUMENT) << uri;
    EXPECT_TRUE(contains(lastError(), "emu:gfx942")) << lastError();
  }
}

TEST(RuntimeDevice, BadUrisAreInvalidArguments) {
  for (const char *uri : {"cuda://x", "cuda://", "cuda://-1", "cuda://1x", "cuda:/0", "hip://",
                          "hip://0.5", "foo://0", "", "CUDA://0", "cuda://1234567890"}) {
    EXPECT_EQ(openStatus(uri), WAVE_ERROR_INVALID_ARGUMENT) << uri;
    EXPECT_TRUE(contains(lastError(), "URI")) << uri << ": " << lastError();
  }
  EXPECT_EQ(openStatus(nullptr), WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "`uri` is NULL")) << lastError();
}

TEST(RuntimeDevice, NullOutPointerIsRejected) {
  EXPECT_EQ(wave_device_open("cuda://0", nullptr), WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "`out` is NULL")) << lastError();
}

// Without the vendor driver (CI, this machine) the open fails naming the library; with it, the
// device either opens or does not exist.
void expectDriverOutcome(const char *uri, const char *library) {
  wave_status_t s = openStatus(uri);
  if (s == WAVE_SUCCESS)
    return;
  if (s == WAVE_ERROR_DRIVER_NOT_FOUND) {
    EXPECT_TRUE(contains(lastError(), library)) << lastError();
    return;
  }
  EXPECT_EQ(s, WAVE_ERROR_NO_DEVICE) << wave_status_name(s) << ": " << lastError();
}

TEST(RuntimeDevice, CudaWithoutDriver) { expectDriverOutcome("cuda://0", "libcuda.so.1"); }

TEST(RuntimeDevice, HipWithoutDriver) { expectDriverOutcome("hip://0", "libamdhip64.so"); }

TEST(RuntimeDevice, AutoFallsBackToTheEmulatorWithoutAnyDriver) {
  // With both driver libraries pointed at nothing, `auto` finds no driver and opens emu:gfx942.
  setenv("WAVE_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
  setenv("WAVE_HIP_LIBRARY", "/nonexistent/libamdhip64.so", 1);
  wave_device_t dev = nullptr;
  wave_status_t s = wave_device_open("auto", &dev);
  unsetenv("WAVE_CUDA_LIBRARY");
  unsetenv("WAVE_HIP_LIBRARY");
  if (s == WAVE_SUCCESS) {
    wave_device_info_t info;
    ASSERT_EQ(wave_device_info(dev, &info), WAVE_SUCCESS);
    if (info.vendor != WAVE_VENDOR_EMULATOR) {
      wave_device_close(dev);
      GTEST_SKIP() << "a driver was already loaded by an earlier test; `auto` opened a GPU";
    }
    EXPECT_STREQ(info.arch, "emu:gfx942");
    wave_device_close(dev);
    return;
  }
  FAIL() << wave_status_name(s) << ": " << lastError();
}

TEST(RuntimeDevice, LibraryOverrideNamesThePath) {
  setenv("WAVE_HIP_LIBRARY", "/nonexistent/libamdhip64.so", 1);
  wave_status_t s = openStatus("hip://0");
  unsetenv("WAVE_HIP_LIBRARY");
  if (s == WAVE_SUCCESS)
    GTEST_SKIP() << "the HIP runtime was already loaded in this process";
  EXPECT_EQ(s, WAVE_ERROR_DRIVER_NOT_FOUND);
  EXPECT_TRUE(contains(lastError(), "/nonexistent/libamdhip64.so")) << lastError();
  EXPECT_TRUE(contains(lastError(), "WAVE_HIP_LIBRARY")) << lastError();
}

TEST(RuntimeApi, NullHandlesAreRejected) {
  void *ptr = nullptr;
  wave_device_info_t info;
  wave_module_t module = nullptr;
  wave_kernel_t kernel = nullptr;
  wave_stream_t stream = nullptr;
  wave_device_t device = nullptr;
  const uint32_t dims[3] = {1, 1, 1};
  const unsigned char image[] = {0};
  EXPECT_EQ(wave_device_close(nullptr), WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wave_device_info(nullptr, &info), WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wave_device_synchronize(nullptr), WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wave_malloc(nullptr, 16, &ptr), WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wave_malloc(nullptr, 16, nullptr), WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wave_free(nullptr, nullptr), WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wave_memcpy_htod(nullptr, nullptr, nullptr, 4), WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wave_memcpy_dtoh(nullptr, nullptr, nullptr, 4), WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wave_memcpy_dtod(nullptr, nullptr, nullptr, 4), WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wave_memset(nullptr, nullptr, 0, 4), WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wave_stream_create(nullptr, &stream), WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wave_stream_destroy(nullptr), WAVE_ERROR_INVALID_ARGUMENT);
  // A NULL stream is the default device's (`auto`, WAVE_DEVICE honoured); a WAVE_DEVICE that
  // names no device makes it fail with a message naming the variable.
  const char *saved = std::getenv("WAVE_DEVICE");
  std::string savedValue = saved ? saved : "";
  setenv("WAVE_DEVICE", "bogus://1", 1);
  EXPECT_EQ(wave_stream_synchronize(nullptr), WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "WAVE_DEVICE=bogus://1")) << lastError();
  EXPECT_EQ(wave_stream_device(nullptr, &device), WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "default device")) << lastError();
  if (saved)
    setenv("WAVE_DEVICE", savedValue.c_str(), 1);
  else
    unsetenv("WAVE_DEVICE");
  EXPECT_EQ(wave_stream_wrap(nullptr, nullptr, &stream), WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wave_event_create(nullptr, nullptr), WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wave_event_destroy(nullptr), WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wave_event_record(nullptr, nullptr), WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wave_event_synchronize(nullptr), WAVE_ERROR_INVALID_ARGUMENT);
  float ms = 1.0f;
  EXPECT_EQ(wave_event_elapsed_ms(nullptr, nullptr, &ms), WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wave_module_load_data(nullptr, image, 1, &module), WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wave_module_load_file(nullptr, "x.hsaco", &module), WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wave_module_unload(nullptr), WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wave_module_get_kernel(nullptr, "k", &kernel), WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wave_launch(nullptr, nullptr, nullptr, dims, dims, 0, nullptr, 0),
            WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "`device` is NULL")) << lastError();
  EXPECT_EQ(wave_kernel_name(nullptr), nullptr);
}

TEST(RuntimeLaunch, ShapeLimitsAreCheckedBeforeTheDriver) {
  using wave::rt::checkLaunchShape;
  struct Case {
    uint32_t grid[3], block[3];
    const char *needle;
  } bad[] = {
      {{0, 1, 1}, {64, 1, 1}, "empty launch"},
      {{1, 1, 1}, {64, 0, 1}, "empty launch"},
      {{1, 1, 1}, {2048, 1, 1}, "block.x = 2048 exceeds 1024"},
      {{1, 1, 1}, {32, 32, 2}, "has 2048 threads"},
      {{1, 1, 1}, {1, 1, 128}, "block.z = 128 exceeds 64"},
      {{1, 65536, 1}, {64, 1, 1}, "grid.y = 65536 exceeds 65535"},
      {{1, 1, 65536}, {64, 1, 1}, "grid.z = 65536 exceeds 65535"},
      {{0x80000000u, 1, 1}, {1, 1, 1}, "grid.x"},
      {{0x7fffffffu, 1, 1}, {4, 1, 1}, "exceeds 2^32 - 1"},
  };
  for (const Case &c : bad) {
    EXPECT_EQ(checkLaunchShape("k", c.grid, c.block), WAVE_ERROR_INVALID_ARGUMENT) << c.needle;
    EXPECT_TRUE(contains(lastError(), c.needle)) << lastError();
    EXPECT_TRUE(contains(lastError(), "wave_launch(k)")) << lastError();
  }
  const uint32_t grid[3] = {65536, 65535, 65535}, block[3] = {256, 2, 2};
  EXPECT_EQ(checkLaunchShape("k", grid, block), WAVE_SUCCESS) << lastError();
}

TEST(RuntimeImage, HipValidatorAcceptsAmdgpuElfAndBundles) {
  auto amd = elfHeader(224);
  EXPECT_EQ(wave::rt::validateHipImage(amd.data(), amd.size()), WAVE_SUCCESS) << lastError();
  std::string bundle = "__CLANG_OFFLOAD_BUNDLE__\x02\0\0\0";
  EXPECT_EQ(wave::rt::validateHipImage(bundle.data(), bundle.size()), WAVE_SUCCESS);
}

TEST(RuntimeImage, HipValidatorRejectsOtherBytes) {
  auto cuda = elfHeader(190);
  EXPECT_EQ(wave::rt::validateHipImage(cuda.data(), cuda.size()), WAVE_ERROR_INVALID_IMAGE);
  EXPECT_TRUE(contains(lastError(), "e_machine is 190 (EM_CUDA), expected 224 (EM_AMDGPU)"))
      << lastError();

  const char garbage[] = "GARBAGE BYTES, NOT A CODE OBJECT";
  EXPECT_EQ(wave::rt::validateHipImage(garbage, sizeof(garbage)), WAVE_ERROR_INVALID_IMAGE);
  EXPECT_TRUE(contains(lastError(), "no ELF magic; first bytes 47 41 52 42")) << lastError();

  auto truncated = elfHeader(224);
  truncated.resize(20);
  EXPECT_EQ(wave::rt::validateHipImage(truncated.data(), truncated.size()),
            WAVE_ERROR_INVALID_IMAGE);
  EXPECT_TRUE(contains(lastError(), "truncated")) << lastError();

  auto elf32 = elfHeader(224, /*elfClass=*/1);
  EXPECT_EQ(wave::rt::validateHipImage(elf32.data(), elf32.size()), WAVE_ERROR_INVALID_IMAGE);
  EXPECT_TRUE(contains(lastError(), "64-bit")) << lastError();

  EXPECT_EQ(wave::rt::validateHipImage(garbage, 0), WAVE_ERROR_INVALID_IMAGE);
  EXPECT_TRUE(contains(lastError(), "empty")) << lastError();
}

TEST(RuntimeImage, CudaValidatorRecognisesEachFormat) {
  CudaImageKind kind;
  const char ptx[] = "\n  //\n// Generated by wavec\n.version 7.8\n.target sm_90\n";
  EXPECT_EQ(wave::rt::validateCudaImage(ptx, sizeof(ptx) - 1, &kind), WAVE_SUCCESS);
  EXPECT_EQ(kind, CudaImageKind::Ptx);
  const char ptx2[] = ".version 8.0\n";
  EXPECT_EQ(wave::rt::validateCudaImage(ptx2, sizeof(ptx2), &kind), WAVE_SUCCESS);
  EXPECT_EQ(kind, CudaImageKind::Ptx);

  auto cubin = elfHeader(190);
  EXPECT_EQ(wave::rt::validateCudaImage(cubin.data(), cubin.size(), &kind), WAVE_SUCCESS);
  EXPECT_EQ(kind, CudaImageKind::Cubin);

  const unsigned char fatbin[] = {0x50, 0xed, 0x55, 0xba, 0x01, 0x00, 0x10, 0x00};
  EXPECT_EQ(wave::rt::validateCudaImage(fatbin, sizeof(fatbin), &kind), WAVE_SUCCESS);
  EXPECT_EQ(kind, CudaImageKind::Fatbin);
}

TEST(RuntimeImage, CudaValidatorRejectsOtherBytes) {
  CudaImageKind kind;
  auto amd = elfHeader(224);
  EXPECT_EQ(wave::rt::validateCudaImage(amd.data(), amd.size(), &kind), WAVE_ERROR_INVALID_IMAGE);
  EXPECT_TRUE(contains(lastError(), "e_machine is 224 (EM_AMDGPU), expected 190 (EM_CUDA)"))
      << lastError();
  const char garbage[] = "\x01\x02garbage";
  EXPECT_EQ(wave::rt::validateCudaImage(garbage, sizeof(garbage), &kind), WAVE_ERROR_INVALID_IMAGE);
  EXPECT_TRUE(contains(lastError(), "neither PTX text, an ELF cubin nor a fatbin")) << lastError();
  const char text[] = "__global__ void k() {}";
  EXPECT_EQ(wave::rt::validateCudaImage(text, sizeof(text), &kind), WAVE_ERROR_INVALID_IMAGE);
}

TEST(RuntimeImage, CacheKeyAndArchHelpers) {
  const char a[] = "abc", b[] = "abd";
  EXPECT_EQ(wave::rt::hashImage(a, 3), wave::rt::hashImage(a, 3));
  EXPECT_NE(wave::rt::hashImage(a, 3), wave::rt::hashImage(b, 3));
  EXPECT_NE(wave::rt::hashImage(a, 2), wave::rt::hashImage(a, 3));
  EXPECT_EQ(wave::rt::stripTargetFeatures("gfx942:sramecc+:xnack-"), "gfx942");
  EXPECT_EQ(wave::rt::stripTargetFeatures("gfx90a"), "gfx90a");
}

} // namespace

// ---- the generated stubs' helpers (wave/kernel_api.h) -------------------------------------------

namespace {

TEST(RuntimeKernelApi, FailSetsTheMessageAndReturnsTheStatus) {
  EXPECT_EQ(wave_fail(WAVE_ERROR_UNSUPPORTED_SHAPE, "copy_launch: N = %d is not a multiple of %d",
                      1021, 64),
            WAVE_ERROR_UNSUPPORTED_SHAPE);
  EXPECT_EQ(lastError(), "copy_launch: N = 1021 is not a multiple of 64");
}

TEST(RuntimeKernelApi, TensorCompactness) {
  int64_t shape[3] = {4, 1, 8};
  int64_t compact[3] = {8, 8, 1}, anyUnitStride[3] = {8, 999, 1}, transposed[3] = {1, 8, 4};
  wave_tensor_t t{};
  t.ndim = 3;
  t.shape = shape;
  EXPECT_TRUE(wave_tensor_is_compact(&t)); // NULL strides
  t.strides = compact;
  EXPECT_TRUE(wave_tensor_is_compact(&t));
  t.strides = anyUnitStride;
  EXPECT_TRUE(wave_tensor_is_compact(&t));
  t.strides = transposed;
  EXPECT_FALSE(wave_tensor_is_compact(&t));
  // Without elements nothing is addressed: torch's [3, 0] tensor has strides [1, 1].
  int64_t empty[2] = {3, 0}, torchEmpty[2] = {1, 1};
  t.ndim = 2;
  t.shape = empty;
  t.strides = torchEmpty;
  EXPECT_TRUE(wave_tensor_is_compact(&t));
  empty[1] = 2;
  EXPECT_FALSE(wave_tensor_is_compact(&t)); // [3, 2] with strides [1, 1] overlaps
}

TEST(RuntimeKernelApi, SelectKernelOnTheNullStreamUsesTheDefaultDevice) {
  // The default device is `auto`, here WAVE_DEVICE; an explicitly chosen emulator is never
  // replaced by another, so a table without its arch is a located NOT_FOUND.
  setenv("WAVE_DEVICE", "emu:sm_90", 1);
  wave_device_t device = nullptr;
  wave_kernel_t kernel = nullptr;
  wave_code_object_t objects[1] = {{"sm_90", nullptr, 0, "k.ptx"}};
  EXPECT_EQ(wave_select_kernel(nullptr, objects, 1, "k", &device, &kernel), WAVE_ERROR_NOT_FOUND);
  EXPECT_TRUE(contains(lastError(), "no code object for the device's arch emu:sm_90"))
      << lastError();
  EXPECT_EQ(wave_select_kernel(nullptr, objects, 1, "k", nullptr, &kernel),
            WAVE_ERROR_INVALID_ARGUMENT);
  unsetenv("WAVE_DEVICE");
}

TEST(RuntimeStream, WrappedStreamsAndEventsOnTheEmulator) {
  wave_device_t dev = nullptr;
  ASSERT_EQ(wave_device_open("emu:gfx90a", &dev), WAVE_SUCCESS);
  wave_stream_t wrapped = nullptr;
  int token = 0;
  ASSERT_EQ(wave_stream_wrap(dev, &token, &wrapped), WAVE_SUCCESS);
  wave_device_t owner = nullptr;
  ASSERT_EQ(wave_stream_device(wrapped, &owner), WAVE_SUCCESS);
  EXPECT_EQ(owner, dev);
  EXPECT_EQ(wave_stream_synchronize(wrapped), WAVE_SUCCESS);
  wave_event_t start = nullptr, end = nullptr;
  ASSERT_EQ(wave_event_create(dev, &start), WAVE_SUCCESS);
  ASSERT_EQ(wave_event_create(dev, &end), WAVE_SUCCESS);
  float ms = -1.0f;
  EXPECT_EQ(wave_event_elapsed_ms(start, end, &ms), WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "never recorded")) << lastError();
  ASSERT_EQ(wave_event_record(start, wrapped), WAVE_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(wave_event_record(end, nullptr), WAVE_SUCCESS);
  ASSERT_EQ(wave_event_synchronize(end), WAVE_SUCCESS);
  ASSERT_EQ(wave_event_elapsed_ms(start, end, &ms), WAVE_SUCCESS);
  EXPECT_GE(ms, 15.0f);
  EXPECT_LT(ms, 10000.0f);
  // An event of one device and a stream of another do not mix.
  wave_device_t other = nullptr;
  ASSERT_EQ(wave_device_open("emu:sm_80", &other), WAVE_SUCCESS);
  wave_stream_t foreign = nullptr;
  ASSERT_EQ(wave_stream_wrap(other, nullptr, &foreign), WAVE_SUCCESS);
  EXPECT_EQ(wave_event_record(start, foreign), WAVE_ERROR_INVALID_ARGUMENT);
  wave_event_t otherEvent = nullptr;
  ASSERT_EQ(wave_event_create(other, &otherEvent), WAVE_SUCCESS);
  EXPECT_EQ(wave_event_elapsed_ms(start, otherEvent, &ms), WAVE_ERROR_INVALID_ARGUMENT);
  // Emulator memory is one heap: a buffer of one emulated device is valid on another, but only
  // its own device frees it.
  void *buffer = nullptr;
  ASSERT_EQ(wave_malloc(dev, 64, &buffer), WAVE_SUCCESS);
  EXPECT_EQ(wave_memset(other, buffer, 0, 64), WAVE_SUCCESS);
  EXPECT_EQ(wave_free(other, buffer), WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wave_free(dev, buffer), WAVE_SUCCESS);
  EXPECT_EQ(wave_event_destroy(otherEvent), WAVE_SUCCESS);
  EXPECT_EQ(wave_event_destroy(start), WAVE_SUCCESS);
  EXPECT_EQ(wave_event_destroy(end), WAVE_SUCCESS);
  EXPECT_EQ(wave_stream_destroy(foreign), WAVE_SUCCESS);
  EXPECT_EQ(wave_stream_destroy(wrapped), WAVE_SUCCESS);
  EXPECT_EQ(wave_device_close(other), WAVE_SUCCESS);
  EXPECT_EQ(wave_device_close(dev), WAVE_SUCCESS);
}

TEST(RuntimeKernelApi, CodeObjectChoice) {
  static const unsigned char ptx[] = ".version 7.0\n";
  static const unsigned char cubin[] = {0x7f, 'E', 'L', 'F'};
  wave_code_object_t objects[] = {
      {"gfx942", cubin, sizeof(cubin), nullptr}, {"gfx90a", cubin, sizeof(cubin), nullptr},
      {"sm_80", cubin, sizeof(cubin), nullptr},  {"sm_75", ptx, sizeof(ptx), nullptr},
      {"sm_80a", ptx, sizeof(ptx), nullptr},     {"sm_90a", cubin, sizeof(cubin), nullptr}};
  using wave::rt::pickCodeObject;
  EXPECT_EQ(pickCodeObject("gfx942", objects, 6), &objects[0]);
  EXPECT_EQ(pickCodeObject("gfx90a", objects, 6), &objects[1]);
  EXPECT_EQ(pickCodeObject("gfx1100", objects, 6), nullptr);
  EXPECT_EQ(pickCodeObject("sm_80", objects, 6), &objects[2]); // exact wins
  EXPECT_EQ(pickCodeObject("sm_90", objects, 6), &objects[5]); // sm_90a runs on CC 9.0
  EXPECT_EQ(pickCodeObject("sm_86", objects, 6), &objects[3]); // older PTX, never a cubin
  EXPECT_EQ(pickCodeObject("sm_70", objects, 6), nullptr);
  EXPECT_EQ(pickCodeObject("sm_100", objects, 5), &objects[3]);
}

// TMA tensor maps: requests outside the driver's limits fail before any driver call, with a
// message; back ends without maps (the emulator) say so; an empty tensor needs no map.
// A field of an emulator tensor map's 128-byte record (runtime/format/emu_image.h, EmuTensorMap).
template <class T> T recordField(const unsigned char *rec, size_t at) {
  T v;
  std::memcpy(&v, rec + at, sizeof v);
  return v;
}

TEST(RuntimeTensorMap, RequestsAreCheckedBeforeTheDriver) {
  alignas(16) static char data[64];
  wave::rt::TensorMapRequest ok;
  ok.base = data;
  ok.dtypeCode = 2;
  ok.elementBytes = 2;
  ok.rank = 2;
  ok.dims = {4096, 4000};
  ok.strides = {8000};
  ok.box = {128, 64};
  ok.swizzleBytes = 128;
  int type = -1;
  EXPECT_EQ(wave::rt::checkTensorMapRequest(ok, &type), WAVE_SUCCESS);
  EXPECT_EQ(type, 6); // CU_TENSOR_MAP_DATA_TYPE_FLOAT16
  auto bf16 = ok;
  bf16.dtypeCode = 4;
  EXPECT_EQ(wave::rt::checkTensorMapRequest(bf16, &type), WAVE_SUCCESS);
  EXPECT_EQ(type, 9); // CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
  auto fp8 = ok; // 8-bit floats are moved as bytes: rows of 128 one-byte elements
  fp8.elementBytes = 1;
  fp8.box[1] = 128;
  fp8.strides[0] = 4000;
  EXPECT_EQ(wave::rt::checkTensorMapRequest(fp8, &type), WAVE_SUCCESS);
  EXPECT_EQ(type, 0); // CU_TENSOR_MAP_DATA_TYPE_UINT8
  struct Bad {
    const char *what;
    void (*edit)(wave::rt::TensorMapRequest &);
    const char *message;
  };
  const Bad bad[] = {
      {"int8", [](wave::rt::TensorMapRequest &r) { r.dtypeCode = 0; r.elementBytes = 1; },
       "no tensor-map type"},
      {"misaligned", [](wave::rt::TensorMapRequest &r) { r.base = data + 2; }, "multiple of 16"},
      {"odd stride", [](wave::rt::TensorMapRequest &r) { r.strides[0] = 8002; },
       "stride of 8002 bytes for dim 0"},
      {"short stride", [](wave::rt::TensorMapRequest &r) { r.strides[0] = 7984; },
       "stride of 7984 bytes for dim 0"},
      {"tall box", [](wave::rt::TensorMapRequest &r) { r.box[0] = 512; }, "box of 512 x 64"},
      {"empty box", [](wave::rt::TensorMapRequest &r) { r.box[0] = 0; }, "box of 0 x 64"},
      {"wide box", [](wave::rt::TensorMapRequest &r) { r.box[1] = 128; },
       "wider than the 128-byte swizzle"},
      {"rank 0", [](wave::rt::TensorMapRequest &r) { r.rank = 0; }, "a rank of 0"},
      {"rank 6", [](wave::rt::TensorMapRequest &r) { r.rank = 6; }, "a rank of 6"},
      {"rank 3 overlap",
       [](wave::rt::TensorMapRequest &r) {
         r.rank = 3;
         r.dims = {3, 4096, 4000};
         r.strides = {8000 * 4095, 8000};
         r.box = {1, 128, 64};
       },
       "stride of 32760000 bytes for dim 0"},
      {"swizzle", [](wave::rt::TensorMapRequest &r) { r.swizzleBytes = 96; },
       "swizzle of 96"},
      {"huge", [](wave::rt::TensorMapRequest &r) { r.dims[0] = (uint64_t(1) << 32) + 1; },
       "exceed 2^32"},
  };
  for (const Bad &b : bad) {
    auto r = ok;
    b.edit(r);
    EXPECT_EQ(wave::rt::checkTensorMapRequest(r, &type), WAVE_ERROR_INVALID_ARGUMENT) << b.what;
    EXPECT_NE(std::string(wave_last_error()).find(b.message), std::string::npos)
        << b.what << ": " << wave_last_error();
  }
}

// On an emulator device a map is the emulator's own 128-byte record in device memory
// (EmuTensorMap, runtime/format/emu_image.h: magic "WAVETMAP", base, rank, element bytes,
// swizzle, dims, strides, box), cached per request; empty tensors need none.
TEST(RuntimeTensorMap, EmulatorMapsAreItsOwnRecordsAndEmptyTensorsNeedNone) {
  wave_device_t dev = nullptr;
  ASSERT_EQ(wave_device_open("emu:sm_90a", &dev), WAVE_SUCCESS) << lastError();
  void *data = nullptr;
  ASSERT_EQ(wave_malloc(dev, 64 * 128, &data), WAVE_SUCCESS);
  const wave_dtype_t f16 = {2, 16, 1};
  uint64_t map = 1, again = 2, other = 3;
  ASSERT_EQ(wave_tensor_map_2d(dev, data, f16, 64, 60, 128, 64, 64, 128, &map), WAVE_SUCCESS)
      << lastError();
  ASSERT_NE(map, 0u);
  unsigned char rec[128];
  ASSERT_EQ(wave_memcpy_dtoh(dev, rec, reinterpret_cast<void *>(uintptr_t(map)), 128),
            WAVE_SUCCESS)
      << lastError();
  auto u64 = [&](size_t at) { return recordField<uint64_t>(rec, at); };
  auto u32 = [&](size_t at) { return recordField<uint32_t>(rec, at); };
  EXPECT_EQ(std::memcmp(rec, "WAVETMAP", 8), 0);
  EXPECT_EQ(u64(8), reinterpret_cast<uintptr_t>(data));
  EXPECT_EQ(u32(16), 2u);   // rank
  EXPECT_EQ(u32(20), 2u);   // element bytes
  EXPECT_EQ(u32(24), 128u); // swizzle
  EXPECT_EQ(u64(32), 64u);  // dims: rows
  EXPECT_EQ(u64(40), 60u);  //       cols
  EXPECT_EQ(u64(72), 128u); // strides: the row's
  EXPECT_EQ(u32(104), 64u); // box: rows
  EXPECT_EQ(u32(108), 64u); //      cols
  EXPECT_EQ(wave_tensor_map_2d(dev, data, f16, 64, 60, 128, 64, 64, 128, &again), WAVE_SUCCESS);
  EXPECT_EQ(again, map); // a cache hit
  EXPECT_EQ(wave_tensor_map_2d(dev, data, f16, 32, 60, 128, 64, 64, 128, &other), WAVE_SUCCESS);
  EXPECT_NE(other, map); // another shape, another map
  map = 1;
  EXPECT_EQ(wave_tensor_map_2d(dev, data, f16, 0, 64, 128, 64, 64, 128, &map), WAVE_SUCCESS);
  EXPECT_EQ(map, 0u);
  EXPECT_EQ(wave_tensor_map_2d(dev, data, f16, 64, 64, 130, 64, 64, 128, &map),
            WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wave_tensor_map_2d(nullptr, data, f16, 64, 64, 128, 64, 64, 128, &map),
            WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wave_tensor_map_2d(dev, data, f16, 64, 64, 128, 64, 64, 128, nullptr),
            WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wave_free(dev, data), WAVE_SUCCESS);
  EXPECT_EQ(wave_device_close(dev), WAVE_SUCCESS);
}

// wave_tensor_map of rank 3 on an emulator device: the record holds the rank, every dim, the
// strides and the box; a rank-2 request equals wave_tensor_map_2d's (the same cached map); bad
// requests fail with a message, never a crash.
TEST(RuntimeTensorMap, Rank3MapsOnTheEmulatorAndTheirBadRequests) {
  wave_device_t dev = nullptr;
  ASSERT_EQ(wave_device_open("emu:sm_90a", &dev), WAVE_SUCCESS) << lastError();
  void *data = nullptr;
  ASSERT_EQ(wave_malloc(dev, 3 * 37 * 56 * 2, &data), WAVE_SUCCESS);
  const wave_dtype_t f16 = {2, 16, 1};
  const uint64_t dims[3] = {3, 37, 56}, strides[2] = {37 * 56 * 2, 56 * 2};
  const uint32_t box[3] = {1, 64, 64};
  uint64_t map = 0;
  ASSERT_EQ(wave_tensor_map(dev, data, f16, 3, dims, strides, box, 128, &map), WAVE_SUCCESS)
      << lastError();
  ASSERT_NE(map, 0u);
  unsigned char rec[128];
  ASSERT_EQ(wave_memcpy_dtoh(dev, rec, reinterpret_cast<void *>(uintptr_t(map)), 128),
            WAVE_SUCCESS);
  auto u64 = [&](size_t at) { return recordField<uint64_t>(rec, at); };
  auto u32 = [&](size_t at) { return recordField<uint32_t>(rec, at); };
  EXPECT_EQ(u32(16), 3u);
  EXPECT_EQ(u64(32), 3u);
  EXPECT_EQ(u64(40), 37u);
  EXPECT_EQ(u64(48), 56u);
  EXPECT_EQ(u64(72), 37u * 56 * 2);
  EXPECT_EQ(u64(80), 56u * 2);
  EXPECT_EQ(u32(104), 1u);
  EXPECT_EQ(u32(108), 64u);
  EXPECT_EQ(u32(112), 64u);
  // Rank 2 through either entry point: one request, one cached map.
  uint64_t a = 0, b = 1;
  const uint64_t dims2[2] = {37, 56}, strides2[1] = {112};
  const uint32_t box2[2] = {64, 64};
  ASSERT_EQ(wave_tensor_map(dev, data, f16, 2, dims2, strides2, box2, 128, &a), WAVE_SUCCESS);
  ASSERT_EQ(wave_tensor_map_2d(dev, data, f16, 37, 56, 112, 64, 64, 128, &b), WAVE_SUCCESS);
  EXPECT_EQ(a, b);
  // An empty dim anywhere: no map.
  const uint64_t empty[3] = {3, 0, 56};
  map = 1;
  EXPECT_EQ(wave_tensor_map(dev, data, f16, 3, empty, strides, box, 128, &map), WAVE_SUCCESS);
  EXPECT_EQ(map, 0u);
  struct Bad {
    const char *what;
    uint32_t rank;
    const uint64_t *dims, *strides;
    const uint32_t *box;
    const char *message;
  };
  const uint64_t overlap[2] = {56 * 2 * 36, 56 * 2}; // dim 0's stride too short for 37 rows
  const uint32_t tallBox[3] = {1, 300, 64};
  const Bad bad[] = {
      {"rank 0", 0, dims, strides, box, "a rank of 0"},
      {"rank 6", 6, dims, strides, box, "a rank of 6"},
      {"no dims", 3, nullptr, strides, box, "dims"},
      {"no strides", 3, dims, nullptr, box, "strides_bytes"},
      {"no box", 3, dims, strides, nullptr, "box"},
      {"overlap", 3, dims, overlap, box, "stride of 4032 bytes for dim 0"},
      {"tall box", 3, dims, strides, tallBox, "box of 1 x 300 x 64"},
  };
  for (const Bad &x : bad) {
    map = 7;
    EXPECT_EQ(wave_tensor_map(dev, data, f16, x.rank, x.dims, x.strides, x.box, 128, &map),
              WAVE_ERROR_INVALID_ARGUMENT)
        << x.what;
    EXPECT_EQ(map, 0u) << x.what;
    EXPECT_NE(std::string(wave_last_error()).find(x.message), std::string::npos)
        << x.what << ": " << wave_last_error();
  }
  EXPECT_EQ(wave_free(dev, data), WAVE_SUCCESS);
  EXPECT_EQ(wave_device_close(dev), WAVE_SUCCESS);
}

} // namespace
