#include "frontend/scalar_type.h"

namespace wave {

namespace {
struct TypeRow {
  ScalarType type;
  const char *name;
  unsigned bits;
  bool isFloat;
  bool isSigned;
};
const TypeRow kTypes[] = {
    {ScalarType::I1, "i1", 1, false, false},
    {ScalarType::I8, "i8", 8, false, true},
    {ScalarType::I16, "i16", 16, false, true},
    {ScalarType::I32, "i32", 32, false, true},
    {ScalarType::I64, "i64", 64, false, true},
    {ScalarType::U8, "u8", 8, false, false},
    {ScalarType::U32, "u32", 32, false, false},
    {ScalarType::F16, "f16", 16, true, true},
    {ScalarType::BF16, "bf16", 16, true, true},
    {ScalarType::F32, "f32", 32, true, true},
    {ScalarType::F64, "f64", 64, true, true},
    {ScalarType::F8E4M3FN, "f8e4m3fn", 8, true, true},
    {ScalarType::F8E5M2, "f8e5m2", 8, true, true},
    {ScalarType::F8E4M3FNUZ, "f8e4m3fnuz", 8, true, true},
    {ScalarType::F8E5M2FNUZ, "f8e5m2fnuz", 8, true, true},
    {ScalarType::Index, "index", 64, false, true},
};
const TypeRow &row(ScalarType t) { return kTypes[static_cast<int>(t)]; }
} // namespace

const char *scalarTypeName(ScalarType t) { return row(t).name; }

std::optional<ScalarType> parseScalarType(std::string_view name) {
  if (name == "bool")
    return ScalarType::I1;
  for (const auto &r : kTypes)
    if (name == r.name)
      return r.type;
  return std::nullopt;
}

unsigned bitWidth(ScalarType t) { return row(t).bits; }
bool isFloat(ScalarType t) { return row(t).isFloat; }
bool isInteger(ScalarType t) { return !row(t).isFloat; }
bool isSigned(ScalarType t) { return row(t).isSigned; }
bool isFp8(ScalarType t) {
  return t == ScalarType::F8E4M3FN || t == ScalarType::F8E5M2 || t == ScalarType::F8E4M3FNUZ ||
         t == ScalarType::F8E5M2FNUZ;
}
const char *addressSpaceName(AddressSpace s) {
  return s == AddressSpace::Global ? "global" : "shared";
}

} // namespace wave
