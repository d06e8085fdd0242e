#include "frontend/diagnostics.h"

#include <fmt/args.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <unistd.h>

namespace wave {

static const DiagInfo kDiagTable[] = {
#define DIAG(ENUM, SEV, ID, TEXT) {Severity::SEV, ID, TEXT},
#include "frontend/diagnostic_kinds.def"
#undef DIAG
};

const DiagInfo &diagInfo(DiagId id) { return kDiagTable[static_cast<unsigned>(id)]; }

bool diagIdFromName(const std::string &name, DiagId &out) {
  for (unsigned i = 0; i < static_cast<unsigned>(DiagId::NumDiags); ++i) {
    if (name == kDiagTable[i].id) {
      out = static_cast<DiagId>(i);
      return true;
    }
  }
  return false;
}

std::string formatTemplate(const char *tmpl, const std::vector<std::string> &args) {
  fmt::dynamic_format_arg_store<fmt::format_context> store;
  for (const auto &a : args)
    store.push_back(a);
  try {
    return fmt::vformat(tmpl, store);
  } catch (const fmt::format_error &) {
    return tmpl;
  }
}

Diagnostic *DiagnosticEngine::report(DiagId id, SourceRange range,
                                     const std::vector<std::string> &args) {
  lastSuppressed_ = true;
  if (stopped_)
    return nullptr;
  const DiagInfo &info = diagInfo(id);
  Severity sev = info.severity;
  auto ov = overrides_.find(id);
  if (sev == Severity::Warning) {
    if (ov != overrides_.end() && ov->second == Override::Ignore)
      return nullptr;
    if (werror_ || (ov != overrides_.end() && ov->second == Override::AsError))
      sev = Severity::Error;
  }
  lastSuppressed_ = false;
  diags_.push_back({id, sev, range, formatTemplate(info.text, args), {}});
  if (sev == Severity::Warning)
    ++warnings_;
  if (sev == Severity::Error || sev == Severity::Fatal)
    ++errors_;
  if (sev == Severity::Fatal) {
    stopped_ = true;
  } else if (sev == Severity::Error && errorLimit_ && errors_ >= errorLimit_) {
    Diagnostic *last = &diags_.back();
    (void)last;
    diags_.push_back({DiagId::TooManyErrors, Severity::Fatal, {},
                      formatTemplate(diagInfo(DiagId::TooManyErrors).text,
                                     {std::to_string(errors_)}),
                      {}});
    stopped_ = true;
    return &diags_[diags_.size() - 2];
  }
  return &diags_.back();
}

void DiagnosticEngine::note(DiagId id, SourceRange range, const std::vector<std::string> &args) {
  if (lastSuppressed_ || diags_.empty())
    return;
  // Attach to the last real diagnostic (not the "too many errors" line).
  auto it = std::find_if(diags_.rbegin(), diags_.rend(),
                         [](const Diagnostic &d) { return d.id != DiagId::TooManyErrors; });
  if (it == diags_.rend())
    return;
  it->notes.push_back(
      {id, Severity::Note, range, formatTemplate(diagInfo(id).text, args), {}});
}

namespace {
const char *kBold = "\033[1m", *kRed = "\033[1;31m", *kMagenta = "\033[1;35m",
           *kGreen = "\033[1;32m", *kCyan = "\033[1;36m", *kReset = "\033[0m";

const char *severityName(Severity s) {
  switch (s) {
  case Severity::Note:
    return "note";
  case Severity::Warning:
    return "warning";
  case Severity::Error:
    return "error";
  case Severity::Fatal:
    return "fatal error";
  }
  return "error";
}
const char *severityColor(Severity s) {
  switch (s) {
  case Severity::Note:
    return kCyan;
  case Severity::Warning:
    return kMagenta;
  default:
    return kRed;
  }
}
} // namespace

std::string DiagnosticEngine::renderOne(const Diagnostic &d, bool color) const {
  std::string out;
  auto paint = [&](const char *c, const std::string &s) {
    return color ? std::string(c) + s + kReset : s;
  };
  std::string where = file_ ? file_->name() : std::string("wavec");
  if (file_ && d.range.valid())
    where += fmt::format(":{}:{}", d.range.begin.line, d.range.begin.col);
  out += paint(kBold, where + ":") + " ";
  out += paint(severityColor(d.severity), std::string(severityName(d.severity)) + ":") + " ";
  std::string msg = d.message;
  if (d.severity != Severity::Note)
    msg += fmt::format(" [{}]", diagInfo(d.id).id);
  out += paint(kBold, msg) + "\n";
  if (file_ && d.range.valid()) {
    std::string_view line = file_->lineText(d.range.begin.line);
    // Tabs become single spaces so that the caret lines up.
    std::string text(line);
    std::replace(text.begin(), text.end(), '\t', ' ');
    out += text + "\n";
    uint32_t col = d.range.begin.col;
    uint32_t endCol = d.range.end.line == d.range.begin.line ? d.range.end.col : 0;
    if (endCol == 0 || endCol <= col)
      endCol = d.range.end.line > d.range.begin.line ? static_cast<uint32_t>(text.size()) + 1
                                                     : col + 1;
    endCol = std::min<uint32_t>(endCol, static_cast<uint32_t>(text.size()) + 2);
    std::string caret(col > 0 ? col - 1 : 0, ' ');
    std::string marks = "^";
    if (endCol > col + 1)
      marks += std::string(endCol - col - 1, '~');
    out += caret + paint(kGreen, marks) + "\n";
  }
  for (const auto &n : d.notes)
    out += renderOne(n, color);
  return out;
}

std::string DiagnosticEngine::render(bool color) const {
  std::string out;
  for (const auto &d : diags_)
    out += renderOne(d, color);
  if (errors_ || warnings_) {
    std::string summary;
    if (warnings_)
      summary += fmt::format("{} warning{}", warnings_, warnings_ == 1 ? "" : "s");
    if (errors_)
      summary += fmt::format("{}{} error{}", warnings_ ? " and " : "", errors_,
                             errors_ == 1 ? "" : "s");
    out += summary + " generated.\n";
  }
  return out;
}

void DiagnosticEngine::print(std::FILE *out, ColorMode mode) const {
  bool color = false;
  if (mode == ColorMode::Always)
    color = true;
  else if (mode == ColorMode::Auto) {
    const char *noColor = std::getenv("NO_COLOR");
    color = isatty(fileno(out)) && !(noColor && *noColor);
  }
  std::string text = render(color);
  std::fwrite(text.data(), 1, text.size(), out);
}

static size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closestMatch(const std::string &name, const std::vector<std::string> &candidates) {
  std::string best;
  size_t bestDist = (name.size() + 2) / 3; // allow about one edit per three characters
  if (bestDist == 0)
    bestDist = 1;
  for (const auto &c : candidates) {
    if (c == name)
      continue;
    size_t d = editDistance(name, c);
    // Case-only differences are always worth suggesting.
    bool sameIgnoringCase = name.size() == c.size() &&
                            std::equal(name.begin(), name.end(), c.begin(), [](char x, char y) {
                              return std::tolower(x) == std::tolower(y);
                            });
    if (sameIgnoringCase)
      d = 0;
    if (d <= bestDist && (best.empty() || d < editDistance(name, best))) {
      best = c;
      bestDist = d;
    }
  }
  return best;
}

std::string didYouMean(const std::string &name, const std::vector<std::string> &candidates) {
  std::string m = closestMatch(name, candidates);
  return m.empty() ? std::string() : "; did you mean '" + m + "'?";
}

} // namespace wave
