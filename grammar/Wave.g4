// The grammar of `.wave` files (language.md sections 2, 3, 4 and 7).
//
// The parser in src/frontend/parser.cpp runs the code ANTLR generates from this file and turns
// the parse tree into the AST of src/frontend/ast.h. The grammar is deliberately a little more
// permissive than the language, so that the AST builder can give precise, worded errors:
//   - a reserved word is accepted wherever a name is declared (`declName`), and the builder
//     reports `reserved-word`;
//   - the constraints block is accepted anywhere in a kernel body (`kernelItem`), and the builder
//     checks that it comes first and only once;
//   - `Memory[...]` and `Register[...]` take a plain expression list; the builder splits dims,
//     address space and element type;
//   - comparisons are parsed as a flat chain; the builder rejects `a < b < c`;
//   - a statement is `value, ... (assignOp value)?` with an optional `;`: the builder checks that
//     the targets are names and that only a statement ending in `}` (an `if` or `iterate`) omits
//     the `;`, and reports a missing `;` just past the statement, where the user forgot it;
//   - a lambda is only an argument; a `=>` anywhere else is reported as `misplaced-lambda`;
//   - comma-separated lists are written `item (',' item?)*`, which allows a trailing comma and
//     keeps the decisions LL(1); the builder reports an empty slot (`f(a,, b)`).
// Every decision is LL(1) or LL(2), so the fast SLL prediction mode suffices. The one
// ambiguity is the optional `;`: `a` followed by a line starting with `-` or `(` continues the
// expression (`a - b`, a call), as in C; SLL resolves it that way.
grammar Wave;

// ---- declarations ---------------------------------------------------------------------------

module : topDecl* EOF ;

topDecl
  : symbolDecl
  | mappingDecl
  | kernelDecl
  ;

// symbol M, N;   symbol BLOCK_M = 64, ADDRESS_SPACE = shared;
symbolDecl : SYMBOL symbolItem (',' symbolItem)* ';' ;
symbolItem : declName ('=' expr)? ;

// mapping transpose(i, j) { inputs { N: i, M: j } outputs { N: i, M: j } }
mappingDecl
  : MAPPING declName '(' (declName (',' declName)*)? ')' '{' mappingSection* '}' ;
mappingSection : declName '{' (mappingEntry (',' mappingEntry?)*)? '}' ;
mappingEntry : expr ':' expr ;

// kernel gemm(a: Memory[M, K, shared, f16], alpha: f32) { constraints { ... } ... }
kernelDecl : KERNEL declName '(' (param (',' param?)*)? ')' kernelBody ;
param : declName ':' typeExpr ;
kernelBody : '{' kernelItem* '}' ;
kernelItem
  : constraintsBlock
  | statement
  ;
constraintsBlock : CONSTRAINTS '{' constraint* '}' ;
constraint : IDENT '(' argList? ')' ';' ;

typeExpr
  : MEMORY '[' exprList? ']'       # memoryType
  | REGISTER '[' exprList? ']'     # registerType
  | TYPE_NAME                      # scalarType
  ;

// A name being declared. Reserved words are accepted so that the builder can name the mistake.
declName : IDENT | reservedWord ;
reservedWord
  : SYMBOL | MAPPING | KERNEL | CONSTRAINTS | ITERATE | IF | ELSE | YIELD
  | GLOBAL | SHARED | TRUE_LIT | FALSE_LIT | INF_LIT | NAN_LIT | MEMORY | REGISTER | TYPE_NAME
  ;

// ---- statements -----------------------------------------------------------------------------

block : '{' statement* '}' ;

statement
  : YIELD (';' | value (',' value)* ';'?)         # yieldStmt
  | value (',' value)* (assignOp value)? ';'?     # simpleStmt
  ;
assignOp : '=' | '+=' | '-=' | '*=' | '/=' ;

// ---- expressions ----------------------------------------------------------------------------

// A value is an ordinary expression or a block expression. Block expressions are not operands
// of binary operators (parenthesize them), so a statement that ends in `}` ends there.
value
  : blockExpr
  | expr
  ;
blockExpr
  : ifExpr
  | iterateExpr
  ;
ifExpr : IF expr block (ELSE (block | ifExpr))? ;
iterateExpr : ITERATE iterDim '(' (carried (',' carried?)*)? ')' block ;
carried : declName '=' value ;

// The iterated dim is written without calls, so that `iterate K (acc = x)` is not `K(acc = x)`.
iterDim : iterDimTerm (('+' | '-') iterDimTerm)* ;
iterDimTerm : iterDimAtom (('*' | '/' | '//' | '%') iterDimAtom)* ;
iterDimAtom
  : IDENT             # iterDimName
  | INT_LIT           # iterDimInt
  | '(' expr ')'      # iterDimParen
  ;

// Precedence, loosest first: | ^ & comparisons + - * / // % unary primary.
expr : xorExpr ('|' xorExpr)* ;
xorExpr : andExpr ('^' andExpr)* ;
andExpr : cmpExpr ('&' cmpExpr)* ;
cmpExpr : addExpr (('==' | '!=' | '<' | '<=' | '>' | '>=') addExpr)* ;
addExpr : mulExpr (('+' | '-') mulExpr)* ;
mulExpr : unaryExpr (('*' | '/' | '//' | '%') unaryExpr)* ;
unaryExpr
  : ('-' | '~') unaryExpr     # prefixExpr
  | primary                   # primaryExpr
  ;

primary
  : INT_LIT                                          # intLit
  | FLOAT_LIT                                        # floatLit
  | BAD_NUMBER                                       # badNumber
  | (INF_LIT | NAN_LIT)                              # specialFloatLit
  | (TRUE_LIT | FALSE_LIT)                           # boolLit
  | (GLOBAL | SHARED)                                # spaceLit
  | TYPE_NAME                                        # dtypeLit
  | IDENT '(' argList? ')'                           # call
  | IDENT                                            # nameRef
  | REGISTER '[' exprList? ']' '(' value ')'         # registerCtor
  | '[' exprList? ']'                                # listLit
  | '{' (dictEntry (',' dictEntry?)*)? '}'           # dictLit
  | '(' value ')'                                    # paren
  ;

argList : arg (',' arg?)* ;
arg
  : argName '=' argValue  # namedArg
  | argValue              # positionalArg
  ;
// Argument names are not declarations: `read(a, mapping = f)` names a keyword.
argName : IDENT | reservedWord ;
// A lambda (`v => v < K2`) is only written as an argument (of apply_expr).
argValue
  : IDENT '=>' expr       # lambda
  | value                 # plainValue
  ;
exprList : expr (',' expr?)* ;
dictEntry : expr ':' value ;

// ---- tokens ---------------------------------------------------------------------------------

SYMBOL : 'symbol' ;
MAPPING : 'mapping' ;
KERNEL : 'kernel' ;
CONSTRAINTS : 'constraints' ;
ITERATE : 'iterate' ;
IF : 'if' ;
ELSE : 'else' ;
YIELD : 'yield' ;
GLOBAL : 'global' ;
SHARED : 'shared' ;
// Named *_LIT because NAN, TRUE and FALSE are macros in some C headers.
TRUE_LIT : 'true' ;
FALSE_LIT : 'false' ;
INF_LIT : 'inf' ;
NAN_LIT : 'nan' ;
MEMORY : 'Memory' ;
REGISTER : 'Register' ;
TYPE_NAME
  : 'i1' | 'bool' | 'i8' | 'i16' | 'i32' | 'i64' | 'u8' | 'u32'
  | 'f16' | 'bf16' | 'f32' | 'f64'
  | 'f8e4m3fn' | 'f8e5m2' | 'f8e4m3fnuz' | 'f8e5m2fnuz' | 'index'
  ;

PLUS_ASSIGN : '+=' ;
MINUS_ASSIGN : '-=' ;
STAR_ASSIGN : '*=' ;
SLASH_ASSIGN : '/=' ;
ARROW : '=>' ;
EQ : '==' ;
NE : '!=' ;
LE : '<=' ;
GE : '>=' ;
LT : '<' ;
GT : '>' ;
ASSIGN : '=' ;
PLUS : '+' ;
MINUS : '-' ;
STAR : '*' ;
FLOOR_DIV : '//' ;
SLASH : '/' ;
PERCENT : '%' ;
AMP : '&' ;
PIPE : '|' ;
CARET : '^' ;
TILDE : '~' ;
LPAREN : '(' ;
RPAREN : ')' ;
LBRACK : '[' ;
RBRACK : ']' ;
LBRACE : '{' ;
RBRACE : '}' ;
COMMA : ',' ;
COLON : ':' ;
SEMI : ';' ;

// Numbers: 42, 4_096, 0x2A; 1.0, 1., .5, 1e-6, 2.5E+3.
FLOAT_LIT
  : DEC '.' DEC? EXPONENT?
  | '.' DEC EXPONENT?
  | DEC EXPONENT
  ;
INT_LIT
  : DEC
  | '0' [xX] HEX_DIGIT ('_'? HEX_DIGIT)*
  ;
// Anything else that starts like a number and runs on (12abc, 0x, 1_, 1.2.3): one token, so
// that the error names the whole thing. Longer matches win, so valid numbers never land here.
BAD_NUMBER
  : [0-9] [0-9a-zA-Z_.]*
  | '.' [0-9] [0-9a-zA-Z_.]*
  ;
fragment DEC : [0-9] ('_'? [0-9])* ;
fragment HEX_DIGIT : [0-9a-fA-F] ;
fragment EXPONENT : [eE] [+-]? DEC ;

IDENT : [A-Za-z_] [A-Za-z0-9_]* ;

WS : [ \t\r\n\f]+ -> skip ;
COMMENT : '#' ~[\r\n]* -> skip ;

// Any other character. Kept off the parser's channel; the parser reports it as invalid.
ERROR_CHAR : . -> channel(HIDDEN) ;
