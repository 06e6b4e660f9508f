"""The programs a harness runs, and stopping them when the harness is told to stop.

Every child (bin/*, gnuplot, an inner harness) runs in a process group of its own, so that a Ctrl-C at
the terminal reaches the harness alone and the harness decides what its children get. Run through
guarded(main) (every harness's __main__), SIGINT, SIGTERM and SIGHUP are forwarded to every child's
group; the harness starts nothing more, waits for each child to end (bin/train saves and exits,
an inner harness stops its own children in turn), removes the partial files of the runs in flight
(partial()), says so in one line and ends by the same signal (the shell's status 128+N). A reader
that goes away (`... | head -1`) stops it the same way, silently, with SIGTERM to the children.
No traceback, no child left running."""
import contextlib
import glob
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from harness.base import die, program_name

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_lock = threading.Lock()
_children = {}   # pid (its process group's id too) -> the ident of the thread that waits for it
_partial = {}    # path -> how many runs in flight hold it: removed if the harness is stopped
_stopping = []   # [the signal that stops the harness], once it is told to stop
_signalled = set()  # the children a stop was forwarded to
_starting = []   # [True] while the main thread starts a child: a signal then waits for its registration


class Stopped(BaseException):
    """The harness was told to stop (a BaseException: no `except Exception` of a harness catches it)."""

    def __init__(self, sig):
        super().__init__(sig)
        self.sig = sig


def _forward(sig):
    for pid in list(_children):
        _signalled.add(pid)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)


def _on_signal(sig, frame):
    first = not _stopping
    if first:
        _stopping.append(sig)
    _forward(sig)  # again on a repeat: a child that waits for a second one gets it
    if first and not _starting:  # else run() stops once the child it is starting is known
        raise Stopped(sig)


class Result:
    """A finished command: exit status, stdout, stderr, peak RSS of its process
    tree in MiB, wall seconds."""

    def __init__(self, cmd, status, out, err, rss_mib, seconds):
        self.cmd, self.status, self.out, self.err, self.rss_mib, self.seconds = cmd, status, out, err, rss_mib, seconds

    def why(self):
        """The last line it printed (its error), or its exit status."""
        lines = (self.err.strip() or self.out.strip()).splitlines()
        return lines[-1] if lines else f"exit status {self.status}"

    def json(self):
        """Its stdout as JSON (a program run with --json); dies if it is not."""
        import json
        try:
            return json.loads(self.out)
        except (ValueError, RecursionError):
            first = self.out.strip().splitlines()[:1]
            die(f"{os.path.basename(self.cmd[0])} printed no JSON"
                + (f" (its output begins '{first[0][:120]}')" if first else ""), 1)


def run(cmd, env=None, capture=True, cwd=None, show=False, stdin=None):
    """Runs cmd to completion, in a process group of its own, and returns its Result. stdout and stderr
    go to temporary files (no pipe to fill up); with capture=False stdout goes to /dev/null (to ours
    with show=True) and stderr to ours, so that a program's errors are seen as they come. stdin:
    bytes it reads. The peak RSS is ru_maxrss from wait4: the process and every descendant it waited
    for. Safe to call from several threads at once; once the harness is stopping, raises Stopped
    instead of starting anything, and after a child it stopped."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as given:
        if stdin is not None:
            given.write(stdin)
            given.seek(0)
        start = time.monotonic()
        main = threading.current_thread() is threading.main_thread()
        with _lock:
            if _stopping:
                raise Stopped(_stopping[0])
            if main:  # a signal here must not leave a child started and not known
                _starting.append(True)
            try:
                p = subprocess.Popen(cmd, stdin=given if stdin is not None else subprocess.DEVNULL,
                                     stdout=out if capture else None if show else subprocess.DEVNULL,
                                     stderr=err if capture else None, env=env, cwd=cwd, process_group=0)
                _children[p.pid] = threading.get_ident()
            except OSError as e:
                die(f"cannot run {cmd[0]}: {e.strerror}", 1)
            finally:
                if main:
                    _starting.clear()
        if _stopping:  # told to stop while it started: it may have missed the forwarded signal
            _forward(_stopping[0])
        # If a signal stops the harness here (the main thread), the child stays in _children and
        # _stop() waits for it.
        _, status, usage = os.wait4(p.pid, 0)
        with _lock:
            _children.pop(p.pid, None)
        if _stopping:
            raise Stopped(_stopping[0])
        p.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        return Result(cmd, p.returncode, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"),
                      usage.ru_maxrss / 1024.0, seconds)


def run_ok(cmd, env=None, capture=True, cwd=None, status=1, show=False):
    """run(), dying with one line (and exit status `status`) if cmd fails:
    its last line of output, or with capture=False (where its errors were
    already shown) its exit status and the command."""
    r = run(cmd, env, capture, cwd, show)
    if r.status != 0:
        name = os.path.basename(cmd[0])
        die(f"{name} failed: {r.why()}" if capture else f"{name} failed (exit {r.status}): {' '.join(cmd)}", status)
    return r


@contextlib.contextmanager
def partial(*paths):
    """Marks paths as written by a run in flight: if the harness is stopped inside, they are removed
    (with their temporaries and a lock no process holds) once its children have ended."""
    with _lock:
        for p in paths:
            _partial[p] = _partial.get(p, 0) + 1
    try:
        yield
    except BaseException:
        if not _stopping:
            _drop(paths)
        raise
    else:
        _drop(paths)


def _drop(paths):
    with _lock:
        for p in paths:
            _partial[p] = _partial.get(p, 1) - 1
            if _partial[p] <= 0:
                del _partial[p]


def _alive(pid_text):
    """Whether the pid a lock file holds is a live process (another user's counts as live)."""
    text = pid_text.strip()
    if not text.isascii() or not text.isdigit() or not 0 < int(text) < 1 << 31:
        return False
    try:
        os.kill(int(text), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_partial():
    """Removes the partial files (regular files or links, never a folder): each path, its temporaries
    (PATH.tmp.PID, every writer is gone) and its lock where no live process holds it. Returns how many."""
    removed = 0
    for path in list(_partial):
        found = [path] + glob.glob(glob.escape(path) + ".tmp.*")
        lock = path + ".lock"
        with contextlib.suppress(OSError):
            if os.path.isfile(lock) and not os.path.islink(lock) and os.path.getsize(lock) <= 32:
                with open(lock) as f:
                    if not _alive(f.read(32)):
                        found.append(lock)
        for p in found:
            with contextlib.suppress(OSError):
                if not os.path.isdir(p) or os.path.islink(p):
                    os.unlink(p)
                    removed += 1
    return removed


def _quiet_stdout():
    """stdout to /dev/null: the reader is gone, and Python's own flush at exit must not fail."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _reap():
    """Waits for every child to end (each was sent the stop's signal): those whose wait the signal
    interrupted are reaped here, the other threads reap theirs."""
    main = threading.get_ident()
    while _children:
        for pid, owner in list(_children.items()):
            if owner == main:  # a repeated signal is forwarded again, and the wait goes on
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)
                with _lock:
                    _children.pop(pid, None)
        if _children:
            time.sleep(0.05)


@contextlib.contextmanager
def children_end_first():
    """For a block whose clean-up needs the children gone (a temporary folder they write in): a stop
    inside it waits for them before the block is left."""
    try:
        yield
    except Stopped:
        _reap()
        raise


def _stop(sig):
    """Stops the harness for sig: forwards it (SIGTERM for a broken pipe) to every child, waits for
    each, removes the partial files, says so in one line (not for a broken pipe) and ends by sig."""
    if not _stopping:
        _stopping.append(sig)
        _forward(signal.SIGTERM if sig == signal.SIGPIPE else sig)
    if sig == signal.SIGPIPE:
        _quiet_stdout()
    _reap()
    stopped = len(_signalled)
    removed = _remove_partial()
    if sig != signal.SIGPIPE:
        name = signal.Signals(sig).name
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        print(f"{program_name()}: stopped ({name}): " +
              (f"{stopped} program{'s' if stopped != 1 else ''} it ran stopped and waited for; " if stopped else "") +
              (f"{removed} partial file{'s' if removed != 1 else ''} removed" if removed else
               "nothing half-written is kept"), file=sys.stderr, flush=True)
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
    signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
    os.kill(os.getpid(), sig)
    os._exit(128 + sig)  # not reached: the signal ends the process


def guarded(main, *args):
    """Runs a harness's main(*args) owning its children: SIGINT, SIGTERM and SIGHUP, and a reader that
    goes away, stop it as the module's docstring says."""
    for sig in FORWARDED:
        signal.signal(sig, _on_signal)
    try:
        return main(*args)
    except Stopped as e:
        _stop(e.sig)
    except KeyboardInterrupt:
        _stop(signal.SIGINT)
    except BrokenPipeError:
        _stop(signal.SIGPIPE)
    except SystemExit:
        if _stopping:  # a die() on the way out of a stop: the stop's line, not that one
            _stop(_stopping[0])
        raise


def kill_children():
    """Kills every program run() started that is still running (their groups), and reaps them."""
    for pid in list(_children):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        _children.pop(pid, None)
