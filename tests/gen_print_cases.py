#!/usr/bin/python3
"""Writes tests/print_cases.inc: tensors and the exact text PyTorch prints for them.

Run with the Python that has torch (here /usr/bin/python3):

    /usr/bin/python3 tests/gen_print_cases.py

Each case gives a dtype, a shape and its values, either explicitly (as bit
patterns) or by a generator evaluated identically in C:

    k = (i * mul + add) % mod                      (integers, i = flat index)
    float dtypes: v = (double)k * scale + offset   (two double roundings,
                  then one rounding to float32 for F32)
    int dtypes:   v = k * iscale + ioffset         (int64)

then a few patches (flat index, bit pattern). The expected text is repr() of
the tensor on the CPU; for a device case it is rebuilt from torch's own
_tensor_str/_add_suffixes the way _str_intern does for a CUDA tensor (the
device suffix first), which is checked against _str_intern itself.
"""
import os
import struct
import sys

import numpy as np
import torch
import torch._tensor_str as ts

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "print_cases.inc")

DTYPES = {"DT_F32": torch.float32, "DT_F64": torch.float64,
          "DT_I32": torch.int32, "DT_I64": torch.int64}

torch.set_printoptions(profile="default")
assert torch.get_default_dtype() == torch.float32


# ---- the expected text ----

def repr_on(t, device):
    """_str_intern for a plain strided tensor that lives on `device`
    (None: the CPU), with torch's own helpers."""
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    if device is not None:
        suffixes.append("device='" + device + "'")
    has_default_dtype = t.dtype in (torch.get_default_dtype(), torch.cfloat, torch.int64, torch.bool)
    if t.numel() == 0:
        if t.dim() != 1:
            suffixes.append("size=" + str(tuple(t.shape)))
        if t.dtype != torch.get_default_dtype():
            suffixes.append("dtype=" + str(t.dtype))
        tensor_str = "[]"
    else:
        if not has_default_dtype:
            suffixes.append("dtype=" + str(t.dtype))
        tensor_str = ts._tensor_str(t, indent)
    return ts._add_suffixes(prefix + tensor_str, suffixes, indent, force_newline=False)


def repr_with_fake_default_device(t):
    """repr() through the real _str_intern while it believes the default
    device is 'cuda', so a CPU tensor gets a device='cpu' suffix."""
    real = torch._C._get_default_device
    torch._C._get_default_device = lambda: "cuda"
    try:
        return repr(t)
    finally:
        torch._C._get_default_device = real


# ---- values ----

def bits_of(t):
    a = t.contiguous().reshape(-1).numpy()
    if t.dtype == torch.float32:
        return [int(x) for x in a.view(np.uint32)]
    if t.dtype == torch.float64:
        return [int(x) for x in a.view(np.uint64)]
    return [int(x) & 0xFFFFFFFFFFFFFFFF for x in a.astype(np.int64)]


def gen_tensor(dtype, shape, g):
    n = 1
    for d in shape:
        n *= d
    ks = [(i * g["mul"] + g["add"]) % g["mod"] for i in range(n)]
    if DTYPES[dtype].is_floating_point:
        vals = [float(k) * g["scale"] + g["offset"] for k in ks]
        t = torch.tensor(vals, dtype=torch.float64).to(DTYPES[dtype])
    else:
        vals = [k * g["iscale"] + g["ioffset"] for k in ks]
        t = torch.tensor(vals, dtype=torch.int64).to(DTYPES[dtype])
        assert t.tolist() == vals, "generated ints must fit the dtype"
    t = t.reshape(shape)
    flat = t.reshape(-1)
    for idx, v in g.get("patch", []):
        flat[idx] = v
    return t


CASES = []


def case(name, dtype, shape, values=None, device=None, **gen):
    """values: a nested list (explicit) or None with generator arguments."""
    shape = tuple(shape)
    if values is not None:
        t = torch.tensor(values, dtype=DTYPES[dtype]).reshape(shape)
        g = None
    else:
        g = dict(mul=1, add=0, mod=1 << 40, scale=1.0, offset=0.0, iscale=1, ioffset=0)
        g.update(gen)
        t = gen_tensor(dtype, shape, g)
    CASES.append(dict(name=name, dtype=dtype, shape=shape, t=t, gen=g, device=device))


nan, inf = float("nan"), float("inf")

# -- float32 basics
case("f32_small", "DT_F32", [3], [1., 2., 3.])
case("f32_frac", "DT_F32", [3], [1.5, -2.25, 3.125])
case("f32_ones_2x3", "DT_F32", [2, 3], [1.] * 6)
case("f32_single", "DT_F32", [1], [3.])
case("f32_single_frac", "DT_F32", [1], [0.1])
case("f32_0d", "DT_F32", [], 3.)
case("f32_0d_frac", "DT_F32", [], 3.14159)
case("f32_0d_neg_zero", "DT_F32", [], -0.)
case("f32_0d_nan", "DT_F32", [], nan)
case("f32_0d_sci", "DT_F32", [], 1.5e-7)
case("f32_all_zero", "DT_F32", [2, 3], [0.] * 6)
case("f32_zero_neg_zero", "DT_F32", [2], [0., -0.])
case("f32_neg_zero_frac", "DT_F32", [2], [-0., 1.5])
case("f32_negative", "DT_F32", [4], [-1.5, 2.25, -3., 0.125])
case("f32_negative_int", "DT_F32", [3], [-1., -20., 300.])
case("f32_negative_all", "DT_F32", [3], [-1., -10., -100.])
case("f32_nan_inf_int", "DT_F32", [4], [1., nan, -inf, inf])
case("f32_inf_int_narrow", "DT_F32", [3], [1., 2., inf])
case("f32_neg_inf_wide", "DT_F32", [2], [-inf, 100.])
case("f32_nan_only", "DT_F32", [2], [nan, nan])
case("f32_inf_frac", "DT_F32", [3], [inf, -inf, 0.5])
case("f32_neg_nan", "DT_F32", [2], [-nan, 0.5])
case("f32_nan_sci", "DT_F32", [3], [1e-5, 1., nan])
case("f32_int_sci_nan_inf", "DT_F32", [4], [1., 1e9, nan, -inf])
# -- float32 scientific mode switches
case("f32_int_ratio_1000", "DT_F32", [2], [1., 1000.])
case("f32_int_ratio_1001", "DT_F32", [2], [1., 1001.])
case("f32_int_1e8", "DT_F32", [1], [1e8])
case("f32_int_over_1e8", "DT_F32", [1], [123456789.])
case("f32_int_large", "DT_F32", [3], [1e6, 2e6, 3e6])
case("f32_int_large_ratio", "DT_F32", [3], [100000., 200000., 3.])
case("f32_frac_min_1e-4", "DT_F32", [2], [1e-4, 1.])
case("f32_frac_small", "DT_F32", [2], [1e-5, 0.5])
case("f32_frac_ratio", "DT_F32", [2], [0.001, 1.5])
case("f32_frac_ratio_ok", "DT_F32", [2], [0.00015, 0.1])
case("f32_frac_big", "DT_F32", [2], [1.5e8, 2.5e8])
case("f32_sci_negative", "DT_F32", [3], [-1e-5, 1e5, 3.])
case("f32_round_ties", "DT_F32", [3], [0.03125, 0.09375, 1.])
case("f32_sci_round_tie", "DT_F32", [2], [1.03125, 2000.])
case("f32_max", "DT_F32", [2], [3.4028234663852886e38, -1.])
case("f32_denormal", "DT_F32", [2], [1e-45, 1.])
# -- float32 layout
case("f32_wrap_1d_frac", "DT_F32", [30], scale=0.1)
case("f32_wrap_1d_int", "DT_F32", [100])
case("f32_2d", "DT_F32", [3, 4], scale=1 / 7)
case("f32_2d_wide", "DT_F32", [3, 20], scale=0.37, offset=-5.0)
case("f32_3d", "DT_F32", [2, 3, 4], scale=0.5, offset=-6.0)
case("f32_4d", "DT_F32", [2, 2, 2, 3])
case("f32_5d", "DT_F32", [1, 1, 1, 1, 3], scale=0.25)
case("f32_8d", "DT_F32", [1, 2, 1, 2, 1, 2, 1, 2], scale=0.5)
case("f32_3d_wrap", "DT_F32", [2, 2, 15], mul=7, mod=101, scale=0.011)
case("f32_1000_full", "DT_F32", [10, 100], mul=13, mod=997, scale=0.01)
case("f32_1001_summary", "DT_F32", [1001])
# -- float32 summaries (numel > 1000)
case("f32_summary_1d", "DT_F32", [2000])
case("f32_summary_2d", "DT_F32", [40, 50], scale=0.5)
case("f32_summary_2d_rows", "DT_F32", [2, 1000])
case("f32_summary_2d_cols", "DT_F32", [1000, 2], scale=0.25)
case("f32_summary_3d", "DT_F32", [10, 20, 30], mul=37, mod=1009, scale=0.001)
case("f32_summary_4d", "DT_F32", [8, 8, 8, 8], mul=3, mod=4096)
case("f32_summary_small_dims", "DT_F32", [4, 5, 60], scale=0.5)
case("f32_summary_hidden_outlier", "DT_F32", [2000], patch=[(1000, 1e10), (500, nan), (700, 1e-9)])
case("f32_summary_visible_outlier", "DT_F32", [2000], patch=[(1, 1e10)])
case("f32_summary_7_rows", "DT_F32", [7, 200], scale=0.125)
case("f32_sci_neg_zero", "DT_F32", [3], [-0., 1e-5, 0.])
case("f32_summary_nan_edge", "DT_F32", [3, 700], scale=0.5, patch=[(0, nan), (2099, -inf)])
# -- float64
case("f64_third", "DT_F64", [3], [1 / 3, 2 / 3, 1.])
case("f64_0d_third", "DT_F64", [], 1 / 3)
case("f64_int", "DT_F64", [5], [0., 1., 2., 3., 4.])
case("f64_suffix_wraps", "DT_F64", [9], [1.5] * 9)
case("f64_suffix_fits", "DT_F64", [8], [1.5] * 8)
case("f64_sci", "DT_F64", [2], [1e-10, 1e10])
case("f64_huge_exp", "DT_F64", [3], [1e300, -1e-300, 5e-324])
case("f64_nan_inf", "DT_F64", [3], [nan, inf, 0.25])
case("f64_wrap_1d", "DT_F64", [100], scale=0.5)
case("f64_2d", "DT_F64", [3, 3], scale=1 / 3)
case("f64_summary_2d", "DT_F64", [50, 50], scale=0.1)
case("f64_1d_many_digits", "DT_F64", [4], [123456.789, 99999999.99995, 12345678.98765, 200000.5])
# -- int32
case("i32_small", "DT_I32", [3], [1, 2, 3])
case("i32_negative", "DT_I32", [3], [-5, 10, -200])
case("i32_min_max", "DT_I32", [2], [-2147483648, 2147483647])
case("i32_0d", "DT_I32", [], -7)
case("i32_2d", "DT_I32", [3, 4], ioffset=-6)
case("i32_wrap", "DT_I32", [40])
case("i32_summary_3d", "DT_I32", [12, 12, 12], iscale=-3)
# -- int64
case("i64_small", "DT_I64", [3], [1, 2, 3])
case("i64_zero", "DT_I64", [2, 2], [0, 0, 0, 0])
case("i64_2pow62", "DT_I64", [3], [1 << 62, -(1 << 62), 1])
case("i64_min_max", "DT_I64", [2], [-(1 << 63), (1 << 63) - 1])
case("i64_0d", "DT_I64", [], 1 << 62)
case("i64_wrap_big", "DT_I64", [12], iscale=1 << 50, ioffset=-(1 << 52))
case("i64_summary_1d", "DT_I64", [5000], iscale=1 << 40)
case("i64_summary_hidden_wide", "DT_I64", [1500], patch=[(700, -(1 << 60))])
case("i64_3d", "DT_I64", [2, 3, 4], ioffset=-12)
# -- empty
case("f32_empty", "DT_F32", [0], [])
case("f32_empty_2x0", "DT_F32", [2, 0], [])
case("f32_empty_0x3", "DT_F32", [0, 3], [])
case("f32_empty_2x0x3", "DT_F32", [2, 0, 3], [])
case("f64_empty", "DT_F64", [0], [])
case("i64_empty", "DT_I64", [0], [])
case("i32_empty_2x0", "DT_I32", [2, 0], [])
case("i64_empty_0x0", "DT_I64", [0, 0], [])
# -- devices
case("cuda0_f32", "DT_F32", [3], [1., 2., 3.], device="cuda:0")
case("cuda0_f32_2d", "DT_F32", [2, 3], [1.] * 6, device="cuda:0")
case("cuda0_f64", "DT_F64", [1], [1 / 3], device="cuda:0")
case("cuda1_f64_0d", "DT_F64", [], 2.5, device="cuda:1")
case("cuda1_f64_wrap", "DT_F64", [9], [1.5] * 9, device="cuda:1")
case("cuda0_f64_dtype_wraps", "DT_F64", [5], [1.2345] * 5, device="cuda:0")
case("cuda0_f32_device_fits", "DT_F32", [6], [1.2345] * 6, device="cuda:0")
case("cuda0_f32_device_wraps", "DT_F32", [7], [1.2345] * 7, device="cuda:0")
case("cuda0_f32_device_wraps8", "DT_F32", [8], [1.2345] * 8, device="cuda:0")
case("cuda1_i32_2d", "DT_I32", [2, 3], [1, -2, 3, 4, 5, 6], device="cuda:1")
case("cuda1_i32_0d", "DT_I32", [], 42, device="cuda:1")
case("cuda0_i64_0d", "DT_I64", [], -3, device="cuda:0")
# a line + suffix of 77 would fit in 80, but _add_suffixes counts the line as len + 2
case("cuda0_i64_wrap_at_77", "DT_I64", [11], ioffset=100, device="cuda:0")
case("cuda0_i64_fits_at_72", "DT_I64", [10], ioffset=100, device="cuda:0")
case("cuda0_i64", "DT_I64", [3], [1, 2, 3], device="cuda:0")
case("cuda0_summary_2d", "DT_F32", [40, 50], device="cuda:0")
case("cuda1_summary_f64", "DT_F64", [2000], scale=0.5, device="cuda:1")
case("cuda0_empty", "DT_F32", [0], [], device="cuda:0")
case("cuda0_empty_2x0", "DT_F32", [2, 0], [], device="cuda:0")
case("cuda1_empty_i64", "DT_I64", [0], [], device="cuda:1")
case("cuda0_empty_f64_3d", "DT_F64", [2, 0, 3], [], device="cuda:0")
case("cuda1_wrap_1d", "DT_F32", [30], scale=0.1, device="cuda:1")


# ---- C output ----

def c_str_lines(s):
    """s as adjacent C string literals, one per line of text."""
    out = []
    parts = s.split("\n")
    for j, line in enumerate(parts):
        lit = line.replace("\\", "\\\\").replace('"', '\\"')
        assert all(32 <= ord(ch) < 127 for ch in lit)
        if j < len(parts) - 1:
            lit += "\\n"
        if lit:
            out.append('"' + lit + '"')
    return out or ['""']


def c_pieces(s, limit=2000):
    """s cut into pieces of at most `limit` chars (ISO C99 only promises 4095
    per literal, and -pedantic says so)."""
    return [s[i:i + limit] for i in range(0, len(s), limit)] or [""]


def c_i64(v):
    if v == -(1 << 63):
        return "(-9223372036854775807LL - 1)"
    return "%dLL" % v


def main():
    lines = []
    w = lines.append
    max_numel, max_len = 1, 1
    names = set()
    for c in CASES:
        t = c["t"]
        assert c["name"] not in names
        names.add(c["name"])
        cpu = repr(t)
        assert repr_on(t, None) == cpu, c["name"]
        assert str(t) == cpu
        assert repr_on(t, "cpu") == repr_with_fake_default_device(t), c["name"]
        c["expected"] = repr_on(t, c["device"])
        max_numel = max(max_numel, t.numel())
        max_len = max(max_len, len(c["expected"]))

    w("/* print_cases.inc: generated by tests/gen_print_cases.py with PyTorch %s; do not edit. */" % torch.__version__)
    w("")
    w("#define DT_PRINT_CASES_MAX_NUMEL %d" % max_numel)
    w("#define DT_PRINT_CASES_MAX_LEN %d" % max_len)
    w("")
    w("typedef struct dt_print_case {")
    w("  const char *name;")
    w("  dt_dtype dtype;")
    w("  int ndim;")
    w("  int64_t dims[8];")
    w("  const uint64_t *bits;     /* explicit values (F32: float bits; ints: int64); NULL: generated */")
    w("  int64_t mul, add, mod;    /* k = (i * mul + add) % mod */")
    w("  double scale, offset;     /* floats: v = (double)k * scale + offset */")
    w("  int64_t iscale, ioffset;  /* ints:   v = k * iscale + ioffset */")
    w("  int npatch;")
    w("  int64_t patch_at[4];")
    w("  uint64_t patch_bits[4];")
    w("  const char *device;       /* NULL: the CPU */")
    w("  const char *const *expected; /* pieces, NULL-terminated */")
    w("} dt_print_case;")
    w("")
    for j, c in enumerate(CASES):
        t = c["t"]
        if c["gen"] is None and t.numel() > 0:
            bits = bits_of(t)
            w("static const uint64_t dt_pc_bits_%d[] = {" % j)
            for i in range(0, len(bits), 6):
                w("  " + ", ".join("0x%xULL" % b for b in bits[i:i + 6]) + ",")
            w("};")
        w("static const char *const dt_pc_exp_%d[] = {" % j)
        for piece in c_pieces(c["expected"]):
            lits = c_str_lines(piece)
            lits[-1] += ","
            for lit in lits:
                w("  " + lit)
        w("  NULL};")
    w("")
    w("static const dt_print_case dt_print_cases[] = {")
    for j, c in enumerate(CASES):
        t = c["t"]
        dims = list(c["shape"]) + [0] * (8 - len(c["shape"]))
        g = c["gen"]
        if g is None:
            bits = ("dt_pc_bits_%d" % j) if t.numel() > 0 else "NULL"
            gen = "0, 0, 1, 0.0, 0.0, 0, 0, 0, {0, 0, 0, 0}, {0, 0, 0, 0}"
        else:
            bits = "NULL"
            patch = g.get("patch", [])
            assert len(patch) <= 4
            flat = t.reshape(-1)
            pat = [p[0] for p in patch] + [0] * (4 - len(patch))
            pb = [bits_of(flat[p[0]:p[0] + 1])[0] for p in patch] + [0] * (4 - len(patch))
            gen = "%s, %s, %s, %r, %r, %s, %s, %d, {%s}, {%s}" % (
                c_i64(g["mul"]), c_i64(g["add"]), c_i64(g["mod"]), float(g["scale"]), float(g["offset"]),
                c_i64(g["iscale"]), c_i64(g["ioffset"]), len(patch),
                ", ".join(c_i64(x) for x in pat), ", ".join("0x%xULL" % x for x in pb))
        dev = '"%s"' % c["device"] if c["device"] else "NULL"
        w('  {"%s", %s, %d, {%s}, %s, %s, %s, dt_pc_exp_%d},' % (
            c["name"], c["dtype"], len(c["shape"]), ", ".join(str(d) for d in dims), bits, gen, dev, j))
    w("};")
    w("")
    w("#define DT_PRINT_NCASES ((int)(sizeof dt_print_cases / sizeof dt_print_cases[0]))")
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote %s: %d cases" % (OUT, len(CASES)))


if __name__ == "__main__":
    sys.exit(main())
