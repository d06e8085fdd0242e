// Cheap checks of code objects before a driver sees them.
//
// Drivers answer a wrong image with a bare "invalid image" (or, for HIP on some ROCm versions,
// a crash); a few header bytes tell us what the caller actually handed over — an NVIDIA cubin to
// a HIP device, a truncated file, a text file — and let the message say so.
#include "internal.h"

#include <cctype>
#include <cstdio>
#include <cstring>

namespace wave::rt {
namespace {

constexpr uint16_t kEmAmdgpu = 224;
constexpr uint16_t kEmCuda = 190;
constexpr uint32_t kFatbinMagic = 0xBA55ED50;
constexpr char kOffloadBundleMagic[] = "__CLANG_OFFLOAD_BUNDLE__";
constexpr size_t kElf64HeaderSize = 64;

bool startsWith(const unsigned char *bytes, size_t size, const char *prefix) {
  size_t n = std::strlen(prefix);
  return size >= n && std::memcmp(bytes, prefix, n) == 0;
}

bool isElf(const unsigned char *bytes, size_t size) {
  return size >= 4 && bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' && bytes[3] == 'F';
}

uint16_t readLe16(const unsigned char *p) { return uint16_t(p[0] | (p[1] << 8)); }

uint32_t readLe32(const unsigned char *p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}

const char *machineName(uint16_t machine) {
  switch (machine) {
  case kEmAmdgpu:
    return "EM_AMDGPU";
  case kEmCuda:
    return "EM_CUDA";
  case 62:
    return "EM_X86_64";
  case 183:
    return "EM_AARCH64";
  default:
    return "another machine";
  }
}

/// "7f 45 4c 46 ..." of the first bytes, for messages about unrecognised images.
std::string firstBytes(const unsigned char *bytes, size_t size) {
  std::string out;
  char hex[4];
  for (size_t i = 0; i < size && i < 8; ++i) {
    std::snprintf(hex, sizeof(hex), i ? " %02x" : "%02x", bytes[i]);
    out += hex;
  }
  return out.empty() ? "none" : out;
}

/// Checks the ELF header fields both vendors share: 64-bit, little-endian, complete header.
wave_status_t checkElfHeader(const unsigned char *bytes, size_t size, uint16_t wantMachine,
                             const char *what) {
  if (size < kElf64HeaderSize)
    return failf(WAVE_ERROR_INVALID_IMAGE, "%s: ELF image truncated (%zu bytes, header needs %zu)",
                 what, size, kElf64HeaderSize);
  if (bytes[4] != 2 || bytes[5] != 1)
    return failf(WAVE_ERROR_INVALID_IMAGE, "%s: not a 64-bit little-endian ELF image", what);
  uint16_t machine = readLe16(bytes + 18);
  if (machine != wantMachine)
    return failf(WAVE_ERROR_INVALID_IMAGE, "%s: ELF e_machine is %u (%s), expected %u (%s)", what,
                 machine, machineName(machine), wantMachine, machineName(wantMachine));
  return WAVE_SUCCESS;
}

bool looksLikePtx(const unsigned char *bytes, size_t size) {
  size_t i = 0;
  while (i < size && std::isspace(bytes[i]))
    ++i;
  return startsWith(bytes + i, size - i, "//") || startsWith(bytes + i, size - i, ".version");
}

} // namespace

wave_status_t validateHipImage(const void *image, size_t size) {
  auto *bytes = static_cast<const unsigned char *>(image);
  const char *what = "HIP code object";
  if (!bytes || size == 0)
    return failf(WAVE_ERROR_INVALID_IMAGE, "%s: empty image", what);
  if (startsWith(bytes, size, kOffloadBundleMagic))
    return WAVE_SUCCESS;
  if (!isElf(bytes, size))
    return failf(WAVE_ERROR_INVALID_IMAGE, "%s: not an HSACO (no ELF magic; first bytes %s)", what,
                 firstBytes(bytes, size).c_str());
  return checkElfHeader(bytes, size, kEmAmdgpu, what);
}

wave_status_t validateCudaImage(const void *image, size_t size, CudaImageKind *kind) {
  auto *bytes = static_cast<const unsigned char *>(image);
  const char *what = "CUDA code object";
  if (!bytes || size == 0)
    return failf(WAVE_ERROR_INVALID_IMAGE, "%s: empty image", what);
  if (size >= 4 && readLe32(bytes) == kFatbinMagic) {
    *kind = CudaImageKind::Fatbin;
    return WAVE_SUCCESS;
  }
  if (isElf(bytes, size)) {
    *kind = CudaImageKind::Cubin;
    return checkElfHeader(bytes, size, kEmCuda, what);
  }
  if (looksLikePtx(bytes, size)) {
    *kind = CudaImageKind::Ptx;
    return WAVE_SUCCESS;
  }
  return failf(WAVE_ERROR_INVALID_IMAGE,
               "%s: neither PTX text, an ELF cubin nor a fatbin (first bytes %s)", what,
               firstBytes(bytes, size).c_str());
}

uint64_t hashImage(const void *image, size_t size) {
  auto *bytes = static_cast<const unsigned char *>(image);
  uint64_t hash = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::string stripTargetFeatures(const std::string &arch) { return arch.substr(0, arch.find(':')); }

} // namespace wave::rt
