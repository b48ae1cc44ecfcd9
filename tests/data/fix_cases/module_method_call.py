"""A method other than forward is called on a real module inside the region."""
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode


class AutoEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(8, 2)
        self.dec = nn.Linear(2, 8)

    def encode(self, x):
        return self.enc(x)

    def forward(self, x):
        return self.dec(self.enc(x))


ae = AutoEncoder()
with FakeTensorMode(allow_non_fake_inputs=True):
    code = ae.encode(torch.randn(5, 8))
    code.sum().backward()
print(tuple(code.shape))
