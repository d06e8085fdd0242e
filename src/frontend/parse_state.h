// Internal to the parser (parser.cpp, syntax_errors.cpp, ast_builder.cpp); includes ANTLR.
//
// ParseState is what the stages of one parse share: the source decoded into code points (the
// unit ANTLR counts in) with the byte offset of each (the unit our locations count in), the
// token stream, and the syntax diagnostics collected so far. Diagnostics are held back and
// handed to the DiagnosticEngine in source order at the end, because the lexer, the parser and
// the AST builder each find errors in their own order.
#pragma once

#include "frontend/diagnostics.h"
#include "frontend/source.h"

#include "antlr4-runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace wave::parse {

// Brackets may nest this deep (docs/language.md: deeper nesting is `nesting-too-deep`).
constexpr unsigned kMaxBracketDepth = 256;
// Expressions may nest this deep (docs/language.md section 1: deeper is `expression-too-deep`). Every
// level counts: each binary operator (chains fold to the left, so `a + b + c` is two levels),
// each prefix `-`/`~`, each call, list, dict and bracket. Everything after the parser walks the
// AST recursively, so this bounds the recursion of sema, the checker, the dumpers and the IR
// builder; tests/robust/test_deep_inputs.py checks that the limit itself runs on an 8 MiB stack.
constexpr unsigned kMaxExprDepth = 1024;
// Parser rules may nest this deep. A backstop only: the token pre-scan (checkExpressionDepth)
// bounds the recursion of the parser first (brackets and prefix operators are the only
// recursive parts of the grammar; about 11 rules per bracket level, 1 per prefix operator).
constexpr unsigned kMaxRuleDepth = 4000;
// The parser stops after this many errors (the DiagnosticEngine's default limit).
constexpr unsigned kMaxErrors = 20;

struct PendingNote {
  DiagId id;
  SourceRange range;
  std::vector<std::string> args;
};

struct PendingDiag {
  DiagId id;
  SourceRange range;
  std::vector<std::string> args;
  std::vector<PendingNote> notes;
};

class ParseState {
public:
  ParseState(const SourceFile &file, unsigned errorBudget);

  const SourceFile &file() const { return file_; }

  // ---- the text -------------------------------------------------------------------------
  // Decodes the file into codePoints(). Invalid UTF-8 is reported (`invalid-utf8`, once per
  // line) and each bad byte becomes U+FFFD, which the lexer turns into a hidden error token.
  void decode();
  const std::u32string &codePoints() const { return codePoints_; }
  // True when code point `i` stands for an invalid byte (already reported).
  bool isReplacement(size_t i) const;
  // Reports `nesting-too-deep` and returns false when brackets nest more than the limit.
  bool checkNesting();
  // Scans the token stream (setTokens, filled) before the parser runs: reports
  // `expression-too-deep` and returns false when brackets and prefix operators together nest
  // more than kMaxExprDepth levels, so that the parser never recurses deeper than that.
  bool checkExpressionDepth();

  // ---- locations ------------------------------------------------------------------------
  SourceLoc locAt(size_t codePointIndex) const;
  size_t byteOffset(size_t codePointIndex) const;
  // A token from the input (not one the error recovery conjured up).
  static bool isReal(const antlr4::Token *t);
  SourceRange rangeOf(const antlr4::Token *t) const;
  SourceRange rangeOf(const antlr4::Token *first, const antlr4::Token *last) const;
  // The location just past the last character of `t`.
  SourceLoc endOf(const antlr4::Token *t) const;
  // The token's text, from the source bytes.
  std::string textOf(const antlr4::Token *t) const;

  // ---- tokens ---------------------------------------------------------------------------
  void setTokens(antlr4::CommonTokenStream *tokens) { tokens_ = tokens; }
  antlr4::CommonTokenStream *tokens() const { return tokens_; }
  // The nearest default-channel token before / after `t`, or null.
  const antlr4::Token *previousOnChannel(const antlr4::Token *t) const;
  const antlr4::Token *nextOnChannel(const antlr4::Token *t) const;
  // Invalid characters are hidden from the parser; these find them again.
  void noteInvalidChar(size_t tokenIndex) { invalidChars_.push_back(tokenIndex); }
  // True when an invalid character lies between `t` and the default-channel token before it.
  bool followsInvalidChar(const antlr4::Token *t) const;
  // True when an invalid character lies within first..last or right next to either end.
  bool invalidCharNear(const antlr4::Token *first, const antlr4::Token *last) const;
  // Syntax errors remember the token they were reported at.
  void noteSyntaxErrorAt(const antlr4::Token *t);
  bool hadSyntaxErrorAt(const antlr4::Token *t) const;
  bool hadSyntaxErrorOnLine(uint32_t line) const;

  // ---- diagnostics ----------------------------------------------------------------------
  void report(DiagId id, SourceRange range, std::vector<std::string> args = {});
  // The last diagnostic kept, or null (used to merge a run of invalid characters into one).
  PendingDiag *last() { return lastDropped_ || diags_.empty() ? nullptr : &diags_.back(); }
  // Attaches a note to the last diagnostic kept.
  void note(DiagId id, SourceRange range, std::vector<std::string> args = {});
  unsigned errorCount() const { return errors_; }
  // True once the error budget is spent or a fatal error was reported: stop parsing.
  bool shouldStop() const { return stopped_; }
  // Hands everything to `diags` in source order.
  void flush(DiagnosticEngine &diags);

private:
  const SourceFile &file_;
  std::u32string codePoints_;
  std::vector<uint32_t> byteOffsets_; // per code point, plus the end of the text
  std::vector<size_t> replacements_;  // sorted code point indices of invalid bytes
  antlr4::CommonTokenStream *tokens_ = nullptr;
  std::vector<size_t> invalidChars_;  // token indices, increasing
  std::vector<size_t> syntaxErrors_;  // token indices
  std::vector<uint32_t> syntaxErrorLines_;
  std::vector<PendingDiag> diags_;
  unsigned errorBudget_;
  unsigned errors_ = 0;
  bool stopped_ = false;
  bool lastDropped_ = false;
};

// How a token is named in messages: ';', identifier 'foo', number '42', end of file.
std::string describeToken(const ParseState &state, const antlr4::Token *t);

} // namespace wave::parse
