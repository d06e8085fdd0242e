// Semantic analysis: from the AST of a file to checked kernels in the graph IR.
//
// It resolves names (with "did you mean" hints), applies -D bindings, evaluates symbols
// (derived ones, address spaces, matrix kinds, float constants) and finds cycles, checks every
// constraint of docs/language.md section 5 against the target table, types every expression
// (shapes as sets of named dims, element types, the broadcast rule, reductions, mma dimension
// inference, mappings, iterate and if), and decides which symbols are dynamic. What it returns
// is final: later stages never re-check the source. Errors go to the DiagnosticEngine; the
// program is only usable when no error was reported.
#pragma once

#include "target/target_table.h"
#include "frontend/ast.h"
#include "frontend/diagnostics.h"
#include "ir/graph.h"

#include <memory>
#include <string>
#include <vector>

namespace wave {

struct Define {
  std::string name;
  std::string value;
};

struct SemaOptions {
  const TargetInfo *target = nullptr; // null = default target
  std::vector<Define> defines;
  std::string onlyKernel; // --kernel=NAME: check and keep only this kernel
};

enum class SymbolKind { Int, Space, Mma, Float };

struct SymbolInfo {
  std::string name;
  SourceRange loc;
  SymbolKind kind = SymbolKind::Int;
  bool bound = false;     // by -D
  bool hasValue = false;  // by -D or a default
  sym::IndexExpr value;   // Int: in terms of unbound symbols only (itself when unbound)
  AddressSpace space = AddressSpace::Global;
  std::string mma;
  double fvalue = 0;
};

struct Program {
  const TargetInfo *target = nullptr;
  std::vector<SymbolInfo> symbols; // declaration order
  std::vector<std::unique_ptr<ir::Kernel>> kernels;
};

std::unique_ptr<Program> analyze(const ast::Module &module, const SemaOptions &options,
                                 DiagnosticEngine &diags);

} // namespace wave
