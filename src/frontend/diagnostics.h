// The diagnostics engine: every message wavec prints goes through here. Messages come from the
// table in diagnostic_kinds.def (id, severity, template); the engine formats them clang-style
// (`file:line:col: error: text [id]`, the source line and a caret), attaches notes with their
// own locations, applies -Werror / -Wno-<id> / -Werror=<id>, and caps the error count.
#pragma once

#include "frontend/source.h"

#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace wave {

enum class DiagId : unsigned {
#define DIAG(ENUM, SEV, ID, TEXT) ENUM,
#include "frontend/diagnostic_kinds.def"
#undef DIAG
  NumDiags
};

enum class Severity { Note, Warning, Error, Fatal };

struct DiagInfo {
  Severity severity;
  const char *id;
  const char *text;
};
const DiagInfo &diagInfo(DiagId id);
// Looks a diagnostic up by its id string ("unknown-name"); false when there is none.
bool diagIdFromName(const std::string &name, DiagId &out);

struct Diagnostic {
  DiagId id;
  Severity severity; // after -Werror and friends
  SourceRange range; // may be invalid (command-line errors)
  std::string message;
  std::vector<Diagnostic> notes;
};

enum class ColorMode { Auto, Always, Never };
// --diagnostics-format: clang-style text; JSON Lines (one object per diagnostic, schema in
// docs/schemas/diagnostic.schema.json); one SARIF 2.1.0 log.
enum class DiagnosticFormat { Text, Json, Sarif };

class DiagnosticEngine {
public:
  explicit DiagnosticEngine(const SourceFile *file = nullptr) : file_(file) {}

  void setFile(const SourceFile *file) { file_ = file; }
  const SourceFile *file() const { return file_; }
  void setWarningsAsErrors(bool on) { werror_ = on; }
  void setErrorLimit(unsigned n) { errorLimit_ = n; }
  // Per-id overrides from -Wno-<id> (Ignore), -W<id> (Enable), -Werror=<id> (AsError).
  enum class Override { Ignore, Enable, AsError };
  void setOverride(DiagId id, Override o) { overrides_[id] = o; }

  // Reports a diagnostic; returns it so that notes can be attached with note().
  Diagnostic *report(DiagId id, SourceRange range, const std::vector<std::string> &args = {});
  // Attaches a note to the most recently reported (not suppressed) diagnostic.
  void note(DiagId id, SourceRange range, const std::vector<std::string> &args = {});

  unsigned errorCount() const { return errors_; }
  unsigned warningCount() const { return warnings_; }
  bool hasErrors() const { return errors_ > 0; }
  // True once the error limit or a fatal error was hit: callers should stop work.
  bool shouldStop() const { return stopped_; }
  const std::vector<Diagnostic> &diagnostics() const { return diags_; }

  // Renders all diagnostics reported so far, clang-style, followed by a summary line when there
  // were errors or warnings. `color` is resolved against the stream (isatty, NO_COLOR).
  void print(std::FILE *out, ColorMode color) const;
  std::string render(bool color) const;
  // Prints in `format` (colour applies to text only; `toolVersion` goes into SARIF's driver).
  void print(std::FILE *out, ColorMode color, DiagnosticFormat format,
             const std::string &toolVersion) const;
  std::string renderJson() const;
  std::string renderSarif(const std::string &toolVersion) const;

private:
  std::string renderOne(const Diagnostic &d, bool color) const;
  std::string jsonOne(const Diagnostic &d) const;

  const SourceFile *file_;
  std::vector<Diagnostic> diags_;
  std::map<DiagId, Override> overrides_;
  bool werror_ = false;
  bool stopped_ = false;
  bool lastSuppressed_ = false;
  unsigned errors_ = 0, warnings_ = 0;
  unsigned errorLimit_ = 20;
};

// Formats a message template with positional string arguments. Bad templates never throw:
// the raw template is returned.
// A JSON string literal (quotes included) with every control character escaped.
std::string jsonString(const std::string &s);

std::string formatTemplate(const char *tmpl, const std::vector<std::string> &args);

// Quotes a string for a message: 'x'.
inline std::string quoted(const std::string &s) { return "'" + s + "'"; }

// The closest candidate to `name` by edit distance, or "" when none is close enough.
std::string closestMatch(const std::string &name, const std::vector<std::string> &candidates);
// "; did you mean 'X'?" or "".
std::string didYouMean(const std::string &name, const std::vector<std::string> &candidates);

} // namespace wave
