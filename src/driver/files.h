// Reading inputs and writing outputs safely, for wavec (pipeline.cpp) and wave-run
// (tools/wave-run.cpp).
//
// The rules (docs/user-guide.md, "Output files"):
//  - an output never touches an input: an output that is an input file, however it is spelled
//    (another path, a symlink, a hard link: files are compared by device and inode), is refused;
//  - two outputs that name the same file are refused, an output that is a directory or has an
//    empty name too;
//  - a symlink is followed: its target is written and the link stays;
//  - an existing file that is not a regular one (/dev/null, a FIFO, a terminal) is written
//    through, never replaced;
//  - regular files are written to a temporary file in their directory and renamed into place
//    only once every output has been written: all outputs are committed or none ("-" is
//    standard output, whose write errors are errors too);
//  - a regular file that already holds exactly the bytes to write is left untouched (its time
//    stamp too), so what depends on it does not rebuild.
// Nothing here exits or aborts: every failure comes back as an OutputError.
#pragma once

#include <string>
#include <vector>

namespace wave {

// Reads a whole input file. A directory, or a file that cannot be read, is an error whose
// message (strerror's words, or "is a directory") goes to `error`.
bool readInputFile(const std::string &path, std::string &text, std::string &error);

// One output: the path as the user gave it ("-" = standard output), what named it for messages
// ("-o", "--header", "the depfile"), and its contents (empty for checkOutputs).
struct OutputFile {
  std::string path;
  std::string role;
  std::string data;
};

// Why an output cannot be written: its path as given and the reason.
struct OutputError {
  std::string path;
  std::string message;
};

// Checks every output against the rules above without writing anything: the check a tool makes
// before it starts working, and that writeOutputs repeats. `inputs` are the files read; one that
// does not exist is skipped.
bool checkOutputs(const std::vector<OutputFile> &outputs, const std::vector<std::string> &inputs,
                  OutputError &error);

// Checks, then writes every output: temporary files first, then the files written through
// (devices, FIFOs, standard output), then the renames. On failure the temporary files are
// removed and no regular output has changed (barring a rename failing midway, which the error
// reports).
bool writeOutputs(const std::vector<OutputFile> &outputs, const std::vector<std::string> &inputs,
                  OutputError &error);

// Flushes standard output; false with the reason when anything written to it was lost (a full
// disk, a closed pipe). Clears the error so that it is reported once.
bool flushStdout(std::string &error);

} // namespace wave
