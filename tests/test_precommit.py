"""The pre-commit hooks, through the real ``pre-commit try-repo`` (slow but real:
about 10-30 s, most of it pre-commit building the hook's virtualenv once).

The hook repository is a git snapshot of this checkout's working tree (tracked
and untracked, non-ignored files), so the test sees what the other tests see.
(``try-repo`` on a checkout with uncommitted changes clones a "shadow" repo with
the tracked changes but without untracked files.) One test runs ``pre-commit
try-repo <snapshot> fakegrad-lint``; ``try-repo`` builds the hook environment in
a throw-away store on every call, so the others use a ``.pre-commit-config.yaml``
pointing at the snapshot (what users write) and ``pre-commit run``, which
builds it once in the shared ``PRE_COMMIT_HOME``. Offline and independent of the
base interpreter: pip uses no index, only a folder of wheels rebuilt from this
test environment's own installed packages (``tests/wheelhouse.py``: the
dependencies and setuptools for the build), the hook virtualenv does not see
any system site-packages, and ``PRE_COMMIT_HOME`` is a temporary folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fakegrad_lint.rules import RULES
from markers import marked_rows, strip_markers

ROOT = Path(__file__).resolve().parents[1]
FIXABLE = next(r for r in RULES if r.default and r.fixed_example is not None)

GIT_ENV = {
    "GIT_AUTHOR_NAME": "test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(*args, cwd: Path) -> str:
    env = dict(os.environ, **GIT_ENV, HOME=str(cwd))  # no user git config, no global hooks
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, (args, proc.stderr)
    return proc.stdout


def make_repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True)
    git("init", "-q", cwd=path)
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text, encoding="utf-8")
    git("add", "-A", cwd=path)
    git("commit", "-q", "--allow-empty", "-m", "init", cwd=path)
    return path


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> Path:
    """fakegrad-lint's dependencies and its build backend, repacked as wheels
    from this test environment (not from the base interpreter, not from an index)."""
    from importlib import metadata

    import wheelhouse

    dest = tmp_path_factory.mktemp("wheelhouse")
    roots = wheelhouse._requirements(metadata.distribution("fakegrad-lint")) + ["setuptools"]
    wheelhouse.build(dest, roots)
    return dest


@pytest.fixture(scope="module")
def env(tmp_path_factory, wheels):
    home = tmp_path_factory.mktemp("pre-commit-home")
    e = dict(os.environ, **GIT_ENV)
    for key in list(e):
        if key.startswith(("PIP_", "VIRTUALENV_")):
            del e[key]
    e.update(
        PRE_COMMIT_HOME=str(home),
        PIP_NO_INDEX="1",  # offline: only the wheels rebuilt from this environment
        PIP_FIND_LINKS=str(wheels),
        PIP_CONFIG_FILE=os.devnull,  # no site or user pip configuration
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        VIRTUALENV_SYSTEM_SITE_PACKAGES="0",  # never the base interpreter's packages
        PRE_COMMIT_COLOR="never",
    )
    e.pop("PYTHONPATH", None)
    return e


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory) -> Path:
    """A committed snapshot of this checkout's working tree."""
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT).split("\0")
    snap = tmp_path_factory.mktemp("hook-repo") / "fakegrad-lint"
    snap.mkdir()
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file() and not src.is_symlink():
            (snap / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, snap / rel)
    git("init", "-q", cwd=snap)
    git("add", "-A", cwd=snap)
    git("commit", "-q", "-m", "snapshot", cwd=snap)
    return snap


@pytest.fixture(scope="module")
def config(hook_repo) -> str:
    """A ``.pre-commit-config.yaml`` using both hooks from the snapshot."""
    rev = git("rev-parse", "HEAD", cwd=hook_repo).strip()
    return (
        "repos:\n"
        f"  - repo: {hook_repo}\n"
        f"    rev: {rev}\n"
        "    hooks:\n"
        "      - id: fakegrad-lint\n"
        "      - id: fakegrad-lint-fix\n"
    )


def pre_commit(repo: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=300,
    )


def run_hooks(repo: Path, env: dict, *hook: str) -> subprocess.CompletedProcess:
    """``pre-commit run [HOOK] --all-files``: the hook environment is built once
    in the shared ``PRE_COMMIT_HOME`` and reused."""
    return pre_commit(repo, env, "run", *hook, "--all-files")


def test_hook_definitions_are_committed():
    # `repo:` and `try-repo` only see committed files
    git("ls-files", "--error-unmatch", ".pre-commit-hooks.yaml", "pyproject.toml", cwd=ROOT)
    import yaml

    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))}
    assert set(hooks) == {"fakegrad-lint", "fakegrad-lint-fix"}
    assert hooks["fakegrad-lint"]["entry"] == "fakegrad-lint"
    assert hooks["fakegrad-lint-fix"]["entry"] == "fakegrad-lint --fix"
    for h in hooks.values():
        assert h["language"] == "python"
        assert {"python", "pyi"} <= set(h["types_or"]) <= {"python", "pyi", "jupyter"}
        assert h["require_serial"] is True


def hazard_source() -> tuple[str, list[int]]:
    example = FIXABLE.invalid[0]
    rows = marked_rows(example, FIXABLE.code)
    # the `# FGLxxx` markers annotate the docs example, they are not code: drop
    # them so the fixed file must equal the documented fixed example exactly
    source = strip_markers(example)
    assert rows and source != example and len(source.splitlines()) == len(example.splitlines())
    return source, rows


@pytest.mark.slow
def test_try_repo_check_hook_fails_naming_the_finding(tmp_path, hook_repo, env):
    """``pre-commit try-repo <checkout> fakegrad-lint`` (builds its own
    throw-away hook environment)."""
    source, rows = hazard_source()
    repo = make_repo(tmp_path / "project", {"train.py": source})
    proc = pre_commit(repo, env, "try-repo", str(hook_repo), "fakegrad-lint", "--all-files")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "fakegrad-lint" in out and "Failed" in out, out
    assert f"train.py:{rows[0]}:" in out and FIXABLE.code in out, out
    assert (repo / "train.py").read_text(encoding="utf-8") == source  # the check hook never writes


@pytest.mark.slow
def test_check_hook_fails_then_fix_hook_rewrites(tmp_path, config, env):
    source, rows = hazard_source()
    repo = make_repo(
        tmp_path / "project",
        {"train.py": source, "notes.txt": "nothing to see\n", ".pre-commit-config.yaml": config},
    )
    check = run_hooks(repo, env, "fakegrad-lint")
    out = check.stdout + check.stderr
    assert check.returncode == 1, out
    assert f"train.py:{rows[0]}:" in out and FIXABLE.code in out, out
    assert (repo / "train.py").read_text(encoding="utf-8") == source

    fix = run_hooks(repo, env, "fakegrad-lint-fix")
    out = fix.stdout + fix.stderr
    assert fix.returncode == 1, out  # pre-commit fails a hook that modified files
    assert "files were modified by this hook" in out, out
    assert (repo / "train.py").read_text(encoding="utf-8") == FIXABLE.fixed_example

    again = run_hooks(repo, env)  # both hooks, on the fixed file
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.count("Passed") == 2, again.stdout


@pytest.mark.slow
def test_no_python_files_and_clean_files_pass(tmp_path, config, env):
    empty = make_repo(tmp_path / "docs-only", {"README.txt": "no python here\n", ".pre-commit-config.yaml": config})
    proc = run_hooks(empty, env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert out.count("(no files to check)Skipped") == 2, out

    clean = make_repo(
        tmp_path / "clean",
        {"ok.py": FIXABLE.valid[0], "stubs.pyi": "def f() -> int: ...\n", ".pre-commit-config.yaml": config},
    )
    proc = run_hooks(clean, env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert out.count("Passed") == 2, out
    assert (clean / "ok.py").read_text(encoding="utf-8") == FIXABLE.valid[0]
