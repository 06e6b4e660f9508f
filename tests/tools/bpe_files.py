"""What the BPE shell tests read back (tests/cli/bpe_cli_test.sh): a prepared
directory's tokenizer as a table of byte strings, and a token file's ids."""
import struct


def byte_table(d, specials=()):
    """tokenizer.txt of directory d as a list: id -> the bytes it stands for
    (its 256 bytes, then each merge), then the given special tokens."""
    with open(f"{d}/tokenizer.txt", encoding="utf-8") as f:
        lines = f.read().split("\n")
    at = 5 + int(lines[4].split()[1])
    table = [bytes([i]) for i in range(256)]
    for line in lines[at + 1: at + 1 + int(lines[at].split()[1])]:
        left, right = map(int, line.split())
        table.append(table[left] + table[right])
    return table + [s.encode() for s in specials]


def token_ids(path):
    """A 16-bit token file: (width, vocab, ids)."""
    with open(path, "rb") as f:
        b = f.read()
    width, vocab, n = struct.unpack("<IQQ", b[12:32])
    assert width == 2 and len(b) == 32 + 2 * n, (path, width, n)
    return width, vocab, struct.unpack(f"<{n}H", b[32:])
