#!/usr/bin/env python3
"""Finds calls whose arguments create IR in more than one place.

C++ leaves the evaluation order of a call's arguments unspecified (clang
evaluates them left to right, GCC right to left), so
`F(b, X::create(b, ..), Y::create(b, ..))` emits X and Y in an order that
depends on the host compiler. Such operands must be built in statements.
Braced initializer lists are evaluated left to right and are fine; so are
lambda arguments (their bodies run inside the callee).

An argument creates IR when it contains `::create(`, `.create<`, `.clone(`,
`createOrFold`, a call that passes a builder (an identifier declared as an
OpBuilder, LocBuilder, ImplicitLocOpBuilder or rewriter), or a call of a
function or lambda of the scanned files whose body creates IR (found to a
fixed point, so member helpers that use a builder member count too).

Only files that build MLIR are scanned: those including an "mlir/" header,
or a header of the scanned directories that does.

Usage: check-sibling-builders.py [FILE|DIR]...  (default: lib/)
Prints file:line: call for each finding; exits 1 if there is any.
"""
import os
import re
import sys

BUILDER_TYPES = (r"(?:OpBuilder|LocBuilder|ImplicitLocOpBuilder|RewriterBase|"
                 r"PatternRewriter|ConversionPatternRewriter|IRRewriter)")
CREATE = re.compile(r"::create\s*[(<]|\.create\s*[(<]|\.clone\s*\(|"
                    r"createOrFold\s*[(<]")
IDENT_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*(?:<[^<>;(){}]*>)?\s*\(")
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "catch",
            "static_assert", "decltype", "alignof", "noexcept", "assert"}


def strip(text):
    """Blanks comments, string and character literals (keeps newlines)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # 1'000 digit separators
                out.append(" "); i += 1; continue
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c); i = j + 1
        elif text.startswith("#", i) and (i == 0 or text[i - 1] == "\n"):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        else:
            out.append(c); i += 1
    return "".join(out)


def match(text, i):
    """Index of the bracket closing the one at text[i] (or len(text))."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack = [pairs[text[i]]]
    j = i + 1
    while j < len(text) and stack:
        c = text[j]
        if c in pairs:
            stack.append(pairs[c])
        elif c in ")]}":
            stack.pop()
        j += 1
    return j - 1


def split_args(text, lo, hi):
    """Top-level comma-separated spans of text[lo:hi]."""
    spans, depth, start = [], 0, lo
    angle = 0
    for j in range(lo, hi):
        c = text[j]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "<" and depth == 0 and re.search(r"[A-Za-z_>]\s*$", text[start:j]) \
                and re.match(r"\s*[A-Za-z_:]", text[j + 1:j + 40]) \
                and re.search(r"\b(SmallVector|ArrayRef|std::\w+|Op|Type|\w+Op|"
                              r"\w+Attr|cast|dyn_cast|isa|create|DenseMap)\s*$",
                              text[start:j]):
            angle += 1
        elif c == ">" and depth == 0 and angle > 0:
            angle -= 1
        elif c == "," and depth == 0 and angle == 0:
            spans.append((start, j)); start = j + 1
    if text[start:hi].strip():
        spans.append((start, hi))
    return spans


def builder_names(text):
    return set(re.findall(BUILDER_TYPES + r"\s*&?\s*([A-Za-z_]\w*)\b", text))


def creating_functions(texts, builders):
    """Names of functions/lambdas whose bodies create IR (fixed point)."""
    bodies = {}
    for text in texts:
        # Lambdas: auto name = [..](..) {..}
        for m in re.finditer(r"\bauto\s+([A-Za-z_]\w*)\s*=\s*\[", text):
            k = match(text, m.end() - 1)
            brace = text.find("{", k)
            if brace < 0:
                continue
            bodies.setdefault(m.group(1), []).append(text[brace:match(text, brace) + 1])
        # Functions: name(..) [const] [-> T] {..}
        for m in re.finditer(r"\b([A-Za-z_]\w*)\s*\(", text):
            if m.group(1) in KEYWORDS:
                continue
            k = match(text, m.end() - 1)
            rest = re.match(r"\s*(?:const\s*)?(?:override\s*)?(?:->\s*[\w:<>,\s*&]+?)?\s*\{",
                            text[k + 1:k + 200])
            if not rest:
                continue
            brace = k + 1 + rest.end() - 1
            bodies.setdefault(m.group(1), []).append(text[brace:match(text, brace) + 1])
    creating = set()
    changed = True
    while changed:
        changed = False
        for name, bs in bodies.items():
            if name in creating:
                continue
            if any(creates(b, builders, creating, lambdas_run=True) for b in bs):
                creating.add(name); changed = True
    return creating


def creates(expr, builders, creating, lambdas_run=False):
    """Whether evaluating expr creates IR."""
    if not lambdas_run:
        # A lambda expression's body does not run where it is written.
        s = expr.strip()
        if s.startswith("["):
            return False
        expr = drop_lambdas(expr)
    if CREATE.search(expr):
        return True
    for m in IDENT_CALL.finditer(expr):
        name = m.group(1)
        if name in creating:
            return True
        k = match(expr, m.end() - 1)
        for lo, hi in split_args(expr, m.end(), k):
            if expr[lo:hi].strip() in builders:
                return True
    return False


def drop_lambdas(expr):
    out, i = [], 0
    for m in re.finditer(r"\[[&=]?[\w\s,&=*]*\]\s*\(", expr):
        if m.start() < i:
            continue
        k = match(expr, m.end() - 1)
        brace = expr.find("{", k)
        if brace < 0 or expr[k + 1:brace].strip() and not expr[k + 1:brace].strip().startswith("->"):
            continue
        end = match(expr, brace)
        out.append(expr[i:m.start()]); out.append("[]{}"); i = end + 1
    out.append(expr[i:])
    return "".join(out)


def scan(path, text, builders, creating):
    found = []
    for m in IDENT_CALL.finditer(text):
        name = m.group(1)
        if name in KEYWORDS:
            continue
        k = match(text, m.end() - 1)
        args = split_args(text, m.end(), k)
        if len(args) < 2:
            continue
        n = sum(creates(text[lo:hi], builders, creating) for lo, hi in args)
        if n >= 2:
            line = text.count("\n", 0, m.start()) + 1
            found.append((line, name))
    return found


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    targets = argv or [os.path.join(root, "lib")]
    files = []
    for t in targets:
        if os.path.isdir(t):
            for d, _, names in os.walk(t):
                files += [os.path.join(d, n) for n in sorted(names)
                          if n.endswith((".cpp", ".h"))]
        else:
            files.append(t)
    raw = {f: open(f, encoding="utf-8").read() for f in sorted(files)}
    mlir = {f for f, t in raw.items() if '#include "mlir/' in t}
    changed = True
    while changed:
        names = {os.path.basename(f) for f in mlir if f.endswith(".h")}
        more = {f for f, t in raw.items() if f not in mlir and any(
            re.search(r'#include "(?:[^"]*/)?' + re.escape(n) + '"', t) for n in names)}
        mlir |= more
        changed = bool(more)
    texts = {f: strip(t) for f, t in raw.items() if f in mlir}
    builders = set()
    for t in texts.values():
        builders |= builder_names(t)
    creating = creating_functions(texts.values(), builders)
    total = 0
    for f, text in texts.items():
        for line, name in scan(f, text, builders, creating):
            print(f"{os.path.relpath(f, root)}:{line}: {name}(...) has two or more "
                  "arguments that create IR (evaluation order is unspecified)")
            total += 1
    if total:
        print(f"{total} call(s): build the operands in statements, left to right")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
