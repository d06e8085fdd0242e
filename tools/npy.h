// A small reader and writer for NumPy's .npy format (versions 1.0, 2.0 and 3.0 headers;
// little-endian data in C order), for wave-run's inputs and outputs.
//
// Element types, as numpy `descr` strings:
//   f16 '<f2', f32 '<f4', f64 '<f8', i8 '|i1', i16 '<i2', i32 '<i4', i64 and index '<i8',
//   u8 '|u1', u32 '<u4', i1 '|b1';
//   bf16 '<u2' and the f8 types '|u1': numpy has no such types, so their bit patterns are stored
//   as unsigned integers (read them in numpy with `.view(ml_dtypes.bfloat16)` and the like).
#pragma once

#include "reference/reference.h"

#include <string>

namespace wave::npy {

// The descr wave-run writes for a type.
std::string descrFor(ScalarType t);

// Reads `path` into `out`, whose dtype must be set to the expected element type: a file of
// another dtype, a big-endian or Fortran-order file, a truncated or malformed one is an error
// (the message names the file).
bool read(const std::string &path, ScalarType expected, ref::HostTensor &out, std::string &error);

// The bytes of a .npy file (v1.0 header) holding `t`; wave-run writes them with the other outputs,
// all or nothing (src/driver/files.h).
std::string encode(const ref::HostTensor &t);

} // namespace wave::npy
