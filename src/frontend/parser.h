// The front door of the front end: a `.wave` file in, an AST out (docs/language.md sections 1-4, 7).
//
// parseModule validates the text (UTF-8, bracket depth), runs the ANTLR lexer and parser that
// are generated from grammar/Wave.g4, and builds the AST (ast.h) from the parse tree. Syntax
// errors are reported to the DiagnosticEngine in wavec's own words and in source order; the
// parser recovers and goes on, so one run reports several errors (up to the engine's limit).
// Whatever parsed cleanly is returned; a declaration or statement with a syntax error inside is
// left out rather than half-built. It never throws, prints, aborts or hangs, whatever the input.
#pragma once

#include "frontend/ast.h"
#include "frontend/diagnostics.h"
#include "frontend/source.h"

#include <memory>

namespace wave {

// Parses a whole file. Syntax errors are reported to `diags` (never thrown, never printed here);
// the returned module holds everything that parsed (possibly partial). Never crashes, never hangs.
std::unique_ptr<ast::Module> parseModule(const SourceFile &file, DiagnosticEngine &diags);

} // namespace wave
