#include "ir/graph.h"

#include "target/target_table.h"

#include <fmt/format.h>

namespace wave::ir {

bool hasDim(const Shape &s, const Dim &d) {
  for (const auto &x : s)
    if (x == d)
      return true;
  return false;
}

bool containsDims(const Shape &outer, const Shape &inner) {
  for (const auto &d : inner)
    if (!hasDim(outer, d))
      return false;
  return true;
}

bool sameDimSet(const Shape &a, const Shape &b) {
  return a.size() == b.size() && containsDims(a, b);
}

std::string tileStartSymbol(const Dim &d) { return "$TS_" + d.str(); }
std::string tileEndSymbol(const Dim &d) { return "$TE_" + d.str(); }

std::string shapeStr(const Shape &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + s[i].str();
  return out + "]";
}

static std::string dimsStr(const Shape &s) {
  std::string out;
  for (const auto &d : s)
    out += d.str() + ", ";
  return out;
}

std::string Type::str() const {
  switch (kind) {
  case Register:
    if (shape.empty())
      return scalarTypeName(dtype);
    return "Register[" + dimsStr(shape) + scalarTypeName(dtype) + "]";
  case Memory:
    return "Memory[" + dimsStr(shape) + addressSpaceName(space) + ", " + scalarTypeName(dtype) +
           "]";
  case None:
    break;
  }
  return "nothing";
}

bool Type::operator==(const Type &o) const {
  if (kind != o.kind || dtype != o.dtype || shape.size() != o.shape.size())
    return false;
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != o.shape[i])
      return false;
  return kind != Memory || space == o.space;
}

const char *opKindName(OpKind k) {
  static const char *names[] = {"constant", "read",      "write",    "atomic_add", "atomic_min",
                                "atomic_max", "mma",      "reduce",    "unary",    "binary",     "math",
                                "select",   "cast",      "broadcast", "permute",   "self_index",
                                "apply_expr", "allocate", "barrier",  "iterate",   "if",
                                "yield",    "cumsum",    "topk"};
  return names[static_cast<int>(k)];
}

const char *binaryKindName(BinaryKind k) {
  static const char *names[] = {"add", "sub", "mul", "div", "floordiv", "mod", "eq", "ne",
                                "lt",  "le",  "gt",  "ge",  "and",      "xor", "or"};
  return names[static_cast<int>(k)];
}

const char *mathKindName(MathKind k) {
  static const char *names[] = {"exp",        "exp2", "log",  "log2", "sqrt", "rsqrt",  "reciprocal",
                                "abs",        "tanh", "sin",  "cos",  "maximum", "minimum"};
  return names[static_cast<int>(k)];
}

Value *Kernel::newValue(Type t, std::string name) {
  values.push_back(std::make_unique<Value>());
  Value *v = values.back().get();
  v->id = static_cast<unsigned>(values.size() - 1);
  v->type = std::move(t);
  v->name = std::move(name);
  return v;
}

const WorkgroupConstraint *Kernel::workgroupFor(const Dim &d) const {
  for (const auto &w : workgroups)
    if (w.dim == d)
      return &w;
  return nullptr;
}
const WaveConstraint *Kernel::waveFor(const Dim &d) const {
  for (const auto &w : waves)
    if (w.dim == d)
      return &w;
  return nullptr;
}
const TilingConstraint *Kernel::tilingFor(const Dim &d) const {
  for (const auto &t : tilings)
    if (t.dim == d)
      return &t;
  return nullptr;
}
std::optional<sym::IndexExpr> Kernel::vectorShapeFor(const Dim &d) const {
  for (const auto &[dim, vs] : hardware.vectorShapes)
    if (dim == d)
      return vs;
  return std::nullopt;
}

void walk(const Region &r, const std::function<void(const Op &)> &f) {
  for (const auto &op : r.ops) {
    f(*op);
    for (const auto &sub : op->regions)
      walk(*sub, f);
  }
}

namespace {
std::string valueRef(const Value *v) {
  if (!v)
    return "%?";
  return v->name.empty() ? fmt::format("%{}", v->id) : fmt::format("%{}.{}", v->id, v->name);
}

std::string opAttrs(const Op &op) {
  switch (op.kind) {
  case OpKind::Constant:
    return isFloat(op.dtype) ? fmt::format(" {}", op.fvalue) : fmt::format(" {}", op.ivalue);
  case OpKind::Read:
  case OpKind::Write:
  case OpKind::AtomicAdd:
  case OpKind::AtomicMin:
  case OpKind::AtomicMax: {
    std::string s;
    if (op.mapping && !op.mapping->valueSymbol.empty())
      s += " index_dim=" + op.mapping->indexedDim.str();
    else if (op.mapping)
      s += " mapping=" + op.mapping->name;
    if (op.ept)
      s += fmt::format(" elements_per_thread={}", *op.ept);
    return s;
  }
  case OpKind::Mma:
    return op.mma ? std::string(" kind=") + op.mma->name : " kind=auto";
  case OpKind::Reduce: {
    static const char *r[] = {"sum", "max", "min"};
    return fmt::format(" {} dim={}", r[static_cast<int>(op.reduce)], op.dims[0].str());
  }
  case OpKind::Cumsum:
    return fmt::format(" dim={}", op.dims[0].str());
  case OpKind::TopK:
    return fmt::format(" k={} dim={} into={}", op.ivalue, op.dims[0].str(), op.dims[1].str());
  case OpKind::Unary:
    return op.unary == UnaryKind::Neg ? " neg" : " bitnot";
  case OpKind::Binary:
    return std::string(" ") + binaryKindName(op.binary);
  case OpKind::Math:
    return std::string(" ") + mathKindName(op.math);
  case OpKind::Cast:
    return std::string(" to ") + scalarTypeName(op.dtype);
  case OpKind::Broadcast:
  case OpKind::Permute:
    return " " + shapeStr(op.dims);
  case OpKind::SelfIndex:
    return " " + op.dims[0].str();
  case OpKind::ApplyExpr:
    return " " + (op.pred ? op.pred->str() : op.expr.str());
  case OpKind::Allocate: {
    std::string t;
    for (size_t i = 0; i < op.tile.size(); ++i)
      t += (i ? ", " : "") + std::to_string(op.tile[i]);
    return " " + shapeStr(op.dims) + " tile [" + t + "]";
  }
  case OpKind::Iterate:
    return " " + op.dims[0].str();
  case OpKind::If:
    return op.pred ? " " + op.pred->str() : "";
  default:
    return "";
  }
}

void printRegion(const Region &r, int indent, std::string &out);

void printOp(const Op &op, int indent, std::string &out) {
  std::string pad(indent, ' ');
  std::string line = pad;
  if (!op.results.empty()) {
    for (size_t i = 0; i < op.results.size(); ++i)
      line += (i ? ", " : "") + valueRef(op.results[i]);
    line += " = ";
  }
  line += opKindName(op.kind);
  line += opAttrs(op);
  for (size_t i = 0; i < op.operands.size(); ++i)
    line += (i ? ", " : " ") + valueRef(op.operands[i]);
  if (!op.results.empty()) {
    line += " : ";
    for (size_t i = 0; i < op.results.size(); ++i)
      line += (i ? ", " : "") + op.results[i]->type.str();
  }
  out += line + fmt::format("  @{}:{}\n", op.loc.begin.line, op.loc.begin.col);
  for (const auto &sub : op.regions) {
    std::string args;
    for (size_t i = 0; i < sub->args.size(); ++i)
      args += (i ? ", " : "") + valueRef(sub->args[i]) + ": " + sub->args[i]->type.str();
    out += pad + "  {" + (args.empty() ? "" : " (" + args + ")") + "\n";
    printRegion(*sub, indent + 4, out);
    out += pad + "  }\n";
  }
}

void printRegion(const Region &r, int indent, std::string &out) {
  for (const auto &op : r.ops)
    printOp(*op, indent, out);
}
} // namespace

std::string print(const Kernel &k) {
  std::string out = "kernel " + k.name + "(";
  for (size_t i = 0; i < k.params.size(); ++i) {
    const auto &p = k.params[i];
    out += (i ? ", " : "") + valueRef(p.value) + ": " + p.value->type.str() +
           (p.isOutput ? " out" : "");
  }
  out += ") {\n";
  printRegion(k.body, 2, out);
  return out + "}\n";
}

} // namespace wave::ir
