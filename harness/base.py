"""The bottom of the harness: where the repository and its programs are, the
harness's own name, and failing with one clear line. It imports nothing of
the harness, so every other module may import it (harness/common.py shares
these names with the programs)."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "bin")
# Debian's interpreter, the one with torch and numpy: what a harness that needs
# PyTorch is run with when the running interpreter is not known.
PYTHON = "/usr/bin/python3"


def program_name():
    """The harness being run: 'probe' for python3 -m harness.probe, 'bench'
    for python3 -m harness.bench (a package: its __main__.py)."""
    path = sys.argv[0] or "harness"
    name = os.path.splitext(os.path.basename(path))[0]
    return os.path.basename(os.path.dirname(path)) if name == "__main__" else name


def printable(text):
    """text with its line breaks as spaces and any other character a terminal could act on (ESC, a
    bidi override) as its Python escape: what a message may echo of a file or an option."""
    return "".join(c if c.isprintable() else " " if c in "\n\r" else repr(c)[1:-1] for c in str(text))


def die(msg, status=2):
    """'<harness>: error: MSG' on stderr, one line, and exit with status
    (2: bad options or input, 1: a program it ran failed)."""
    print(f"{program_name()}: error: {printable(msg)}", file=sys.stderr)
    sys.exit(status)
