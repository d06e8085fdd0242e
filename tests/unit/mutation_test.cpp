// Robustness: thousands of mangled variants of the samples (token deletions, duplications,
// swaps, replacements, random bytes, truncations) go through the whole front end. Each must
// end, in bounded time, either cleanly or with located errors: never a crash, a hang, an
// exception or a message without a location.
#include "frontend/parser.h"
#include "passes/distribution.h"
#include "sema/sema.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

using namespace wave;

namespace {

std::string readSample(const std::string &rel) {
  std::ifstream in(std::string(WAVE_SOURCE_DIR) + "/" + rel);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> tokenize(const std::string &text) {
  static const std::regex tok(R"([A-Za-z_][A-Za-z0-9_]*|[0-9][0-9_.xXa-fA-F]*|//|=>|[+\-*/=<>!]=|\s+|#[^\n]*|.)");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), tok); it != std::sregex_iterator(); ++it)
    out.push_back(it->str());
  return out;
}

std::string join(const std::vector<std::string> &toks) {
  std::string s;
  for (const auto &t : toks)
    s += t;
  return s;
}

std::string mutate(const std::vector<std::string> &toks, std::mt19937 &rng) {
  std::vector<std::string> t = toks;
  std::uniform_int_distribution<size_t> pick(0, t.size() - 1);
  int kind = static_cast<int>(rng() % 7);
  int edits = 1 + static_cast<int>(rng() % 3);
  for (int e = 0; e < edits && !t.empty(); ++e) {
    size_t i = std::uniform_int_distribution<size_t>(0, t.size() - 1)(rng);
    switch (kind) {
    case 0: // delete a token
      t.erase(t.begin() + static_cast<long>(i));
      break;
    case 1: // duplicate a token
      t.insert(t.begin() + static_cast<long>(i), t[i]);
      break;
    case 2: // swap two neighbours
      if (i + 1 < t.size())
        std::swap(t[i], t[i + 1]);
      break;
    case 3: // replace by another token of the file
      t[i] = toks[pick(rng)];
      break;
    case 4: { // random bytes
      std::string bytes;
      int n = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < n; ++k)
        bytes += static_cast<char>(rng() % 256);
      t.insert(t.begin() + static_cast<long>(i), bytes);
      break;
    }
    case 5: // truncate
      t.resize(i);
      break;
    default: { // move a token elsewhere
      std::string moved = t[i];
      t.erase(t.begin() + static_cast<long>(i));
      size_t j = t.empty() ? 0 : std::uniform_int_distribution<size_t>(0, t.size())(rng);
      t.insert(t.begin() + static_cast<long>(j), moved);
      break;
    }
    }
  }
  return join(t);
}

// Runs the front end; returns "" when every diagnostic is acceptable, else what is wrong.
std::string runFrontEnd(const std::string &text, const TargetInfo &target) {
  SourceFile file("mutant.wave", text);
  DiagnosticEngine diags(&file);
  try {
    auto module = parseModule(file, diags);
    if (module && !diags.hasErrors()) {
      SemaOptions opts;
      opts.target = &target;
      auto program = analyze(*module, opts, diags);
      if (program && !diags.hasErrors())
        for (const auto &k : program->kernels) {
          Distribution d;
          distribute(*k, target, diags, d);
        }
    }
  } catch (const std::exception &e) {
    return std::string("exception: ") + e.what();
  } catch (...) {
    return "unknown exception";
  }
  for (const auto &d : diags.diagnostics()) {
    if (d.message.empty())
      return "empty message";
    if (d.severity == Severity::Note || d.id == DiagId::TooManyErrors || d.id == DiagId::NoKernels)
      continue;
    if (!d.range.valid() || d.range.begin.line > file.lineCount() + 1)
      return "unlocated diagnostic: " + d.message;
  }
  return "";
}

} // namespace

TEST(Mutation, TenThousandVariantsEndWithLocatedDiagnostics) {
  const char *samples[] = {"samples/gemm/gemm.wave", "samples/copy/copy.wave",
                           "samples/softmax/softmax.wave"};
  std::vector<std::vector<std::string>> sources;
  for (const char *s : samples) {
    std::string text = readSample(s);
    ASSERT_FALSE(text.empty()) << "cannot read " << s;
    sources.push_back(tokenize(text));
  }
  const unsigned seed = 20261122;
  std::mt19937 rng(seed);
  const int kVariants = 10000;
  int clean = 0, rejected = 0;
  double slowest = 0;
  for (int v = 0; v < kVariants; ++v) {
    const auto &toks = sources[v % sources.size()];
    std::string text = mutate(toks, rng);
    const TargetInfo &target = allTargets()[v % allTargets().size()];
    auto start = std::chrono::steady_clock::now();
    std::string problem = runFrontEnd(text, target);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    slowest = std::max(slowest, secs);
    ASSERT_EQ(problem, "") << "variant " << v << " (seed " << seed << ", target " << target.name
                           << ") of " << samples[v % sources.size()] << ":\n" << text;
    // A hang guard, not a performance test: one front-end run takes milliseconds.
    ASSERT_LT(secs, 5.0) << "variant " << v << " took " << secs << " s:\n" << text;
    SourceFile f("x", text);
    DiagnosticEngine d(&f);
    (void)d;
  }
  (void)clean;
  (void)rejected;
  std::printf("%d variants, slowest %.1f ms\n", kVariants, slowest * 1000);
}
