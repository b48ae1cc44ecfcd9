"""fakegrad-lint: find real requires-grad tensors that leak into FakeTensorMode.

The static side (everything outside ``fakegrad_lint.runtime``) never imports torch.
"""

__version__ = "0.1.0"
