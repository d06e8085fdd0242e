// Shared state of one parse: decoded text, locations, token helpers, held-back diagnostics.
#include "frontend/parse_state.h"

#include "WaveLexer.h"

#include <fmt/format.h>

#include <algorithm>

namespace wave::parse {

ParseState::ParseState(const SourceFile &file, unsigned errorBudget)
    : file_(file), errorBudget_(errorBudget == 0 ? 1 : errorBudget) {}

// ---- the text -----------------------------------------------------------------------------

namespace {
// Decodes one UTF-8 sequence at text[i]; returns its length, or 0 when it is invalid (bad lead
// byte, truncated, overlong, a surrogate, or beyond U+10FFFF).
size_t decodeOne(const std::string &text, size_t i, char32_t &out) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char c = byte(i);
  if (c < 0x80) {
    out = c;
    return 1;
  }
  size_t len;
  char32_t cp, min;
  if ((c & 0xE0) == 0xC0) {
    len = 2, cp = c & 0x1F, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3, cp = c & 0x0F, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4, cp = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + len > text.size())
    return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  out = cp;
  return len;
}
} // namespace

void ParseState::decode() {
  const std::string &text = file_.text();
  codePoints_.clear();
  byteOffsets_.clear();
  codePoints_.reserve(text.size());
  byteOffsets_.reserve(text.size() + 1);
  uint32_t lastReportedLine = 0;
  size_t i = 0;
  while (i < text.size()) {
    char32_t cp = 0;
    size_t len = decodeOne(text, i, cp);
    if (len == 0) {
      SourceLoc loc = file_.locOf(i);
      if (loc.line != lastReportedLine) {
        lastReportedLine = loc.line;
        report(DiagId::InvalidUtf8, SourceRange::at(loc),
               {fmt::format("{:02X}", static_cast<unsigned char>(text[i]))});
      }
      replacements_.push_back(codePoints_.size());
      cp = 0xFFFD;
      len = 1;
    }
    // A byte order mark at the start is allowed and ignored.
    if (cp == 0xFEFF && i == 0)
      cp = U' ';
    codePoints_.push_back(cp);
    byteOffsets_.push_back(static_cast<uint32_t>(i));
    i += len;
  }
  byteOffsets_.push_back(static_cast<uint32_t>(text.size()));
}

bool ParseState::isReplacement(size_t i) const {
  return std::binary_search(replacements_.begin(), replacements_.end(), i);
}

bool ParseState::checkNesting() {
  unsigned depth = 0;
  for (size_t i = 0; i < codePoints_.size(); ++i) {
    char32_t c = codePoints_[i];
    if (c == U'#') {
      while (i < codePoints_.size() && codePoints_[i] != U'\n')
        ++i;
    } else if (c == U'(' || c == U'[' || c == U'{') {
      if (++depth > kMaxBracketDepth) {
        report(DiagId::NestingTooDeep, SourceRange::at(locAt(i)),
               {std::to_string(kMaxBracketDepth)});
        return false;
      }
    } else if ((c == U')' || c == U']' || c == U'}') && depth > 0) {
      --depth;
    }
  }
  return true;
}

bool ParseState::checkExpressionDepth() {
  using L = wave_antlr::WaveLexer;
  if (!tokens_)
    return true;
  // One frame per open bracket: the level of the bracket itself and the prefix operators
  // pending at this bracket level (`- - (` nests the bracket three levels below its base).
  struct Frame {
    unsigned base;
    unsigned prefix;
  };
  std::vector<Frame> frames{{0, 0}};
  bool afterOperand = false; // the previous token ends an operand: `-` is then binary
  for (size_t i = 0; i < tokens_->size(); ++i) {
    antlr4::Token *t = tokens_->get(i);
    if (t->getChannel() != antlr4::Token::DEFAULT_CHANNEL)
      continue;
    size_t type = t->getType();
    if (type == antlr4::Token::EOF)
      break;
    Frame &f = frames.back();
    unsigned level = 0;
    switch (type) {
    case L::LPAREN:
    case L::LBRACK:
    case L::LBRACE:
      level = f.base + f.prefix + 1;
      frames.push_back({level, 0});
      afterOperand = false;
      break;
    case L::RPAREN:
    case L::RBRACK:
    case L::RBRACE:
      if (frames.size() > 1)
        frames.pop_back();
      afterOperand = true;
      break;
    case L::MINUS:
    case L::TILDE:
      if (afterOperand) {
        f.prefix = 0; // a binary `-` ends the operand the prefixes applied to
      } else {
        level = f.base + ++f.prefix;
      }
      afterOperand = false;
      break;
    case L::IDENT:
    case L::INT_LIT:
    case L::FLOAT_LIT:
    case L::BAD_NUMBER:
    case L::INF_LIT:
    case L::NAN_LIT:
    case L::TRUE_LIT:
    case L::FALSE_LIT:
    case L::GLOBAL:
    case L::SHARED:
    case L::TYPE_NAME:
      afterOperand = true;
      break;
    default:
      // Binary operators, separators, keywords: the pending prefixes are done.
      f.prefix = 0;
      afterOperand = false;
      break;
    }
    if (level > kMaxExprDepth) {
      report(DiagId::ExpressionTooDeep, rangeOf(t), {std::to_string(kMaxExprDepth)});
      return false;
    }
  }
  return true;
}

// ---- locations ----------------------------------------------------------------------------

size_t ParseState::byteOffset(size_t codePointIndex) const {
  if (byteOffsets_.empty())
    return 0;
  return byteOffsets_[std::min(codePointIndex, byteOffsets_.size() - 1)];
}

SourceLoc ParseState::locAt(size_t codePointIndex) const {
  return file_.locOf(byteOffset(codePointIndex));
}

bool ParseState::isReal(const antlr4::Token *t) {
  return t && t->getTokenIndex() != INVALID_INDEX &&
         t->getStartIndex() != INVALID_INDEX;
}

SourceRange ParseState::rangeOf(const antlr4::Token *t) const {
  if (!isReal(t))
    return {};
  SourceLoc begin = locAt(t->getStartIndex());
  if (t->getType() == antlr4::Token::EOF || t->getStopIndex() < t->getStartIndex())
    return SourceRange::at(begin);
  return {begin, endOf(t)};
}

SourceRange ParseState::rangeOf(const antlr4::Token *first, const antlr4::Token *last) const {
  SourceRange a = rangeOf(first);
  if (!isReal(last) || last->getType() == antlr4::Token::EOF ||
      last->getTokenIndex() < first->getTokenIndex())
    return a;
  return {a.begin, endOf(last)};
}

SourceLoc ParseState::endOf(const antlr4::Token *t) const {
  if (!isReal(t))
    return {};
  if (t->getType() == antlr4::Token::EOF || t->getStopIndex() < t->getStartIndex())
    return locAt(t->getStartIndex());
  return locAt(t->getStopIndex() + 1);
}

std::string ParseState::textOf(const antlr4::Token *t) const {
  if (!t)
    return {};
  if (!isReal(t))
    return t->getText();
  if (t->getType() == antlr4::Token::EOF || t->getStopIndex() < t->getStartIndex())
    return {};
  size_t begin = byteOffset(t->getStartIndex()), end = byteOffset(t->getStopIndex() + 1);
  return file_.text().substr(begin, end - begin);
}

// ---- tokens -------------------------------------------------------------------------------

const antlr4::Token *ParseState::previousOnChannel(const antlr4::Token *t) const {
  if (!tokens_ || !isReal(t))
    return nullptr;
  for (size_t i = t->getTokenIndex(); i-- > 0;) {
    antlr4::Token *p = tokens_->get(i);
    if (p->getChannel() == antlr4::Token::DEFAULT_CHANNEL)
      return p;
  }
  return nullptr;
}

const antlr4::Token *ParseState::nextOnChannel(const antlr4::Token *t) const {
  if (!tokens_ || !isReal(t))
    return nullptr;
  for (size_t i = t->getTokenIndex() + 1; i < tokens_->size(); ++i) {
    antlr4::Token *n = tokens_->get(i);
    if (n->getChannel() == antlr4::Token::DEFAULT_CHANNEL)
      return n;
  }
  return nullptr;
}

bool ParseState::followsInvalidChar(const antlr4::Token *t) const {
  if (!tokens_ || !isReal(t) || invalidChars_.empty())
    return false;
  for (size_t i = t->getTokenIndex(); i-- > 0;) {
    antlr4::Token *p = tokens_->get(i);
    if (p->getChannel() == antlr4::Token::DEFAULT_CHANNEL)
      return false;
    if (p->getType() == wave_antlr::WaveLexer::ERROR_CHAR)
      return true;
  }
  return false;
}

bool ParseState::invalidCharNear(const antlr4::Token *first, const antlr4::Token *last) const {
  if (invalidChars_.empty() || !isReal(first) || !isReal(last))
    return false;
  const antlr4::Token *before = previousOnChannel(first), *after = nextOnChannel(last);
  size_t lo = before ? before->getTokenIndex() + 1 : 0;
  size_t hi = after ? after->getTokenIndex() : static_cast<size_t>(-1);
  auto it = std::lower_bound(invalidChars_.begin(), invalidChars_.end(), lo);
  return it != invalidChars_.end() && *it < hi;
}

void ParseState::noteSyntaxErrorAt(const antlr4::Token *t) {
  if (!isReal(t))
    return;
  syntaxErrors_.push_back(t->getTokenIndex());
  syntaxErrorLines_.push_back(rangeOf(t).begin.line);
}

bool ParseState::hadSyntaxErrorOnLine(uint32_t line) const {
  return std::find(syntaxErrorLines_.begin(), syntaxErrorLines_.end(), line) !=
         syntaxErrorLines_.end();
}

bool ParseState::hadSyntaxErrorAt(const antlr4::Token *t) const {
  return isReal(t) && std::find(syntaxErrors_.begin(), syntaxErrors_.end(),
                                t->getTokenIndex()) != syntaxErrors_.end();
}

// ---- diagnostics --------------------------------------------------------------------------

void ParseState::report(DiagId id, SourceRange range, std::vector<std::string> args) {
  lastDropped_ = true;
  if (stopped_)
    return;
  lastDropped_ = false;
  diags_.push_back({id, range, std::move(args), {}});
  Severity sev = diagInfo(id).severity;
  if (sev == Severity::Error || sev == Severity::Fatal)
    ++errors_;
  if (sev == Severity::Fatal || errors_ >= errorBudget_)
    stopped_ = true;
}

void ParseState::note(DiagId id, SourceRange range, std::vector<std::string> args) {
  if (lastDropped_ || diags_.empty())
    return;
  diags_.back().notes.push_back({id, range, std::move(args)});
}

void ParseState::flush(DiagnosticEngine &diags) {
  std::stable_sort(diags_.begin(), diags_.end(), [](const PendingDiag &a, const PendingDiag &b) {
    return a.range.begin < b.range.begin;
  });
  for (const PendingDiag &d : diags_) {
    diags.report(d.id, d.range, d.args);
    for (const PendingNote &n : d.notes)
      diags.note(n.id, n.range, n.args);
  }
  diags_.clear();
}

// ---- token descriptions -------------------------------------------------------------------

std::string describeToken(const ParseState &state, const antlr4::Token *t) {
  using L = wave_antlr::WaveLexer;
  if (!t || t->getType() == antlr4::Token::EOF)
    return "end of file";
  std::string text = state.textOf(t);
  if (text.size() > 40)
    text = text.substr(0, 37) + "...";
  switch (t->getType()) {
  case L::IDENT:
    return "identifier '" + text + "'";
  case L::INT_LIT:
  case L::FLOAT_LIT:
  case L::BAD_NUMBER:
    return "number '" + text + "'";
  default:
    return "'" + text + "'";
  }
}

} // namespace wave::parse
