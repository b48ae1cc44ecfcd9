"""The gradient is read inside the region, right after the backward."""
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

x = torch.randn(2, 7, requires_grad=True)
with FakeTensorMode(allow_non_fake_inputs=True):
    y = x.log_softmax(-1).sum()
    y.backward()
    print(tuple(x.grad.shape))
print(tuple(y.shape))
