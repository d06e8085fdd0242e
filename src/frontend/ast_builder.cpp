// Parse tree -> AST. See ast_builder.h for what it guarantees.
#include "frontend/ast_builder.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>

namespace wave::parse {

using antlr4::ParserRuleContext;
using antlr4::Token;
using antlr4::tree::ParseTree;
using antlr4::tree::TerminalNode;
using P = wave_antlr::WaveParser;

namespace {

// "4_096" -> 4096, "0x2A" -> 42; nullopt when the value needs more than 63 bits.
std::optional<int64_t> parseInt(const std::string &text) {
  bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  uint64_t base = hex ? 16 : 10, value = 0;
  const uint64_t max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  for (size_t i = hex ? 2 : 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '_')
      continue;
    uint64_t digit = c >= '0' && c <= '9'   ? static_cast<uint64_t>(c - '0')
                     : c >= 'a' && c <= 'f' ? static_cast<uint64_t>(c - 'a' + 10)
                                            : static_cast<uint64_t>(c - 'A' + 10);
    if (value > (max - digit) / base)
      return std::nullopt;
    value = value * base + digit;
  }
  return static_cast<int64_t>(value);
}

// "1e-6", "1_000.5", ".5"; nullopt when the value overflows a double.
std::optional<double> parseFloat(const std::string &text) {
  std::string clean;
  for (char c : text)
    if (c != '_')
      clean += c;
  double value = 0;
  auto [end, ec] = std::from_chars(clean.data(), clean.data() + clean.size(), value);
  if (ec == std::errc::result_out_of_range) {
    // Too small rounds to zero; too large is an error.
    size_t e = clean.find_first_of("eE");
    if (e != std::string::npos && e + 1 < clean.size() && clean[e + 1] == '-')
      return 0.0;
    return std::nullopt;
  }
  if (ec != std::errc() || end != clean.data() + clean.size())
    return std::nullopt;
  return value;
}

std::optional<ast::BinaryOp> binaryOpOf(size_t tokenType) {
  switch (tokenType) {
  case P::PLUS:
    return ast::BinaryOp::Add;
  case P::MINUS:
    return ast::BinaryOp::Sub;
  case P::STAR:
    return ast::BinaryOp::Mul;
  case P::SLASH:
    return ast::BinaryOp::Div;
  case P::FLOOR_DIV:
    return ast::BinaryOp::FloorDiv;
  case P::PERCENT:
    return ast::BinaryOp::Mod;
  case P::EQ:
    return ast::BinaryOp::Eq;
  case P::NE:
    return ast::BinaryOp::Ne;
  case P::LT:
    return ast::BinaryOp::Lt;
  case P::LE:
    return ast::BinaryOp::Le;
  case P::GT:
    return ast::BinaryOp::Gt;
  case P::GE:
    return ast::BinaryOp::Ge;
  case P::AMP:
    return ast::BinaryOp::And;
  case P::CARET:
    return ast::BinaryOp::Xor;
  case P::PIPE:
    return ast::BinaryOp::Or;
  default:
    return std::nullopt;
  }
}

class Builder {
public:
  explicit Builder(ParseState &state) : st_(state) {}

  void module(P::ModuleContext *ctx, ast::Module &out);

private:
  // ---- the tree -------------------------------------------------------------------------
  static bool isErrorNode(ParseTree *t) {
    return dynamic_cast<antlr4::tree::ErrorNode *>(t) != nullptr;
  }
  // A context that failed or holds tokens that error recovery skipped or conjured up. A
  // conjured `;` does not count: the statement before it is complete.
  static bool broken(ParserRuleContext *ctx) {
    if (!ctx || ctx->exception)
      return true;
    for (ParseTree *child : ctx->children) {
      if (!child)
        return true;
      if (!isErrorNode(child))
        continue;
      const Token *t = static_cast<TerminalNode *>(child)->getSymbol();
      if (!t || ParseState::isReal(t) || t->getType() != P::SEMI)
        return true;
    }
    return false;
  }
  // Near an invalid character the parser saw a different program than the user wrote.
  bool garbled(ParserRuleContext *ctx) const {
    return st_.invalidCharNear(ctx->getStart(), ctx->getStop());
  }
  // The token under `node` when it was really read; null for missing or conjured tokens.
  static const Token *tok(TerminalNode *node) {
    if (!node || isErrorNode(node))
      return nullptr;
    const Token *t = node->getSymbol();
    return ParseState::isReal(t) ? t : nullptr;
  }
  SourceRange range(ParserRuleContext *ctx) const {
    return st_.rangeOf(ctx->getStart(), ctx->getStop());
  }
  ast::Ident ident(const Token *t) const { return {st_.textOf(t), st_.rangeOf(t)}; }

  // ---- declarations ---------------------------------------------------------------------
  std::optional<ast::Ident> declName(P::DeclNameContext *ctx);
  void symbolDecl(P::SymbolDeclContext *ctx, ast::Module &out);
  std::optional<ast::MappingDecl> mappingDecl(P::MappingDeclContext *ctx);
  bool mappingEntries(P::MappingSectionContext *ctx, std::vector<ast::MappingEntry> &out);
  std::optional<ast::KernelDecl> kernelDecl(P::KernelDeclContext *ctx);
  void kernelBody(P::KernelBodyContext *ctx, ast::KernelDecl &k);
  std::unique_ptr<ast::Call> constraint(P::ConstraintContext *ctx);
  std::optional<ast::TypeExpr> typeExpr(P::TypeExprContext *ctx);
  std::optional<ast::TypeExpr> shapedType(ast::TypeKind kind, SourceRange range,
                                          P::ExprListContext *list);

  // ---- statements -----------------------------------------------------------------------
  bool block(P::BlockContext *ctx, ast::Block &out);
  ast::StmtPtr statement(P::StatementContext *ctx);
  void checkSemicolon(P::StatementContext *ctx, TerminalNode *semi, P::ValueContext *last);

  // ---- expressions ----------------------------------------------------------------------
  ast::ExprPtr value(P::ValueContext *ctx);
  ast::ExprPtr expr(ParserRuleContext *ctx);
  ast::ExprPtr chain(ParserRuleContext *ctx, bool comparison);
  ast::ExprPtr unary(P::UnaryExprContext *ctx);
  ast::ExprPtr primary(P::PrimaryContext *ctx);
  ast::ExprPtr literal(P::PrimaryContext *ctx);
  ast::ExprPtr intLiteral(const Token *t);
  ast::ExprPtr iterDimAtom(P::IterDimAtomContext *ctx);
  ast::ExprPtr ifExpr(P::IfExprContext *ctx);
  ast::ExprPtr iterateExpr(P::IterateExprContext *ctx);
  bool args(P::ArgListContext *ctx, std::vector<ast::Arg> &out);
  ast::ExprPtr argValue(P::ArgValueContext *ctx);
  bool slotsFilled(ParserRuleContext *ctx, const char *what);
  bool exprList(P::ExprListContext *ctx, std::vector<ast::ExprPtr> &out);

  // Sets e's depth from its children's and reports `expression-too-deep` at `at` (returning
  // null) when it exceeds the limit, so that no deeper tree reaches sema.
  ast::ExprPtr bounded(ast::ExprPtr e, SourceRange at);

  ParseState &st_;
  uint32_t lastMissingSemicolonLine_ = 0;
};

// The depth of the deepest expression among a block's statements (not recursive: each holds
// its own depth).
uint32_t blockDepth(const ast::Block &b) {
  uint32_t d = 0;
  auto see = [&](const ast::ExprPtr &e) {
    if (e)
      d = std::max(d, e->depth);
  };
  for (const ast::StmtPtr &s : b.stmts) {
    if (auto *a = ast::dyn_cast<ast::AssignStmt>(s.get()))
      see(a->value);
    else if (auto *c = ast::dyn_cast<ast::CompoundAssignStmt>(s.get()))
      see(c->value);
    else if (auto *x = ast::dyn_cast<ast::ExprStmt>(s.get()))
      see(x->expr);
    else if (auto *y = ast::dyn_cast<ast::YieldStmt>(s.get()))
      for (const ast::ExprPtr &v : y->values)
        see(v);
  }
  return d;
}

// The depth of the deepest direct child of `e` (0 for a leaf).
uint32_t childDepth(const ast::Expr &e) {
  uint32_t d = 0;
  auto see = [&](const ast::ExprPtr &c) {
    if (c)
      d = std::max(d, c->depth);
  };
  switch (e.kind) {
  case ast::ExprKind::Unary:
    see(static_cast<const ast::Unary &>(e).operand);
    break;
  case ast::ExprKind::Binary:
    see(static_cast<const ast::Binary &>(e).lhs);
    see(static_cast<const ast::Binary &>(e).rhs);
    break;
  case ast::ExprKind::Call:
    for (const ast::Arg &a : static_cast<const ast::Call &>(e).args)
      see(a.value);
    break;
  case ast::ExprKind::List:
    for (const ast::ExprPtr &x : static_cast<const ast::ListExpr &>(e).elements)
      see(x);
    break;
  case ast::ExprKind::Dict:
    for (const ast::DictEntry &x : static_cast<const ast::DictExpr &>(e).entries) {
      see(x.key);
      see(x.value);
    }
    break;
  case ast::ExprKind::Lambda:
    see(static_cast<const ast::Lambda &>(e).body);
    break;
  case ast::ExprKind::RegisterCtor: {
    const auto &r = static_cast<const ast::RegisterCtor &>(e);
    for (const ast::ExprPtr &x : r.type.dims)
      see(x);
    see(r.type.space);
    see(r.init);
    break;
  }
  case ast::ExprKind::If: {
    const auto &i = static_cast<const ast::IfExpr &>(e);
    see(i.cond);
    d = std::max(d, blockDepth(i.thenBlock));
    if (i.elseBlock)
      d = std::max(d, blockDepth(*i.elseBlock));
    break;
  }
  case ast::ExprKind::Iterate: {
    const auto &it = static_cast<const ast::IterateExpr &>(e);
    see(it.dim);
    for (const ast::Carried &c : it.carried)
      see(c.init);
    d = std::max(d, blockDepth(it.body));
    break;
  }
  default:
    break;
  }
  return d;
}

ast::ExprPtr Builder::bounded(ast::ExprPtr e, SourceRange at) {
  if (!e)
    return e;
  e->depth = childDepth(*e) + 1;
  if (e->depth > kMaxExprDepth) {
    st_.report(DiagId::ExpressionTooDeep, at, {std::to_string(kMaxExprDepth)});
    return nullptr;
  }
  return e;
}

// ---- declarations -------------------------------------------------------------------------

void Builder::module(P::ModuleContext *ctx, ast::Module &out) {
  if (!ctx)
    return;
  for (P::TopDeclContext *decl : ctx->topDecl()) {
    if (st_.shouldStop())
      return;
    if (!decl)
      continue;
    if (auto *s = decl->symbolDecl()) {
      symbolDecl(s, out);
    } else if (auto *m = decl->mappingDecl()) {
      if (auto mapping = mappingDecl(m)) {
        out.order.push_back({ast::DeclKind::Mapping, out.mappings.size()});
        out.mappings.push_back(std::move(*mapping));
      }
    } else if (auto *k = decl->kernelDecl()) {
      if (auto kernel = kernelDecl(k)) {
        out.order.push_back({ast::DeclKind::Kernel, out.kernels.size()});
        out.kernels.push_back(std::move(*kernel));
      }
    }
  }
}

std::optional<ast::Ident> Builder::declName(P::DeclNameContext *ctx) {
  if (broken(ctx))
    return std::nullopt;
  if (const Token *t = tok(ctx->IDENT()))
    return ident(t);
  P::ReservedWordContext *word = ctx->reservedWord();
  if (broken(word) || !ParseState::isReal(word->getStart()))
    return std::nullopt;
  // Keep the name: the error is reported, and the declaration is otherwise well formed.
  ast::Ident name = ident(word->getStart());
  st_.report(DiagId::ReservedWord, name.range, {name.name});
  return name;
}

void Builder::symbolDecl(P::SymbolDeclContext *ctx, ast::Module &out) {
  for (P::SymbolItemContext *item : ctx->symbolItem()) {
    if (broken(item) || garbled(item))
      continue;
    std::optional<ast::Ident> name = declName(item->declName());
    if (!name)
      continue;
    ast::SymbolDecl decl;
    decl.name = std::move(*name);
    decl.range = range(item);
    if (item->ASSIGN()) {
      decl.value = expr(item->expr());
      if (!decl.value)
        continue;
    }
    out.order.push_back({ast::DeclKind::Symbol, out.symbols.size()});
    out.symbols.push_back(std::move(decl));
  }
}

std::optional<ast::MappingDecl> Builder::mappingDecl(P::MappingDeclContext *ctx) {
  // A mapping is small and all of a piece: with a syntax error anywhere in it, leave it out.
  if (broken(ctx) || garbled(ctx))
    return std::nullopt;
  std::vector<P::DeclNameContext *> names = ctx->declName();
  if (names.empty())
    return std::nullopt;
  ast::MappingDecl m;
  std::optional<ast::Ident> name = declName(names[0]);
  if (!name)
    return std::nullopt;
  m.name = std::move(*name);
  m.range = range(ctx);
  for (size_t i = 1; i < names.size(); ++i) {
    std::optional<ast::Ident> it = declName(names[i]);
    if (!it)
      return std::nullopt;
    m.iterators.push_back(std::move(*it));
  }
  bool haveInputs = false, haveOutputs = false, badSection = false;
  for (P::MappingSectionContext *section : ctx->mappingSection()) {
    if (broken(section))
      return std::nullopt;
    std::optional<ast::Ident> sectionName = declName(section->declName());
    if (!sectionName)
      return std::nullopt;
    bool inputs = sectionName->name == "inputs", outputs = sectionName->name == "outputs";
    if (!inputs && !outputs) {
      st_.report(DiagId::MappingBadSection, sectionName->range, {sectionName->name});
      badSection = true;
      continue;
    }
    bool &have = inputs ? haveInputs : haveOutputs;
    if (have) {
      st_.report(DiagId::MappingDuplicateSection, sectionName->range,
                 {m.name.name, sectionName->name});
      continue;
    }
    have = true;
    (inputs ? m.inputsRange : m.outputsRange) = sectionName->range;
    if (!mappingEntries(section, inputs ? m.inputs : m.outputs))
      return std::nullopt;
  }
  // A misspelt section already explains a missing one.
  if (!haveInputs && !badSection)
    st_.report(DiagId::MappingMissingSection, m.name.range, {m.name.name, "inputs"});
  if (!haveOutputs && !badSection)
    st_.report(DiagId::MappingMissingSection, m.name.range, {m.name.name, "outputs"});
  if (badSection)
    return std::nullopt;
  return m;
}

bool Builder::mappingEntries(P::MappingSectionContext *ctx, std::vector<ast::MappingEntry> &out) {
  if (!slotsFilled(ctx, "an entry"))
    return false;
  for (P::MappingEntryContext *entry : ctx->mappingEntry()) {
    if (broken(entry) || entry->expr().size() != 2)
      return false;
    ast::ExprPtr key = expr(entry->expr(0));
    ast::ExprPtr value = expr(entry->expr(1));
    if (!key || !value)
      return false;
    out.push_back({std::move(key), std::move(value)});
  }
  return true;
}

std::optional<ast::KernelDecl> Builder::kernelDecl(P::KernelDeclContext *ctx) {
  if (!ctx || !ctx->kernelBody())
    return std::nullopt;
  std::optional<ast::Ident> name = declName(ctx->declName());
  if (!name)
    return std::nullopt;
  ast::KernelDecl k;
  k.name = std::move(*name);
  k.range = range(ctx);
  slotsFilled(ctx, "a parameter");
  for (P::ParamContext *param : ctx->param()) {
    if (broken(param) || garbled(param))
      continue;
    std::optional<ast::Ident> paramName = declName(param->declName());
    std::optional<ast::TypeExpr> type = typeExpr(param->typeExpr());
    if (paramName && type)
      k.params.push_back({std::move(*paramName), std::move(*type)});
  }
  kernelBody(ctx->kernelBody(), k);
  return k;
}

void Builder::kernelBody(P::KernelBodyContext *ctx, ast::KernelDecl &k) {
  k.body.range = range(ctx);
  bool seenStatement = false, haveConstraints = false;
  for (P::KernelItemContext *item : ctx->kernelItem()) {
    if (st_.shouldStop())
      return;
    if (!item)
      continue;
    if (P::ConstraintsBlockContext *block = item->constraintsBlock()) {
      const Token *keyword = tok(block->CONSTRAINTS());
      SourceRange where = keyword ? st_.rangeOf(keyword) : range(block);
      if (haveConstraints) {
        st_.report(DiagId::DuplicateConstraints, where, {k.name.name});
        continue;
      }
      haveConstraints = true;
      if (seenStatement)
        st_.report(DiagId::ConstraintsNotFirst, where, {k.name.name});
      k.constraintsRange = where;
      for (P::ConstraintContext *c : block->constraint())
        if (std::unique_ptr<ast::Call> call = constraint(c))
          k.constraints.push_back(std::move(call));
    } else if (P::StatementContext *s = item->statement()) {
      seenStatement = true;
      if (ast::StmtPtr stmt = statement(s))
        k.body.stmts.push_back(std::move(stmt));
    }
  }
  // When the body itself is garbled the block may well be there, unreadable.
  if (!haveConstraints && !broken(ctx))
    st_.report(DiagId::MissingConstraints, k.name.range, {k.name.name});
}

std::unique_ptr<ast::Call> Builder::constraint(P::ConstraintContext *ctx) {
  if (broken(ctx) || garbled(ctx))
    return nullptr;
  const Token *name = tok(ctx->IDENT()), *close = tok(ctx->RPAREN());
  if (!name || !close)
    return nullptr;
  auto call = std::make_unique<ast::Call>(st_.rangeOf(name, close), ident(name));
  if (!args(ctx->argList(), call->args))
    return nullptr;
  return call;
}

std::optional<ast::TypeExpr> Builder::typeExpr(P::TypeExprContext *ctx) {
  if (broken(ctx))
    return std::nullopt;
  if (auto *scalar = dynamic_cast<P::ScalarTypeContext *>(ctx)) {
    const Token *t = tok(scalar->TYPE_NAME());
    std::optional<ScalarType> type = t ? parseScalarType(st_.textOf(t)) : std::nullopt;
    if (!type)
      return std::nullopt;
    ast::TypeExpr out;
    out.kind = ast::TypeKind::Scalar;
    out.range = out.dtypeRange = st_.rangeOf(t);
    out.dtype = *type;
    return out;
  }
  if (auto *memory = dynamic_cast<P::MemoryTypeContext *>(ctx))
    return shapedType(ast::TypeKind::Memory, range(memory), memory->exprList());
  if (auto *reg = dynamic_cast<P::RegisterTypeContext *>(ctx))
    return shapedType(ast::TypeKind::Register, range(reg), reg->exprList());
  return std::nullopt;
}

// Memory[dims..., SPACE, T] and Register[dims..., T] are parsed as expression lists; the last
// entry is the element type and, for Memory, the one before it the address space.
std::optional<ast::TypeExpr> Builder::shapedType(ast::TypeKind kind, SourceRange range,
                                                 P::ExprListContext *list) {
  std::vector<ast::ExprPtr> items;
  if (list && !exprList(list, items))
    return std::nullopt;
  bool memory = kind == ast::TypeKind::Memory;
  auto fail = [&](SourceRange where, std::string why) -> std::optional<ast::TypeExpr> {
    st_.report(memory ? DiagId::BadMemoryType : DiagId::BadRegisterType, where, {std::move(why)});
    return std::nullopt;
  };
  if (items.empty())
    return fail(range, "the brackets are empty");
  auto *dtype = ast::dyn_cast<ast::DTypeLit>(items.back().get());
  if (!dtype)
    return fail(items.back()->range, "the last entry must be an element type such as f32, not '" +
                                         ast::toSource(*items.back()) + "'");
  ast::TypeExpr out;
  out.kind = kind;
  out.range = range;
  out.dtype = dtype->type;
  out.dtypeRange = dtype->range;
  items.pop_back();
  if (memory) {
    if (items.empty())
      return fail(range, "the address space (global, shared or a symbol) is missing");
    ast::ExprPtr &space = items.back();
    if (!ast::isa<ast::SpaceLit>(space.get()) && !ast::isa<ast::NameRef>(space.get()))
      return fail(space->range, "'" + ast::toSource(*space) +
                                    "' is not an address space; use global, shared or a symbol");
    out.space = std::move(space);
    items.pop_back();
  }
  out.dims = std::move(items);
  return out;
}

// ---- statements ---------------------------------------------------------------------------

bool Builder::block(P::BlockContext *ctx, ast::Block &out) {
  // A block is a container: a bad statement inside is dropped, the others are kept.
  if (!ctx || !ParseState::isReal(ctx->getStart()))
    return false;
  out.range = range(ctx);
  for (P::StatementContext *s : ctx->statement()) {
    if (st_.shouldStop())
      return false;
    if (ast::StmtPtr stmt = statement(s))
      out.stmts.push_back(std::move(stmt));
  }
  return true;
}

ast::StmtPtr Builder::statement(P::StatementContext *ctx) {
  if (broken(ctx) || garbled(ctx))
    return nullptr;
  SourceRange r = range(ctx);
  if (auto *y = dynamic_cast<P::YieldStmtContext *>(ctx)) {
    auto out = std::make_unique<ast::YieldStmt>(r);
    for (P::ValueContext *v : y->value()) {
      ast::ExprPtr e = value(v);
      if (!e)
        return nullptr;
      out->values.push_back(std::move(e));
    }
    checkSemicolon(ctx, y->SEMI(), y->value().empty() ? nullptr : y->value().back());
    return out;
  }
  auto *simple = dynamic_cast<P::SimpleStmtContext *>(ctx);
  if (!simple || simple->value().empty())
    return nullptr;
  std::vector<ast::ExprPtr> values;
  for (P::ValueContext *v : simple->value()) {
    ast::ExprPtr e = value(v);
    if (!e)
      return nullptr;
    values.push_back(std::move(e));
  }
  P::AssignOpContext *assign = simple->assignOp();
  if (!assign) {
    if (values.size() > 1) {
      // After a syntax error on this line, the list is most likely its debris.
      SourceLoc at = values.back()->range.end;
      if (!st_.hadSyntaxErrorOnLine(at.line))
        st_.report(DiagId::ExpectedAfter, SourceRange::at(at), {"'='", "the names to assign"});
      return nullptr;
    }
    checkSemicolon(ctx, simple->SEMI(), simple->value().back());
    return std::make_unique<ast::ExprStmt>(r, std::move(values[0]));
  }
  const Token *op = broken(assign) ? nullptr : assign->getStart();
  if (!ParseState::isReal(op))
    return nullptr;
  checkSemicolon(ctx, simple->SEMI(), simple->value().back());
  ast::ExprPtr rhs = std::move(values.back());
  values.pop_back();
  std::vector<ast::Ident> targets;
  for (const ast::ExprPtr &v : values) {
    auto *name = ast::dyn_cast<ast::NameRef>(v.get());
    if (!name || v->parenthesized) {
      st_.report(DiagId::BadAssignTarget, v->range);
      return nullptr;
    }
    targets.push_back({name->name, name->range});
  }
  if (op->getType() == P::ASSIGN) {
    auto out = std::make_unique<ast::AssignStmt>(r);
    out->targets = std::move(targets);
    out->value = std::move(rhs);
    return out;
  }
  if (targets.size() != 1) {
    st_.report(DiagId::UnexpectedToken, st_.rangeOf(op),
               {"'" + st_.textOf(op) + "'", "; a compound assignment updates one name"});
    return nullptr;
  }
  auto out = std::make_unique<ast::CompoundAssignStmt>(r);
  out->target = std::move(targets[0]);
  switch (op->getType()) {
  case P::PLUS_ASSIGN:
    out->op = ast::BinaryOp::Add;
    break;
  case P::MINUS_ASSIGN:
    out->op = ast::BinaryOp::Sub;
    break;
  case P::STAR_ASSIGN:
    out->op = ast::BinaryOp::Mul;
    break;
  default:
    out->op = ast::BinaryOp::Div;
    break;
  }
  out->opRange = st_.rangeOf(op);
  out->value = std::move(rhs);
  return out;
}

// The grammar lets every statement omit its `;`; only one that ends in a block (`if`,
// `iterate`) may. The error goes just past the statement, where the `;` belongs.
void Builder::checkSemicolon(P::StatementContext *ctx, TerminalNode *semi,
                             P::ValueContext *last) {
  if (semi || (last && last->blockExpr()))
    return;
  const Token *stop = ctx->getStop();
  if (!ParseState::isReal(stop))
    return;
  // An error already reported at the next token explains the missing `;` too.
  const Token *next = st_.nextOnChannel(stop);
  if (next && (st_.hadSyntaxErrorAt(next) || st_.followsInvalidChar(next)))
    return;
  SourceLoc at = st_.endOf(stop);
  if (at.line == lastMissingSemicolonLine_ || st_.hadSyntaxErrorOnLine(at.line))
    return;
  lastMissingSemicolonLine_ = at.line;
  st_.report(DiagId::ExpectedAfter, SourceRange::at(at), {"';'", "statement"});
}

// ---- expressions --------------------------------------------------------------------------

ast::ExprPtr Builder::value(P::ValueContext *ctx) {
  if (broken(ctx))
    return nullptr;
  if (P::BlockExprContext *b = ctx->blockExpr()) {
    if (broken(b))
      return nullptr;
    if (b->ifExpr())
      return ifExpr(b->ifExpr());
    return iterateExpr(b->iterateExpr());
  }
  return expr(ctx->expr());
}

ast::ExprPtr Builder::expr(ParserRuleContext *ctx) {
  if (broken(ctx))
    return nullptr;
  switch (ctx->getRuleIndex()) {
  case P::RuleExpr:
  case P::RuleXorExpr:
  case P::RuleAndExpr:
  case P::RuleAddExpr:
  case P::RuleMulExpr:
  case P::RuleIterDim:
  case P::RuleIterDimTerm:
    return chain(ctx, false);
  case P::RuleCmpExpr:
    return chain(ctx, true);
  case P::RuleUnaryExpr:
    return unary(static_cast<P::UnaryExprContext *>(ctx));
  case P::RulePrimary:
    return primary(static_cast<P::PrimaryContext *>(ctx));
  case P::RuleIterDimAtom:
    return iterDimAtom(static_cast<P::IterDimAtomContext *>(ctx));
  case P::RuleValue:
    return value(static_cast<P::ValueContext *>(ctx));
  default:
    return nullptr;
  }
}

// One precedence level: operand (op operand)*, folded to the left.
ast::ExprPtr Builder::chain(ParserRuleContext *ctx, bool comparison) {
  ast::ExprPtr lhs;
  const Token *op = nullptr;
  unsigned ops = 0;
  for (ParseTree *child : ctx->children) {
    if (auto *rule = dynamic_cast<ParserRuleContext *>(child)) {
      ast::ExprPtr operand = expr(rule);
      if (!operand)
        return nullptr;
      if (!lhs) {
        lhs = std::move(operand);
        continue;
      }
      std::optional<ast::BinaryOp> kind = op ? binaryOpOf(op->getType()) : std::nullopt;
      if (!kind)
        return nullptr;
      SourceRange r = SourceRange::span(lhs->range, operand->range);
      lhs = bounded(std::make_unique<ast::Binary>(r, *kind, std::move(lhs), std::move(operand),
                                                  st_.rangeOf(op)),
                    st_.rangeOf(op));
      if (!lhs)
        return nullptr;
      op = nullptr;
    } else {
      op = tok(dynamic_cast<TerminalNode *>(child));
      if (!op)
        return nullptr;
      if (comparison && ++ops == 2) {
        st_.report(DiagId::ChainedComparison, st_.rangeOf(op));
        return nullptr;
      }
    }
  }
  return op ? nullptr : std::move(lhs);
}

ast::ExprPtr Builder::unary(P::UnaryExprContext *ctx) {
  if (auto *p = dynamic_cast<P::PrimaryExprContext *>(ctx))
    return primary(p->primary());
  auto *prefix = dynamic_cast<P::PrefixExprContext *>(ctx);
  if (!prefix || prefix->children.empty())
    return nullptr;
  const Token *op = tok(dynamic_cast<TerminalNode *>(prefix->children[0]));
  if (!op)
    return nullptr;
  ast::ExprPtr operand = expr(prefix->unaryExpr());
  if (!operand)
    return nullptr;
  SourceRange r{st_.rangeOf(op).begin, operand->range.end};
  auto kind = op->getType() == P::MINUS ? ast::UnaryOp::Neg : ast::UnaryOp::BitNot;
  return bounded(std::make_unique<ast::Unary>(r, kind, std::move(operand)), st_.rangeOf(op));
}

ast::ExprPtr Builder::intLiteral(const Token *t) {
  if (!t)
    return nullptr;
  std::string text = st_.textOf(t);
  std::optional<int64_t> v = parseInt(text);
  if (!v) {
    st_.report(DiagId::IntegerTooLarge, st_.rangeOf(t), {text});
    return nullptr;
  }
  return std::make_unique<ast::IntLit>(st_.rangeOf(t), *v);
}

// Literals and other one-token primaries.
ast::ExprPtr Builder::literal(P::PrimaryContext *ctx) {
  const Token *t = ctx->getStart();
  if (!ParseState::isReal(t))
    return nullptr;
  SourceRange r = st_.rangeOf(t);
  std::string text = st_.textOf(t);
  switch (t->getType()) {
  case P::INT_LIT:
    return intLiteral(t);
  case P::FLOAT_LIT: {
    std::optional<double> v = parseFloat(text);
    if (!v) {
      st_.report(DiagId::InvalidNumber, r, {text});
      return nullptr;
    }
    return std::make_unique<ast::FloatLit>(r, *v, text);
  }
  case P::INF_LIT:
    return std::make_unique<ast::FloatLit>(r, std::numeric_limits<double>::infinity(), text);
  case P::NAN_LIT:
    return std::make_unique<ast::FloatLit>(r, std::numeric_limits<double>::quiet_NaN(), text);
  case P::TRUE_LIT:
  case P::FALSE_LIT:
    return std::make_unique<ast::BoolLit>(r, t->getType() == P::TRUE_LIT);
  case P::GLOBAL:
  case P::SHARED:
    return std::make_unique<ast::SpaceLit>(
        r, t->getType() == P::GLOBAL ? AddressSpace::Global : AddressSpace::Shared);
  case P::TYPE_NAME: {
    std::optional<ScalarType> type = parseScalarType(text);
    return type ? std::make_unique<ast::DTypeLit>(r, *type) : nullptr;
  }
  case P::IDENT:
    return std::make_unique<ast::NameRef>(r, text);
  default:
    return nullptr; // BAD_NUMBER: reported by the lexer
  }
}

ast::ExprPtr Builder::primary(P::PrimaryContext *ctx) {
  if (broken(ctx))
    return nullptr;
  if (dynamic_cast<P::IntLitContext *>(ctx) || dynamic_cast<P::FloatLitContext *>(ctx) ||
      dynamic_cast<P::SpecialFloatLitContext *>(ctx) || dynamic_cast<P::BoolLitContext *>(ctx) ||
      dynamic_cast<P::SpaceLitContext *>(ctx) || dynamic_cast<P::DtypeLitContext *>(ctx) ||
      dynamic_cast<P::NameRefContext *>(ctx))
    return literal(ctx);
  if (auto *call = dynamic_cast<P::CallContext *>(ctx)) {
    const Token *name = tok(call->IDENT()), *close = tok(call->RPAREN());
    if (!name || !close)
      return nullptr;
    auto out = std::make_unique<ast::Call>(st_.rangeOf(name, close), ident(name));
    if (!args(call->argList(), out->args))
      return nullptr;
    return bounded(std::move(out), st_.rangeOf(name));
  }
  if (auto *paren = dynamic_cast<P::ParenContext *>(ctx)) {
    ast::ExprPtr inner = value(paren->value());
    if (!inner)
      return nullptr;
    inner->parenthesized = true;
    inner->range = range(paren);
    if (++inner->depth > kMaxExprDepth) {
      st_.report(DiagId::ExpressionTooDeep, st_.rangeOf(paren->getStart()),
                 {std::to_string(kMaxExprDepth)});
      return nullptr;
    }
    return inner;
  }
  if (auto *list = dynamic_cast<P::ListLitContext *>(ctx)) {
    auto out = std::make_unique<ast::ListExpr>(range(list));
    if (list->exprList() && !exprList(list->exprList(), out->elements))
      return nullptr;
    return bounded(std::move(out), st_.rangeOf(list->getStart()));
  }
  if (auto *dict = dynamic_cast<P::DictLitContext *>(ctx)) {
    auto out = std::make_unique<ast::DictExpr>(range(dict));
    if (!slotsFilled(dict, "an expression"))
      return nullptr;
    for (P::DictEntryContext *entry : dict->dictEntry()) {
      if (broken(entry))
        return nullptr;
      ast::ExprPtr key = expr(entry->expr());
      ast::ExprPtr v = value(entry->value());
      if (!key || !v)
        return nullptr;
      out->entries.push_back({std::move(key), std::move(v)});
    }
    return bounded(std::move(out), st_.rangeOf(dict->getStart()));
  }
  if (auto *ctor = dynamic_cast<P::RegisterCtorContext *>(ctx)) {
    const Token *kw = tok(ctor->REGISTER()), *close = tok(ctor->RBRACK());
    if (!kw || !close)
      return nullptr;
    std::optional<ast::TypeExpr> type =
        shapedType(ast::TypeKind::Register, st_.rangeOf(kw, close), ctor->exprList());
    ast::ExprPtr init = value(ctor->value());
    if (!type || !init)
      return nullptr;
    return bounded(
        std::make_unique<ast::RegisterCtor>(range(ctor), std::move(*type), std::move(init)),
        st_.rangeOf(kw));
  }
  return nullptr; // BadNumberContext, or an alternative that never got chosen
}

ast::ExprPtr Builder::iterDimAtom(P::IterDimAtomContext *ctx) {
  if (auto *name = dynamic_cast<P::IterDimNameContext *>(ctx)) {
    const Token *t = tok(name->IDENT());
    return t ? std::make_unique<ast::NameRef>(st_.rangeOf(t), st_.textOf(t)) : nullptr;
  }
  if (auto *number = dynamic_cast<P::IterDimIntContext *>(ctx))
    return intLiteral(tok(number->INT_LIT()));
  if (auto *paren = dynamic_cast<P::IterDimParenContext *>(ctx)) {
    ast::ExprPtr inner = expr(paren->expr());
    if (!inner)
      return nullptr;
    inner->parenthesized = true;
    inner->range = range(paren);
    if (++inner->depth > kMaxExprDepth) {
      st_.report(DiagId::ExpressionTooDeep, st_.rangeOf(paren->getStart()),
                 {std::to_string(kMaxExprDepth)});
      return nullptr;
    }
    return inner;
  }
  return nullptr;
}

ast::ExprPtr Builder::ifExpr(P::IfExprContext *ctx) {
  if (broken(ctx))
    return nullptr;
  ast::ExprPtr cond = expr(ctx->expr());
  std::vector<P::BlockContext *> blocks = ctx->block();
  if (!cond || blocks.empty())
    return nullptr;
  auto out = std::make_unique<ast::IfExpr>(range(ctx), std::move(cond));
  if (!block(blocks[0], out->thenBlock))
    return nullptr;
  if (!ctx->ELSE())
    return bounded(std::move(out), st_.rangeOf(ctx->getStart()));
  ast::Block elseBlock;
  if (blocks.size() > 1) {
    if (!block(blocks[1], elseBlock))
      return nullptr;
  } else {
    // `else if`: an else block holding the nested if as its one statement.
    ast::ExprPtr nested = ifExpr(ctx->ifExpr());
    if (!nested)
      return nullptr;
    elseBlock.range = nested->range;
    elseBlock.stmts.push_back(std::make_unique<ast::ExprStmt>(nested->range, std::move(nested)));
  }
  out->elseBlock = std::move(elseBlock);
  return bounded(std::move(out), st_.rangeOf(ctx->getStart()));
}

ast::ExprPtr Builder::iterateExpr(P::IterateExprContext *ctx) {
  if (broken(ctx))
    return nullptr;
  ast::ExprPtr dim = expr(ctx->iterDim());
  if (!dim)
    return nullptr;
  auto out = std::make_unique<ast::IterateExpr>(range(ctx), std::move(dim));
  if (!slotsFilled(ctx, "a carried value"))
    return nullptr;
  for (P::CarriedContext *c : ctx->carried()) {
    if (broken(c))
      return nullptr;
    std::optional<ast::Ident> name = declName(c->declName());
    ast::ExprPtr init = value(c->value());
    if (!name || !init)
      return nullptr;
    out->carried.push_back({std::move(*name), std::move(init)});
  }
  if (!block(ctx->block(), out->body))
    return nullptr;
  return bounded(std::move(out), st_.rangeOf(ctx->getStart()));
}

bool Builder::args(P::ArgListContext *ctx, std::vector<ast::Arg> &out) {
  if (!ctx)
    return true;
  if (broken(ctx))
    return false;
  if (!slotsFilled(ctx, "an expression"))
    return false;
  for (P::ArgContext *arg : ctx->arg()) {
    if (broken(arg))
      return false;
    if (auto *named = dynamic_cast<P::NamedArgContext *>(arg)) {
      P::ArgNameContext *argName = named->argName();
      const Token *name = broken(argName) ? nullptr : argName->getStart();
      if (!ParseState::isReal(name))
        return false;
      ast::ExprPtr v = argValue(named->argValue());
      if (!v)
        return false;
      out.push_back({ident(name), std::move(v)});
    } else if (auto *positional = dynamic_cast<P::PositionalArgContext *>(arg)) {
      ast::ExprPtr v = argValue(positional->argValue());
      if (!v)
        return false;
      out.push_back({ast::Ident{}, std::move(v)});
    } else {
      return false;
    }
  }
  return true;
}

ast::ExprPtr Builder::argValue(P::ArgValueContext *ctx) {
  if (broken(ctx))
    return nullptr;
  if (auto *plain = dynamic_cast<P::PlainValueContext *>(ctx))
    return value(plain->value());
  auto *lambda = dynamic_cast<P::LambdaContext *>(ctx);
  if (!lambda)
    return nullptr;
  const Token *param = tok(lambda->IDENT());
  ast::ExprPtr body = expr(lambda->expr());
  if (!param || !body)
    return nullptr;
  SourceRange r{st_.rangeOf(param).begin, body->range.end};
  return bounded(std::make_unique<ast::Lambda>(r, ident(param), std::move(body)),
                 st_.rangeOf(param));
}

// Lists are `item (',' item?)*`: a trailing comma is fine, two in a row leave a hole.
bool Builder::slotsFilled(ParserRuleContext *ctx, const char *what) {
  bool afterComma = false;
  for (ParseTree *child : ctx->children) {
    auto *terminal = dynamic_cast<TerminalNode *>(child);
    const Token *t = terminal ? tok(terminal) : nullptr;
    bool comma = t && t->getType() == P::COMMA;
    if (comma && afterComma) {
      st_.report(DiagId::ExpectedToken, st_.rangeOf(t), {what, "','"});
      return false;
    }
    afterComma = comma;
  }
  return true;
}

bool Builder::exprList(P::ExprListContext *ctx, std::vector<ast::ExprPtr> &out) {
  if (broken(ctx) || !slotsFilled(ctx, "an expression"))
    return false;
  for (P::ExprContext *e : ctx->expr()) {
    ast::ExprPtr x = expr(e);
    if (!x)
      return false;
    out.push_back(std::move(x));
  }
  return true;
}

} // namespace

void buildModule(ParseState &state, P::ModuleContext *root, ast::Module &out) {
  Builder(state).module(root, out);
}

} // namespace wave::parse
