"""A fake tensor leaks out of the region and meets a real parameter."""
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

gain = nn.Parameter(torch.ones(4))
with FakeTensorMode(allow_non_fake_inputs=True):
    feats = torch.randn(2, 4)
scaled = feats * gain
scaled.sum().backward()
print(tuple(scaled.shape))
