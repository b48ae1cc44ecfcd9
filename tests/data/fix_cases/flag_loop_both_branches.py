"""The same code runs with the mode and with nullcontext (a flag that changes)."""
from contextlib import nullcontext

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

x = torch.randn(3, requires_grad=True)
for use_fake in (True, False):
    ctx = FakeTensorMode(allow_non_fake_inputs=True) if use_fake else nullcontext()
    with ctx:
        y = (x * 3).sum()
        y.backward()
    print(use_fake, tuple(y.shape))
