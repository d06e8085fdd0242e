// `if`: an scf.if on a condition that is the same for every thread (docs/language.md section
// 7: the condition is an i1 scalar or a predicate over symbols), with the yielded values as the
// scf.if's results. Each result takes the layout of the branch that yields a laid-out value
// (the then branch's first); the other branch's value is converted to it (layout.cpp,
// convertTo) before its scf.yield. A value uniform in both branches stays uniform. The legalize
// pass (passes/legalize.cpp, inBranch and ifYields) refuses what a branch may not hold and what
// cannot be yielded; the checks here are its backstops (`codegen-unsupported`). The condition
// is the same in every thread of the workgroup, so a branch may touch shared memory: its items
// keep their kinds between IfBegin / IfElse / IfEnd marks, and barrier insertion walks each
// branch from the state before the `if` (passes/barrier_insertion.h).
#include "codegen/emitter/kernel_emitter.h"

namespace wave::codegen::detail {

namespace {
// The emitted lines of one branch, with the expression cache as the branch left it.
struct Branch {
  std::vector<std::pair<std::string, SyncItem>> lines; // emitted lines, shared-memory kinds
  std::map<std::string, std::string> cache;
  std::vector<RegVal> yielded;
};
} // namespace

// The i1 condition of an `if`: a predicate over symbols, or a uniform scalar.
std::string KernelEmitter::ifCondition(const ir::Op &op) {
  if (op.pred)
    return lowerPred(*op.pred);
  if (op.operands.empty())
    return unsupportedValue("an 'if' without a condition", op.loc);
  const RegVal &c = values_.at(op.operands[0]);
  if (c.lazy || c.laidOut() || !c.cloneSyms.empty() || c.elems != 1) // sema: an i1 scalar
    return unsupportedValue("an 'if' condition that differs between lanes", op.loc);
  RegVal scalar;
  scalar.dtype = ScalarType::I1;
  return operandIn(c, scalar, {});
}

bool KernelEmitter::emitBranch(const ir::Op &op, size_t which, std::vector<RegVal> &yielded) {
  if (which >= op.regions.size())
    return true;
  for (const auto &o : op.regions[which]->ops) {
    if (o->kind == ir::OpKind::Yield) {
      for (const ir::Value *v : o->operands)
        yielded.push_back(values_.at(v));
      break;
    }
    if (!emitOp(*o))
      return false;
  }
  return true;
}

// The shape a result takes: the first laid-out yield's layout, unless the other yield's layout
// has a dim it lacks (a broadcast in one branch that did not lay the value out along every
// dim) and names all of its own; else uniform (the clones and elements of both). The
// carried-shapes pass (carried_shapes.cpp) predicts with the same rule.
// Returns nullptr, or why the value cannot be carried out of a branch (with `id`).
const char *ifYieldShape(const RegVal &a, const RegVal &b, RegVal &out, DiagId &id) {
  id = DiagId::CodegenUnsupported;
  for (const RegVal *y : {&a, &b})
    if (y->lazy) {
      id = DiagId::UnsupportedStreamedRow;
      return "a streamed row (a dynamic or long reduced row) yielded by an 'if'";
    }
  auto covers = [](const RegVal &x, const RegVal &y) { // x's layout names every dim of y's
    for (const auto &[dim, di] : y.layout)
      if (!x.layout.count(dim))
        return false;
    return true;
  };
  const bool second = a.laidOut() && b.laidOut() && !covers(a, b) && covers(b, a);
  const RegVal *order[2] = {second ? &b : &a, &b};
  for (const RegVal *y : order)
    if (y->laidOut()) {
      out = *y;
      out.clones.clear();
      out.deferred = nullptr;
      return nullptr;
    }
  if (a.deferred || b.deferred)
    return "a value computed from thread indices (self_index) yielded by an 'if' whose other "
           "branch yields no value with a layout";
  if (a.elems != b.elems && a.elems != 1 && b.elems != 1)
    return "yielded values of different vector widths";
  out = a.elems >= b.elems ? a : b;
  out.clones.clear();
  out.cloneSyms.insert(a.cloneSyms.begin(), a.cloneSyms.end());
  out.cloneSyms.insert(b.cloneSyms.begin(), b.cloneSyms.end());
  return nullptr;
}

bool KernelEmitter::emitIf(const ir::Op &op) {
  const std::string cond = ifCondition(op);
  if (failed_)
    return false;
  const std::string outer = indent_;
  const auto outerCache = exprCache_;
  // Each branch is emitted once, set aside, and put back between the scf.if's lines once the
  // results' shapes are known.
  Branch br[2];
  for (size_t which = 0; which < 2; ++which) {
    const size_t mark = items_.size();
    indent_ = outer + "  ";
    exprCache_ = outerCache;
    bool ok = emitBranch(op, which, br[which].yielded);
    indent_ = outer;
    for (size_t i = mark; ok && i < items_.size(); ++i)
      if (items_[i].sync.kind == SyncItem::LoopBegin || items_[i].sync.kind == SyncItem::LoopEnd)
        ok = unsupported("a loop inside a branch of an 'if'", op.loc); // legalize refuses it
    if (!ok)
      return false;
    for (size_t i = mark; i < items_.size(); ++i)
      br[which].lines.emplace_back(std::move(items_[i].text), items_[i].sync);
    items_.resize(mark);
    br[which].cache = exprCache_;
  }
  std::vector<RegVal> shapes(op.results.size());
  for (size_t i = 0; i < op.results.size(); ++i) {
    if (i >= br[0].yielded.size() || i >= br[1].yielded.size())
      return unsupported("an 'if' whose branches do not both yield", op.loc); // sema: they do
    DiagId id;
    if (const char *why = ifYieldShape(br[0].yielded[i], br[1].yielded[i], shapes[i], id))
      return unsupported(id, why, op.loc);
  }
  std::string types, results = op.results.empty() ? "" : "%if" + std::to_string(next_++);
  size_t count = 0;
  for (const RegVal &s : shapes)
    for (size_t n = clonesOver(s.cloneSyms).size(); n > 0; --n, ++count)
      types += (count ? ", " : "") + vecType(s.dtype, s.elems);
  // The scf.if, `} else {` and closing lines are the branch marks of barrier insertion.
  auto mark = [&](const std::string &text, SyncItem::Kind kind) {
    line(text);
    items_.back().sync = SyncItem{};
    items_.back().sync.kind = kind;
  };
  mark((count ? results + ":" + std::to_string(count) + " = " : std::string()) + "scf.if " +
           cond + (count ? " -> (" + types + ")" : std::string()) + " {",
       SyncItem::IfBegin);
  for (size_t which = 0; which < 2; ++which) {
    if (which == 1) {
      if (!count && op.regions.size() < 2)
        break;
      mark("} else {", SyncItem::IfElse);
    }
    for (auto &[text, sync] : br[which].lines)
      items_.push_back({std::move(text), sync});
    indent_ = outer + "  ";
    exprCache_ = br[which].cache;
    std::vector<std::string> ys;
    for (size_t i = 0; i < shapes.size(); ++i) {
      RegVal y;
      if (!convertTo(br[which].yielded[i], shapes[i], y, op.loc))
        return false;
      for (const auto &a : clonesOver(shapes[i].cloneSyms))
        ys.push_back(operandIn(y, shapes[i], a));
    }
    if (count) {
      std::string list;
      for (size_t k = 0; k < ys.size(); ++k)
        list += (k ? ", " : "") + ys[k];
      line("scf.yield " + list + " : " + types);
    }
    indent_ = outer;
  }
  mark("}", SyncItem::IfEnd);
  exprCache_ = outerCache;
  size_t j = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    RegVal r = shapes[i];
    for (const auto &a : clonesOver(r.cloneSyms))
      r.clones[cloneKey(a, r.cloneSyms)] = results + "#" + std::to_string(j++);
    values_[op.results[i]] = std::move(r);
  }
  return !failed_;
}

} // namespace wave::codegen::detail
