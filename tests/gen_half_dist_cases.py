# The half precision cases of tests/test_dist.c (HD_*): two ranks' float16 and bfloat16 values
# and their all-reduce (sum, mean, max, min) as PyTorch computes it in float and rounds once to
# the type (for two ranks also what a + b in the type gives), as bits. Run with torch 1.13:
#   /usr/bin/python3 tests/gen_half_dist_cases.py
import torch
x0 = [1.0, 1.0078125, 3.0, -2.5, 256.0, 0.1, 1e-3, 100.0, 1000.0, -7.25]
x1 = [0.00390625, 0.00390625, 0.3, 2.5, 1.0, 0.2, -3e-3, 0.6, 0.7, 1.375]
for dt, name in [(torch.float16, 'F16'), (torch.bfloat16, 'BF16')]:
    a = torch.tensor(x0).to(dt); b = torch.tensor(x1).to(dt)
    s = (a.float() + b.float()).to(dt)
    assert torch.equal(s.view(torch.int16), (a + b).view(torch.int16))
    avg = ((a.float() + b.float()) / 2).to(dt)
    mx = torch.maximum(a, b); mn = torch.minimum(a, b)
    def bits(t): return ', '.join('0x%04X' % (v & 0xFFFF) for v in t.view(torch.int16).tolist())
    print(name, 'x0', bits(a)); print(name, 'x1', bits(b)); print(name, 'sum', bits(s)); print(name, 'avg', bits(avg))
    print(name, 'max', bits(mx)); print(name, 'min', bits(mn))
    print(name, 'sum vals', s.float().tolist(), 'exact', (a.double()+b.double()).tolist())
