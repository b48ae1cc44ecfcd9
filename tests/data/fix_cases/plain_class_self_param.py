"""A parameter kept on `self` of a plain (non-Module) class, used in a method's region."""
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode


class Scaler:
    def __init__(self):
        self.scale = nn.Parameter(torch.ones(4))

    def probe(self, n):
        with FakeTensorMode(allow_non_fake_inputs=True):
            y = torch.randn(n, 4) * self.scale
            y.sum().backward()
        return tuple(y.shape)


print(Scaler().probe(3))
