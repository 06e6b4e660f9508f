"""Test helper: writes a hostile variant of a checkpoint, with the checksum
recomputed (of the older kind, FNV-1a: tests/tools/ckpt_poison.py) so that the
reader's own checks are what refuse it.
Usage: /usr/bin/python3 -m tests.tools.ckpt_forge KIND IN OUT, KIND one of
  huge       the config claims a 64-layer, 8192-wide model; the file is made
             (sparse) as large as its weights, so only memory stops a load
  dupkey     the header names "__metadata__" twice
  bigoffset  a tensor's data offsets past 2^53 (exact only as integers)
  realoffset a tensor's data offsets written as 0.0, n.0
  bighdr     the length field claims a 200 MB header (file made that large)
  tokenizer  the stored tokenizer's last merge reversed: it parses, but is not
             the tokenizer the stored hash names
  meta:KEY=VALUE  the metadata field KEY set to VALUE (a header that lies:
             step "abc", "-1", "99999999999999999999"...)
  overlap    the second tensor's data offsets the same as the first's (both
             of one size), its own bytes left unclaimed
  trailing   4 KB of bytes after the last tensor
  config:KEY=JSON  the config's field KEY set to the JSON value (a config
             that no longer claims the tensors the file holds:
             untied_head=false on an untied model, norm_type="rmsnorm" on a
             LayerNorm one)
  extra      one tensor more, named "h.0.extra.weight", that no config claims
  weights-only  the weights alone, as bin/convert writes a model: no optim.m. /
             optim.v. tensors, step 0, no data position or run options
  fnv1a      nothing changed but the checksum: the file the older writer,
             whose checksum was FNV-1a, wrote"""
import json
import struct
import sys

from tests.tools.ckpt_poison import sign


def pack(header_text, data):
    h = header_text.encode()
    h += b" " * (-(len(h) + 8) % 8)
    return bytes(sign(bytearray(struct.pack("<Q", len(h)) + h + data)))


def main(kind, src, dst):
    raw = open(src, "rb").read()
    (hlen,) = struct.unpack("<Q", raw[:8])
    text, data = raw[8:8 + hlen].decode().rstrip(), raw[8 + hlen:]
    header = json.loads(text)
    first = next(k for k in header if k != "__metadata__")
    size = None
    if kind == "huge":
        cfg = json.loads(header["__metadata__"]["config"])
        cfg.update(n_layer=64, n_embd=8192, n_head=64, block_size=16384, mixers=["attention"] * 64)
        header["__metadata__"]["config"] = json.dumps(cfg)
        text = json.dumps(header, separators=(",", ":"))
        params = 64 * 12 * 8192 * 8192 + (cfg["vocab_size"] + 16384) * 8192
        size = len(pack(text, b"")) + 2 * 4 * params  # room for every tensor, counted roughly
        data = b""
    elif kind == "dupkey":
        text = text[:-1] + ',"__metadata__":{}}'
    elif kind in ("bigoffset", "realoffset"):
        a, b = header[first]["data_offsets"]
        new = [2**53 + 1, 2**53 + 1 + b - a] if kind == "bigoffset" else [float(a), float(b)]
        header[first]["data_offsets"] = new
        text = json.dumps(header, separators=(",", ":"))
    elif kind == "tokenizer":
        meta = header["__metadata__"]
        lines = meta["tokenizer_text"].rstrip("\n").split("\n")
        lines[-1] = " ".join(reversed(lines[-1].split()))
        meta["tokenizer_text"] = "\n".join(lines) + "\n"
        text = json.dumps(header, separators=(",", ":"))
    elif kind == "weights-only":
        kept, parts, at = {}, [], 0
        for name, info in header.items():
            if name == "__metadata__" or name.startswith("optim."):
                continue
            a, b = info["data_offsets"]
            parts.append(data[a:b])
            kept[name] = dict(info, data_offsets=[at, at + b - a])
            at += b - a
        meta = dict(header["__metadata__"], step="0", data_rng="0", train="{}")
        text = json.dumps({"__metadata__": meta, **kept}, separators=(",", ":"))
        data = b"".join(parts)
    elif kind.startswith("meta:"):
        key, value = kind[5:].split("=", 1)
        header["__metadata__"][key] = value
        text = json.dumps(header, separators=(",", ":"))
    elif kind.startswith("config:"):
        key, value = kind[7:].split("=", 1)
        cfg = json.loads(header["__metadata__"]["config"])
        cfg[key] = json.loads(value)
        header["__metadata__"]["config"] = json.dumps(cfg, separators=(",", ":"))
        text = json.dumps(header, separators=(",", ":"))
    elif kind == "extra":
        end = max(info["data_offsets"][1] for name, info in header.items() if name != "__metadata__")
        header["h.0.extra.weight"] = {"dtype": "F32", "shape": [4], "data_offsets": [end, end + 16]}
        data += b"\0" * 16
        text = json.dumps(header, separators=(",", ":"))
    elif kind == "overlap":
        names = [k for k in header if k != "__metadata__"]
        size = lambda n: header[n]["data_offsets"][1] - header[n]["data_offsets"][0]
        a, b = next((a, b) for i, a in enumerate(names) for b in names[i + 1:] if size(a) == size(b))
        header[b]["data_offsets"] = list(header[a]["data_offsets"])
        text = json.dumps(header, separators=(",", ":"))
        size = None
    elif kind == "fnv1a":
        pass
    elif kind == "trailing":
        data += b"\x01" * 4096
    elif kind == "bighdr":
        out = struct.pack("<Q", 200_000_000) + raw[8:]
        with open(dst, "wb") as f:
            f.write(out)
            f.truncate(8 + 200_000_000 + len(data))
        return
    with open(dst, "wb") as f:
        f.write(pack(text, data))
        if size:
            f.truncate(size)  # sparse: no disk space used


if __name__ == "__main__":
    main(*sys.argv[1:])
