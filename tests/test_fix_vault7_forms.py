"""Fix forms of issue 12 measured on the released vault7 set.

- a conversion inside an op that stays a hazard (vault7 ``hazard_lru_cache_rope_leak`` and
  its look-alike ``safe_lru_cache_rope_leak``, where the cache is cleared before the real
  step): ``self.out(self.emb(tokens) * table)`` with a leaked fake ``table`` is reported at
  the inner op (the real ``self.emb(tokens)``) and at the op that holds it (the real module
  ``self.out``), from the same region to the same backward. The enclosing finding has no
  fix, so converting the inner operand alone leaves ``self.out`` mixing a fake with its real
  parameters: the backward still leaves a FakeTensor ``.grad``. Before, that conversion was
  offered (unsafe) and written: the hazard stayed, and the safe look-alike (a false positive
  of the analysis) was touched. Now it is not offered (``fix/proof.unfixed_enclosing_op``),
  and the finding says why. Where the inner operand's op is the only one (no real module
  around it), the conversion is still offered.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from regen_golden import BASE_ARGS, cli

ENCLOSING = '''
import functools

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode


@functools.lru_cache(maxsize=None)
def scale_table(n):
    return torch.linspace(0.5, 1.5, n)


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(4, 4)
        self.out = nn.Linear(4, 2)

    def forward(self, x, scale):
        return self.out(self.inp(x) * scale)


def warm_up():
    with FakeTensorMode(allow_non_fake_inputs=True):
        return tuple(scale_table(4).shape)


torch.manual_seed(0)
head = Head()
print(warm_up())
head(torch.randn(3, 4), scale_table(4)).sum().backward()
print(type(head.out.weight.grad).__name__)
'''

# the same program with the cache cleared before the real step: it runs clean, and the
# analysis (a false positive its owners work on) may still report it; the fix must not touch it
SAFE_CLEARED = '''
import functools

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode


@functools.lru_cache(maxsize=None)
def scale_table(n):
    return torch.linspace(0.5, 1.5, n)


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(4, 4)
        self.out = nn.Linear(4, 2)

    def forward(self, x, scale):
        return self.out(self.inp(x) * scale)


def warm_up():
    with FakeTensorMode(allow_non_fake_inputs=True):
        shape = tuple(scale_table(4).shape)
    scale_table.cache_clear()
    return shape


torch.manual_seed(0)
head = Head()
print(warm_up())
head(torch.randn(3, 4), scale_table(4)).sum().backward()
print(type(head.out.weight.grad).__name__)
'''

# no real module holds the converted op: the conversion is the fix, still offered
INNER_ONLY = '''
import functools

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode


@functools.lru_cache(maxsize=None)
def scale_table(n):
    return torch.linspace(0.5, 1.5, n)


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(4, 4)

    def forward(self, x, scale):
        return (self.inp(x) * scale).sum()


def warm_up():
    with FakeTensorMode(allow_non_fake_inputs=True):
        return tuple(scale_table(4).shape)


torch.manual_seed(0)
head = Head()
print(warm_up())
head(torch.randn(3, 4), scale_table(4)).backward()
print(type(head.inp.weight.grad).__name__)
'''


def _write(tmp_path, name, code):
    path = tmp_path / f"{name}.py"
    path.write_text(code, encoding="utf-8")
    return path


def _report(path):
    run = cli(*BASE_ARGS, "--output-format", "json", "--unsafe-fixes", str(path), cwd=path.parent)
    return json.loads(run.stdout)


@pytest.mark.parametrize("name,code", [("enclosing", ENCLOSING), ("safe_cleared", SAFE_CLEARED)])
def test_a_conversion_that_leaves_the_enclosing_op_a_hazard_is_not_offered(tmp_path, name, code):
    path = _write(tmp_path, name, code)
    findings = _report(path)
    assert findings and all(f["fix"] is None for f in findings)
    inner = [f for f in findings if f["message"].count("`self.inp(x)`")]
    assert inner and "alone leaves the hazard" in inner[0]["no_fix"]
    assert "`self.out`" in inner[0]["no_fix"]
    mtime = path.stat().st_mtime_ns
    run = cli(*BASE_ARGS, "--fix", "--unsafe-fixes", str(path), cwd=tmp_path)
    assert run.stderr == ""
    assert path.read_text(encoding="utf-8") == code and path.stat().st_mtime_ns == mtime


def test_the_conversion_is_still_offered_where_no_real_module_holds_the_op(tmp_path):
    path = _write(tmp_path, "inner_only", INNER_ONLY)
    findings = _report(path)
    assert [f["fix"]["applicability"] for f in findings if f["fix"]] == ["unsafe"]
    cli(*BASE_ARGS, "--fix", "--unsafe-fixes", str(path), cwd=tmp_path)
    assert "detect_fake_mode([scale])" in path.read_text(encoding="utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("code,outcome", [(ENCLOSING, "hazard"), (SAFE_CLEARED, "clean"), (INNER_ONLY, "hazard")])
def test_labels_come_from_running_them(tmp_path, code, outcome):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from oracle import run_fixture

    assert run_fixture(str(_write(tmp_path, "program", code)))[0] == outcome
