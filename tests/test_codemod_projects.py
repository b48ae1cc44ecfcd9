"""The LibCST codemod on multi-file projects, run for real (``python -m libcst.tool codemod
-x fakegrad_lint.integrations.codemod.FixFakeGrad``): the files of one codemod run are fixed
as one ``fakegrad-lint --fix`` run fixes them, a fix that lands in the module where the
region is opened included (libcst hands every path of the run to the pack's metadata
provider, ``fakegrad_lint/integrations/project_run.py``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("libcst")

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from markers import FIXTURES_DIR  # noqa: E402
from regen_golden import BASE_ARGS, cli  # noqa: E402
from test_fix_projects import (  # noqa: E402
    BUDGET, BUDGET_MAIN, CALLBACK_MAIN, CALLBACKS, TRAIN, UTILS, UTILS_FIXED, WEIGHT_PROJECT, texts, write_project,
)

PROJECTS = sorted(p.parent for p in (FIXTURES_DIR / "projects").glob("*/project.json"))


def codemod(*args, cwd):
    return subprocess.run([sys.executable, "-m", "libcst.tool", "codemod", "-x",
                           "fakegrad_lint.integrations.codemod.FixFakeGrad", "--no-format", "--hide-progress", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=1200, check=False)


def test_codemod_fixes_the_helper_module(tmp_path):
    """``--unsafe-fixes``: the module fix lands in ``utils.py`` (the helper's region), as
    ``fakegrad-lint --fix --unsafe-fixes .`` writes it; without it nothing is written."""
    root = write_project(tmp_path / "p", {"utils.py": UTILS, "train.py": TRAIN}, "train.py")
    proc = codemod(".", cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert texts(root) == {"train.py": TRAIN, "utils.py": UTILS}
    proc = codemod("--unsafe-fixes", ".", cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert texts(root) == {"train.py": TRAIN, "utils.py": UTILS_FIXED}


def test_codemod_writes_the_safe_helper_fix(tmp_path):
    root = write_project(tmp_path / "codemod", WEIGHT_PROJECT, "train.py")
    reference = write_project(tmp_path / "cli", WEIGHT_PROJECT, "train.py")
    assert cli(*BASE_ARGS, "--fix", ".", cwd=reference).returncode == 0
    assert codemod(".", cwd=root).returncode == 0
    assert texts(root) == texts(reference) and texts(root) != WEIGHT_PROJECT


@pytest.mark.parametrize("files, edited", [
    ({"callbacks.py": CALLBACKS, "main.py": CALLBACK_MAIN}, "callbacks.py"),  # a hook's region
    ({"estimate.py": BUDGET, "main.py": BUDGET_MAIN}, "estimate.py"),  # a context-manager class's
], ids=["hook", "context-manager-class"])
def test_codemod_lands_the_edit_where_the_region_is(tmp_path, files, edited):
    """The mode is entered by another module's hook or context-manager class: the codemod
    edits that module, exactly as ``fakegrad-lint --fix --unsafe-fixes .``."""
    root = write_project(tmp_path / "codemod", files, "main.py")
    reference = write_project(tmp_path / "cli", files, "main.py")
    assert cli(*BASE_ARGS, "--fix", "--unsafe-fixes", ".", cwd=reference).returncode in (0, 1)
    assert codemod("--unsafe-fixes", ".", cwd=root).returncode == 0
    assert texts(root) == texts(reference)
    assert texts(root)[edited] != files[edited] and texts(root)["main.py"] == files["main.py"]


@pytest.mark.slow  # every fixture project through libcst.tool and the CLI
def test_codemod_agrees_with_the_cli_on_every_fixture_project(tmp_path):
    differ = []
    for folder in PROJECTS:
        mine = Path(shutil.copytree(folder, tmp_path / "codemod" / folder.name))
        ref = Path(shutil.copytree(folder, tmp_path / "cli" / folder.name))
        assert codemod("--unsafe-fixes", ".", cwd=mine).returncode == 0
        assert cli(*BASE_ARGS, "--fix", "--unsafe-fixes", ".", cwd=ref).returncode in (0, 1)
        if texts(mine) != texts(ref):
            differ.append(folder.name)
    assert not differ, f"the codemod and fakegrad-lint differ on {differ}"
