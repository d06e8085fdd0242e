#include "codegen/kernel_abi.h"

#include "passes/distribution.h"

namespace wave {

namespace {
unsigned byteSize(ScalarType t) {
  unsigned bits = bitWidth(t);
  return bits <= 8 ? 1 : bits / 8;
}

void place(KernelAbi &abi, AbiArg arg) {
  abi.size = (abi.size + arg.align - 1) / arg.align * arg.align;
  arg.offset = abi.size;
  abi.size += arg.size;
  abi.args.push_back(std::move(arg));
}
} // namespace

KernelAbi kernelAbi(const ir::Kernel &kernel, const Distribution &dist) {
  KernelAbi abi;
  for (const auto &p : kernel.params) {
    const ir::Type &t = p.value->type;
    if (t.isMemory()) {
      place(abi, {AbiArg::Pointer, p.name, t.dtype, p.isOutput, 8, 8, 0});
    } else {
      unsigned n = byteSize(t.dtype);
      place(abi, {AbiArg::Scalar, p.name, t.dtype, false, n, n, 0});
    }
  }
  for (const auto &s : dist.dynamicSymbols)
    place(abi, {AbiArg::DynamicDim, s, ScalarType::I64, false, 8, 8, 0});
  abi.size = (abi.size + 7) / 8 * 8;
  return abi;
}

} // namespace wave
