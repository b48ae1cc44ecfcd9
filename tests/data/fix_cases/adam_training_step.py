"""A real model and Adam; the shape probe runs forward and backward under the mode."""
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
with FakeTensorMode(allow_non_fake_inputs=True):
    logits = model(torch.randn(10, 6))
    loss = nn.functional.cross_entropy(logits, torch.randint(0, 3, (10,)))
    loss.backward()
print(tuple(logits.shape), tuple(loss.shape))
opt.step()
opt.zero_grad()
real_loss = model(torch.randn(2, 6)).sum()
real_loss.backward()
print(tuple(real_loss.shape))
