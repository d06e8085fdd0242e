// Shared state of the semantic analyzer (private to src/sema).
#pragma once

#include "sema/sema.h"
#include "symbolic/facts.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace wave::sema_detail {

// An exact division `a / b` that still has to be proven exact once a kernel's facts are known.
struct PendingDivision {
  sym::IndexExpr a, b;
  SourceRange loc;
  std::string text; // the division as written
};

// How an index expression is being converted.
struct IndexContext {
  const sym::Facts *facts = nullptr;          // null: record divisions as pending instead
  std::vector<PendingDivision> *pending = nullptr;
  std::map<std::string, sym::IndexExpr> locals; // mapping iterators, apply_expr variables
  bool keepSymbols = false;   // dim names: keep symbol names instead of their values
  std::set<std::string> *used = nullptr; // symbols referenced (for per-kernel checks)
  std::vector<std::string> scalarParams; // kernel scalar parameters, for a better message
  const char *what = "an index expression";
  // Set only for a tiling's `end` (docs/language.md section 5): tile_start(D) and tile_end(D)
  // are then allowed; tileDim checks D, and tileDims collects the dims named.
  std::function<std::optional<ir::Dim>(const ast::Expr &)> tileDim;
  std::vector<ir::Dim> *tileDims = nullptr;
};

class Sema {
public:
  Sema(const ast::Module &m, const SemaOptions &o, DiagnosticEngine &d);
  std::unique_ptr<Program> run();

  // ---- symbols (symbols.cpp)
  void declareSymbols();
  void applyDefines();
  void resolveSymbols();
  bool resolveSymbol(size_t i); // false on a cycle or an error
  const SymbolInfo *findSymbol(const std::string &name) const;
  size_t symbolIndex(const std::string &name) const;
  // Replaces derived and bound symbols by their values.
  sym::IndexExpr resolveValues(const sym::IndexExpr &e) const;
  std::vector<std::string> symbolNames() const;
  // Exact divisions of the given symbols and everything they depend on.
  std::vector<PendingDivision> pendingDivisionsOf(const std::set<std::string> &names) const;

  // ---- index expressions (index_exprs.cpp)
  std::optional<sym::IndexExpr> toIndex(const ast::Expr &e, IndexContext &ctx);
  std::optional<sym::IndexExpr> nameToIndex(const ast::Expr &e, IndexContext &ctx);
  std::optional<sym::IndexExpr> callToIndex(const ast::Expr &e, IndexContext &ctx);
  std::optional<sym::IndexExpr> tileBoundToIndex(const ast::Call &c, IndexContext &ctx);
  std::optional<sym::Pred> toPred(const ast::Expr &e, IndexContext &ctx);
  // A dimension: a symbol or an expression of one symbol; size resolved through bindings.
  std::optional<ir::Dim> toDim(const ast::Expr &e, IndexContext &ctx, const char *what);
  // True when the expression mentions only symbols and literals (so it is an index predicate).
  bool isSymbolic(const ast::Expr &e, const std::set<std::string> &locals) const;
  // The MMA kind an expression names: a kind name or a symbol bound to one.
  std::optional<std::string> mmaKindName(const ast::Expr &e);
  // Proves a / b exact under `facts`; reports inexact-division or division-by-zero.
  bool checkDivision(const PendingDivision &d, const sym::Facts &facts);

  // Symbols some kernel or mapping referenced; the rest get an unused-symbol warning.
  void markUsed(const std::set<std::string> &names);
  void warnUnusedSymbols();

  const ast::Module &module;
  const SemaOptions &options;
  DiagnosticEngine &diags;
  const TargetInfo *target;
  std::vector<SymbolInfo> symbols;
  std::map<std::string, const ast::MappingDecl *> mappings;

private:
  std::map<std::string, size_t> symbolIndex_;
  std::vector<const ast::SymbolDecl *> decls_;
  std::vector<int> state_; // 0 unresolved, 1 resolving, 2 resolved, 3 failed
  std::vector<std::vector<PendingDivision>> pending_;
  std::vector<std::set<std::string>> deps_;
  std::vector<std::string> resolvingStack_;
  std::map<std::string, sym::IndexExpr> valueMap_;
  std::set<std::string> used_;
};

// Checks one kernel and builds its graph (kernel_checker.cpp).
std::unique_ptr<ir::Kernel> checkKernel(Sema &sema, const ast::KernelDecl &decl);

std::string exprText(const ast::Expr &e);

} // namespace wave::sema_detail
