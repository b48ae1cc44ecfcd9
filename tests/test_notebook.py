"""Jupyter notebooks: real ``.ipynb`` JSON (hand-made fixtures in
``fixtures/notebooks/``, no nbformat needed) through the real CLI, plus units of
``fakegrad_lint.sources.notebook`` (IPython lines, positions, lossless write-back)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fakegrad_lint.sources import notebook
from fakegrad_lint.findings import Applicability, Edit, Finding, Fix, Location
from fakegrad_lint.engine.process import Options
from fakegrad_lint.sources.sourcefile import SourceError, read_source

ROOT = Path(__file__).resolve().parents[1]
NB_DIR = ROOT / "fixtures" / "notebooks"
BAD_NB_DIR = ROOT / "tests" / "data" / "notebooks"  # broken on purpose: kept out of the bundled examples

HAZARD_CELL5_FIXED = (
    "with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:\n"
    "    inp = torch.randn(4, 3)\n"
    "    scale_fake = fake_mode.from_tensor(scale)\n"
    "    out = inp * scale_fake  # FGL001\n"
    "    out.mean().backward()\n"
    "print(tuple(out.shape))"
)


@pytest.fixture(autouse=True, scope="module")
def _forget_notebook_attribute():
    """Importing ``fakegrad_lint.sources.notebook`` here sets it as an attribute of the
    package, which defeats other tests that hide the module through
    ``sys.modules`` (tests/test_pipeline.py); take it off again afterwards."""
    import fakegrad_lint

    yield
    vars(fakegrad_lint).pop("notebook", None)  # a later import finds it in sys.modules again


def cli(*args, cwd):
    env = dict(os.environ)
    env.pop("NO_COLOR", None)
    return subprocess.run(
        [sys.executable, "-m", "fakegrad_lint", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=120, check=False
    )


def copy(tmp_path: Path, *names: str) -> None:
    for name in names:
        src = NB_DIR / name if (NB_DIR / name).exists() else BAD_NB_DIR / name
        shutil.copyfile(src, tmp_path / name)


def write_nb(path: Path, cells, *, indent=1, metadata=None) -> Path:
    data = {
        "cells": cells,
        "metadata": metadata if metadata is not None else {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(data, indent=indent, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def code(src: str, as_str=False) -> dict:
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {},
        "outputs": [],
        "source": src if as_str else src.splitlines(keepends=True),
    }


def md(src: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": src.splitlines(keepends=True)}


def cells_of(path: Path) -> list:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def source_of(cell) -> str:
    s = cell["source"]
    return s if isinstance(s, str) else "".join(s)


# ---------------------------------------------------------------------------
# reporting


def test_text_output_names_cell_row_and_column(tmp_path):
    copy(tmp_path, "hazard.ipynb")
    proc = cli("hazard.ipynb", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == ""
    first = proc.stdout.splitlines()[0]
    # cell 5 counts the markdown cells too (like ruff); row 3 of that cell, column 11 (1-based)
    assert first.startswith("hazard.ipynb:cell 5:3:11: FGL001 [*] real requires-grad parameter `scale`")
    # the message's own line numbers are cell rows too, not rows of the joined program
    assert "(line 1) and `.backward()` on line 4 " in first


def test_json_output_has_cell_and_cell_relative_fix(tmp_path):
    copy(tmp_path, "hazard.ipynb")
    proc = cli("--output-format", "json", "hazard.ipynb", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    [d] = json.loads(proc.stdout)
    assert (d["cell"], d["code"], d["location"], d["noqa_row"]) == (5, "FGL001", {"row": 3, "column": 11}, 3)
    rows = {e["location"]["row"] for e in d["fix"]["edits"]} | {e["end_location"]["row"] for e in d["fix"]["edits"]}
    assert rows <= {1, 2, 3, 4, 5}  # within the 5-row cell, not program rows
    assert d["fix"]["applicability"] == "safe"


def test_snippet_shows_the_cell_line(tmp_path):
    copy(tmp_path, "hazard.ipynb")
    proc = cli("--color", "always", "hazard.ipynb", cwd=tmp_path)
    assert "out = inp * scale  # FGL001" in proc.stdout


def test_value_defined_in_an_earlier_cell_is_tracked(tmp_path):
    cells = cells_of(NB_DIR / "hazard.ipynb")
    write_nb(tmp_path / "with_def.ipynb", cells)
    # the same notebook without the cell that creates the parameter: nothing to report
    write_nb(tmp_path / "without_def.ipynb", [cells[0], code("import torch\nfrom torch._subclasses.fake_tensor import FakeTensorMode\nscale = torch.ones(3)\n")] + cells[2:])
    proc = cli("--output-format", "json", "with_def.ipynb", "without_def.ipynb", cwd=tmp_path)
    got = [(Path(d["filename"]).name, d["cell"], d["location"]["row"]) for d in json.loads(proc.stdout)]
    assert got == [("with_def.ipynb", 5, 3)]


def test_strict_mode_across_cells_two_space_string_sources(tmp_path):
    copy(tmp_path, "strict_two_space.ipynb")
    proc = cli("--output-format", "json", "strict_two_space.ipynb", cwd=tmp_path)
    [d] = json.loads(proc.stdout)
    assert (d["cell"], d["code"], d["location"]["row"], d["location"]["column"]) == (2, "FGL002", 4, 17)


def test_cell_magic_cells_are_skipped_and_safe_copies_pass(tmp_path):
    copy(tmp_path, "safe.ipynb")
    proc = cli("safe.ipynb", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stdout


def test_notebook_without_code_cells(tmp_path):
    copy(tmp_path, "no_code.ipynb")
    proc = cli("no_code.ipynb", cwd=tmp_path)
    assert (proc.returncode, proc.stderr, proc.stdout) == (0, "", "All checks passed!\n")


def test_invalid_json_is_one_line_error_and_the_run_goes_on(tmp_path):
    copy(tmp_path, "invalid_json.ipynb", "hazard.ipynb")
    proc = cli("--output-format", "json", "invalid_json.ipynb", "hazard.ipynb", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == "invalid_json.ipynb: error: invalid notebook: not valid JSON: Expecting ',' delimiter (line 6, column 1)\n"
    assert [d["cell"] for d in json.loads(proc.stdout)] == [5]


@pytest.mark.parametrize(
    "content, reason",
    [
        ("[1, 2]\n", "invalid notebook: the top level is a JSON list, not an object"),
        ('{"metadata": {}}\n', 'invalid notebook: no "cells" list'),
        ('{"worksheets": [], "nbformat": 3}\n', "nbformat 3"),
        ('{"cells": [{"cell_type": "code", "source": [1]}]}\n', 'cell 1: "source" is not a string or a list of strings'),
        ('{"cells": ["x"]}\n', "cell 1 is not a JSON object"),
        ("", "not valid JSON: Expecting value (line 1, column 1)"),
    ],
)
def test_not_a_notebook(tmp_path, content, reason):
    (tmp_path / "bad.ipynb").write_text(content)
    proc = cli("bad.ipynb", cwd=tmp_path)
    assert proc.returncode == 2
    [line] = proc.stderr.splitlines()
    assert line.startswith("bad.ipynb: error: ") and reason in line, line
    assert "Traceback" not in proc.stderr


def test_syntax_error_names_the_cell(tmp_path):
    write_nb(tmp_path / "nb.ipynb", [md("x"), code("from torch._subclasses import FakeTensorMode\n"), code("x = 1\nif x\n    pass")])
    proc = cli("nb.ipynb", cwd=tmp_path)
    assert proc.returncode == 2
    [line] = proc.stderr.splitlines()
    assert line.startswith("nb.ipynb: error: SyntaxError: ")
    assert line.endswith("(cell 3, line 2, column 5)"), line


def test_noqa_in_a_cell(tmp_path):
    cells = cells_of(NB_DIR / "hazard.ipynb")
    cells[4]["source"] = [s.replace("# FGL001", "# noqa: FGL001") for s in cells[4]["source"]]
    write_nb(tmp_path / "nb.ipynb", cells)
    proc = cli("--extend-select", "FGL100", "nb.ipynb", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stdout


def test_other_language_notebooks_are_skipped(tmp_path):
    cells = [code("library(ggplot2)\nx <- c(1, 2)\n")]
    write_nb(tmp_path / "r.ipynb", cells, metadata={"language_info": {"name": "R"}})
    proc = cli("r.ipynb", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "")


def test_directory_walk_finds_notebooks(tmp_path):
    copy(tmp_path, "hazard.ipynb", "safe.ipynb")
    proc = cli("--output-format", "json", ".", cwd=tmp_path)
    assert [(Path(d["filename"]).name, d["cell"]) for d in json.loads(proc.stdout)] == [("hazard.ipynb", 5)]


# ---------------------------------------------------------------------------
# fixing


def test_fix_rewrites_only_the_changed_cell(tmp_path):
    copy(tmp_path, "hazard.ipynb")
    path = tmp_path / "hazard.ipynb"
    before = path.read_bytes()
    proc = cli("--fix", "hazard.ipynb", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    after = path.read_bytes()
    old, new = json.loads(before), json.loads(after)
    assert source_of(new["cells"][4]) == HAZARD_CELL5_FIXED
    new["cells"][4]["source"] = old["cells"][4]["source"]
    assert new == old  # outputs, metadata, other cells: unchanged
    # byte level: everything before and after the source array is identical
    start = before.index(b'"with FakeTensorMode')
    end = before.index(b'"print(tuple(out.shape))"') + len(b'"print(tuple(out.shape))"')
    assert after.startswith(before[:start]) and after.endswith(before[end:])
    assert b"\xe2\x80\x94" in after  # the non-ASCII dash stays a raw character (ensure_ascii=False)
    # the new lines use the file's one-space indentation
    assert b'\n    "    scale_fake = fake_mode.from_tensor(scale)\\n",\n' in after
    # fixed: clean now, and a second --fix changes nothing
    assert cli("hazard.ipynb", cwd=tmp_path).returncode == 0
    mtime = path.stat().st_mtime_ns
    assert cli("--fix", "hazard.ipynb", cwd=tmp_path).returncode == 0
    assert path.read_bytes() == after and path.stat().st_mtime_ns == mtime


def test_fix_keeps_string_sources_and_two_space_indent(tmp_path):
    copy(tmp_path, "strict_two_space.ipynb")
    path = tmp_path / "strict_two_space.ipynb"
    before = path.read_text(encoding="utf-8")
    proc = cli("--fix", "strict_two_space.ipynb", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    after = path.read_text(encoding="utf-8")
    cell = json.loads(after)["cells"][1]
    assert isinstance(cell["source"], str)
    assert cell["source"] == (
        "def shapes():\n    %time y = 1\n    with FakeTensorMode() as fake_mode:\n"
        "        x_fake = fake_mode.from_tensor(x)\n        return (x_fake + 1).shape  # FGL002\n\nshapes()"
    )
    # only the one JSON line of that source differs
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines()) if a != b]
    assert len(before.splitlines()) == len(after.splitlines()) and len(changed) == 1
    assert changed[0][1].startswith('      "source": "def shapes():')
    assert after.endswith("}\n")


def test_diff_names_the_cell_and_writes_nothing(tmp_path):
    copy(tmp_path, "hazard.ipynb")
    path = tmp_path / "hazard.ipynb"
    before = path.read_bytes()
    proc = cli("--diff", "hazard.ipynb", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.startswith("--- hazard.ipynb:cell 5\n+++ hazard.ipynb:cell 5\n")
    assert "+    scale_fake = fake_mode.from_tensor(scale)\n" in proc.stdout
    assert "No newline" not in proc.stdout
    assert path.read_bytes() == before


def test_fix_with_nothing_to_fix_does_not_touch_the_file(tmp_path):
    copy(tmp_path, "safe.ipynb", "no_code.ipynb")
    for name in ("safe.ipynb", "no_code.ipynb"):
        path = tmp_path / name
        before, mtime = path.read_bytes(), path.stat().st_mtime_ns
        assert cli("--fix", "--unsafe-fixes", name, cwd=tmp_path).returncode == 0
        assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime


def test_add_noqa_goes_into_the_cell(tmp_path):
    copy(tmp_path, "hazard.ipynb")
    proc = cli("--add-noqa", "hazard.ipynb", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    cell = source_of(cells_of(tmp_path / "hazard.ipynb")[4])
    assert "    out = inp * scale  # FGL001  # noqa: FGL001\n" in cell
    assert cli("hazard.ipynb", cwd=tmp_path).returncode == 0


def test_magic_lines_survive_a_fix(tmp_path):
    src = (
        "%load_ext autoreload\n"
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "w = torch.randn(3, requires_grad=True)\n"
        "!echo \"hi\"\n"
        "with FakeTensorMode(allow_non_fake_inputs=True):\n"
        "    %time y = 1\n"
        "    (w * 2).sum().backward()  # FGL001\n"
        "w?"
    )
    path = write_nb(tmp_path / "nb.ipynb", [code(src)])
    proc = cli("--output-format", "json", "nb.ipynb", cwd=tmp_path)
    assert [(d["cell"], d["location"]["row"]) for d in json.loads(proc.stdout)] == [(1, 8)]
    assert cli("--fix", "nb.ipynb", cwd=tmp_path).returncode == 0
    fixed = source_of(cells_of(path)[0])
    assert fixed == src.replace(
        "with FakeTensorMode(allow_non_fake_inputs=True):\n",
        "with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:\n",
    ).replace("    (w * 2)", "    w_fake = fake_mode.from_tensor(w)\n    (w_fake * 2)")


# ---------------------------------------------------------------------------
# units


def test_python_text_blanks_only_ipython_lines_at_statement_starts():
    src = (
        "%matplotlib inline\n"
        "x = (1\n"
        "     % 2)\n"
        "s = '''\n"
        "!not a shell line\n"
        "'''\n"
        "files = !ls\n"
        "t = %timeit -o f()\n"
        "ok = a != b\n"
        "if x:\n"
        "    %time f()\n"
        "    ?x\n"
        "len?\n"
        "y = x ? 1\n"
        "# a comment?\n"
    )
    text, placeholders = notebook.python_text(src, "t")
    old, new = src.splitlines(), text.splitlines()
    assert len(old) == len(new)
    blanked = [i + 1 for i, (a, b) in enumerate(zip(old, new)) if a != b]
    assert blanked == [1, 7, 8, 11, 12, 13]
    assert sorted(placeholders.values()) == sorted(old[i - 1] for i in blanked)
    assert new[10].startswith("    pass")


def test_python_text_cell_magic_and_plain_cells():
    assert notebook.python_text("%%time\nx = 1\n", "t") == (None, {})
    assert notebook.python_text("\n%%bash\necho hi", "t") == (None, {})
    assert notebook.python_text("x = 1 % 2\n", "t") == ("x = 1 % 2\n", {})


def test_python_text_keeps_indentation_valid():
    import ast

    src = "for i in range(3):\n    x = i\n        %time f(x)\ny = 2\n  !ls\n"
    text, _ = notebook.python_text(src, "t")
    ast.parse(text)


def _fake_lint_spanning(text: str) -> list[Finding]:
    """A lint that offers one fix spanning the first two cells and one inside cell 2."""
    rows = text.split("\n")
    second = next((i for i, line in enumerate(rows) if line.startswith(("b = 2", "c = 2"))), 0) + 1
    span = Fix("rename across cells", Applicability.SAFE, (Edit(Location(1, 0), Location(1, 1), "A"), Edit(Location(second, 0), Location(second, 1), "B")))
    inside = Fix("rename in cell", Applicability.SAFE, (Edit(Location(second, 0), Location(second, 1), "c"),))
    out = []
    if text.startswith("a"):
        out.append(Finding("FGL001", "m", "nb.ipynb", Location(1, 0), Location(1, 1), span))
    if "\nb = 2" in text:
        out.append(Finding("FGL002", "m on line 1", "nb.ipynb", Location(second, 0), Location(second, 1), inside))
    return out


def test_fix_spanning_cells_is_display_only_and_not_applied(tmp_path, monkeypatch):
    path = write_nb(tmp_path / "nb.ipynb", [code("a = 1"), md("text"), code("b = 2")])
    raw = path.read_bytes()
    found = notebook.lint_notebook(raw, str(path), _fake_lint_spanning)
    assert [(f.code, f.cell, f.location.row) for f in found] == [("FGL001", 1, 1), ("FGL002", 3, 1)]
    assert found[0].fix.applicability is Applicability.DISPLAY_ONLY and not found[0].fix.edits
    assert "spans notebook cells" in found[0].fix.message
    assert found[1].fix.edits == (Edit(Location(1, 0), Location(1, 1), "c"),)
    assert found[1].message == "m on cell 1, line 1"  # program row 1 is cell 1's row 1
    # the engine's one path, with the fake lint in place of lint_source (the
    # cells name no fake mode: the prefilter's verdict is given)
    from fakegrad_lint.engine import lint as engine_lint
    from fakegrad_lint.engine.process import process_source
    from fakegrad_lint.rules import ALL_CODES
    from fakegrad_lint.sources.kind import open_source

    monkeypatch.setattr(engine_lint, "lint_source", lambda text, *a, **k: _fake_lint_spanning(text))
    result = process_source(open_source(read_source(str(path))), ALL_CODES, Options(mode="fix"), verdict=(True, True))
    assert result.fixed == 1
    assert [source_of(c) for c in cells_of(path)] == ["a = 1", "text", "c = 2"]
    assert [(f.code, f.cell) for f in result.findings] == [("FGL001", 1)]


def test_render_crlf_and_empty_source(tmp_path):
    text = '{\r\n  "cells": [\r\n    {\r\n      "cell_type": "code",\r\n      "source": []\r\n    }\r\n  ],\r\n  "metadata": {}\r\n}'
    nb = notebook.load(text.encode(), "x.ipynb")
    out = notebook.render(nb, {0: "x = 1\ny = 2"}).decode()
    assert out == text.replace('"source": []', '"source": [\r\n        "x = 1\\n",\r\n        "y = 2"\r\n      ]')
    # and back to empty
    nb2 = notebook.load(out.encode(), "x.ipynb")
    assert notebook.render(nb2, {0: ""}).decode() == text


def test_render_keeps_ascii_escapes_and_bom():
    text = '{"cells": [{"cell_type": "code", "source": ["s = \\"\\u00e9\\"\\n", "t"]}, {"cell_type": "markdown", "source": "\\u00e9"}]}'
    raw = b"\xef\xbb\xbf" + text.encode()
    nb = notebook.load(raw, "x.ipynb")
    out = notebook.render(nb, {0: 's = "\u00e9"\nu'})
    assert out.startswith(b"\xef\xbb\xbf") and out[3:].isascii()
    assert out[3:].decode() == text.replace('"t"]', '"u"]')


def test_load_errors_are_source_errors():
    with pytest.raises(SourceError, match="not UTF-8"):
        notebook.load(b'{"cells": ["\xff"]}', "x.ipynb")


def test_precommit_hooks_take_notebooks():
    """``identify`` (what pre-commit filters with) tags .ipynb as ``jupyter``; both
    hooks list that type."""
    identify = pytest.importorskip("identify.identify")
    assert "jupyter" in identify.tags_from_filename("x.ipynb")
    import yaml

    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert all("jupyter" in h["types_or"] for h in hooks)


def test_the_pipeline_prefilters_notebooks(tmp_path, monkeypatch):
    """A notebook whose cells name no fake mode and have no FGL noqa is checked for
    validity, but its cells are never parsed (building the program parses each);
    one that names a fake mode still is."""
    from fakegrad_lint.engine import process as pipeline
    from fakegrad_lint.rules import ALL_CODES

    plain = write_nb(tmp_path / "plain.ipynb", [code("import torch\nx = 1  # noqa: E501\n!ls\n"), md("FakeTensorMode")])
    fake = write_nb(tmp_path / "fake.ipynb", [code("from torch._subclasses import FakeTensorMode\n")])
    built = []
    real_build = notebook.build_program
    monkeypatch.setattr(notebook, "build_program", lambda nb: built.append(nb.path) or real_build(nb))
    codes = ALL_CODES | {pipeline.UNUSED_NOQA_CODE}
    for p in (plain, fake):
        r = pipeline.process_file(str(p), codes, Options())
        assert (r.findings, r.errors) == ([], [])
    assert built == [str(fake)]
    bad = tmp_path / "bad.ipynb"
    bad.write_text('{"cells": ["x"]}\n')
    assert pipeline.process_file(str(bad), codes, Options()).errors  # still validated
