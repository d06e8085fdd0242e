// The scalar element types of the language (docs/language.md section 4) and their properties.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace wave {

enum class ScalarType {
  I1, I8, I16, I32, I64, U8, U32,
  F16, BF16, F32, F64,
  F8E4M3FN, F8E5M2, F8E4M3FNUZ, F8E5M2FNUZ,
  Index,
};

enum class AddressSpace { Global, Shared };

const char *scalarTypeName(ScalarType t);
// Parses a type name ("f16", "bool" = i1); nullopt when the name is not a type.
std::optional<ScalarType> parseScalarType(std::string_view name);
unsigned bitWidth(ScalarType t); // index counts as 64
bool isFloat(ScalarType t);
bool isInteger(ScalarType t); // i1, signed, unsigned and index
bool isSigned(ScalarType t);
bool isFp8(ScalarType t); // the four 8-bit float types
const char *addressSpaceName(AddressSpace s);

} // namespace wave
