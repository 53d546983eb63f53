#!/usr/bin/env python3
"""The training of examples/resnet.c (D2L 8.6's ResNet-18) in PyTorch, for comparison.

Same data (the same .gz files, read with gzip + numpy, pixels / 255 as float32, (n, 1, 28, 28),
resized to S x S by bilinear interpolation with align_corners=False, as examples/resnet.c does),
same network (D2L's b1: Conv2d(1, 64, 7, 2, 3), BatchNorm2d, ReLU, MaxPool2d(3, 2, 1); four
stages of two residual blocks, 64, 128, 256, 512 channels, each later stage's first block with
stride 2 and a 1x1 convolution; AdaptiveAvgPool2d((1, 1)), Flatten, Linear(512, 10)), PyTorch's
default initialisation, the same hyperparameters (SGD lr 0.01, batch 128, 10 epochs, 96 x 96, the
training set shuffled each epoch, mean cross-entropy), the same evaluation (the test set after
each epoch, without grad, in eval mode, batches of 4x the training batch up to 1024) and the same
progress line per epoch as examples/resnet.c.

  /usr/bin/python3 bench/resnet_torch.py [--epochs N] [--train N] [--test N] [--lr X] [--batch N]
      [--size S] [--seed N] [--data DIR] [--device cpu|cuda] [--threads N]
"""
import argparse
import os
import sys
import time

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fashion_torch import DEFAULT_DIR, read_idx  # noqa: E402  the same reading of the files


def load(data_dir, which, limit, size):
    x = read_idx(f"{data_dir}/{which}-images-idx3-ubyte.gz", 3, limit)
    y = read_idx(f"{data_dir}/{which}-labels-idx1-ubyte.gz", 1, limit)
    x = torch.from_numpy(x.reshape(x.shape[0], 1, 28, 28).astype(np.float32) / np.float32(255))
    if size != 28:
        x = torch.cat([F.interpolate(x[i:i + 4096], size=(size, size), mode="bilinear", align_corners=False)
                       for i in range(0, x.shape[0], 4096)])
    return x, torch.from_numpy(y.astype(np.int64))


class Residual(nn.Module):
    """D2L 8.6's residual block."""

    def __init__(self, in_channels, num_channels, use_1x1conv=False, strides=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, num_channels, kernel_size=3, padding=1, stride=strides)
        self.conv2 = nn.Conv2d(num_channels, num_channels, kernel_size=3, padding=1)
        self.conv3 = nn.Conv2d(in_channels, num_channels, kernel_size=1, stride=strides) if use_1x1conv else None
        self.bn1 = nn.BatchNorm2d(num_channels)
        self.bn2 = nn.BatchNorm2d(num_channels)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        if self.conv3:
            x = self.conv3(x)
        return F.relu(y + x)


def resnet18():
    layers = [nn.Conv2d(1, 64, kernel_size=7, stride=2, padding=3), nn.BatchNorm2d(64), nn.ReLU(),
              nn.MaxPool2d(kernel_size=3, stride=2, padding=1)]
    cin = 64
    for st, ch in enumerate((64, 128, 256, 512)):
        for k in range(2):
            first = k == 0 and st > 0
            layers.append(Residual(cin, ch, use_1x1conv=first, strides=2 if first else 1))
            cin = ch
    layers += [nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(512, 10)]
    return nn.Sequential(*layers)


def fit(net, xtr, ytr, xte, yte, lr, bs, epochs, dev):
    """SGD on mean cross-entropy, the training set shuffled each epoch; the test set after each epoch
    (eval mode, no grad, batches of 4x the training batch up to 1024); one progress line per epoch"""
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    n = xtr.shape[0]
    eval_bs = bs if bs >= 1024 else min(4 * bs, 1024)
    for epoch in range(epochs):
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
        print(f"epoch {epoch + 1:2d}/{epochs}  train loss {loss_v:.4f}  train acc {tr_acc:.4f}"
              f"  test acc {te_acc:.4f}  {sec:.2f} s", flush=True)


def add_common_args(ap, lr, size):
    """the options of this script and bench/modern_cnn_torch.py; lr and size: their defaults"""
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--train", type=int, default=0, help="first N training examples (0: all)")
    ap.add_argument("--test", type=int, default=0, help="first N test examples (0: all)")
    ap.add_argument("--lr", type=float, default=lr)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--size", type=int, default=size)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", default=os.environ.get("FASHION_MNIST_DIR", DEFAULT_DIR))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: OMP_NUM_THREADS or every core)")
    ap.add_argument("--tf32", choices=["default", "on", "off"], default="default",
                    help="torch.backends.cudnn.allow_tf32 and cuda.matmul.allow_tf32 (default: PyTorch's own)")


def apply_common_args(ap, args):
    """the common options checked and applied (threads, TF32); returns the device"""
    if args.epochs < 1 or args.batch < 1 or args.train < 0 or args.test < 0 or not 28 <= args.size <= 224:
        ap.error("--epochs and --batch must be positive, --train and --test >= 0, --size in [28, 224]")
    torch.set_num_threads(args.threads or int(os.environ.get("OMP_NUM_THREADS") or os.cpu_count() or 1))
    if args.tf32 != "default":
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = args.tf32 == "on"
    return torch.device(args.device)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_common_args(ap, 0.01, 96)
    args = ap.parse_args()
    dev = apply_common_args(ap, args)
    xtr, ytr = load(args.data, "train", args.train, args.size)
    xte, yte = load(args.data, "t10k", args.test, args.size)
    torch.manual_seed(args.seed)
    net = resnet18().to(dev)
    print(f"ResNet-18 on torch {torch.__version__} {dev}, {torch.get_num_threads()} threads: {xtr.shape[0]} training and "
          f"{xte.shape[0]} test examples at {args.size}x{args.size}, lr {args.lr:g}, batch {args.batch}", flush=True)
    fit(net, xtr, ytr, xte, yte, args.lr, args.batch, args.epochs, dev)
    return 0


if __name__ == "__main__":
    sys.exit(main())
