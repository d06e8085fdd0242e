// `wavec --emit=metadata`: a JSON description of the compiled kernels: target, per kernel the
// block, waves, grid formulas in the dynamic symbols, the assumptions and the argument table
// with offsets and sizes (the same table the generated NAME_info() returns), from the kernel ABI
// and the distribution; and what the code object uses (shared memory, registers, scratch,
// spills), read from the compiled code (codegen_api.h, KernelResources).
// The schema is docs/schemas/metadata.schema.json.
#pragma once

#include "codegen/codegen_api.h"
#include "codegen/host_api.h"
#include "target/target_table.h"

#include <string>
#include <vector>

namespace wave {

std::string kernelMetadataJson(const std::vector<HostKernel> &kernels,
                               const std::vector<KernelResources> &resources,
                               const TargetInfo &target,
                               const std::string &sourceName, const std::string &version);

} // namespace wave
