// Kernel-level checks: parameters and their types, the constraints block (docs/language.md
// section 5), and what can only be judged once the whole body is known (dims that no tensor
// has, dynamic and unbound symbols, outputs).
#include "sema/kernel_checker.h"

#include <fmt/format.h>

namespace wave::sema_detail {

using sym::IndexExpr;

KernelChecker::KernelChecker(Sema &s, const ast::KernelDecl &d)
    : S(s), decl(d), diags(s.diags), kernel(std::make_unique<ir::Kernel>()) {}

std::unique_ptr<ir::Kernel> checkKernel(Sema &sema, const ast::KernelDecl &decl) {
  KernelChecker checker(sema, decl);
  return checker.run();
}

IndexContext KernelChecker::indexContext() {
  IndexContext ctx;
  ctx.facts = &facts;
  ctx.used = &usedSymbols;
  ctx.scalarParams = scalarParamNames;
  return ctx;
}

std::unique_ptr<ir::Kernel> KernelChecker::run() {
  unsigned errorsBefore = diags.errorCount();
  errorsAtStart = errorsBefore;
  kernel->name = decl.name.name;
  kernel->loc = decl.name.range;
  for (const auto &p : decl.params)
    if (p.type.kind == ast::TypeKind::Scalar)
      scalarParamNames.push_back(p.name.name);
  checkAssumptions();
  checkParams();
  checkConstraints();
  deriveBlock();
  scopes.emplace_back();
  regions.push_back(&kernel->body);
  checkBlock(decl.body, nullptr, "kernel");
  if (!diags.shouldStop())
    popScope();
  if (diags.errorCount() == errorsBefore)
    chooseGroupKinds();
  finish();
  S.markUsed(usedSymbols);
  if (diags.errorCount() != errorsBefore)
    return nullptr;
  return std::move(kernel);
}

void KernelChecker::checkAssumptions() {
  for (const auto &c : decl.constraints) {
    if (c->callee.name != "assume")
      continue;
    if (c->args.size() != 1 || c->args[0].isNamed()) {
      diags.report(DiagId::WrongArity, c->range,
                   {"assume", "1 argument", std::to_string(c->args.size())});
      continue;
    }
    IndexContext ctx = indexContext();
    ctx.facts = nullptr; // divisions inside an assumption are floor-free facts; no proof needed
    ctx.what = "an assumption";
    auto p = S.toPred(*c->args[0].value, ctx);
    if (!p)
      continue;
    if (!facts.assume(*p)) {
      diags.report(DiagId::AssumeFalse, c->args[0].value->range, {exprText(*c->args[0].value)});
      continue;
    }
    kernel->assumptions.push_back(*p);
    kernel->assumptionText.push_back(exprText(*c->args[0].value));
  }
}

std::optional<ir::Type> KernelChecker::checkType(const ast::TypeExpr &t, const char *what) {
  if (t.kind == ast::TypeKind::Scalar)
    return ir::Type::reg({}, t.dtype);
  ir::Shape shape;
  bool ok = true;
  IndexContext ctx = indexContext();
  for (const auto &d : t.dims) {
    auto dim = S.toDim(*d, ctx, what);
    if (!dim) {
      ok = false;
      continue;
    }
    if (ir::hasDim(shape, *dim)) {
      diags.report(DiagId::DuplicateDim, d->range, {dim->str(), what});
      ok = false;
      continue;
    }
    shape.push_back(*dim);
    noteDim(*dim);
  }
  if (!ok)
    return std::nullopt;
  if (t.kind == ast::TypeKind::Register)
    return ir::Type::reg(shape, t.dtype);
  AddressSpace space = AddressSpace::Global;
  if (auto *sp = ast::dyn_cast<ast::SpaceLit>(t.space.get())) {
    space = sp->space;
  } else if (auto *n = ast::dyn_cast<ast::NameRef>(t.space.get())) {
    const SymbolInfo *s = S.findSymbol(n->name);
    if (!s) {
      diags.report(DiagId::UnknownName, n->range,
                   {n->name, didYouMean(n->name, S.symbolNames())});
      return std::nullopt;
    }
    S.resolveSymbol(S.symbolIndex(n->name));
    usedSymbols.insert(n->name);
    if (s->kind != SymbolKind::Space) {
      diags.report(DiagId::BadAddressSpace, n->range, {n->name});
      diags.note(DiagId::NoteDeclaredHere, s->loc, {n->name});
      return std::nullopt;
    }
    space = s->space;
  } else if (t.space) {
    diags.report(DiagId::BadAddressSpace, t.space->range, {exprText(*t.space)});
    return std::nullopt;
  }
  return ir::Type::mem(shape, space, t.dtype);
}

void KernelChecker::checkParams() {
  std::map<std::string, SourceRange> seen;
  for (const auto &p : decl.params) {
    auto [it, inserted] = seen.emplace(p.name.name, p.name.range);
    if (!inserted) {
      diags.report(DiagId::Redefinition, p.name.range, {"parameter", p.name.name});
      diags.note(DiagId::NotePreviousDefinition, it->second);
      continue;
    }
    auto type = checkType(p.type, "a parameter type");
    if (!type) {
      params[p.name.name] = nullptr; // reported; uses stay quiet
      paramFailed = true;
      continue;
    }
    ir::Value *v = kernel->newValue(*type, p.name.name);
    v->paramIndex = static_cast<int>(kernel->params.size());
    kernel->params.push_back({p.name.name, p.name.range, v, false});
    params[p.name.name] = v;
  }
}

std::optional<int64_t> KernelChecker::constantTile(const ast::Expr &e, const std::string &dimName) {
  IndexContext ctx = indexContext();
  auto v = S.toIndex(e, ctx);
  if (!v)
    return std::nullopt;
  IndexExpr simple = facts.simplify(*v);
  auto c = simple.asInteger();
  if (!c) {
    auto free = simple.freeSymbols();
    reportedSymbols.insert(free.begin(), free.end());
    diags.report(DiagId::DynamicTile, e.range,
                 {exprText(e), dimName, free.empty() ? simple.str() : *free.begin()});
    return std::nullopt;
  }
  if (*c <= 0) {
    diags.report(DiagId::ZeroTile, e.range, {dimName, std::to_string(*c)});
    return std::nullopt;
  }
  if (*c > kMaxTile) {
    diags.report(DiagId::TileTooLarge, e.range,
                 {dimName, std::to_string(*c), std::to_string(kMaxTile)});
    return std::nullopt;
  }
  return c;
}

void KernelChecker::checkConstraints() {
  static const std::vector<std::string> kKnown = {"workgroup", "wave", "tiling", "hardware",
                                                  "assume"};
  static const std::vector<std::string> kPlanned = {"grid", "split_k", "persistent", "iters",
                                                    "start", "schedule", "dynamic_val",
                                                    "set_symbol"};
  // hardware first: wave size and default MMA matter to the checks of the others.
  for (const auto &c : decl.constraints)
    if (c->callee.name == "hardware")
      checkHardware(*c);
  if (!hasHardware)
    waveSize = S.target->defaultWaveSize();
  kernel->hardware.threadsPerWave = waveSize;
  for (const auto &c : decl.constraints) {
    const std::string &n = c->callee.name;
    if (n == "workgroup")
      checkWorkgroup(*c);
    else if (n == "tiling")
      checkTiling(*c);
  }
  for (const auto &c : decl.constraints) {
    const std::string &n = c->callee.name;
    if (n == "wave")
      checkWave(*c);
    else if (n == "hardware" || n == "assume" || n == "workgroup" || n == "tiling")
      continue;
    else if (std::find(kPlanned.begin(), kPlanned.end(), n) != kPlanned.end())
      diags.report(DiagId::PlannedFeature, c->callee.range, {"the '" + n + "' constraint"});
    else
      diags.report(DiagId::UnknownConstraint, c->callee.range, {n, didYouMean(n, kKnown)});
  }
}

std::optional<std::pair<ir::Dim, int64_t>>
KernelChecker::constraintDimTile(const ast::Call &c, const std::vector<const ast::Expr *> &args) {
  std::string what = "the first argument of " + c.callee.name;
  auto dim = dimArg(*args[0], what.c_str(), false);
  if (!dim)
    return std::nullopt;
  auto tile = constantTile(*args[1], dim->str());
  if (!tile)
    return std::nullopt;
  constrainedDims.push_back({*dim, args[0]->range});
  return std::make_pair(*dim, *tile);
}

bool KernelChecker::reportDuplicate(const ast::Call &c, const ir::Dim &dim, const SourceRange *prev) {
  if (!prev)
    return false;
  diags.report(DiagId::DuplicateConstraint, c.range, {c.callee.name, dim.str()});
  diags.note(DiagId::NotePreviousDefinition, *prev);
  return true;
}

void KernelChecker::checkWorkgroup(const ast::Call &c) {
  auto args = bindArgs(c, {{"dim_name", true}, {"tile", true}, {"dim", true}});
  auto dimTile = args ? constraintDimTile(c, *args) : std::nullopt;
  if (!dimTile)
    return;
  auto &[dim, tile] = *dimTile;
  IndexContext ctx = indexContext();
  auto axisExpr = S.toIndex(*(*args)[2], ctx);
  if (!axisExpr)
    return;
  auto axis = axisExpr->asInteger();
  if (!axis || *axis < 0 || *axis > 2) {
    diags.report(DiagId::BadWorkgroupAxis, (*args)[2]->range, {axisExpr->str()});
    return;
  }
  const auto *prev = kernel->workgroupFor(dim);
  if (reportDuplicate(c, dim, prev ? &prev->loc : nullptr))
    return;
  bool primary = true;
  for (const auto &w : kernel->workgroups)
    primary &= w.axis != static_cast<unsigned>(*axis);
  kernel->workgroups.push_back({dim, tile, static_cast<unsigned>(*axis), primary, c.range});
}

void KernelChecker::checkWave(const ast::Call &c) {
  auto args = bindArgs(c, {{"dim_name", true}, {"tile", true}});
  auto dimTile = args ? constraintDimTile(c, *args) : std::nullopt;
  if (!dimTile)
    return;
  auto &[dim, tile] = *dimTile;
  const auto *prev = kernel->waveFor(dim);
  if (reportDuplicate(c, dim, prev ? &prev->loc : nullptr))
    return;
  const ir::WorkgroupConstraint *wg = kernel->workgroupFor(dim);
  if (!wg) {
    diags.report(DiagId::WaveNeedsWorkgroup, c.range, {dim.str()});
    return;
  }
  if (wg->tile % tile != 0) {
    diags.report(DiagId::WaveTileNotDivide, (*args)[1]->range,
                 {std::to_string(tile), dim.str(), std::to_string(wg->tile)});
    diags.note(DiagId::NoteDeclaredHere, wg->loc, {"workgroup(" + dim.str() + ", ...)"});
    return;
  }
  kernel->waves.push_back({dim, tile, c.range});
}

void KernelChecker::checkTiling(const ast::Call &c) {
  auto args = bindArgs(c, {{"dim_name", true}, {"tile", true}, {"end", false}});
  auto dimTile = args ? constraintDimTile(c, *args) : std::nullopt;
  if (!dimTile)
    return;
  auto &[dim, tile] = *dimTile;
  const auto *prev = kernel->tilingFor(dim);
  if (reportDuplicate(c, dim, prev ? &prev->loc : nullptr))
    return;
  ir::TilingConstraint t{dim, tile, c.range, std::nullopt, {}};
  // `end = E`: E over symbols and tile_start/tile_end of other dims (their workgroup
  // constraints are checked once the block is read, checkTilingEnds).
  if (const ast::Expr *e = (*args)[2]) {
    IndexContext ctx = indexContext();
    ctx.what = "a tiling's end";
    ctx.tileDims = &t.endDims;
    ctx.tileDim = [&](const ast::Expr &x) -> std::optional<ir::Dim> {
      auto d = dimArg(x, "the argument of tile_start or tile_end", false);
      if (d && *d == dim) {
        diags.report(DiagId::TilingEndDim, x.range, {d->str(), "is the tiled dim itself"});
        return std::nullopt;
      }
      return d;
    };
    // A bad end is reported; the tiling stays (without it), so its loop is still checked.
    if (auto end = S.toIndex(*e, ctx))
      t.end = *end;
    else
      t.endDims.clear();
    tilingEndLocs.push_back(e->range);
  } else {
    tilingEndLocs.push_back(c.range);
  }
  kernel->tilings.push_back(t);
}

// Every dim a tiling's `end` names by tile_start/tile_end must be split by a workgroup
// constraint (its tile is the workgroup's). The loop's trips then differ between workgroups:
// every value it carries must have those dims (each row of them stops at its own workgroup's
// bound, which is what the reference evaluator computes), and its body may not write memory.
void KernelChecker::checkTilingEnds() {
  for (size_t i = 0; i < kernel->tilings.size(); ++i)
    for (const ir::Dim &d : kernel->tilings[i].endDims)
      if (!kernel->workgroupFor(d))
        diags.report(DiagId::TilingEndDim, tilingEndLocs[i],
                     {d.str(), "has no workgroup constraint, so a workgroup has no tile of it"});
  ir::walk(kernel->body, [&](const ir::Op &op) {
    if (op.kind != ir::OpKind::Iterate)
      return;
    const ir::TilingConstraint *t = kernel->tilingFor(op.dims[0]);
    if (!t || !t->end)
      return;
    for (size_t k = 0; k < op.results.size(); ++k)
      for (const ir::Dim &d : t->endDims)
        if (!ir::hasDim(op.results[k]->type.shape, d)) {
          const ir::Value *arg = k < op.regions[0]->args.size() ? op.regions[0]->args[k] : nullptr;
          diags.report(DiagId::TilingEndCarried, op.loc,
                       {op.dims[0].str(), d.str(), arg ? arg->name : std::to_string(k + 1),
                        op.results[k]->type.str()});
          return;
        }
    ir::walk(*op.regions[0], [&](const ir::Op &inner) {
      if (inner.kind == ir::OpKind::Write || inner.kind == ir::OpKind::AtomicAdd ||
          inner.kind == ir::OpKind::AtomicMin || inner.kind == ir::OpKind::AtomicMax)
        diags.report(DiagId::TilingEndEffect, inner.loc, {op.dims[0].str()});
    });
  });
}

static std::string joinWaveSizes(const TargetInfo &t) {
  std::string s;
  for (size_t i = 0; i < t.waveSizes.size(); ++i)
    s += (i ? " or " : "") + std::to_string(t.waveSizes[i]);
  return s;
}

void KernelChecker::checkHardware(const ast::Call &c) {
  if (hasHardware) {
    diags.report(DiagId::DuplicateHardware, c.range);
    diags.note(DiagId::NotePreviousDefinition, kernel->hardware.loc);
    return;
  }
  hasHardware = true;
  kernel->hardware.loc = c.range;
  auto args = bindArgs(c, {{"threads_per_wave", false},
                           {"waves_per_block", false},
                           {"mma", false},
                           {"vector_shapes", false},
                           {"warp_specialize", false},
                           {"persistent", false},
                           {"stage_epilogue", false},
                           {"lds_dma", false},
                           {"score_ahead", false},
                           {"tma", false},
                           {"pingpong", false}});
  waveSize = S.target->defaultWaveSize();
  if (!args)
    return;
  const TargetInfo &t = *S.target;
  if (const ast::Expr *w = (*args)[0]) {
    IndexContext ctx = indexContext();
    auto v = S.toIndex(*w, ctx);
    auto c = v ? v->asInteger() : std::nullopt;
    if (v && !c)
      diags.report(DiagId::ExpectedIntConstant, w->range, {"threads_per_wave", v->str()});
    if (c) {
      bool supported = false;
      for (unsigned s : t.waveSizes)
        supported |= static_cast<int64_t>(s) == *c;
      if (!supported)
        diags.report(DiagId::UnsupportedWaveSize, w->range,
                     {t.name, std::to_string(*c), joinWaveSizes(t)});
      else
        waveSize = static_cast<unsigned>(*c);
    }
  }
  if (const ast::Expr *wpb = (*args)[1]) {
    auto *list = ast::dyn_cast<ast::ListExpr>(wpb);
    if (!list || list->elements.empty() || list->elements.size() > 3) {
      diags.report(DiagId::BadWavesPerBlock, wpb->range, {"must be a list of 1 to 3 integers"});
    } else {
      wavesGiven = true;
      for (size_t i = 0; i < list->elements.size(); ++i) {
        IndexContext ctx = indexContext();
        auto v = S.toIndex(*list->elements[i], ctx);
        auto c = v ? v->asInteger() : std::nullopt;
        if (!c || *c <= 0 || *c > static_cast<int64_t>(S.target->maxThreadsPerBlock)) {
          if (v)
            diags.report(DiagId::BadWavesPerBlock, list->elements[i]->range,
                         {"entries must be positive compile-time integers of at most " +
                          std::to_string(S.target->maxThreadsPerBlock) + ", got " + v->str()});
          wavesGiven = false;
          continue;
        }
        kernel->hardware.wavesPerBlock[i] = static_cast<unsigned>(*c);
      }
    }
  }
  if (const ast::Expr *m = (*args)[2]) {
    auto name = S.mmaKindName(*m);
    if (name && *name != "auto") {
      const MmaKind *k = findMmaKind(t, *name);
      if (!k)
        diags.report(DiagId::MmaKindUnavailable, m->range, {*name, t.name, availableKinds(t)});
      else
        kernel->hardware.mma = k;
    }
    if (name && (*name == "auto" || kernel->hardware.mma))
      hardwareMma = *name;
    else
      hardwareMmaFailed = true;
  }
  // Flags of the schedule's choices (docs/language.md 12): 0 or 1.
  auto flag = [&](size_t at, const char *what, bool &out) {
    const ast::Expr *e = (*args)[at];
    if (!e)
      return;
    IndexContext ctx = indexContext();
    auto v = S.toIndex(*e, ctx);
    auto c = v ? v->asInteger() : std::nullopt;
    if (v && (!c || (*c != 0 && *c != 1)))
      diags.report(DiagId::ExpectedIntConstant, e->range,
                   {std::string(what) + " (0 or 1)", v->str()});
    if (c)
      out = *c != 0;
  };
  flag(4, "warp_specialize", kernel->hardware.warpSpecialize);
  flag(5, "persistent", kernel->hardware.persistent);
  flag(6, "stage_epilogue", kernel->hardware.stageEpilogue);
  flag(7, "lds_dma", kernel->hardware.ldsDma);
  flag(8, "score_ahead", kernel->hardware.scoreAhead);
  flag(9, "tma", kernel->hardware.tma);
  flag(10, "pingpong", kernel->hardware.pingpong);
  if (const ast::Expr *vs = (*args)[3]) {
    auto *dict = ast::dyn_cast<ast::DictExpr>(vs);
    if (!dict) {
      diags.report(DiagId::BadVectorShape, vs->range, {"", "must be a dict such as {M: 1, N: 64}"});
      return;
    }
    for (const auto &entry : dict->entries) {
      auto dim = dimArg(*entry.key, "a vector_shapes key", false);
      if (!dim)
        continue;
      IndexContext ctx = indexContext();
      auto v = S.toIndex(*entry.value, ctx);
      if (!v)
        continue;
      IndexExpr simple = facts.simplify(*v);
      // A vector shape is a constant, or the whole (possibly dynamic) extent of its dim.
      if (!simple.isInteger() && !facts.provesEqual(simple, dim->size)) {
        diags.report(DiagId::BadVectorShape, entry.value->range,
                     {dim->str(), "must be a compile-time integer or the dim's whole extent, got " +
                                      simple.str()});
        continue;
      }
      if (auto c = simple.asInteger(); c && (*c < 0 || *c > kMaxTile)) {
        diags.report(DiagId::BadVectorShape, entry.value->range,
                     {dim->str(), "must be between 0 and " + std::to_string(kMaxTile) + ", got " +
                                      std::to_string(*c)});
        continue;
      }
      bool dup = false;
      for (const auto &[d, _] : kernel->hardware.vectorShapes)
        dup |= d == *dim;
      if (dup) {
        diags.report(DiagId::DuplicateDim, entry.key->range, {dim->str(), "vector_shapes"});
        continue;
      }
      kernel->hardware.vectorShapes.push_back({*dim, simple});
      constrainedDims.push_back({*dim, entry.key->range});
    }
  }
}

void KernelChecker::deriveBlock() {
  auto &hw = kernel->hardware;
  if (!wavesGiven) {
    for (unsigned a = 0; a < 3; ++a)
      hw.wavesPerBlock[a] = 1;
    for (const auto &w : kernel->waves) {
      const auto *wg = kernel->workgroupFor(w.dim);
      if (!wg)
        continue;
      hw.wavesPerBlock[wg->axis] =
          std::max<unsigned>(hw.wavesPerBlock[wg->axis], static_cast<unsigned>(wg->tile / w.tile));
    }
  }
  // Each factor is at most 2^24 (tiles are bounded), so the product is computed in 128 bits.
  __int128 wide = static_cast<__int128>(hw.wavesPerBlock[0]) * waveSize * hw.wavesPerBlock[1] *
                  hw.wavesPerBlock[2];
  int64_t threads = wide > INT64_MAX ? INT64_MAX : static_cast<int64_t>(wide);
  if (threads > S.target->maxThreadsPerBlock)
    diags.report(DiagId::BlockTooLarge, hw.loc.valid() ? hw.loc : decl.name.range,
                 {std::to_string(threads), std::to_string(S.target->maxThreadsPerBlock),
                  S.target->name});
}

// A constraint on a symbol that no tensor or register has as a dim applies to the one dim that
// is an expression of that symbol alone (`Memory[M, N / 2, ...]` with `workgroup(N, ...)`):
// every constraint and vector shape on the symbol moves to that dim, which is then tiled with
// the constraint's tiles over its own extent (language.md section 5). Two such dims are
// ambiguous (`constraint-ambiguous-dim`); none is `constraint-unknown-dim` (finish).
void KernelChecker::constrainExpressionDims(std::set<std::string> &reported) {
  // An iterated symbol keeps its constraints: the loop walks the symbol itself.
  std::set<std::string> iterated;
  ir::walk(kernel->body, [&](const ir::Op &op) {
    if (op.kind == ir::OpKind::Iterate && !op.dims.empty())
      iterated.insert(op.dims[0].str());
  });
  for (auto &[dim, loc] : constrainedDims) {
    if (ir::hasDim(allDims, dim) || reported.count(dim.str()) || !dim.name.asSymbol() ||
        iterated.count(dim.str()))
      continue;
    std::vector<ir::Dim> uses;
    for (const auto &d : allDims) {
      const auto syms = d.name.freeSymbols();
      if (syms.size() == 1 && *syms.begin() == dim.str())
        uses.push_back(d);
    }
    if (uses.size() > 1) {
      diags.report(DiagId::ConstraintAmbiguousDim, loc,
                   {dim.str(), uses[0].str(), uses[1].str(), kernel->name});
      reported.insert(dim.str());
      continue;
    }
    if (uses.empty())
      continue;
    const ir::Dim from = dim, to = uses[0];
    for (auto &w : kernel->workgroups)
      if (w.dim == from)
        w.dim = to;
    for (auto &w : kernel->waves)
      if (w.dim == from)
        w.dim = to;
    for (auto &t : kernel->tilings) {
      if (t.dim == from)
        t.dim = to;
      for (auto &d : t.endDims)
        if (d == from) {
          t.end = t.end->subs({{ir::tileStartSymbol(from), IndexExpr::symbol(ir::tileStartSymbol(to))},
                               {ir::tileEndSymbol(from), IndexExpr::symbol(ir::tileEndSymbol(to))}});
          d = to;
        }
    }
    for (auto &[d, vs] : kernel->hardware.vectorShapes)
      if (d == from)
        d = to;
    for (auto &[d, l] : constrainedDims)
      if (d == from)
        d = to;
  }
}

// Inside `iterate K` a value may have K itself as a dim (the loop's tile of it), not a dim that
// is another expression of K (`K / 2`): no tile of K is defined for it, and the reference
// evaluator refuses it (language.md section 7).
void KernelChecker::checkIteratedDims(const ir::Region &r, const std::vector<ir::Dim> &loops) {
  for (const auto &op : r.ops) {
    for (const ir::Value *v : op->results)
      for (const auto &d : v->type.shape)
        for (const auto &k : loops)
          if (d != k && (d.name.dependsOn(k.str()) || d.size.dependsOn(k.str()))) {
            diags.report(DiagId::IterateDependentDim, op->loc, {d.str(), k.str()});
            return;
          }
    std::vector<ir::Dim> inner = loops;
    if (op->kind == ir::OpKind::Iterate && !op->dims.empty())
      inner.push_back(op->dims[0]);
    for (const auto &sub : op->regions)
      checkIteratedDims(*sub, inner);
  }
}

void KernelChecker::finish() {
  if (diags.shouldStop() || paramFailed)
    return;
  // Symbols already reported (dims no tensor has, dynamic tiles) are not reported again.
  std::set<std::string> reported = reportedSymbols;
  constrainExpressionDims(reported);
  checkTilingEnds();
  checkIteratedDims(kernel->body, {});
  for (const auto &[dim, loc] : constrainedDims) {
    if (ir::hasDim(allDims, dim) || reported.count(dim.str()))
      continue;
    diags.report(DiagId::ConstraintUnknownDim, loc, {dim.str(), kernel->name});
    for (const auto &s : dim.size.freeSymbols())
      reported.insert(s);
    reported.insert(dim.str());
  }
  // Unbound symbols are judged only in a kernel without other errors: after one, a symbol
  // that looks unbound is usually part of what failed.
  if (paramFailed || diags.errorCount() != errorsAtStart)
    return;

  // Outputs: parameters that are written or updated atomically.
  ir::walk(kernel->body, [&](const ir::Op &op) {
    if (op.kind == ir::OpKind::Write || op.kind == ir::OpKind::AtomicAdd ||
        op.kind == ir::OpKind::AtomicMin || op.kind == ir::OpKind::AtomicMax) {
      ir::Value *mem = op.operands[1];
      if (mem->paramIndex >= 0)
        kernel->params[mem->paramIndex].isOutput = true;
    }
  });

  // Dynamic symbols: unbound symbols in parameter shapes, in declaration order. Any other
  // unbound symbol the kernel uses is an error.
  std::set<std::string> inShapes;
  for (const auto &p : kernel->params)
    for (const auto &d : p.value->type.shape)
      for (const auto &s : d.size.freeSymbols())
        inShapes.insert(s);
  std::set<std::string> needed;
  for (const auto &d : allDims)
    for (const auto &s : d.size.freeSymbols())
      needed.insert(s);
  for (const auto &name : usedSymbols)
    if (const SymbolInfo *s = S.findSymbol(name); s && s->kind == SymbolKind::Int)
      for (const auto &f : s->value.freeSymbols())
        needed.insert(f);
  for (const auto &s : S.symbols) {
    if (inShapes.count(s.name)) {
      kernel->dynamicSymbols.push_back(s.name);
      continue;
    }
    if (needed.count(s.name) && !s.hasValue && !reported.count(s.name)) {
      diags.report(DiagId::UnboundSymbol, s.loc, {s.name, kernel->name});
    }
  }
  // Exact divisions inside the values of the symbols this kernel uses.
  for (const auto &d : S.pendingDivisionsOf(usedSymbols))
    if (!S.checkDivision(d, facts))
      diags.note(DiagId::NoteInKernel, decl.name.range, {kernel->name});
}

} // namespace wave::sema_detail
