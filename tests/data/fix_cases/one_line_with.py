"""The whole region on one line."""
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

x = torch.randn(3, 3, requires_grad=True)
with FakeTensorMode(allow_non_fake_inputs=True): y = x.exp().sum(); y.backward()
print(tuple(y.shape))
