"""bench/gpu_versions.py - the peer's versions for a GPU run's log (bench/gpu_session.sh's test phase):
torch, its CUDA, its TF32 setting, and the version of the cuBLAS it loaded (cublasGetProperty through
ctypes on the libcublas in this process's maps). devtensor's own cuBLAS is printed by gpu_check."""
import ctypes

try:
    import torch
except ImportError:
    print("torch: not importable")
    raise SystemExit(0)
print("torch", torch.__version__, "CUDA", torch.version.cuda, "TF32 matmul", torch.backends.cuda.matmul.allow_tf32)
if not torch.cuda.is_available():
    print("torch: no GPU")
    raise SystemExit(0)
torch.ones(1, 1, device="cuda") @ torch.ones(1, 1, device="cuda")  # loads torch's cuBLAS
with open("/proc/self/maps") as f:
    libs = sorted(set(l.split()[-1] for l in f if "libcublas.so" in l and "Lt" not in l))
for p in libs:
    lib = ctypes.CDLL(p)
    v = [ctypes.c_int() for _ in range(3)]
    for i in range(3):
        lib.cublasGetProperty(i, ctypes.byref(v[i]))  # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
    print("torch's cuBLAS:", p, "version %d.%d.%d" % tuple(x.value for x in v))
