#!/usr/bin/env python3
"""Counts the lines of an example and of the tutorial it ports, by one rule
for both languages (examples/README.md, "Line counts"):

  * every line that holds code counts: imports, the package clause,
    func main, lines of closing brackets, everything;
  * blank lines, comments and docstrings do not;
  * nor printing, plotting and timing statements (Go: fmt.Print*,
    fmt.Fprint*, log.Print*, time.Now/time.Since; Python: print(...),
    plt.*/matplotlib, timeit/Timer/time.perf_counter), each with all of
    its continuation lines, nor Python's assert statements and allclose
    checks (the comparison against reference values; in Go it lives in
    main_test.go, which is not counted);
  * an import (Go or Python) whose name is used only by lines left out is
    left out too.

    python3 examples/linecount.py examples/maml/main.go
    python3 examples/linecount.py --skip 120-180 tutorial.py   # lines 120-180 not ported
    python3 examples/linecount.py --chars examples/maml/main.go  # code characters

--chars counts the characters of the same lines instead: their code
text without indentation, trailing spaces and comments, in both
languages.

--skip leaves out line ranges (1-based, inclusive) of a tutorial that the
port does not cover; examples/README.md lists each with its reason.
"""
import argparse
import io
import re
import sys
import tokenize

GO_EXCLUDE = re.compile(r"^\s*(fmt\.(Print|Fprint)\w*|log\.(Print|Fatal)\w*)\(|time\.(Now|Since)\(")
PY_EXCLUDE = re.compile(r"^\s*(print\(|plt\.|assert\b|.*\ballclose\(|.*\bassert_close\(|.*\bTimer\(|.*timeit|.*perf_counter\(|.*time\.time\(\))")


def balance(s):
    """Net open brackets in s, ignoring strings."""
    s = re.sub(r'"(\\.|[^"\\])*"|\'(\\.|[^\'\\])*\'|`[^`]*`', '""', s)
    return sum(s.count(c) for c in "([{") - sum(s.count(c) for c in ")]}")


def go_code_lines(src):
    """Line number -> code text (comments removed) of a Go file."""
    out = {}
    in_block = False
    in_raw = False
    for n, line in enumerate(src.split("\n"), 1):
        code = []
        i = 0
        while i < len(line):
            if in_block:
                j = line.find("*/", i)
                if j < 0:
                    i = len(line)
                    break
                in_block, i = False, j + 2
                continue
            if in_raw:
                j = line.find("`", i)
                code.append(line[i:j + 1 if j >= 0 else len(line)])
                if j < 0:
                    i = len(line)
                    break
                in_raw, i = False, j + 1
                continue
            c = line[i]
            if line.startswith("//", i):
                break
            if line.startswith("/*", i):
                in_block, i = True, i + 2
                continue
            if c == "`":
                in_raw = True
                code.append(c)
                i += 1
                continue
            if c in "\"'":
                j = i + 1
                while j < len(line) and line[j] != c:
                    j += 2 if line[j] == "\\" else 1
                code.append(line[i:j + 1])
                i = j + 1
                continue
            code.append(c)
            i += 1
        text = "".join(code).strip()
        if text:
            out[n] = text
    return out


def py_code_lines(src):
    """Line number -> code text of a Python file (no comments, no docstrings)."""
    out = {}
    toks = list(tokenize.generate_tokens(io.StringIO(src).readline))
    src_lines = src.split("\n")
    # A comment after code ends the line's code text.
    cut = {t.start[0]: t.start[1] for t in toks if t.type == tokenize.COMMENT}
    prev = tokenize.NEWLINE
    for t in toks:
        if t.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                      tokenize.DEDENT, tokenize.ENDMARKER):
            if t.type in (tokenize.NEWLINE,):
                prev = t.type
            continue
        # A string that is a whole statement is a docstring.
        if t.type == tokenize.STRING and prev in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            nxt = toks[toks.index(t) + 1]
            if nxt.type in (tokenize.NEWLINE, tokenize.ENDMARKER, tokenize.COMMENT):
                prev = None
                continue
        prev = t.type if t.type in (tokenize.INDENT, tokenize.DEDENT) else None
        for n in range(t.start[0], t.end[0] + 1):
            out[n] = src_lines[n - 1][:cut.get(n, len(src_lines[n - 1]))].strip()
    return out


def count(path, skip):
    src = open(path, encoding="utf-8").read()
    go = path.endswith(".go")
    lines = go_code_lines(src) if go else py_code_lines(src)
    exclude = GO_EXCLUDE if go else PY_EXCLUDE
    left = set()
    depth = 0
    for n in sorted(lines):
        if any(a <= n <= b for a, b in skip):
            left.add(n)
            continue
        if depth > 0:
            left.add(n)
            depth += balance(lines[n])
            continue
        if exclude.search(lines[n]):
            left.add(n)
            depth = max(balance(lines[n]), 0)
    counted = {n: t for n, t in lines.items() if n not in left}
    # Imports used only by lines left out.
    body = "\n".join(t for n, t in counted.items())
    for n, t in list(counted.items()):
        if go:
            m = re.fullmatch(r'(?:import\s+)?(\w+\s+)?"([\w./-]+)"', t)
            if m:
                name = (m.group(1) or m.group(2).split("/")[-1]).strip()
                rest = body.replace(t, "")
                if not re.search(r"\b%s\." % re.escape(name), rest):
                    del counted[n]
        else:
            m = re.fullmatch(r"import ([\w.]+)(?: as (\w+))?|from [\w.]+ import (\w+)(?: as (\w+))?", t)
            if m:
                name = m.group(2) or m.group(4) or m.group(3) or m.group(1).split(".")[0]
                rest = body.replace(t, "")
                if not re.search(r"\b%s\b" % re.escape(name), rest):
                    del counted[n]
    return len(counted), sum(len(t) for t in counted.values())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip", action="append", default=[], help="a-b: leave out lines a to b")
    ap.add_argument("--chars", action="store_true",
                    help="count the code characters of the counted lines instead (comments and indentation excluded)")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    skip = [tuple(int(x) for x in s.split("-")) for s in a.skip]
    total = 0
    for f in a.files:
        n = count(f, skip)[1 if a.chars else 0]
        total += n
        if len(a.files) > 1:
            print(f"{n:5d} {f}")
    print(total)


if __name__ == "__main__":
    sys.exit(main())
