#!/usr/bin/env python3
"""The training of examples/lenet.c (D2L 7.6's LeNet) in PyTorch, for comparison.

Same data (the same .gz files, read with gzip + numpy, pixels / 255 as float32, (n, 1, 28, 28)),
same network (Conv2d(1, 6, 5, padding=2), Sigmoid, AvgPool2d(2, 2), Conv2d(6, 16, 5), Sigmoid,
AvgPool2d(2, 2), Flatten, Linear(400, 120), Sigmoid, Linear(120, 84), Sigmoid, Linear(84, 10);
--relu-max: ReLU and MaxPool2d(2, 2)), same initialisation (every Conv2d and Linear weight
xavier_uniform, D2L's init_cnn; the biases PyTorch's default), same hyperparameters (SGD lr 0.1,
batch 128, 10 epochs, the training set shuffled each epoch, mean cross-entropy), the same
evaluation (the test set after each epoch, without grad, in eval mode, batches of 4x the training
batch up to 1024), and the same progress line per epoch as examples/lenet.c: train loss and
train accuracy (over the epoch's minibatches, before each step's update), test accuracy, seconds
(the epoch's wall-clock time, its evaluation included).

  /usr/bin/python3 bench/lenet_torch.py [--epochs N] [--train N] [--test N] [--lr X] [--batch N]
      [--seed N] [--relu-max] [--data DIR] [--threads N] [--device cpu|cuda] [--tf32 default|on|off]

--tf32 sets torch.backends.cudnn.allow_tf32 and torch.backends.cuda.matmul.allow_tf32 (default:
PyTorch's own, TF32 for cuDNN's convolutions and not for matmuls); examples/lenet.c --tf32 is
TF32 for both.

Debian's torch (CPU): run it with OPENBLAS_L2_SIZE unset, and OPENBLAS_CORETYPE unset or set to
the best core type for the CPU (bench/run_lenet.sh does).
"""
import argparse
import os
import sys
import time

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fashion_torch import DEFAULT_DIR, read_idx  # noqa: E402  the same reading of the files


def load(data_dir, which, limit):
    x = read_idx(f"{data_dir}/{which}-images-idx3-ubyte.gz", 3, limit)
    y = read_idx(f"{data_dir}/{which}-labels-idx1-ubyte.gz", 1, limit)
    x = torch.from_numpy(x.reshape(x.shape[0], 1, 28, 28).astype(np.float32) / np.float32(255))
    return x, torch.from_numpy(y.astype(np.int64))


def lenet(relu_max):
    act = nn.ReLU if relu_max else nn.Sigmoid
    pool = nn.MaxPool2d if relu_max else nn.AvgPool2d
    net = nn.Sequential(
        nn.Conv2d(1, 6, kernel_size=5, padding=2), act(), pool(kernel_size=2, stride=2),
        nn.Conv2d(6, 16, kernel_size=5), act(), pool(kernel_size=2, stride=2),
        nn.Flatten(),
        nn.Linear(400, 120), act(),
        nn.Linear(120, 84), act(),
        nn.Linear(84, 10))
    for m in net:  # D2L's init_cnn
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.xavier_uniform_(m.weight)
    return net


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--train", type=int, default=0, help="first N training examples (0: all)")
    ap.add_argument("--test", type=int, default=0, help="first N test examples (0: all)")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--relu-max", action="store_true", help="ReLU for Sigmoid, MaxPool2d for AvgPool2d")
    ap.add_argument("--data", default=os.environ.get("FASHION_MNIST_DIR", DEFAULT_DIR))
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: OMP_NUM_THREADS or every core)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--tf32", choices=["default", "on", "off"], default="default")
    args = ap.parse_args()
    if args.epochs < 1 or args.batch < 1 or args.train < 0 or args.test < 0:
        ap.error("--epochs and --batch must be positive, --train and --test >= 0")
    torch.set_num_threads(args.threads or int(os.environ.get("OMP_NUM_THREADS") or os.cpu_count() or 1))
    xtr, ytr = load(args.data, "train", args.train)
    xte, yte = load(args.data, "t10k", args.test)
    if args.tf32 != "default":
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = args.tf32 == "on"
    dev = torch.device(args.device)
    torch.manual_seed(args.seed)
    net = lenet(args.relu_max).to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    n, bs = xtr.shape[0], args.batch
    eval_bs = bs if bs >= 1024 else min(4 * bs, 1024)  # the trainer's evaluation batches
    print(f"LeNet ({'ReLU, max pooling' if args.relu_max else 'sigmoid, average pooling'}) on torch "
          f"{torch.__version__} {dev}, {torch.get_num_threads()} threads: {n} training and {xte.shape[0]} test examples, "
          f"lr {args.lr:g}, batch {bs}", flush=True)
    for epoch in range(args.epochs):
        t0 = time.perf_counter()
        net.train()
        loss_sum = torch.zeros((), device=dev)
        correct = torch.zeros((), dtype=torch.int64, device=dev)
        perm = torch.randperm(n)
        for b in range(0, n, bs):
            idx = perm[b:b + bs]
            xb, yb = xtr[idx].to(dev, non_blocking=True), ytr[idx].to(dev, non_blocking=True)
            out = net(xb)
            loss = loss_fn(out, yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            with torch.no_grad():
                loss_sum += loss.detach() * xb.shape[0]
                correct += (out.argmax(dim=1) == yb).sum()
        net.eval()
        with torch.no_grad():
            test_correct = torch.zeros((), dtype=torch.int64, device=dev)
            for b in range(0, xte.shape[0], eval_bs):
                xb = xte[b:b + eval_bs].to(dev)
                test_correct += (net(xb).argmax(dim=1) == yte[b:b + eval_bs].to(dev)).sum()
        loss_v, tr_acc = loss_sum.item() / n, correct.item() / n
        te_acc = test_correct.item() / xte.shape[0]
        sec = time.perf_counter() - t0
        print(f"epoch {epoch + 1:2d}/{args.epochs}  train loss {loss_v:.4f}  train acc {tr_acc:.4f}"
              f"  test acc {te_acc:.4f}  {sec:.2f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
