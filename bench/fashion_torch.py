#!/usr/bin/env python3
"""The training of examples/fashion_mnist.c in PyTorch, for comparison.

Same data (the same .gz files, read with gzip + numpy, pixels / 255 as float32),
same networks (softmax regression: Linear(784, 10); the MLP: Linear(784, 256),
ReLU, Linear(256, 10)), same initial distribution (weights normal with std 0.01,
biases zero, as D2L does), same hyperparameters (SGD, lr 0.1, batch 256, 10
epochs, the training set shuffled each epoch, mean cross-entropy), and the same
progress line per epoch: train loss and train accuracy (both over the epoch's
minibatches, before each step's update), test accuracy after the epoch, seconds.

  /usr/bin/python3 bench/fashion_torch.py [--epochs N] [--train N] [--test N]
      [--model softmax|mlp|both] [--data DIR] [--device cpu|cuda] [--csv PATH] [--threads N]
      [--autocast f32|bf16|f16] [--cuda-graph]

--autocast bf16|f16: torch.autocast(device_type, dtype) around each step's forward and loss and
the evaluation's forward, as the example's --autocast (tr.autocast); f16 on CUDA with
torch.cuda.amp.GradScaler, as the trainer's grad scaler. A CPU autocast that PyTorch does not
take (PyTorch 1.13's CPU autocast takes bfloat16 only) is refused. Default f32: off.
--cuda-graph: as the example's tr.cuda_graph, torch.cuda.graphs' whole-network capture: the first
full minibatches run eagerly on a side stream (the warm-up), the next one's step (forward, loss,
backward, SGD step, the epoch's sums) is captured on static tensors and replayed for it and every
later full minibatch, each copied into the static tensors first; a smaller last minibatch runs
eagerly. Refused with --autocast f16 (the scaler reads the host at each step), as the trainer
refuses it. On the CPU PyTorch has no graphs: the option is ignored with a note in the first line
(the steps run eagerly), so a CPU comparison runs the example's graph against PyTorch's eager steps.

Debian's torch (CPU): run it with OPENBLAS_L2_SIZE unset, and OPENBLAS_CORETYPE unset or set to
the best core type for the CPU (bench/run_fashion.sh runs both where they differ).
"""
import argparse
import contextlib
import gzip
import os
import sys
import time
import warnings

import numpy as np
import torch
from torch import nn

DEFAULT_DIR = "/usr/share/datasets/fashion-mnist"


def read_idx(path, ndim, limit):
    if not os.path.exists(path):
        sys.exit(f"{path}: cannot open it: Fashion-MNIST is not installed there "
                 "(apt-get install dataset-fashion-mnist, or give its directory with --data DIR)")
    with gzip.open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 + 4 * ndim or raw[0:3] != b"\x00\x00\x08" or raw[3] != ndim:
        sys.exit(f"{path}: not an IDX file of unsigned bytes with {ndim} dimensions")
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        sys.exit(f"{path}: {data.size} data bytes, the header says {int(np.prod(dims))}")
    data = data.reshape(dims)
    return data[:limit] if limit > 0 else data


def load(data_dir, which, limit):
    x = read_idx(f"{data_dir}/{which}-images-idx3-ubyte.gz", 3, limit)
    y = read_idx(f"{data_dir}/{which}-labels-idx1-ubyte.gz", 1, limit)
    x = torch.from_numpy(x.reshape(x.shape[0], -1).astype(np.float32) / np.float32(255))
    return x, torch.from_numpy(y.astype(np.int64))


def make_net(model):
    net = nn.Sequential(nn.Linear(784, 10)) if model == "softmax" else \
        nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    for m in net:
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, std=0.01)
            nn.init.zeros_(m.bias)
    return net


def accuracy_count(logits, y):
    return (logits.argmax(dim=1) == y).sum()


WARMUP_STEPS = 3  # eager steps on a side stream before the capture, as PyTorch's docs do


def train(model, xtr, ytr, xte, yte, args, dev, csv):
    torch.manual_seed(args.seed)
    net = make_net(model).to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    xtr, ytr, xte, yte = xtr.to(dev), ytr.to(dev), xte.to(dev), yte.to(dev)
    n, res = xtr.shape[0], None
    use_graph = args.cuda_graph and dev.type == "cuda"
    ac_dtype = {"bf16": torch.bfloat16, "f16": torch.float16}.get(args.autocast)

    def autocast():  # under graphs the autocast cache must be off (PyTorch's docs)
        if ac_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=dev.type, dtype=ac_dtype, cache_enabled=not use_graph)

    scaler = None
    if args.autocast == "f16":  # torch.amp.GradScaler where it exists (2.3 and later), else CUDA's
        scaler = torch.amp.GradScaler(dev.type) if hasattr(torch.amp, "GradScaler") else torch.cuda.amp.GradScaler()
    # the epoch's sums: the same tensors every epoch (a captured step adds into them)
    loss_sum = torch.zeros((), device=dev)
    correct = torch.zeros((), dtype=torch.int64, device=dev)

    def step(xb, yb):
        with autocast():
            out = net(xb)
            loss = loss_fn(out, yb)
        if use_graph:
            opt.zero_grad(set_to_none=False)  # the captured step's gradients stay where it wrote them
        else:
            opt.zero_grad()
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        with torch.no_grad():
            loss_sum.add_(loss.detach().float() * xb.shape[0])
            correct.add_(accuracy_count(out, yb))

    graph, static_x, static_y, warm, side = None, None, None, 0, None
    for epoch in range(args.epochs):
        t0 = time.perf_counter()
        net.train()
        loss_sum.zero_()
        correct.zero_()
        perm = torch.randperm(n, device=dev)
        for b in range(0, n, args.batch):
            idx = perm[b:b + args.batch]
            xb, yb = xtr[idx], ytr[idx]
            if not use_graph or xb.shape[0] != args.batch:
                step(xb, yb)
            elif warm < WARMUP_STEPS:  # on a side stream, as before a capture
                if side is None:
                    side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    step(xb, yb)
                torch.cuda.current_stream().wait_stream(side)
                warm += 1
            else:
                if graph is None:
                    static_x, static_y = xb.clone(), yb.clone()
                    opt.zero_grad(set_to_none=True)  # the backward makes the gradients in the graph's pool
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph):
                        with autocast():
                            out = net(static_x)
                            loss = loss_fn(out, static_y)
                        loss.backward()
                        opt.step()
                        with torch.no_grad():
                            loss_sum.add_(loss.detach().float() * static_x.shape[0])
                            correct.add_(accuracy_count(out, static_y))
                else:
                    static_x.copy_(xb)
                    static_y.copy_(yb)
                graph.replay()
        net.eval()
        with torch.no_grad(), autocast():
            test_correct = torch.zeros((), dtype=torch.int64, device=dev)
            for b in range(0, xte.shape[0], 1024):
                test_correct += accuracy_count(net(xte[b:b + 1024]), yte[b:b + 1024])
        loss_v, tr_acc = loss_sum.item() / n, correct.item() / n
        te_acc = test_correct.item() / xte.shape[0]
        sec = time.perf_counter() - t0
        print(f"{model:<7s} epoch {epoch + 1:2d}/{args.epochs}  train loss {loss_v:.4f}  train acc {tr_acc:.4f}"
              f"  test acc {te_acc:.4f}  {sec:.3f} s", flush=True)
        if csv:
            csv.write(f"{model},{epoch + 1},{loss_v:.6f},{tr_acc:.6f},{te_acc:.6f},{sec:.6f}\n")
        res = te_acc
    return res


def autocast_refusal(dev, name):
    """Why PyTorch cannot autocast to `name` on dev, or None when it can."""
    if name == "f32":
        return None
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[name]
    if dev.type == "cpu":
        # an unsupported CPU dtype raises (1.13) or warns and turns autocast off
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                with torch.autocast(device_type="cpu", dtype=dtype):
                    on = torch.is_autocast_cpu_enabled()
            except RuntimeError:
                on = False
        if not on:
            return (f"--autocast {name}: PyTorch {torch.__version__}'s CPU autocast does not take {dtype} "
                    "(PyTorch 1.13's takes bfloat16 only)")
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--train", type=int, default=0, help="first N training examples (0: all)")
    ap.add_argument("--test", type=int, default=0, help="first N test examples (0: all)")
    ap.add_argument("--model", choices=["softmax", "mlp", "both"], default="both")
    ap.add_argument("--data", default=os.environ.get("FASHION_MNIST_DIR", DEFAULT_DIR))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--csv", default="")
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: OMP_NUM_THREADS or every core)")
    ap.add_argument("--autocast", choices=["f32", "bf16", "f16"], default="f32",
                    help="torch.autocast's dtype around the forward and the loss (f32: off; f16 with a GradScaler)")
    ap.add_argument("--cuda-graph", action="store_true",
                    help="capture one training step after the warm-up and replay it per full minibatch (CUDA only)")
    args = ap.parse_args()
    dev = torch.device(args.device)
    why = autocast_refusal(dev, args.autocast)
    if why:
        sys.exit(f"fashion_torch.py: {why}")
    if args.cuda_graph and dev.type == "cuda" and args.autocast == "f16":
        sys.exit("fashion_torch.py: --cuda-graph cannot capture the training step with --autocast f16: the grad scaler "
                 "reads on the host whether the gradients hold an inf or a NaN at each step (bf16 needs no scaler)")
    # every core, or OMP_NUM_THREADS, as devtensor gets (torch's own default here can be 1 thread)
    torch.set_num_threads(args.threads or int(os.environ.get("OMP_NUM_THREADS") or os.cpu_count() or 1))
    xtr, ytr = load(args.data, "train", args.train)
    xte, yte = load(args.data, "t10k", args.test)
    graph = ""
    if args.cuda_graph:
        graph = ", cuda graph" if dev.type == "cuda" else ", --cuda-graph ignored (no graphs on the CPU: eager steps)"
    ac = {"f32": "off", "bf16": "bfloat16", "f16": "float16"}[args.autocast]
    print(f"torch {torch.__version__} on {dev}, {torch.get_num_threads()} threads: "
          f"{xtr.shape[0]} training and {xte.shape[0]} test examples, autocast {ac}{graph}", flush=True)
    csv = open(args.csv, "w") if args.csv else None
    if csv:
        csv.write("model,epoch,train_loss,train_acc,test_acc,seconds\n")
    for model in (["softmax", "mlp"] if args.model == "both" else [args.model]):
        train(model, xtr, ytr, xte, yte, args, dev, csv)
    if csv:
        csv.close()


if __name__ == "__main__":
    main()
