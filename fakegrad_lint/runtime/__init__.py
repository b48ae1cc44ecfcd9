"""Runtime checker: watch user code for real requires-grad tensors entering fake ops.

This is the only package of fakegrad-lint that imports torch, and only lazily:
importing ``fakegrad_lint.runtime`` itself does not import torch.
"""
