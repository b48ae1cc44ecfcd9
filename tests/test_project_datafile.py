"""A project's JSON data file read at run time by a constant path (issue 10): the
configuration checked in with the project is the one analysed, as the program run from
the project reads it; where which file (or what text) is read is not known, nothing is
reported. Each hazard has a safe look-alike."""

from __future__ import annotations

import json

from test_project import assert_markers, findings_of, make

MODES = """\
from torch._subclasses.fake_tensor import FakeTensorMode
import contextlib


def make_mode(cfg):
    if cfg["fake"]:
        return FakeTensorMode(allow_non_fake_inputs=cfg["allow"])
    return contextlib.nullcontext()
"""

RUN = """\
import json

import torch
from torch import nn

from modes import make_mode

with open("config.json") as fh:
    cfg = json.load(fh)

model = nn.Linear(cfg["width"], 2)
with make_mode(cfg):
    out = model(torch.randn(3, cfg["width"]))  # FGL001
    out.sum().backward()
"""

LOCATE = """\
import importlib


def locate(path):
    module_name, _, attr = path.partition(":")
    return getattr(importlib.import_module(module_name), attr)
"""

ESTIMATE = """\
import torch
from torch._subclasses.fake_tensor import FakeTensorMode


def estimate_train(model, shape):
    with FakeTensorMode(allow_non_fake_inputs=True):
        model(torch.randn(*shape)).sum().backward()


def estimate_forward(model, shape):
    with FakeTensorMode(allow_non_fake_inputs=True):
        return tuple(model(torch.randn(*shape)).shape)
"""

MAIN = """\
import json

from resolve import locate


def main():
    with open("experiment.json") as fh:
        exp = json.load(fh)
    model = locate(exp["model"])(**exp["kwargs"])
    estimator = locate(exp["estimator"])
    print(estimator(model, tuple(exp["shape"])))  # FGL001


if __name__ == "__main__":
    main()
"""


def _config(**kw):
    return json.dumps({"fake": True, "allow": True, "width": 4, **kw})


def test_json_config_selects_the_fake_mode(tmp_path):
    assert_markers(make(tmp_path, {"modes.py": MODES, "run.py": RUN, "config.json": _config()}))


def test_json_config_selects_nullcontext(tmp_path):
    make(tmp_path, {"modes.py": MODES, "run.py": RUN.replace("  # FGL001", ""), "config.json": _config(fake=False)})
    assert_markers(tmp_path)


def test_json_config_read_where_two_files_differ_is_unknown(tmp_path):
    # run from the project root or from app/: the two config.json files disagree
    make(tmp_path, {"pyproject.toml": "[project]\nname = 'x'\n", "config.json": _config(fake=False),
                    "app/modes.py": MODES, "app/run.py": RUN, "app/config.json": _config()})
    assert [f for f in findings_of(tmp_path / "app" / "run.py") if f.code == "FGL001"] == []


def test_json_config_written_by_the_program_is_unknown(tmp_path):
    run = RUN.replace("with open(\"config.json\") as fh:",
                      "with open(\"config.json\", \"w\") as out:\n    json.dump({\"fake\": False}, out)\n"
                      "with open(\"config.json\") as fh:")
    make(tmp_path, {"modes.py": MODES, "run.py": run, "config.json": _config()})
    assert [f for f in findings_of(tmp_path / "run.py") if f.code == "FGL001"] == []


def test_json_class_paths_resolved_with_importlib(tmp_path):
    exp = {"model": "torch.nn:Linear", "kwargs": {"in_features": 4, "out_features": 2},
           "estimator": "tools.fake:estimate_train", "shape": [3, 4]}
    make(tmp_path, {"resolve.py": LOCATE, "tools/__init__.py": "", "tools/fake.py": ESTIMATE, "main.py": MAIN,
                    "experiment.json": json.dumps(exp)})
    rows = [f.location.row for f in findings_of(tmp_path / "main.py") if f.code == "FGL001"]
    assert rows == [11]


def test_json_class_paths_forward_only_estimator(tmp_path):
    exp = {"model": "torch.nn:Linear", "kwargs": {"in_features": 4, "out_features": 2},
           "estimator": "tools.fake:estimate_forward", "shape": [3, 4]}
    make(tmp_path, {"resolve.py": LOCATE, "tools/__init__.py": "", "tools/fake.py": ESTIMATE, "main.py": MAIN,
                    "experiment.json": json.dumps(exp)})
    assert [f for f in findings_of(tmp_path / "main.py") if f.code in ("FGL001", "FGL002", "FGL003")] == []
