"""A module called with keyword arguments inside the region."""
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

attn = nn.MultiheadAttention(embed_dim=8, num_heads=2, batch_first=True)
q = torch.randn(2, 5, 8)
with FakeTensorMode(allow_non_fake_inputs=True):
    out, _ = attn(q, q, q, need_weights=False)
    out.sum().backward()
print(tuple(out.shape))
