"""A mode object at module level, entered in a function that reads a global leaf."""
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

FAKE = FakeTensorMode(allow_non_fake_inputs=True)
EMBED = torch.randn(10, 8, requires_grad=True)


def embed_shape(ids):
    with FAKE:
        out = torch.nn.functional.embedding(ids, EMBED)
        out.mean().backward()
    return tuple(out.shape)


print(embed_shape(torch.tensor([[1, 2, 3]])))
