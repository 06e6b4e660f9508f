"""Whether a run trained: its validation curve (diverged: the training loss
stopped being a number, or the val loss ended no lower than it began, or
climbed back), whether it ended at the loss of a model that knows only
each token's frequency in train (the unigram model: it learned nothing of
context), and whether its loss falls with context along the window. make
paper's and make compare's reports say which runs did not train."""
import math
import os
import sys
from array import array
from collections import Counter

from harness.common import die, token_header
from harness.files import read_input


def val_curve(rows):
    """(val loss at step 0, the lowest later, the last, whether any training
    loss was not a number) from a run's training log rows; None without
    val losses."""
    val = [r["val_loss"] for r in rows if r["val_loss"] is not None]
    nan = any(r["ms_per_step"] is not None and r["train_loss"] is None for r in rows)
    return (val[0], min(val[1:] or val), val[-1], nan) if val else None


def read_token_file(path):
    """A token file (bin/prepare) as an array, and its vocabulary size."""
    head = token_header(path)
    tokens = array("H" if head["width"] == 2 else "I")
    body = read_input(path, 32 + head["count"] * head["width"], f"'{path}'", head=True)[32:]
    if len(body) != head["count"] * head["width"]:
        die(f"'{path}' is shorter than the {head['count']:,} tokens its header claims")
    tokens.frombytes(body)
    if sys.byteorder != "little":
        tokens.byteswap()
    return tokens, head["vocab"]


def unigram_loss(data):
    """The val loss, in nats per token, of the model that knows only how often
    each token occurs in train (add-one smoothed): what a model that learned
    nothing of context scores. None when the token files are not there."""
    paths = [os.path.join(data, f) for f in ("train.bin", "val.bin")]
    if not all(os.path.exists(p) for p in paths):
        return None
    (train, vocab), (val, _) = read_token_file(paths[0]), read_token_file(paths[1])
    if not val:
        return None
    counts, total = Counter(train), len(train) + vocab
    return -sum(n * math.log((counts[t] + 1) / total) for t, n in Counter(val).items()) / len(val)


# A run whose val loss ends within this much of the unigram model's learned
# token frequencies and nothing of context: it did not train.
UNIGRAM_MARGIN = 0.2


def stuck(row, unigram):
    """Whether a run ended at the unigram model's loss (see UNIGRAM_MARGIN)."""
    return unigram is not None and row["val_loss"] > unigram - UNIGRAM_MARGIN


def diverged(curve):
    """A run diverged when its training loss stopped being a number, or its
    last val loss is not below where it started, or climbed back more than
    0.5 nats above its lowest."""
    first, low, last, nan = curve
    return nan or last != last or last >= first or last > low + 0.5


def falls_with_context(by_position):
    """Whether a model's loss falls with context: its mean loss over the second half of the window's
    positions is below its loss at the first scored position (position 0: no context). by_position: the
    loss at each position (None where none was scored). A model for which it does not has learned nothing
    of its context, and a reading of where its loss sits in the window would be noise."""
    first = next((x for x in by_position if x is not None), None)
    late = [x for x in by_position[len(by_position) // 2:] if x is not None]
    return first is not None and bool(late) and sum(late) / len(late) < first
