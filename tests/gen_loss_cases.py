# Prints the PyTorch 1.13 values that tests/test_losses.c holds literally (run with /usr/bin/python3).
import torch
import torch.nn.functional as F
torch.set_printoptions(precision=17)

def fmt(x):
    x = float(x)
    if x != x: return "NAN"
    if x in (float("inf"), float("-inf")): return "INFINITY" if x > 0 else "-INFINITY"
    return repr(x)

def arr(name, t):
    v = t.detach().reshape(-1).tolist()
    print("static const double %s[%d] = {%s};" % (name, len(v), ", ".join(fmt(x) for x in v)))

X = torch.tensor([[0.5, -1.25, 3.0], [-20.0, 30.0, 0.0]], dtype=torch.float64)
T = torch.tensor([[1.0, 0.0, 0.25], [0.0, 1.0, 0.5]], dtype=torch.float64)
Y = torch.tensor([[0.0, -0.75, 1.5], [-19.5, 31.0, 0.0]], dtype=torch.float64)  # l1/smooth targets: d = 0.5, -0.5, 1.5, -0.5, -1, 0
W = torch.tensor([[1.0, 2.0, -1.0], [0.5, 3.0, 1.5]], dtype=torch.float64)       # grad_out for 'none'
LP = torch.log_softmax(torch.tensor([[1.0, 2.0, 0.5, -1.0], [0.0, -3.0, 2.5, 1.0], [4.0, 0.25, -0.5, 2.0]], dtype=torch.float64), 1)
LAB = torch.tensor([1, 0, 3])
WN = torch.tensor([2.0, -1.0, 0.5], dtype=torch.float64)
print("/* gen_loss_cases.py */")
arr("X", X); arr("T", T); arr("Y", Y); arr("W", W); arr("LP", LP); arr("WN", WN)
cases = [("bce", lambda a, b, r: F.binary_cross_entropy_with_logits(a, b, reduction=r), X, T),
         ("l1", lambda a, b, r: F.l1_loss(a, b, reduction=r), X, Y),
         ("sl1", lambda a, b, r: F.smooth_l1_loss(a, b, reduction=r, beta=1.0), X, Y),
         ("sl1b", lambda a, b, r: F.smooth_l1_loss(a, b, reduction=r, beta=0.75), X, Y),
         ("mse", lambda a, b, r: F.mse_loss(a, b, reduction=r), X, Y)]
for name, f, a0, b0 in cases:
    for r in ("none", "mean", "sum"):
        a = a0.clone().requires_grad_(True); b = b0.clone().requires_grad_(True)
        y = f(a, b, r)
        y.backward(W if r == "none" else None)
        arr("%s_%s" % (name, r), y); arr("%s_%s_ga" % (name, r), a.grad); arr("%s_%s_gb" % (name, r), b.grad)
        # float32 values too (the stable form in single precision)
        arr("%s_%s_f32" % (name, r), f(a0.float(), b0.float(), r).double())
for r in ("none", "mean", "sum"):
    a = LP.clone().requires_grad_(True)
    y = F.nll_loss(a, LAB, reduction=r)
    y.backward(WN if r == "none" else None)
    arr("nll_%s" % r, y); arr("nll_%s_ga" % r, a.grad)
# empty batches
print("/* empty: bce mean %r sum %r; nll mean %r sum %r */" % (
    F.binary_cross_entropy_with_logits(torch.zeros(0), torch.zeros(0)).item(),
    F.binary_cross_entropy_with_logits(torch.zeros(0), torch.zeros(0), reduction='sum').item(),
    F.nll_loss(torch.zeros(0, 3), torch.zeros(0, dtype=torch.long)).item(),
    F.nll_loss(torch.zeros(0, 3), torch.zeros(0, dtype=torch.long), reduction='sum').item()))
# type promotion: torch.result_type over (F32, F64, I32, I64, U8, BOOL), both with dims and b 0-d
dts = [torch.float32, torch.float64, torch.int32, torch.int64, torch.uint8, torch.bool]
names = ["DT_F32", "DT_F64", "DT_I32", "DT_I64", "DT_U8", "DT_BOOL"]
for zero_d in (False, True):
    print("static const int promote%s[6][6] = {" % ("_0d" if zero_d else ""))
    for a in dts:
        row = [names[dts.index(torch.result_type(torch.ones(2, dtype=a), torch.ones((), dtype=b) if zero_d else torch.ones(2, dtype=b)))] for b in dts]
        print("  {%s}," % ", ".join(row))
    print("};")
print("static const int promote_div[6][6] = {")
for a in dts:
    print("  {%s}," % ", ".join(names[dts.index(torch.div(torch.ones(2, dtype=a), torch.ones(2, dtype=b)).dtype)] for b in dts))
print("};")
# values: int32 [7, -7, 3] / int64 [2, 2, 0]; uint8 [200, 3, 0] + uint8 [100, 5, 0], u8 * u8, bool + bool, bool * bool, int32 + 0.5, uint8 * 3, bool + 2
i32 = torch.tensor([7, -7, 3], dtype=torch.int32); i64 = torch.tensor([2, 2, 0])
u1 = torch.tensor([200, 3, 0], dtype=torch.uint8); u2 = torch.tensor([100, 5, 0], dtype=torch.uint8)
b1 = torch.tensor([True, False, True]); b2 = torch.tensor([True, True, False])
f64 = torch.tensor([0.5, 1.5, -2.0], dtype=torch.float64)
arr("v_i32_div_i64", i32 / i64); arr("v_u8_add", u1 + u2); arr("v_u8_mul", u1 * u2); arr("v_b_add", b1 + b2)
arr("v_b_mul", b1 * b2); arr("v_i32_adds", i32 + 0.5); arr("v_u8_muls", u1 * 3); arr("v_b_adds", b1 + 2)
arr("v_i32_sub_f64", i32 - f64); arr("v_u8_sub_i32", u1 - i32); arr("v_b_mul_f64", b1 * f64)
# the gradient of a float32 leaf through float64 arithmetic, in float32
a = torch.tensor([1.5, -2.0, 0.25], requires_grad=True)
y = (a * f64 + a / f64).sum(); y.backward()
arr("g_mixed", a.grad); print("/* g_mixed dtype %s */" % a.grad.dtype)
