// Symbols: declaration, -D bindings, evaluation of defaults and derived symbols, cycles.
#include "sema/sema_internal.h"

#include <cerrno>
#include <cstdlib>

namespace wave::sema_detail {

using sym::IndexExpr;

Sema::Sema(const ast::Module &m, const SemaOptions &o, DiagnosticEngine &d)
    : module(m), options(o), diags(d), target(o.target ? o.target : &defaultTarget()) {}

std::unique_ptr<Program> Sema::run() {
  declareSymbols();
  applyDefines();
  resolveSymbols();
  for (const auto &map : module.mappings) {
    auto [it, inserted] = mappings.emplace(map.name.name, &map);
    if (!inserted) {
      diags.report(DiagId::Redefinition, map.name.range, {"mapping", map.name.name});
      diags.note(DiagId::NotePreviousDefinition, it->second->name.range);
    }
  }
  auto program = std::make_unique<Program>();
  program->target = target;
  std::set<std::string> kernelNames;
  bool found = options.onlyKernel.empty();
  for (const auto &k : module.kernels) {
    if (diags.shouldStop())
      break;
    if (!kernelNames.insert(k.name.name).second) {
      diags.report(DiagId::Redefinition, k.name.range, {"kernel", k.name.name});
      for (const auto &prev : module.kernels)
        if (&prev != &k && prev.name.name == k.name.name) {
          diags.note(DiagId::NotePreviousDefinition, prev.name.range);
          break;
        }
      continue;
    }
    if (!options.onlyKernel.empty() && k.name.name != options.onlyKernel)
      continue;
    found = true;
    if (auto kernel = checkKernel(*this, k))
      program->kernels.push_back(std::move(kernel));
  }
  if (!found) {
    std::vector<std::string> names(kernelNames.begin(), kernelNames.end());
    diags.report(DiagId::KernelNotFound, {}, {options.onlyKernel, didYouMean(options.onlyKernel, names)});
  }
  if (options.onlyKernel.empty() && !diags.hasErrors())
    warnUnusedSymbols();
  if (module.kernels.empty() && !diags.hasErrors())
    diags.report(DiagId::NoKernels, {});
  program->symbols = symbols;
  return program;
}

void Sema::markUsed(const std::set<std::string> &names) { used_.insert(names.begin(), names.end()); }

void Sema::warnUnusedSymbols() {
  std::set<std::string> used = used_;
  for (size_t i = 0; i < symbols.size(); ++i)
    used.insert(deps_[i].begin(), deps_[i].end());
  for (const auto &s : symbols)
    if (!used.count(s.name) && !s.bound)
      diags.report(DiagId::UnusedSymbol, s.loc, {s.name});
}

void Sema::declareSymbols() {
  for (const auto &decl : module.symbols) {
    auto it = symbolIndex_.find(decl.name.name);
    if (it != symbolIndex_.end()) {
      diags.report(DiagId::Redefinition, decl.name.range, {"symbol", decl.name.name});
      diags.note(DiagId::NotePreviousDefinition, symbols[it->second].loc);
      continue;
    }
    symbolIndex_[decl.name.name] = symbols.size();
    SymbolInfo info;
    info.name = decl.name.name;
    info.loc = decl.name.range;
    info.value = IndexExpr::symbol(decl.name.name);
    info.hasValue = decl.value != nullptr;
    symbols.push_back(info);
    decls_.push_back(&decl);
  }
  state_.assign(symbols.size(), 0);
  pending_.resize(symbols.size());
  deps_.resize(symbols.size());
}

namespace {
// Parses a -D value: an integer (decimal, 0x hex, '_' separators), a float, an address space,
// or a matrix kind name.
bool parseDefineValue(const std::string &text, SymbolInfo &info, std::string &why) {
  if (text == "global" || text == "shared") {
    info.kind = SymbolKind::Space;
    info.space = text == "global" ? AddressSpace::Global : AddressSpace::Shared;
    return true;
  }
  if (isMmaKindName(text)) {
    info.kind = SymbolKind::Mma;
    info.mma = text;
    return true;
  }
  std::string digits;
  for (char c : text)
    if (c != '_')
      digits += c;
  if (digits.empty()) {
    why = "expected an integer, a float, global, shared or a matrix kind";
    return false;
  }
  errno = 0;
  char *end = nullptr;
  bool hex = digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X');
  long long v = std::strtoll(digits.c_str(), &end, hex ? 16 : 10);
  if (end && *end == '\0' && digits[0] != '+' && digits[0] != ' ') {
    if (errno == ERANGE) {
      why = "it does not fit in 63 bits";
      return false;
    }
    if (v < 0) {
      why = "symbols hold non-negative integers";
      return false;
    }
    info.kind = SymbolKind::Int;
    info.value = IndexExpr(static_cast<int64_t>(v));
    return true;
  }
  double d = std::strtod(text.c_str(), &end);
  if (end && *end == '\0' && !text.empty() && !hex) {
    info.kind = SymbolKind::Float;
    info.fvalue = d;
    return true;
  }
  why = "expected an integer, a float, global, shared or a matrix kind";
  return false;
}
} // namespace

void Sema::applyDefines() {
  for (const auto &def : options.defines) {
    auto it = symbolIndex_.find(def.name);
    if (it == symbolIndex_.end()) {
      diags.report(DiagId::UnknownDefine, {}, {def.name, didYouMean(def.name, symbolNames())});
      continue;
    }
    SymbolInfo &info = symbols[it->second];
    std::string why;
    SymbolInfo parsed = info;
    if (!parseDefineValue(def.value, parsed, why)) {
      diags.report(DiagId::BadDefineValue, {}, {def.name, def.value, why});
      continue;
    }
    parsed.bound = true;
    parsed.hasValue = true;
    info = parsed;
    state_[it->second] = 2;
  }
}

void Sema::resolveSymbols() {
  for (size_t i = 0; i < symbols.size(); ++i)
    resolveSymbol(i);
  for (const auto &s : symbols)
    if (s.kind == SymbolKind::Int && s.hasValue)
      valueMap_[s.name] = s.value;
}

bool Sema::resolveSymbol(size_t i) {
  if (state_[i] == 2)
    return true;
  if (state_[i] == 3)
    return false;
  SymbolInfo &info = symbols[i];
  if (state_[i] == 1) {
    std::string chain;
    bool in = false;
    for (const auto &n : resolvingStack_) {
      in |= n == info.name;
      if (in)
        chain += n + " -> ";
    }
    diags.report(DiagId::SymbolCycle, info.loc, {info.name, chain + info.name});
    state_[i] = 3;
    return false;
  }
  const ast::SymbolDecl *decl = decls_[i];
  if (!decl->value) {
    state_[i] = 2;
    return true;
  }
  state_[i] = 1;
  resolvingStack_.push_back(info.name);
  bool ok = true;
  const ast::Expr &v = *decl->value;
  if (auto *space = ast::dyn_cast<ast::SpaceLit>(&v)) {
    info.kind = SymbolKind::Space;
    info.space = space->space;
  } else if (auto *f = ast::dyn_cast<ast::FloatLit>(&v)) {
    info.kind = SymbolKind::Float;
    info.fvalue = f->value;
  } else if (auto *u = ast::dyn_cast<ast::Unary>(&v);
             u && u->op == ast::UnaryOp::Neg && ast::isa<ast::FloatLit>(u->operand.get())) {
    info.kind = SymbolKind::Float;
    info.fvalue = -static_cast<const ast::FloatLit *>(u->operand.get())->value;
  } else if (auto *name = ast::dyn_cast<ast::NameRef>(&v);
             name && !symbolIndex_.count(name->name) && isMmaKindName(name->name)) {
    info.kind = SymbolKind::Mma;
    info.mma = name->name;
  } else if (auto *name = ast::dyn_cast<ast::NameRef>(&v);
             name && symbolIndex_.count(name->name) &&
             (ok = resolveSymbol(symbolIndex_[name->name])) &&
             symbols[symbolIndex_[name->name]].kind != SymbolKind::Int) {
    // An alias of a non-integer symbol takes its kind and value.
    const SymbolInfo &other = symbols[symbolIndex_[name->name]];
    info.kind = other.kind;
    info.space = other.space;
    info.mma = other.mma;
    info.fvalue = other.fvalue;
    deps_[i].insert(other.name);
  } else if (ok) {
    IndexContext ctx;
    ctx.pending = &pending_[i];
    ctx.used = &deps_[i];
    ctx.what = "a symbol value";
    auto e = toIndex(v, ctx);
    if (!e) {
      ok = false;
    } else {
      info.kind = SymbolKind::Int;
      info.value = *e;
      if (auto c = e->asInteger(); c && *c < 0) {
        diags.report(DiagId::NegativeSymbol, v.range, {info.name, std::to_string(*c)});
        ok = false;
      }
    }
  }
  resolvingStack_.pop_back();
  state_[i] = ok ? 2 : 3;
  if (ok && info.kind == SymbolKind::Int)
    valueMap_[info.name] = info.value;
  return ok;
}

const SymbolInfo *Sema::findSymbol(const std::string &name) const {
  auto it = symbolIndex_.find(name);
  return it == symbolIndex_.end() ? nullptr : &symbols[it->second];
}

size_t Sema::symbolIndex(const std::string &name) const {
  auto it = symbolIndex_.find(name);
  return it == symbolIndex_.end() ? SIZE_MAX : it->second;
}

IndexExpr Sema::resolveValues(const IndexExpr &e) const {
  std::map<std::string, IndexExpr> subs;
  for (const auto &name : e.freeSymbols()) {
    auto it = valueMap_.find(name);
    if (it != valueMap_.end() && !it->second.equals(IndexExpr::symbol(name)))
      subs[name] = it->second;
  }
  return subs.empty() ? e : e.subs(subs);
}

std::vector<std::string> Sema::symbolNames() const {
  std::vector<std::string> names;
  for (const auto &s : symbols)
    names.push_back(s.name);
  return names;
}

std::vector<PendingDivision> Sema::pendingDivisionsOf(const std::set<std::string> &names) const {
  std::vector<PendingDivision> out;
  std::set<std::string> seen;
  std::vector<std::string> work(names.begin(), names.end());
  while (!work.empty()) {
    std::string n = work.back();
    work.pop_back();
    if (!seen.insert(n).second)
      continue;
    size_t i = symbolIndex(n);
    if (i == SIZE_MAX || symbols[i].bound)
      continue;
    out.insert(out.end(), pending_[i].begin(), pending_[i].end());
    work.insert(work.end(), deps_[i].begin(), deps_[i].end());
  }
  return out;
}

} // namespace wave::sema_detail

namespace wave {
std::unique_ptr<Program> analyze(const ast::Module &module, const SemaOptions &options,
                                 DiagnosticEngine &diags) {
  sema_detail::Sema sema(module, options, diags);
  return sema.run();
}
} // namespace wave
