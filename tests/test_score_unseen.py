"""tests/score_unseen.py: hits need the marker's line and code; any finding in a safe unit counts."""

from __future__ import annotations

import json
import sys
import textwrap

import score_unseen

FAKE_LINTER = textwrap.dedent(
    """
    import json, os, sys
    # Report the canned findings that lie under the paths given (relative to the cwd).
    canned = json.load(open(os.environ["CANNED"]))
    roots = [os.path.realpath(p) for p in sys.argv[1:]]
    out = [f for f in canned if any(os.path.realpath(f["filename"]) == r or
           os.path.realpath(f["filename"]).startswith(r + os.sep) for r in roots)]
    print(json.dumps(out))
    sys.exit(1 if out else 0)
    """
)


def finding(path, row, code="FGL001"):
    return {"code": code, "message": "m", "filename": str(path), "location": {"row": row, "column": 1}}


def make_corpus(tmp_path):
    unseen = tmp_path / "unseen"
    unseen.mkdir()
    (unseen / "hazard_a.py").write_text("x = 1\ny = x  # FGL001\n")
    (unseen / "hazard_b.py").write_text("x = 1\ny = x  # FGL002\n")
    (unseen / "safe_c.py").write_text("x = 1\n")
    (unseen / "safe_d.py").write_text("x = 1\n")
    projects = tmp_path / "projects"
    for name, marker in (("hazard_p", "  # FGL001"), ("safe_q", "")):
        (projects / name / "pkg").mkdir(parents=True)
        (projects / name / "project.json").write_text(json.dumps({"entry": "main.py", "runtime": "clean"}))
        (projects / name / "pkg" / "__init__.py").write_text("V = 1\n")
        (projects / name / "main.py").write_text(f"import pkg\nprint(pkg.V){marker}\n")
    return unseen, projects


def run(tmp_path, monkeypatch, capsys, canned):
    unseen, projects = make_corpus(tmp_path)
    linter = tmp_path / "fake_linter.py"
    linter.write_text(FAKE_LINTER)
    canned_path = tmp_path / "canned.json"
    canned_path.write_text(json.dumps(canned(unseen, projects)))
    monkeypatch.setenv("CANNED", str(canned_path))
    code = score_unseen.main(
        [
            "--cmd",
            f"{sys.executable} {linter}",
            "--unseen-dir",
            str(unseen),
            "--projects-dir",
            str(projects),
            "--format",
            "json",
        ]
    )
    return code, json.loads(capsys.readouterr().out)


def test_scores_hits_misses_and_false_positives(tmp_path, monkeypatch, capsys):
    def canned(unseen, projects):
        return [
            finding(unseen / "hazard_a.py", 2),  # hit
            finding(unseen / "hazard_b.py", 2, "FGL001"),  # right line, wrong code: a miss
            finding(unseen / "safe_c.py", 1, "FGL004"),  # opt-in rule: not a false positive
            finding(unseen / "safe_d.py", 1, "FGL003"),  # false positive
            finding(projects / "hazard_p" / "main.py", 2),  # hit, found by running in the folder
            finding(projects / "safe_q" / "pkg" / "__init__.py", 1, "FGL002"),  # false positive
        ]

    code, summary = run(tmp_path, monkeypatch, capsys, canned)
    assert code == 1
    assert summary["groups"] == {
        "file": {"hazards": 2, "hazards_flagged": 1, "safe": 2, "safe_flagged": 1},
        "project": {"hazards": 1, "hazards_flagged": 1, "safe": 1, "safe_flagged": 1},
    }
    assert [(m["unit"], len(m["reported"])) for m in summary["misses"]] == [("hazard_b.py", 1)]
    assert [fp["unit"] for fp in summary["false_positives"]] == ["safe_d.py", "safe_q"]


def test_perfect_score_exits_zero(tmp_path, monkeypatch, capsys):
    def canned(unseen, projects):
        return [
            finding(unseen / "hazard_a.py", 2),
            finding(unseen / "hazard_b.py", 2, "FGL002"),
            finding(projects / "hazard_p" / "main.py", 2),
        ]

    code, summary = run(tmp_path, monkeypatch, capsys, canned)
    assert code == 0 and not summary["misses"] and not summary["false_positives"]


def test_command_without_json_is_an_error(tmp_path, capsys):
    unseen, projects = make_corpus(tmp_path)
    code = score_unseen.main(
        ["--cmd", f"{sys.executable} -c \"print('hello')\"", "--unseen-dir", str(unseen), "--projects-dir", str(projects)]
    )
    assert code == 2
    assert "no JSON on stdout" in capsys.readouterr().err
    code = score_unseen.main(
        ["--cmd", f"{sys.executable} -c pass", "--unseen-dir", str(unseen), "--projects-dir", str(projects)]
    )
    assert code == 2
    assert "no JSON on stdout" in capsys.readouterr().err


def _expected_groups(files_dir, projects_dir):
    files = [p.name for p in files_dir.glob("*.py") if p.name.startswith(("hazard_", "safe_"))]
    projects = [d.name for d in projects_dir.iterdir() if (d / "project.json").is_file()] if projects_dir.is_dir() else []
    return {
        "file": {
            "hazards": sum(n.startswith("hazard_") for n in files),
            "hazards_flagged": 0,
            "safe": sum(n.startswith("safe_") for n in files),
            "safe_flagged": 0,
        },
        "project": {
            "hazards": sum(n.startswith("hazard_") for n in projects),
            "hazards_flagged": 0,
            "safe": sum(n.startswith("safe_") for n in projects),
            "safe_flagged": 0,
        },
    }


def test_corpus_option_selects_the_heldout_folders(capsys, fixtures_dir):
    silent = f"{sys.executable} -c \"print('[]')\""
    code = score_unseen.main(["--cmd", silent, "--corpus", "heldout", "--format", "json"])
    summary = json.loads(capsys.readouterr().out)
    want = _expected_groups(fixtures_dir / "heldout", fixtures_dir / "heldout_projects")
    assert want["file"]["hazards"] >= 20 and want["project"]["hazards"] >= 6
    assert summary["groups"] == want
    assert code == 1  # nothing reported: every hazard is a miss
    expected = [e for m in summary["misses"] for e in m["expected"]]
    assert expected and all(e.startswith(("fixtures/heldout/", "fixtures/heldout_projects/")) for e in expected)


def test_default_corpus_is_still_unseen(capsys, fixtures_dir):
    silent = f"{sys.executable} -c \"print('[]')\""
    score_unseen.main(["--cmd", silent, "--format", "json"])
    summary = json.loads(capsys.readouterr().out)
    assert summary["groups"] == _expected_groups(fixtures_dir / "unseen", fixtures_dir / "projects")
    expected = [e for m in summary["misses"] for e in m["expected"]]
    assert expected and all(e.startswith(("fixtures/unseen/", "fixtures/projects/")) for e in expected)
