#!/usr/bin/env python3
"""The structure issue 36 asks the code to keep, checked by the test command:

- no import circle between two files of a crate of the compiler or the
  runtime (a file names `crate::x` or `super::x` of a file that names it
  back; comments and `#[cfg(test)]` modules do not count);
- no file of the workspace over 900 lines before its `#[cfg(test)]`
  (files that are tests from top to bottom excepted);
- no `#[allow(clippy::too_many_arguments)]` in the runtime crates;
- a backend is the places docs/ARCHITECTURE.md lists ("A backend"): no
  code of the compiler or of the facade names a runtime (`opencl::`,
  `cuda::`, the runtimes' launch methods and buffer types) but the facade's
  `mdh/src/lib.rs` and mdh-core's `backend.rs`, which that list names, and
  the list has at most six places (tests aside).

Exits 1 naming what breaks a rule.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CIRCLE_CRATES = ["mdh", "mdh-rt", "mdh-gpu", "mdh-core"]
RUNTIME_CRATES = ["mdh", "mdh-rt", "mdh-gpu"]
MAX_LINES = 900
WORD = r"[a-z_][a-z0-9_]*"


def code(text):
    """The text before `#[cfg(test)]`, without comments."""
    text = text.split("#[cfg(test)]")[0]
    return "\n".join(re.sub(r"//.*", "", line) for line in text.split("\n"))


def modules(crate):
    src = os.path.join(ROOT, crate, "src")
    files = {}
    for root, _, names in os.walk(src):
        for n in names:
            if n.endswith(".rs"):
                parts = os.path.relpath(os.path.join(root, n), src)[:-3].split("/")
                if parts[-1] in ("lib", "mod", "main"):
                    parts = parts[:-1]
                files[tuple(parts)] = os.path.join(root, n)
    return files


def circles(crate):
    files = modules(crate)

    def module_of(path):
        for i in range(len(path), 0, -1):
            if tuple(path[:i]) in files:
                return tuple(path[:i])
        return None

    edges = set()
    for m, f in files.items():
        t = code(open(f).read())
        parent = list(m[:-1])
        refs = [r.split("::") for r in re.findall(rf"crate::((?:{WORD}::)*{WORD})", t)]
        refs += [parent + r.split("::") for r in re.findall(rf"super::((?:{WORD}::)*{WORD})", t)]
        for group in re.findall(r"super::\{([^}]*)\}", t):
            refs += [parent + [r] for r in re.findall(rf"({WORD})(?:::|\s*,|$)", group + ",")]
        for group in re.findall(r"crate::\{([^}]*)\}", t):
            refs += [[r] for r in re.findall(rf"({WORD})(?:::|\s*,|$)", group + ",")]
        for r in refs:
            b = module_of(r)
            if b is None or b == m or m[: len(b)] == b:
                continue
            edges.add((m, b))
    return sorted(
        f"{crate}: {'/'.join(a) or 'lib'} <-> {'/'.join(b) or 'lib'}"
        for a, b in edges
        if (b, a) in edges and a < b
    )


def long_files():
    out = []
    listed = subprocess.run(
        ["git", "ls-files", "*.rs"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    for f in listed:
        lines = open(os.path.join(ROOT, f)).read().split("\n")
        before = next((i for i, l in enumerate(lines) if l.startswith("#[cfg(test)]")), len(lines))
        # A test file from top to bottom: an integration test or a `tests.rs`.
        is_test = "/tests/" in f or f.endswith("/tests.rs") or "/tests/" in "/" + f
        if before > MAX_LINES and not is_test:
            out.append(f"{f}: {before} lines before its tests (at most {MAX_LINES})")
    return out


def allows():
    out = []
    for crate in RUNTIME_CRATES:
        for m, f in modules(crate).items():
            for i, line in enumerate(open(f).read().split("\n"), 1):
                if "clippy::too_many_arguments" in line:
                    out.append(f"{os.path.relpath(f, ROOT)}:{i}: allows too_many_arguments")
    return out


# Where the compiler and the facade may name a runtime (see "A backend" in
# docs/ARCHITECTURE.md), and what naming one looks like: a path into its
# module, its buffer type, its launch methods.
RUNTIME_NAMING_CRATES = ["mdh-core", "mdh"]
NAMES_RUNTIMES = {"mdh/src/lib.rs", "mdh-core/src/backend.rs"}
RUNTIME_API = re.compile(
    r"\b(?:opencl|cuda)::|\bCudaSlice\b|\barg_(?:buffer|slice|scalar)\w*|\bkernel_on\b|\bbuffer_len\b"
)


def runtime_names():
    out = []
    for crate in RUNTIME_NAMING_CRATES:
        for m, f in modules(crate).items():
            rel = os.path.relpath(f, ROOT)
            if rel in NAMES_RUNTIMES or rel.endswith("/tests.rs"):
                continue
            for i, line in enumerate(code(open(f).read()).split("\n"), 1):
                hit = RUNTIME_API.search(line)
                if hit:
                    out.append(
                        f"{rel}:{i}: names a runtime's API (`{hit.group(0)}`); it belongs in the "
                        "runtime's module of mdh-gpu, behind its device traits"
                    )
    return out


def backend_list():
    text = open(os.path.join(ROOT, "docs", "ARCHITECTURE.md")).read()
    found = re.search(r"\*\*A backend\*\*.*?\n((?:\d+\. .*\n(?: {3}.*\n)*)+)", text)
    if not found:
        return ["docs/ARCHITECTURE.md: no list \"A backend\" under \"What a change touches\""]
    items = [i for i in re.findall(r"^\d+\. (.*)$", found.group(1), re.M) if not i.startswith("Tests")]
    listed = "".join(found.group(1))
    missing = [f for f in sorted(NAMES_RUNTIMES) if f not in listed]
    out = [f"docs/ARCHITECTURE.md: \"A backend\" lists {len(items)} places (at most 6)"] if len(items) > 6 else []
    return out + [f"docs/ARCHITECTURE.md: \"A backend\" does not name {f}" for f in missing]


problems = (
    [p for c in CIRCLE_CRATES for p in circles(c)]
    + long_files()
    + allows()
    + runtime_names()
    + backend_list()
)
for p in problems:
    print(f"structure-check: {p}", file=sys.stderr)
if problems:
    print(
        "structure-check: the rules are in docs/ARCHITECTURE.md (\"Rules the code keeps\")",
        file=sys.stderr,
    )
    sys.exit(1)
print(
    "structure-check: no import circles, no file over 900 lines, no too_many_arguments, "
    "runtimes named only where a backend is added"
)
