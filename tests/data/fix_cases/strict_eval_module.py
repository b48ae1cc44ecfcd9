"""Strict mode, a real module in eval mode with buffers: a certain crash."""
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

net = nn.Sequential(nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4)).eval()
print("eval", net.training)
with FakeTensorMode():
    out = net(torch.randn(2, 3, 5, 5))
print(tuple(out.shape))
