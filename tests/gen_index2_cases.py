"""Prints the PyTorch values tests/test_index2.c holds (run once with torch 1.13; the output is
pasted into the test): torch.where, gather, scatter_add, F.pad on small tensors."""
import torch
import torch.nn.functional as F

torch.set_printoptions(precision=17)


def arr(name, t):
    v = t.flatten().tolist()
    if t.dtype in (torch.float32, torch.float64):
        body = ", ".join(repr(float(x)) for x in v)
    else:
        body = ", ".join(str(int(x)) for x in v)
    print("static const double %s[%d] = {%s};" % (name, max(len(v), 1), body if v else "0"))


def vals(shape, salt, dtype=torch.float64):
    n = 1
    for d in shape:
        n *= d
    return torch.tensor([((i * 7 + salt * 3) % 11) - 5.0 + 0.25 * salt for i in range(n)], dtype=dtype).reshape(shape)


# where: cond (2, 1, 3), a (4, 1), b (3,) -> (2, 4, 3)
cond = torch.tensor([1, 0, 1, 0, 0, 1], dtype=torch.bool).reshape(2, 1, 3)
a = vals((4, 1), 1)
b = vals((3,), 2)
arr("where_y", torch.where(cond, a, b))
# where with int64 a and float32 b: float32
ai = torch.tensor([1, 2, 3, 4], dtype=torch.int64).reshape(2, 2)
bf = torch.tensor([0.5], dtype=torch.float32)
ci = torch.tensor([True, False, False, True]).reshape(2, 2)
arr("where_mix", torch.where(ci, ai, bf))

# gather along dim 0 and the last dim of (3, 4); a 3-d one along dim 1 with a smaller index
x = vals((3, 4), 3)
i0 = torch.tensor([[2, 0, 1, 1], [0, 2, 2, 0]])
arr("gather0", torch.gather(x, 0, i0))
i1 = torch.tensor([[3, 0], [1, 1], [0, 2]])
arr("gather1", torch.gather(x, -1, i1))
x3 = vals((2, 3, 4), 4)
i3 = torch.tensor([[[2, 0, 1], [1, 1, 0]], [[0, 2, 2], [2, 1, 0]]])
arr("gather3", torch.gather(x3, 1, i3))

# scatter_add along dim 0 and the last; 3-d with src larger than index; int64
s0 = vals((2, 4), 5)
arr("scatter0", x.scatter_add(0, i0, s0))
s1 = vals((3, 2), 6)
arr("scatter1", x.scatter_add(1, i1, s1))
s3 = vals((2, 3, 4), 7)
arr("scatter3", x3.scatter_add(1, i3, s3))
xl = torch.tensor([[1, 2, 3], [4, 5, 6]], dtype=torch.int64)
il = torch.tensor([[0, 0, 2, 2]])
sl = torch.tensor([[10, 20, 30, 40], [50, 60, 70, 80]], dtype=torch.int64)
arr("scatter_i64", xl.scatter_add(1, il, sl))

# pad: (2, 3) by (1, 2) with 0.5; by (1, 1, 2, 0); negative: (-1, 2, 1, -1) with 7; 3-d, last dim only
p = vals((2, 3), 8)
arr("pad_a", F.pad(p, (1, 2), value=0.5))
arr("pad_b", F.pad(p, (1, 1, 2, 0)))
arr("pad_neg", F.pad(p, (-1, 2, 1, -1), value=7.0))
arr("pad_3d", F.pad(vals((2, 2, 2), 9), (0, 1, -1, 0, 1, 1), value=-1.0))
