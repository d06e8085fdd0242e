#include "symbolic/compiled_expr.h"

#include "symbolic/lowering.h"

#include <algorithm>

namespace wave::sym {

// Builds trees through the shared lowering; the nodes go to the pool.
class ExprPoolBuilder : public IndexLowering<const CompiledExpr *> {
public:
  using E = const CompiledExpr *;
  ExprPoolBuilder(ExprPool &pool, const std::vector<std::string> &slots,
                  const std::map<std::string, int64_t> &constants)
      : pool_(pool), slots_(slots), constants_(constants) {}

  E make(CompiledExpr::Op op, int64_t v = 0, E a = nullptr, E b = nullptr) {
    auto e = std::make_unique<CompiledExpr>();
    e->op = op;
    e->value = v;
    e->a = a;
    e->b = b;
    pool_.nodes_.push_back(std::move(e));
    return pool_.nodes_.back().get();
  }
  E constant(int64_t v) override { return make(CompiledExpr::Const, v); }
  std::optional<E> symbol(const std::string &name) override {
    auto s = std::find(slots_.begin(), slots_.end(), name);
    if (s != slots_.end())
      return make(CompiledExpr::Slot, s - slots_.begin());
    auto c = constants_.find(name);
    if (c == constants_.end()) {
      pool_.unknown = name;
      return std::nullopt;
    }
    return make(CompiledExpr::Const, c->second);
  }
  E add(E a, E b) override { return make(CompiledExpr::Add, 0, a, b); }
  E mul(E a, E b) override { return make(CompiledExpr::Mul, 0, a, b); }
  E floorDiv(E a, E b) override { return make(CompiledExpr::FloorDiv, 0, a, b); }
  E ceilDiv(E a, E b) override { return make(CompiledExpr::CeilDiv, 0, a, b); }
  E mod(E a, E b) override { return make(CompiledExpr::Mod, 0, a, b); }
  E min(E a, E b) override { return make(CompiledExpr::Min, 0, a, b); }
  E max(E a, E b) override { return make(CompiledExpr::Max, 0, a, b); }
  E exactDiv(E a, E b) override { return make(CompiledExpr::ExactDiv, 0, a, b); }

private:
  ExprPool &pool_;
  const std::vector<std::string> &slots_;
  const std::map<std::string, int64_t> &constants_;
};

const CompiledExpr *ExprPool::compile(const IndexExpr &e, const std::vector<std::string> &slots,
                                      const std::map<std::string, int64_t> &constants) {
  unknown.clear();
  ExprPoolBuilder b(*this, slots, constants);
  auto r = lowerIndexExpr<const CompiledExpr *>(e, b);
  return r ? *r : nullptr;
}

int64_t floorDivInt(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t evaluate(const CompiledExpr &e, const int64_t *slots, bool &ok) {
  using C = CompiledExpr;
  switch (e.op) {
  case C::Const: return e.value;
  case C::Slot: return slots[e.value];
  default: break;
  }
  int64_t a = evaluate(*e.a, slots, ok), b = evaluate(*e.b, slots, ok);
  switch (e.op) {
  case C::Add: return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  case C::Mul: return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  case C::Min: return std::min(a, b);
  case C::Max: return std::max(a, b);
  default: break;
  }
  if (b == 0) {
    ok = false;
    return 0;
  }
  switch (e.op) {
  case C::FloorDiv: return floorDivInt(a, b);
  case C::CeilDiv: return -floorDivInt(-a, b);
  case C::Mod: return a - b * floorDivInt(a, b);
  case C::ExactDiv:
    if (a % b != 0)
      ok = false;
    return a / b;
  default: return 0;
  }
}

} // namespace wave::sym
