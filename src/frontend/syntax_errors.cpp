// Syntax errors in wavec's words: the lexer hook, the ANTLR error strategy and listeners.
#include "frontend/syntax_errors.h"

#include <fmt/format.h>

namespace wave::parse {

using antlr4::Parser;
using antlr4::Token;
using antlr4::misc::IntervalSet;
using P = wave_antlr::WaveParser;

namespace {

// How an invalid character is shown: itself when it is visible, U+XXXX otherwise.
std::string characterName(char32_t cp) {
  bool invisible = cp < 0x21 || (cp >= 0x7F && cp <= 0xA0) || (cp >= 0x2000 && cp <= 0x200F) ||
                   (cp >= 0x2028 && cp <= 0x202F) || (cp >= 0x2060 && cp <= 0x206F) ||
                   cp == 0x3000 || cp == 0xFEFF || cp == 0xFFFD;
  if (invisible)
    return fmt::format("U+{:04X}", static_cast<uint32_t>(cp));
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

size_t openerOf(size_t closer) {
  switch (closer) {
  case P::RPAREN:
    return P::LPAREN;
  case P::RBRACK:
    return P::LBRACK;
  case P::RBRACE:
    return P::LBRACE;
  default:
    return Token::INVALID_TYPE;
  }
}

bool isCloser(size_t type) { return openerOf(type) != Token::INVALID_TYPE; }

// IntervalSet::contains is overloaded for size_t and ssize_t; token enums match neither.
bool has(const IntervalSet &s, size_t type) { return s.contains(type); }

// The tokens that can start an expression; a set holding the core of them reads "an expression".
const IntervalSet &expressionStarts() {
  static const IntervalSet set = IntervalSet::of(P::ITERATE, P::IF)
                                     .Or(IntervalSet::of(P::GLOBAL, P::NAN_LIT))
                                     .Or(IntervalSet::of(P::REGISTER, P::TYPE_NAME))
                                     .Or(IntervalSet::of(P::MINUS))
                                     .Or(IntervalSet::of(P::TILDE, P::LPAREN))
                                     .Or(IntervalSet::of(P::LBRACK))
                                     .Or(IntervalSet::of(P::LBRACE))
                                     .Or(IntervalSet::of(P::FLOAT_LIT, P::IDENT));
  return set;
}

bool expectsExpression(const IntervalSet &s) {
  return has(s, P::IDENT) && has(s, P::INT_LIT) && has(s, P::LPAREN);
}

// Operators that may continue an expression; they are left out of "expected ..." lists.
const IntervalSet &continuations() {
  static const IntervalSet set = IntervalSet::of(P::PLUS_ASSIGN, P::PERCENT)
                                     .Or(IntervalSet::of(P::AMP, P::CARET));
  return set;
}

// Rules whose body is a loop of items: recovery stays inside them rather than giving up the
// whole rule when an item starts with a wrong token.
bool isContainerRule(size_t rule) {
  switch (rule) {
  case P::RuleModule:
  case P::RuleKernelBody:
  case P::RuleBlock:
  case P::RuleConstraintsBlock:
  case P::RuleMappingDecl:
    return true;
  default:
    return false;
  }
}

std::string tokenName(size_t type, const antlr4::dfa::Vocabulary &vocabulary) {
  switch (type) {
  case Token::EOF:
    return "end of file";
  case P::IDENT:
    return "a name";
  case P::INT_LIT:
  case P::FLOAT_LIT:
    return "a number";
  case P::TYPE_NAME:
    return "an element type";
  default: {
    std::string literal = vocabulary.getLiteralName(type);
    return literal.empty() ? vocabulary.getDisplayName(type) : literal;
  }
  }
}

std::string joinAlternatives(const std::vector<std::string> &parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0)
      out += i + 1 == parts.size() ? " or " : ", ";
    out += parts[i];
  }
  return out;
}

} // namespace

std::string describeExpected(const IntervalSet &expected,
                             const antlr4::dfa::Vocabulary &vocabulary) {
  IntervalSet rest = expected;
  std::vector<std::string> parts;
  bool expression = expectsExpression(rest);
  bool name = !expression && has(rest, P::IDENT) && has(rest, P::SYMBOL);
  if (expression)
    rest = rest.subtract(expressionStarts());
  if (name)
    rest = rest.subtract(IntervalSet::of(P::SYMBOL, P::TYPE_NAME)).subtract(
        IntervalSet::of(P::IDENT));
  if (has(rest, P::PLUS) && has(rest, P::STAR)) {
    IntervalSet trimmed = rest.subtract(continuations());
    if (!trimmed.isEmpty() || expression || name)
      rest = trimmed;
  }
  if (has(rest, Token::EOF) && (rest.size() > 1 || expression || name))
    rest.remove(Token::EOF);
  rest.remove(Token::EPSILON);
  std::vector<std::string> closers; // listed last: "',' or ')'"
  for (ssize_t type : rest.toList())
    (isCloser(static_cast<size_t>(type)) ? closers : parts)
        .push_back(tokenName(static_cast<size_t>(type), vocabulary));
  parts.insert(parts.end(), closers.begin(), closers.end());
  if (name)
    parts.push_back("a name");
  if (expression)
    parts.push_back("an expression");
  if (parts.empty() || parts.size() > 3)
    return {};
  return joinAlternatives(parts);
}

// ---- the lexer ----------------------------------------------------------------------------

std::unique_ptr<Token> Lexer::nextToken() {
  std::unique_ptr<Token> t = WaveLexer::nextToken();
  size_t index = tokenCount_++; // the index the token stream gives it
  size_t type = t->getType();
  if (type != ERROR_CHAR && type != BAD_NUMBER)
    return t;
  size_t start = t->getStartIndex(), stop = t->getStopIndex();
  SourceRange range{state_.locAt(start), state_.locAt(stop + 1)};
  if (type == BAD_NUMBER) {
    std::string text = state_.file().text().substr(
        state_.byteOffset(start), state_.byteOffset(stop + 1) - state_.byteOffset(start));
    state_.report(DiagId::InvalidNumber, range, {text});
    return t;
  }
  state_.noteInvalidChar(index);
  bool continuesRun = start == lastInvalidStop_ + 1;
  lastInvalidStop_ = stop;
  if (state_.isReplacement(start))
    return t; // invalid UTF-8, already reported
  PendingDiag *last = state_.last();
  if (continuesRun && last && last->id == DiagId::InvalidCharacter) {
    last->range.end = range.end;
    return t;
  }
  char32_t cp = start < state_.codePoints().size() ? state_.codePoints()[start] : U'?';
  state_.report(DiagId::InvalidCharacter, range, {characterName(cp)});
  return t;
}

// ---- the error strategy -------------------------------------------------------------------

void SyntaxErrorStrategy::checkProgress(Parser *parser) {
  ++actions_;
  size_t index = parser->getInputStream()->index();
  if (index == lastIndex_) {
    if (++sameIndexCount_ > 64)
      throw antlr4::ParseCancellationException("no progress");
  } else {
    lastIndex_ = index;
    sameIndexCount_ = 0;
  }
  if (state_.shouldStop())
    throw antlr4::ParseCancellationException("too many errors");
  if (actions_ > 4 * state_.codePoints().size() + 256)
    throw antlr4::ParseCancellationException("no progress");
}

void SyntaxErrorStrategy::reportError(Parser *parser, const antlr4::RecognitionException &e) {
  if (inErrorRecoveryMode(parser))
    return;
  beginErrorCondition(parser);
  if (auto *nva = dynamic_cast<const antlr4::NoViableAltException *>(&e))
    reportNoViableAlternative(parser, *nva);
  else if (auto *im = dynamic_cast<const antlr4::InputMismatchException *>(&e))
    reportInputMismatch(parser, *im);
  else if (auto *fp = dynamic_cast<const antlr4::FailedPredicateException *>(&e))
    reportFailedPredicate(parser, *fp);
  else
    reportUnexpected(parser, e.getOffendingToken() ? e.getOffendingToken()
                                                   : parser->getCurrentToken(),
                     IntervalSet());
  checkProgress(parser);
}

void SyntaxErrorStrategy::sync(Parser *parser) {
  if (inErrorRecoveryMode(parser))
    return;
  antlr4::atn::ATNState *s = parser->getATN().states[parser->getState()];
  size_t la = parser->getTokenStream()->LA(1);
  const IntervalSet &next = parser->getATN().nextTokens(s);
  if (has(next, Token::EPSILON) || has(next, la))
    return;
  bool container = isContainerRule(parser->getContext()->getRuleIndex());
  // A missing `;` or closing bracket is better reported by the match that wants it (as a
  // missing token, with the opener) than here as an unexpected next token: leave it to that
  // match when the next token looks like what comes after the missing one.
  bool closable = has(next, P::SEMI) || has(next, P::RPAREN) || has(next, P::RBRACK) ||
                  has(next, P::RBRACE);
  if (!container && closable) {
    Token *t = parser->getCurrentToken();
    const Token *prev = state_.previousOnChannel(t);
    bool newLine = prev && state_.rangeOf(t).begin.line > state_.endOf(prev).line;
    if (has(next, P::SEMI) || newLine || la == P::LBRACE || la == P::SEMI || la == Token::EOF)
      return;
  }
  checkProgress(parser);
  switch (s->getStateType()) {
  case antlr4::atn::ATNState::BLOCK_START:
  case antlr4::atn::ATNState::STAR_BLOCK_START:
  case antlr4::atn::ATNState::PLUS_BLOCK_START:
  case antlr4::atn::ATNState::STAR_LOOP_ENTRY:
    if (singleTokenDeletion(parser) != nullptr)
      return;
    if (!container)
      throw antlr4::InputMismatchException(parser);
    [[fallthrough]];
  case antlr4::atn::ATNState::PLUS_LOOP_BACK:
  case antlr4::atn::ATNState::STAR_LOOP_BACK: {
    // Skip to something that can start the next item, or end the loop.
    reportUnwantedToken(parser);
    IntervalSet expecting = parser->getExpectedTokens();
    consumeUntil(parser, expecting.Or(getErrorRecoverySet(parser)));
    break;
  }
  default:
    break;
  }
}

void SyntaxErrorStrategy::recover(Parser *parser, std::exception_ptr e) {
  checkProgress(parser);
  DefaultErrorStrategy::recover(parser, e);
}

Token *SyntaxErrorStrategy::recoverInline(Parser *parser) {
  checkProgress(parser);
  return DefaultErrorStrategy::recoverInline(parser);
}

Token *SyntaxErrorStrategy::singleTokenDeletion(Parser *parser) {
  Token *t = parser->getCurrentToken();
  if (t->getType() == P::SEMI ||
      (isCloser(t->getType()) && ParseState::isReal(t) &&
       findOpener(t->getTokenIndex(), t->getType())))
    return nullptr;
  return DefaultErrorStrategy::singleTokenDeletion(parser);
}

void SyntaxErrorStrategy::reportNoViableAlternative(Parser *parser,
                                                    const antlr4::NoViableAltException &e) {
  Token *t = e.getOffendingToken() ? e.getOffendingToken() : parser->getCurrentToken();
  IntervalSet expected = e.getExpectedTokens();
  if (!accept(t) || reportIfMisplaced(t))
    return;
  if (t->getType() != Token::EOF && e.getStartToken() == t && expectsExpression(expected)) {
    emit(DiagId::ExpectedExpression, state_.rangeOf(t), {describeToken(state_, t)});
    return;
  }
  reportUnexpected(parser, t, expected);
}

void SyntaxErrorStrategy::reportInputMismatch(Parser *parser,
                                              const antlr4::InputMismatchException &e) {
  Token *t = e.getOffendingToken() ? e.getOffendingToken() : parser->getCurrentToken();
  IntervalSet expected = withListComma(parser, e.getExpectedTokens());
  if (!accept(t) || reportIfMisplaced(t))
    return;
  if (has(expected, P::SEMI)) {
    reportExpected(parser, t, expected);
    return;
  }
  reportUnexpected(parser, t, expected);
}

void SyntaxErrorStrategy::reportFailedPredicate(Parser *parser,
                                                const antlr4::FailedPredicateException &e) {
  Token *t = e.getOffendingToken() ? e.getOffendingToken() : parser->getCurrentToken();
  reportUnexpected(parser, t, IntervalSet());
}

// After a list item the parser only wants the closing bracket, because the list rule has
// already ended; the user may as well have forgotten a comma.
IntervalSet SyntaxErrorStrategy::withListComma(Parser *parser, IntervalSet expected) {
  if (expected.size() != 1 || !isCloser(static_cast<size_t>(expected.getSingleElement())))
    return expected;
  antlr4::ParserRuleContext *ctx = parser->getContext();
  bool list = false;
  switch (ctx->getRuleIndex()) {
  case P::RuleKernelDecl:
  case P::RuleIterateExpr:
  case P::RuleMappingDecl:
  case P::RuleMappingSection:
    list = !ctx->children.empty();
    break;
  default:
    for (antlr4::tree::ParseTree *child : ctx->children)
      list = list || dynamic_cast<P::ArgListContext *>(child) ||
             dynamic_cast<P::ExprListContext *>(child) ||
             dynamic_cast<P::DictEntryContext *>(child);
    break;
  }
  const Token *prev = state_.previousOnChannel(parser->getCurrentToken());
  if (list && prev && !isCloser(openerOf(prev->getType())) && prev->getType() != P::COMMA &&
      prev->getType() != P::LPAREN && prev->getType() != P::LBRACK && prev->getType() != P::LBRACE)
    expected.add(P::COMMA);
  return expected;
}

void SyntaxErrorStrategy::reportUnwantedToken(Parser *parser) {
  if (inErrorRecoveryMode(parser))
    return;
  beginErrorCondition(parser);
  reportUnexpected(parser, parser->getCurrentToken(),
                   withListComma(parser, getExpectedTokens(parser)));
}

void SyntaxErrorStrategy::reportMissingToken(Parser *parser) {
  if (inErrorRecoveryMode(parser))
    return;
  beginErrorCondition(parser);
  reportExpected(parser, parser->getCurrentToken(), getExpectedTokens(parser));
}

bool SyntaxErrorStrategy::accept(const Token *t) {
  state_.noteSyntaxErrorAt(t);
  // The character or number error already explains whatever goes wrong here.
  return !state_.followsInvalidChar(t) && !(t && t->getType() == P::BAD_NUMBER);
}

bool SyntaxErrorStrategy::emit(DiagId id, SourceRange range, std::vector<std::string> args) {
  // One syntax error per line: the rest are usually the same mistake seen again by recovery.
  if (range.begin.line != 0 && range.begin.line == lastLine_)
    return false;
  lastLine_ = range.begin.line;
  state_.report(id, range, std::move(args));
  return true;
}

void SyntaxErrorStrategy::reportUnexpected(Parser *parser, const Token *t,
                                           const IntervalSet &expected) {
  if (!accept(t) || reportIfMisplaced(t))
    return;
  size_t type = t ? t->getType() : Token::EOF;
  bool endsSomething = type == P::SEMI || type == P::COMMA || type == P::COLON || isCloser(type);
  if (endsSomething && expectsExpression(expected)) {
    emit(DiagId::ExpectedExpression, state_.rangeOf(t), {describeToken(state_, t)});
    return;
  }
  std::string what = describeExpected(expected, parser->getVocabulary());
  std::string tail = what.empty() ? "" : "; expected " + what;
  if (!t || t->getType() == Token::EOF) {
    // At the end of the file, what is missing is the bracket that closes the open block.
    size_t closer = Token::INVALID_TYPE;
    for (size_t c : {P::RBRACE, P::RPAREN, P::RBRACK})
      if (has(expected, c))
        closer = c;
    if (isCloser(closer))
      tail = "; expected " + parser->getVocabulary().getLiteralName(closer);
    if (emit(DiagId::UnexpectedEof, state_.rangeOf(t), {tail}) && isCloser(closer))
      noteOpener(t, closer);
    return;
  }
  emit(DiagId::UnexpectedToken, state_.rangeOf(t), {describeToken(state_, t), tail});
}

void SyntaxErrorStrategy::reportExpected(Parser *parser, const Token *t,
                                         const IntervalSet &expected) {
  if (!accept(t))
    return;
  const Token *prev = state_.previousOnChannel(t);
  if (has(expected, P::SEMI) && prev) {
    emit(DiagId::ExpectedAfter, SourceRange::at(state_.endOf(prev)),
         {"';'", whatSemicolonEnds(parser)});
    return;
  }
  std::string what = describeExpected(expected, parser->getVocabulary());
  if (what.empty()) {
    reportUnexpected(parser, t, expected);
    return;
  }
  size_t closer = expected.size() == 1 ? static_cast<size_t>(expected.getSingleElement())
                                        : Token::INVALID_TYPE;
  bool emitted;
  if (t->getType() == Token::EOF) {
    emitted = emit(DiagId::UnexpectedEof, state_.rangeOf(t), {"; expected " + what});
  } else if (prev && state_.rangeOf(t).begin.line > state_.endOf(prev).line) {
    // The token is on a later line: the user forgot something at the end of this one.
    emitted = emit(DiagId::ExpectedAfter, SourceRange::at(state_.endOf(prev)),
                   {what, describeToken(state_, prev)});
  } else {
    emitted = emit(DiagId::ExpectedToken, state_.rangeOf(t), {what, describeToken(state_, t)});
  }
  if (emitted && isCloser(closer))
    noteOpener(t, closer);
}

// Finds the opener that `closer` (at token index `from`, exclusive) would close. Parentheses
// and square brackets do not reach across a `;`: an unclosed `(` in an earlier statement is
// that statement's problem.
const Token *SyntaxErrorStrategy::findOpener(size_t from, size_t closer) {
  size_t opener = openerOf(closer);
  unsigned depth = 0;
  for (size_t i = from; i-- > 0;) {
    Token *candidate = state_.tokens()->get(i);
    size_t type = candidate->getType();
    if (type == closer)
      ++depth;
    else if (type == opener && depth-- == 0)
      return candidate;
    else if (type == P::SEMI && closer != P::RBRACE && depth == 0)
      return nullptr;
  }
  return nullptr;
}

bool SyntaxErrorStrategy::reportIfMisplaced(const Token *t) {
  if (t && t->getType() == P::ARROW) {
    emit(DiagId::MisplacedLambda, state_.rangeOf(t), {});
    return true;
  }
  return reportIfUnmatchedCloser(t) || reportIfReservedTarget(t);
}

bool SyntaxErrorStrategy::reportIfUnmatchedCloser(const Token *t) {
  if (!t || !isCloser(t->getType()) || !ParseState::isReal(t))
    return false;
  if (findOpener(t->getTokenIndex(), t->getType()))
    return false;
  emit(DiagId::UnmatchedBracket, state_.rangeOf(t), {state_.textOf(t)});
  return true;
}

// `if = 3;` or `kernel, x = ...`: a reserved word where a name is assigned.
bool SyntaxErrorStrategy::reportIfReservedTarget(const Token *t) {
  if (!t)
    return false;
  size_t type = t->getType();
  bool assigns = type == P::ASSIGN || type == P::COMMA || type == P::PLUS_ASSIGN ||
                 type == P::MINUS_ASSIGN || type == P::STAR_ASSIGN || type == P::SLASH_ASSIGN;
  const Token *prev = assigns ? state_.previousOnChannel(t) : nullptr;
  if (!prev || prev->getType() < P::SYMBOL || prev->getType() > P::TYPE_NAME)
    return false;
  const Token *before = state_.previousOnChannel(prev);
  bool startsStatement = !before || before->getType() == P::SEMI ||
                         before->getType() == P::LBRACE || before->getType() == P::RBRACE ||
                         before->getType() == P::COMMA;
  if (!startsStatement)
    return false;
  emit(DiagId::ReservedWord, state_.rangeOf(prev), {state_.textOf(prev)});
  return true;
}

void SyntaxErrorStrategy::noteOpener(const Token *t, size_t closer) {
  if (!ParseState::isReal(t))
    return;
  if (const Token *opener = findOpener(t->getTokenIndex(), closer))
    state_.note(DiagId::NoteOpenedHere, state_.rangeOf(opener), {state_.textOf(opener)});
}

std::string SyntaxErrorStrategy::whatSemicolonEnds(Parser *parser) {
  for (antlr4::RuleContext *ctx = parser->getContext(); ctx;
       ctx = dynamic_cast<antlr4::RuleContext *>(ctx->parent)) {
    switch (ctx->getRuleIndex()) {
    case P::RuleSymbolDecl:
    case P::RuleSymbolItem:
      return "symbol declaration";
    case P::RuleConstraint:
      return "constraint";
    case P::RuleStatement:
      return "statement";
    default:
      break;
    }
  }
  return "statement";
}

// ---- listeners ----------------------------------------------------------------------------

void SyntaxErrorListener::syntaxError(antlr4::Recognizer *, Token *offendingSymbol, size_t line,
                                      size_t charPositionInLine, const std::string &,
                                      std::exception_ptr) {
  if (offendingSymbol && ParseState::isReal(offendingSymbol)) {
    state_.noteSyntaxErrorAt(offendingSymbol);
    state_.report(DiagId::UnexpectedToken, state_.rangeOf(offendingSymbol),
                  {describeToken(state_, offendingSymbol), ""});
    return;
  }
  SourceLoc loc{static_cast<uint32_t>(line), static_cast<uint32_t>(charPositionInLine + 1)};
  state_.report(DiagId::ParseFailed, SourceRange::at(loc), {"unreadable input"});
}

void DepthGuard::enterEveryRule(antlr4::ParserRuleContext *ctx) {
  if (!root_)
    root_ = dynamic_cast<P::ModuleContext *>(ctx);
  if (depth_ + 1 > kMaxRuleDepth) {
    state_.report(DiagId::ExpressionTooDeep, state_.rangeOf(ctx->getStart()),
                  {std::to_string(kMaxExprDepth)});
    throw antlr4::ParseCancellationException("nesting too deep");
  }
  ++depth_;
}

void DepthGuard::exitEveryRule(antlr4::ParserRuleContext *) {
  if (depth_ > 0)
    --depth_;
}

} // namespace wave::parse
