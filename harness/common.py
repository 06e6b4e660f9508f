"""What the harnesses share: where the repository and its programs are,
running a program (its output, exit status, peak memory, time), failing with
one clear line, the output directory, strings for gnuplot that it cannot run,
and reading what the programs write (--json output, token file headers; the
results files and bin/train's log: harness/results.py)."""
import contextlib
import os
import shlex
import shutil
import statistics
import sys
import threading
import time

from harness.base import BIN, PYTHON, ROOT, die, printable, program_name  # noqa: F401 (shared from here)


def command_line(module, argv=None):
    """'python3 -m MODULE ARGS' as this run was given (argv: sys.argv[1:]),
    each argument quoted where the shell needs it, so that a report's command
    can be pasted back."""
    return shlex.join(["python3", "-m", module] + (sys.argv[1:] if argv is None else argv))


def take_config(ap, argv=None):
    """--config FILE: bin/train's experiment file read into the harness's defaults, every value through
    its option's type and choice checks (harness/config.py)."""
    from harness.config import take_config as take
    take(ap, argv)


def out_dir(path, what="--out"):
    """Makes the output directory `path` (and its parents) unless it is there; dies with one line,
    before any work, where it cannot be one: an existing file, a name with a control character
    (it is pasted into the plots' scripts), or a folder that cannot be made."""
    if not path:
        die(f"{what} is empty: give the output directory")
    if any(not c.isprintable() for c in path):
        die(f"{what} must be a directory name without control characters (got {path!r})")
    if os.path.exists(path) and not os.path.isdir(path):
        die(f"{what} '{path}' exists and is not a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        die(f"cannot make {what} '{path}': {e.strerror}")


def median(xs):
    """The median of the values that are not None; None if there are none."""
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def cpu_model():
    """The CPU's model name from /proc/cpuinfo, or 'unknown'."""
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    return "unknown"


# ---- running programs: harness/procs.py (process groups, signals, partial files) -------

from harness.procs import Result, guarded, kill_children, partial, run, run_ok  # noqa: E402,F401 (shared from here)


def output_of(cmd, live=False):
    """A program's stdout; exit 2 with its error if it fails. live: its stdout
    is not kept and its stderr goes to ours as it comes."""
    return run_ok(cmd, capture=not live, status=2).out


def duration(seconds):
    """'42s', '3m07s', '2h05m': as bin/train prints its ETA."""
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


# A sweep run inside another (harness.paper runs harness.compare once per
# recipe): "DONE TOTAL START", the runs before this one's, the whole sweep's
# count and its start (epoch seconds), so that the inner one counts and times
# the whole sweep.
SWEEP_ENV = "HARNESS_SWEEP"


class Sweep:
    """A sweep's progress: "run k of N", the time since it began and an ETA for
    the whole sweep (the runs left at the mean time of those done so far).
    Within an outer sweep (SWEEP_ENV) it counts and times that one. Safe to use
    from several threads (harness.probe's concurrent runs)."""

    def __init__(self, total):
        self.before, self.total, self.start = 0, total, time.time()
        outer = os.environ.get(SWEEP_ENV, "").split()
        if len(outer) == 3:
            with contextlib.suppress(ValueError):
                self.before, self.total, self.start = int(outer[0]), int(outer[1]), float(outer[2])
        self.started = self.finished = 0
        self.lock = threading.Lock()

    def env(self):
        """The environment of an inner sweep (a harness run as a program) that starts now."""
        return dict(os.environ, **{SWEEP_ENV: f"{self.before + self.finished} {self.total} {self.start}"})

    def status(self, done):
        elapsed = time.time() - self.start
        eta = (f"ETA {duration(elapsed / done * (self.total - done))}" if 0 < done < self.total else
               "ETA after the first run" if done == 0 else "done")
        return f"{duration(elapsed)} elapsed, {eta}"

    def begin(self):
        """'run k of N, 1m20s elapsed, ETA 5m10s' for the run starting now (sequential sweeps)."""
        with self.lock:
            self.started += 1
            k = self.before + self.started
            return f"run {k} of {self.total}, {self.status(k - 1)}"

    def end(self):
        """'3 of 12 runs done, 1m20s elapsed, ETA 5m10s' for a run just finished (concurrent sweeps)."""
        with self.lock:
            self.finished += 1
            k = self.before + self.finished
            return f"{k} of {self.total} runs done, {self.status(k)}"

    def add_done(self, n):
        """n more runs finished (by an inner sweep)."""
        with self.lock:
            self.finished += n


def fit_warmup(warmup, steps):
    """The warm-up for a run of `steps` steps: warmup where it fits, else a
    tenth of the steps (at least 1), so that the learning rate reaches its
    peak (bin/train warns of a warm-up longer than the run)."""
    return warmup if warmup <= steps else max(1, steps // 10)


def need_gnuplot():
    """Dies with one line if gnuplot (the plots of compare and probe) is missing."""
    if not shutil.which("gnuplot"):
        die("gnuplot is not installed (bash scripts/install-deps.sh)")


def gnuplot_string(text):
    """text as a gnuplot string expression that gnuplot only prints: single-quoted, where gnuplot
    substitutes no backquotes, no @macros and no backslash escapes. A quote in text is joined in as
    "'" (gnuplot 5.4 reads a string opening with '' as an empty one, so the doubled quote is not
    safe), the whole in parentheses so that plot and set take it as one. A line break would end the
    command inside the string, so a control character is refused (one line, exit 2): the strings
    come from names and paths checked before any work, and this is the last guard."""
    text = str(text)
    if any(not c.isprintable() for c in text):
        die(f"cannot pass {text!r} to gnuplot: it has a control character")
    if "'" not in text:
        return f"'{text}'"
    return "(" + " . \"'\" . ".join(f"'{piece}'" for piece in text.split("'")) + ")"


def gnuplot(script, output=None):
    """Runs a gnuplot script (a child as run() starts them); dies with gnuplot's complaint if it fails.
    output: the file its `set output {gnuplot_string(output)}` names, which gnuplot then writes as its
    temporary, renamed over it once written (harness/files.py: a link there is never written through,
    a FIFO or a folder never replaced)."""
    from harness.files import output_path
    with output_path(output) if output else contextlib.nullcontext() as tmp:
        if output:
            named = f"set output {gnuplot_string(output)}\n"
            if named not in script:
                raise ValueError(f"the gnuplot script does not set output {output!r}")
            script = script.replace(named, f"set output {gnuplot_string(tmp)}\n")
        r = run(["gnuplot"], stdin=script.encode("utf-8"))
        if r.status != 0:
            die(f"gnuplot failed: {r.err.strip()}")


def gnuplot_series(path, points, index, title, style=""):
    """Writes the (x, y) points to the data file `path` and returns the plot
    clause that draws them as the index-th line (its point type), titled;
    style adds gnuplot's line options (a colour, a dash type)."""
    from harness.files import write_output
    write_output(path, "".join(f"{x} {y}\n" for x, y in points))
    return (f"{gnuplot_string(path)} using 1:2 with linespoints lw 2 pt {7 + index}{' ' + style if style else ''} "
            f"title {gnuplot_string(title)}")


# ---- what the programs write -----------------------------------------------------

def token_header(path):
    """The 32-byte header of a token file (bin/prepare): {raw, width, vocab,
    count}; dies if path is not a token file."""
    from harness.files import read_input
    head = read_input(path, 32, f"'{path}'", head=True)  # a FIFO or a device is refused, never waited on
    if len(head) < 32 or head[:8] != b"LMTOKENS":
        die(f"'{path}' is not a token file (run make data)")
    head = {"raw": head, "width": int.from_bytes(head[12:16], "little"),
            "vocab": int.from_bytes(head[16:24], "little"), "count": int.from_bytes(head[24:32], "little")}
    if head["width"] not in (2, 4) or not 0 < head["vocab"] <= 1 << 32:
        die(f"'{path}' is not a token file (token width {head['width']}, vocabulary {head['vocab']})")
    return head
