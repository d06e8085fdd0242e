// libwave_runtime on a real NVIDIA GPU: the path a generated host stub takes (device info -> arch,
// cached module load, kernel lookup, packed-argument launch) with a hand-written PTX kernel.
// Without a CUDA driver every test here skips visibly.
#include "wave/kernel_api.h"
#include "wave/runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string testDataDir() {
  if (const char *dir = std::getenv("WAVE_RUNTIME_TEST_DATA"))
    return dir;
  return WAVE_RUNTIME_TEST_DATA;
}

std::string testImagesDir() {
  if (const char *dir = std::getenv("WAVE_RUNTIME_TEST_IMAGES"))
    return dir;
  return WAVE_RUNTIME_TEST_IMAGES;
}

std::string readText(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// The packed explicit arguments of scale_add.ptx: (u64 x, u64 y, f32 a, f32 b, u32 n).
struct ScaleAddArgs {
  uint64_t x, y;
  float a, b;
  uint32_t n;
};
static_assert(offsetof(ScaleAddArgs, n) == 24, "matches the PTX parameter layout");
constexpr size_t kScaleAddArgsSize = 28; // the kernel's parameter bytes (no tail padding)

class CudaRuntime : public ::testing::Test {
protected:
  void SetUp() override {
    wave_status_t s = wave_device_open("cuda://0", &device);
    if (s == WAVE_ERROR_DRIVER_NOT_FOUND || s == WAVE_ERROR_NO_DEVICE) {
      const char *what = s == WAVE_ERROR_DRIVER_NOT_FOUND ? "driver" : "device";
      std::printf("SKIPPED: no CUDA %s on this machine (%s)\n", what, wave_last_error());
      GTEST_SKIP() << "no CUDA " << what << " on this machine: " << wave_last_error();
    }
    ASSERT_EQ(s, WAVE_SUCCESS) << wave_last_error();
    ptx = readText(testDataDir() + "/scale_add.ptx");
    ASSERT_FALSE(ptx.empty());
  }
  void TearDown() override {
    if (device) {
      EXPECT_EQ(wave_device_close(device), WAVE_SUCCESS) << wave_last_error();
    }
  }

  wave_kernel_t loadScaleAdd() {
    wave_module_t module = nullptr;
    EXPECT_EQ(wave_module_load_data(device, ptx.data(), ptx.size(), &module), WAVE_SUCCESS)
        << wave_last_error();
    wave_kernel_t kernel = nullptr;
    EXPECT_EQ(wave_module_get_kernel(module, "scale_add", &kernel), WAVE_SUCCESS)
        << wave_last_error();
    return kernel;
  }

  /// Runs y = 2x + 1 over n elements on `stream` and checks every element.
  void runScaleAdd(wave_stream_t stream, uint32_t n) {
    wave_kernel_t kernel = loadScaleAdd();
    ASSERT_NE(kernel, nullptr);
    std::vector<float> x(n), y(n, -1.0f);
    for (uint32_t i = 0; i < n; ++i)
      x[i] = float(i % 1000) * 0.5f;
    void *dx = nullptr, *dy = nullptr;
    ASSERT_EQ(wave_malloc(device, n * sizeof(float), &dx), WAVE_SUCCESS) << wave_last_error();
    ASSERT_EQ(wave_malloc(device, n * sizeof(float), &dy), WAVE_SUCCESS) << wave_last_error();
    ASSERT_EQ(wave_memcpy_htod(device, dx, x.data(), n * sizeof(float)), WAVE_SUCCESS);
    ASSERT_EQ(wave_memset(device, dy, 0xff, n * sizeof(float)), WAVE_SUCCESS); // poison: NaN
    ScaleAddArgs args{uint64_t(uintptr_t(dx)), uint64_t(uintptr_t(dy)), 2.0f, 1.0f, n};
    const uint32_t block[3] = {256, 1, 1};
    const uint32_t grid[3] = {(n + 255) / 256, 1, 1};
    ASSERT_EQ(wave_launch(device, stream, kernel, grid, block, 0, &args, kScaleAddArgsSize),
              WAVE_SUCCESS)
        << wave_last_error();
    wave_status_t synced =
        stream ? wave_stream_synchronize(stream) : wave_device_synchronize(device);
    ASSERT_EQ(synced, WAVE_SUCCESS) << wave_last_error();
    ASSERT_EQ(wave_memcpy_dtoh(device, y.data(), dy, n * sizeof(float)), WAVE_SUCCESS);
    for (uint32_t i = 0; i < n; ++i)
      ASSERT_EQ(y[i], 2.0f * x[i] + 1.0f) << "at " << i;
    // Device-to-device copies complete before returning: x's buffer now holds y.
    ASSERT_EQ(wave_memcpy_dtod(device, dx, dy, n * sizeof(float)), WAVE_SUCCESS);
    std::vector<float> copied(n);
    ASSERT_EQ(wave_memcpy_dtoh(device, copied.data(), dx, n * sizeof(float)), WAVE_SUCCESS);
    EXPECT_EQ(copied, y);
    EXPECT_EQ(wave_free(device, dx), WAVE_SUCCESS);
    EXPECT_EQ(wave_free(device, dy), WAVE_SUCCESS);
  }

  wave_device_t device = nullptr;
  std::string ptx;
};

TEST_F(CudaRuntime, DeviceInfoGivesTheArch) {
  wave_device_info_t info;
  ASSERT_EQ(wave_device_info(device, &info), WAVE_SUCCESS);
  EXPECT_EQ(info.vendor, WAVE_VENDOR_NVIDIA);
  EXPECT_STREQ(info.backend, "cuda");
  EXPECT_EQ(std::strncmp(info.arch, "sm_", 3), 0) << info.arch;
  EXPECT_EQ(info.warp_size, 32u);
  EXPECT_GE(info.shared_memory_per_block, 48u * 1024);
  EXPECT_GT(info.multiprocessor_count, 0u);
  std::printf("cuda://0: %s, %s, %u SMs\n", info.name, info.arch, info.multiprocessor_count);
}

TEST_F(CudaRuntime, OpeningTwiceSharesTheDevice) {
  wave_device_t again = nullptr;
  ASSERT_EQ(wave_device_open("cuda://0", &again), WAVE_SUCCESS);
  EXPECT_EQ(again, device);
  EXPECT_EQ(wave_device_close(again), WAVE_SUCCESS);
  wave_device_t autoDevice = nullptr;
  ASSERT_EQ(wave_device_open("auto", &autoDevice), WAVE_SUCCESS) << wave_last_error();
  EXPECT_EQ(autoDevice, device);
  EXPECT_EQ(wave_device_close(autoDevice), WAVE_SUCCESS);
}

TEST_F(CudaRuntime, LaunchOnDefaultStream) { runScaleAdd(nullptr, 4093); }

TEST_F(CudaRuntime, LaunchOnCreatedStream) {
  wave_stream_t stream = nullptr;
  ASSERT_EQ(wave_stream_create(device, &stream), WAVE_SUCCESS) << wave_last_error();
  wave_device_t owner = nullptr;
  ASSERT_EQ(wave_stream_device(stream, &owner), WAVE_SUCCESS);
  EXPECT_EQ(owner, device);
  runScaleAdd(stream, 1 << 20);
  EXPECT_EQ(wave_stream_destroy(stream), WAVE_SUCCESS) << wave_last_error();
}

TEST_F(CudaRuntime, ModuleCacheReturnsTheSameModule) {
  wave_module_t a = nullptr, b = nullptr, c = nullptr;
  ASSERT_EQ(wave_module_load_data(device, ptx.data(), ptx.size(), &a), WAVE_SUCCESS);
  ASSERT_EQ(wave_module_load_data(device, ptx.data(), ptx.size(), &b), WAVE_SUCCESS);
  EXPECT_EQ(a, b);
  ASSERT_EQ(wave_module_load_file(device, (testDataDir() + "/scale_add.ptx").c_str(), &c),
            WAVE_SUCCESS)
      << wave_last_error();
  EXPECT_EQ(a, c);
  wave_kernel_t k1 = nullptr, k2 = nullptr;
  ASSERT_EQ(wave_module_get_kernel(a, "scale_add", &k1), WAVE_SUCCESS);
  ASSERT_EQ(wave_module_get_kernel(a, "scale_add", &k2), WAVE_SUCCESS);
  EXPECT_EQ(k1, k2);
  EXPECT_STREQ(wave_kernel_name(k1), "scale_add");
  EXPECT_EQ(wave_module_unload(a), WAVE_SUCCESS);
  EXPECT_EQ(wave_module_unload(b), WAVE_SUCCESS);
  EXPECT_EQ(wave_module_unload(c), WAVE_SUCCESS);
}

TEST_F(CudaRuntime, ConcurrentLazyLoadsShareOneModule) {
  std::vector<wave_module_t> modules(8, nullptr);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < modules.size(); ++i)
    threads.emplace_back(
        [&, i] { wave_module_load_data(device, ptx.data(), ptx.size(), &modules[i]); });
  for (auto &t : threads)
    t.join();
  for (wave_module_t m : modules)
    EXPECT_EQ(m, modules[0]);
  for (wave_module_t m : modules)
    EXPECT_EQ(wave_module_unload(m), WAVE_SUCCESS);
}

TEST_F(CudaRuntime, LoadFailuresAreClear) {
  wave_module_t module = nullptr;
  // An AMD code object handed to an NVIDIA device.
  std::vector<unsigned char> hsaco(64, 0);
  const unsigned char ident[] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  std::memcpy(hsaco.data(), ident, sizeof(ident));
  hsaco[18] = 224;
  EXPECT_EQ(wave_module_load_data(device, hsaco.data(), hsaco.size(), &module),
            WAVE_ERROR_INVALID_IMAGE);
  EXPECT_NE(std::string(wave_last_error()).find("EM_AMDGPU"), std::string::npos);
  // PTX the JIT rejects. With lazy loading (the default since CUDA 12.2) the driver compiles a
  // kernel when it is first looked up, so the failure surfaces at load or at get_kernel.
  std::string bad =
      ".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry k() { bogus; }\n";
  wave_status_t s = wave_module_load_data(device, bad.data(), bad.size(), &module);
  if (s == WAVE_SUCCESS) {
    wave_kernel_t k = nullptr;
    s = wave_module_get_kernel(module, "k", &k);
  }
  EXPECT_EQ(s, WAVE_ERROR_INVALID_IMAGE) << wave_last_error();
  EXPECT_NE(std::string(wave_last_error()).find("CUDA_ERROR_INVALID_PTX"), std::string::npos)
      << wave_last_error();
  std::printf("rejected PTX: %s\n", wave_last_error());
  EXPECT_EQ(wave_module_load_file(device, "/nonexistent/k.ptx", &module), WAVE_ERROR_NOT_FOUND);

  ASSERT_EQ(wave_module_load_data(device, ptx.data(), ptx.size(), &module), WAVE_SUCCESS);
  wave_kernel_t kernel = nullptr;
  EXPECT_EQ(wave_module_get_kernel(module, "no_such_kernel", &kernel), WAVE_ERROR_NOT_FOUND);
  EXPECT_NE(std::string(wave_last_error()).find("no_such_kernel"), std::string::npos)
      << wave_last_error();
  EXPECT_EQ(wave_module_unload(module), WAVE_SUCCESS);
}

// The cubin and fatbin of scale_add.ptx, made at build time by ptxas/fatbinary when the build
// machine has them.
TEST_F(CudaRuntime, LoadsCubinAndFatbin) {
  for (const char *name : {"scale_add.cubin", "scale_add.fatbin"}) {
    std::string path = testImagesDir() + "/" + name;
    std::string image = readText(path);
    if (image.empty()) {
      std::printf("SKIPPED: %s was not built (no ptxas/fatbinary at build time)\n", path.c_str());
      continue;
    }
    wave_module_t module = nullptr;
    wave_status_t s = wave_module_load_data(device, image.data(), image.size(), &module);
    wave_device_info_t info;
    ASSERT_EQ(wave_device_info(device, &info), WAVE_SUCCESS);
    if (s == WAVE_ERROR_INVALID_IMAGE && std::strcmp(info.arch, "sm_90") != 0) {
      std::printf("SKIPPED: %s is for sm_90, the device is %s\n", name, info.arch);
      continue;
    }
    ASSERT_EQ(s, WAVE_SUCCESS) << name << ": " << wave_last_error();
    wave_kernel_t kernel = nullptr;
    EXPECT_EQ(wave_module_get_kernel(module, "scale_add", &kernel), WAVE_SUCCESS)
        << wave_last_error();
    EXPECT_EQ(wave_module_unload(module), WAVE_SUCCESS);
  }
}

TEST_F(CudaRuntime, BadLaunchesAreRejected) {
  wave_kernel_t kernel = loadScaleAdd();
  ASSERT_NE(kernel, nullptr);
  ScaleAddArgs args{0, 0, 1.0f, 0.0f, 0};
  const uint32_t grid[3] = {1, 1, 1}, big[3] = {2048, 1, 1}, zero[3] = {0, 1, 1};
  EXPECT_EQ(wave_launch(device, nullptr, kernel, grid, big, 0, &args, kScaleAddArgsSize),
            WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(wave_last_error()).find("wave_launch(scale_add)"), std::string::npos);
  EXPECT_EQ(wave_launch(device, nullptr, kernel, zero, grid, 0, &args, kScaleAddArgsSize),
            WAVE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wave_launch(device, nullptr, kernel, grid, grid, 0, nullptr, kScaleAddArgsSize),
            WAVE_ERROR_INVALID_ARGUMENT);
  // n = 0: a valid launch that touches nothing.
  EXPECT_EQ(wave_launch(device, nullptr, kernel, grid, grid, 0, &args, kScaleAddArgsSize),
            WAVE_SUCCESS)
      << wave_last_error();
  EXPECT_EQ(wave_device_synchronize(device), WAVE_SUCCESS) << wave_last_error();
}

} // namespace

// ---- the path a generated stub takes: wave_select_kernel on a stream, then wave_launch
// -----------

namespace {

TEST_F(CudaRuntime, StubPathSelectsLoadsOnceAndLaunches) {
  static const unsigned char notForThisGpu[] = {0x7f, 'E', 'L', 'F'};
  wave_code_object_t objects[] = {
      {"gfx942", notForThisGpu, sizeof(notForThisGpu), nullptr},
      {"sm_80", reinterpret_cast<const unsigned char *>(ptx.data()), ptx.size(), nullptr}};
  wave_stream_t stream = nullptr;
  ASSERT_EQ(wave_stream_create(device, &stream), WAVE_SUCCESS);
  wave_device_t chosenDevice = nullptr;
  wave_kernel_t kernel = nullptr, again = nullptr;
  ASSERT_EQ(wave_select_kernel(stream, objects, 2, "scale_add", &chosenDevice, &kernel),
            WAVE_SUCCESS)
      << wave_last_error();
  EXPECT_EQ(chosenDevice, device);
  ASSERT_EQ(wave_select_kernel(stream, objects, 2, "scale_add", &chosenDevice, &again),
            WAVE_SUCCESS);
  EXPECT_EQ(again, kernel);

  const uint32_t n = 1000;
  void *dx = nullptr, *dy = nullptr;
  ASSERT_EQ(wave_malloc(device, n * 4, &dx), WAVE_SUCCESS);
  ASSERT_EQ(wave_malloc(device, n * 4, &dy), WAVE_SUCCESS);
  std::vector<float> x(n, 3.0f), y(n, 0.0f);
  ASSERT_EQ(wave_memcpy_htod(device, dx, x.data(), n * 4), WAVE_SUCCESS);
  ScaleAddArgs args{uint64_t(uintptr_t(dx)), uint64_t(uintptr_t(dy)), -1.0f, 0.5f, n};
  const uint32_t grid[3] = {4, 1, 1}, block[3] = {256, 1, 1};
  ASSERT_EQ(wave_launch(chosenDevice, stream, kernel, grid, block, 0, &args, kScaleAddArgsSize),
            WAVE_SUCCESS)
      << wave_last_error();
  ASSERT_EQ(wave_stream_synchronize(stream), WAVE_SUCCESS) << wave_last_error();
  ASSERT_EQ(wave_memcpy_dtoh(device, y.data(), dy, n * 4), WAVE_SUCCESS);
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(y[i], -2.5f) << i;

  // No code object for this GPU: NOT_FOUND naming the device's arch and what is on offer.
  EXPECT_EQ(wave_select_kernel(stream, objects, 1, "scale_add", &chosenDevice, &kernel),
            WAVE_ERROR_NOT_FOUND);
  EXPECT_NE(std::string(wave_last_error()).find("built for: gfx942"), std::string::npos)
      << wave_last_error();
  std::printf("no match: %s\n", wave_last_error());
  EXPECT_EQ(wave_free(device, dx), WAVE_SUCCESS);
  EXPECT_EQ(wave_free(device, dy), WAVE_SUCCESS);
  EXPECT_EQ(wave_stream_destroy(stream), WAVE_SUCCESS);
}

} // namespace
