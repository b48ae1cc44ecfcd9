"""Two separate regions use the same real leaf."""
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

x = torch.randn(4, 4, requires_grad=True)
with FakeTensorMode(allow_non_fake_inputs=True):
    a = x.diagonal()
    a.sum().backward()
with FakeTensorMode(allow_non_fake_inputs=True):
    b = x.tril(-1)
    b.sum().backward()
print(tuple(a.shape), tuple(b.shape))
