#!/usr/bin/env python3
"""Functions of 100 lines or more in the crates' sources (tests left out), longest first: the
count issue 51 tracks ("functions that fit on a screen"). A function runs from its `fn` line to
its closing brace, braces in strings, characters and comments not counted.

    python3 tools/fn_lengths.py [--min N] [--max K]

With `--max K` it exits 1 when more than K functions are that long: ./run-tests runs it with
`--max 10` (issue 51's bound), so that a new long function is split, or an old one shortened,
before it lands.
"""

import argparse
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
FN = re.compile(r"\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)")
# Strings (raw or not), character literals and comments, replaced by blanks before counting.
LITERAL = re.compile(
    r'r(#*)"(?:.|\n)*?"\1'      # raw strings
    r'|"(?:\\[\s\S]|[^"\\])*"'   # strings (an escape may end a line)
    r"|'(?:\\[^\n]+?|[^\\'\n])'"  # characters ('{', '\u{7b}'; not a lifetime 'a)
    r"|//[^\n]*"                 # line comments
    r"|/\*(?:.|\n)*?\*/"         # block comments
)


def blank(text):
    """The text with literals and comments turned to spaces, lines kept."""
    return LITERAL.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def functions(path):
    text = path.read_text()
    code = blank(text).split("\n")
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if re.match(r"\s*#\[cfg\(test\)\]", lines[i]):
            return
        m = FN.match(code[i])
        if not m:
            i += 1
            continue
        depth, started, j = 0, False, i
        while j < len(code):
            depth += code[j].count("{") - code[j].count("}")
            started = started or "{" in code[j]
            if started and depth == 0:
                break
            if not started and code[j].rstrip().endswith(";"):
                break
            j += 1
        if started:
            yield j - i + 1, str(path.relative_to(ROOT)), m.group(6), i + 1
            i = j + 1
        else:
            i += 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--min", type=int, default=100)
    parser.add_argument("--max", type=int, default=None)
    args = parser.parse_args()
    found = sorted(
        (f for p in sorted(ROOT.glob("crates/*/src/**/*.rs")) for f in functions(p)),
        reverse=True,
    )
    long = [f for f in found if f[0] >= args.min]
    print(f"{len(long)} functions of {args.min}+ lines (of {len(found)})")
    for lines, path, name, line in long:
        print(f"{lines:5d}  {path}:{line}  {name}")
    if args.max is not None and len(long) > args.max:
        print(f"more than {args.max}: split the new one by the concepts it holds")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
