"""The real leaf's name is rebound inside the region."""
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

x = torch.randn(2, 3, requires_grad=True)
with FakeTensorMode(allow_non_fake_inputs=True):
    x = x * 2
    y = x.sum()
    y.backward()
print(tuple(x.shape), tuple(y.shape))
