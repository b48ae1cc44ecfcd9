"""The attacks of issue 15 kept as tests: newline variants of every fixture
and a seeded mutation fuzzer over the fixtures.

For every input, whatever it is:

* no traceback and no ``internal error`` (bad input is a one-line error);
* a fixed file parses, keeps its encoding, its BOM, its final newline and
  uses no newline kind the original did not use;
* a second ``--fix`` changes nothing;
* the ``--diff`` output applied with ``patch -p0`` gives exactly the bytes
  ``--fix`` writes.

The default tier runs every fixture in CR-only and mixed-newline form and 48
mutants; ``-m slow`` adds the CRLF form and 1,500 more mutants (``FUZZ_MUTANTS`` to
change it, ``FUZZ_SEED`` to pick another seed).
"""

from __future__ import annotations

import ast
import codecs
import os
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from fakegrad_lint.engine import process as pipeline
from fakegrad_lint.engine.lint import lint_source
from fakegrad_lint.rules import ALL_CODES
from fakegrad_lint.sources.sourcefile import SourceError, decode_source

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SOURCES = sorted(p for p in FIXTURES.glob("*.py") if not p.name.endswith(".fixed.py"))
CODES = frozenset(ALL_CODES) | {"FGL100"}
NEWLINES = re.compile(r"\r\n|\r|\n")
needs_patch = pytest.mark.skipif(shutil.which("patch") is None, reason="needs GNU patch")


def options(mode: str) -> pipeline.Options:
    return pipeline.Options(mode=mode, unsafe_fixes=True, timeout=None)


def kinds(text: str) -> set[str]:
    return set(NEWLINES.findall(text))


def with_newlines(text: str, how: str, rng: random.Random | None = None) -> str:
    lines = text.split("\n")
    if how == "cr":
        return "\r".join(lines)
    if how == "crlf":
        return "\r\n".join(lines)
    rng = rng or random.Random(len(text))
    out = lines[0]
    prev = ""
    for k, line in enumerate(lines[1:], start=1):
        # a "\r" followed by a "\n" would be one "\r\n", not two line ends
        choices = ("\r\n", "\r") if prev == "\r" and lines[k - 1] == "" else ("\n", "\r\n", "\r")
        prev = rng.choice(choices)
        out += prev + line
    return out


def no_tool_bug(result: pipeline.FileResult) -> None:
    for e in result.errors:
        assert "internal error" not in e.reason and "worker failed" not in e.reason, str(e)


def check_one(workdir: Path, name: str, raw: bytes) -> tuple[str, bytes] | None:
    """Run check, diff, fix and fix again on ``raw`` as ``workdir/name`` (cwd
    must be ``workdir``); assert the invariants. Returns (diff, fixed bytes)
    when the file was changed."""
    path = workdir / name
    path.write_bytes(raw)
    no_tool_bug(pipeline.process_file(name, CODES, options("check")))
    shown = pipeline.process_file(name, CODES, options("diff"))
    no_tool_bug(shown)
    diff = shown.diff
    assert path.read_bytes() == raw  # check and diff write nothing
    fixed = pipeline.process_file(name, CODES, options("fix"))
    no_tool_bug(fixed)
    new = path.read_bytes()
    if new == raw:
        assert diff == "", name
        return None
    before, after = decode_source(raw, name), decode_source(new, name)
    assert (after.encoding, after.bom) == (before.encoding, before.bom)
    ast.parse(after.text)
    assert kinds(after.text) <= (kinds(before.text) or {"\n"}), name
    ends = ("\r", "\n")
    if before.text.endswith(ends):  # a final newline is never lost (a last line
        assert after.text.endswith(ends)  # emptied by a fix may leave one behind)
    again = pipeline.process_file(name, CODES, options("fix"))
    no_tool_bug(again)
    assert path.read_bytes() == new, f"{name}: a second --fix changed the file"
    assert diff, name
    return diff, new


def patch_applies(tmp: Path, originals: dict[str, bytes], diffs: list[str], fixed: dict[str, bytes]) -> None:
    """Apply all diffs at once with ``patch -p0`` to copies of the originals."""
    work = tmp / "patched"
    work.mkdir()
    for name, raw in originals.items():
        (work / name).write_bytes(raw)
    data = "".join(diffs).encode("utf-8", "surrogateescape")  # as the CLI writes it
    proc = subprocess.run(["patch", "-p0", "--quiet", "--batch"], input=data, cwd=work, capture_output=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name, new in fixed.items():
        assert (work / name).read_bytes() == new, name


# ---------------------------------------------------------------------------
# every fixture with CR-only, CRLF and mixed newlines


def _lint(text: str, name: str):
    try:
        return [(f.code, f.location, f.end_location) for f in lint_source(text, name, CODES)]
    except SyntaxError:
        return "syntax error"


@needs_patch
@pytest.mark.slow  # every fixture linted and fixed three times over: slow tier (CI runs it)
@pytest.mark.parametrize("how", ["cr", "crlf", "mixed"])
def test_every_fixture_in_every_newline(tmp_path, monkeypatch, how):
    monkeypatch.chdir(tmp_path)
    originals, fixed, diffs = {}, {}, []
    for src in SOURCES:
        text = src.read_text(encoding="utf-8")
        variant = with_newlines(text, how)
        # the same findings at the same places
        assert _lint(variant, src.name) == _lint(text, src.name), src.name
        raw = variant.encode("utf-8")
        originals[src.name] = raw
        out = check_one(tmp_path, src.name, raw)
        if out is None:
            continue
        diffs.append(out[0])
        fixed[src.name] = out[1]
        if how != "mixed":
            # fixing the variant gives the variant of the fixed LF text
            lf = tmp_path / "lf"
            lf.mkdir(exist_ok=True)
            (lf / src.name).write_text(text, encoding="utf-8", newline="")
            monkeypatch.chdir(lf)
            pipeline.process_file(src.name, CODES, options("fix"))
            monkeypatch.chdir(tmp_path)
            want = with_newlines((lf / src.name).read_bytes().decode("utf-8"), how)
            assert out[1].decode("utf-8") == want, src.name
    assert len(fixed) >= 60  # the fixable fixtures really were fixed
    patch_applies(tmp_path, originals, diffs, fixed)


# ---------------------------------------------------------------------------
# the mutation fuzzer


def _lines(text: str) -> list[str]:
    return text.split("\n")


def _mutate_text(text: str, rng: random.Random) -> str:
    lines = _lines(text)
    op = rng.randrange(10)
    i = rng.randrange(len(lines))
    if op == 0 and len(lines) > 1:
        del lines[i]
    elif op == 1:
        lines.insert(i, lines[i])
    elif op == 2:
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif op == 3:
        lines[i] = rng.choice(("\t", "    ", " ")) + lines[i]
    elif op == 4:
        lines[i] += rng.choice(("  # noqa", "  # noqa: FGL001", "  # noqa: FGL002, E501", "  # NOQA:FGL003", " \\"))
    elif op == 5:
        pos = rng.randrange(len(text) + 1)
        junk = rng.choice(("(", ")", ":", "\\", "'", '"', "#", "\x0c", "é", "\u2028", "\x00", "\t", "[", "lambda: "))
        return text[:pos] + junk + text[pos:]
    elif op == 6:
        return text[: rng.randrange(len(text) + 1)]
    elif op == 7:
        return "if True:\n" + "\n".join("    " + line if line else line for line in lines)
    elif op == 8:
        lines[i] = lines[i].replace("x", "x_é", 1)
    else:
        lines.insert(i, rng.choice(("def f():", "    pass", "'''", "with m:", "async def g():", "y = x")))
    return "\n".join(lines)


def mutant(rng: random.Random) -> tuple[str, bytes]:
    src = rng.choice(SOURCES)
    text = src.read_text(encoding="utf-8")
    for _ in range(rng.randrange(0, 3)):
        text = _mutate_text(text, rng)
    if rng.random() < 0.5:
        text = with_newlines(text, rng.choice(("cr", "crlf", "mixed")), rng)
    if rng.random() < 0.2:
        text = text.rstrip("\r\n") if rng.random() < 0.5 else text + "\n"
    encoding, bom = "utf-8", False
    r = rng.random()
    if r < 0.15:
        bom = True
    elif r < 0.3:
        encoding = rng.choice(("latin-1", "cp1252"))
        text = f"# -*- coding: {encoding} -*-\n# café\n" + text
    try:
        raw = text.encode(encoding, "surrogateescape")
    except UnicodeEncodeError:
        raw = text.encode("utf-8")
    if bom:
        raw = codecs.BOM_UTF8 + raw
    return src.name, raw


def fuzz(tmp_path: Path, monkeypatch, seed: int, count: int) -> None:
    rng = random.Random(seed)
    monkeypatch.chdir(tmp_path)
    originals, fixed, diffs = {}, {}, []
    for i in range(count):
        base, raw = mutant(rng)
        name = f"m{i:05d}_{base}"
        originals[name] = raw
        try:
            decode_source(raw, name)
        except SourceError:
            # undecodable: a one-line error, the file untouched
            (tmp_path / name).write_bytes(raw)
            result = pipeline.process_file(name, CODES, options("fix"))
            assert len(result.errors) == 1 and "\n" not in str(result.errors[0])
            assert (tmp_path / name).read_bytes() == raw
            continue
        try:
            out = check_one(tmp_path, name, raw)
        except AssertionError as exc:
            raise AssertionError(f"seed {seed}, mutant {i} ({name}): {exc}") from None
        if out is not None:
            diffs.append(out[0])
            fixed[name] = out[1]
    if diffs:
        patch_applies(tmp_path, originals, diffs, fixed)


@needs_patch
def test_mutation_fuzzer_fast(tmp_path, monkeypatch):
    fuzz(tmp_path, monkeypatch, seed=int(os.environ.get("FUZZ_SEED", "15")), count=48)


@needs_patch
@pytest.mark.slow
def test_mutation_fuzzer_long(tmp_path, monkeypatch):
    fuzz(tmp_path, monkeypatch, seed=int(os.environ.get("FUZZ_SEED", "1515")), count=int(os.environ.get("FUZZ_MUTANTS", "1500")))
