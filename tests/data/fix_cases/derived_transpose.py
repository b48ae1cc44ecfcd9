"""A value derived from a leaf outside the region (a transpose view)."""
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

weight = torch.randn(6, 2, requires_grad=True)
weight_t = weight.t()
with FakeTensorMode(allow_non_fake_inputs=True):
    proj = torch.randn(5, 6) @ weight_t.t()
    proj.pow(2).sum().backward()
print(tuple(proj.shape), tuple(weight_t.shape))
