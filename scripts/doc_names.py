#!/usr/bin/env python3
"""Names in the docs that the code no longer has.

Reads every `backticked` span of docs/ARCHITECTURE.md and README.md (or the files given)
and prints the ones that look like a path (a/b, x.rs) or a Rust name (Type::method,
module::function) and cannot be found: a path that no file or folder of the repository
ends with, or a name whose last segment no Rust source defines (fn, struct, enum, trait,
type, const, static, mod, enum variant or field) and whose segments are not all words of the
source. Exit status 1 when anything is printed. A heuristic: read each hit before editing. Paths outside the repository (`../`, `./`,
absolute) and bare file names other than `.rs` (files a command writes) are not checked.
"""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Named on purpose though gone: the files "Crates from outside" says a crate replaced.
GONE_ON_PURPOSE = {"server/src/config.rs", "bench/src/md5.rs"}
DOCS = sys.argv[1:] or ["docs/ARCHITECTURE.md", "README.md"]


def tracked_paths():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    paths = set(files)
    for f in files:
        parts = f.split("/")
        for i in range(1, len(parts)):
            paths.add("/".join(parts[:i]))
    return paths


def expand_braces(text):
    m = re.search(r"\{([^{}]*)\}", text)
    if not m:
        return [text]
    out = []
    for choice in m.group(1).split(","):
        out += expand_braces(text[: m.start()] + choice.strip() + text[m.end():])
    return out


def rust_files():
    return {p: p.read_text(errors="replace") for p in ROOT.glob("crates/**/*.rs")
            if "target" not in p.parts and "node_modules" not in p.parts}


def modules(files):
    """Module name -> the source of its file, with its submodules' files (a folder module)."""
    found = {}
    for path, text in files.items():
        rel = path.relative_to(ROOT)
        names = [rel.stem] if rel.stem not in ("mod", "lib", "main") else []
        names += [part for part in rel.parts[:-1] if part not in ("src", "crates")]
        for name in set(names):
            found.setdefault(name.replace("-", "_"), []).append(text)
    return {name: "\n".join(texts) for name, texts in found.items()}


def defined_names(source):
    names = set(re.findall(
        r"\b(?:fn|struct|enum|trait|type|const|static|mod|macro_rules!)\s+([A-Za-z_]\w*)", source))
    # Names brought in from other crates (`use std::time::Instant`).
    for group in re.findall(r"^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", source, re.M):
        names |= set(re.findall(r"[A-Za-z_]\w*", group))
    # Enum variants (a discriminant's `= N` too), struct fields and methods named at a use site.
    names |= set(re.findall(r"^\s*([A-Z]\w*)\s*(?:[({,]|= [^=])", source, re.M))
    names |= set(re.findall(r"^\s*(?:pub(?:\([^)]*\))?\s+)?([a-z_]\w*)\s*:", source, re.M))
    return names


def outside_crates():
    """Crates from crates.io (Cargo.lock) and the standard library: their names are not ours."""
    lock = (ROOT / "Cargo.lock").read_text()
    names = {n.replace("-", "_") for n in re.findall(r'^name = "([^"]+)"', lock, re.M)}
    return names | {"std", "core", "alloc"}


def path_exists(path, paths):
    path = path.rstrip("/")
    return any(p in (path, path + ".rs") or p.endswith(("/" + path, "/" + path + ".rs")) for p in paths)


def main():
    files = rust_files()
    paths, source = tracked_paths(), "\n".join(files.values())
    names, outside = defined_names(source), outside_crates()
    module_names = {m: defined_names(text) for m, text in modules(files).items()}
    stale = 0
    for doc in DOCS:
        text = (ROOT / doc).read_text()
        for line_no, line in enumerate(text.splitlines(), 1):
            for span in re.findall(r"`([^`\n]+)`", line):
                problem = check(span, paths, names, outside, module_names)
                if problem:
                    stale += 1
                    print(f"{doc}:{line_no}: `{span}`: {problem}")
    return 1 if stale else 0


def check(span, paths, names, outside, module_names):
    span = span.strip()
    if re.fullmatch(r"[\w.\-/{},]+", span) and ("/" in span or re.search(r"\.(rs|py|md|toml|sh)$", span)):
        # Absolute, outside the repository, or where a command writes: not the repository's.
        if span.startswith(("/", "~", "./", "../")) or "://" in span or span in GONE_ON_PURPOSE:
            return None
        if "/" not in span and not span.endswith(".rs"):
            return None
        missing = [p for p in expand_braces(span) if not path_exists(p, paths)]
        return f"no such path: {', '.join(missing)}" if missing else None
    m = re.fullmatch(r"([A-Za-z_]\w*(?:::[A-Za-z_]\w*)+)(?:\(.*\))?", span)
    if m:
        segments = m.group(1).split("::")
        if segments[0] in outside:
            return None
        undefined = [s for s in segments if s not in names and (s[0].isupper() or s == segments[-1])]
        if undefined:
            return f"not defined in crates/: {', '.join(undefined)}"
        # `module::name`: the module's files must define the name.
        module, name = segments[-2], segments[-1]
        if module[0].islower() and module in module_names and name not in module_names[module]:
            return f"`{module}` has no `{name}`"
        return None
    return None


if __name__ == "__main__":
    sys.exit(main())
