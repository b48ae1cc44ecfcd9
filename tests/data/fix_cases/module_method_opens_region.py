"""An nn.Module method probes its own submodule's output shape under the mode."""
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv1d(2, 4, 3), nn.ReLU())

    def probe(self, length):
        with FakeTensorMode(allow_non_fake_inputs=True):
            out = self.body(torch.randn(1, 2, length))
            out.mean().backward()
        return tuple(out.shape)


print(Head().probe(10))
