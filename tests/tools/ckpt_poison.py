"""Test helper: writes a copy of a checkpoint with one weight set to +inf and
the checksum recomputed, so that bin/train's divergence guard can be tested
on a checkpoint that loads. Usage: python3 -m tests.tools.ckpt_poison IN OUT"""
import struct
import sys

# The checksum's key in a header; its value is a kind of 8 bytes, then 16 hex digits.
KEY = b'"checksum":"'
FNV_KIND = b"fnv1a64:"


def fnv1a(data, h=0xcbf29ce484222325):
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def sign(raw):
    """A checkpoint's bytes (a bytearray) with its checksum made to match, in
    place: of the older kind, FNV-1a, which the programs read as they read
    XXH3's (Python's standard library has no XXH3)."""
    at = raw.index(KEY) + len(KEY)
    raw[at:at + 8] = FNV_KIND
    raw[at + 8:at + 24] = b"0" * 16
    raw[at + 8:at + 24] = b"%016x" % fnv1a(bytes(raw))
    return raw


def main(src, dst):
    raw = bytearray(open(src, "rb").read())
    (hlen,) = struct.unpack("<Q", raw[:8])
    # The first tensor in the data section is wte: poison its first float.
    raw[8 + hlen:8 + hlen + 4] = struct.pack("<f", float("inf"))
    open(dst, "wb").write(sign(raw))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
