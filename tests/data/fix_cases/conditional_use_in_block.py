"""The real leaf is used in one branch of an `if` inside the region."""
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

bias = torch.zeros(6, requires_grad=True)
use_bias = True
with FakeTensorMode(allow_non_fake_inputs=True):
    h = torch.randn(2, 6)
    if use_bias:
        h = h + bias
    h.sum().backward()
print(tuple(h.shape))
