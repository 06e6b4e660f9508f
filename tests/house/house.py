"""The house's rules, checked from the code's own #include lines (make test).

- The programs (train/, eval/, data/) include only the library's public
  headers (include/lm/) and their own folder's.
- The public headers (include/lm/) include only each other.
- The library's wings depend one way: a file in src/W includes only headers
  of W or of the wings below W in WINGS; include/lm/ headers count as the wing
  whose src/ folder implements them. Nothing in src/ or include/ includes a
  program folder's header.
- Every folder of the house says in a README.md what lives there: every
  folder of tests/ too (but the fuzzers' seed inputs, data, not code).
- The harnesses name no mixer: no registered mixer's name (bin/info
  --mixers --json) appears as a word in harness/, in code, strings or
  comments, but in the mixers' own PyTorch references (harness/mixers/NAME.py)
  and in the files of KNOWN_MIXER_NAMES, each with why.
- The harness is programs and a library: no harness program (a module run
  as `python3 -m harness.NAME`: one with an `if __name__ == "__main__"`
  guard, or a package's __main__.py) imports another program, and every
  harness file is under 450 lines.
- A kernel is one template per module (src/W/NAME_kernel.h, including
  runtime/level.h) that the Makefile compiles once per instruction-set
  level: no source file per level (NAME_avx2.c, ...), and no target
  attribute (code for a CPU other than the build's) outside the templates.
Prints one line per broken rule and the counts; exits 1 if any broke.
"""
import ast
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Lowest first; a wing may include itself and anything earlier in the list.
WINGS = ["runtime", "io", "cli", "blas", "nn", "tok", "data", "mixers", "model", "optim", "inspect", "hf"]
PROGRAM_DIRS = ["train", "eval", "data"]
# include/lm/ headers whose implementation is not src/<wing>/<name>.c.
LM_WING = {"hf": "hf"}
# Arrows that run back up, each with why it is still there. Empty is the goal.
KNOWN_BACK_ARROWS = set()
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
BIN = os.path.join(ROOT, os.environ.get("BIN", "bin"))
# Files of harness/ that may name mixers (a name ending in '/': a folder's), each with why. Empty is the goal.
PAPER_WHY = ("the Grassmann paper's own experiment: its architectures (the Transformer, the Grassmann model, the "
             "hybrid, the controls) are the paper's, and its report is about them")
KNOWN_MIXER_NAMES = {"harness/paper.py": PAPER_WHY, "harness/lib/paper/": PAPER_WHY}
SEEDS = os.path.join("tests", "fuzz", "seeds")  # the fuzzers' seed inputs: data, not code
LEVEL_FILE = re.compile(r"_(portable|avx2|avx512|neon)\.c$")


def files(folder, exts=(".c", ".h")):
    for dirpath, _, names in os.walk(os.path.join(ROOT, folder)):
        for n in sorted(names):
            if n.endswith(exts):
                yield os.path.join(dirpath, n)


def test_folders():
    """Every folder under tests/ (relative to ROOT), but the fuzzers' seed inputs and Python's caches."""
    found = []
    for dirpath, dirnames, _ in os.walk(os.path.join(ROOT, "tests")):
        rel = os.path.relpath(dirpath, ROOT)
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and os.path.join(rel, d) != SEEDS)
        if rel != "tests":
            found.append(rel)
    return found


def includes(path):
    with open(path, encoding="utf-8") as f:
        return INCLUDE.findall(f.read())


def lm_wing(name):
    stem = name[:-2]
    if stem in LM_WING:
        return LM_WING[stem]
    for w in WINGS:
        if os.path.exists(os.path.join(ROOT, "src", w, stem + ".c")):
            return w
    return None


def wing_of_include(inc):
    if inc.startswith("lm/"):
        return lm_wing(inc[3:])
    head = inc.split("/")[0]
    return head if head in WINGS and "/" in inc else None


def mixer_names():
    """The registered mixers' names, from bin/info --mixers --json (None, with why, without bin/info)."""
    try:
        out = subprocess.run([os.path.join(BIN, "info"), "--mixers", "--json"], capture_output=True, text=True,
                             timeout=60)
        return [m["name"] for m in json.loads(out.stdout)["mixers"]], None
    except (OSError, ValueError, KeyError, subprocess.TimeoutExpired) as e:
        return None, f"cannot read the mixer registry from {BIN}/info --mixers --json ({e}): run make"


def harness_naming_mixers():
    """Where a registered mixer's name appears in harness/ (a whole word, any case, '_' and '-' as
    separators: 'Attention', 'grassmann_rank', '--gla-x'), outside the mixers' own references
    (harness/mixers/NAME.py) and KNOWN_MIXER_NAMES: (lines of what broke, files read)."""
    names, why = mixer_names()
    if names is None:
        return [why], 0
    broken, n = [], 0
    for path in files("harness", (".py", ".html", ".json", ".md")):
        rel = os.path.relpath(path, ROOT)
        if any(rel == known or known.endswith("/") and rel.startswith(known) for known in KNOWN_MIXER_NAMES):
            continue
        n += 1
        if os.path.dirname(rel) == os.path.join("harness", "mixers") and os.path.basename(rel) != "__init__.py":
            continue  # a mixer's own reference
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        for name in names:
            word = re.compile(r"(?<![A-Za-z0-9])" + re.escape(name) + r"(?![A-Za-z0-9])", re.I)
            hits = [i + 1 for i, line in enumerate(lines) if word.search(line)]
            if hits:
                broken.append(f"{rel}:{hits[0]}: names the mixer '{name}' ({len(hits)} lines): the harnesses read "
                              "mixers from the registry (harness/registry.py)")
    return broken, n


MAX_LINES = 450  # the house's limit on a file


def harness_modules():
    """{module name: path} of every Python file in harness/ ('harness.compare', 'harness.bench.main')."""
    found = {}
    for path in files("harness", (".py",)):
        parts = os.path.relpath(path, ROOT)[:-3].split(os.sep)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def is_program(path):
    """Whether a harness file is a program: run as python3 -m, not imported."""
    if os.path.basename(path) == "__main__.py":
        return True
    with open(path, encoding="utf-8") as f:
        return re.search(r'^if __name__ == "__main__":', f.read(), re.M) is not None


def imported(path, modules):
    """The harness modules a file imports, anywhere in it (a function's own import too)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return {m for m in found if m in modules}


def import_circles(graph):
    """Each circle of imports among the harness's modules (graph: module -> the modules it
    imports), once, as a line: a circle is a set of modules none of which can be read without
    the others, and what they share belongs below them (harness/base.py)."""
    index, low, stack, on, circles, counter = {}, {}, [], set(), [], [0]

    def visit(m):  # Tarjan's strongly connected components
        index[m] = low[m] = counter[0]
        counter[0] += 1
        stack.append(m)
        on.add(m)
        for n in sorted(graph.get(m, ())):
            if n not in index:
                visit(n)
                low[m] = min(low[m], low[n])
            elif n in on:
                low[m] = min(low[m], index[n])
        if low[m] == index[m]:
            part = []
            while True:
                n = stack.pop()
                on.discard(n)
                part.append(n)
                if n == m:
                    break
            if len(part) > 1:
                circles.append(sorted(part))

    for m in sorted(graph):
        if m not in index:
            visit(m)
    return [f"harness: a circle of imports: {' -> '.join(c)}: what they share belongs below them" for c in circles]


def harness_house():
    """Programs that import programs, and harness files over MAX_LINES: (lines of what broke, files read)."""
    modules = harness_modules()
    programs = {m for m, path in modules.items() if is_program(path)}
    broken = []
    for m in sorted(programs):
        for other in sorted(imported(modules[m], modules) & programs - {m}):
            broken.append(f"{os.path.relpath(modules[m], ROOT)}: imports the program {other}: what programs "
                          "share lives in the library (harness/lib/)")
    broken += import_circles({m: imported(path, modules) - {m} for m, path in modules.items()})
    every = list(files("harness", (".py", ".html", ".json", ".md", ".sh")))
    for path in every:
        with open(path, encoding="utf-8") as f:
            n = sum(1 for _ in f)
        if n > MAX_LINES:
            broken.append(f"{os.path.relpath(path, ROOT)}: {n} lines, over the house's {MAX_LINES}")
    return broken, len(every)


def main():
    broken, checked = [], 0
    for d in PROGRAM_DIRS:
        for path in files(d):
            own = os.path.dirname(path)
            for inc in includes(path):
                checked += 1
                if inc.startswith("lm/") or ("/" not in inc and os.path.exists(os.path.join(own, inc))):
                    continue
                broken.append(f"{os.path.relpath(path, ROOT)}: includes \"{inc}\": a program includes lm/ and its own folder only")
    for path in list(files("src")) + list(files("include")):
        rel = os.path.relpath(path, ROOT)
        parts = rel.split(os.sep)
        if parts[0] == "src":
            wing = parts[1]
        else:
            wing = lm_wing(parts[-1])
            if wing is None:
                broken.append(f"{rel}: no src/ wing implements it")
                continue
        for inc in includes(path):
            checked += 1
            if parts[0] == "include" and not inc.startswith("lm/") and "/" in inc:
                broken.append(f"{rel}: includes \"{inc}\": the public headers include only each other")
                continue
            if inc.split("/")[0] in PROGRAM_DIRS and not inc.split("/")[0] in WINGS:
                broken.append(f"{rel}: includes \"{inc}\", a program's header")
                continue
            target = wing_of_include(inc)
            if target is None:
                if "/" in inc and inc.split("/")[0] != "lm":
                    broken.append(f"{rel}: includes \"{inc}\", which is no wing's")
                continue
            if WINGS.index(target) > WINGS.index(wing) and (rel, inc) not in KNOWN_BACK_ARROWS:
                broken.append(f"{rel}: includes \"{inc}\" ({target}/), above its own wing {wing}/")
    for path in files("src"):
        rel = os.path.relpath(path, ROOT)
        if LEVEL_FILE.search(path):
            broken.append(f"{rel}: a file per level: the Makefile compiles a module's NAME_kernel.h at each level")
        if path.endswith("_kernel.h") and "runtime/level.h" not in includes(path):
            broken.append(f"{rel}: a kernel template that does not include runtime/level.h")
        with open(path, encoding="utf-8") as f:
            if not path.endswith("_kernel.h") and "__attribute__((target(" in f.read():
                broken.append(f"{rel}: a target attribute outside the kernel templates (src/W/NAME_kernel.h)")
    folders = ["include/lm", "train", "eval", "data", "tests", "src", "experiments"] + [f"src/{w}" for w in WINGS] + test_folders()
    for d in folders:
        if not os.path.exists(os.path.join(ROOT, d, "README.md")):
            broken.append(f"{d}/: no README.md saying what lives there")
    with open(os.path.join(ROOT, "harness", "__init__.py"), encoding="utf-8") as f:  # Python says it here
        if not f.read().startswith('"""'):
            broken.append("harness/: __init__.py does not open with what lives there")
    named, n_harness = harness_naming_mixers()
    broken += named
    broken += harness_house()[0]
    for line in broken:
        print("FAIL: house:", line)
    print(f"house: {checked} includes, {len(folders)} folders and {n_harness} harness files checked")
    print(f"house: {1 if not broken else 0} passed, {1 if broken else 0} failed")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
