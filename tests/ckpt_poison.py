"""Test helper: writes a copy of a checkpoint with one weight set to +inf and
the checksum recomputed, so that bin/train's divergence guard can be tested
on a checkpoint that loads. Usage: python3 -m tests.ckpt_poison IN OUT"""
import struct
import sys

KEY = b'"checksum":"fnv1a64:'


def fnv1a(data, h=0xcbf29ce484222325):
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def main(src, dst):
    raw = bytearray(open(src, "rb").read())
    (hlen,) = struct.unpack("<Q", raw[:8])
    # The first tensor in the data section is wte: poison its first float.
    raw[8 + hlen:8 + hlen + 4] = struct.pack("<f", float("inf"))
    at = raw.index(KEY) + len(KEY)
    raw[at:at + 16] = b"0" * 16
    raw[at:at + 16] = b"%016x" % fnv1a(bytes(raw))
    open(dst, "wb").write(raw)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
