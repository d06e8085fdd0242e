// Source files and locations. A compilation reads one `.wave` file; every diagnostic and AST node
// points into it with 1-based line and column numbers (columns count bytes, like clang's).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace wave {

struct SourceLoc {
  uint32_t line = 0; // 1-based; 0 = no location
  uint32_t col = 0;  // 1-based byte column
  bool valid() const { return line != 0; }
  bool operator==(const SourceLoc &o) const { return line == o.line && col == o.col; }
  bool operator<(const SourceLoc &o) const {
    return line < o.line || (line == o.line && col < o.col);
  }
};

// [begin, end): end is one past the last character (same line or a later one).
struct SourceRange {
  SourceLoc begin, end;
  bool valid() const { return begin.valid(); }
  static SourceRange at(SourceLoc l) { return {l, {l.line, l.col + 1}}; }
  static SourceRange span(SourceRange a, SourceRange b) { return {a.begin, b.end}; }
};

class SourceFile {
public:
  SourceFile(std::string name, std::string text);

  const std::string &name() const { return name_; }
  const std::string &text() const { return text_; }
  // The text of line `line` (1-based) without its newline; empty when out of range.
  std::string_view lineText(uint32_t line) const;
  uint32_t lineCount() const { return static_cast<uint32_t>(lineStarts_.size()); }
  SourceLoc locOf(size_t offset) const;

private:
  std::string name_, text_;
  std::vector<size_t> lineStarts_;
};

} // namespace wave
