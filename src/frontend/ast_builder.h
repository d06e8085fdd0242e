// Internal to the parser; includes ANTLR.
//
// Turns the ANTLR parse tree into the AST (ast.h). The tree may be partial: after a syntax error
// ANTLR leaves rule contexts with exceptions, error nodes and conjured tokens in it. The builder
// never builds from those: a statement, parameter or constraint with a syntax error inside is
// left out (the error was already reported), so sema only sees well-formed nodes.
//
// It also reports the errors that the grammar leaves to it on purpose (see grammar/Wave.g4):
// reserved words used as names, a missing `;` after a statement, chained comparisons, misplaced
// lambdas, malformed Memory/Register types, integer overflow, assignment to a non-name, and the
// placement of the constraints block and of mapping sections.
#pragma once

#include "frontend/ast.h"
#include "frontend/parse_state.h"

#include "WaveParser.h"

namespace wave::parse {

// Appends the declarations under `root` to `out`.
void buildModule(ParseState &state, wave_antlr::WaveParser::ModuleContext *root,
                 ast::Module &out);

} // namespace wave::parse
