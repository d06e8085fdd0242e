// The runtime's thread-safety promises (runtime/include/wave/runtime.h, kernel_api.h,
// runtime/src/error.cpp), exercised on the CPU emulator from several host threads at once:
//  - launches from many threads, on the default stream and on per-thread streams, of the same
//    module (one module: the per-device cache is shared), each thread checking its own results
//    element by element (the emulator itself also runs each launch on several host threads);
//  - wave_device_open of an open device returning the same handle from every thread, and devices
//    opened and closed concurrently (last close unloads, the next open starts over);
//  - wave_select_kernel (the stubs' lazy load + kernel cache) racing on a shared table;
//  - the last-error message being per thread: one thread fails on purpose over and over while
//    the others, which never fail, must still read "".
// Built plainly it is a functional test (runtime/threads); built with -DWAVEC_SANITIZE=thread
// (scripts/sanitize.sh) ThreadSanitizer checks every access of the runtime and the emulator.
//
// Usage: wave_runtime_threads_test IMAGE_DIR  (copy_gfx942.wemu, copy_sm_90.wemu and
// elementwise_gfx942.wemu made by wavec --emit=emu from samples/copy and samples/elementwise).
#include "wave/kernel_api.h"
#include "wave/runtime.h"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

std::atomic<int> failures{0};
std::mutex printMutex;

void fail(const std::string &what) {
  std::lock_guard<std::mutex> lock(printMutex);
  std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  ++failures;
}

#define CHECK_OK(call)                                                                          \
  do {                                                                                          \
    wave_status_t s_ = (call);                                                                  \
    if (s_ != WAVE_SUCCESS) {                                                                   \
      fail(std::string(#call) + ": " + wave_status_name(s_) + ": " + wave_last_error());       \
      return;                                                                                   \
    }                                                                                           \
  } while (0)

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

template <class T> void pack(std::vector<uint8_t> &buf, size_t offset, T v) {
  if (buf.size() < offset + sizeof(T))
    buf.resize(offset + sizeof(T));
  std::memcpy(buf.data() + offset, &v, sizeof(T));
}

std::string elementwiseImage, copyGfx942, copySm90;
constexpr int kThreads = 4;

// samples/elementwise: c = a * alpha + b (b broadcast over rows), at a ragged shape.
void elementwiseWorker(int id, wave_device_t *handleOut) {
  wave_device_t dev = nullptr;
  CHECK_OK(wave_device_open("emu:gfx942", &dev));
  *handleOut = dev;
  wave_module_t m = nullptr;
  CHECK_OK(wave_module_load_data(dev, elementwiseImage.data(), elementwiseImage.size(), &m));
  wave_kernel_t k = nullptr;
  CHECK_OK(wave_module_get_kernel(m, "elementwise", &k));
  wave_stream_t stream = nullptr;
  if (id % 2)
    CHECK_OK(wave_stream_create(dev, &stream));
  std::mt19937 rng(100 + id);
  std::uniform_real_distribution<float> u(-2, 2);
  for (int iter = 0; iter < 3; ++iter) {
    const int64_t M = 5 + id + iter, N = 300 + 7 * id;
    std::vector<float> a(M * N), b(N), c(M * N);
    for (auto &x : a)
      x = u(rng);
    for (auto &x : b)
      x = u(rng);
    const float alpha = 0.5f + id;
    void *da = nullptr, *db = nullptr, *dc = nullptr;
    CHECK_OK(wave_malloc(dev, a.size() * 4, &da));
    CHECK_OK(wave_malloc(dev, b.size() * 4, &db));
    CHECK_OK(wave_malloc(dev, c.size() * 4, &dc));
    CHECK_OK(wave_memcpy_htod(dev, da, a.data(), a.size() * 4));
    CHECK_OK(wave_memcpy_htod(dev, db, b.data(), b.size() * 4));
    CHECK_OK(wave_memset(dev, dc, 0xff, c.size() * 4));
    std::vector<uint8_t> args;
    pack(args, 0, da);
    pack(args, 8, db);
    pack(args, 16, alpha);
    pack(args, 24, dc);
    pack(args, 32, M);
    pack(args, 40, N);
    uint32_t grid[3] = {uint32_t((N + 255) / 256), uint32_t((M + 3) / 4), 1};
    uint32_t block[3] = {64, 1, 1};
    CHECK_OK(wave_launch(dev, stream, k, grid, block, 0, args.data(), args.size()));
    if (stream)
      CHECK_OK(wave_stream_synchronize(stream));
    CHECK_OK(wave_memcpy_dtoh(dev, c.data(), dc, c.size() * 4));
    size_t wrong = 0;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        float want = a[i * N + j] * alpha + b[j];
        wrong += !(std::fabs(c[i * N + j] - want) <= 1e-6f * (1 + std::fabs(want)));
      }
    if (wrong)
      fail("elementwise thread " + std::to_string(id) + ": " + std::to_string(wrong) +
           " wrong elements");
    CHECK_OK(wave_free(dev, da));
    CHECK_OK(wave_free(dev, db));
    CHECK_OK(wave_free(dev, dc));
  }
  if (stream)
    CHECK_OK(wave_stream_destroy(stream));
  CHECK_OK(wave_module_unload(m));
  if (std::strcmp(wave_last_error(), "") != 0)
    fail("thread " + std::to_string(id) + " sees an error it never had: " + wave_last_error());
  CHECK_OK(wave_device_close(dev));
}

// samples/copy on emu:sm_90, through wave_select_kernel on a shared table, with the device
// opened and closed around every launch (so opens race with last closes).
void copyWorker(int id) {
  // One table shared by every thread, as a stub's static table is.
  static const wave_code_object_t table[] = {
      {"emu:gfx942", reinterpret_cast<const unsigned char *>(copyGfx942.data()),
       copyGfx942.size(), nullptr},
      {"emu:sm_90", reinterpret_cast<const unsigned char *>(copySm90.data()), copySm90.size(),
       nullptr},
  };
  const char *uri = id % 2 ? "emu:sm_90" : "emu:gfx942";
  for (int iter = 0; iter < 4; ++iter) {
    wave_device_t dev = nullptr;
    CHECK_OK(wave_device_open(uri, &dev));
    wave_stream_t stream = nullptr;
    CHECK_OK(wave_stream_create(dev, &stream));
    wave_device_t picked = nullptr;
    wave_kernel_t k = nullptr;
    size_t index = 99;
    CHECK_OK(wave_select_kernel_index(stream, table, 2, "copy", &picked, &k, &index));
    if (picked != dev || index != size_t(id % 2))
      fail("wave_select_kernel picked entry " + std::to_string(index) + " for " + uri);
    const int64_t M = 3 + iter, N = 257 + 31 * id;
    std::vector<uint16_t> in(M * N), out(M * N);
    for (size_t i = 0; i < in.size(); ++i)
      in[i] = uint16_t((i + 977 * id) * 2654435761u >> 16);
    void *a = nullptr, *b = nullptr;
    CHECK_OK(wave_malloc(dev, in.size() * 2, &a));
    CHECK_OK(wave_malloc(dev, in.size() * 2, &b));
    CHECK_OK(wave_memcpy_htod(dev, a, in.data(), in.size() * 2));
    CHECK_OK(wave_memset(dev, b, 0xff, in.size() * 2));
    std::vector<uint8_t> args;
    pack(args, 0, a);
    pack(args, 8, b);
    pack(args, 16, M);
    pack(args, 24, N);
    uint32_t grid[3] = {uint32_t((N + 255) / 256), uint32_t((M + 15) / 16), 1};
    uint32_t block[3] = {id % 2 ? 32u : 64u, 1, 1};
    CHECK_OK(wave_launch(dev, stream, k, grid, block, 0, args.data(), args.size()));
    CHECK_OK(wave_stream_synchronize(stream));
    CHECK_OK(wave_memcpy_dtoh(dev, out.data(), b, out.size() * 2));
    if (in != out)
      fail("copy thread " + std::to_string(id) + " iteration " + std::to_string(iter) +
           ": output differs");
    CHECK_OK(wave_free(dev, a));
    CHECK_OK(wave_free(dev, b));
    CHECK_OK(wave_stream_destroy(stream));
    CHECK_OK(wave_device_close(dev));
  }
  if (std::strcmp(wave_last_error(), "") != 0)
    fail("copy thread " + std::to_string(id) + " sees an error it never had: " + wave_last_error());
}

// Fails on purpose, each time with a message naming this thread, and checks it reads its own.
void failingWorker(int id) {
  for (int i = 0; i < 200; ++i) {
    std::string uri = "emu:nosuch" + std::to_string(id) + "_" + std::to_string(i);
    wave_device_t dev = nullptr;
    if (wave_device_open(uri.c_str(), &dev) == WAVE_SUCCESS) {
      fail("opening " + uri + " succeeded");
      return;
    }
    if (!std::strstr(wave_last_error(), uri.c_str()))
      fail("failing thread read another message: '" + std::string(wave_last_error()) + "'");
  }
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s IMAGE_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  elementwiseImage = readFile(dir + "/elementwise_gfx942.wemu");
  copyGfx942 = readFile(dir + "/copy_gfx942.wemu");
  copySm90 = readFile(dir + "/copy_sm_90.wemu");
  if (elementwiseImage.empty() || copyGfx942.empty() || copySm90.empty()) {
    std::fprintf(stderr, "missing emulator images in %s\n", dir.c_str());
    return 2;
  }
  // One reference held by the main thread across the elementwise phase: every thread's open
  // must return this handle.
  wave_device_t mainDev = nullptr;
  if (wave_device_open("emu:gfx942", &mainDev) != WAVE_SUCCESS) {
    std::fprintf(stderr, "emu:gfx942: %s\n", wave_last_error());
    return 1;
  }
  std::vector<wave_device_t> handles(kThreads, nullptr);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back(elementwiseWorker, i, &handles[i]);
  threads.emplace_back(failingWorker, 0);
  for (auto &t : threads)
    t.join();
  for (int i = 0; i < kThreads; ++i)
    if (handles[i] != mainDev)
      fail("thread " + std::to_string(i) + " got another handle for emu:gfx942");
  wave_device_close(mainDev);

  // No reference held now: the copy workers' opens and closes race with each other.
  threads.clear();
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back(copyWorker, i);
  threads.emplace_back(failingWorker, 1);
  for (auto &t : threads)
    t.join();

  if (failures) {
    std::fprintf(stderr, "%d failure(s)\n", failures.load());
    return 1;
  }
  std::printf("runtime threads: %d launching threads x 2 phases, all results exact\n", kThreads);
  return 0;
}
