#include "npy.h"

#include "driver/files.h"

#include <fmt/format.h>

#include <cstring>

namespace wave::npy {

namespace {

const char kMagic[] = "\x93NUMPY";

// The descr's kind and size without the byte-order character.
std::string typeCode(ScalarType t) {
  switch (t) {
  case ScalarType::F16: return "f2";
  case ScalarType::F32: return "f4";
  case ScalarType::F64: return "f8";
  case ScalarType::I8: return "i1";
  case ScalarType::I16: return "i2";
  case ScalarType::I32: return "i4";
  case ScalarType::I64:
  case ScalarType::Index: return "i8";
  case ScalarType::U8: return "u1";
  case ScalarType::U32: return "u4";
  case ScalarType::I1: return "b1";
  case ScalarType::BF16: return "u2";
  default: return "u1"; // the f8 types
  }
}

// A minimal parser for the header's Python dict literal.
struct HeaderParser {
  const std::string &s;
  size_t p = 0;
  void ws() {
    while (p < s.size() && (s[p] == ' ' || s[p] == '\t' || s[p] == '\n'))
      ++p;
  }
  bool eat(char c) {
    ws();
    if (p < s.size() && s[p] == c) {
      ++p;
      return true;
    }
    return false;
  }
  bool str(std::string &out) {
    ws();
    if (p >= s.size() || (s[p] != '\'' && s[p] != '"'))
      return false;
    char q = s[p++];
    size_t e = s.find(q, p);
    if (e == std::string::npos)
      return false;
    out = s.substr(p, e - p);
    p = e + 1;
    return true;
  }
  bool word(std::string &out) {
    ws();
    size_t b = p;
    while (p < s.size() && std::isalnum(static_cast<unsigned char>(s[p])))
      ++p;
    out = s.substr(b, p - b);
    return !out.empty();
  }
  bool tuple(std::vector<int64_t> &out) {
    if (!eat('('))
      return false;
    out.clear();
    while (true) {
      if (eat(')'))
        return true;
      ws();
      size_t b = p;
      while (p < s.size() && std::isdigit(static_cast<unsigned char>(s[p])))
        ++p;
      if (b == p || p - b > 15)
        return false;
      out.push_back(std::stoll(s.substr(b, p - b)));
      if (!eat(',')) {
        if (eat(')'))
          return true;
        return false;
      }
    }
  }
};

} // namespace

std::string descrFor(ScalarType t) {
  std::string c = typeCode(t);
  return (c[1] == '1' ? "|" : "<") + c;
}

bool read(const std::string &path, ScalarType expected, ref::HostTensor &out, std::string &error) {
  std::string bytes, why;
  if (!readInputFile(path, bytes, why)) {
    error = fmt::format("{}: cannot open: {}", path, why);
    return false;
  }
  auto bad = [&](const std::string &why) {
    error = fmt::format("{}: not a valid .npy file: {}", path, why);
    return false;
  };
  if (bytes.size() < 10 || bytes.compare(0, 6, kMagic, 6) != 0)
    return bad("it does not start with the .npy magic string");
  const unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t headerLen, start;
  if (major == 1) {
    headerLen = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return bad("truncated header");
    headerLen = 0;
    for (int b = 0; b < 4; ++b)
      headerLen |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + b])) << (8 * b);
    start = 12;
  } else {
    return bad(fmt::format("format version {}.{} is not supported (1.0, 2.0, 3.0 are)", major,
                           static_cast<unsigned>(static_cast<unsigned char>(bytes[7]))));
  }
  if (bytes.size() < start + headerLen)
    return bad("truncated header");
  const std::string header = bytes.substr(start, headerLen);
  HeaderParser hp{header};
  std::string descr;
  bool fortran = false, haveDescr = false, haveFortran = false, haveShape = false;
  std::vector<int64_t> shape;
  if (!hp.eat('{'))
    return bad("the header is not a dict");
  while (!hp.eat('}')) {
    std::string key;
    if (!hp.str(key) || !hp.eat(':'))
      return bad("malformed header '" + header + "'");
    if (key == "descr") {
      if (!hp.str(descr))
        return bad("'descr' is not a simple type string (structured arrays are not supported)");
      haveDescr = true;
    } else if (key == "fortran_order") {
      std::string w;
      if (!hp.word(w) || (w != "True" && w != "False"))
        return bad("malformed 'fortran_order'");
      fortran = w == "True";
      haveFortran = true;
    } else if (key == "shape") {
      if (!hp.tuple(shape))
        return bad("malformed 'shape'");
      haveShape = true;
    } else {
      return bad("unexpected header key '" + key + "'");
    }
    if (!hp.eat(',')) {
      if (hp.eat('}'))
        break;
      return bad("malformed header '" + header + "'");
    }
  }
  if (!haveDescr || !haveFortran || !haveShape)
    return bad("the header lacks 'descr', 'fortran_order' or 'shape'");
  if (fortran)
    return bad("it is in Fortran order; save it in C order (numpy.ascontiguousarray)");
  if (descr.size() < 2 || (descr[0] != '<' && descr[0] != '|' && descr[0] != '='))
    return bad(descr.size() && descr[0] == '>' ? "big-endian data is not supported"
                                               : "unsupported dtype '" + descr + "'");
  const std::string code = descr.substr(1);
  if (code != typeCode(expected)) {
    error = fmt::format("{}: dtype '{}' does not match the kernel's {} (expected '{}')", path,
                        descr, scalarTypeName(expected), descrFor(expected));
    return false;
  }
  size_t need = ref::elementBytes(expected);
  for (int64_t d : shape) {
    if (d != 0 && need > (size_t(1) << 46) / static_cast<size_t>(d))
      return bad(fmt::format("shape ({}) is too large", fmt::join(shape, ", ")));
    need *= static_cast<size_t>(d);
  }
  const size_t have = bytes.size() - start - headerLen;
  if (have < need)
    return bad(fmt::format("truncated: shape ({}) needs {} bytes of data, the file has {}",
                           fmt::join(shape, ", "), need, have));
  if (have > need)
    return bad(fmt::format("{} bytes after the data of shape ({})", have - need,
                           fmt::join(shape, ", ")));
  out = ref::HostTensor::zeros(expected, shape);
  std::memcpy(out.data.data(), bytes.data() + start + headerLen, need);
  if (expected == ScalarType::I1)
    for (uint8_t &b : out.data)
      if (b > 1)
        return bad("a bool element is neither 0 nor 1");
  return true;
}

std::string encode(const ref::HostTensor &t) {
  std::string shape = "(";
  for (size_t k = 0; k < t.shape.size(); ++k)
    shape += std::to_string(t.shape[k]) + (t.shape.size() == 1 || k + 1 < t.shape.size() ? "," : "") +
             (k + 1 < t.shape.size() ? " " : "");
  shape += ")";
  std::string dict = "{'descr': '" + descrFor(t.dtype) + "', 'fortran_order': False, 'shape': " +
                     shape + ", }";
  size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::string out(kMagic, 6);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>(dict.size() >> 8);
  out += dict;
  out.append(reinterpret_cast<const char *>(t.data.data()), t.data.size());
  return out;
}

} // namespace wave::npy
