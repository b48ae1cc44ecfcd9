"""The real leaf is used by a lambda defined and called inside the region."""
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

w = torch.randn(3, requires_grad=True)
with FakeTensorMode(allow_non_fake_inputs=True):
    scale = lambda t: t * w
    y = scale(torch.randn(4, 3))
    y.sum().backward()
print(tuple(y.shape))
