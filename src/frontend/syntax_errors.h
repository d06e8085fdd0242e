// Internal to the parser; includes ANTLR.
//
// Syntax errors in wavec's own words. ANTLR's recovery (single-token insertion and deletion,
// resynchronisation on follow sets) is kept, but every report goes through SyntaxErrorStrategy,
// which names tokens the way a user reads them (`';'`, `identifier 'foo'`, `end of file`),
// places a missing `;` just past the token it should follow, points a missing bracket at its
// opener, and never prints ANTLR's text. It also guarantees termination: it stops the parse
// (ParseCancellationException) once the error budget is spent or recovery stops making progress.
#pragma once

#include "frontend/parse_state.h"

#include "WaveLexer.h"
#include "WaveParser.h"

namespace wave::parse {

// The lexer, reporting invalid characters (hidden from the parser, one error per run) and
// malformed numbers as it produces tokens.
class Lexer : public wave_antlr::WaveLexer {
public:
  Lexer(antlr4::CharStream *input, ParseState &state) : WaveLexer(input), state_(state) {}
  std::unique_ptr<antlr4::Token> nextToken() override;

private:
  ParseState &state_;
  size_t lastInvalidStop_ = static_cast<size_t>(-2);
  size_t tokenCount_ = 0;
};

class SyntaxErrorStrategy : public antlr4::DefaultErrorStrategy {
public:
  explicit SyntaxErrorStrategy(ParseState &state) : state_(state) {}

  void reportError(antlr4::Parser *parser, const antlr4::RecognitionException &e) override;
  void sync(antlr4::Parser *parser) override;
  void recover(antlr4::Parser *parser, std::exception_ptr e) override;
  antlr4::Token *recoverInline(antlr4::Parser *parser) override;

protected:
  // Never deletes a `;` or a bracket that closes something: dropping those merges statements.
  antlr4::Token *singleTokenDeletion(antlr4::Parser *parser) override;

protected:
  void reportNoViableAlternative(antlr4::Parser *parser,
                                 const antlr4::NoViableAltException &e) override;
  void reportInputMismatch(antlr4::Parser *parser,
                           const antlr4::InputMismatchException &e) override;
  void reportFailedPredicate(antlr4::Parser *parser,
                             const antlr4::FailedPredicateException &e) override;
  void reportUnwantedToken(antlr4::Parser *parser) override;
  void reportMissingToken(antlr4::Parser *parser) override;

private:
  // Stops the parse when the error budget is spent or recovery is not moving forward.
  void checkProgress(antlr4::Parser *parser);
  // The shared tail of the report functions: `t` is the token the parser stumbled on and
  // `expected` what it wanted there.
  void reportUnexpected(antlr4::Parser *parser, const antlr4::Token *t,
                        const antlr4::misc::IntervalSet &expected);
  void reportExpected(antlr4::Parser *parser, const antlr4::Token *t,
                      const antlr4::misc::IntervalSet &expected);
  antlr4::misc::IntervalSet withListComma(antlr4::Parser *parser,
                                          antlr4::misc::IntervalSet expected);
  // Records the error at `t`; false when an earlier lexical error already explains it.
  bool accept(const antlr4::Token *t);
  // Reports through the state unless a syntax error was already reported on that line.
  bool emit(DiagId id, SourceRange range, std::vector<std::string> args);
  const antlr4::Token *findOpener(size_t fromIndex, size_t closer);
  // Reports a token that is out of place in a way worth its own message (a `=>` outside an
  // argument, an unmatched closer, a reserved word being assigned) and returns true.
  bool reportIfMisplaced(const antlr4::Token *t);
  // Reports `unmatched ')'` and returns true when `t` is a closing bracket with no opener.
  bool reportIfUnmatchedCloser(const antlr4::Token *t);
  // Reports `reserved-word` and returns true for `if = ...` and the like.
  bool reportIfReservedTarget(const antlr4::Token *t);
  // Attaches "'(' opened here" for the innermost unclosed opener of `closer` before `t`.
  void noteOpener(const antlr4::Token *t, size_t closer);
  // "after symbol declaration", from the rule being parsed.
  std::string whatSemicolonEnds(antlr4::Parser *parser);

  ParseState &state_;
  size_t actions_ = 0;
  size_t lastIndex_ = static_cast<size_t>(-1);
  size_t sameIndexCount_ = 0;
  uint32_t lastLine_ = 0;
};

// Catches whatever ANTLR would print through an error listener (nothing should reach it: the
// strategy and the lexer report everything) and records it in our words.
class SyntaxErrorListener : public antlr4::BaseErrorListener {
public:
  explicit SyntaxErrorListener(ParseState &state) : state_(state) {}
  void syntaxError(antlr4::Recognizer *recognizer, antlr4::Token *offendingSymbol, size_t line,
                   size_t charPositionInLine, const std::string &msg,
                   std::exception_ptr e) override;

private:
  ParseState &state_;
};

// Bounds the parser's recursion and remembers the root context, so that the partial tree can
// still be built when the parse is cancelled.
class DepthGuard : public antlr4::tree::ParseTreeListener {
public:
  explicit DepthGuard(ParseState &state) : state_(state) {}
  void enterEveryRule(antlr4::ParserRuleContext *ctx) override;
  void exitEveryRule(antlr4::ParserRuleContext *ctx) override;
  void visitTerminal(antlr4::tree::TerminalNode *) override {}
  void visitErrorNode(antlr4::tree::ErrorNode *) override {}
  wave_antlr::WaveParser::ModuleContext *root() const { return root_; }

private:
  ParseState &state_;
  wave_antlr::WaveParser::ModuleContext *root_ = nullptr;
  unsigned depth_ = 0;
};

// Describes a set of expected tokens: "';'", "',' or ')'", "an expression", ... ("" when the
// set is too varied to say anything useful).
std::string describeExpected(const antlr4::misc::IntervalSet &expected,
                             const antlr4::dfa::Vocabulary &vocabulary);

} // namespace wave::parse
