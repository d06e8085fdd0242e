#include "frontend/diagnostics.h"

#include <fmt/args.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
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

// ---- machine-readable formats ------------------------------------------------------------
namespace wave {

std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\t': out += "\\t"; break;
    case '\r': out += "\\r"; break;
    default:
      if (c < 0x20)
        out += fmt::format("\\u{:04x}", c);
      else
        out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

namespace {

const char *severityKey(Severity s) {
  switch (s) {
  case Severity::Note: return "note";
  case Severity::Warning: return "warning";
  case Severity::Error: return "error";
  case Severity::Fatal: return "fatal";
  }
  return "error";
}

} // namespace

// {"id", "severity", "message", "file", "line", "column", "end_line", "end_column", "notes"}:
// line and column are 1-based, 0 when the diagnostic has no location (then file may be null).
std::string DiagnosticEngine::jsonOne(const Diagnostic &d) const {
  const bool located = file_ && d.range.valid();
  std::string out = "{\"id\":" + jsonString(diagInfo(d.id).id);
  out += ",\"severity\":" + jsonString(severityKey(d.severity));
  out += ",\"message\":" + jsonString(d.message);
  out += ",\"file\":" + (file_ ? jsonString(file_->name()) : std::string("null"));
  out += fmt::format(",\"line\":{},\"column\":{}", located ? d.range.begin.line : 0,
                     located ? d.range.begin.col : 0);
  out += fmt::format(",\"end_line\":{},\"end_column\":{}", located ? d.range.end.line : 0,
                     located ? d.range.end.col : 0);
  out += ",\"notes\":[";
  for (size_t i = 0; i < d.notes.size(); ++i)
    out += (i ? "," : "") + jsonOne(d.notes[i]);
  return out + "]}";
}

std::string DiagnosticEngine::renderJson() const {
  std::string out;
  for (const auto &d : diags_)
    out += jsonOne(d) + "\n";
  return out;
}

// A file path as a SARIF artifact URI: absolute paths become file:// URIs, and every byte
// outside RFC 3986's unreserved set and '/' is percent-encoded.
static std::string artifactUri(const std::string &path) {
  std::string out = !path.empty() && path[0] == '/' ? "file://" : "";
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/')
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

// One SARIF 2.1.0 log with one run: the rules are the ids used, each result points at its rule
// by id and index, notes become relatedLocations (with their messages).
std::string DiagnosticEngine::renderSarif(const std::string &toolVersion) const {
  std::vector<DiagId> rules;
  auto ruleIndex = [&](DiagId id) {
    auto it = std::find(rules.begin(), rules.end(), id);
    if (it != rules.end())
      return static_cast<size_t>(it - rules.begin());
    rules.push_back(id);
    return rules.size() - 1;
  };
  auto level = [](Severity s) {
    return s == Severity::Note ? "note" : s == Severity::Warning ? "warning" : "error";
  };
  auto location = [&](const Diagnostic &d, bool withMessage) {
    std::string loc = "{\"physicalLocation\":{\"artifactLocation\":{\"uri\":" +
                      jsonString(artifactUri(file_ ? file_->name() : "")) + "}";
    if (d.range.valid()) {
      uint32_t endLine = d.range.end.valid() ? d.range.end.line : d.range.begin.line;
      uint32_t endCol = d.range.end.valid() ? d.range.end.col : d.range.begin.col + 1;
      loc += fmt::format(",\"region\":{{\"startLine\":{},\"startColumn\":{},\"endLine\":{},"
                         "\"endColumn\":{}}}",
                         d.range.begin.line, d.range.begin.col, endLine,
                         std::max(endCol, d.range.begin.col + (endLine == d.range.begin.line)));
    }
    loc += "}";
    if (withMessage)
      loc += ",\"message\":{\"text\":" + jsonString(d.message) + "}";
    return loc + "}";
  };
  std::string results;
  for (const auto &d : diags_) {
    size_t index = ruleIndex(d.id);
    std::string r = "{\"ruleId\":" + jsonString(diagInfo(d.id).id) +
                    fmt::format(",\"ruleIndex\":{}", index) +
                    ",\"level\":" + jsonString(level(d.severity)) +
                    ",\"message\":{\"text\":" + jsonString(d.message) + "}";
    if (file_)
      r += ",\"locations\":[" + location(d, false) + "]";
    if (file_ && !d.notes.empty()) {
      r += ",\"relatedLocations\":[";
      for (size_t i = 0; i < d.notes.size(); ++i)
        r += (i ? "," : "") + location(d.notes[i], true);
      r += "]";
    }
    results += (results.empty() ? "" : ",") + r + "}";
  }
  std::string ruleText;
  for (size_t i = 0; i < rules.size(); ++i)
    ruleText += std::string(i ? "," : "") + "{\"id\":" + jsonString(diagInfo(rules[i]).id) +
                ",\"defaultConfiguration\":{\"level\":" +
                jsonString(level(diagInfo(rules[i]).severity)) + "}}";
  std::string out = "{\"$schema\":\"https://json.schemastore.org/sarif-2.1.0.json\","
                    "\"version\":\"2.1.0\",\"runs\":[{\"tool\":{\"driver\":{\"name\":\"wavec\","
                    "\"version\":" +
                    jsonString(toolVersion) + ",\"rules\":[" + ruleText + "]}}";
  if (file_)
    out += ",\"artifacts\":[{\"location\":{\"uri\":" + jsonString(artifactUri(file_->name())) +
           "}}]";
  out += ",\"results\":[" + results + "]}]}\n";
  return out;
}

void DiagnosticEngine::print(std::FILE *out, ColorMode color, DiagnosticFormat format,
                             const std::string &toolVersion) const {
  if (format == DiagnosticFormat::Text)
    return print(out, color);
  std::string text = format == DiagnosticFormat::Json ? renderJson() : renderSarif(toolVersion);
  std::fwrite(text.data(), 1, text.size(), out);
}

} // namespace wave
