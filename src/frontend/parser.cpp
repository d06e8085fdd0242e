// parseModule: text checks, then ANTLR's lexer and parser, then the AST builder.
//
// ANTLR is configured so that nothing escapes it: its console listeners are replaced by ours,
// its error strategy by SyntaxErrorStrategy (syntax_errors.h), and prediction runs in the fast
// SLL mode (the grammar is LL(2), so SLL never gets a decision wrong). Any exception it still
// throws becomes a located error.
#include "frontend/parser.h"

#include "frontend/ast_builder.h"
#include "frontend/parse_state.h"
#include "frontend/syntax_errors.h"

namespace wave {

namespace {

// An ANTLR character stream over code points we decoded ourselves: ANTLRInputStream's own
// decoder throws on invalid UTF-8, and ours has already reported and replaced it.
class CodePointStream : public antlr4::ANTLRInputStream {
public:
  explicit CodePointStream(const std::u32string &data) {
    _data = data;
    p = 0;
  }
};

// The number of errors the parser may still report before the engine stops listening.
unsigned errorBudget(const DiagnosticEngine &diags) {
  unsigned used = diags.errorCount();
  return used >= parse::kMaxErrors ? 1 : parse::kMaxErrors - used;
}

// Where the parser stands, for errors that come as exceptions.
SourceRange currentRange(const parse::ParseState &state, antlr4::Parser &parser) {
  try {
    SourceRange r = state.rangeOf(parser.getCurrentToken());
    if (r.valid())
      return r;
  } catch (...) {
  }
  return SourceRange::at(state.file().locOf(0));
}

void parseAndBuild(parse::ParseState &state, ast::Module &module) {
  CodePointStream input(state.codePoints());
  parse::Lexer lexer(&input, state);
  parse::SyntaxErrorListener listener(state);
  lexer.removeErrorListeners();
  lexer.addErrorListener(&listener);

  antlr4::CommonTokenStream tokens(&lexer);
  state.setTokens(&tokens);
  // Lex everything first, so that nesting is bounded before the parser recurses into it.
  tokens.fill();
  if (!state.checkExpressionDepth()) {
    state.setTokens(nullptr);
    return;
  }
  wave_antlr::WaveParser parser(&tokens);
  parser.removeErrorListeners();
  parser.addErrorListener(&listener);
  parser.setErrorHandler(std::make_shared<parse::SyntaxErrorStrategy>(state));
  parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
      antlr4::atn::PredictionMode::SLL);
  parse::DepthGuard guard(state);
  parser.addParseListener(&guard);

  wave_antlr::WaveParser::ModuleContext *root = nullptr;
  try {
    root = parser.module();
  } catch (const antlr4::ParseCancellationException &) {
    // Too many errors, too deep, or recovery stuck: build what was parsed.
  } catch (const std::exception &e) {
    state.report(DiagId::ParseFailed, currentRange(state, parser), {e.what()});
  }
  if (!root)
    root = guard.root();
  parse::buildModule(state, root, module);
  state.setTokens(nullptr);
}

} // namespace

std::unique_ptr<ast::Module> parseModule(const SourceFile &file, DiagnosticEngine &diags) {
  auto module = std::make_unique<ast::Module>();
  if (diags.shouldStop())
    return module;
  parse::ParseState state(file, errorBudget(diags));
  try {
    state.decode();
    if (state.checkNesting() && !state.shouldStop())
      parseAndBuild(state, *module);
  } catch (const std::exception &e) {
    state.report(DiagId::ParseFailed, SourceRange::at(file.locOf(0)), {e.what()});
  } catch (...) {
    state.report(DiagId::ParseFailed, SourceRange::at(file.locOf(0)), {"unknown error"});
  }
  state.flush(diags);
  return module;
}

} // namespace wave
