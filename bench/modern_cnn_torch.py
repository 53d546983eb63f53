#!/usr/bin/env python3
"""The networks and training of examples/modern_cnn.c (D2L chapter 8) in PyTorch, for comparison.

The models as D2L writes them: alexnet (8.1), vgg (8.2, D2L's VGG-11 with a quarter of the
channels, as its training run), nin (8.3), googlenet (8.4), bnlenet (8.5: LeNet with batch
norm), densenet (8.7), regnet (8.8: RegNetX-32). Lazy layers; D2L's init_cnn (xavier_uniform_ on
every Conv2d and Linear weight after one forward, here in eval mode on the first two training
images, as examples/modern_cnn.c does); SGD; the data, the resizing, the epochs and the progress
line as bench/resnet_torch.py (examples/resnet.c).

  /usr/bin/python3 bench/modern_cnn_torch.py --model M [--summary] [--epochs N] [--train N] [--test N]
      [--lr X] [--batch N] [--size S] [--seed N] [--data DIR] [--device cpu|cuda] [--threads N]

--summary prints D2L's layer_summary (the output shape of each top-level layer for one image of
S x S, in eval mode) in the form examples/modern_cnn.c prints it, and exits.
"""
import argparse
import os
import sys

import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resnet_torch import add_common_args, apply_common_args, fit, load  # noqa: E402  the same options, data, resizing, training loop

# D2L's hyperparameters per model: learning rate, image size
DEFAULTS = {"alexnet": (0.01, 224), "vgg": (0.01, 224), "nin": (0.05, 224), "googlenet": (0.01, 96),
            "bnlenet": (0.1, 28), "densenet": (0.01, 96), "regnet": (0.05, 96)}


def alexnet():
    return nn.Sequential(
        nn.LazyConv2d(96, kernel_size=11, stride=4, padding=1), nn.ReLU(), nn.MaxPool2d(kernel_size=3, stride=2),
        nn.LazyConv2d(256, kernel_size=5, padding=2), nn.ReLU(), nn.MaxPool2d(kernel_size=3, stride=2),
        nn.LazyConv2d(384, kernel_size=3, padding=1), nn.ReLU(),
        nn.LazyConv2d(384, kernel_size=3, padding=1), nn.ReLU(),
        nn.LazyConv2d(256, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(kernel_size=3, stride=2),
        nn.Flatten(), nn.LazyLinear(4096), nn.ReLU(), nn.Dropout(p=0.5),
        nn.LazyLinear(4096), nn.ReLU(), nn.Dropout(p=0.5), nn.LazyLinear(10))


def vgg_block(num_convs, out_channels):
    layers = []
    for _ in range(num_convs):
        layers += [nn.LazyConv2d(out_channels, kernel_size=3, padding=1), nn.ReLU()]
    layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
    return nn.Sequential(*layers)


def vgg(arch=((1, 16), (1, 32), (2, 64), (2, 128), (2, 128))):
    return nn.Sequential(*[vgg_block(n, c) for n, c in arch], nn.Flatten(), nn.LazyLinear(4096), nn.ReLU(),
                         nn.Dropout(0.5), nn.LazyLinear(4096), nn.ReLU(), nn.Dropout(0.5), nn.LazyLinear(10))


def nin_block(out_channels, kernel_size, strides, padding):
    return nn.Sequential(nn.LazyConv2d(out_channels, kernel_size, strides, padding), nn.ReLU(),
                         nn.LazyConv2d(out_channels, kernel_size=1), nn.ReLU(),
                         nn.LazyConv2d(out_channels, kernel_size=1), nn.ReLU())


def nin():
    return nn.Sequential(
        nin_block(96, kernel_size=11, strides=4, padding=0), nn.MaxPool2d(3, stride=2),
        nin_block(256, kernel_size=5, strides=1, padding=2), nn.MaxPool2d(3, stride=2),
        nin_block(384, kernel_size=3, strides=1, padding=1), nn.MaxPool2d(3, stride=2),
        nn.Dropout(0.5), nin_block(10, kernel_size=3, strides=1, padding=1),
        nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten())


class Inception(nn.Module):
    def __init__(self, c1, c2, c3, c4):
        super().__init__()
        self.b1_1 = nn.LazyConv2d(c1, kernel_size=1)
        self.b2_1 = nn.LazyConv2d(c2[0], kernel_size=1)
        self.b2_2 = nn.LazyConv2d(c2[1], kernel_size=3, padding=1)
        self.b3_1 = nn.LazyConv2d(c3[0], kernel_size=1)
        self.b3_2 = nn.LazyConv2d(c3[1], kernel_size=5, padding=2)
        self.b4_1 = nn.MaxPool2d(kernel_size=3, stride=1, padding=1)
        self.b4_2 = nn.LazyConv2d(c4, kernel_size=1)

    def forward(self, x):
        b1 = F.relu(self.b1_1(x))
        b2 = F.relu(self.b2_2(F.relu(self.b2_1(x))))
        b3 = F.relu(self.b3_2(F.relu(self.b3_1(x))))
        b4 = F.relu(self.b4_2(self.b4_1(x)))
        return torch.cat((b1, b2, b3, b4), dim=1)


def googlenet():
    b1 = nn.Sequential(nn.LazyConv2d(64, kernel_size=7, stride=2, padding=3), nn.ReLU(),
                       nn.MaxPool2d(kernel_size=3, stride=2, padding=1))
    b2 = nn.Sequential(nn.LazyConv2d(64, kernel_size=1), nn.ReLU(), nn.LazyConv2d(192, kernel_size=3, padding=1),
                       nn.ReLU(), nn.MaxPool2d(kernel_size=3, stride=2, padding=1))
    b3 = nn.Sequential(Inception(64, (96, 128), (16, 32), 32), Inception(128, (128, 192), (32, 96), 64),
                       nn.MaxPool2d(kernel_size=3, stride=2, padding=1))
    b4 = nn.Sequential(Inception(192, (96, 208), (16, 48), 64), Inception(160, (112, 224), (24, 64), 64),
                       Inception(128, (128, 256), (24, 64), 64), Inception(112, (144, 288), (32, 64), 64),
                       Inception(256, (160, 320), (32, 128), 128), nn.MaxPool2d(kernel_size=3, stride=2, padding=1))
    b5 = nn.Sequential(Inception(256, (160, 320), (32, 128), 128), Inception(384, (192, 384), (48, 128), 128),
                       nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten())
    return nn.Sequential(b1, b2, b3, b4, b5, nn.LazyLinear(10))


def bnlenet():
    return nn.Sequential(
        nn.LazyConv2d(6, kernel_size=5), nn.LazyBatchNorm2d(), nn.Sigmoid(), nn.AvgPool2d(kernel_size=2, stride=2),
        nn.LazyConv2d(16, kernel_size=5), nn.LazyBatchNorm2d(), nn.Sigmoid(), nn.AvgPool2d(kernel_size=2, stride=2),
        nn.Flatten(), nn.LazyLinear(120), nn.LazyBatchNorm1d(), nn.Sigmoid(),
        nn.LazyLinear(84), nn.LazyBatchNorm1d(), nn.Sigmoid(), nn.LazyLinear(10))


def conv_block(num_channels):
    return nn.Sequential(nn.LazyBatchNorm2d(), nn.ReLU(), nn.LazyConv2d(num_channels, kernel_size=3, padding=1))


class DenseBlock(nn.Module):
    def __init__(self, num_convs, num_channels):
        super().__init__()
        self.net = nn.Sequential(*[conv_block(num_channels) for _ in range(num_convs)])

    def forward(self, x):
        for blk in self.net:
            x = torch.cat((x, blk(x)), dim=1)
        return x


def transition_block(num_channels):
    return nn.Sequential(nn.LazyBatchNorm2d(), nn.ReLU(), nn.LazyConv2d(num_channels, kernel_size=1),
                         nn.AvgPool2d(kernel_size=2, stride=2))


def b1_resnet():
    return nn.Sequential(nn.LazyConv2d(64, kernel_size=7, stride=2, padding=3), nn.LazyBatchNorm2d(), nn.ReLU(),
                         nn.MaxPool2d(kernel_size=3, stride=2, padding=1))


def densenet(num_channels=64, growth_rate=32, arch=(4, 4, 4, 4)):
    layers = [b1_resnet()]
    for i, num_convs in enumerate(arch):
        layers.append(DenseBlock(num_convs, growth_rate))
        num_channels += num_convs * growth_rate
        if i != len(arch) - 1:
            num_channels //= 2
            layers.append(transition_block(num_channels))
    layers += [nn.Sequential(nn.LazyBatchNorm2d(), nn.ReLU(), nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(),
                             nn.LazyLinear(10))]
    return nn.Sequential(*layers)


class ResNeXtBlock(nn.Module):
    def __init__(self, num_channels, groups, bot_mul, use_1x1conv=False, strides=1):
        super().__init__()
        bot_channels = int(round(num_channels * bot_mul))
        self.conv1 = nn.LazyConv2d(bot_channels, kernel_size=1, stride=1)
        self.conv2 = nn.LazyConv2d(bot_channels, kernel_size=3, stride=strides, padding=1,
                                   groups=bot_channels // groups)
        self.conv3 = nn.LazyConv2d(num_channels, kernel_size=1, stride=1)
        self.bn1, self.bn2, self.bn3 = nn.LazyBatchNorm2d(), nn.LazyBatchNorm2d(), nn.LazyBatchNorm2d()
        if use_1x1conv:
            self.conv4 = nn.LazyConv2d(num_channels, kernel_size=1, stride=strides)
            self.bn4 = nn.LazyBatchNorm2d()
        else:
            self.conv4 = None

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        if self.conv4:
            x = self.bn4(self.conv4(x))
        return F.relu(y + x)


def regnet(stem_channels=32, groups=16, bot_mul=1, depths=(4, 6), channels=(32, 80)):
    layers = [nn.Sequential(nn.LazyConv2d(stem_channels, kernel_size=3, stride=2, padding=1), nn.LazyBatchNorm2d(),
                            nn.ReLU())]
    for d, c in zip(depths, channels):
        layers.append(nn.Sequential(ResNeXtBlock(c, groups, bot_mul, use_1x1conv=True, strides=2),
                                    *[ResNeXtBlock(c, groups, bot_mul) for _ in range(d - 1)]))
    layers.append(nn.Sequential(nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.LazyLinear(10)))
    return nn.Sequential(*layers)


MODELS = {"alexnet": alexnet, "vgg": vgg, "nin": nin, "googlenet": googlenet, "bnlenet": bnlenet,
          "densenet": densenet, "regnet": regnet}


def init_cnn(module):
    """D2L's init_cnn"""
    if type(module) in (nn.Linear, nn.Conv2d):
        nn.init.xavier_uniform_(module.weight)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=sorted(MODELS), required=True)
    ap.add_argument("--summary", action="store_true")
    add_common_args(ap, 0, 0)  # 0: the model's own (DEFAULTS)
    args = ap.parse_args()
    lr, size = DEFAULTS[args.model]
    args.lr, args.size = args.lr or lr, args.size or size
    dev = apply_common_args(ap, args)
    torch.manual_seed(args.seed)
    net = MODELS[args.model]().to(dev)
    if args.summary:
        net.eval()
        x = torch.zeros(1, 1, args.size, args.size, device=dev)
        with torch.no_grad():
            for layer in net:
                x = layer(x)
                print(f"{layer.__class__.__name__} output shape: ({', '.join(str(d) for d in x.shape)})")
        return 0
    xtr, ytr = load(args.data, "train", args.train, args.size)
    xte, yte = load(args.data, "t10k", args.test, args.size)
    net.eval()
    with torch.no_grad():
        net(xtr[:2].to(dev))
    net.apply(init_cnn)
    print(f"{args.model} on torch {torch.__version__} {dev}, {torch.get_num_threads()} threads: {xtr.shape[0]} training and "
          f"{xte.shape[0]} test examples at {args.size}x{args.size}, lr {args.lr:g}, batch {args.batch}", flush=True)
    fit(net, xtr, ytr, xte, yte, args.lr, args.batch, args.epochs, dev)
    return 0


if __name__ == "__main__":
    sys.exit(main())
