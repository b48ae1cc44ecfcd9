"""torch.autograd.grad is asked for the real leaf after the region."""
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

x = torch.randn(3, 2, requires_grad=True)
with FakeTensorMode(allow_non_fake_inputs=True):
    y = (x * x).sum()
(gx,) = torch.autograd.grad(y, [x])
print(tuple(y.shape), tuple(gx.shape))
