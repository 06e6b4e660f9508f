"""Reads a safetensors file (this project's checkpoints and gradient dumps)
into numpy arrays, without torch: the header is JSON, the tensors follow."""
import json
import struct

import numpy as np


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (hlen,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + hlen])
    meta = header.pop("__metadata__", {})
    data = raw[8 + hlen:]
    tensors = {}
    for name, info in header.items():
        a, b = info["data_offsets"]
        dtype = {"F32": np.float32, "I32": np.int32}[info["dtype"]]
        tensors[name] = np.frombuffer(data[a:b], dtype=dtype).reshape(info["shape"])
    return tensors, meta
