"""The same real module is called twice in the region (a siamese pair)."""
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

tower = nn.Sequential(nn.Linear(6, 4), nn.ReLU())
with FakeTensorMode(allow_non_fake_inputs=True):
    a = tower(torch.randn(3, 6))
    b = tower(torch.randn(3, 6))
    dist = (a - b).pow(2).sum(-1)
    dist.mean().backward()
print(tuple(a.shape), tuple(dist.shape))
