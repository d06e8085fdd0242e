#!/usr/bin/env python3
"""Lists the C++ functions of src/ (and, for information, runtime/src/) longer than N lines.

    scripts/function_lengths.py [--max N] [--all] [--allow NAME]... [ROOT]

ROOT is the repository (default: this script's). Prints, longest first, every function
definition of more than N lines (default 150) in the .cpp/.h/.cc/.hpp files under src/ and
runtime/src/ as `LINES  path:line  name`; `--all` prints every definition. Exits 1 when a
function under src/ is over N (runtime/src/ is reported but does not fail), 0 otherwise.
`--allow NAME` (as printed, e.g. `compile`) still lists that function but does not fail on it:
for a function whose restructuring is under way elsewhere (the CTest names them).

How it measures: a brace-matching scan of each file, no compiler needed.
  - Comments (// and /* */), string literals (with escapes, and raw strings R"d(...)d"),
    character literals, digit separators (1'000) and preprocessor lines (with their
    backslash continuations) are blanked first, so braces inside them never count.
  - The scan then walks the braces of the file. A `{` at namespace or class scope opens a
    function body when the text in front of it (back to the previous `;`, `{` or `}` of that
    scope) has a parameter list `( ... )` and is not a namespace, class, struct, union or enum
    head, nor an initializer (`= {`). A constructor's member-initializer list (`: a_(x), b_{y}`)
    belongs to the head. Namespace, class, struct, union and `extern "C"` bodies are entered and
    scanned for more definitions (member functions defined in a class count on their own).
  - A function's length is the number of lines from the first line of its definition (the
    line holding the first token of the head, `template <...>` included) to the line of its
    closing brace, both counted. Everything between counts: blank lines, comments, and the
    lambdas and local classes it contains (a lambda is part of its enclosing function, never a
    function of its own).
  - The name printed is the (qualified) identifier in front of the parameter list, e.g.
    `KernelEmitter::reduceHeld`.
Declarations without a body, and macros, are not functions here.
"""
import argparse
import os
import re
import sys

EXTS = (".cpp", ".cc", ".h", ".hpp")
SCOPES_FAIL = ("src",)
SCOPES_INFO = ("runtime/src",)


def blank(text):
    """`text` with comments, literals and preprocessor lines replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    line_start = True  # only whitespace since the last newline
    while i < n:
        c = text[i]
        if c == "\n":
            out.append(c)
            i += 1
            line_start = True
            continue
        if line_start and c == "#":
            # A preprocessor line, with its continuations (comments inside it are blanked too).
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                if text.startswith("/*", i):
                    j = text.find("*/", i + 2)
                    j = n if j < 0 else j + 2
                    out.append(re.sub(r"[^\n]", " ", text[i:j]))
                    i = j
                    continue
                out.append(" ")
                i += 1
            continue
        if c in " \t\r\f\v":
            out.append(c)
            i += 1
            continue
        line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        m = re.compile(r'(?:u8|u|U|L)?R"([^()\\ \n]{0,16})\(').match(text, i)
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find(")" + m.group(1) + '"', m.end())
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append('"' + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + '"')
            i = j
            continue
        if c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            # A string or character literal (a ' after a digit or letter is a digit separator
            # or part of a u8'x' prefix handled by the letter check below).
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + c if j - i >= 2 else c)
            i = j
            continue
        if c == "'":
            # After an identifier or digit: a digit separator (1'000), or a prefixed character
            # literal (u'x', L'x').
            k = i - 1
            while k >= 0 and (text[k].isalnum() or text[k] == "_"):
                k -= 1
            word = text[k + 1:i]
            if word in ("u", "U", "L", "u8"):
                j = i + 1
                while j < n and text[j] != "'" and text[j] != "\n":
                    j += 2 if text[j] == "\\" else 1
                j = min(j + 1, n)
                out.append("'" + " " * (j - i - 2) + "'")
                i = j
                continue
            out.append(" ")
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


SCOPE_HEAD = re.compile(r"\b(namespace|class|struct|union|enum)\b")
NOT_NAMES = {"if", "for", "while", "switch", "return", "sizeof", "alignof", "decltype",
             "alignas", "noexcept", "throw", "catch", "static_assert", "__attribute__",
             "requires", "void", "int", "bool", "char", "auto", "float", "double", "long",
             "short", "unsigned", "signed", "const", "operator", "template"}
# What may follow a parameter list before the body: cv/ref qualifiers, specifiers, a trailing
# return type.
TRAILER = re.compile(r"^(?:\s|const\b|volatile\b|override\b|final\b|mutable\b|&|"
                     r"noexcept\b(?:\s*\([^()]*(?:\([^()]*\)[^()]*)*\))?|"
                     r"->\s*[\w:<>,*&\s]+)*$")
NAME_BEFORE = re.compile(r"((?:[A-Za-z_]\w*\s*(?:<[^<>()]*>)?\s*::\s*)*"
                         r"(?:~?[A-Za-z_]\w*|operator\s*(?:\(\)|\[\]|[^\w\s(]+|\s[\w:<>*&\s]+)))$")
LAMBDA_VAR = re.compile(r"([A-Za-z_]\w*)\s*=\s*\[[^\]]*\]")


def paren_groups(head):
    """(start, end) of each parenthesis group at depth 0 of `head`."""
    groups, depth, start = [], 0, -1
    for k, ch in enumerate(head):
        if ch == "(":
            if depth == 0:
                start = k
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                groups.append((start, k))
            if depth < 0:
                return []
    return groups if depth == 0 else []


def function_name(head):
    """The name of the function whose head `head` is (the text before its body), or None."""
    if "(" not in head or re.search(r"(=|,|\breturn)\s*$", head):
        return None
    m = LAMBDA_VAR.search(head)
    if m and head.lstrip().split("=")[0].strip().split()[0:1] != []:
        before_eq = head[:m.start(1)]
        if "(" not in before_eq:  # `auto f = [..](..) {`: a lambda bound at scope level
            return m.group(1)
    for start, end in paren_groups(head):
        if not TRAILER.match(head[end + 1:]):
            continue
        before = head[:start].rstrip()
        m = NAME_BEFORE.search(before)
        if not m:
            continue
        name = re.sub(r"\s+", " ", m.group(1)).replace(" ::", "::").replace(":: ", "::")
        if not name.split("::")[-1].startswith("operator"):
            name = name.replace(" ", "")
        last = name.split("::")[-1].lstrip("~")
        if last in NOT_NAMES:
            continue
        # Inside template arguments (std::function<void(int)>): a `<` is still open.
        if before.count("<") > before.count(">") and not re.search(r"\btemplate\s*<", before):
            continue
        return name
    return None


def ctor_init_start(head):
    """Where the member-initializer list of a constructor head (`X(args) : a_(x)`) starts (the
    index of its `:`), or -1."""
    for _, end in paren_groups(head):
        m = re.match(r"\s*(?:noexcept\s*)?:(?!:)", head[end + 1:])
        if m:
            return end + 1 + m.end() - 1
    return -1


def scan(text):
    """[(name, first_line, last_line)] of the function definitions in `text`."""
    code = blank(text)
    line_of = []
    ln = 1
    for ch in code:
        line_of.append(ln)
        if ch == "\n":
            ln += 1
    line_of.append(ln)
    n = len(code)
    found = []

    def matching(i):
        """Index just past the `}` matching the `{` at i."""
        depth = 0
        while i < n:
            if code[i] == "{":
                depth += 1
            elif code[i] == "}":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        return n

    def walk(i, end, prefix):
        """Scans the namespace or class scope code[i:end] for definitions."""
        head_start, paren = i, 0
        while i < end:
            ch = code[i]
            if ch == "(":
                paren += 1
            elif ch == ")":
                paren -= 1
            elif paren == 0 and ch in ";}":
                head_start = i + 1
            elif paren == 0 and ch == ":" and re.search(r"\b(public|private|protected)\s*$",
                                                        code[head_start:i]):
                head_start = i + 1
            elif paren == 0 and ch == "{":
                head = code[head_start:i]
                close = matching(i)
                colon = ctor_init_start(head)
                if colon >= 0 and re.search(r"[\w>]\s*$", head):
                    i = close  # `b_{y}` in a member-initializer list: still the head
                    continue
                name = function_name(head[:colon] if colon >= 0 else head)
                if name is not None:
                    first = head_start + (len(head) - len(head.lstrip()))
                    if prefix and "::" not in name:
                        name = "::".join(prefix + [name])
                    found.append((name, line_of[first], line_of[close - 1]))
                elif re.search(r"(=|\breturn)\s*$", head):
                    pass  # an initializer at scope level
                else:
                    m = SCOPE_HEAD.search(head)
                    inner = prefix
                    if m and m.group(1) != "namespace":
                        nm = re.search(r"\b(?:class|struct|union)\s+(?:\[\[[^\]]*\]\]\s*)?"
                                       r"(?:alignas\s*\([^)]*\)\s*)?([A-Za-z_]\w*)", head)
                        if nm:
                            inner = prefix + [nm.group(1)]
                    if m or head.strip().startswith("extern"):
                        walk(i + 1, close - 1, inner)
                i = close
                head_start = i
                continue
            i += 1

    walk(0, n, [])
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root", nargs="?", default=os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("--max", type=int, default=150, help="longest allowed function (lines)")
    ap.add_argument("--all", action="store_true", help="print every definition")
    ap.add_argument("--allow", action="append", default=[], metavar="NAME",
                    help="list but do not fail on this function (repeatable)")
    args = ap.parse_args()
    root = os.path.abspath(args.root)

    over_fail, allowed = [], []
    rows = []
    for scope in SCOPES_FAIL + SCOPES_INFO:
        base = os.path.join(root, scope)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for fn in sorted(filenames):
                if not fn.endswith(EXTS):
                    continue
                path = os.path.join(dirpath, fn)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for name, first, last in scan(text):
                    length = last - first + 1
                    if args.all or length > args.max:
                        rows.append((length, rel, first, name, scope))
                    if length > args.max and scope in SCOPES_FAIL:
                        if name in args.allow:
                            allowed.append(name)
                        else:
                            over_fail.append(rel)
    rows.sort(key=lambda r: (-r[0], r[1], r[2]))
    for length, rel, first, name, scope in rows:
        note = "  (information only)" if scope not in SCOPES_FAIL else \
            "  (allowed)" if name in args.allow else ""
        print(f"{length:5d}  {rel}:{first}  {name}{note}")
    if over_fail:
        print(f"function_lengths: {len(over_fail)} function(s) in src/ over {args.max} lines",
              file=sys.stderr)
        return 1
    extra = f" but the {len(allowed)} allowed" if allowed else ""
    print(f"function_lengths: no function in src/ over {args.max} lines{extra}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
