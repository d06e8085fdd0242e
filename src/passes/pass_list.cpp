#include "passes/pass_list.h"

#include <algorithm>

namespace wave {

const std::vector<PassInfo> &passList() {
  using S = PassSide;
  static const std::vector<PassInfo> passes{
      {"parse", S::Driver, ".ast.txt", "the .wave text",
       "the syntax tree; syntax errors, located"},
      {"sema", S::Driver, ".ir.txt", "the syntax tree, -D bindings, the target",
       "names, types, shapes and constraints checked; the kernel graph IR"},
      {"size-limits", S::Driver, ".sizes.txt", "the kernel graph's static sizes",
       "refuses sizes whose element or byte counts overflow 63 bits"},
      {"distribute", S::Driver, ".distribution.txt", "the graph and its constraints",
       "grid, block, waves, per-access index expressions, clones, masks"},
      {"unroll-limits", S::Driver, ".unroll.txt", "the distribution's clone counts",
       "refuses kernels that would unroll past the clone limit"},
      {"legalize", S::Driver, ".legalize.txt", "the graph, the distribution, the target",
       "refuses, at the op's line, what the code generator cannot generate for the target"},
      {"promotion", S::CodeGenerator, ".promotion.txt", "reads of `shared` tensors",
       "which reads are staged through shared memory, each tile's shape and layout"},
      {"cooperative-copies", S::CodeGenerator, ".copies.txt", "the promoted tiles, the block",
       "how the workgroup copies each tile: elements per load, loads per thread, cp.async"},
      {"schedule", S::CodeGenerator, ".schedule.txt", "each loop's staged tiles, the target",
       "the loop schedule: buffers, swizzle, copy kind, prefetch distance, read-ahead, "
       "mma overlap"},
      {"carried-shapes", S::CodeGenerator, ".carried.txt", "each loop's inits and body",
       "the shape of every loop-carried value, found before the loop is emitted"},
      {"emit", S::CodeGenerator, ".emit.txt", "the graph, the distribution, the plan above",
       "the MLIR of each op, every line tagged with its shared-memory access"},
      {"shared-memory-plan", S::CodeGenerator, ".smem.txt",
       "every shared tile (promotions, reduction scratch) and its live span",
       "scratch sizes, byte offsets, which tiles share bytes, static or dynamic memory"},
      {"barrier-insertion", S::CodeGenerator, ".barriers.txt",
       "the emitted shared-memory accesses in program order",
       "the fewest barriers (and cp.async waits, proxy fences) that make them race-free"},
      {"mlir", S::CodeGenerator, ".mlir", "the emitted module",
       "the gpu.module in upstream dialects, parsed, verified, canonicalized"},
      {"llvm", S::CodeGenerator, ".ll", "the MLIR module",
       "LLVM IR, lowered through ROCDL or NVVM and optimized"},
      {"asm", S::CodeGenerator, ".s", "the LLVM module", "AMDGPU ISA or PTX"},
  };
  return passes;
}

const PassInfo *findPass(const std::string &name) {
  for (const auto &p : passList())
    if (name == p.name)
      return &p;
  return nullptr;
}

int passIndex(const std::string &name) {
  const auto &passes = passList();
  for (size_t i = 0; i < passes.size(); ++i)
    if (name == passes[i].name)
      return static_cast<int>(i);
  return -1;
}

std::string listPassesText() {
  std::string out = "wavec passes, in pipeline order (--print-ir-after=NAME prints the program "
                    "after NAME):\n";
  int n = 1;
  for (const auto &p : passList()) {
    std::string head = (n < 10 ? " " : "") + std::to_string(n) + ". " + p.name;
    ++n;
    head.resize(std::max<size_t>(head.size() + 1, 24), ' ');
    out += "  " + head + (p.side == PassSide::Driver ? "[wavec]     " : "[codegen]   ") +
           p.decides + "\n";
    out += std::string(38, ' ') + "reads: " + p.reads + "\n";
  }
  out += "Passes marked [codegen] run in the code generator: only when code or --check asks for "
         "it.\n";
  return out;
}

} // namespace wave
