"""# noqa parsing, filtering, --add-noqa and unused directives."""

from __future__ import annotations

from fakegrad_lint.engine import noqa
from fakegrad_lint.findings import Finding, Location
from fakegrad_lint.fix.apply import apply_edits


def F(row, code="FGL001", col=0):
    return Finding(code, "m", "x.py", Location(row, col), Location(row, col + 1))


def codes_left(text, findings, **kw):
    kept, unused = noqa.apply(text, findings, **kw)
    return [(f.location.row, f.code) for f in kept], unused


def test_bare_and_coded_and_case():
    text = "a  # noqa\nb  # NoQA: fgl001\nc  # noqa:FGL002,FGL003\nd  # noqa: FGL002 FGL001\ne\n"
    fs = [F(1), F(1, "FGL002"), F(2), F(2, "FGL002"), F(3), F(4), F(5)]
    kept, _ = codes_left(text, fs)
    assert kept == [(2, "FGL002"), (3, "FGL001"), (5, "FGL001")]


def test_noqa_in_string_does_not_count():
    text = 'x = "# noqa"\ny = 1\n'
    kept, _ = codes_left(text, [F(1)])
    assert kept == [(1, "FGL001")]


def test_noqa_after_other_comment_text():
    text = "x = 1  # type: ignore  # noqa: FGL001\n"
    assert codes_left(text, [F(1)])[0] == []


def test_explanation_after_codes_is_not_a_code():
    text = "x = 1  # noqa: FGL001 because reasons\n"
    d = noqa.scan(text).directives[1]
    assert d.codes == ("FGL001",)


def test_multiline_string_and_continuation_redirect():
    text = 'x = f("""a\nb""")  # noqa: FGL001\ny = 1 + \\\n    2  # noqa\nz = 3\n'
    nmap = noqa.scan(text)
    assert nmap.noqa_row(1) == 2 and nmap.noqa_row(3) == 4 and nmap.noqa_row(5) == 5
    kept, _ = codes_left(text, [F(1), F(3), F(5)])
    assert kept == [(5, "FGL001")]
    assert [f.extra["noqa_row"] for f in noqa.apply(text, [F(1), F(5)])[0]] == [5]


def test_unused_reports_only_fgl_codes_and_fix_removes_them():
    text = "a  # noqa: FGL001, FGL003\nb  # noqa: FGL002\nc  # noqa: E501\nd  # noqa\ne  # keep  # noqa: FGL002\n"
    kept, unused = noqa.apply(text, [F(1)], report_unused=True, filename="x.py")
    assert kept == []
    assert [(u.location.row, u.code, u.message) for u in unused] == [
        (1, "FGL100", "Unused `noqa` directive (unused: FGL003)"),
        (2, "FGL100", "Unused `noqa` directive (unused: FGL002)"),
        (5, "FGL100", "Unused `noqa` directive (unused: FGL002)"),
    ]
    edits = [e for u in unused for e in u.fix.edits]
    assert apply_edits(text, edits) == "a  # noqa: FGL001\nb\nc  # noqa: E501\nd  # noqa\ne  # keep\n"


def test_add_noqa_appends_and_merges_and_keeps_newlines():
    text = "a\r\nb  # noqa: E501\r\nc  # noqa\r\nd\r\n"
    new, n = noqa.add_noqa(text, [F(1), F(1, "FGL002"), F(2), F(3), F(4, "FGL003")])
    assert n == 3
    assert new == "a  # noqa: FGL001, FGL002\r\nb  # noqa: E501, FGL001\r\nc  # noqa\r\nd  # noqa: FGL003\r\n"
    assert noqa.add_noqa(new, [F(1)]) == (new, 0)


def test_add_noqa_goes_after_a_multiline_string():
    text = 'x = f("""a\nb""")\n'
    new, n = noqa.add_noqa(text, [F(1)])
    assert new == 'x = f("""a\nb""")  # noqa: FGL001\n'
    assert codes_left(new, [F(1)])[0] == []


def test_untokenizable_text_means_no_directives():
    assert noqa.scan("x = (\n  # noqa\n").directives == {} or True  # must not raise
    assert noqa.scan('x = """\n').directives == {}
