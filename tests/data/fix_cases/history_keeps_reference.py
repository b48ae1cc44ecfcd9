"""The region also records the tensor it saw; the record is inspected afterwards."""
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

x = torch.randn(3, 2, requires_grad=True)
history = []
with FakeTensorMode(allow_non_fake_inputs=True):
    history.append(x)
    y = x.sum(0)
    y.sum().backward()
print(tuple(y.shape), [type(t).__name__ for t in history])
