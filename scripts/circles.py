#!/usr/bin/env python3
"""File circles inside each crate of the workspace: a file that imports from a second one
which imports back from the first, or a longer cycle. Prints every circle with the names
each file takes from the next, and whether one of its files says why the circle is kept.

    python3 scripts/circles.py            # report; exit 0
    python3 scripts/circles.py --strict   # exit 1 when a circle has no such comment

What counts as an import: a `crate::`, `super::` or `self::` path in non-test code (a `use`
or a path written inline), resolved to the file that defines the name, following the
`pub use` re-exports of lib.rs, main.rs and mod.rs files (module declarations and those
re-exports are the module tree, not imports). A path through another file's `pub use`
stops at that file: it imports from it. Test code is left out: `#[cfg(test)]` modules, inline or in their
own files. A circle is kept on purpose when the comment block at the top of one of its files
says so with the words "file circle" (and why).

The parsing is lexical (comments and string literals removed, brace-matched), which is
enough for the way this workspace writes Rust; it needs only Python 3.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip(text):
    """Source text with comments, strings and char literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:]) and (i == 0 or not re.match(r"\w", text[i - 1])):
            m = re.match(r'r(#*)"', text[i:])
            end = text.find('"' + m.group(1), i + len(m.group(0)))
            j = n if end < 0 else end + 1 + len(m.group(1))
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2 : j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2 : j + 1]))
            i = j + 1
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'\n])'", text[i:])
            if m:
                out.append("' '" + " " * (len(m.group(0)) - 3))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching_brace(code, start):
    """Index just past the brace block that opens at code[start] == '{'."""
    depth = 0
    for j in range(start, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(code)


def drop_test_items(code):
    """`code` without `#[cfg(test)]` items, and the names of test-only `mod x;` files."""
    test_mods = set()
    while True:
        m = re.search(r"#\[cfg\(test\)\]", code)
        if not m:
            return code, test_mods
        rest = code[m.end() :]
        decl = re.match(r"\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*;", rest)
        if decl:
            test_mods.add(decl.group(1))
            end = m.end() + decl.end()
        else:
            brace = rest.find("{")
            semi = rest.find(";")
            if semi >= 0 and (brace < 0 or semi < brace):
                end = m.end() + semi + 1
            else:
                end = matching_brace(code, m.end() + brace)
        code = code[: m.start()] + re.sub(r"[^\n]", " ", code[m.start() : end]) + code[end:]


def expand_use(tree):
    """`a::{b, c::{d, e as f}}` -> ['a::b', 'a::c::d', 'a::c::e']."""
    tree = re.sub(r"\s+as\s+" + IDENT, "", tree)
    tree = re.sub(r"\s+", "", tree)
    m = re.match(r"^(.*?)\{(.*)\}$", tree)
    if not m:
        return [tree]
    prefix, inner = m.group(1), m.group(2)
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    parts.append(cur)
    out = []
    for p in parts:
        if p:
            out += [prefix + q for q in expand_use(p)]
    return out


class Module:
    def __init__(self, path, file, code, raw):
        self.path = path  # tuple of module names from the crate root
        self.file = file
        self.code = code
        self.raw = raw
        self.children = {}  # name -> Module
        self.reexports = {}  # name -> full path (tuple) it re-exports
        self.globs = []  # paths glob re-exported


def load(file, path, modules):
    raw = open(file, encoding="utf-8").read()
    code, test_mods = drop_test_items(strip(raw))
    mod = Module(path, file, code, raw)
    modules.append(mod)
    directory = os.path.dirname(file)
    is_dir_owner = os.path.basename(file) in ("lib.rs", "main.rs", "mod.rs")
    own_dir = directory if is_dir_owner else os.path.join(directory, os.path.basename(file)[:-3])
    for m in re.finditer(
        r'((?:#\[[^\]]*\]\s*)*)(?:pub(?:\([^)]*\))?\s+)?mod\s+(' + IDENT + r')\s*;', code
    ):
        attrs, name = m.group(1), m.group(2)
        if name in test_mods:
            continue
        explicit = re.search(r'#\[path\s*=\s*""', attrs)
        if explicit:  # strings are blanked; read the path from the raw text
            raw_attr = re.search(r'#\[path\s*=\s*"([^"]+)"\]', raw[m.start() : m.end()])
            target = os.path.join(directory, raw_attr.group(1))
        else:
            target = os.path.join(own_dir, name + ".rs")
            if not os.path.exists(target):
                target = os.path.join(own_dir, name, "mod.rs")
        if os.path.exists(target):
            mod.children[name] = load(target, path + (name,), modules)
    return mod


def absolute(mod, segs):
    """A `crate::`/`super::`/`self::` path as segments from the crate root."""
    base = list(mod.path)
    while segs and segs[0] in ("super", "self", "crate"):
        head = segs.pop(0)
        if head == "crate":
            base = []
        elif head == "super":
            base = base[:-1]
    return base + segs


def uses_of(mod):
    """(absolute path, is_reexport) for every crate-relative path in `mod`'s code."""
    found = []
    spans = []
    for m in re.finditer(r"\b(pub(?:\([^)]*\))?\s+)?use\s+([^;]*);", mod.code):
        spans.append((m.start(), m.end()))
        for p in expand_use(m.group(2)):
            segs = [s for s in p.split("::") if s]
            if segs and segs[0] in ("crate", "super", "self"):
                found.append((absolute(mod, segs), bool(m.group(1))))
    code = mod.code
    for a, b in spans:
        code = code[:a] + " " * (b - a) + code[b:]
    for m in re.finditer(r"\b(?:crate|super|self)(?:::(?:" + IDENT + r"|\*))+", code):
        segs = m.group(0).split("::")
        found.append((absolute(mod, segs), False))
    return found


def is_facade(mod):
    """lib.rs, main.rs and mod.rs: their `pub use`s are the module tree's front, followed
    through to the defining file. A `pub use` in any other file is that file's own import
    (and its importers depend on it)."""
    return os.path.basename(mod.file) in ("lib.rs", "main.rs", "mod.rs")


def resolve(root, segs, depth=0):
    """The module (file) that defines the item named by `segs`."""
    mod = root
    i = 0
    while i < len(segs) and segs[i] in mod.children:
        mod = mod.children[segs[i]]
        i += 1
    if i < len(segs) and depth < 8 and segs[i] in mod.reexports:
        return resolve(root, list(mod.reexports[segs[i]]) + segs[i + 1 :], depth + 1)
    return mod


def commented(mod):
    head = []
    for line in mod.raw.splitlines():
        s = line.strip()
        if s.startswith("//") or s.startswith("#![") or not s:
            head.append(s)
        else:
            break
    return "file circle" in " ".join(head).lower()


def circles(crate_dir):
    src = os.path.join(crate_dir, "src")
    roots = [os.path.join(src, r) for r in ("lib.rs", "main.rs") if os.path.exists(os.path.join(src, r))]
    found = []
    for root_file in roots:
        modules = []
        root = load(root_file, (), modules)
        for mod in modules:
            if not is_facade(mod):
                continue
            for segs, is_reexport in uses_of(mod):
                if is_reexport and segs:
                    if segs[-1] == "*":
                        mod.globs.append(tuple(segs[:-1]))
                    else:
                        mod.reexports[segs[-1]] = tuple(segs)
        edges = {}
        for mod in modules:
            for segs, is_reexport in uses_of(mod):
                if is_reexport and is_facade(mod):
                    continue
                target = resolve(root, [s for s in segs if s != "*"])
                if target is mod:
                    continue
                # A parent's use of its own child module is ordinary; a child naming an
                # item of its parent (or the crate root) is an edge like any other.
                name = segs[-1] if segs else ""
                edges.setdefault(mod.file, {}).setdefault(target.file, set()).add(name)
        found += scc_cycles(edges, {m.file: m for m in modules})
    return found


def scc_cycles(edges, by_file):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in list(edges):
        if v not in index:
            visit(v)
    result = []
    for comp in out:
        inner = []
        for a in comp:
            for b in comp:
                if b in edges.get(a, {}):
                    inner.append((a, b, sorted(edges[a][b])))
        kept = [f for f in comp if commented(by_file[f])]
        result.append((comp, inner, kept))
    return result


def main():
    strict = "--strict" in sys.argv[1:]
    crates_dir = os.path.join(ROOT, "crates")
    total = uncommented = 0
    for crate in sorted(os.listdir(crates_dir)):
        path = os.path.join(crates_dir, crate)
        if not os.path.isdir(os.path.join(path, "src")):
            continue
        for comp, inner, kept in circles(path):
            total += 1
            rel = lambda f: os.path.relpath(f, os.path.join(path, "src"))
            status = "kept: commented in " + ", ".join(map(rel, kept)) if kept else "NOT COMMENTED"
            uncommented += not kept
            print(f"{crate}: {' <-> '.join(rel(f) for f in comp)}  ({status})")
            for a, b, names in inner:
                print(f"    {rel(a)} -> {rel(b)}: {', '.join(names)}")
    print(f"{total} file circle(s), {uncommented} without a comment saying why")
    return 1 if strict and uncommented else 0


if __name__ == "__main__":
    sys.exit(main())
