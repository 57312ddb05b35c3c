#!/usr/bin/env python3
"""Find circles of imports between source files inside each crate of the workspace.

Two files of one crate are in a circle when each reaches the other by following
imports: A uses something of B, B (directly or through other files) uses something
of A.  Such circles make a crate hard to split and its files hard to understand in
isolation, so this script lists them, with one concrete cycle per circle and the
line that creates each step of it.

Which files: every `.rs` file under `src/` of each workspace member listed in
`members = [...]` of the root Cargo.toml (`vendor/` is ignored; `tests/`, `benches/`
and `examples/` are not scanned).  `src/bin/` is skipped: each binary there is its
own crate root and cannot import library files through `crate::`.  When a crate has
both `src/lib.rs` and `src/main.rs`, `lib.rs` is the root `crate` and `main.rs` is
treated as a separate binary root that owns no other file (a warning is printed if
it declares `mod` children, which this script does not model).

Files map to module paths by location: `src/lib.rs`/`src/main.rs` is `crate`,
`src/foo.rs` or `src/foo/mod.rs` is `crate::foo`, `src/foo/bar.rs` is
`crate::foo::bar`.  A file declared only under `#[cfg(test)]` (`#[cfg(test)] mod
tests;`) is test code: it and the files below it are left out.

How imports are read: each file is tokenised (so comments, doc comments, string,
char and raw-string literals never count), then every item or statement carrying
`#[cfg(test)]` (or `#[cfg(all(test, ...))]`) is removed by brace matching -- test
modules that `use super::*` do not count.  What remains is scanned for paths:

  * `use` trees, with groups, `self` inside groups, renames and globs:
    `use crate::{a::X, b::{c::Y, Z}}`, `use super::{self, foo, bar::Baz}`;
  * paths anywhere else (types, expressions, macros, `impl` headers) starting with
    `crate::`, `$crate::`, `self::` or `super::` (repeated `super::super::` too);
  * 2018-style relative paths starting with the name of a child module the file
    declares (`mod observed;` ... `pub use observed::Observed;`) or with a name the
    file brought in with `use` (`use crate::clusters;` ... `clusters::observed::f()`).

Inline modules (`mod codes { ... }`) are tracked, so `super::` inside them means the
file's own module.  `pub(in crate::x)` visibilities and `mod foo;` declarations are
not imports and are ignored.  A path is resolved to the longest prefix of it that is
a module file: `crate::clusters::observed::by_set` -> the file of
`crate::clusters::observed`; `crate::clusters::Observations` -> `clusters/mod.rs`
(or `clusters.rs`); `crate::Error` -> `lib.rs`.  Re-exports are not followed: a
file that writes `crate::X` depends on `lib.rs`.  A module's face is not an import: a
file re-exporting what its own descendants define (`mod state; pub use state::X;` in
`lib.rs` or a `mod.rs`) gets no edge for that line; any other use of a child (calling
`audit::routes()` from `lib.rs`) is an edge.  Self-edges are dropped.

Circles are the strongly connected components (iterative Tarjan) with more than one
file.  For each, the shortest cycle through its first file (by path) is found by BFS
inside the component and printed with the `file:line  path` behind each step.

Floors: for the crates listed in FLOORS (today `api`), files are sorted into floors
(what every request shares; one room per dialect; the top that puts them together), and
an import from a lower floor to a higher one is reported and fails the run like a circle.

Known circles: `scripts/import-cycles.allow` lists circles not yet broken, each by its exact
files; such a circle is reported as known and does not fail the run, any other circle does
(and so does an allowance that no longer matches a circle, so that the list only shrinks).

Usage:
  scripts/import-cycles.py                 # all crates; exit 1 if any circle
  scripts/import-cycles.py --crate api     # one crate (directory or package name)
  scripts/import-cycles.py --edges api/src/state.rs
                                           # every import edge out of and into a file

Not resolved: paths hidden in strings (`#[serde(with = "crate::x")]`), paths inside
glob-imported names (`use super::*;` then `sibling::f()`), `#[path = ...]`
attributes, `include!`, paths built by macros from fragments, and `use`
declarations' block scoping (a `use` inside a function counts for the whole file).
`#[cfg(...)]` other than `test` is ignored: such code counts.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import signal
import sys
from collections import deque

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# --------------------------------------------------------------------------------------
# Workspace and files


def workspace_members(root: str) -> list[str]:
    with open(os.path.join(root, "Cargo.toml"), encoding="utf-8") as f:
        text = f.read()
    section = re.search(r"^\[workspace\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    body = section.group(1) if section else text
    m = re.search(r"^\s*members\s*=\s*\[(.*?)\]", body, re.M | re.S)
    if not m:
        return []
    listing = re.sub(r"#[^\n]*", "", m.group(1))
    members: list[str] = []
    for pattern in re.findall(r'"([^"]*)"', listing):
        for path in sorted(glob.glob(os.path.join(root, pattern))) or []:
            rel = os.path.relpath(path, root)
            if rel.split(os.sep)[0] == "vendor" or not os.path.isdir(path):
                continue
            if rel not in members:
                members.append(rel)
    return members


def package_name(root: str, member: str) -> str:
    try:
        with open(os.path.join(root, member, "Cargo.toml"), encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return member
    m = re.search(r"^\[package\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    if m:
        n = re.search(r'^\s*name\s*=\s*"([^"]+)"', m.group(1), re.M)
        if n:
            return n.group(1)
    return member


def module_path_of(rel_in_src: str) -> tuple[str, ...]:
    """`foo/bar.rs` -> ('foo', 'bar'); `foo/mod.rs` -> ('foo',); `lib.rs` -> ()."""
    parts = rel_in_src.replace(os.sep, "/")[:-3].split("/")
    if parts[-1] == "mod" or (len(parts) == 1 and parts[0] in ("lib", "main")):
        parts = parts[:-1]
    return tuple(parts)


# --------------------------------------------------------------------------------------
# Tokeniser: identifiers, lifetimes, `::`, single punctuation; no comments or literals.

IDENT_RE = re.compile(r"(?:r#)?[A-Za-z_][A-Za-z0-9_]*")
NUMBER_RE = re.compile(r"[0-9][0-9A-Za-z_]*(?:\.[0-9][0-9A-Za-z_]*)?")
RAW_STR_RE = re.compile(r'(?:br|cr|r)(#*)"')
PREFIXED_STR_RE = re.compile(r'(?:b|c)"')
LIFETIME_RE = re.compile(r"'[A-Za-z_][A-Za-z0-9_]*")


class Tok:
    __slots__ = ("text", "line")

    def __init__(self, text: str, line: int):
        self.text = text
        self.line = line

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"{self.text}@{self.line}"


def tokenize(src: str) -> list[Tok]:
    toks: list[Tok] = []
    i, n, line = 0, len(src), 1

    def skip_quoted(j: int, quote: str) -> int:
        """j is just past the opening quote; return index just past the closing one."""
        nonlocal line
        while j < n:
            c = src[j]
            if c == "\\":
                if j + 1 < n and src[j + 1] == "\n":
                    line += 1
                j += 2
                continue
            if c == "\n":
                line += 1
            elif c == quote:
                return j + 1
            j += 1
        return n

    while i < n:
        c = src[i]
        if c == "\n":
            line += 1
            i += 1
        elif c in " \t\r\f\v":
            i += 1
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if src.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif src.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    if src[i] == "\n":
                        line += 1
                    i += 1
        elif c == '"':
            i = skip_quoted(i + 1, '"')
        elif c in "brc" and (m := RAW_STR_RE.match(src, i)):
            closing = '"' + m.group(1)
            j = src.find(closing, m.end())
            j = n if j < 0 else j + len(closing)
            line += src.count("\n", i, j)
            i = j
        elif c in "bc" and PREFIXED_STR_RE.match(src, i):
            i = skip_quoted(i + 2, '"')
        elif c == "b" and src.startswith("b'", i):
            i = skip_quoted(i + 2, "'")
        elif c == "'":
            # Char literal ('a', '\n', '\u{1F}', '"') or lifetime/label ('a, 'static).
            if i + 1 < n and src[i + 1] == "\\":
                i = skip_quoted(i + 1, "'")
            elif i + 2 < n and src[i + 2] == "'":
                if src[i + 1] == "\n":
                    line += 1
                i += 3
            elif m := LIFETIME_RE.match(src, i):
                toks.append(Tok(m.group(0), line))
                i = m.end()
            else:
                i += 1
        elif c.isalpha() or c == "_":
            m = IDENT_RE.match(src, i)
            if m:
                word = m.group(0)
                if word.startswith("r#"):
                    word = word[2:]
                toks.append(Tok(word, line))
                i = m.end()
            else:  # non-ASCII letter: skip it
                i += 1
        elif c.isdigit():
            m = NUMBER_RE.match(src, i)
            i = m.end() if m else i + 1
        elif c == ":" and src.startswith("::", i):
            toks.append(Tok("::", line))
            i += 2
        elif c == "$" and src.startswith("$crate", i) and not (
            i + 6 < n and (src[i + 6].isalnum() or src[i + 6] == "_")
        ):
            toks.append(Tok("crate", line))
            i += 6
        else:
            toks.append(Tok(c, line))
            i += 1
    return toks


# --------------------------------------------------------------------------------------
# cfg(test) removal

OPEN, CLOSE = {"(": ")", "[": "]", "{": "}"}, {")", "]", "}"}


def match_close(toks: list[Tok], i: int) -> int:
    """toks[i] is an opening bracket; return the index of its matching close."""
    depth = 0
    for j in range(i, len(toks)):
        t = toks[j].text
        if t in OPEN:
            depth += 1
        elif t in CLOSE:
            depth -= 1
            if depth == 0:
                return j
    return len(toks) - 1


def is_test_cfg(pred: list[str]) -> bool:
    if pred == ["test"]:
        return True
    if pred[:2] == ["all", "("]:
        depth = 0
        for t in pred[1:]:
            if t == "(":
                depth += 1
            elif t == ")":
                depth -= 1
            elif t == "test" and depth == 1:
                return True
    return False


def cfg_test_attr(toks: list[Tok], i: int) -> int:
    """If toks[i:] starts `#[cfg(<test>)]` or `#![cfg(<test>)]`, return the index
    after it (negated for the inner form); else 0."""
    j = i + 1
    inner = j < len(toks) and toks[j].text == "!"
    if inner:
        j += 1
    if not (
        j + 2 < len(toks)
        and toks[j].text == "["
        and toks[j + 1].text == "cfg"
        and toks[j + 2].text == "("
    ):
        return 0
    close = match_close(toks, j + 2)
    if not is_test_cfg([t.text for t in toks[j + 3 : close]]):
        return 0
    end = close + 2  # past `)` `]`
    return -end if inner else end


def strip_test_code(toks: list[Tok]) -> tuple[list[Tok], set[str], bool]:
    """Drop items/statements under `#[cfg(test)]`.  Returns the remaining tokens, the
    names of `#[cfg(test)] mod name;` file children, and whether the whole file is
    `#![cfg(test)]`."""
    out: list[Tok] = []
    test_children: set[str] = set()
    i, n = 0, len(toks)
    while i < n:
        if toks[i].text != "#":
            out.append(toks[i])
            i += 1
            continue
        after = cfg_test_attr(toks, i)
        if after < 0:
            return [], set(), True
        if after == 0:
            out.append(toks[i])
            i += 1
            continue
        j = after
        while j < n and toks[j].text == "#" and j + 1 < n and toks[j + 1].text == "[":
            j = match_close(toks, j + 1) + 1  # further outer attributes
        start = j
        while j < n:
            t = toks[j].text
            if t in ("(", "["):
                j = match_close(toks, j) + 1
            elif t == "{":
                j = match_close(toks, j) + 1
                break
            elif t in (";", ",") or t in CLOSE:
                if t == ";":
                    j += 1
                break  # `,`/closer: attribute on a field, arm or argument
            else:
                j += 1
        item = [t.text for t in toks[start:j]]
        k = skip_visibility(item, 0)
        if item[k : k + 1] == ["mod"] and len(item) > k + 2 and item[k + 2] == ";":
            test_children.add(item[k + 1])
        i = j
    return out, test_children, False


def skip_visibility(texts: list[str], k: int) -> int:
    if k < len(texts) and texts[k] == "pub":
        k += 1
        if k < len(texts) and texts[k] == "(":
            depth = 0
            while k < len(texts):
                if texts[k] == "(":
                    depth += 1
                elif texts[k] == ")":
                    depth -= 1
                    if depth == 0:
                        return k + 1
                k += 1
    return k


# --------------------------------------------------------------------------------------
# Per-file scanning


class Ref:
    """One path reference: absolute-or-relative segments plus where it was written."""

    __slots__ = ("scope", "segs", "line", "text", "kind", "alias")

    def __init__(self, scope, segs, line, text, kind, alias=None):
        self.scope = scope  # module path of the (inline) module it is written in
        self.segs = segs  # list of segments as written (may start with crate/super/self)
        self.line = line
        self.text = text
        self.kind = kind  # "use" or "path"
        self.alias = alias  # name bound by a `use` leaf, if any


def parse_use_tree(toks, i, prefix, prefix_text, out, stop):
    """Parse a use tree at toks[i]; append (segs, text, line, alias, glob) leaves.
    Returns the index after the tree."""
    segs, texts = list(prefix), list(prefix_text)
    line = toks[i].line if i < stop else 0
    if i < stop and toks[i].text == "::":  # `use ::extern_crate::...`
        segs.append("::")
        texts.append("")
        i += 1
    while i < stop:
        t = toks[i].text
        if t == "{":
            i += 1
            while i < stop and toks[i].text != "}":
                if toks[i].text == ",":
                    i += 1
                    continue
                i = parse_use_tree(toks, i, segs, texts, out, stop)
            return i + 1
        if t == "*":
            out.append((segs, "::".join(texts + ["*"]), toks[i].line, None, True))
            return i + 1
        segs.append(t)
        texts.append(t)
        line = toks[i].line
        i += 1
        if i < stop and toks[i].text == "::":
            i += 1
            continue
        alias = None
        if i + 1 < stop and toks[i].text == "as":
            alias = toks[i + 1].text
            i += 2
        if segs[-1] == "self":  # `use a::{self}` means `a`
            segs = segs[:-1]
            if alias is None and segs:
                alias = segs[-1]
        elif alias is None:
            alias = segs[-1]
        text = "::".join(texts)
        if text.endswith("::self"):
            text = text[: -len("self")] + "{self}"
        out.append((segs, text, line, alias, False))
        return i
    return i


def scan_file(toks: list[Tok], modpath: tuple[str, ...]):
    """Return (refs, declared_children) for one file's (test-stripped) tokens."""
    refs: list[Ref] = []
    children: set[str] = set()
    scope_stack: list[tuple[int, tuple[str, ...]]] = []  # (brace depth, scope path)
    scope = modpath
    depth = 0
    n = len(toks)
    i = 0
    while i < n:
        t = toks[i].text
        if t == "{":
            depth += 1
            i += 1
            continue
        if t == "}":
            if scope_stack and scope_stack[-1][0] == depth:
                scope_stack.pop()
                scope = scope_stack[-1][1] if scope_stack else modpath
            depth -= 1
            i += 1
            continue
        prev = toks[i - 1].text if i else ""
        if t == "mod" and i + 2 < n and prev not in ("::", "."):
            name, nxt = toks[i + 1].text, toks[i + 2].text
            if nxt == ";":
                if scope == modpath:
                    children.add(name)
                i += 3
                continue
            if nxt == "{":
                depth += 1
                scope = scope + (name,)
                scope_stack.append((depth, scope))
                i += 3
                continue
        if t == "pub" and i + 2 < n and toks[i + 1].text == "(" and toks[i + 2].text == "in":
            i = match_close(toks, i + 1) + 1  # `pub(in crate::x)` is not an import
            continue
        if t == "use" and prev not in ("::", "."):
            stop = i + 1
            while stop < n and toks[stop].text != ";":
                stop += 1
            leaves: list = []
            j = i + 1
            while j < stop:
                j = parse_use_tree(toks, j, [], [], leaves, stop)
                while j < stop and toks[j].text == ",":
                    j += 1
            kind = "pub use" if prev == ")" or prev == "pub" else "use"
            for segs, text, line, alias, is_glob in leaves:
                if segs and segs[0] != "::":
                    refs.append(Ref(scope, segs, line, text, kind, None if is_glob else alias))
            i = stop + 1
            continue
        if (
            i + 2 < n
            and toks[i + 1].text == "::"
            and prev not in ("::", ".", "'")
            and (IDENT_RE.fullmatch(t) is not None)
        ):
            segs = [t]
            j = i + 1
            while j + 1 < n and toks[j].text == "::" and IDENT_RE.fullmatch(toks[j + 1].text):
                segs.append(toks[j + 1].text)
                j += 2
            refs.append(Ref(scope, segs, toks[i].line, "::".join(segs), "path"))
            i = j
            continue
        i += 1
    return refs, children


# --------------------------------------------------------------------------------------
# Crate graph


class FileInfo:
    __slots__ = ("rel", "modpath", "toks", "children", "test_children", "whole_test", "refs")


class Crate:
    def __init__(self, root: str, member: str):
        self.member = member
        self.package = package_name(root, member)
        self.files: dict[str, FileInfo] = {}  # rel path -> info
        self.modules: dict[tuple[str, ...], str] = {}  # module path -> rel path
        self.excluded: list[str] = []  # test-only files
        self.warnings: list[str] = []
        self.edges: dict[str, dict[str, list[tuple[int, str, str]]]] = {}
        self.bin_roots: list[str] = []
        self._load(root)
        self._build()

    def _load(self, root: str) -> None:
        src = os.path.join(root, self.member, "src")
        paths = []
        for dirpath, dirnames, filenames in os.walk(src):
            dirnames.sort()
            rel_dir = os.path.relpath(dirpath, src)
            if rel_dir == "bin" or rel_dir.startswith("bin" + os.sep):
                dirnames[:] = []
                continue
            for fn in sorted(filenames):
                if fn.endswith(".rs"):
                    paths.append(os.path.relpath(os.path.join(dirpath, fn), src))
        has_lib = "lib.rs" in paths
        for p in paths:
            info = FileInfo()
            info.rel = os.path.join(self.member, "src", p).replace(os.sep, "/")
            info.modpath = module_path_of(p)
            with open(os.path.join(src, p), encoding="utf-8", errors="replace") as f:
                toks = tokenize(f.read())
            info.toks, info.test_children, info.whole_test = strip_test_code(toks)
            self.files[info.rel] = info
            if p == "main.rs" and has_lib:
                self.bin_roots.append(info.rel)  # separate binary crate root
                continue
            if info.modpath in self.modules:
                self.warnings.append(
                    f"{info.rel} and {self.modules[info.modpath]} both claim module "
                    f"{'::'.join(('crate',) + info.modpath)}"
                )
                continue
            self.modules[info.modpath] = info.rel
        # Drop test-only files (`#[cfg(test)] mod x;` or `#![cfg(test)]`) and those below.
        test_prefixes = set()
        for info in self.files.values():
            if info.whole_test and info.rel not in self.bin_roots:
                test_prefixes.add(info.modpath)
            for child in info.test_children:
                if info.rel not in self.bin_roots:
                    test_prefixes.add(info.modpath + (child,))
        for mp in list(self.modules):
            if any(mp[: len(tp)] == tp for tp in test_prefixes):
                rel = self.modules.pop(mp)
                self.excluded.append(rel)
                del self.files[rel]

    def resolve(self, info: FileInfo, ref: Ref, aliases: dict) -> tuple[str, ...] | None:
        """Absolute module path of ref (not yet shortened to a file), or None."""
        segs = ref.segs
        first = segs[0]
        if first == "crate":
            return tuple(segs[1:])
        if first in ("super", "self"):
            base = list(ref.scope)
            k = 0
            if segs[0] == "self":
                k = 1
            while k < len(segs) and segs[k] == "super":
                if not base:
                    return None
                base.pop()
                k += 1
            return tuple(base) + tuple(segs[k:])
        scope_child = ref.scope + (first,)
        if ref.scope == info.modpath and first in info.children and scope_child in self.modules:
            return scope_child + tuple(segs[1:])
        if first in aliases:
            return aliases[first] + tuple(segs[1:])
        return None

    def file_of(self, abspath: tuple[str, ...]) -> str | None:
        for k in range(len(abspath), -1, -1):
            rel = self.modules.get(abspath[:k])
            if rel is not None:
                return rel
        return None

    def _build(self) -> None:
        for info in self.files.values():
            refs, children = scan_file(info.toks, info.modpath)
            info.refs, info.children = refs, children
            if info.rel in self.bin_roots and children:
                self.warnings.append(
                    f"{info.rel} is a binary root next to lib.rs and declares modules "
                    f"({', '.join(sorted(children))}); they are not modelled"
                )
            info.toks = None  # free memory
        for info in self.files.values():
            out: dict[str, list[tuple[int, str, str]]] = {}
            self.edges[info.rel] = out
            if info.rel in self.bin_roots:
                continue
            # Names bound by `use` at file level, resolved in passes (aliases of aliases).
            aliases: dict[str, tuple[str, ...]] = {}
            for _ in range(3):
                for ref in info.refs:
                    if ref.kind != "path" and ref.alias and ref.alias != "_":
                        ab = self.resolve(info, ref, aliases)
                        if ab is not None:
                            aliases.setdefault(ref.alias, ab)
            for ref in info.refs:
                ab = self.resolve(info, ref, aliases)
                if ab is None:
                    continue
                target = self.file_of(ab)
                if target is None or target == info.rel:
                    continue
                if ref.kind == "pub use" and ab[: len(info.modpath)] == tuple(info.modpath):
                    # A module's face: its file re-exports what its own children define
                    # (`mod x; pub use x::Y;`). That is the parent presenting its rooms, not
                    # the parent depending on a child's work.
                    continue
                shown = ref.text if ref.kind == "path" else f"{ref.kind} {ref.text}"
                out.setdefault(target, []).append((ref.line, shown, ref.kind))

    # ----------------------------------------------------------------------------------

    def sccs(self) -> list[list[str]]:
        """Iterative Tarjan; returns components with more than one file."""
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        on_stack: set[str] = set()
        stack: list[str] = []
        result: list[list[str]] = []
        counter = 0
        nodes = sorted(self.edges)
        for root in nodes:
            if root in index:
                continue
            work = [(root, iter(sorted(self.edges[root])))]
            index[root] = low[root] = counter
            counter += 1
            stack.append(root)
            on_stack.add(root)
            while work:
                v, it = work[-1]
                advanced = False
                for w in it:
                    if w not in self.edges:
                        continue
                    if w not in index:
                        index[w] = low[w] = counter
                        counter += 1
                        stack.append(w)
                        on_stack.add(w)
                        work.append((w, iter(sorted(self.edges[w]))))
                        advanced = True
                        break
                    if w in on_stack:
                        low[v] = min(low[v], index[w])
                if advanced:
                    continue
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        result.append(sorted(comp))
        result.sort(key=lambda c: (-len(c), c))
        return result

    def shortest_cycle(self, comp: list[str]) -> list[str]:
        members = set(comp)
        start = comp[0]
        parent: dict[str, str | None] = {start: None}
        queue = deque([start])
        while queue:
            v = queue.popleft()
            for w in sorted(self.edges[v]):
                if w not in members:
                    continue
                if w == start:
                    path = [v]
                    while parent[path[-1]] is not None:
                        path.append(parent[path[-1]])
                    path.reverse()
                    return path + [start]
                if w not in parent:
                    parent[w] = v
                    queue.append(w)
        return [start]


# --------------------------------------------------------------------------------------


def site(crate: Crate, a: str, b: str) -> str:
    line, text, _ = crate.edges[a][b][0]
    more = len(crate.edges[a][b]) - 1
    extra = f"  (+{more} more)" if more else ""
    return f"{a}:{line}  {text}{extra}"


def print_edges(crates: list[Crate], rel: str) -> int:
    rel = os.path.relpath(os.path.abspath(rel), ROOT) if os.path.exists(rel) else rel
    rel = rel.replace(os.sep, "/")
    for crate in crates:
        if rel not in crate.edges:
            continue
        out = crate.edges[rel]
        print(f"{rel} ({crate.member}): {len(out)} files imported")
        for target in sorted(out):
            print(f"  -> {target}")
            for line, text, _ in out[target]:
                print(f"       {rel}:{line}  {text}")
        incoming = sorted(a for a, outs in crate.edges.items() if rel in outs)
        print(f"{rel}: imported by {len(incoming)} files")
        for a in incoming:
            print(f"  <- {a}")
            for line, text, _ in crate.edges[a][rel]:
                print(f"       {a}:{line}  {text}")
        comp = next((c for c in crate.sccs() if rel in c), None)
        if comp:
            print(f"{rel} is in a circle of {len(comp)} files")
        return 0
    print(f"import-cycles: {rel} is not a scanned source file", file=sys.stderr)
    return 2


# Floors of a crate, lowest first: a file may import files of its own floor or below, never
# above. A path ending in `/` names a directory (a room). Files not listed are not checked.
FLOORS: dict[str, list[tuple[str, list[str]]]] = {
    "api": [
        # What every request shares, and the layers every dialect passes through.
        ("shared", ["agents.rs", "audit.rs", "auth.rs", "core.rs", "error.rs", "guard.rs",
                    "http_metrics.rs", "idempotency.rs"]),
        # One room per dialect.
        ("dialects", ["axebow/", "boskos/", "claimer.rs", "kube/", "ops/"]),
        # The rooms put together.
        ("top", ["state.rs", "lib.rs"]),
    ],
}


def floor_of(crate, rel: str) -> int | None:
    inside = rel.split("/src/", 1)[-1]
    for level, (_, entries) in enumerate(FLOORS.get(crate.member, [])):
        for entry in entries:
            if inside == entry or (entry.endswith("/") and inside.startswith(entry)):
                return level
    return None


def upward_imports(crate) -> list[str]:
    """Imports from a lower floor to a higher one, as `file -> file (line: path)`."""
    found = []
    floors = FLOORS.get(crate.member, [])
    for src, targets in sorted(crate.edges.items()):
        low = floor_of(crate, src)
        if low is None:
            continue
        for dst, sites in sorted(targets.items()):
            high = floor_of(crate, dst)
            if high is not None and high > low:
                line, text, _ = sites[0]
                found.append(
                    f"{src} ({floors[low][0]}) imports {dst} ({floors[high][0]}): "
                    f"{src}:{line}  {text}"
                )
    return found


def read_allowed(path: str) -> set[frozenset[str]]:
    """Circles known and not yet broken: one per line, its files separated by spaces (paths
    from the workspace root); `#` starts a comment. Only a circle of exactly those files is
    let through: one that grows, shrinks or is new fails the run."""
    allowed: set[frozenset[str]] = set()
    if not os.path.exists(path):
        return allowed
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                allowed.add(frozenset(line.split()))
    return allowed


def main() -> int:
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet under `| head`
    ap = argparse.ArgumentParser(description="Find circles of imports between files of each crate.")
    ap.add_argument("--crate", help="only this crate (member directory or package name)")
    ap.add_argument("--edges", metavar="FILE", help="print every import edge out of and into FILE")
    args = ap.parse_args()

    members = workspace_members(ROOT)
    crates = []
    for member in members:
        if not os.path.isdir(os.path.join(ROOT, member, "src")):
            continue
        crates.append(Crate(ROOT, member))
    if args.crate:
        crates = [c for c in crates if args.crate in (c.member, c.package)]
        if not crates:
            print(f"import-cycles: no workspace crate named {args.crate}", file=sys.stderr)
            return 2
    for c in crates:
        for w in c.warnings:
            print(f"warning: {w}", file=sys.stderr)

    if args.edges:
        return print_edges(crates, args.edges)

    allowed = read_allowed(os.path.join(ROOT, "scripts", "import-cycles.allow"))
    seen_allowed: set[frozenset[str]] = set()
    total = 0
    known = 0
    for crate in crates:
        comps = crate.sccs()
        if not comps:
            continue
        noun = "circle" if len(comps) == 1 else "circles"
        print(f"{crate.member} ({crate.package}): {len(comps)} {noun}")
        for k, comp in enumerate(comps, 1):
            if frozenset(comp) in allowed:
                seen_allowed.add(frozenset(comp))
                known += 1
                print(f"  circle {k}: {len(comp)} files, known (scripts/import-cycles.allow)")
                continue
            total += 1
            print(f"  circle {k}: {len(comp)} files")
            for rel in comp:
                print(f"    {rel}")
            cycle = crate.shortest_cycle(comp)
            print(f"  a cycle: {' -> '.join(cycle)}")
            for a, b in zip(cycle, cycle[1:]):
                print(f"    {site(crate, a, b)}")
        print()
    stale = [] if args.crate else [entry for entry in allowed if entry not in seen_allowed]
    for entry in stale:
        print(f"stale allowance: no circle is exactly {' '.join(sorted(entry))}; remove it from scripts/import-cycles.allow")
    upward = [line for crate in crates for line in upward_imports(crate)]
    for line in upward:
        print(f"upward import: {line}")
    files = sum(len(c.files) for c in crates)
    noun = "circle" if total == 1 else "circles"
    print(
        f"import-cycles: {len(crates)} crates, {files} files, {total} {noun}, "
        f"{known} known, {len(upward)} upward imports"
    )
    return 1 if total or upward or stale else 0


if __name__ == "__main__":
    sys.exit(main())
