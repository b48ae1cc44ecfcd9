"""Strict mode (the default) with a leaf made by requires_grad_(): a certain crash."""
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

print("probe")
t = torch.linspace(0, 1, 12).requires_grad_()
with FakeTensorMode():
    grid = t.reshape(3, 4)
    print(tuple(grid.shape))
