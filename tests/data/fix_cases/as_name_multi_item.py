"""The mode bound with `as` as the second item of a `with`."""
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

v = torch.randn(5, requires_grad=True)
with torch.enable_grad(), FakeTensorMode(allow_non_fake_inputs=True) as fm:
    out = torch.outer(v, v)
    out.trace().backward()
print(tuple(out.shape), fm.allow_non_fake_inputs)
