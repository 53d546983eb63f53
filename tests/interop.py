"""Tensors between devtensor (libdevtensor.so, loaded with ctypes) and PyTorch
and NumPy through DLPack capsules, both ways, zero copy (the same data pointer),
values checked, nothing left behind; safetensors files both ways. Run by
tests/interop_py.sh: python3 tests/interop.py build/lib/<cpu|cuda>/libdevtensor.so.
On a machine with a GPU the same exchange runs with torch CUDA tensors (and CuPy
where installed), with the stream handshake. Prints the harness's lines."""
import ctypes as C
import gc
import json
import os
import struct
import sys
import tempfile

import numpy as np
import torch
import torch.utils.dlpack as tdl

from pyharness import check, skip, finish  # tests/pyharness.py, beside this file


# ---- the C side: devtensor.h's structs and functions ----
class Shape(C.Structure):
    _fields_ = [("ndim", C.c_int), ("dims", C.c_int64 * 8)]


class Device(C.Structure):
    _fields_ = [("type", C.c_int), ("index", C.c_int)]


class DLDevice(C.Structure):
    _fields_ = [("device_type", C.c_int32), ("device_id", C.c_int32)]


class DLDataType(C.Structure):
    _fields_ = [("code", C.c_uint8), ("bits", C.c_uint8), ("lanes", C.c_uint16)]


class DLTensor(C.Structure):
    _fields_ = [("data", C.c_void_p), ("device", DLDevice), ("ndim", C.c_int32), ("dtype", DLDataType),
                ("shape", C.POINTER(C.c_int64)), ("strides", C.POINTER(C.c_int64)), ("byte_offset", C.c_uint64)]


class DLManagedTensor(C.Structure):
    pass


LEGACY_DELETER = C.CFUNCTYPE(None, C.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", C.c_void_p), ("deleter", LEGACY_DELETER)]


class DLPackVersion(C.Structure):
    _fields_ = [("major", C.c_uint32), ("minor", C.c_uint32)]


class DLManagedTensorVersioned(C.Structure):
    pass


VERSIONED_DELETER = C.CFUNCTYPE(None, C.POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [("version", DLPackVersion), ("manager_ctx", C.c_void_p),
                                     ("deleter", VERSIONED_DELETER), ("flags", C.c_uint64), ("dl_tensor", DLTensor)]

lib = C.CDLL(sys.argv[1])
P = C.c_void_p
for name, res, args in [
        ("dt_from_data", P, [P, Shape, C.c_int, Device]), ("dt_arange", P, [C.c_double, C.c_double, C.c_double, C.c_int, Device]),
        ("dt_reshape", P, [P, Shape]), ("dt_release", None, [P]), ("dt_data_ptr", P, [P]), ("dt_to_host", C.c_int, [P, P, C.c_size_t]),
        ("dt_nbytes", C.c_size_t, [P]), ("dt_numel", C.c_int64, [P]), ("dt_dtype_of", C.c_int, [P]), ("dt_ndim", C.c_int, [P]),
        ("dt_dim", C.c_int64, [P, C.c_int]), ("dt_fill_", C.c_int, [P, C.c_double]), ("dt_device_of", Device, [P]),
        ("dt_last_error", C.c_char_p, []), ("dt_num_gpus", C.c_int, []), ("dt_cuda_stream", P, [Device]),
        ("dt_synchronize", C.c_int, [Device]), ("dt_mul_scalar", P, [P, C.c_double]), ("dt_cast", P, [P, C.c_int]),
        ("dt_to_dlpack", C.POINTER(DLManagedTensorVersioned), [P]), ("dt_from_dlpack", P, [P]),
        ("dt_to_dlpack_legacy", C.POINTER(DLManagedTensor), [P]), ("dt_from_dlpack_legacy", P, [P]),
        ("dt_save_tensors", C.c_int, [C.c_char_p, P, P, C.c_int]),
        ("dt_load_tensors", C.c_int, [C.c_char_p, Device, C.POINTER(C.c_int), C.POINTER(C.POINTER(C.c_char_p)), C.POINTER(C.POINTER(P))]),
        ("dt_free_tensors", None, [C.c_int, P, P])]:
    f = getattr(lib, name)
    f.restype = res
    f.argtypes = args

F32, F64, I32, I64, U8, BOOL, F16, BF16 = 0, 1, 2, 3, 4, 5, 6, 7
DT_NP = {F32: np.float32, F64: np.float64, I32: np.int32, I64: np.int64, U8: np.uint8, BOOL: np.bool_}
DT_TORCH = {F32: torch.float32, F64: torch.float64, I32: torch.int32, I64: torch.int64, U8: torch.uint8, BOOL: torch.bool}
CPU = Device(0, 0)


def shape(*dims):
    s = Shape()
    s.ndim = len(dims)
    for i, d in enumerate(dims):
        s.dims[i] = d
    return s


def dt_values(t):
    """A devtensor tensor's values, copied to a NumPy array (by dt_to_host)."""
    nd = lib.dt_ndim(t)
    a = np.empty([lib.dt_dim(t, i) for i in range(nd)], DT_NP[lib.dt_dtype_of(t)])
    assert lib.dt_to_host(t, a.ctypes.data, a.nbytes) == 0
    return a


def dt_arange(n, dtype, dev, *dims):
    a = lib.dt_arange(0, n, 1, dtype, dev)
    t = lib.dt_reshape(a, shape(*dims))
    lib.dt_release(a)
    return t


# capsules from C pointers and back (the Python C API through ctypes)
PyCapsule_New = C.pythonapi.PyCapsule_New
PyCapsule_New.restype = C.py_object
PyCapsule_New.argtypes = [P, C.c_char_p, P]
PyCapsule_GetPointer = C.pythonapi.PyCapsule_GetPointer
PyCapsule_GetPointer.restype = P
PyCapsule_GetPointer.argtypes = [C.py_object, C.c_char_p]
PyCapsule_SetName = C.pythonapi.PyCapsule_SetName
PyCapsule_SetName.restype = C.c_int
PyCapsule_SetName.argtypes = [C.py_object, C.c_char_p]
PyCapsule_IsValid = C.pythonapi.PyCapsule_IsValid
PyCapsule_IsValid.restype = C.c_int
PyCapsule_IsValid.argtypes = [C.py_object, C.c_char_p]


def import_capsule(cap):
    """The consumer's half of the protocol: import, then mark the capsule used."""
    t = lib.dt_from_dlpack_legacy(PyCapsule_GetPointer(cap, b"dltensor"))
    if t:
        PyCapsule_SetName(cap, b"used_dltensor")
    return t


_kept = []


def watch_deleter(cap):
    """Wraps a consumed capsule's deleter: the returned list counts its calls."""
    m = C.cast(PyCapsule_GetPointer(cap, b"used_dltensor"), C.POINTER(DLManagedTensor))
    if not hasattr(cap, "_calls"):
        calls = []
        orig = LEGACY_DELETER(C.cast(m.contents.deleter, P).value)   # the address itself, not a view of the field

        def wrapped(self):
            calls.append(1)
            orig(self)
        fn = LEGACY_DELETER(wrapped)
        _kept.append((fn, orig, calls))
        m.contents.deleter = fn
        return calls
    return None


class Exported:
    """devtensor's capsule behind the __dlpack__ protocol (for np.from_dlpack)."""
    def __init__(self, t, dev_type=1, dev_id=0):
        self.cap = PyCapsule_New(C.cast(lib.dt_to_dlpack_legacy(t), P), b"dltensor", None)
        self.dev = (dev_type, dev_id)

    def __dlpack__(self, stream=None):
        return self.cap

    def __dlpack_device__(self):
        return self.dev


def cpu_bytes(dev=CPU):
    """devtensor's allocator in use on dev (the leak check): dt_memory_stats_get."""
    class Stats(C.Structure):
        _fields_ = [("allocated", C.c_size_t), ("reserved", C.c_size_t), ("peak", C.c_size_t)]
    s = Stats()
    lib.dt_memory_stats_get.argtypes = [Device, C.POINTER(Stats)]
    lib.dt_memory_stats_get(dev, C.byref(s))
    return s.allocated


def torch_capsule(x, dev):
    """torch's capsule for devtensor; on a GPU with the handshake (__dlpack__(stream=...)):
    devtensor's stream waits for the work torch queued on its current stream."""
    if x.is_cuda:
        return x.__dlpack__(stream=lib.dt_cuda_stream(dev) or 1)
    return tdl.to_dlpack(x)


def test_to_torch(dev, tdev):
    """devtensor -> torch: every dtype, the same pointer, shared writes, the deleter once."""
    base = cpu_bytes(dev)
    for dt in (F32, F64, I32, I64):
        t = dt_arange(12, dt, dev, 3, 4)
        ptr = lib.dt_data_ptr(t)
        cap = PyCapsule_New(C.cast(lib.dt_to_dlpack_legacy(t), P), b"dltensor", None)
        x = tdl.from_dlpack(cap)
        lib.dt_release(t)                      # the capsule keeps the memory
        name = "devtensor -> torch %s [%s]" % (DT_TORCH[dt], tdev)
        ok = (x.data_ptr() == ptr and x.dtype == DT_TORCH[dt] and tuple(x.shape) == (3, 4) and x.device.type == tdev
              and torch.equal(x.cpu(), torch.arange(12, dtype=DT_TORCH[dt]).reshape(3, 4)))
        check(name + ": zero copy, values", ok, (hex(x.data_ptr()), hex(ptr), x))
        x[1, 2] = 77                          # torch writes, devtensor sees it (through another capsule back)
        back = import_capsule(torch_capsule(x, dev))
        check(name + ": a write seen from devtensor", back and lib.dt_data_ptr(back) == ptr and dt_values(back)[1, 2] == 77)
        lib.dt_release(back)
        del x, cap
        gc.collect()
    check("devtensor -> torch [%s]: every byte returned after the capsules die" % tdev, cpu_bytes(dev) == base, (cpu_bytes(dev), base))


def test_from_torch(dev, tdev):
    """torch -> devtensor: every dtype, the same pointer, writes both ways, torch's reference released."""
    for dt in (F32, F64, I32, I64):
        x = torch.arange(10, dtype=DT_TORCH[dt], device=tdev).reshape(2, 5)
        cap = torch_capsule(x, dev)   # on a GPU: torch's arange ordered before devtensor's stream
        t = import_capsule(cap)
        name = "torch %s -> devtensor [%s]" % (DT_TORCH[dt], tdev)
        if t:
            calls = watch_deleter(cap)
            check(name + ": torch's deleter not run while devtensor holds it", calls == [])
        check(name + ": accepted", bool(t), lib.dt_last_error())
        if not t:
            continue
        d = lib.dt_device_of(t)
        check(name + ": zero copy, values, device", lib.dt_data_ptr(t) == x.data_ptr() and d.type == dev.type and d.index == dev.index
              and (dt_values(t) == np.arange(10).reshape(2, 5)).all())
        lib.dt_fill_(t, 5)
        lib.dt_synchronize(dev)
        check(name + ": devtensor's write seen by torch", bool((x == 5).all()))
        y = lib.dt_mul_scalar(t, 2)
        check(name + ": an operation on it", (dt_values(y) == 10).all())
        lib.dt_release(y)
        calls = watch_deleter(cap)
        lib.dt_release(t)
        check(name + ": torch's deleter ran once, at the last release", calls == [1], calls)
        del cap
        gc.collect()


def test_bytes_torch(dev, tdev):
    """uint8 and bool both ways (kDLUInt 8 bits, kDLBool 8 bits): zero copy, dtype, values."""
    for dt, x in ((U8, torch.tensor([[0, 1, 200], [255, 7, 3]], dtype=torch.uint8)),
                  (BOOL, torch.tensor([[True, False, True], [False, False, True]]))):
        x = x.to(tdev)
        name = "torch %s [%s]" % (x.dtype, tdev)
        try:
            cap = torch_capsule(x, dev)
        except (RuntimeError, TypeError, BufferError) as e:   # torch < 2.x exports no bool
            skip(name + " <-> devtensor", "this torch cannot export it: %s" % e)
            continue
        t = import_capsule(cap)
        check(name + " -> devtensor: zero copy, dtype, values", bool(t) and lib.dt_dtype_of(t) == dt
              and lib.dt_data_ptr(t) == x.data_ptr() and (dt_values(t) == x.cpu().numpy()).all(), lib.dt_last_error())
        if t:
            y = tdl.from_dlpack(PyCapsule_New(C.cast(lib.dt_to_dlpack_legacy(t), P), b"dltensor", None))
            lib.dt_release(t)
            check(name + " -> devtensor -> torch: the same dtype, values and memory",
                  y.dtype == x.dtype and y.data_ptr() == x.data_ptr() and torch.equal(y.cpu(), x.cpu()))
            del y
        del cap
        gc.collect()


def half_bits(t):
    """A float16 or bfloat16 devtensor tensor's bits (by dt_to_host), as uint16."""
    a = np.empty(lib.dt_numel(t), np.uint16)
    assert lib.dt_to_host(t, a.ctypes.data, a.nbytes) == 0
    return a


def test_half_torch(dev, tdev):
    """float16 (kDLFloat 16 bits) and bfloat16 (kDLBfloat 16 bits) both ways: zero copy, dtype, the
    same bits (NaN, infinities, a subnormal and -0 among them)."""
    vals = torch.tensor([[0.0, -0.0, 1.5, float("inf")], [float("-inf"), float("nan"), 1e-7, -65504.0]])
    for dt, tdt in ((F16, torch.float16), (BF16, torch.bfloat16)):
        x = vals.to(tdt).to(tdev)
        bits = x.cpu().view(torch.int16).numpy().view(np.uint16).ravel()
        name = "torch %s [%s]" % (x.dtype, tdev)
        t = import_capsule(torch_capsule(x, dev))
        check(name + " -> devtensor: zero copy, dtype, bits", bool(t) and lib.dt_dtype_of(t) == dt
              and lib.dt_data_ptr(t) == x.data_ptr() and (half_bits(t) == bits).all(), lib.dt_last_error())
        if t:
            y = tdl.from_dlpack(PyCapsule_New(C.cast(lib.dt_to_dlpack_legacy(t), P), b"dltensor", None))
            lib.dt_release(t)
            check(name + " -> devtensor -> torch: the same dtype, bits and memory",
                  y.dtype == x.dtype and y.data_ptr() == x.data_ptr() and torch.equal(y.cpu().view(torch.int16), x.cpu().view(torch.int16)))
            del y
        a = dt_arange(8, F32, dev, 2, 4)
        h = lib.dt_cast(a, dt)
        lib.dt_release(a)
        y = tdl.from_dlpack(PyCapsule_New(C.cast(lib.dt_to_dlpack_legacy(h), P), b"dltensor", None)) if h else None
        check("devtensor %s [%s] -> torch: zero copy, dtype, values" % (tdt, tdev), y is not None and y.dtype == tdt
              and y.data_ptr() == lib.dt_data_ptr(h) and torch.equal(y.cpu().float(), torch.arange(8.0).reshape(2, 4)))
        lib.dt_release(h)
        del y
        gc.collect()


def test_numpy(dev):
    """NumPy 1.24: np.from_dlpack of devtensor's capsule; ndarray.__dlpack__ into devtensor."""
    base = cpu_bytes()
    for dt in (F32, F64, I32, I64):
        t = dt_arange(6, dt, CPU, 2, 3)
        ptr = lib.dt_data_ptr(t)
        a = np.from_dlpack(Exported(t))
        lib.dt_release(t)
        check("devtensor -> numpy %s: zero copy, values" % np.dtype(DT_NP[dt]),
              a.__array_interface__["data"][0] == ptr and a.dtype == DT_NP[dt] and (a == np.arange(6).reshape(2, 3)).all())
        del a
        b = np.arange(8, dtype=DT_NP[dt]).reshape(4, 2)
        rc = sys.getrefcount(b)
        t = import_capsule(b.__dlpack__())
        check("numpy %s -> devtensor: zero copy, values" % np.dtype(DT_NP[dt]),
              bool(t) and lib.dt_data_ptr(t) == b.ctypes.data and (dt_values(t) == b).all(), lib.dt_last_error())
        check("numpy %s -> devtensor: the capsule holds the array" % np.dtype(DT_NP[dt]), sys.getrefcount(b) == rc + 1)
        lib.dt_fill_(t, -1)
        check("numpy %s -> devtensor: devtensor's write seen by numpy" % np.dtype(DT_NP[dt]), (b == -1).all())
        lib.dt_release(t)
        gc.collect()
        check("numpy %s -> devtensor: the array released by the deleter" % np.dtype(DT_NP[dt]), sys.getrefcount(b) == rc)
    gc.collect()
    check("devtensor -> numpy: every byte returned", cpu_bytes() == base, (cpu_bytes(), base))


def test_edge_shapes():
    """0-d and empty tensors both ways (an empty export's data is NULL, as the spec asks)."""
    e = dt_arange(0, F32, CPU, 0, 3)
    x = tdl.from_dlpack(PyCapsule_New(C.cast(lib.dt_to_dlpack_legacy(e), P), b"dltensor", None))
    a = np.from_dlpack(Exported(e))
    lib.dt_release(e)
    check("devtensor (0, 3) -> torch and numpy", tuple(x.shape) == (0, 3) and a.shape == (0, 3))
    z = dt_arange(1, I64, CPU)   # 0-d: the value 0
    y = tdl.from_dlpack(PyCapsule_New(C.cast(lib.dt_to_dlpack_legacy(z), P), b"dltensor", None))
    lib.dt_release(z)
    check("devtensor 0-d -> torch", tuple(y.shape) == () and y.item() == 0 and y.dtype == torch.int64)
    t = import_capsule(tdl.to_dlpack(torch.tensor(3.5, dtype=torch.float64)))
    t2 = import_capsule(tdl.to_dlpack(torch.empty(0, 4)))
    check("torch 0-d and (0, 4) -> devtensor", bool(t) and bool(t2) and lib.dt_ndim(t) == 0 and float(dt_values(t)) == 3.5
          and lib.dt_ndim(t2) == 2 and lib.dt_numel(t2) == 0)
    lib.dt_release(t)
    lib.dt_release(t2)


def test_refused():
    """What devtensor cannot hold is refused, and the capsule stays the producer's."""
    cases = [(torch.arange(6.).reshape(2, 3).t(), "contiguous"), (torch.ones(3, dtype=torch.int8), "int8"),
             (np.ones(3, dtype=np.int16), "int16"), (np.ones(3, dtype=np.uint16), "uint16"),
             (torch.ones(3, dtype=torch.int16), "int16"), (torch.ones(3, dtype=torch.complex64), "complex64"),
             (np.ones((3, 4), dtype=np.float32)[:, ::2], "contiguous"), (np.ones(3, dtype=np.complex64), "complex64")]
    for x, word in cases:
        what = "torch %s %s" % (x.dtype, tuple(x.stride())) if isinstance(x, torch.Tensor) else "numpy %s %s" % (x.dtype, x.strides)
        try:
            cap = x.__dlpack__()
        except (RuntimeError, TypeError, BufferError) as e:
            print("  (%s: the producer cannot export it: %s)" % (what, e))
            continue
        t = lib.dt_from_dlpack_legacy(PyCapsule_GetPointer(cap, b"dltensor"))
        msg = lib.dt_last_error().decode()
        check("%s refused: %s" % (what, msg), not t and word in msg and "dt_from_dlpack_legacy" in msg
              and PyCapsule_IsValid(cap, b"dltensor"))
        del cap   # torch's own destructor frees the unconsumed capsule
    gc.collect()


def test_versioned():
    """DLPack 1.x capsules (torch 1.13 and NumPy 1.24 speak only the legacy kind): every field
    of devtensor's, read here; a producer's built here, over NumPy memory, with a deleter in Python."""
    t = dt_arange(6, F64, CPU, 3, 2)
    m = lib.dt_to_dlpack(t)
    x = m.contents.dl_tensor
    a = np.ctypeslib.as_array(C.cast(x.data, C.POINTER(C.c_double)), shape=(3, 2))
    ok = (m.contents.version.major == 1 and m.contents.flags == 0 and x.device.device_type == 1 and x.ndim == 2
          and (x.dtype.code, x.dtype.bits, x.dtype.lanes) == (2, 64, 1) and (x.shape[0], x.shape[1]) == (3, 2)
          and (x.strides[0], x.strides[1]) == (2, 1) and x.byte_offset == 0 and x.data == lib.dt_data_ptr(t)
          and (a == np.arange(6).reshape(3, 2)).all())
    check("dt_to_dlpack: version 1.x, flags, device, dtype, shape, strides, the data in place", ok)
    lib.dt_release(t)
    m.contents.deleter(m)
    calls = []
    arr = np.arange(12, dtype=np.float32)
    sh = (C.c_int64 * 2)(3, 4)
    mv = DLManagedTensorVersioned()
    mv.version = DLPackVersion(1, 0)
    mv.deleter = VERSIONED_DELETER(lambda self: calls.append(1))
    mv.dl_tensor = DLTensor(arr.ctypes.data, DLDevice(1, 0), 2, DLDataType(2, 32, 1), sh, None, 4)   # byte_offset: one float
    mv.flags = 1   # read-only
    t = lib.dt_from_dlpack(C.byref(mv))
    check("dt_from_dlpack refuses a read-only capsule: " + lib.dt_last_error().decode(), not t and calls == [])
    mv.flags = 0
    mv.dl_tensor.shape[1] = 2   # 3 x 2 from element 1 on... 6 elements
    t = lib.dt_from_dlpack(C.byref(mv))
    check("dt_from_dlpack: byte_offset, strides NULL, zero copy", bool(t) and lib.dt_data_ptr(t) == arr.ctypes.data + 4
          and (dt_values(t) == np.arange(1, 7).reshape(3, 2)).all(), lib.dt_last_error())
    lib.dt_release(t)
    check("dt_from_dlpack: the producer's deleter ran once", calls == [1])


def test_safetensors():
    d = tempfile.mkdtemp()
    path = os.path.join(d, "t.safetensors")
    ts = [dt_arange(6, F32, CPU, 2, 3), dt_arange(4, F64, CPU, 4), dt_arange(3, I32, CPU, 3, 1), dt_arange(2, I64, CPU, 1, 2)]
    names = [b"layer.weight", b"layer.bias", b"idx", b"steps"]
    rc = lib.dt_save_tensors(path.encode(), C.cast((C.c_char_p * 4)(*names), P), C.cast((P * 4)(*ts), P), 4)
    check("dt_save_tensors", rc == 0, lib.dt_last_error())
    # the format read with the standard library and torch.frombuffer
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    hdr = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    sdt = {"F32": torch.float32, "F64": torch.float64, "I32": torch.int32, "I64": torch.int64}
    ok = n % 8 == 0 and hdr.get("__metadata__") == {"format": "pt"}
    for nm, t in zip(names, ts):
        e = hdr[nm.decode()]
        b, en = e["data_offsets"]
        v = torch.frombuffer(bytearray(data[b:en]), dtype=sdt[e["dtype"]]).reshape(e["shape"]) if en > b else None
        ok = ok and v is not None and (v.numpy() == dt_values(t)).all()
    check("dt_save_tensors: read back with json + torch.frombuffer", ok, hdr)
    try:
        from safetensors.torch import load_file, save_file
    except ImportError:
        load_file = save_file = None
    if load_file:
        got = load_file(path)
        check("dt_save_tensors: read by safetensors.torch.load_file",
              all((got[nm.decode()].numpy() == dt_values(t)).all() for nm, t in zip(names, ts)))
    else:
        skip("safetensors.torch.load_file", "the safetensors package is not installed (its layout is checked above)")
    for t in ts:
        lib.dt_release(t)
    # a file as safetensors.torch.save_file writes it: keys sorted, header padded with spaces to 8
    want = {"b": torch.arange(5, dtype=torch.float64) / 4, "a.w": torch.arange(6, dtype=torch.float32).reshape(3, 2) - 2,
            "i": torch.tensor([[7, -8]], dtype=torch.int64), "j": torch.tensor(3, dtype=torch.int32),
            "px": torch.tensor([0, 128, 255], dtype=torch.uint8), "m": torch.tensor([[True], [False]])}
    path2 = os.path.join(d, "torch.safetensors")
    if save_file:
        save_file(want, path2)
    else:
        code = {torch.float32: "F32", torch.float64: "F64", torch.int32: "I32", torch.int64: "I64", torch.uint8: "U8", torch.bool: "BOOL"}
        h, blob = {"__metadata__": {"format": "pt"}}, b""
        for k in sorted(want):
            v = want[k]
            h[k] = {"dtype": code[v.dtype], "shape": list(v.shape), "data_offsets": [len(blob), len(blob) + v.numel() * v.element_size()]}
            blob += v.numpy().tobytes()
        hb = json.dumps(h, separators=(",", ":")).encode()
        hb += b" " * (-len(hb) % 8)
        with open(path2, "wb") as f:
            f.write(struct.pack("<Q", len(hb)) + hb + blob)
    n = C.c_int()
    nm = C.POINTER(C.c_char_p)()
    tp = C.POINTER(P)()
    rc = lib.dt_load_tensors(path2.encode(), CPU, C.byref(n), C.byref(nm), C.byref(tp))
    ok = rc == 0 and n.value == 6
    for i in range(n.value if rc == 0 else 0):
        k = nm[i].decode()
        ok = ok and k in want and (dt_values(tp[i]) == want[k].numpy()).all() and dt_values(tp[i]).dtype == want[k].numpy().dtype
    check("dt_load_tensors: a file laid out as safetensors.torch.save_file writes it%s" % ("" if save_file else " (written here)"),
          ok, lib.dt_last_error())
    if rc == 0:
        lib.dt_free_tensors(n.value, nm, tp)


def test_cupy(dev):
    try:
        import cupy
    except ImportError:
        skip("cupy <-> devtensor", "CuPy is not installed")
        return
    t = dt_arange(6, F32, dev, 2, 3)
    x = cupy.from_dlpack(Exported(t, 2, dev.index))
    check("devtensor -> cupy: same device pointer, values", x.data.ptr == lib.dt_data_ptr(t) and (x.get() == np.arange(6).reshape(2, 3)).all())
    lib.dt_release(t)
    y = cupy.arange(8, dtype=cupy.float64)
    t = import_capsule(y.__dlpack__(stream=lib.dt_cuda_stream(dev) or 1))
    check("cupy -> devtensor: same device pointer, values", bool(t) and lib.dt_data_ptr(t) == y.data.ptr and (dt_values(t) == np.arange(8)).all())
    lib.dt_release(t)


print("numpy %s, torch %s, %s" % (np.__version__, torch.__version__, os.path.basename(os.path.dirname(sys.argv[1]))))
test_to_torch(CPU, "cpu")
test_from_torch(CPU, "cpu")
test_bytes_torch(CPU, "cpu")
test_half_torch(CPU, "cpu")
test_numpy(CPU)
test_edge_shapes()
test_refused()
test_versioned()
test_safetensors()
ngpu = lib.dt_num_gpus()
if ngpu > 0 and torch.cuda.is_available():
    test_to_torch(Device(1, 0), "cuda")
    test_from_torch(Device(1, 0), "cuda")
    test_bytes_torch(Device(1, 0), "cuda")
    test_half_torch(Device(1, 0), "cuda")
    test_cupy(Device(1, 0))
else:
    skip("torch CUDA tensors and CuPy <-> devtensor", "no GPU here (devtensor sees %d, torch.cuda %s)" % (ngpu, torch.cuda.is_available()))
finish()
