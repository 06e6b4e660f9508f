"""Reads a safetensors file into numpy arrays, without torch: the header is
JSON, the tensors follow. This project's checkpoints and gradient dumps (F32,
I32), and files other programs write (Hugging Face's: F16, BF16 as float32,
F64, I64, BOOL, U8)."""
import json
import struct

import numpy as np

NUMPY_DTYPES = {"F32": np.float32, "I32": np.int32, "F16": np.float16, "F64": np.float64, "I64": np.int64,
                "BOOL": np.bool_, "U8": np.uint8}


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
        if info["dtype"] == "BF16":  # bfloat16 is the top half of a float32
            arr = (np.frombuffer(data[a:b], dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
        else:
            arr = np.frombuffer(data[a:b], dtype=NUMPY_DTYPES[info["dtype"]])
        tensors[name] = arr.reshape(info["shape"])
    return tensors, meta
