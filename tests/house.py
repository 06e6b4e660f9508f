"""The house's rules, checked from the code's own #include lines (make test).

- The programs (train/, eval/, data/) include only the library's public
  headers (include/lm/) and their own folder's.
- The public headers (include/lm/) include only each other.
- The library's wings depend one way: a file in src/W includes only headers
  of W or of the wings below W in WINGS; include/lm/ headers count as the wing
  whose src/ folder implements them. Nothing in src/ or include/ includes a
  program folder's header.
- Every folder of the house says in a README.md what lives there.
- A kernel is one template per module (src/W/NAME_kernel.h, including
  runtime/level.h) that the Makefile compiles once per instruction-set
  level: no source file per level (NAME_avx2.c, ...), and no target
  attribute (code for a CPU other than the build's) outside the templates.
Prints one line per broken rule and the counts; exits 1 if any broke.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Lowest first; a wing may include itself and anything earlier in the list.
WINGS = ["runtime", "io", "cli", "blas", "nn", "tok", "data", "mixers", "model", "optim", "inspect", "hf"]
PROGRAM_DIRS = ["train", "eval", "data"]
# include/lm/ headers whose implementation is not src/<wing>/<name>.c.
LM_WING = {"hf": "hf"}
# Arrows that run back up, each with why it is still there. Empty is the goal.
KNOWN_BACK_ARROWS = set()
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
LEVEL_FILE = re.compile(r"_(portable|avx2|avx512|neon)\.c$")


def files(folder, exts=(".c", ".h")):
    for dirpath, _, names in os.walk(os.path.join(ROOT, folder)):
        for n in sorted(names):
            if n.endswith(exts):
                yield os.path.join(dirpath, n)


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
    folders = ["include/lm", "train", "eval", "data", "tests", "src"] + [f"src/{w}" for w in WINGS]
    for d in folders:
        if not os.path.exists(os.path.join(ROOT, d, "README.md")):
            broken.append(f"{d}/: no README.md saying what lives there")
    with open(os.path.join(ROOT, "harness", "__init__.py"), encoding="utf-8") as f:  # Python says it here
        if not f.read().startswith('"""'):
            broken.append("harness/: __init__.py does not open with what lives there")
    for line in broken:
        print("FAIL: house:", line)
    print(f"house: {checked} includes and {len(folders)} folders checked")
    print(f"house: {1 if not broken else 0} passed, {1 if broken else 0} failed")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
