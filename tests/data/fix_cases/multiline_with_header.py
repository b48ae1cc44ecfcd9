"""The `with` header spans several lines and a comment opens the body."""
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

kernel = torch.randn(2, 1, 3, 3, requires_grad=True)
with FakeTensorMode(
    allow_non_fake_inputs=True,
):
    # infer the output size of the convolution
    feat = torch.nn.functional.conv2d(torch.randn(1, 1, 8, 8), kernel, padding=1)
    feat.sum().backward()
print(tuple(feat.shape))
