"""ctypes binding of libdevtensor.so: the functions the fuzzer calls, and copies
between torch tensors (on the CPU) and devtensor tensors on the chosen device."""
import ctypes as C

import numpy as np
import torch

P = C.c_void_p
I, D, I64 = C.c_int, C.c_double, C.c_int64

# dt_dtype's order (devtensor.h)
F32, F64, I32, I64_, U8, BOOL, F16, BF16 = range(8)
TORCH_OF = {F32: torch.float32, F64: torch.float64, I32: torch.int32, I64_: torch.int64, U8: torch.uint8,
            BOOL: torch.bool, F16: torch.float16, BF16: torch.bfloat16}
DT_OF = {v: k for k, v in TORCH_OF.items()}


class Shape(C.Structure):
    _fields_ = [("ndim", C.c_int), ("dims", C.c_int64 * 8)]


class Device(C.Structure):
    _fields_ = [("type", C.c_int), ("index", C.c_int)]


_SIGS = [
    ("dt_from_data", P, [P, Shape, I, Device]), ("dt_release", None, [P]), ("dt_to_host", I, [P, P, C.c_size_t]),
    ("dt_dtype_of", I, [P]), ("dt_ndim", I, [P]), ("dt_dim", I64, [P, I]), ("dt_device_of", Device, [P]),
    ("dt_device_parse", I, [C.c_char_p, C.POINTER(Device)]), ("dt_num_gpus", I, []),
    ("dt_device_equal", I, [Device, Device]),
    ("dt_last_error", C.c_char_p, []), ("dt_clear_error", None, []),
    ("dt_requires_grad_", I, [P, I]), ("dt_grad", P, [P]), ("dt_autograd_backward", I, [P, P]),
    ("dt_retain", P, [P]),
    ("dt_reshape", P, [P, Shape]), ("dt_sum_dim_ex", P, [P, I, I]), ("dt_mean_dim", P, [P, I, I]),
    ("dt_flatten", P, [P, I, I]), ("dt_clamp", P, [P, D, D]),
    ("dt_bce_with_logits_ex", P, [P, P, I]), ("dt_nll_loss_ex", P, [P, P, I]), ("dt_l1_loss_ex", P, [P, P, I]),
    ("dt_mse_loss_ex", P, [P, P, I]), ("dt_smooth_l1_loss_ex", P, [P, P, D, I]),
    ("dt_one_hot", P, [P, I64]),
    ("dt_slice", P, [P, I, I64, I64]), ("dt_index_select", P, [P, I, P]), ("dt_cat", P, [P, I, I]),
    ("dt_stack", P, [P, I]), ("dt_permute", P, [P, P]), ("dt_where", P, [P, P, P]), ("dt_gather", P, [P, I, P]),
    ("dt_scatter_add", P, [P, I, P, P]), ("dt_pad", P, [P, P, I, D]),
    ("dt_f_conv2d_ex", P, [P, P, P, I, I, I, I, I, I, I]),
    ("dt_f_max_pool2d_ex", P, [P, I, I, I, I, I, I, P]),
    ("dt_f_avg_pool2d_ex", P, [P, I, I, I, I, I, I]),
    ("dt_f_adaptive_avg_pool2d", P, [P, I64, I64]),
    ("dt_f_dropout", P, [P, D, I]),
    ("dt_f_batch_norm", P, [P, P, P, P, P, I, D, D]),
    ("dt_f_layer_norm", P, [P, I64, P, P, D]),
    ("dt_f_embedding", P, [P, P]),
    ("dt_add_", I, [P, P]), ("dt_sub_", I, [P, P]), ("dt_mul_", I, [P, P]), ("dt_div_", I, [P, P]),
    ("dt_zero_grad_", I, [P]), ("dt_set_grad_enabled", I, [I]),
    ("dt_sgd_tensors", P, [P, I, D, D, D]), ("dt_adam_tensors", P, [P, I, D, D, D, D, D]),
    ("dt_adamw_tensors", P, [P, I, D, D, D, D, D]), ("dt_optimizer_step", I, [P]),
    ("dt_optimizer_zero_grad", I, [P]), ("dt_optimizer_free", None, [P]),
    ("dt_clip_grad_norm_", I, [P, I, D, C.POINTER(D)]),
    ("dt_mse_loss", P, [P, P]), ("dt_l1_loss", P, [P, P]), ("dt_bce_with_logits", P, [P, P]),
    ("dt_nll_loss", P, [P, P]), ("dt_smooth_l1_loss", P, [P, P, D]), ("dt_cross_entropy_grad", P, [P, P]),
    ("dt_mse_loss_grad", P, [P, P]), ("dt_f_conv2d", P, [P, P, P, I, I]),
    ("dt_f_conv2d_backward", I, [P, P, P, I, I, I, I, I, I, I, P, P, P]),
    ("dt_f_max_pool2d", P, [P, I, I, I]), ("dt_f_max_pool2d_backward", P, [P, P, P, I, I, I, I, I, I]),
    ("dt_f_avg_pool2d", P, [P, I, I, I]), ("dt_f_avg_pool2d_backward", P, [P, P, I, I, I, I, I, I]),
    ("dt_f_adaptive_avg_pool2d_backward", P, [P, P]), ("dt_set_autocast", I, [I, I]),
    ("dt_manual_seed", None, [C.c_uint64]), ("dt_copy_", I, [P, P]), ("dt_fill_", I, [P, D]), ("dt_to", P, [P, Device]),
    ("dt_axpy_", I, [P, D, P]), ("dt_add_scalar_", I, [P, D]), ("dt_mul_scalar_", I, [P, D]),
    ("dt_scatter_add_", I, [P, I, P, P]), ("dt_arange", P, [D, D, D, I, Device]), ("dt_full", P, [Shape, D, Device]),
    ("dt_snprint", I, [C.c_char_p, C.c_size_t, P]),
    # modules
    ("dt_linear", P, [I64, I64]), ("dt_relu_layer", P, []), ("dt_sequential", P, []),
    ("dt_sequential_add", I, [P, P]), ("dt_module_to", I, [P, Device]), ("dt_module_to_dtype", I, [P, I]),
    ("dt_forward", P, [P, P]), ("dt_backward", P, [P, P]), ("dt_backward_params", I, [P, P]),
    ("dt_module_num_params", I, [P]), ("dt_module_param", P, [P, I, C.POINTER(C.c_char_p)]),
    ("dt_module_grad", P, [P, I]), ("dt_module_free", None, [P]), ("dt_module_snprint", I, [C.c_char_p, C.c_size_t, P]),
    ("dt_module_train", I, [P, I]), ("dt_module_get_buffer", P, [P, C.c_char_p]), ("dt_zero_grad", I, [P]),
    ("dt_conv2d_ex", P, [I64, I64, I, I, I, I, I, I, I, I]), ("dt_max_pool2d", P, [I, I, I]),
    ("dt_avg_pool2d", P, [I, I, I]), ("dt_adaptive_avg_pool2d", P, [I, I]), ("dt_flatten_layer", P, []),
    ("dt_sigmoid_layer", P, []), ("dt_tanh_layer", P, []), ("dt_gelu_layer", P, []), ("dt_dropout", P, [D]),
    ("dt_batch_norm", P, [I64]), ("dt_layer_norm", P, [I64]), ("dt_embedding", P, [I64, I64]),
]
_SIGS += [("dt_" + n, P, [P, P]) for n in
          ["add", "sub", "mul", "div", "matmul", "eq", "ne", "lt", "le", "gt", "ge", "cross_entropy"]]
_SIGS += [("dt_" + n, P, [P]) for n in
          ["exp", "log", "sqrt", "neg", "relu", "transpose", "sum", "mean", "norm", "sigmoid", "tanh", "abs",
           "max", "min", "sin", "cos", "erf", "gelu"]]
_SIGS += [("dt_" + n, P, [P, D]) for n in
          ["add_scalar", "mul_scalar", "pow_scalar", "rsub_scalar", "eq_scalar", "ne_scalar", "lt_scalar",
           "le_scalar", "gt_scalar", "ge_scalar"]]
_SIGS += [("dt_" + n, P, [P, I]) for n in
          ["sum_dim", "argmax", "argmin", "max_dim", "min_dim", "softmax", "log_softmax", "unsqueeze", "squeeze",
           "cast"]]


class DTError(Exception):
    pass


class Lib:
    """The loaded library and the device its tensors are made on."""

    def __init__(self, path, device):
        self.c = C.CDLL(path)
        for name, res, args in _SIGS:
            f = getattr(self.c, name)
            f.restype = res
            f.argtypes = args
        dev = Device()
        if self.c.dt_device_parse(device.encode(), C.byref(dev)) != 0:
            raise DTError("device %r: %s" % (device, self.error()))
        if dev.type == 1 and dev.index >= self.c.dt_num_gpus():
            raise DTError("device %s: the library sees %d GPU(s): %s"
                          % (device, self.c.dt_num_gpus(), self.error()))
        self.device = dev
        self.device_name = device

    def __getattr__(self, name):
        return getattr(self.c, "dt_" + name)

    def error(self):
        e = self.c.dt_last_error()
        return e.decode() if e else ""

    def on_device(self, p):
        return bool(self.c.dt_device_equal(self.c.dt_device_of(p), self.device))


def shape(dims):
    s = Shape()
    s.ndim = len(dims)
    for k, v in enumerate(dims):
        s.dims[k] = v
    return s


def from_torch(lib, t, requires_grad=False):
    """A devtensor copy, on lib's device, of a CPU torch tensor of any dtype."""
    t = t.detach().contiguous()
    if t.dtype in (torch.float16, torch.bfloat16):
        raw = t.view(torch.int16).numpy()
    elif t.dtype == torch.bool:
        raw = t.numpy().astype(np.uint8)
    else:
        raw = t.numpy()
    raw = np.ascontiguousarray(raw)
    p = lib.c.dt_from_data(raw.ctypes.data if raw.size else None, shape(list(t.shape)), DT_OF[t.dtype], lib.device)
    if not p:
        raise DTError("dt_from_data: " + lib.error())
    if requires_grad and lib.c.dt_requires_grad_(p, 1) != 0:
        lib.c.dt_release(p)
        raise DTError("dt_requires_grad_: " + lib.error())
    return p


def to_torch(lib, p):
    """A CPU torch copy of a devtensor tensor (dt_to_host waits for the device)."""
    dt = lib.c.dt_dtype_of(p)
    dims = [lib.c.dt_dim(p, k) for k in range(lib.c.dt_ndim(p))]
    tt = TORCH_OF[dt]
    if dt in (F16, BF16):
        a = np.empty(dims, np.int16)
    elif dt == BOOL:
        a = np.empty(dims, np.uint8)
    else:
        a = np.empty(dims, torch.empty(0, dtype=tt).numpy().dtype)
    if a.nbytes and lib.c.dt_to_host(p, a.ctypes.data, a.nbytes) != 0:
        raise DTError("dt_to_host: " + lib.error())
    t = torch.from_numpy(a.copy())
    if dt in (F16, BF16):
        t = t.view(tt)
    elif dt == BOOL:
        t = t.bool()
    return t


class Arena:
    """The devtensor tensors of one check, released together (last made, first released)."""

    def __init__(self, lib):
        self.lib = lib
        self.ps = []

    def __call__(self, p):
        if p:
            self.ps.append(p)
        return p

    def t(self, tt, requires_grad=False):
        return self(from_torch(self.lib, tt, requires_grad))

    def free(self):
        for p in reversed(self.ps):
            self.lib.c.dt_release(p)
        self.ps = []
