"""Registries across modules: a registry filled by decorators in the module that
defines it, and a package whose ``from . import modes  # registers ...`` runs for its
side effects even when a comment names the module again."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from test_project import assert_markers, make

REGISTRY = """
MODES = {}


def register_mode(name):
    def deco(factory):
        MODES[name] = factory
        return factory

    return deco


def get_mode(name):
    return MODES[name]()
"""

MODES = """
import contextlib

from torch._subclasses import FakeTensorMode


@register_mode("real")
def real_mode():
    return contextlib.nullcontext()


@register_mode("fake")
def fake_mode():
    return FakeTensorMode(allow_non_fake_inputs=True)
"""

TRAIN = """
import torch

from {src} import get_mode


def main():
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with get_mode("{key}"):
        loss = model(torch.randn(3, 4)).sum(){marker}
        loss.backward()
    opt.step()


if __name__ == "__main__":
    main()
"""


def _cli(root):
    proc = subprocess.run([sys.executable, "-m", "fakegrad_lint", "--output-format", "json", "."], cwd=root,
                          capture_output=True, text=True)
    return {(os.path.basename(f["filename"]), f["location"]["row"], f["code"]) for f in json.loads(proc.stdout)}


@pytest.mark.parametrize("key", ["fake", "real"])
def test_registry_filled_by_decorators_in_its_own_module(tmp_path, key):
    marker = "  # FGL001" if key == "fake" else ""
    make(tmp_path, {"fakerun.py": REGISTRY + MODES.replace("from torch", "from torch", 1),
                    "train.py": TRAIN.format(src="fakerun", key=key, marker=marker)})
    assert_markers(tmp_path)
    want = {("train.py", 11, "FGL001")} if key == "fake" else set()
    assert {f for f in _cli(tmp_path) if f[2] != "FGL004"} == want  # the prefilter lets train.py through


@pytest.mark.parametrize("key", ["fake", "real"])
def test_side_effect_import_named_again_in_a_comment(tmp_path, key):
    marker = "  # FGL001" if key == "fake" else ""
    make(tmp_path, {
        "fakerun/__init__.py": "from .registry import MODES, get_mode, register_mode\n"
                               "from . import modes  # noqa: F401  (registers the built-in modes)\n",
        "fakerun/registry.py": REGISTRY,
        "fakerun/modes.py": MODES.replace("from torch._subclasses import FakeTensorMode",
                                          "from torch._subclasses import FakeTensorMode\n\nfrom .registry import register_mode"),
        "train.py": TRAIN.format(src="fakerun", key=key, marker=marker),
    })
    assert_markers(tmp_path)
    want = {("train.py", 11, "FGL001")} if key == "fake" else set()
    assert {f for f in _cli(tmp_path) if f[2] != "FGL004"} == want
