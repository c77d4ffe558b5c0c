#!/usr/bin/env python3
"""Lists C++ / CUDA functions whose body is longer than a line limit.

Usage:
  tools/long_functions.py [--max-lines N] [--all] [--check] [PATH ...]

PATHs are files or directories (default: the repository this script is in).
Without --all only production code is read: test code (tests/, any testing/
folder, *_test.*, *_bench.*, *_fuzzer.*) and third_party/ are skipped.

A function's length is the number of lines strictly between the braces of
its body, blank and comment lines included (what clang-tidy's
readability-function-size LineThreshold counts). Lambdas and local classes
count toward the function that holds them; a lambda at namespace scope is
not a function here. A function whose definition is preceded (within three
lines) by a comment containing "long-function:" followed by a reason is
listed as excused with that reason.

Output, one function per line, by file then line:
  path:line: Name is N lines (limit L)
  path:line: Name is N lines (limit L), excused: <reason>
--check exits 1 when an unexcused function is over the limit (else 0).

The parser is a brace scanner, not a compiler: comments, string and character
literals, raw strings and preprocessor lines are blanked first, then every
'{' at namespace or class scope is classified as a function body, a type, a
namespace or an initializer from the text before it. It is exact for the
code of this repository (tools/long_functions_test.py pins the cases).
"""
import argparse
import os
import re
import subprocess
import sys

SOURCE_SUFFIXES = (".cc", ".h", ".cu", ".cuh", ".cpp", ".hpp")
EXCUSE = re.compile(r"long-function:\s*(\S.*)")


def is_production(path):
    """True for production sources (relative path with '/' separators)."""
    parts = path.split("/")
    name = parts[-1]
    if parts[0] in ("tests", "third_party") or "testing" in parts[:-1]:
        return False
    if any(p.startswith("bazel-") or p in ("node_modules", "out") for p in parts):
        return False
    stem = name.rsplit(".", 1)[0]
    return not stem.endswith(("_test", "_bench", "_fuzzer"))


def blank(text):
    """Replaces comments, literals and preprocessor lines by spaces.

    Newlines are kept, so offsets map to the same line numbers.
    """
    out = []
    i, n = 0, len(text)
    line_start = True  # only whitespace since the last newline
    while i < n:
        c = text[i]
        if c == "\n":
            out.append(c)
            line_start = True
            i += 1
            continue
        if line_start and c == "#":
            # A preprocessor line, with backslash continuations.
            j = i
            while j < n and text[j] != "\n":
                if text[j] == "\\" and j + 1 < n and text[j + 1] == "\n":
                    j += 2
                    continue
                j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if not c.isspace():
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
        raw = re.match(r'(?:u8|[uUL])?R"([^()\\ ]{0,16})\(', text[i:i + 24])
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find(")" + raw.group(1) + '"', i + raw.end())
            j = n if end < 0 else end + len(raw.group(1)) + 2
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:j]))
            i = j
            continue
        if c in "\"'":
            # A digit separator (1'000) is not a character literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and \
                    re.match(r"[0-9a-fA-F]", text[i + 1:i + 2] or " "):
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * max(0, j - i - 2) + c)
            i = j
            continue
        out.append(c)
        i += 1
    return "".join(out)


TYPE_HEAD = re.compile(
    r"^(?:template\s*<.*>\s*)?(?:typedef\s+)?(?:class|struct|union|enum)\b", re.S)
NAMESPACE_HEAD = re.compile(
    r'^(?:inline\s+)?namespace\b|^extern\s*"\s*"\s*$|^(?:template\s*<.*>\s*)?concept\b',
    re.S)


def top_level(head):
    """`head` with everything inside (), [] and {} removed."""
    out, depth = [], 0
    for c in head:
        if c in "([{":
            depth += 1
            out.append(c if depth == 1 else "")
        elif c in ")]}":
            depth = max(0, depth - 1)
            out.append(c if depth == 0 else "")
        elif depth == 0:
            out.append(c)
    return "".join(out)


def function_name(head):
    """The declarator name before the parameter list of a function head."""
    op = re.search(r"([\w:]*operator)\s*(\(\)|[^\w\s(]+|\s\w[\w\s:<>*&]*?)\s*\(",
                   head)
    if op:
        return op.group(1) + op.group(2).strip()
    m = re.search(r"(~?\w[\w:~]*)\s*(?:<[^()]*>)?\s*\(\)", top_level(head))
    if not m:
        return "?"
    if m.group(1) in ("TEST", "TEST_F", "TEST_P", "TYPED_TEST"):
        args = re.search(r"\b%s\s*\(([^()]*)\)" % m.group(1), head)
        if args:
            return "%s(%s)" % (m.group(1), " ".join(args.group(1).split()))
    return m.group(1)


ACCESS = re.compile(r"^\s*(?:(?:public|private|protected)\s*:(?!:)\s*)+")
QUALIFIERS = {"const", "override", "final", "noexcept", "mutable", "volatile",
              "try"}


def classify(head, in_init_list, prev_char, prev_word):
    """Kind of the block a '{' opens at namespace / class scope."""
    h = head.strip()
    if NAMESPACE_HEAD.match(h):
        return "namespace"
    if TYPE_HEAD.match(h):
        return "type"
    flat = top_level(h)
    if flat.count("(") > flat.count(")"):
        return "nested_init"  # inside parentheses: a default argument {}
    word_before = prev_char.isalnum() or prev_char in "_>"
    if in_init_list and word_before and prev_word not in QUALIFIERS:
        return "member_init"  # a member's brace initializer: a_{1}
    trailing_return = re.search(r"\)[^()]*->", flat)
    annotation = re.fullmatch(r"[A-Z][A-Z0-9_]+", prev_word)  # a macro
    if not (prev_char in ")}" or prev_word in QUALIFIERS or annotation or
            (word_before and trailing_return)):
        return "init"  # e.g. std::array<int, 2> a{}; or x = {...}
    no_ops = re.sub(r"\boperator\s*[^\w\s(]+\s*\(", "operator(", flat)
    if "(" in flat and not re.search(r"(?<![=!<>])=(?!=)", no_ops):
        return "function"
    return "init"


# Blocks inside which braces are not classified.
NESTED = ("function", "init", "member_init", "nested_init", "inner")


def scan(text):
    """Yields (name, head_line, open_line, close_line) for each function."""
    clean = blank(text)
    line_of = []
    line = 1
    for c in clean:
        line_of.append(line)
        if c == "\n":
            line += 1
    stack = []  # (kind, head_start, open_offset, name)
    head_start = 0
    for i, c in enumerate(clean):
        if c in ";":
            if not any(k in NESTED for k, *_ in stack):
                head_start = i + 1
        elif c == "{":
            if any(k in NESTED for k, *_ in stack):
                stack.append(("inner", head_start, i, None))
                continue
            head = ACCESS.sub("", clean[head_start:i])
            in_init = bool(re.search(r"\)\s*(?:const\s*)?(?:noexcept\s*)?:(?!:)", top_level(head)))
            before = clean[max(0, i - 200):i].rstrip()
            prev_word = re.search(r"\w*$", before).group(0)
            kind = classify(head, in_init, before[-1:], prev_word)
            name = function_name(head) if kind == "function" else None
            stack.append((kind, head_start, i, name))
            if kind in ("namespace", "type"):
                head_start = i + 1
        elif c == "}":
            if not stack:
                head_start = i + 1
                continue
            kind, start, opened, name = stack.pop()
            if kind == "function":
                first = start
                while first < opened and clean[first].isspace():
                    first += 1
                yield name, line_of[first], line_of[opened], line_of[i]
            if kind in ("member_init", "nested_init"):
                continue  # the head it sits in goes on
            if not any(k in NESTED for k, *_ in stack):
                head_start = i + 1


def long_functions(path, text, max_lines):
    lines = text.split("\n")
    for name, head_line, open_line, close_line in scan(text):
        length = max(0, close_line - open_line - 1)
        if length <= max_lines:
            continue
        reason = None
        for ln in range(max(1, head_line - 3), open_line + 1):
            m = EXCUSE.search(lines[ln - 1])
            if m:
                reason = m.group(1).strip()
                break
        yield head_line, name, length, reason


def source_files(roots, repo, include_all):
    files = []
    for root in roots:
        if os.path.isfile(root):
            files.append(root)
            continue
        try:
            listed = subprocess.run(
                ["git", "-C", root, "ls-files", "--cached", "--others",
                 "--exclude-standard"], check=True, capture_output=True,
                text=True).stdout.split("\n")
            files += [os.path.join(root, f) for f in listed if f]
        except (subprocess.CalledProcessError, FileNotFoundError):
            for d, dirs, names in os.walk(root):
                dirs[:] = [x for x in dirs if not x.startswith(("bazel-", "."))]
                files += [os.path.join(d, x) for x in names]
    result = []
    for f in sorted(set(files)):
        if not f.endswith(SOURCE_SUFFIXES) or not os.path.isfile(f):
            continue
        rel = os.path.relpath(f, repo).replace(os.sep, "/")
        if include_all or is_production(rel):
            result.append((f, rel))
    return result


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="*")
    parser.add_argument("--max-lines", type=int, default=80)
    parser.add_argument("--all", action="store_true",
                        help="also test code, benchmarks and third_party/")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when an unexcused function is too long")
    args = parser.parse_args(argv)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    roots = args.paths or [repo]
    unexcused = 0
    for path, rel in source_files(roots, repo, args.all):
        with open(path, errors="replace") as f:
            text = f.read()
        for line, name, length, reason in long_functions(rel, text, args.max_lines):
            note = f", excused: {reason}" if reason else ""
            print(f"{rel}:{line}: {name} is {length} lines (limit {args.max_lines}){note}")
            unexcused += reason is None
    return 1 if args.check and unexcused else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
