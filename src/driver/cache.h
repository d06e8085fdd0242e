// The compile cache: code objects (and the other code-generator outputs) stored under a
// content address, so that a compilation whose inputs did not change skips the code generator
// (which is most of a compile: loading LLVM/MLIR, lowering, code generation, linking).
//
// The key is the SHA-256 of everything the output depends on (see cacheKey in pipeline.cpp):
// the source bytes, the -D bindings, the target, the code-generation options, the wavec version
// and the identity of the wavec and libwavec_codegen.so binaries. An entry is
//   DIR/<first two hex digits>/<the other 62>
// holding a header line "wavec-cache 1 <payload bytes> <payload SHA-256>" and the payload. It is
// written to a temporary file in the same directory and renamed into place (atomic); an entry
// whose header, length or hash does not check out is ignored (and replaced by the next store).
// The cache is best effort: a failure to read or write it never fails a compilation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace wave {

// SHA-256 of `data` as 64 lowercase hex digits.
std::string sha256Hex(const std::string &data);

class CompileCache {
public:
  explicit CompileCache(std::string dir) : dir_(std::move(dir)) {}
  bool enabled() const { return !dir_.empty(); }
  std::optional<std::string> load(const std::string &key) const;
  void store(const std::string &key, const std::string &payload) const;
  std::string entryPath(const std::string &key) const;

private:
  std::string dir_;
};

} // namespace wave
