"""A tuple of real leaves, indexed inside the region."""
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

pair = (torch.randn(3, 3, requires_grad=True), torch.randn(3, requires_grad=True))
with FakeTensorMode(allow_non_fake_inputs=True):
    z = pair[0] @ pair[1]
    z.sum().backward()
print(tuple(z.shape))
