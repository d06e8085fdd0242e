// `wavec --emit=metadata`: a JSON description of the compiled kernels, from the kernel ABI and
// the distribution alone (no code generation): target, per kernel the block, waves, grid
// formulas in the dynamic symbols, shared memory (LDS) bytes, the assumptions, and the argument
// table with offsets and sizes (the same table the generated NAME_info() returns).
// The schema is docs/schemas/metadata.schema.json.
#pragma once

#include "codegen/host_api.h"
#include "codegen/target_table.h"

#include <string>
#include <vector>

namespace wave {

std::string kernelMetadataJson(const std::vector<HostKernel> &kernels, const TargetInfo &target,
                               const std::string &sourceName, const std::string &version);

} // namespace wave
