"""What a harness writes, and how it opens what it reads: the C programs' rule (include/lm/files.h,
src/runtime/outputs.c) on the Python side, so that a page or a report is held to what a checkpoint is.

An output is a regular file or a path that does not exist yet, in a folder that exists; never a
folder, FIFO, socket or device (renaming a new file over /dev/null would replace the device), and
never one of the run's own files (a run folder's ckpt, best.ckpt, logs, config.json, a data file).
A symbolic link there is replaced, never followed, and only where it leads to a regular file (or
nowhere). It is checked before any work (output_check, check_outputs), then written through a
temporary beside it (PATH.tmp.PID, created O_EXCL | O_NOFOLLOW), synced and renamed over it
(write_output; output_path for a program that writes the file itself, gnuplot), so that a failure or
a stop leaves the old file or the new one, whole.

A file a harness reads (a results file, an experiment file, a token file's header) is opened
O_NONBLOCK, so that a FIFO never blocks, checked with fstat to be a regular file, and read up to a
bound (read_input)."""
import contextlib
import errno
import fnmatch
import glob
import io
import os
import stat

from harness.base import die

TEMP_INFIX = ".tmp."
# A run folder's own files (bin/train --run, train/run_dir.h): never a page's or a report's path.
RUN_FILES = ("ckpt", "best.ckpt", "log.csv", "log.jsonl", "config.json")
RUN_PATTERNS = ("step-*.ckpt", "*.lock", "*" + TEMP_INFIX + "*")


def file_kind(mode):
    """What a path that is not a regular file is, for the line refusing it (file_kind in C)."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO or pipe"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def temp_path(path):
    """This process's temporary for path: beside it, so that the rename stays in one file system."""
    return f"{path}{TEMP_INFIX}{os.getpid()}"


def replace_problem(path, what):
    """Why a rename may not put a new file at path (None: nothing is there, a regular file, or a link
    to one or to nothing, which the rename replaces without following)."""
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            st = os.stat(path)
    except OSError:
        return None
    if stat.S_ISREG(st.st_mode):
        return None
    if stat.S_ISDIR(st.st_mode):
        return f"{what} '{path}' is a directory: give the path of a file (in it, or beside it)"
    return f"{what} '{path}' is {file_kind(st.st_mode)}, not a file: it is never written or replaced; give the path of a file"


def _same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def run_files(folder):
    """[(what, path)] of a run folder's own files that are there: what a page of it must never replace."""
    found = [os.path.join(folder, n) for n in RUN_FILES]
    for pattern in RUN_PATTERNS:
        found += glob.glob(os.path.join(glob.escape(folder), pattern))
    return [(f"the run's {os.path.basename(p)}", p) for p in found if os.path.lexists(p)]


def output_problem(path, what, inputs=(), run_folders=()):
    """Why path may not be written (one line), or None: the rule above. inputs: [(what, path)] the
    run reads; run_folders: folders whose own files (RUN_FILES, RUN_PATTERNS) it is never, by name
    or by being the same file."""
    if not path:
        return f"{what} is empty: give the path of a file"
    if any(not c.isprintable() for c in path):
        return f"{what} must be a path without control characters (got {path!r})"
    if path.endswith("/") or os.path.basename(path) in (".", ".."):
        return f"{what} '{path}' names a folder: give the path of a file"
    why = replace_problem(path, what)
    if why:
        return why
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        return (f"{what} '{path}': the folder '{folder}' "
                + ("is not a folder" if os.path.lexists(folder) else "does not exist (create it first)"))
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"{what} '{path}': cannot write in the folder '{folder}': permission denied"
    if os.path.isdir(temp_path(path)):
        return f"{what} '{path}': a folder is in the way at its temporary '{temp_path(path)}': remove it"
    name = os.path.basename(path)
    for run in run_folders:
        if _same_file(folder, run) and (name in RUN_FILES or any(fnmatch.fnmatchcase(name, p) for p in RUN_PATTERNS)):
            return f"{what} '{path}' is the run's own {name} in '{run}': writing it would destroy it; give another path"
        inputs = list(inputs) + run_files(run)
    for kind, other in inputs:
        if other and _same_file(path, other):
            return (f"{what} '{path}' is {kind} '{other}', which this run reads: writing it would destroy it; "
                    "give another path")
    return None


def output_check(path, what, inputs=(), run_folders=()):
    """Dies with one line, before any work, where path may not be written (output_problem)."""
    why = output_problem(path, what, inputs, run_folders)
    if why:
        die(why)


def check_outputs(folder, patterns, what="--out", inputs=()):
    """Dies with one line, before any work, at the first entry of the output folder that the harness
    would write (a name matching one of `patterns`, fnmatch's) and may not: a FIFO, a folder, a
    device, a link to one, or one of the run's inputs. A name not there yet is a new path."""
    with contextlib.suppress(OSError):
        for entry in sorted(os.listdir(folder)):
            if any(fnmatch.fnmatchcase(entry, p) for p in patterns):
                output_check(os.path.join(folder, entry), f"{what}: '{entry}'", inputs)


def _create_temp(path, what):
    """The temporary for path, created new (whatever is at its name, not a folder, is unlinked first,
    never followed) and registered as a partial file; (fd, tmp)."""
    why = replace_problem(path, what)
    if why:
        die(why)
    tmp = temp_path(path)
    with contextlib.suppress(FileNotFoundError, IsADirectoryError):
        if not os.path.isdir(tmp) or os.path.islink(tmp):
            os.unlink(tmp)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    except OSError as e:
        die(f"cannot write {what} '{path}': {e.strerror}")
    return fd, tmp


def _commit(tmp, path, what):
    """Renames the written temporary over path (what is there now still replaceable) and syncs the
    folder: the old file or the new one, whole."""
    why = replace_problem(path, what)
    if why:
        die(why)
    try:
        os.rename(tmp, path)
    except OSError as e:
        die(f"cannot rename '{tmp}' to '{path}': {e.strerror}")
    with contextlib.suppress(OSError):
        fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_output(path, data, what="the output"):
    """Writes data (str: UTF-8, or bytes) to path through its temporary: created new, written, synced,
    renamed over path. Dies with one line (the old file, if any, unchanged) where it cannot; a stop
    or an error on the way removes the temporary."""
    data = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = _create_temp(path, what)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        except OSError as e:
            die(f"cannot write {what} '{path}': {e.strerror} (the previous file, if any, is unchanged)")
        finally:
            os.close(fd)
        _commit(tmp, path, what)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


@contextlib.contextmanager
def output_text(path, what="the output"):
    """`with output_text(path) as f:` in place of open(path, "w"): f collects the text, written to
    path by write_output when the block ends without an error (nothing is written otherwise)."""
    f = io.StringIO(newline="")
    yield f
    write_output(path, f.getvalue(), what)


@contextlib.contextmanager
def output_path(path, what="the output"):
    """For a program that writes the file itself (gnuplot's set output): yields the temporary, made
    new and empty here, for it to write; then renames it over path. An error or a stop inside removes
    it, and path is as it was."""
    fd, tmp = _create_temp(path, what)
    os.close(fd)
    try:
        yield tmp
        st = os.lstat(tmp)
        if not stat.S_ISREG(st.st_mode):
            die(f"cannot write {what} '{path}': its temporary '{tmp}' was replaced by {file_kind(st.st_mode)}")
        _commit(tmp, path, what)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def read_input(path, limit, what=None, head=False):
    """A file a harness reads, at most `limit` bytes: opened without blocking (a FIFO with no writer
    is refused, not waited on), a regular file only (fstat: never a folder, FIFO, socket or device
    such as /dev/zero), not larger than limit (head=True: its first `limit` bytes, whatever its
    size). Dies with one line otherwise."""
    name = what or path
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as e:
        die(f"{name} is not a regular file: give a file" if e.errno == errno.ENXIO else
                   f"cannot read {name}: {e.strerror}")
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            die(f"{name} is a directory, not a file")
        if not stat.S_ISREG(st.st_mode):
            die(f"{name} is not a regular file (it is {file_kind(st.st_mode)}): give a file")
        if st.st_size > limit and not head:
            die(f"{name} is {st.st_size:,} bytes, more than the {limit:,} it may be")
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if head:
            return data[:limit]
        if len(data) > limit:
            die(f"{name} grew past the {limit:,} bytes it may be while it was read")
        return data
    except OSError as e:
        die(f"cannot read {name}: {e.strerror}")
    finally:
        os.close(fd)
