"""discover: walking folders, excludes, virtualenvs, .gitignore, explicit files."""

from __future__ import annotations

import os

from fakegrad_lint.config.discover import GitIgnore, discover
from fakegrad_lint.config.settings import resolve


def touch(root, *names):
    for name in names:
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x = 1\n")


def found(root, paths=None, settings=None, **kw):
    res = discover([str(p) for p in (paths or [root])], settings, **kw)
    return sorted(os.path.relpath(f, root).replace(os.sep, "/") for f in res.files), res.errors


def test_walk_skips_default_excludes_and_venvs(tmp_path):
    touch(
        tmp_path,
        "a.py", "b.pyi", "c.txt", "pkg/d.py",
        ".git/x.py", "__pycache__/y.py", "build/z.py", "dist/z.py", "node_modules/n.py",
        ".tox/t.py", ".fakegrad_cache/c.py", "env/lib/v.py",
    )
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr\n")
    files, errors = found(tmp_path)
    assert files == ["a.py", "b.pyi", "pkg/d.py"] and errors == []


def test_explicit_files_always_checked(tmp_path):
    touch(tmp_path, "build/z.py", "script")
    files, _ = found(tmp_path, [tmp_path / "build" / "z.py", tmp_path / "script"])
    assert files == ["build/z.py", "script"]
    s = resolve(None, root=str(tmp_path), force_exclude=True)
    files, _ = found(tmp_path, [tmp_path / "build" / "z.py"], s)
    assert files == []


def test_missing_and_special_paths_are_errors(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    res = discover([str(tmp_path / "nope.py"), str(tmp_path / "fifo")])
    assert [(os.path.basename(e.filename), e.reason) for e in res.errors] == [
        ("nope.py", "No such file or directory"),
        ("fifo", "not a regular file or directory"),
    ]


def test_gitignore_in_tree(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("# comment\ngen/\n*_pb2.py\n/top.py\n!keep_pb2.py\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".gitignore").write_text("local.py\n")
    touch(tmp_path, "a.py", "gen/g.py", "x_pb2.py", "keep_pb2.py", "top.py", "sub/top.py", "sub/local.py", "local.py")
    files, _ = found(tmp_path)
    assert files == ["a.py", "keep_pb2.py", "local.py", "sub/top.py"]
    files, _ = found(tmp_path, respect_gitignore=False)
    assert "gen/g.py" in files and "x_pb2.py" in files


def test_parent_gitignore_up_to_repo_root(tmp_path):
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("secret.py\n")
    (tmp_path / ".gitignore").write_text("pkg/skip/\n")
    touch(tmp_path, "pkg/a.py", "pkg/skip/b.py", "pkg/secret.py")
    files, _ = found(tmp_path, [tmp_path / "pkg"])
    assert files == ["pkg/a.py"]


def test_gitignore_patterns():
    g = GitIgnore("/r", ["**/logs/**", "a/**/b.py", "doc/*.py", "[ab]?.py", "\\#x.py", "dironly/"])
    assert g.verdict("/r/x/logs/y/z.py", False)
    assert g.verdict("/r/a/b.py", False) and g.verdict("/r/a/x/y/b.py", False)
    assert g.verdict("/r/doc/x.py", False) and not g.verdict("/r/doc/sub/x.py", False)
    assert g.verdict("/r/aa.py", False) and g.verdict("/r/q/bz.py", False) and not g.verdict("/r/cz.py", False)
    assert g.verdict("/r/#x.py", False)
    assert g.verdict("/r/dironly", True) and not g.verdict("/r/dironly", False)
    assert g.verdict("/elsewhere/aa.py", False) is None


def test_paths_relative_as_given_and_deduplicated(tmp_path, monkeypatch):
    touch(tmp_path, "a.py", "pkg/b.py")
    monkeypatch.chdir(tmp_path)
    res = discover([".", "a.py", "./pkg"])
    assert res.files == ["a.py", os.path.join("pkg", "b.py")]
