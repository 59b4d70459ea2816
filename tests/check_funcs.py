#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""No function over MAX lines without a comment saying why.

    tests/check_funcs.py [--max N] FILE...

A function is a definition starting at column 0 (the house style: the
return type and name on one line or two, the opening brace alone on a
line at column 0, the closing brace at column 0).  Its length is the
lines from its opening to its closing brace.  A function longer than
MAX (80) must have, in the comment right above it, the words "80 lines"
and why.  Prints each offender as FILE:LINE: NAME is N lines, and exits
1 if there is one.
"""
import re
import sys


def functions(lines):
    """(name, line of the name, comment above it, length) of each function."""
    for i, line in enumerate(lines):
        if line.rstrip("\n") != "{":
            continue
        # The signature: the lines above the brace, up to a blank line,
        # a directive, or the end of a comment, declaration or block.
        j = i
        while j > 0 and lines[j - 1].strip() and not lines[j - 1].startswith("#") \
                and not lines[j - 1].rstrip().endswith((";", "}", "*/")):
            j -= 1
        sig = "".join(lines[j:i])
        m = re.search(r"(\w+)\s*\(", sig)
        if not m:
            continue
        k = i + 1
        while k < len(lines) and lines[k].rstrip("\n") != "}":
            k += 1
        yield m.group(1), j + 1, comment_above(lines, j), k - i + 1


def comment_above(lines, start):
    """The text of the comment block ending right above line start."""
    j = start - 1
    if j < 0:
        return ""
    if lines[j].rstrip().endswith("*/"):
        k = j
        while k >= 0 and "/*" not in lines[k]:
            k -= 1
        return " ".join(l.strip(" /*\n") for l in lines[max(k, 0):j + 1])
    text = []
    while j >= 0 and lines[j].lstrip().startswith("//"):
        text.insert(0, lines[j].strip(" /\n"))
        j -= 1
    return " ".join(text)


def main():
    args = sys.argv[1:]
    limit = 80
    if args[:1] == ["--max"]:
        limit = int(args[1])
        args = args[2:]
    bad = 0
    for path in args:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
        for name, line, why, length in functions(lines):
            if length > limit and f"{limit} lines" not in re.sub(r"\s+", " ", why):
                print(f"{path}:{line}: {name} is {length} lines, with no comment saying why (\"... {limit} lines ...\")")
                bad += 1
    if bad:
        print(f"{bad} function(s) over {limit} lines without a reason", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
