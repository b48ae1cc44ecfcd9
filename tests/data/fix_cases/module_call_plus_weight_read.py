"""The module is called and its weight is also read directly (weight decay) in the region."""
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

model = nn.Linear(4, 4)
with FakeTensorMode(allow_non_fake_inputs=True):
    out = model(torch.randn(2, 4))
    loss = out.sum() + 1e-4 * model.weight.pow(2).sum()
    loss.backward()
print(tuple(out.shape), tuple(loss.shape))
