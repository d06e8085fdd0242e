// Index expressions compiled for fast repeated evaluation: a tree of integer operations over
// numbered slots (loop iterators, thread ids, ...) and constants, evaluated without GiNaC.
//
// The reference evaluator runs mapping and apply_expr expressions once per element with these,
// and the thread-layout analysis evaluates lane layouts for every lane of a wave. Compiling goes
// through the shared lowering (symbolic/lowering.h), so rational coefficients and the
// floor/ceil/mod/min/max functions mean exactly what they mean everywhere else.
#pragma once

#include "symbolic/index_expr.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace wave::sym {

struct CompiledExpr {
  enum Op { Const, Slot, Add, Mul, FloorDiv, CeilDiv, Mod, Min, Max, ExactDiv } op = Const;
  int64_t value = 0; // Const: the value; Slot: the slot index
  const CompiledExpr *a = nullptr, *b = nullptr;
};

// Owns compiled trees. A symbol becomes a slot when it is named in `slots` (its position there),
// else a constant when `constants` binds it; any other symbol makes compile() fail and sets
// `unknown` to its name.
class ExprPool {
public:
  const CompiledExpr *compile(const IndexExpr &e, const std::vector<std::string> &slots,
                              const std::map<std::string, int64_t> &constants = {});
  std::string unknown;

private:
  std::vector<std::unique_ptr<CompiledExpr>> nodes_;
  friend class ExprPoolBuilder;
};

// Floor division of integers (the language's //), for b != 0.
int64_t floorDivInt(int64_t a, int64_t b);

// Evaluates e with slot values `slots`; `ok` turns false on a division by zero or an inexact
// exact division (and the result is then meaningless). Sums and products wrap.
int64_t evaluate(const CompiledExpr &e, const int64_t *slots, bool &ok);

} // namespace wave::sym
