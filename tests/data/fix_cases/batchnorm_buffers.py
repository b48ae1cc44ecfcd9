"""A module with buffers (BatchNorm in training mode updates them in place)."""
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

net = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6))
with FakeTensorMode(allow_non_fake_inputs=True):
    y = net(torch.randn(8, 4))
    y.sum().backward()
print(tuple(y.shape), tuple(net[1].running_mean.shape))
