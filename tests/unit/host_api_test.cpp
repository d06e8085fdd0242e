// The generated host API: C expressions for index formulas, and a header and stub that compile
// as C99 and C++ with -Wall -Wextra -Werror (the stub with a stand-in code object).
#include "codegen/host_api.h"
#include "frontend/parser.h"
#include "sema/sema.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace wave;
using sym::IndexExpr;

TEST(HostApi, CExpressions) {
  IndexExpr M = IndexExpr::symbol("M"), N = IndexExpr::symbol("N");
  EXPECT_EQ(*cExpr(IndexExpr(4)), "INT64_C(4)");
  EXPECT_EQ(*cExpr(ceilDiv(M, 64)), "wave_ceildiv_((int64_t)M, INT64_C(64))");
  EXPECT_NE(cExpr(M * N + 1)->find("(int64_t)M"), std::string::npos);
  // An exact division (K / 2) becomes one integer division of the doubled sum.
  auto half = cExpr(exactDiv(M, 2) + N);
  ASSERT_TRUE(half.has_value());
  EXPECT_NE(half->find(" / INT64_C(2))"), std::string::npos) << *half;
  // Thread ids have no meaning on the host.
  EXPECT_FALSE(cExpr(IndexExpr::symbol("$T0")).has_value());
}

namespace {
struct Compiled {
  std::unique_ptr<ast::Module> module;
  std::unique_ptr<Program> program;
  std::vector<Distribution> dists;
};

Compiled compile(const std::string &text, DiagnosticEngine &diags, SourceFile &file) {
  Compiled c;
  c.module = parseModule(file, diags);
  SemaOptions opts;
  c.program = analyze(*c.module, opts, diags);
  c.dists.resize(c.program->kernels.size());
  for (size_t i = 0; i < c.program->kernels.size(); ++i)
    distribute(*c.program->kernels[i], *c.program->target, diags, c.dists[i]);
  return c;
}

int run(const std::string &cmd) { return std::system(cmd.c_str()); }
} // namespace

TEST(HostApi, HeaderAndStubCompileAsC99AndCxx) {
  const char *src = R"(
symbol M, N, K;
kernel scale(a: Memory[M, N, global, f16], b: Memory[M, N, global, f16], alpha: f16, n: i32) {
  constraints {
    workgroup(M, 16, dim = 1); workgroup(N, 256, dim = 0); wave(M, 16); wave(N, 256);
    assume(N % 8 == 0);
  }
  write(read(a) * alpha, b);
}
)";
  SourceFile file("scale.wave", src);
  DiagnosticEngine diags(&file);
  Compiled c = compile(src, diags, file);
  ASSERT_FALSE(diags.hasErrors()) << diags.render(false);
  std::vector<HostKernel> kernels{{c.program->kernels[0].get(), &c.dists[0]}};
  HostApiOptions o;
  o.sourceName = "scale.wave";
  o.headerName = "scale.h";
  o.guard = "SCALE_H";
  o.objects = {{"gfx942", std::string("\x7f" "ELF stand-in", 13)}, {"sm_90", "// ptx"}};
  std::string header = generateHeader(kernels, o), stub = generateStub(kernels, o);
  // Each pointer states the element type and shape it points to.
  EXPECT_NE(header.find("wave_status_t scale_launch(wave_stream_t stream, const void *a /* f16[M, "
                        "N] */, void *b /* f16[M, N] */, float alpha, int32_t n, int64_t M, "
                        "int64_t N);"),
            std::string::npos)
      << header;
  EXPECT_NE(header.find("#define WAVEC_GENERATED_API_VERSION 2"), std::string::npos) << header;
  EXPECT_NE(header.find("const wave_kernel_info_t *scale_info_for(const char *arch);"),
            std::string::npos)
      << header;
  EXPECT_NE(stub.find("the assumption 'N %% 8 == 0' does not hold"), std::string::npos);
  EXPECT_NE(stub.find("wave_f16_bits_(alpha)"), std::string::npos);

  std::string dir = ::testing::TempDir() + "/wave_host_api";
  ASSERT_EQ(run("mkdir -p " + dir), 0);
  std::ofstream(dir + "/scale.h") << header;
  std::ofstream(dir + "/scale.c") << stub;
  std::ofstream(dir + "/use.cpp") << "#include \"scale.h\"\nint main() { return scale_info() ? 0 : 1; }\n";
  std::string inc = std::string(" -I") + WAVE_SOURCE_DIR + "/runtime/include -I" + dir;
  EXPECT_EQ(run("cc -std=c99 -Wall -Wextra -Werror -pedantic -c" + inc + " " + dir +
                "/scale.c -o " + dir + "/scale.o"),
            0);
  EXPECT_EQ(run("c++ -std=c++17 -Wall -Wextra -Werror -c" + inc + " " + dir + "/use.cpp -o " +
                dir + "/use.o"),
            0);
}
