// Calls of the built-in operations of docs/language.md section 8: argument binding, typing, and
// the graph op each one becomes.
#include "sema/kernel_checker.h"

#include <fmt/format.h>

namespace wave::sema_detail {

using ir::OpKind;

namespace {
const std::vector<std::string> kBuiltins = {
    "read", "write", "mma", "sum", "max", "min", "maximum", "minimum", "select", "exp", "exp2",
    "log", "log2", "sqrt", "rsqrt", "reciprocal", "abs", "tanh", "sin", "cos", "cast",
    "broadcast", "permute", "self_index", "apply_expr", "atomic_add", "atomic_min", "atomic_max", "allocate",
    "barrier", "cumsum", "topk"};

// Activation functions people reach for by name, and how to write them with the builtins: shown
// instead of a spelling suggestion (`relu` is not a misspelt `read`).
std::string commonNameHint(const std::string &n) {
  static const std::pair<const char *, const char *> hints[] = {
      {"relu", "maximum(x, 0.0)"},
      {"gelu", "0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x))) (the tanh "
               "form)"},
      {"silu", "x / (1.0 + exp(-x))"},
      {"swish", "x / (1.0 + exp(-x))"},
      {"sigmoid", "reciprocal(1.0 + exp(-x))"},
      {"softplus", "log(1.0 + exp(x))"},
      {"clamp", "minimum(maximum(x, lo), hi)"},
      {"clip", "minimum(maximum(x, lo), hi)"},
      {"leaky_relu", "select(x > 0.0, x, x * 0.01)"},
  };
  for (const auto &h : hints)
    if (n == h.first)
      return std::string("; there is no builtin '") + n + "': write it as " + h.second +
             " (docs/language.md lists the elementwise operations)";
  return didYouMean(n, kBuiltins);
}
const std::vector<std::string> kPlannedOps = {"set_symbol", "dynamic_val", "scan"};

struct MathRow {
  const char *name;
  ir::MathKind kind;
};
const MathRow kMath[] = {
    {"exp", ir::MathKind::Exp},   {"exp2", ir::MathKind::Exp2},   {"log", ir::MathKind::Log},
    {"log2", ir::MathKind::Log2}, {"sqrt", ir::MathKind::Sqrt},   {"rsqrt", ir::MathKind::Rsqrt},
    {"reciprocal", ir::MathKind::Reciprocal}, {"abs", ir::MathKind::Abs},
    {"tanh", ir::MathKind::Tanh}, {"sin", ir::MathKind::Sin},     {"cos", ir::MathKind::Cos},
};

std::string arityText(const std::vector<KernelChecker::ArgSpec> &spec) {
  size_t required = 0;
  for (const auto &s : spec)
    required += s.required;
  if (required == spec.size())
    return fmt::format("{} argument{}", required, required == 1 ? "" : "s");
  return fmt::format("{} to {} arguments", required, spec.size());
}
} // namespace

std::optional<std::vector<const ast::Expr *>>
KernelChecker::bindArgs(const ast::Call &c, const std::vector<ArgSpec> &spec) {
  std::vector<const ast::Expr *> slots(spec.size(), nullptr);
  size_t next = 0;
  bool ok = true;
  for (const auto &a : c.args) {
    if (!a.value)
      return std::nullopt;
    if (a.isNamed()) {
      size_t idx = spec.size();
      for (size_t i = 0; i < spec.size(); ++i)
        if (a.name.name == spec[i].name)
          idx = i;
      if (idx == spec.size()) {
        std::vector<std::string> names;
        for (const auto &s : spec)
          names.push_back(s.name);
        diags.report(DiagId::UnknownArgument, a.name.range,
                     {c.callee.name, a.name.name, didYouMean(a.name.name, names)});
        ok = false;
        continue;
      }
      if (slots[idx]) {
        diags.report(DiagId::DuplicateArgument, a.name.range, {c.callee.name, a.name.name});
        ok = false;
        continue;
      }
      slots[idx] = a.value.get();
      continue;
    }
    while (next < spec.size() && slots[next])
      ++next;
    if (next >= spec.size()) {
      diags.report(DiagId::WrongArity, c.range,
                   {c.callee.name, arityText(spec), std::to_string(c.args.size())});
      return std::nullopt;
    }
    slots[next++] = a.value.get();
  }
  if (!ok)
    return std::nullopt;
  for (size_t i = 0; i < spec.size(); ++i)
    if (spec[i].required && !slots[i]) {
      diags.report(DiagId::MissingArgument, c.range, {c.callee.name, spec[i].name});
      return std::nullopt;
    }
  return slots;
}

EV KernelChecker::checkCall(const ast::Call &c) {
  const std::string &n = c.callee.name;
  if (n == "read")
    return checkRead(c);
  if (n == "write")
    return checkWrite(c, OpKind::Write);
  if (n == "atomic_add")
    return checkWrite(c, OpKind::AtomicAdd);
  if (n == "atomic_min")
    return checkWrite(c, OpKind::AtomicMin);
  if (n == "atomic_max")
    return checkWrite(c, OpKind::AtomicMax);
  if (n == "gather")
    return checkGather(c);
  if (n == "scatter")
    return checkScatter(c, false);
  if (n == "scatter_add")
    return checkScatter(c, true);
  if (n == "mma")
    return checkMma(c);
  if (n == "sum")
    return checkReduce(c, ir::ReduceKind::Sum);
  if (n == "max")
    return checkReduce(c, ir::ReduceKind::Max);
  if (n == "min")
    return checkReduce(c, ir::ReduceKind::Min);
  if (n == "cumsum")
    return checkCumsum(c);
  if (n == "topk")
    return checkTopK(c);
  if (n == "maximum")
    return checkMinMaxElementwise(c, ir::MathKind::Maximum);
  if (n == "minimum")
    return checkMinMaxElementwise(c, ir::MathKind::Minimum);
  for (const auto &m : kMath)
    if (n == m.name)
      return checkMath(c, m.kind);
  if (n == "select")
    return checkSelect(c);
  if (n == "cast")
    return checkCast(c);
  if (n == "broadcast" || n == "permute")
    return checkBroadcastOrPermute(c, n == "permute");
  if (n == "self_index")
    return checkSelfIndex(c);
  if (n == "apply_expr")
    return checkApplyExpr(c);
  if (n == "allocate")
    return checkAllocate(c);
  if (n == "barrier") {
    if (!bindArgs(c, {}))
      return EV::invalid();
    emit(OpKind::Barrier, c.range, {}, {});
    return {EV::Values, {}, 0, 0, c.range};
  }
  if (std::find(kPlannedOps.begin(), kPlannedOps.end(), n) != kPlannedOps.end()) {
    diags.report(DiagId::PlannedFeature, c.callee.range, {"'" + n + "'"});
    return EV::invalid();
  }
  diags.report(DiagId::UnknownOperation, c.callee.range, {n, commonNameHint(n)});
  return EV::invalid();
}

ir::Value *KernelChecker::memoryOperand(const ast::Expr &e, const std::string &what) {
  EV v = checkExpr(e);
  if (!v.ok())
    return nullptr;
  if (v.isLiteral() || v.values.size() != 1 || !v.values[0]->type.isMemory()) {
    diags.report(DiagId::ExpectedMemory, e.range,
                 {what, v.isLiteral() || v.values.size() != 1 ? "'" + exprText(e) + "'"
                                                              : v.values[0]->type.str()});
    return nullptr;
  }
  return v.values[0];
}

std::optional<ScalarType> KernelChecker::scalarTypeArg(const ast::Expr &e, const std::string &what) {
  if (auto *t = ast::dyn_cast<ast::DTypeLit>(&e))
    return t->type;
  diags.report(DiagId::ExpectedScalarType, e.range, {what, "'" + exprText(e) + "'"});
  return std::nullopt;
}

std::optional<ir::Dim> KernelChecker::dimArg(const ast::Expr &e, const char *what, bool note) {
  if (auto *n = ast::dyn_cast<ast::NameRef>(&e)) {
    bool isValue = params.count(n->name) > 0;
    for (const auto &scope : scopes)
      isValue |= scope.count(n->name) > 0;
    if (isValue) {
      diags.report(DiagId::ExpectedDim, e.range, {what, "the value '" + n->name + "'"});
      return std::nullopt;
    }
  }
  if (!ast::isa<ast::NameRef>(&e) && !ast::isa<ast::Binary>(&e)) {
    diags.report(DiagId::ExpectedDim, e.range, {what, "'" + exprText(e) + "'"});
    return std::nullopt;
  }
  IndexContext ctx = indexContext();
  auto d = S.toDim(e, ctx, what);
  if (d && note)
    noteDim(*d);
  return d;
}

std::optional<ir::Shape> KernelChecker::dimListArg(const ast::Expr &e, const std::string &what) {
  auto *list = ast::dyn_cast<ast::ListExpr>(&e);
  if (!list) {
    diags.report(DiagId::ExpectedDimList, e.range, {what});
    return std::nullopt;
  }
  ir::Shape shape;
  for (const auto &el : list->elements) {
    auto d = dimArg(*el, "a dim of the list");
    if (!d)
      return std::nullopt;
    if (ir::hasDim(shape, *d)) {
      diags.report(DiagId::DuplicateDim, el->range, {d->str(), what});
      return std::nullopt;
    }
    shape.push_back(*d);
  }
  return shape;
}

std::optional<int64_t> KernelChecker::eptArg(const ast::Expr *e) {
  if (!e)
    return std::nullopt;
  IndexContext ctx = indexContext();
  auto v = S.toIndex(*e, ctx);
  auto c = v ? facts.simplify(*v).asInteger() : std::nullopt;
  if (!c || *c <= 0) {
    if (v)
      diags.report(DiagId::EptConflict, e->range,
                   {v->str(), "must be a positive compile-time integer"});
    return std::nullopt;
  }
  return c;
}

std::shared_ptr<const ir::Mapping>
KernelChecker::resolveMapping(const ast::Expr &e, bool isRead, const ir::Type &mem,
                              ir::Shape &regShape) {
  auto *n = ast::dyn_cast<ast::NameRef>(&e);
  auto it = n ? S.mappings.find(n->name) : S.mappings.end();
  if (it == S.mappings.end()) {
    std::vector<std::string> names;
    for (const auto &[name, m] : S.mappings)
      names.push_back(name);
    std::string text = n ? n->name : exprText(e);
    diags.report(DiagId::MappingNotFound, e.range, {text, didYouMean(text, names)});
    return nullptr;
  }
  const ast::MappingDecl &decl = *it->second;
  auto mapping = std::make_shared<ir::Mapping>();
  mapping->name = decl.name.name;
  IndexContext ctx = indexContext();
  std::set<std::string> iterNames;
  for (const auto &iter : decl.iterators) {
    std::string symName = "$" + decl.name.name + "." + iter.name;
    ctx.locals[iter.name] = sym::IndexExpr::symbol(symName);
    mapping->iterators.push_back(symName);
    iterNames.insert(symName);
  }
  auto convert = [&](const std::vector<ast::MappingEntry> &entries,
                     std::vector<std::pair<ir::Dim, sym::IndexExpr>> &out) {
    for (const auto &entry : entries) {
      IndexContext keyCtx = indexContext();
      auto key = S.toDim(*entry.key, keyCtx, "a mapping key");
      auto value = key ? S.toIndex(*entry.value, ctx) : std::nullopt;
      if (!key || !value)
        return false;
      noteDim(*key);
      out.push_back({*key, *value});
    }
    return true;
  };
  if (!convert(decl.inputs, mapping->inputs) || !convert(decl.outputs, mapping->outputs))
    return nullptr;
  // The register side must bind every iterator bare, exactly once.
  const auto &bare = isRead ? mapping->outputs : mapping->inputs;
  const auto &memSide = isRead ? mapping->inputs : mapping->outputs;
  const char *bareName = isRead ? "output" : "input";
  for (const auto &iter : decl.iterators) {
    std::string symName = "$" + decl.name.name + "." + iter.name;
    int count = 0;
    for (const auto &[dim, value] : bare)
      count += value.asSymbol() == symName;
    if (count != 1) {
      diags.report(DiagId::MappingIterator, iter.range, {iter.name, decl.name.name, bareName});
      return nullptr;
    }
  }
  for (const auto &[dim, value] : bare)
    if (!value.asSymbol() || !iterNames.count(*value.asSymbol())) {
      diags.report(DiagId::MappingDims, e.range,
                   {decl.name.name, mem.str(),
                    fmt::format("its {} value for '{}' is '{}', not an iterator", bareName,
                                dim.str(), value.str())});
      return nullptr;
    }
  ir::Shape memDims;
  for (const auto &[dim, value] : memSide)
    memDims.push_back(dim);
  if (!ir::sameDimSet(memDims, mem.shape)) {
    diags.report(DiagId::MappingDims, e.range,
                 {decl.name.name, mem.str(),
                  fmt::format("it indexes the tensor's dims {}, the tensor has {}",
                              ir::shapeStr(memDims), ir::shapeStr(mem.shape))});
    return nullptr;
  }
  regShape.clear();
  for (const auto &[dim, value] : bare)
    regShape.push_back(dim);
  return mapping;
}

EV KernelChecker::checkRead(const ast::Call &c) {
  auto args = bindArgs(c, {{"mem", true}, {"elements_per_thread", false}, {"mapping", false}});
  if (!args)
    return EV::invalid();
  ir::Value *mem = memoryOperand(*(*args)[0], "the first argument of read");
  if (!mem)
    return EV::invalid();
  ir::Shape shape = mem->type.shape;
  std::shared_ptr<const ir::Mapping> mapping;
  if ((*args)[2]) {
    mapping = resolveMapping(*(*args)[2], true, mem->type, shape);
    if (!mapping)
      return EV::invalid();
  }
  auto ept = eptArg((*args)[1]);
  if ((*args)[1] && !ept)
    return EV::invalid();
  ir::Op *op = emit(OpKind::Read, c.range, {mem}, {ir::Type::reg(shape, mem->type.dtype)});
  op->mapping = mapping;
  op->ept = ept;
  return EV::of(op->results[0], c.range);
}

EV KernelChecker::checkWrite(const ast::Call &c, OpKind kind) {
  auto args = bindArgs(c, {{"value", true}, {"mem", true}, {"elements_per_thread", false},
                           {"mapping", false}});
  if (!args)
    return EV::invalid();
  const char *opName = kind == OpKind::Write ? "write"
                       : kind == OpKind::AtomicAdd ? "atomic_add"
                       : kind == OpKind::AtomicMin ? "atomic_min"
                                                   : "atomic_max";
  EV v = checkExpr(*(*args)[0]);
  if (!v.ok())
    return EV::invalid();
  ir::Value *mem = memoryOperand(*(*args)[1], std::string("the second argument of ") + opName);
  if (!mem)
    return EV::invalid();
  ir::Value *reg = v.isLiteral() ? materialize(v, mem->type.dtype, v.loc)
                                 : asRegister(v, std::string("the value of ") + opName);
  if (!reg)
    return EV::invalid();
  std::shared_ptr<const ir::Mapping> mapping;
  ir::Shape expected = mem->type.shape;
  if ((*args)[3]) {
    mapping = resolveMapping(*(*args)[3], false, mem->type, expected);
    if (!mapping)
      return EV::invalid();
  }
  if (!reg->type.shape.empty() && !ir::sameDimSet(reg->type.shape, expected)) {
    diags.report(DiagId::WriteShapeMismatch, (*args)[0]->range,
                 {reg->type.str(), mapping ? "mapping '" + mapping->name + "' of " + mem->type.str()
                                           : mem->type.str()});
    return EV::invalid();
  }
  if (reg->type.dtype != mem->type.dtype) {
    diags.report(DiagId::WrongDtype, (*args)[0]->range,
                 {std::string(opName) + " to " + mem->type.str(), scalarTypeName(mem->type.dtype),
                  scalarTypeName(reg->type.dtype)});
    return EV::invalid();
  }
  if (isFloat(reg->type.dtype) &&
      (kind == OpKind::AtomicMin || kind == OpKind::AtomicMax) &&
      bitWidth(reg->type.dtype) < 32) {
    diags.report(DiagId::WrongDtype, (*args)[0]->range,
                 {opName, "32- or 64-bit", scalarTypeName(reg->type.dtype)});
    return EV::invalid();
  }
  reg = broadcastTo(reg, expected, c.range);
  auto ept = eptArg((*args)[2]);
  if ((*args)[2] && !ept)
    return EV::invalid();
  std::vector<ir::Type> results;
  if (kind != OpKind::Write)
    results.push_back(reg->type);
  ir::Op *op = emit(kind, c.range, {reg, mem}, results);
  op->mapping = mapping;
  op->ept = ept;
  if (kind == OpKind::Write)
    return {EV::Values, {}, 0, 0, c.range};
  return EV::of(op->results[0], c.range);
}

std::shared_ptr<const ir::Mapping>
KernelChecker::dynamicMapping(const ast::Call &c, bool isRead, const ast::Expr &memE,
                              const ast::Expr &idxE, const ast::Expr &dimE, ir::Value *&mem,
                              ir::Value *&index, ir::Shape &regShape) {
  const std::string &name = c.callee.name;
  mem = memoryOperand(memE, "the tensor of " + name);
  if (!mem)
    return nullptr;
  index = asRegister(checkExpr(idxE), "the index of " + name, ScalarType::I32);
  if (!index)
    return nullptr;
  auto d = dimArg(dimE, ("the dim of '" + name + "'").c_str());
  if (!d)
    return nullptr;
  if (!ir::hasDim(mem->type.shape, *d)) {
    diags.report(DiagId::GatherDim, dimE.range,
                 {name, "is '" + d->str() + "', which is not a dim of the tensor " +
                            mem->type.str()});
    return nullptr;
  }
  const ScalarType it = index->type.dtype;
  if (!isInteger(it) || it == ScalarType::I1) {
    diags.report(DiagId::GatherIndex, idxE.range,
                 {name, "must hold integers (i8 to i64, u8, u32, index), got " +
                            index->type.str()});
    return nullptr;
  }
  if (ir::hasDim(index->type.shape, *d)) {
    diags.report(DiagId::GatherIndex, idxE.range,
                 {name, index->type.str() + " has the indexed dim '" + d->str() +
                            "'; its dims are the result's in place of '" + d->str() + "'"});
    return nullptr;
  }
  // The register side: the tensor's dims with D replaced, in its place, by the index's dims that
  // the tensor lacks (in the index's order); the index's other dims are shared (batch) dims.
  regShape.clear();
  for (const auto &md : mem->type.shape) {
    if (md != *d) {
      regShape.push_back(md);
      continue;
    }
    for (const auto &id : index->type.shape)
      if (!ir::hasDim(mem->type.shape, id))
        regShape.push_back(id);
  }
  auto mapping = std::make_shared<ir::Mapping>();
  mapping->name = name;
  mapping->valueSymbol = "$" + name + "#index";
  mapping->indexedDim = *d;
  std::map<std::string, sym::IndexExpr> iter;
  for (size_t i = 0; i < regShape.size(); ++i) {
    std::string s = "$" + name + "#" + std::to_string(i);
    mapping->iterators.push_back(s);
    iter[regShape[i].str()] = sym::IndexExpr::symbol(s);
  }
  auto &regSide = isRead ? mapping->outputs : mapping->inputs;
  auto &memSide = isRead ? mapping->inputs : mapping->outputs;
  for (const auto &rd : regShape)
    regSide.push_back({rd, iter.at(rd.str())});
  for (const auto &md : mem->type.shape)
    memSide.push_back({md, md == *d ? sym::IndexExpr::symbol(mapping->valueSymbol)
                                    : iter.at(md.str())});
  return mapping;
}

EV KernelChecker::checkGather(const ast::Call &c) {
  auto args = bindArgs(c, {{"mem", true}, {"index", true}, {"dim", true}});
  if (!args)
    return EV::invalid();
  ir::Value *mem = nullptr, *index = nullptr;
  ir::Shape shape;
  auto mapping = dynamicMapping(c, true, *(*args)[0], *(*args)[1], *(*args)[2], mem, index, shape);
  if (!mapping)
    return EV::invalid();
  ir::Op *op = emit(OpKind::Read, c.range, {mem, index}, {ir::Type::reg(shape, mem->type.dtype)});
  op->mapping = mapping;
  return EV::of(op->results[0], c.range);
}

EV KernelChecker::checkScatter(const ast::Call &c, bool add) {
  auto args = bindArgs(c, {{"value", true}, {"mem", true}, {"index", true}, {"dim", true}});
  if (!args)
    return EV::invalid();
  const std::string &name = c.callee.name;
  EV v = checkExpr(*(*args)[0]);
  if (!v.ok())
    return EV::invalid();
  ir::Value *mem = nullptr, *index = nullptr;
  ir::Shape expected;
  auto mapping =
      dynamicMapping(c, false, *(*args)[1], *(*args)[2], *(*args)[3], mem, index, expected);
  if (!mapping)
    return EV::invalid();
  ir::Value *reg = v.isLiteral() ? materialize(v, mem->type.dtype, v.loc)
                                 : asRegister(v, "the value of " + name);
  if (!reg)
    return EV::invalid();
  if (!reg->type.shape.empty() && !ir::sameDimSet(reg->type.shape, expected)) {
    diags.report(DiagId::WriteShapeMismatch, (*args)[0]->range,
                 {reg->type.str(), mem->type.str() + " through an index " + index->type.str() +
                                       " along '" + mapping->indexedDim.str() +
                                       "' (the value's dims must be " + ir::shapeStr(expected) +
                                       ")"});
    return EV::invalid();
  }
  if (reg->type.dtype != mem->type.dtype) {
    diags.report(DiagId::WrongDtype, (*args)[0]->range,
                 {name + " to " + mem->type.str(), scalarTypeName(mem->type.dtype),
                  scalarTypeName(reg->type.dtype)});
    return EV::invalid();
  }
  // The register side in the value's own order of dims (the iterators follow it).
  if (!reg->type.shape.empty() && reg->type.shape.size() == expected.size()) {
    auto m = std::make_shared<ir::Mapping>(*mapping);
    std::vector<std::pair<ir::Dim, sym::IndexExpr>> side;
    for (const auto &d : reg->type.shape)
      for (const auto &e : m->inputs)
        if (e.first == d)
          side.push_back(e);
    m->inputs = side;
    mapping = m;
  }
  reg = broadcastTo(reg, expected, c.range);
  std::vector<ir::Type> results;
  if (add)
    results.push_back(reg->type);
  ir::Op *op = emit(add ? OpKind::AtomicAdd : OpKind::Write, c.range, {reg, mem, index}, results);
  op->mapping = mapping;
  if (!add)
    return {EV::Values, {}, 0, 0, c.range};
  return EV::of(op->results[0], c.range);
}

EV KernelChecker::checkMma(const ast::Call &c) {
  auto args = bindArgs(c, {{"lhs", true}, {"rhs", true}, {"acc", true}, {"kind", false}});
  if (!args)
    return EV::invalid();
  ir::Value *lhs = asRegister(checkExpr(*(*args)[0]), "the lhs of mma");
  ir::Value *rhs = lhs ? asRegister(checkExpr(*(*args)[1]), "the rhs of mma") : nullptr;
  ir::Value *acc = rhs ? asRegister(checkExpr(*(*args)[2]), "the acc of mma") : nullptr;
  if (!acc)
    return EV::invalid();
  const ir::Shape &L = lhs->type.shape, &R = rhs->type.shape, &A = acc->type.shape;
  auto fail = [&](const std::string &why) {
    diags.report(DiagId::MmaDims, c.range,
                 {ir::shapeStr(L), ir::shapeStr(R), ir::shapeStr(A), why});
    return EV::invalid();
  };
  // K: the dim shared by lhs and rhs that acc lacks; M: lhs's other dim; N: rhs's other dim;
  // the rest are batch dims, which all three share.
  ir::Shape ks, ms, ns;
  for (const auto &d : L) {
    if (ir::hasDim(R, d) && !ir::hasDim(A, d))
      ks.push_back(d);
    else if (!ir::hasDim(R, d))
      ms.push_back(d);
  }
  for (const auto &d : R)
    if (!ir::hasDim(L, d))
      ns.push_back(d);
  if (ks.empty())
    return fail("no dim is shared by lhs and rhs and absent from acc (the K dim)");
  if (ks.size() > 1)
    return fail("more than one dim could be K: " + ir::shapeStr(ks));
  if (ms.size() != 1)
    return fail(ms.empty() ? "lhs has no M dim of its own" : "lhs has several dims rhs lacks: " + ir::shapeStr(ms));
  if (ns.size() != 1)
    return fail(ns.empty() ? "rhs has no N dim of its own" : "rhs has several dims lhs lacks: " + ir::shapeStr(ns));
  if (!ir::hasDim(A, ms[0]) || !ir::hasDim(A, ns[0]))
    return fail("acc must have the M dim '" + ms[0].str() + "' and the N dim '" + ns[0].str() + "'");
  for (const auto &d : A)
    if (d != ms[0] && d != ns[0] && (!ir::hasDim(L, d) || !ir::hasDim(R, d)))
      return fail("acc dim '" + d.str() + "' is neither M, N nor a batch dim of both operands");
  if (A.size() != L.size() || A.size() != R.size())
    return fail("batch dims must be shared by lhs, rhs and acc");

  const TargetInfo &t = *S.target;
  if (hardwareMmaFailed && !(*args)[3])
    return EV::invalid();
  std::string kindName = hardwareMma;
  if ((*args)[3]) {
    auto k = S.mmaKindName(*(*args)[3]);
    if (!k)
      return EV::invalid();
    kindName = *k;
  }
  const MmaKind *kind = nullptr;
  SourceRange kindLoc = (*args)[3] ? (*args)[3]->range : c.range;
  if (kindName.empty() || kindName == "auto") {
    kind = pickMmaKind(t, lhs->type.dtype, acc->type.dtype);
    // Types only a warpgroup kind takes (fp8 on sm_90a): the first whose tile fits
    // (chooseGroupKinds then picks among them as for the others).
    if (!kind && t.warpgroupMma)
      kind = pickMmaKind(t, lhs->type.dtype, acc->type.dtype, [&](const MmaKind &g) {
        return !groupMisfit(g, ms[0], ns[0], ks[0]);
      });
    if (!kind) {
      diags.report(DiagId::MmaNoKind, c.range,
                   {t.name, scalarTypeName(lhs->type.dtype), scalarTypeName(acc->type.dtype)});
      return EV::invalid();
    }
  } else {
    kind = findMmaKind(t, kindName);
    if (!kind) {
      diags.report(DiagId::MmaKindUnavailable, kindLoc, {kindName, t.name, availableKinds(t)});
      return EV::invalid();
    }
  }
  bool inOk = lhs->type.dtype == rhs->type.dtype;
  bool accepted = false;
  for (ScalarType s : kind->inputs)
    accepted |= s == lhs->type.dtype;
  if (!inOk || !accepted || acc->type.dtype != kind->acc) {
    std::string ins;
    for (ScalarType s : kind->inputs)
      ins += (ins.empty() ? "" : " or ") + std::string(scalarTypeName(s));
    diags.report(DiagId::MmaTypes, c.range,
                 {kind->name, ins, scalarTypeName(kind->acc), scalarTypeName(lhs->type.dtype),
                  scalarTypeName(rhs->type.dtype), scalarTypeName(acc->type.dtype)});
    return EV::invalid();
  }
  if (kind->waveSize != waveSize) {
    diags.report(DiagId::MmaWaveSize, kindLoc,
                 {kind->name, std::to_string(kind->waveSize), std::to_string(waveSize)});
    return EV::invalid();
  }
  if (kind->groupWaves > 1)
    if (auto why = groupMisfit(*kind, ms[0], ns[0], ks[0])) {
      diags.report(DiagId::MmaGroupTile, kindLoc,
                   {kind->name, std::to_string(kind->groupWaves), *why});
      return EV::invalid();
    }
  ir::Op *op = emit(OpKind::Mma, c.range, {lhs, rhs, acc}, {acc->type});
  op->mma = kind;
  op->dims = {ms[0], ns[0], ks[0]};
  if (kindName.empty() || kindName == "auto")
    autoMmas.push_back(op);
  return EV::of(op->results[0], c.range);
}

namespace {
// The extent of d one wave (or warpgroup) covers: its wave tile, else the workgroup tile, else
// the tiling tile, else its static size (0 when none is known).
int64_t waveExtent(const ir::Kernel &k, const ir::Dim &d) {
  if (const auto *w = k.waveFor(d))
    return w->tile;
  if (const auto *wg = k.workgroupFor(d))
    return wg->tile;
  if (const auto *t = k.tilingFor(d))
    return t->tile;
  return d.size.asInteger().value_or(0);
}
// The tile of d that a shared-memory copy stages: the tiling tile, else the workgroup tile,
// else the static size.
int64_t stagedExtent(const ir::Kernel &k, const ir::Dim &d) {
  if (const auto *t = k.tilingFor(d))
    return t->tile;
  if (const auto *wg = k.workgroupFor(d))
    return wg->tile;
  return d.size.asInteger().value_or(0);
}
} // namespace

std::optional<std::string> KernelChecker::groupMisfit(const MmaKind &k, const ir::Dim &m,
                                                      const ir::Dim &n, const ir::Dim &kd) {
  const auto &hw = kernel->hardware;
  const int64_t group = static_cast<int64_t>(k.waveSize) * k.groupWaves;
  const int64_t threads = static_cast<int64_t>(hw.wavesPerBlock[0]) * hw.wavesPerBlock[1] *
                          hw.wavesPerBlock[2] * group;
  if (threads > S.target->maxThreadsPerBlock)
    return fmt::format("the workgroup would have {} threads, more than the {} of target '{}'",
                       threads, S.target->maxThreadsPerBlock, S.target->name);
  const std::pair<const ir::Dim *, unsigned> need[] = {{&m, k.m}, {&n, k.n}, {&kd, k.k}};
  for (const auto &[d, step] : need) {
    const int64_t e = d == &kd ? stagedExtent(*kernel, *d) : waveExtent(*kernel, *d);
    if (e <= 0 || e % step != 0)
      return fmt::format("the {} of {} per {} ({}) must be a multiple of {}",
                         d == &kd ? "tile" : "extent", d->str(),
                         d == &kd ? "loop trip" : "warpgroup",
                         e > 0 ? std::to_string(e) : std::string("unknown"), step);
  }
  return std::nullopt;
}

bool KernelChecker::groupAutoFits(const ir::Op &mma, const MmaKind &k) {
  if (wavesGiven || k.waveSize != waveSize)
    return false;
  // Dims besides M and N are batch dims that every workgroup covers one index of.
  auto batchOnly = [&](const ir::Shape &shape, const ir::Dim &a, const ir::Dim &b) {
    for (const auto &d : shape) {
      if (d == a || d == b)
        continue;
      const auto *wg = kernel->workgroupFor(d);
      if (!wg || wg->tile != 1)
        return false;
    }
    return true;
  };
  if (!batchOnly(mma.results[0]->type.shape, mma.dims[0], mma.dims[1]))
    return false;
  if (groupMisfit(k, mma.dims[0], mma.dims[1], mma.dims[2]))
    return false;
  // B (and A when it is read from memory) straight from a read of a shared-memory parameter
  // whose innermost dim is K (K-major, rows of 32, 64 or 128 bytes or whole 128-byte blocks)
  // or, for B, N (N-major, rows of whole 128-byte blocks). A may be any register value.
  for (int i = 0; i < 2; ++i) {
    const ir::Value *v = mma.operands[i];
    const bool shared = v->def && v->def->kind == OpKind::Read && !v->def->mapping &&
                        v->def->operands[0]->paramIndex >= 0 &&
                        v->def->operands[0]->type.space == AddressSpace::Shared;
    const bool byte = bitWidth(v->type.dtype) == 8; // fp8: A and B from shared memory, K-major
    if (i == 0 && !shared && !byte)
      continue;
    if (!shared)
      return false;
    const ir::Value *mem = v->def->operands[0];
    const ir::Shape &shape = mem->type.shape;
    const ir::Dim &row = mma.dims[i], &kd = mma.dims[2];
    if (shape.size() < 2 || !batchOnly(shape, row, kd))
      return false;
    const int64_t bytes = bitWidth(mem->type.dtype) / 8;
    if (shape[shape.size() - 2] == row && shape.back() == kd) {
      const int64_t rowBytes = stagedExtent(*kernel, kd) * bytes;
      if (rowBytes != 32 && rowBytes != 64 && rowBytes % 128 != 0)
        return false;
    } else if (i == 1 && !byte && shape[shape.size() - 2] == kd && shape.back() == row) {
      if ((static_cast<int64_t>(k.n) * bytes) % 128 != 0)
        return false;
    } else {
      return false;
    }
  }
  return true;
}

// MFMA shape by tile (docs/internals.md "MFMA shape"): every mma of the kernel left to `auto`
// takes the target's 32x32 kind (wideMfmaKind) instead of the 16x16 one when each wave's M and N
// extents are multiples of 32 and its K tile a multiple of the wide kind's K. Both kinds hold a
// wave tile's accumulator in the same registers (M x N / 64 per lane) and read the same operand
// registers per instruction, so the wide kind does the tile in half the instructions. Kept at
// 16x16: a dim that is one product's K and another's M or N (chained products: its step would
// differ, `unsupported-mma-step`), a dim whose vector shape the kernel gives, unknown extents.
void KernelChecker::chooseMfmaKinds(const std::vector<ir::Op *> &mmas) {
  const TargetInfo &t = *S.target;
  std::vector<const MmaKind *> wide;
  for (const ir::Op *op : mmas) {
    const MmaKind *w = wideMfmaKind(t, *op->mma);
    if (!w)
      return;
    for (int i = 0; i < 3; ++i) {
      const ir::Dim &d = op->dims[i];
      for (const auto &[vd, _] : kernel->hardware.vectorShapes)
        if (vd == d)
          return;
      for (const ir::Op *other : mmas)
        for (int j = 0; j < 3; ++j)
          if (other->dims[j] == d && (i == 2) != (j == 2))
            return;
      const int64_t e = i == 2 ? stagedExtent(*kernel, d) : waveExtent(*kernel, d);
      const int64_t step = i == 0 ? w->m : i == 1 ? w->n : w->k;
      if (e <= 0 || e % step != 0)
        return;
    }
    wide.push_back(w);
  }
  for (size_t i = 0; i < mmas.size(); ++i)
    mmas[i]->mma = wide[i];
}

void KernelChecker::chooseGroupKinds() {
  std::vector<ir::Op *> mmas;
  ir::walk(kernel->body, [&](const ir::Op &op) {
    if (op.kind == OpKind::Mma && op.mma)
      mmas.push_back(const_cast<ir::Op *>(&op));
  });
  if (mmas.empty())
    return;
  const TargetInfo &t = *S.target;
  if (t.warpgroupMma && autoMmas.size() == mmas.size()) {
    std::vector<const MmaKind *> picked;
    for (ir::Op *op : mmas) {
      const MmaKind *k = pickMmaKind(t, op->operands[0]->type.dtype, op->results[0]->type.dtype,
                                     [&](const MmaKind &g) { return groupAutoFits(*op, g); });
      if (!k || k->groupWaves <= 1)
        break;
      picked.push_back(k);
    }
    if (picked.size() == mmas.size())
      for (size_t i = 0; i < mmas.size(); ++i)
        mmas[i]->mma = picked[i];
  }
  if (t.mmaFamily == MmaFamily::MFMA && autoMmas.size() == mmas.size())
    chooseMfmaKinds(mmas);
  // The first mma of the other sort than the kernel's first is the one reported.
  const ir::Op *group = nullptr, *single = nullptr, *later = nullptr;
  for (const ir::Op *op : mmas) {
    const ir::Op *&first = op->mma->groupWaves > 1 ? group : single;
    if (!first) {
      first = op;
      later = later ? later : (group && single ? op : nullptr);
    }
  }
  if (group && single)
    diags.report(DiagId::MmaGroupMix, later->loc,
                 {group->mma->name, single->mma->name});
}

EV KernelChecker::checkReduce(const ast::Call &c, ir::ReduceKind kind) {
  auto args = bindArgs(c, {{"x", true}, {"dim", false}, {"init", false}});
  if (!args)
    return EV::invalid();
  ir::Value *x = asRegister(checkExpr(*(*args)[0]), "the operand of '" + c.callee.name + "'");
  if (!x)
    return EV::invalid();
  if (x->type.shape.empty()) {
    diags.report(DiagId::ExpectedRegister, (*args)[0]->range,
                 {"the operand of '" + c.callee.name + "'", "a scalar (nothing to reduce)"});
    return EV::invalid();
  }
  ir::Dim dim = x->type.shape.back(); // default: the innermost dim
  if (const ast::Expr *d = (*args)[1]) {
    std::string what = "the dim of '" + c.callee.name + "'";
    if (c.callee.name != "sum")
      what += " (the elementwise " + std::string(c.callee.name == "max" ? "maximum" : "minimum") +
              " of two values is " + (c.callee.name == "max" ? "maximum" : "minimum") + "(a, b))";
    auto dd = dimArg(*d, what.c_str());
    if (!dd)
      return EV::invalid();
    if (!ir::hasDim(x->type.shape, *dd)) {
      diags.report(DiagId::NoSuchDim, d->range, {x->type.str(), dd->str(), ir::shapeStr(x->type.shape)});
      return EV::invalid();
    }
    dim = *dd;
  }
  ir::Shape out;
  for (const auto &d : x->type.shape)
    if (d != dim)
      out.push_back(d);
  ir::Type rt = ir::Type::reg(out, x->type.dtype);
  std::vector<ir::Value *> operands{x};
  if (const ast::Expr *i = (*args)[2]) {
    EV iv = checkExpr(*i);
    if (!iv.ok())
      return EV::invalid();
    ir::Value *init = iv.isLiteral() ? materialize(iv, x->type.dtype, iv.loc)
                                     : asRegister(iv, "the init of '" + c.callee.name + "'");
    if (!init)
      return EV::invalid();
    if (init->type.dtype != rt.dtype) {
      diags.report(DiagId::TypeMismatch, i->range,
                   {scalarTypeName(init->type.dtype), scalarTypeName(rt.dtype)});
      return EV::invalid();
    }
    if (!init->type.shape.empty() && !ir::sameDimSet(init->type.shape, out)) {
      diags.report(DiagId::ShapeMismatch, i->range,
                   {ir::shapeStr(init->type.shape), ir::shapeStr(out)});
      return EV::invalid();
    }
    operands.push_back(broadcastTo(init, out, i->range));
  }
  ir::Op *op = emit(OpKind::Reduce, c.range, operands, {rt});
  op->reduce = kind;
  op->dims = {dim};
  return EV::of(op->results[0], c.range);
}

// The operand of a scan-like operation (cumsum, topk) and the dim it runs along (`dim`, the
// innermost dim by default, as for the reductions).
std::optional<std::pair<ir::Value *, ir::Dim>>
KernelChecker::alongDimOperand(const ast::Call &c, const ast::Expr &xe, const ast::Expr *de) {
  const std::string what = "the operand of '" + c.callee.name + "'";
  ir::Value *x = asRegister(checkExpr(xe), what);
  if (!x)
    return std::nullopt;
  if (x->type.shape.empty()) {
    diags.report(DiagId::ExpectedRegister, xe.range, {what, "a scalar (it has no dim)"});
    return std::nullopt;
  }
  ir::Dim dim = x->type.shape.back();
  if (de) {
    std::string dwhat = "the dim of '" + c.callee.name + "'";
    auto dd = dimArg(*de, dwhat.c_str());
    if (!dd)
      return std::nullopt;
    if (!ir::hasDim(x->type.shape, *dd)) {
      diags.report(DiagId::NoSuchDim, de->range, {x->type.str(), dd->str(), ir::shapeStr(x->type.shape)});
      return std::nullopt;
    }
    dim = *dd;
  }
  return std::make_pair(x, dim);
}

// cumsum(x, dim = D): the inclusive prefix sum along D, of x's shape and type
// (docs/language.md section 8).
EV KernelChecker::checkCumsum(const ast::Call &c) {
  auto args = bindArgs(c, {{"x", true}, {"dim", false}});
  if (!args)
    return EV::invalid();
  auto xd = alongDimOperand(c, *(*args)[0], (*args)[1]);
  if (!xd)
    return EV::invalid();
  ir::Op *op = emit(OpKind::Cumsum, c.range, {xd->first}, {xd->first->type});
  op->dims = {xd->second};
  return EV::of(op->results[0], c.range);
}

// values, indices = topk(x, K, dim = D): the K largest elements along D in descending order
// (ties: the lower index first) and their indices along D as i32; both of x's shape with D
// replaced by K, a dim whose value is a constant from 1 to 64 (docs/language.md section 8).
EV KernelChecker::checkTopK(const ast::Call &c) {
  auto args = bindArgs(c, {{"x", true}, {"k", true}, {"dim", false}});
  if (!args)
    return EV::invalid();
  auto xd = alongDimOperand(c, *(*args)[0], (*args)[2]);
  if (!xd)
    return EV::invalid();
  const ast::Expr &ke = *(*args)[1];
  if (!ast::isa<ast::NameRef>(&ke) && !ast::isa<ast::Binary>(&ke)) {
    diags.report(DiagId::TopKBadK, ke.range,
                 {"must be a dim (a symbol such as K, with a value from 1 to 64) naming the "
                  "result's new dim, got '" + exprText(ke) + "'"});
    return EV::invalid();
  }
  auto kd = dimArg(ke, "the k of 'topk'");
  if (!kd)
    return EV::invalid();
  ir::Value *x = xd->first;
  if (ir::hasDim(x->type.shape, *kd)) {
    diags.report(DiagId::TopKBadK, ke.range,
                 {"'" + kd->str() + "' is already a dim of the operand " + x->type.str() +
                  "; the results need a new dim"});
    return EV::invalid();
  }
  auto k = kd->size.asInteger();
  if (!k || *k < 1 || *k > 64) {
    diags.report(DiagId::TopKBadK, ke.range,
                 {"'" + kd->str() + "' is " + (k ? std::to_string(*k) : kd->size.str()) +
                  ", but k must be a constant from 1 to 64"});
    return EV::invalid();
  }
  ir::Shape out;
  for (const auto &d : x->type.shape)
    out.push_back(d == xd->second ? *kd : d);
  ir::Op *op = emit(OpKind::TopK, c.range, {x},
                    {ir::Type::reg(out, x->type.dtype), ir::Type::reg(out, ScalarType::I32)});
  op->dims = {xd->second, *kd};
  op->ivalue = *k;
  return {EV::Values, {op->results[0], op->results[1]}, 0, 0, c.range};
}

EV KernelChecker::checkMath(const ast::Call &c, ir::MathKind kind) {
  auto args = bindArgs(c, {{"x", true}});
  if (!args)
    return EV::invalid();
  ir::Value *x = asRegister(checkExpr(*(*args)[0]), "the operand of '" + c.callee.name + "'");
  if (!x)
    return EV::invalid();
  if (!isFloat(x->type.dtype) && kind != ir::MathKind::Abs) {
    diags.report(DiagId::WrongDtype, (*args)[0]->range,
                 {"'" + c.callee.name + "'", "float", scalarTypeName(x->type.dtype)});
    return EV::invalid();
  }
  ir::Op *op = emit(OpKind::Math, c.range, {x}, {x->type});
  op->math = kind;
  return EV::of(op->results[0], c.range);
}

EV KernelChecker::checkMinMaxElementwise(const ast::Call &c, ir::MathKind kind) {
  auto args = bindArgs(c, {{"a", true}, {"b", true}});
  if (!args)
    return EV::invalid();
  EV a = checkExpr(*(*args)[0]);
  EV b = a.ok() ? checkExpr(*(*args)[1]) : EV::invalid();
  if (!a.ok() || !b.ok())
    return EV::invalid();
  ir::Value *va = nullptr, *vb = nullptr;
  auto shape = unifyOperands(a, b, c.callee.range, c.callee.name.c_str(), va, vb);
  if (!shape)
    return EV::invalid();
  ir::Op *op = emit(OpKind::Math, c.range, {broadcastTo(va, *shape, c.range), broadcastTo(vb, *shape, c.range)},
                    {ir::Type::reg(*shape, va->type.dtype)});
  op->math = kind;
  return EV::of(op->results[0], c.range);
}

EV KernelChecker::checkSelect(const ast::Call &c) {
  auto args = bindArgs(c, {{"cond", true}, {"a", true}, {"b", true}});
  if (!args)
    return EV::invalid();
  ir::Value *cond = asRegister(checkExpr(*(*args)[0]), "the condition of select");
  if (!cond)
    return EV::invalid();
  if (cond->type.dtype != ScalarType::I1) {
    diags.report(DiagId::WrongDtype, (*args)[0]->range,
                 {"the condition of select", "i1", scalarTypeName(cond->type.dtype)});
    return EV::invalid();
  }
  EV a = checkExpr(*(*args)[1]);
  EV b = a.ok() ? checkExpr(*(*args)[2]) : EV::invalid();
  if (!a.ok() || !b.ok())
    return EV::invalid();
  ir::Value *va = nullptr, *vb = nullptr;
  auto shape = unifyOperands(a, b, c.callee.range, "select", va, vb);
  if (!shape)
    return EV::invalid();
  ir::Shape full = *shape;
  if (!ir::containsDims(full, cond->type.shape)) {
    if (ir::containsDims(cond->type.shape, full)) {
      full = cond->type.shape;
    } else {
      diags.report(DiagId::ShapeMismatch, (*args)[0]->range,
                   {ir::shapeStr(cond->type.shape), ir::shapeStr(full)});
      return EV::invalid();
    }
  }
  ir::Op *op = emit(OpKind::Select, c.range,
                    {broadcastTo(cond, full, c.range), broadcastTo(va, full, c.range),
                     broadcastTo(vb, full, c.range)},
                    {ir::Type::reg(full, va->type.dtype)});
  return EV::of(op->results[0], c.range);
}

EV KernelChecker::checkCast(const ast::Call &c) {
  auto args = bindArgs(c, {{"x", true}, {"dtype", true}});
  if (!args)
    return EV::invalid();
  auto t = scalarTypeArg(*(*args)[1], "the second argument of cast");
  EV x = t ? checkExpr(*(*args)[0]) : EV::invalid();
  if (!x.ok())
    return EV::invalid();
  ir::Value *v = x.isLiteral() ? materialize(x, *t, x.loc) : asRegister(x, "the operand of cast");
  if (!v)
    return EV::invalid();
  ir::Op *op = emit(OpKind::Cast, c.range, {v}, {ir::Type::reg(v->type.shape, *t)});
  op->dtype = *t;
  return EV::of(op->results[0], c.range);
}

EV KernelChecker::checkBroadcastOrPermute(const ast::Call &c, bool permute) {
  auto args = bindArgs(c, {{"x", true}, {"dims", true}});
  if (!args)
    return EV::invalid();
  ir::Value *x = asRegister(checkExpr(*(*args)[0]), "the operand of " + c.callee.name);
  auto target = x ? dimListArg(*(*args)[1], "the second argument of " + c.callee.name)
                  : std::nullopt;
  if (!target)
    return EV::invalid();
  if (permute) {
    if (!ir::sameDimSet(*target, x->type.shape)) {
      diags.report(DiagId::BadPermute, (*args)[1]->range,
                   {x->type.str(), ir::shapeStr(*target)});
      return EV::invalid();
    }
  } else {
    for (const auto &d : x->type.shape)
      if (!ir::hasDim(*target, d)) {
        diags.report(DiagId::BadBroadcast, (*args)[1]->range,
                     {x->type.str(), ir::shapeStr(*target), d.str()});
        return EV::invalid();
      }
  }
  ir::Op *op = emit(permute ? OpKind::Permute : OpKind::Broadcast, c.range, {x},
                    {ir::Type::reg(*target, x->type.dtype)});
  op->dims = *target;
  return EV::of(op->results[0], c.range);
}

EV KernelChecker::checkSelfIndex(const ast::Call &c) {
  auto args = bindArgs(c, {{"dim", true}, {"dtype", true}});
  if (!args)
    return EV::invalid();
  auto d = dimArg(*(*args)[0], "the first argument of self_index");
  auto t = d ? scalarTypeArg(*(*args)[1], "the second argument of self_index") : std::nullopt;
  if (!t)
    return EV::invalid();
  ir::Op *op = emit(OpKind::SelfIndex, c.range, {}, {ir::Type::reg({*d}, *t)});
  op->dims = {*d};
  op->dtype = *t;
  return EV::of(op->results[0], c.range);
}

EV KernelChecker::checkApplyExpr(const ast::Call &c) {
  auto args = bindArgs(c, {{"x", true}, {"fn", true}});
  if (!args)
    return EV::invalid();
  ir::Value *x = asRegister(checkExpr(*(*args)[0]), "the operand of apply_expr");
  if (!x)
    return EV::invalid();
  if (!isInteger(x->type.dtype) || x->type.dtype == ScalarType::I1) {
    diags.report(DiagId::WrongDtype, (*args)[0]->range,
                 {"apply_expr", "integer", scalarTypeName(x->type.dtype)});
    return EV::invalid();
  }
  auto *fn = ast::dyn_cast<ast::Lambda>((*args)[1]);
  if (!fn) {
    diags.report(DiagId::ExpectedRegister, (*args)[1]->range,
                 {"the second argument of apply_expr", "'" + exprText(*(*args)[1]) + "' (expected v => EXPR)"});
    return EV::invalid();
  }
  IndexContext ctx = indexContext();
  std::string var = "$" + fn->param.name;
  ctx.locals[fn->param.name] = sym::IndexExpr::symbol(var);
  bool isPred = false;
  if (auto *b = ast::dyn_cast<ast::Binary>(fn->body.get()))
    isPred = ast::isComparison(b->op) || b->op == ast::BinaryOp::And || b->op == ast::BinaryOp::Or;
  ir::Op *op = nullptr;
  if (isPred) {
    auto p = S.toPred(*fn->body, ctx);
    if (!p)
      return EV::invalid();
    op = emit(OpKind::ApplyExpr, c.range, {x}, {ir::Type::reg(x->type.shape, ScalarType::I1)});
    op->pred = *p;
  } else {
    auto e = S.toIndex(*fn->body, ctx);
    if (!e)
      return EV::invalid();
    op = emit(OpKind::ApplyExpr, c.range, {x}, {x->type});
    op->expr = *e;
  }
  op->lambdaVar = var;
  return EV::of(op->results[0], c.range);
}

EV KernelChecker::checkAllocate(const ast::Call &c) {
  auto args = bindArgs(c, {{"dims", true}, {"tile", true}, {"dtype", true}});
  if (!args)
    return EV::invalid();
  auto dims = dimListArg(*(*args)[0], "the first argument of allocate");
  if (!dims)
    return EV::invalid();
  auto *tiles = ast::dyn_cast<ast::ListExpr>((*args)[1]);
  if (!tiles || tiles->elements.size() != dims->size()) {
    diags.report(DiagId::ExpectedDimList, (*args)[1]->range,
                 {"the tile of allocate (one compile-time size per dim)"});
    return EV::invalid();
  }
  auto t = scalarTypeArg(*(*args)[2], "the third argument of allocate");
  if (!t)
    return EV::invalid();
  std::vector<int64_t> tile;
  int64_t elems = 1;
  for (size_t i = 0; i < dims->size(); ++i) {
    auto v = constantTile(*tiles->elements[i], (*dims)[i].str());
    if (!v)
      return EV::invalid();
    tile.push_back(*v);
    elems *= *v;
  }
  ldsBytes += elems * ((bitWidth(*t) + 7) / 8);
  if (ldsBytes > S.target->ldsBytes) {
    diags.report(DiagId::AllocateTooLarge, c.range,
                 {kernel->name, std::to_string(ldsBytes), S.target->name,
                  std::to_string(S.target->ldsBytes)});
    return EV::invalid();
  }
  ir::Op *op = emit(OpKind::Allocate, c.range, {},
                    {ir::Type::mem(*dims, AddressSpace::Shared, *t)});
  op->dims = *dims;
  op->tile = tile;
  op->dtype = *t;
  return EV::of(op->results[0], c.range);
}

} // namespace wave::sema_detail
