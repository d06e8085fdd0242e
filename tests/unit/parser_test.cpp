// Parser tests: the samples parse cleanly into the expected AST, every syntax error is reported
// in our words at the right place, and no input (random bytes, token soup, mangled samples)
// crashes, hangs or yields an unlocated diagnostic.
#include "frontend/parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

namespace wave {
namespace {

using namespace wave::ast;

// One parse, with everything it needs kept alive.
struct Parsed {
  std::unique_ptr<SourceFile> file;
  std::unique_ptr<DiagnosticEngine> diags;
  std::unique_ptr<Module> module;

  const std::vector<Diagnostic> &all() const { return diags->diagnostics(); }
  const Diagnostic &first() const { return all().at(0); }
  std::string text() const { return diags->render(false); }
};

Parsed parse(const std::string &text) {
  Parsed p;
  p.file = std::make_unique<SourceFile>("test.wave", text);
  p.diags = std::make_unique<DiagnosticEngine>(p.file.get());
  p.module = parseModule(*p.file, *p.diags);
  return p;
}

std::string readSample(const std::string &name) {
  std::ifstream in(std::string(WAVE_SOURCE_DIR) + "/samples/" + name + "/" + name + ".wave",
                   std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A kernel around `body`, with a constraints block, for statement-level tests.
std::string inKernel(const std::string &body) {
  return "kernel k(a: Memory[M, global, f16]) {\n  constraints { wave(M, 1); }\n" + body + "\n}\n";
}

const Expr &valueOf(const Parsed &p, size_t stmt = 0) {
  const auto &stmts = p.module->kernels.at(0).body.stmts;
  const Stmt *s = stmts.at(stmt).get();
  if (auto *a = dyn_cast<AssignStmt>(s))
    return *a->value;
  if (auto *e = dyn_cast<ExprStmt>(s))
    return *e->expr;
  throw std::runtime_error("statement has no single value");
}

// Parses `x = EXPR;` and returns the value expression.
struct ParsedExpr {
  Parsed p;
  const Expr &e() const { return valueOf(p); }
};
ParsedExpr parseExpr(const std::string &expr) {
  ParsedExpr out{parse(inKernel("  x = " + expr + ";"))};
  EXPECT_EQ(out.p.all().size(), 0u) << out.p.text();
  return out;
}

std::string loc(const SourceRange &r) {
  return std::to_string(r.begin.line) + ":" + std::to_string(r.begin.col);
}

// "line:col" of the first `needle` in `text` (plus `skip` columns), so that tests on the sample
// files do not depend on their exact layout.
std::string where(const std::string &text, const std::string &needle, size_t skip = 0) {
  size_t at = text.find(needle);
  if (at == std::string::npos)
    return "not found: " + needle;
  size_t lineStart = text.rfind('\n', at);
  lineStart = lineStart == std::string::npos ? 0 : lineStart + 1;
  size_t line = 1 + std::count(text.begin(), text.begin() + at, '\n');
  return std::to_string(line) + ":" + std::to_string(at - lineStart + 1 + skip);
}

// The single error `text` produces: id, message and line:col.
void expectError(const std::string &text, const char *id, const std::string &message,
                 const std::string &where) {
  Parsed p = parse(text);
  ASSERT_GE(p.all().size(), 1u) << "no error for:\n" << text;
  const Diagnostic &d = p.first();
  EXPECT_STREQ(diagInfo(d.id).id, id) << p.text();
  EXPECT_EQ(d.message, message) << p.text();
  EXPECT_EQ(loc(d.range), where) << p.text();
}

// ---- the samples ----------------------------------------------------------------------------

TEST(ParserSamples, GemmParsesCleanly) {
  std::string text = readSample("gemm");
  Parsed p = parse(text);
  ASSERT_TRUE(p.all().empty()) << p.text();
  const Module &m = *p.module;
  ASSERT_EQ(m.symbols.size(), 7u);
  EXPECT_EQ(m.symbols[0].name.name, "M");
  EXPECT_EQ(m.symbols[0].value, nullptr);
  EXPECT_EQ(m.symbols[3].name.name, "BLOCK_M");
  ASSERT_TRUE(isa<IntLit>(m.symbols[3].value.get()));
  EXPECT_EQ(dyn_cast<IntLit>(m.symbols[3].value.get())->value, 64);
  auto *space = dyn_cast<SpaceLit>(m.symbols[6].value.get());
  ASSERT_NE(space, nullptr);
  EXPECT_EQ(space->space, AddressSpace::Shared);

  ASSERT_EQ(m.kernels.size(), 1u);
  const KernelDecl &k = m.kernels[0];
  EXPECT_EQ(k.name.name, "gemm");
  EXPECT_EQ(loc(k.name.range), where(text, "kernel gemm", 7));
  ASSERT_EQ(k.params.size(), 3u);
  EXPECT_EQ(k.params[0].name.name, "a");
  EXPECT_EQ(k.params[0].type.kind, TypeKind::Memory);
  EXPECT_EQ(k.params[0].type.dims.size(), 2u);
  EXPECT_EQ(k.params[0].type.dtype, ScalarType::F16);
  EXPECT_TRUE(isa<NameRef>(k.params[0].type.space.get()));
  EXPECT_EQ(toSource(k.params[0].type), "Memory[M, K, ADDRESS_SPACE, f16]");
  EXPECT_EQ(k.params[2].type.dtype, ScalarType::F32);
  EXPECT_TRUE(isa<SpaceLit>(k.params[2].type.space.get()));

  ASSERT_EQ(k.constraints.size(), 7u);
  EXPECT_EQ(k.constraints[0]->callee.name, "workgroup");
  ASSERT_EQ(k.constraints[0]->args.size(), 3u);
  EXPECT_EQ(k.constraints[0]->args[2].name.name, "dim");
  EXPECT_EQ(k.constraints[5]->callee.name, "hardware");
  EXPECT_EQ(k.constraints[5]->args[1].name.name, "mma");
  EXPECT_EQ(toSource(*k.constraints[6]), "assume(K > BLOCK_K * 4)");
  EXPECT_EQ(loc(k.constraintsRange), where(text, "constraints {"));

  ASSERT_EQ(k.body.stmts.size(), 3u);
  auto *init = dyn_cast<AssignStmt>(k.body.stmts[0].get());
  ASSERT_NE(init, nullptr);
  auto *ctor = dyn_cast<RegisterCtor>(init->value.get());
  ASSERT_NE(ctor, nullptr);
  EXPECT_EQ(toSource(*ctor), "Register[M, N, f32](0.0)");
  auto *loop = dyn_cast<AssignStmt>(k.body.stmts[1].get());
  ASSERT_NE(loop, nullptr);
  auto *it = dyn_cast<IterateExpr>(loop->value.get());
  ASSERT_NE(it, nullptr);
  EXPECT_EQ(toSource(*it->dim), "K");
  ASSERT_EQ(it->carried.size(), 1u);
  EXPECT_EQ(it->carried[0].name.name, "acc");
  ASSERT_EQ(it->body.stmts.size(), 3u);
  EXPECT_TRUE(isa<YieldStmt>(it->body.stmts[2].get()));
  EXPECT_TRUE(isa<ExprStmt>(k.body.stmts[2].get()));
}

TEST(ParserSamples, CopyAndSoftmaxParseCleanly) {
  Parsed copy = parse(readSample("copy"));
  ASSERT_TRUE(copy.all().empty()) << copy.text();
  ASSERT_EQ(copy.module->kernels.size(), 1u);
  EXPECT_EQ(copy.module->kernels[0].name.name, "copy");
  EXPECT_EQ(copy.module->kernels[0].constraints.size(), 5u);
  auto *dict = dyn_cast<DictExpr>(copy.module->kernels[0].constraints[4]->args[0].value.get());
  ASSERT_NE(dict, nullptr);
  EXPECT_EQ(dict->entries.size(), 2u);

  Parsed softmax = parse(readSample("softmax"));
  ASSERT_TRUE(softmax.all().empty()) << softmax.text();
  const KernelDecl &k = softmax.module->kernels.at(0);
  EXPECT_EQ(k.name.name, "softmax");
  EXPECT_EQ(k.constraints.size(), 3u);
  ASSERT_EQ(k.body.stmts.size(), 4u);
  EXPECT_EQ(toSource(valueOf(softmax, 1)), "v - broadcast(max(v, dim = N), [M, N])");
}

TEST(ParserSamples, SpecMappingsAndStatements) {
  Parsed p = parse(R"(
symbol N, M, C, H, W, K, SZ_OUT, W_OUT, STRIDE, WF;
mapping transpose(i, j) {
  inputs  { N: i, M: j }          # memory side of a read
  outputs { N: i, M: j }
}
mapping im2col(i, j) {
  inputs  { N: i // SZ_OUT, C: j % C,
            H: (i % SZ_OUT) % W_OUT * STRIDE + (j // C) % WF,
            W: (i % SZ_OUT) // W_OUT * STRIDE + (j // C) // WF, }
  outputs { M: i, K: j }
}
kernel attention(q: Memory[M, K / 2, global, i8], alpha: f32, s: bf16) {
  constraints {
    tiling(K, 32);
    assume(K % 64 == 0);
  }
  m, s, acc = iterate K (m = m0, s = s0, acc = c0) { t = m; yield m, s, acc; }
  y = if n > 0 { yield x * 2.0; } else if n < 0 { yield x; } else { yield -x; }
  if y { write(y, q); }
  x += 1;
  x -= cast(x, f16);
  x *= self_index(M, i32);
  x /= apply_expr(x, v => v < K2);
  tt = read(t, mapping = transpose, elements_per_thread = 4);
  z = iterate K () { yield; }
  barrier(x, dim = v => v, );
}
)");
  ASSERT_TRUE(p.all().empty()) << p.text();
  ASSERT_EQ(p.module->mappings.size(), 2u);
  const MappingDecl &im2col = p.module->mappings[1];
  EXPECT_EQ(im2col.name.name, "im2col");
  ASSERT_EQ(im2col.iterators.size(), 2u);
  ASSERT_EQ(im2col.inputs.size(), 4u);
  EXPECT_EQ(im2col.outputs.size(), 2u);
  EXPECT_EQ(toSource(*im2col.inputs[2].value), "(i % SZ_OUT) % W_OUT * STRIDE + (j // C) % WF");
  EXPECT_EQ(loc(im2col.inputsRange), "8:3");
  ASSERT_EQ(p.module->order.size(), 13u);
  EXPECT_EQ(p.module->order[10].first, DeclKind::Mapping);

  const KernelDecl &k = p.module->kernels.at(0);
  ASSERT_EQ(k.params.size(), 3u);
  EXPECT_EQ(k.params[0].type.dtype, ScalarType::I8);
  EXPECT_EQ(toSource(*k.params[0].type.dims[1]), "K / 2");
  EXPECT_EQ(k.params[1].type.kind, TypeKind::Scalar);
  EXPECT_EQ(k.params[1].type.dtype, ScalarType::F32);
  EXPECT_EQ(k.params[2].type.dtype, ScalarType::BF16);

  const auto &stmts = k.body.stmts;
  ASSERT_EQ(stmts.size(), 10u);
  auto *multi = dyn_cast<AssignStmt>(stmts[0].get());
  ASSERT_NE(multi, nullptr);
  EXPECT_EQ(multi->targets.size(), 3u);
  EXPECT_EQ(multi->targets[2].name, "acc");
  EXPECT_EQ(dyn_cast<IterateExpr>(multi->value.get())->carried.size(), 3u);

  auto *ifAssign = dyn_cast<AssignStmt>(stmts[1].get());
  auto *ifExpr = dyn_cast<IfExpr>(ifAssign->value.get());
  ASSERT_NE(ifExpr, nullptr);
  ASSERT_TRUE(ifExpr->elseBlock.has_value());
  ASSERT_EQ(ifExpr->elseBlock->stmts.size(), 1u);
  auto *elseIf = dyn_cast<ExprStmt>(ifExpr->elseBlock->stmts[0].get());
  ASSERT_NE(elseIf, nullptr);
  EXPECT_TRUE(isa<IfExpr>(elseIf->expr.get()));

  auto *ifStmt = dyn_cast<ExprStmt>(stmts[2].get());
  ASSERT_NE(ifStmt, nullptr);
  EXPECT_FALSE(dyn_cast<IfExpr>(ifStmt->expr.get())->elseBlock.has_value());

  auto *plus = dyn_cast<CompoundAssignStmt>(stmts[3].get());
  ASSERT_NE(plus, nullptr);
  EXPECT_EQ(plus->op, BinaryOp::Add);
  EXPECT_EQ(plus->target.name, "x");
  EXPECT_EQ(loc(plus->opRange), "21:5");
  auto *minus = dyn_cast<CompoundAssignStmt>(stmts[4].get());
  auto *cast = dyn_cast<Call>(minus->value.get());
  ASSERT_NE(cast, nullptr);
  EXPECT_TRUE(isa<DTypeLit>(cast->args[1].value.get()));
  EXPECT_EQ(dyn_cast<CompoundAssignStmt>(stmts[5].get())->op, BinaryOp::Mul);
  auto *div = dyn_cast<CompoundAssignStmt>(stmts[6].get());
  EXPECT_EQ(div->op, BinaryOp::Div);
  auto *apply = dyn_cast<Call>(div->value.get());
  ASSERT_NE(apply, nullptr);
  auto *lambda = dyn_cast<Lambda>(apply->args[1].value.get());
  ASSERT_NE(lambda, nullptr);
  EXPECT_EQ(lambda->param.name, "v");
  EXPECT_EQ(toSource(*lambda), "v => v < K2");
  auto *read = dyn_cast<Call>(dyn_cast<AssignStmt>(stmts[7].get())->value.get());
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(read->args[1].name.name, "mapping");
  auto *empty = dyn_cast<IterateExpr>(dyn_cast<AssignStmt>(stmts[8].get())->value.get());
  ASSERT_NE(empty, nullptr);
  EXPECT_TRUE(empty->carried.empty());
  auto *trailing = dyn_cast<Call>(dyn_cast<ExprStmt>(stmts[9].get())->expr.get());
  ASSERT_EQ(trailing->args.size(), 2u);
  EXPECT_TRUE(isa<Lambda>(trailing->args[1].value.get()));
  EXPECT_TRUE(dyn_cast<YieldStmt>(empty->body.stmts.at(0).get())->values.empty());
}

TEST(ParserSamples, SymbolValues) {
  Parsed p = parse("symbol B = 64, C = B * 2, S = global, MMA = F32_16x16x16_F16, X = 0.125;\n"
                   "symbol Z = ceildiv(B, 3);\n");
  ASSERT_TRUE(p.all().empty()) << p.text();
  ASSERT_EQ(p.module->symbols.size(), 6u);
  EXPECT_EQ(toSource(*p.module->symbols[1].value), "B * 2");
  EXPECT_EQ(loc(p.module->symbols[1].range), "1:16");
  EXPECT_TRUE(isa<SpaceLit>(p.module->symbols[2].value.get()));
  EXPECT_EQ(dyn_cast<NameRef>(p.module->symbols[3].value.get())->name, "F32_16x16x16_F16");
  EXPECT_DOUBLE_EQ(dyn_cast<FloatLit>(p.module->symbols[4].value.get())->value, 0.125);
  EXPECT_TRUE(isa<Call>(p.module->symbols[5].value.get()));
}

// ---- expressions ----------------------------------------------------------------------------

TEST(ParserExpressions, Precedence) {
  {
    ParsedExpr x = parseExpr("a + b * c");
    auto *add = dyn_cast<Binary>(&x.e());
    ASSERT_NE(add, nullptr);
    EXPECT_EQ(add->op, BinaryOp::Add);
    EXPECT_TRUE(isa<NameRef>(add->lhs.get()));
    auto *mul = dyn_cast<Binary>(add->rhs.get());
    ASSERT_NE(mul, nullptr);
    EXPECT_EQ(mul->op, BinaryOp::Mul);
    EXPECT_EQ(loc(add->opRange), "3:9");
    EXPECT_EQ(add->opRange.end.col, 10u);
    EXPECT_EQ(loc(add->range), "3:7");
    EXPECT_EQ(add->range.end.col, 16u);
  }
  {
    ParsedExpr x = parseExpr("a - b - c");
    auto *outer = dyn_cast<Binary>(&x.e());
    ASSERT_NE(outer, nullptr);
    EXPECT_EQ(outer->op, BinaryOp::Sub);
    EXPECT_TRUE(isa<NameRef>(outer->rhs.get()));
    auto *inner = dyn_cast<Binary>(outer->lhs.get());
    ASSERT_NE(inner, nullptr);
    EXPECT_EQ(toSource(*inner), "a - b");
  }
  {
    ParsedExpr x = parseExpr("-x * y");
    auto *mul = dyn_cast<Binary>(&x.e());
    ASSERT_NE(mul, nullptr);
    EXPECT_EQ(mul->op, BinaryOp::Mul);
    auto *neg = dyn_cast<Unary>(mul->lhs.get());
    ASSERT_NE(neg, nullptr);
    EXPECT_EQ(neg->op, UnaryOp::Neg);
  }
  {
    // | is loosest, then ^, then &, then comparisons.
    ParsedExpr x = parseExpr("a | b ^ c & d < e");
    auto *orOp = dyn_cast<Binary>(&x.e());
    ASSERT_NE(orOp, nullptr);
    EXPECT_EQ(orOp->op, BinaryOp::Or);
    auto *xorOp = dyn_cast<Binary>(orOp->rhs.get());
    ASSERT_NE(xorOp, nullptr);
    EXPECT_EQ(xorOp->op, BinaryOp::Xor);
    auto *andOp = dyn_cast<Binary>(xorOp->rhs.get());
    ASSERT_NE(andOp, nullptr);
    EXPECT_EQ(andOp->op, BinaryOp::And);
    EXPECT_EQ(dyn_cast<Binary>(andOp->rhs.get())->op, BinaryOp::Lt);
  }
  {
    ParsedExpr x = parseExpr("a // b % c + ~d");
    EXPECT_EQ(toSource(x.e()), "a // b % c + ~d");
    auto *add = dyn_cast<Binary>(&x.e());
    EXPECT_EQ(dyn_cast<Binary>(add->lhs.get())->op, BinaryOp::Mod);
    EXPECT_EQ(dyn_cast<Unary>(add->rhs.get())->op, UnaryOp::BitNot);
  }
  {
    ParsedExpr x = parseExpr("(a + b) * c");
    auto *mul = dyn_cast<Binary>(&x.e());
    ASSERT_NE(mul, nullptr);
    EXPECT_TRUE(mul->lhs->parenthesized);
    EXPECT_EQ(loc(mul->lhs->range), "3:7");
    EXPECT_EQ(toSource(x.e()), "(a + b) * c");
  }
  {
    ParsedExpr x = parseExpr("(a < b) == (c >= d)");
    EXPECT_EQ(toSource(x.e()), "(a < b) == (c >= d)");
  }
}

TEST(ParserExpressions, Literals) {
  auto intOf = [](const std::string &s) {
    ParsedExpr x = parseExpr(s);
    auto *i = dyn_cast<IntLit>(&x.e());
    return i ? i->value : -1;
  };
  auto floatOf = [](const std::string &s) {
    ParsedExpr x = parseExpr(s);
    auto *f = dyn_cast<FloatLit>(&x.e());
    return f ? f->value : -1.0;
  };
  EXPECT_EQ(intOf("42"), 42);
  EXPECT_EQ(intOf("0x2A"), 42);
  EXPECT_EQ(intOf("0XfF"), 255);
  EXPECT_EQ(intOf("4_096"), 4096);
  EXPECT_EQ(intOf("9223372036854775807"), INT64_MAX);
  EXPECT_DOUBLE_EQ(floatOf("1.0"), 1.0);
  EXPECT_DOUBLE_EQ(floatOf(".5"), 0.5);
  EXPECT_DOUBLE_EQ(floatOf("1e-6"), 1e-6);
  EXPECT_DOUBLE_EQ(floatOf("2.5E+3"), 2500.0);
  EXPECT_DOUBLE_EQ(floatOf("1."), 1.0);
  EXPECT_TRUE(std::isinf(floatOf("inf")));
  EXPECT_TRUE(std::isnan(floatOf("nan")));
  {
    ParsedExpr x = parseExpr("1e-6");
    EXPECT_EQ(dyn_cast<FloatLit>(&x.e())->spelling, "1e-6");
  }
  {
    ParsedExpr x = parseExpr("-inf");
    auto *neg = dyn_cast<Unary>(&x.e());
    ASSERT_NE(neg, nullptr);
    EXPECT_TRUE(isa<FloatLit>(neg->operand.get()));
  }
  {
    ParsedExpr x = parseExpr("[true, false, global, shared, f16, bool, index, f8e4m3fnuz]");
    auto *list = dyn_cast<ListExpr>(&x.e());
    ASSERT_NE(list, nullptr);
    ASSERT_EQ(list->elements.size(), 8u);
    EXPECT_TRUE(dyn_cast<BoolLit>(list->elements[0].get())->value);
    EXPECT_FALSE(dyn_cast<BoolLit>(list->elements[1].get())->value);
    EXPECT_EQ(dyn_cast<SpaceLit>(list->elements[3].get())->space, AddressSpace::Shared);
    EXPECT_EQ(dyn_cast<DTypeLit>(list->elements[5].get())->type, ScalarType::I1);
    EXPECT_EQ(dyn_cast<DTypeLit>(list->elements[7].get())->type, ScalarType::F8E4M3FNUZ);
  }
}

TEST(ParserExpressions, CallsListsDictsAndRanges) {
  ParsedExpr x = parseExpr("max(v, dim = N, init = {M: 1, N: BLOCK_N})");
  auto *call = dyn_cast<Call>(&x.e());
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->callee.name, "max");
  EXPECT_EQ(loc(call->callee.range), "3:7");
  EXPECT_EQ(call->callee.range.end.col, 10u);
  ASSERT_EQ(call->args.size(), 3u);
  EXPECT_FALSE(call->args[0].isNamed());
  EXPECT_EQ(call->args[1].name.name, "dim");
  EXPECT_EQ(loc(call->args[1].name.range), "3:14");
  EXPECT_TRUE(isa<DictExpr>(call->args[2].value.get()));
  EXPECT_EQ(toSource(x.e()), "max(v, dim = N, init = {M: 1, N: BLOCK_N})");
  EXPECT_EQ(call->range.end.col, 49u); // one past the ')'
  EXPECT_EQ(x.p.file->lineText(3)[call->range.end.col - 2], ')');
}

TEST(ParserExpressions, DumpPrintsOneNodePerLine) {
  std::string text = readSample("gemm");
  Parsed p = parse(text);
  std::string d = dump(*p.module);
  auto has = [&](const std::string &line) {
    EXPECT_NE(d.find(line + "\n"), std::string::npos) << line << "\n" << d;
  };
  has("Module");
  has("  Symbol BLOCK_M @" + where(text, "BLOCK_M"));
  has("    Int 64 @" + where(text, "= 64", 2));
  has("  Kernel gemm @" + where(text, "gemm("));
  has("    Param a: Memory[M, K, ADDRESS_SPACE, f16] @" + where(text, "a: Memory"));
  has("    Constraints @" + where(text, "constraints"));
  has("      Call workgroup @" + where(text, "workgroup"));
  has("        Arg dim @" + where(text, "dim = 0"));
  has("          Int 0 @" + where(text, "dim = 0", 6));
  has("        Binary / @" + where(text, "BLOCK_M / 2"));
  has("      Assign c_reg @" + where(text, "c_reg ="));
  has("        RegisterCtor Register[M, N, f32] @" + where(text, "Register"));
  has("        Iterate @" + where(text, "iterate"));
  has("          Carried acc @" + where(text, "acc = c_reg"));
  has("            Yield @" + where(text, "yield"));
  has("      ExprStmt @" + where(text, "write"));
}

// ---- syntax errors --------------------------------------------------------------------------

TEST(ParserErrors, MissingSemicolonPointsPastThePreviousToken) {
  expectError(inKernel("  x = read(a)\n  y = x;"), "expected-after",
              "expected ';' after statement", "3:14");
  expectError("symbol M, N\nsymbol K;", "expected-after",
              "expected ';' after symbol declaration", "1:12");
  expectError("kernel k() {\n  constraints {\n    wave(M, 1)\n    wave(N, 2);\n  }\n}",
              "expected-after", "expected ';' after constraint", "3:15");
  // The statement itself is kept.
  Parsed p = parse(inKernel("  x = read(a)\n  y = x;"));
  EXPECT_EQ(p.module->kernels.at(0).body.stmts.size(), 2u);
}

TEST(ParserErrors, UnbalancedBraces) {
  Parsed p = parse("kernel k() {\n  constraints { wave(M, 1); }\n  x = 1;\n");
  ASSERT_EQ(p.all().size(), 1u) << p.text();
  EXPECT_STREQ(diagInfo(p.first().id).id, "unexpected-eof");
  EXPECT_EQ(p.first().message, "unexpected end of file; expected '}'");
  ASSERT_EQ(p.first().notes.size(), 1u);
  EXPECT_EQ(p.first().notes[0].message, "'{' opened here");
  EXPECT_EQ(loc(p.first().notes[0].range), "1:12");

  expectError(inKernel("  x = 1;\n}"), "unmatched-bracket", "unmatched '}'", "5:1");
}

TEST(ParserErrors, MissingAndStrayParentheses) {
  Parsed p = parse(inKernel("  z = foo(x, y;"));
  EXPECT_EQ(p.first().message, "expected ')' before ';'") << p.text();
  EXPECT_EQ(loc(p.first().range), "3:15");
  ASSERT_EQ(p.first().notes.size(), 1u);
  EXPECT_EQ(loc(p.first().notes[0].range), "3:10");

  expectError(inKernel("  write(x, a));"), "unmatched-bracket", "unmatched ')'", "3:14");
  expectError("symbol M = 4 5;", "unexpected-token", "unexpected number '5'; expected ';'",
              "1:14");
  expectError("foo bar\nsymbol M;", "unexpected-token",
              "unexpected identifier 'foo'; expected 'symbol', 'mapping' or 'kernel'", "1:1");
  expectError(inKernel("  x = f(1, 2\n  y = 3;"), "expected-after",
              "expected ')' after number '2'", "3:13");
}

TEST(ParserErrors, ExpectedExpression) {
  expectError(inKernel("  q = 1 + ;"), "expected-expression",
              "expected an expression before ';'", "3:11");
  expectError("symbol N = ;", "expected-expression", "expected an expression before ';'",
              "1:12");
  expectError(inKernel("  f(, 1);"), "expected-expression", "expected an expression before ','",
              "3:5");
}

TEST(ParserErrors, ChainedComparison) {
  expectError(inKernel("  v = a < b < c;"), "chained-comparison",
              "comparisons do not chain; parenthesize one of them", "3:13");
  Parsed ok = parse(inKernel("  v = (a < b) < c;"));
  EXPECT_TRUE(ok.all().empty()) << ok.text();
}

TEST(ParserErrors, ReservedWords) {
  expectError("symbol if;", "reserved-word",
              "'if' is a reserved word and cannot be used as a name", "1:8");
  expectError("kernel yield() { constraints {} }", "reserved-word",
              "'yield' is a reserved word and cannot be used as a name", "1:8");
  expectError("kernel k(f16: f32) { constraints {} }", "reserved-word",
              "'f16' is a reserved word and cannot be used as a name", "1:10");
  expectError(inKernel("  if = 3;"), "reserved-word",
              "'if' is a reserved word and cannot be used as a name", "3:3");
  expectError("mapping m(i, global) { inputs { M: i } outputs { M: i } }", "reserved-word",
              "'global' is a reserved word and cannot be used as a name", "1:14");
}

TEST(ParserErrors, InvalidUtf8) {
  Parsed p = parse("symbol M;\nsymbol N\xff\xfe;\n");
  ASSERT_GE(p.all().size(), 1u);
  EXPECT_STREQ(diagInfo(p.first().id).id, "invalid-utf8");
  EXPECT_EQ(p.first().message, "source is not valid UTF-8 (byte 0xFF)");
  EXPECT_EQ(loc(p.first().range), "2:9");
  EXPECT_EQ(p.all().size(), 1u) << p.text();
  // Valid UTF-8 in comments is fine.
  Parsed ok = parse("# C = A \xc2\xb7 B\xe1\xb5\x80\nsymbol M;");
  EXPECT_TRUE(ok.all().empty()) << ok.text();
  // Overlong encodings and surrogates are invalid.
  EXPECT_STREQ(diagInfo(parse("symbol \xc0\xaf;").first().id).id, "invalid-utf8");
  EXPECT_STREQ(diagInfo(parse("symbol \xed\xa0\x80;").first().id).id, "invalid-utf8");
}

TEST(ParserErrors, InvalidCharacters) {
  expectError(inKernel("  r = x @ y;"), "invalid-character", "invalid character '@' in source",
              "3:9");
  expectError("symbol $M;", "invalid-character", "invalid character '$' in source", "1:8");
  expectError(std::string("symbol M\0;", 10), "invalid-character",
              "invalid character 'U+0000' in source", "1:9");
  // A run of invalid characters is one error; the columns count bytes.
  Parsed p = parse("symbol \xc3\x97\xc3\x97 M; symbol N;");
  ASSERT_EQ(p.all().size(), 1u) << p.text();
  EXPECT_EQ(p.first().message, "invalid character '\xc3\x97' in source");
  EXPECT_EQ(loc(p.first().range), "1:8");
  EXPECT_EQ(p.first().range.end.col, 12u);
  ASSERT_EQ(p.module->symbols.size(), 1u); // the statement next to the junk is dropped
  EXPECT_EQ(p.module->symbols[0].name.name, "N");
  EXPECT_EQ(loc(p.module->symbols[0].name.range), "1:23");
}

TEST(ParserErrors, NestingTooDeep) {
  std::string ok = "symbol X = " + std::string(256, '(') + "1" + std::string(256, ')') + ";";
  Parsed fine = parse(ok);
  EXPECT_TRUE(fine.all().empty()) << fine.text();
  std::string deep = "symbol X = " + std::string(257, '(') + "1" + std::string(257, ')') + ";";
  expectError(deep, "nesting-too-deep", "brackets nested more than 256 levels deep", "1:268");
  EXPECT_TRUE(parse(deep).diags->shouldStop());
  // Long chains without brackets are bounded too.
  std::string minus;
  for (int i = 0; i < 100000; ++i)
    minus += "- ";
  Parsed chain = parse("symbol X = " + minus + "1;");
  ASSERT_GE(chain.all().size(), 1u);
  EXPECT_STREQ(diagInfo(chain.first().id).id, "expression-too-deep");
  EXPECT_EQ(loc(chain.first().range), "1:2060"); // the 1025th prefix
  // Binary chains count one level per operator (they fold to the left).
  auto sum = [](int terms) {
    std::string s = "symbol X = 1";
    for (int i = 1; i < terms; ++i)
      s += "+1";
    return s + ";";
  };
  Parsed long1024 = parse(sum(1025)); // 1024 operators
  EXPECT_TRUE(long1024.all().empty()) << long1024.text().substr(0, 500);
  expectError(sum(20000), "expression-too-deep",
              "expression nested more than 1024 levels deep (each operator, prefix, call and "
              "bracket is a level)",
              "1:2061"); // the 1025th '+'
  // An `else if` nests one level: a chain of 1000 is fine, 2000 is too deep.
  std::string elses = "x = ";
  for (int i = 0; i < 1000; ++i)
    elses += "if a { yield 1; } else ";
  Parsed elseIf = parse(inKernel(elses + "{ yield 2; }"));
  EXPECT_TRUE(elseIf.all().empty()) << elseIf.text().substr(0, 500);
  for (int i = 0; i < 1000; ++i)
    elses += "if a { yield 1; } else ";
  Parsed elseIf2 = parse(inKernel(elses + "{ yield 2; }"));
  ASSERT_GE(elseIf2.all().size(), 1u);
  EXPECT_STREQ(diagInfo(elseIf2.first().id).id, "expression-too-deep");
}

TEST(ParserErrors, Numbers) {
  expectError("symbol X = 9223372036854775808;", "integer-too-large",
              "integer literal '9223372036854775808' does not fit in 63 bits", "1:12");
  expectError("symbol X = 0x8000_0000_0000_0000;", "integer-too-large",
              "integer literal '0x8000_0000_0000_0000' does not fit in 63 bits", "1:12");
  expectError("symbol X = 12abc;", "invalid-number", "invalid numeric literal '12abc'", "1:12");
  expectError("symbol X = 1.5.3;", "invalid-number", "invalid numeric literal '1.5.3'", "1:12");
  expectError("symbol X = 1e999;", "invalid-number", "invalid numeric literal '1e999'", "1:12");
  Parsed p = parse("symbol X = 12abc, Y = 2;");
  EXPECT_EQ(p.all().size(), 1u) << p.text();
  ASSERT_EQ(p.module->symbols.size(), 1u);
  EXPECT_EQ(p.module->symbols[0].name.name, "Y");
}

TEST(ParserErrors, ConstraintsBlockPlacement) {
  expectError("kernel k(a: f32) {\n  x = 1;\n}", "missing-constraints",
              "kernel 'k' has no constraints block", "1:8");
  Parsed late = parse("kernel k() {\n  x = 1;\n  constraints { wave(M, 1); }\n  y = 2;\n}");
  ASSERT_EQ(late.all().size(), 1u) << late.text();
  EXPECT_STREQ(diagInfo(late.first().id).id, "constraints-not-first");
  EXPECT_EQ(late.first().message, "the constraints block must come first in kernel 'k'");
  EXPECT_EQ(loc(late.first().range), "3:3");
  const KernelDecl &k = late.module->kernels.at(0);
  EXPECT_EQ(k.body.stmts.size(), 2u); // statements before the block still count
  EXPECT_EQ(k.constraints.size(), 1u);
  expectError("kernel k() {\n  constraints {}\n  constraints {}\n}", "duplicate-constraints",
              "kernel 'k' has more than one constraints block", "3:3");
}

TEST(ParserErrors, TypesTargetsLambdasAndMappings) {
  expectError("kernel k(a: Memory[f16]) { constraints {} }", "bad-memory-type",
              "Memory[...] takes dims, an address space and an element type: the address "
              "space (global, shared or a symbol) is missing",
              "1:13");
  expectError("kernel k(a: Memory[M, N + 1, f16]) { constraints {} }", "bad-memory-type",
              "Memory[...] takes dims, an address space and an element type: 'N + 1' is not "
              "an address space; use global, shared or a symbol",
              "1:23");
  expectError("kernel k(a: Memory[M, global]) { constraints {} }", "bad-memory-type",
              "Memory[...] takes dims, an address space and an element type: the last entry "
              "must be an element type such as f32, not 'global'",
              "1:23");
  expectError(inKernel("  r = Register[M, N](0.0);"), "bad-register-type",
              "Register[...] takes dims and an element type: the last entry must be an element "
              "type such as f32, not 'N'",
              "3:19");
  expectError(inKernel("  f(x) = 1;"), "bad-assign-target", "only a name can be assigned to",
              "3:3");
  expectError(inKernel("  t = v => v + 1;"), "misplaced-lambda",
              "'=>' is only allowed in the function argument of apply_expr", "3:9");
  expectError(inKernel("  t = f(x + (v => v));"), "misplaced-lambda",
              "'=>' is only allowed in the function argument of apply_expr", "3:16");
  expectError(inKernel("  t = f(a,, b);"), "expected-token", "expected an expression before ','",
              "3:11");
  expectError("kernel k(a: f32,, b: f32) { constraints {} }", "expected-token",
              "expected a parameter before ','", "1:17");
  expectError("mapping m(i) { inputs { M: i } outputz { M: i } }", "mapping-bad-section",
              "unknown mapping section 'outputz'; expected 'inputs' or 'outputs'", "1:32");
  expectError("mapping m(i) { inputs { M: i } }", "mapping-missing-section",
              "mapping 'm' has no 'outputs' section", "1:9");
  expectError("mapping m(i) { inputs { M: i } outputs { M: i } inputs {} }",
              "mapping-duplicate-section", "mapping 'm' has two 'inputs' sections", "1:49");
}

TEST(ParserErrors, EveryErrorIsLocatedAndWorded) {
  const char *cases[] = {
      "kernel",
      "kernel k(",
      "kernel k(a: Memory[M, global, f16]",
      "kernel k() { constraints { wave(M, 1",
      "symbol",
      "mapping m(i) { inputs { M: ",
      "kernel k() { constraints {} x = iterate K (a = 1 { yield a; } }",
      "kernel k() { constraints {} x = [1, 2; }",
      "kernel k() { constraints {} ) }",
      "kernel k() { constraints {} else { } }",
      "symbol M = shared shared;",
      "kernel k(a: 3) { }",
  };
  for (const char *c : cases) {
    Parsed p = parse(c);
    ASSERT_GE(p.all().size(), 1u) << c;
    for (const Diagnostic &d : p.all()) {
      EXPECT_TRUE(d.range.valid()) << c << "\n" << p.text();
      EXPECT_EQ(d.message.find("mismatched"), std::string::npos) << p.text();
      EXPECT_EQ(d.message.find("viable"), std::string::npos) << p.text();
      EXPECT_EQ(d.message.find("<missing"), std::string::npos) << p.text();
      EXPECT_EQ(d.message.find("extraneous"), std::string::npos) << p.text();
    }
  }
}

TEST(ParserErrors, SeveralErrorsInOneRun) {
  Parsed p = parse("symbol M, N\n"
                   "kernel k(a: Memory[M, N, global, f16]) {\n"
                   "  constraints {\n"
                   "    workgroup(M, 64, dim = 0)\n"
                   "  }\n"
                   "  x = read(a)\n"
                   "  v = a < b < c;\n"
                   "  q = 1 + ;\n"
                   "  r = x @ y;\n"
                   "}\n");
  std::vector<std::string> got;
  for (const Diagnostic &d : p.all())
    got.push_back(loc(d.range) + " " + diagInfo(d.id).id);
  std::vector<std::string> want = {"1:12 expected-after",     "4:30 expected-after",
                                   "6:14 expected-after",     "7:13 chained-comparison",
                                   "8:11 expected-expression", "9:9 invalid-character"};
  EXPECT_EQ(got, want) << p.text();
  // What parsed cleanly is there.
  ASSERT_EQ(p.module->kernels.size(), 1u);
  EXPECT_EQ(p.module->kernels[0].constraints.size(), 1u);
  EXPECT_EQ(p.module->kernels[0].body.stmts.size(), 1u);
}

TEST(ParserErrors, StopsAtTheErrorLimit) {
  std::string text;
  for (int i = 0; i < 50; ++i)
    text += "symbol " + std::to_string(i) + ";\n";
  Parsed p = parse(text);
  EXPECT_TRUE(p.diags->shouldStop());
  EXPECT_EQ(p.diags->errorCount(), 20u); // then "too many errors" and nothing more
  EXPECT_STREQ(diagInfo(p.all().back().id).id, "too-many-errors");
}

// ---- robustness -----------------------------------------------------------------------------

void expectLocated(const Parsed &p, const std::string &input) {
  uint32_t lines = p.file->lineCount();
  auto check = [&](const Diagnostic &d) {
    if (d.id == DiagId::TooManyErrors)
      return;
    ASSERT_TRUE(d.range.valid()) << d.message << "\ninput: " << input;
    EXPECT_LE(d.range.begin.line, lines) << d.message;
    EXPECT_GE(d.range.begin.col, 1u) << d.message;
    EXPECT_LE(d.range.begin.col, p.file->lineText(d.range.begin.line).size() + 2) << d.message;
  };
  for (const Diagnostic &d : p.all()) {
    check(d);
    for (const Diagnostic &n : d.notes)
      check(n);
  }
}

TEST(ParserRobustness, RandomBytes) {
  std::mt19937 rng(20261122);
  for (int i = 0; i < 2000; ++i) {
    std::string text(rng() % 300, '\0');
    for (char &c : text)
      c = static_cast<char>(rng() % 256);
    Parsed p = parse(text);
    expectLocated(p, "<random bytes>");
  }
}

TEST(ParserRobustness, RandomTokenSoup) {
  const char *vocabulary[] = {
      "symbol", "mapping", "kernel", "constraints", "iterate", "if", "else", "yield", "global",
      "shared", "true", "false", "inf", "nan", "Memory", "Register", "f16", "i32", "bool", "M",
      "N", "x", "read", "write", "dim", "inputs", "outputs", "42", "0x1F", "4_096", "1.5",
      ".5", "1e-6", "12abc", "+", "-", "*", "/", "//", "%", "==", "!=", "<", "<=", ">", ">=",
      "&", "|", "^", "~", "=", "+=", "-=", "*=", "/=", "=>", "(", ")", "[", "]", "{", "}", ",",
      ":", ";", "\n", "#c\n", "@", "\xff", "\t"};
  const size_t n = sizeof(vocabulary) / sizeof(vocabulary[0]);
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string text;
    size_t len = rng() % 120;
    for (size_t j = 0; j < len; ++j)
      text += std::string(vocabulary[rng() % n]) + (rng() % 3 ? " " : "");
    Parsed p = parse(text);
    expectLocated(p, text);
  }
}

TEST(ParserRobustness, MangledSamples) {
  std::string samples[] = {readSample("gemm"), readSample("copy"), readSample("softmax")};
  std::mt19937 rng(1234);
  for (int i = 0; i < 600; ++i) {
    std::string text = samples[i % 3];
    int edits = 1 + rng() % 4;
    for (int e = 0; e < edits && !text.empty(); ++e) {
      size_t at = rng() % text.size();
      switch (rng() % 4) {
      case 0:
        text.erase(at, 1 + rng() % 8);
        break;
      case 1:
        text.insert(at, text.substr(rng() % text.size(), 1 + rng() % 8));
        break;
      case 2:
        text[at] = static_cast<char>(rng() % 256);
        break;
      default:
        std::swap(text[at], text[rng() % text.size()]);
        break;
      }
    }
    Parsed p = parse(text);
    expectLocated(p, text);
  }
}

TEST(ParserRobustness, ParsesGemmQuickly) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a timing bound means nothing in a sanitizer build (scripts/sanitize.sh)";
#endif
  std::string gemm = readSample("gemm");
  parse(gemm); // warm up
  auto start = std::chrono::steady_clock::now();
  const int runs = 50;
  for (int i = 0; i < runs; ++i)
    parse(gemm);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                  .count() / runs;
  EXPECT_LT(ms, 5.0);
}

} // namespace
} // namespace wave
