"""ExitStack enters the mode; a local nn.Module subclass is called inside."""
import contextlib

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(5, 5))

    def forward(self, x):
        return torch.sigmoid(x @ self.w) * x


gate = Gate()
with contextlib.ExitStack() as stack:
    stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
    out = gate(torch.randn(3, 5))
    out.sum().backward()
print(tuple(out.shape))
