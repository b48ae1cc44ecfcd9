"""Two real leaves used in one region."""
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

w = torch.randn(4, 5, requires_grad=True)
b = torch.zeros(5, requires_grad=True)
with FakeTensorMode(allow_non_fake_inputs=True):
    h = torch.randn(3, 4) @ w + b
    h.relu().sum().backward()
print(tuple(h.shape))
