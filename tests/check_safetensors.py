"""Reads a safetensors file written by devtensor (tests/test_nn.c saves one
with known values) with Python's standard library alone, and with PyTorch's
safetensors where it is installed. Prints PASS/FAIL/SKIP lines and the
"N passed, N failed, N skipped" summary, like the C tests."""
import json
import struct
import sys

from pyharness import check, skip, finish  # tests/pyharness.py, beside this file


SIZES = {"F32": ("f", 4), "F64": ("d", 8), "I32": ("i", 4), "I64": ("q", 8)}
path = sys.argv[1]
# what tests/test_nn.c put in: Sequential(Linear(2, 1)) with weight [[1.5, -2]], bias [0.25]
EXPECTED = {"0.weight": ([1, 2], [1.5, -2.0]), "0.bias": ([1], [0.25])}

try:
    blob = open(path, "rb").read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    data = blob[8 + n:]
    tensors = {k: v for k, v in header.items() if k != "__metadata__"}
    check("stdlib_header", set(tensors) == set(EXPECTED), "names %s" % sorted(tensors))
    ends = sorted((v["data_offsets"][0], v["data_offsets"][1]) for v in tensors.values())
    contiguous = ends[0][0] == 0 and all(a[1] == b[0] for a, b in zip(ends, ends[1:])) and ends[-1][1] == len(data)
    check("stdlib_offsets", contiguous, "offsets %s for %d data bytes" % (ends, len(data)))
    for name, (shape, values) in EXPECTED.items():
        e = tensors.get(name, {})
        code, size = SIZES.get(e.get("dtype"), ("?", 0))
        b, end = e.get("data_offsets", [0, 0])
        got = list(struct.unpack("<%d%s" % ((end - b) // max(size, 1), code), data[b:end])) if size else None
        check("stdlib_" + name, e.get("shape") == shape and got == values, "shape %s values %s" % (e.get("shape"), got))
except Exception as exc:  # a malformed file is a failure, not a crash of the runner
    check("stdlib_read", False, repr(exc))

try:
    from safetensors.torch import load_file
except ImportError:
    skip("safetensors_torch", "PyTorch's safetensors is not installed")
else:
    loaded = load_file(path)
    ok = set(loaded) == set(EXPECTED) and all(
        list(loaded[k].shape) == s and loaded[k].flatten().tolist() == v for k, (s, v) in EXPECTED.items())
    check("safetensors_torch", ok, str(loaded))

finish()
