"""docs/programs.md and the programs' --help name the same options: every
--option the page names for a program is one that program's --help lists,
and every option a program's --help lists is named for it on the page.

An option is named for a program when it follows `bin/NAME` in a code span
(or a line of a code block), wherever on the page; or, in a code span or
block with no command before it (`--stride S`), or outside code, when it
stands in that program's own section (## `bin/NAME` ...). An option after
another command (make, python3, mpirun, prlimit, ...) is that command's,
and one in no program's section without `bin/NAME` (the page's introduction)
is no program's. `--name-*` names every option starting with `--name-`, and
must name at least one. And the scripts the docs send people to with
arguments answer --help with their usage (exit 0, nothing run) and refuse an
argument they do not take in one line (exit 2): python3 -m tests.parity.gpt2_convert
(docs/gpt2.md). Prints one line per disagreement and exits 1, or one line
with the counts. Run from the repository root, after make:
/usr/bin/python3 -m tests.house.docs_options"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, os.environ.get("BIN", "bin"))
PAGE = os.path.join(ROOT, "docs", "programs.md")

SECTION = re.compile(r"^## `bin/([a-z0-9-]+)`")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
PROGRAM = re.compile(r"(?:^|[\s(])(?:\./)?bin/([a-z0-9-]+)")
OPTION = re.compile(r"(?<![\w-])--([a-z0-9][a-z0-9-]*\*?)")
# A word that starts another command: what follows is not the program's.
OTHER_COMMAND = re.compile(r"(?:^|[\s(;|&])(make|python3|/usr/bin/python3|mpirun|prlimit|ulimit|git|npm|node|cmp|"
                           r"bash|sh|env|taskset|numactl|perf|valgrind)(?=\s|$)")
# An option row of --help: two spaces, then "-x, " or four spaces, then the long name
# (a wrapped description's lines are indented to the help column, far past these).
HELP_ROW = re.compile(r"^  (?:-\w, |    )--([a-z0-9][a-z0-9-]*)", re.M)


def help_options(program):
    """The long options a program's --help lists (--help and --version, every program's, aside)."""
    path = os.path.join(BIN, program)
    r = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        sys.exit(f"docs options: {path} --help exited {r.returncode} (run make first): {r.stderr.strip()[:200]}")
    return set(HELP_ROW.findall(r.stdout)) - {"help", "version"}


def attribute(code, section):
    """(program or None, option) for each option in one code span or code
    line: after bin/NAME, NAME's; after another command, None; before any
    command, the section's program."""
    events = [(m.start(), "prog", m.group(1)) for m in PROGRAM.finditer(code)]
    events += [(m.start(), "other", None) for m in OTHER_COMMAND.finditer(code)]
    events += [(m.start(), "opt", m.group(1)) for m in OPTION.finditer(code)]
    owner = section
    for _, kind, value in sorted(events, key=lambda e: e[0]):
        if kind == "prog":
            owner = value
        elif kind == "other":
            owner = None
        elif owner:
            yield owner, value


def named_options(lines):
    """(program, option, line number) for every option the page names for a program."""
    section, fenced = None, False
    for no, line in enumerate(lines, 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced and line.startswith("## "):
            m = SECTION.match(line)
            section = m.group(1) if m else None
            continue
        if fenced:
            for prog, opt in attribute(line, section):
                yield prog, opt, no
            continue
        for m in CODE_SPAN.finditer(line):
            for prog, opt in attribute(m.group(2), section):
                yield prog, opt, no
        for opt in OPTION.findall(CODE_SPAN.sub(" ", line)):  # outside code: the section's
            if section:
                yield section, opt, no


# Python scripts the docs give arguments to: (module, the doc that does).
SCRIPTS = (("tests.parity.gpt2_convert", "docs/gpt2.md"),)


def script_problems():
    """--help prints usage and runs nothing; an unknown argument is one line, exit 2."""
    problems = []
    for module, doc in SCRIPTS:
        run = lambda *a: subprocess.run([sys.executable, "-m", module, *a], capture_output=True, text=True,
                                        cwd=ROOT, timeout=120)
        r = run("--help")
        if r.returncode != 0 or not r.stdout.startswith("usage:") or r.stderr:
            problems.append(f"python3 -m {module} --help ({doc}): exit {r.returncode}, not its usage: "
                            f"{(r.stdout + r.stderr).strip()[:200]}")
        r = run("--no-such-argument")
        if r.returncode != 2 or r.stderr.count("\n") != 1:
            problems.append(f"python3 -m {module} --no-such-argument: exit {r.returncode}, wanted 2 and one line: "
                            f"{r.stderr.strip()[:200]}")
    return problems


def main():
    lines = open(PAGE, encoding="utf-8").read().split("\n")
    named = list(named_options(lines))
    programs = sorted({prog for prog, _, _ in named} | {m.group(1) for line in lines for m in [SECTION.match(line)] if m})
    problems, covered, helps = [], {p: set() for p in programs}, {}
    for prog in programs:
        if not os.access(os.path.join(BIN, prog), os.X_OK):
            problems.append(f"docs/programs.md names bin/{prog}, which is not a program in {BIN}")
            continue
        helps[prog] = help_options(prog)
    for prog, opt, no in named:
        if prog not in helps:
            continue
        if opt.endswith("*"):
            hits = {h for h in helps[prog] if h.startswith(opt[:-1])}
            if not hits:
                problems.append(f"docs/programs.md:{no}: --{opt} names no option of bin/{prog}")
            covered[prog] |= hits
        elif opt == "help" or opt in helps[prog]:
            covered[prog].add(opt)
        else:
            problems.append(f"docs/programs.md:{no}: --{opt} is not an option of bin/{prog} (its --help lists none)")
    for prog, opts in helps.items():
        for opt in sorted(opts - covered[prog]):
            problems.append(f"bin/{prog} --help lists --{opt}, which docs/programs.md does not name for it")
    problems += script_problems()
    for p in problems:
        print(f"FAIL: {p}")
    if problems:
        sys.exit(1)
    total = sum(len(o) for o in helps.values())
    print(f"docs options: the {total} options of {len(helps)} programs' --help and docs/programs.md agree; "
          f"--help prints the usage of {', '.join(m for m, _ in SCRIPTS)}")


if __name__ == "__main__":
    main()
