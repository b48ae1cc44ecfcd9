"""The fix engine: apply_edits, fix_text's loop and guarantees, unified_diff.

Every lint here is synthetic (it finds the identifier ``BAD`` with Python's own
parser and offers a fix), so these tests do not depend on the analyzer. The
positions they produce are computed independently of fakegrad_lint.fix.apply: from
``ast`` line numbers and UTF-8 byte columns, converted to character columns.
"""

from __future__ import annotations

import ast
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakegrad_lint.findings import Applicability, Edit, Finding, Fix, Location
from fakegrad_lint.fix.apply import (
    EditError,
    apply_edits,
    dominant_newline,
    fix_text,
    split_lines,
    to_offset,
    unified_diff,
)

SAFE, UNSAFE, DISPLAY = Applicability.SAFE, Applicability.UNSAFE, Applicability.DISPLAY_ONLY


# ---------------------------------------------------------------------------
# synthetic lints


def _python_lines(text: str) -> list[str]:
    """Lines as Python's parser numbers them (reference, independent of fixes.py)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _char_col(lines: list[str], lineno: int, byte_col: int) -> int:
    return len(lines[lineno - 1].encode("utf-8")[:byte_col].decode("utf-8"))


def names(text: str, ident: str):
    """(start, end) Locations of every Name ``ident`` in ``text``, via ast."""
    lines = _python_lines(text)
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Name) and node.id == ident:
            out.append(
                (
                    Location(node.lineno, _char_col(lines, node.lineno, node.col_offset)),
                    Location(node.end_lineno, _char_col(lines, node.end_lineno, node.end_col_offset)),
                )
            )
    return sorted(out)


def finding(start, end, fix=None, code="T001"):
    return Finding(code=code, message="m", filename="t.py", location=start, end_location=end, fix=fix)


def replace_lint(ident="BAD", new="GOOD", applicability=SAFE, code="T001", calls=None):
    """Finds Name ``ident``; the fix replaces it with ``new``."""

    def lint(text):
        if calls is not None:
            calls.append(text)
        return [
            finding(s, e, Fix("replace", applicability, (Edit(s, e, new),)), code=code)
            for s, e in names(text, ident)
        ]

    return lint


def combine(*lints):
    def lint(text):
        out = []
        for one in lints:
            out.extend(one(text))
        return sorted(out, key=lambda f: f.sort_key)

    return lint


# ---------------------------------------------------------------------------
# fix_text


def test_safe_fix_applied_and_reparses():
    text = "x = BAD + 1\ny = [BAD, BAD]\n"
    out = fix_text(text, replace_lint(), unsafe=False)
    assert out.text == "x = GOOD + 1\ny = [GOOD, GOOD]\n"
    assert out.changed and out.iterations == 1 and len(out.applied) == 3
    assert out.remaining == [] and out.stop_reason == "converged"
    ast.parse(out.text)


def test_idempotent_second_run_changes_nothing():
    lint = replace_lint()
    first = fix_text("def f(BAD):\n    return BAD * 2\n", lint, unsafe=False)
    assert first.changed
    second = fix_text(first.text, lint, unsafe=False)
    assert not second.changed and second.text == first.text
    assert second.applied == [] and second.iterations == 0


def test_nothing_to_fix_keeps_text_identical():
    text = "a = 1\r\nb = 2"  # no trailing newline, CRLF
    out = fix_text(text, replace_lint(), unsafe=True)
    assert out.text is text or out.text == text
    assert not out.changed and out.iterations == 0


def test_unsafe_only_when_asked():
    lint = replace_lint(applicability=UNSAFE)
    text = "z = BAD\n"
    off = fix_text(text, lint, unsafe=False)
    assert not off.changed and off.text == text
    assert len(off.remaining) == 1 and off.applied == []
    on = fix_text(text, lint, unsafe=True)
    assert on.text == "z = GOOD\n" and len(on.applied) == 1


def test_safe_applied_unsafe_left_without_flag():
    lint = combine(replace_lint("BAD", "GOOD", SAFE, "T001"), replace_lint("RISKY", "CAREFUL", UNSAFE, "T002"))
    out = fix_text("a = BAD\nb = RISKY\n", lint, unsafe=False)
    assert out.text == "a = GOOD\nb = RISKY\n"
    assert [f.code for f in out.remaining] == ["T002"]


def test_display_only_never_applied():
    lint = replace_lint(applicability=DISPLAY)
    text = "z = BAD\n"
    for unsafe in (False, True):
        out = fix_text(text, lint, unsafe=unsafe)
        assert out.text == text and not out.changed and out.applied == []
        assert len(out.remaining) == 1


def test_fix_without_edits_or_none_is_ignored():
    def lint(text):
        (s, e), = names(text, "BAD")
        return [finding(s, e, None), finding(s, e, Fix("empty", SAFE, ()), code="T002")]

    out = fix_text("BAD\n", lint, unsafe=True)
    assert not out.changed and len(out.remaining) == 2


def test_overlapping_fixes_converge_over_iterations():
    # Each name ``AA..A`` (2 or more letters) is offered two fixes that both
    # rewrite the whole name one letter shorter; they overlap, so only one applies
    # per pass, and the loop needs one pass per letter.
    def lint(text):
        out = []
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Name) and set(node.id) == {"A"} and len(node.id) >= 2:
                row, col = node.lineno, node.col_offset
                end = Location(row, col + len(node.id))
                start = Location(row, col)
                out.append(finding(start, end, Fix("head", SAFE, (Edit(start, end, node.id[1:]),)), "H"))
                out.append(finding(start, end, Fix("tail", SAFE, (Edit(start, end, node.id[:-1]),)), "T"))
        return sorted(out, key=lambda f: f.sort_key)

    out = fix_text("AAAAA = 1\n", lint, unsafe=False)
    assert out.text == "A = 1\n"
    assert out.iterations == 4 and out.stop_reason == "converged"
    assert len(out.applied) == 4


def test_overlapping_findings_first_by_position_wins_then_relinted():
    # An outer fix replaces ``wrap(BAD)`` with ``BAD``; an inner one replaces ``BAD``
    # with ``GOOD``. The inner edit lies inside the outer: only the outer applies in
    # pass 1; the re-lint finds ``BAD`` again and pass 2 fixes it.
    calls = []

    def outer(text):
        out = []
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "wrap":
                s = Location(node.lineno, node.col_offset)
                e = Location(node.end_lineno, node.end_col_offset)
                out.append(finding(s, e, Fix("unwrap", SAFE, (Edit(s, e, "BAD"),)), "W"))
        return out

    out = fix_text("v = wrap(BAD)\n", combine(outer, replace_lint(calls=calls)), unsafe=False)
    assert out.text == "v = GOOD\n"
    assert out.iterations == 2
    assert [f.code for f in out.applied] == ["W", "T001"]
    assert calls == ["v = wrap(BAD)\n", "v = BAD\n", "v = GOOD\n"]


def test_multi_edit_fix_all_or_nothing():
    # Q (sorts first, starts at 2:0) rewrites line 2. P has two edits: one on
    # line 3 (free) and one inside line 2 (overlaps Q). In pass 1 Q applies and
    # none of P's edits do; the re-lint offers P again and pass 2 applies both.
    text = "a = 1\nb = 0\nc = 1\n"

    def lint(text):
        out = []
        lines = split_lines(text)
        if lines[1] == "b = 0\n":
            q = Fix("q", SAFE, (Edit(Location(2, 0), Location(2, 5), "b = 5"),))
            out.append(finding(Location(2, 0), Location(2, 5), q, "Q"))
        if lines[2] == "c = 1\n":
            p = Fix("p", SAFE, (Edit(Location(3, 4), Location(3, 5), "11"), Edit(Location(2, 4), Location(2, 5), "7")))
            out.append(finding(Location(3, 0), Location(3, 5), p, "P"))
        return out

    calls = []

    def recording(text):
        calls.append(text)
        return lint(text)

    out = fix_text(text, recording, unsafe=False)
    assert calls[1] == "a = 1\nb = 5\nc = 1\n"  # Q alone; P not half-applied
    assert out.text == "a = 1\nb = 7\nc = 11\n"
    assert [f.code for f in out.applied] == ["Q", "P"] and out.iterations == 2


def test_touching_edits_apply_in_one_pass():
    # ``BAD`` twice with nothing between: the two replacements touch but do not overlap.
    def lint(text):
        out = []
        for i in range(len(text)):
            if text.startswith("BAD", i):
                s, e = Location(1, i), Location(1, i + 3)
                out.append(finding(s, e, Fix("r", SAFE, (Edit(s, e, "OK"),))))
        return out

    out = fix_text("'BADBAD'", lint, unsafe=False)
    assert out.text == "'OKOK'" and out.iterations == 1 and len(out.applied) == 2


def test_two_insertions_at_same_point_take_two_passes():
    def lint(text):
        out = []
        for word in ("import os\n", "import sys\n"):
            if word not in text:
                at = Location(1, 0)
                out.append(finding(at, at, Fix("ins", SAFE, (Edit(at, at, word),)), word.split()[1]))
        return out

    out = fix_text("x = 1\n", lint, unsafe=False)
    assert out.iterations == 2
    assert sorted(out.text.splitlines()) == ["import os", "import sys", "x = 1"]


def test_iteration_bound_respected():
    # A fix that always finds something more to do: n = k -> n = k + 1.
    calls = []

    def lint(text):
        calls.append(text)
        tree = ast.parse(text)
        const = tree.body[0].value
        s = Location(const.lineno, const.col_offset)
        e = Location(const.end_lineno, const.end_col_offset)
        return [finding(s, e, Fix("inc", SAFE, (Edit(s, e, str(const.value + 1)),)))]

    out = fix_text("n = 0\n", lint, unsafe=False, max_iterations=3)
    assert out.text == "n = 3\n"
    assert out.iterations == 3 and out.stop_reason == "max-iterations"
    assert len(calls) == 4  # the initial lint plus one re-lint per pass
    assert len(out.remaining) == 1  # still fixable, reported as remaining
    assert fix_text("n = 0\n", lint, unsafe=False).iterations == 10  # default bound
    zero = fix_text("n = 0\n", lint, unsafe=False, max_iterations=0)
    assert not zero.changed and len(zero.remaining) == 1


def test_no_progress_stops():
    calls = []
    out = fix_text("x = BAD\n", replace_lint(new="BAD", calls=calls), unsafe=False)
    assert not out.changed and out.stop_reason == "no-progress"
    assert out.iterations == 0 and len(calls) == 1


def test_unparsable_fix_rejected_original_kept():
    text = "x = BAD\ny = 2\n"
    out = fix_text(text, replace_lint(new="BAD("), unsafe=False)
    assert out.text == text and not out.changed
    assert out.stop_reason == "unparsable" and out.error
    assert len(out.rejected) == 1 and out.applied == []
    assert len(out.remaining) == 1  # the findings of the kept text


def test_unparsable_pass_discarded_whole_keeps_earlier_passes():
    # Pass 1 is fine (unwrap); pass 2 contains one good and one breaking fix.
    def lint(text):
        out = []
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "wrap":
                s = Location(node.lineno, node.col_offset)
                e = Location(node.end_lineno, node.end_col_offset)
                inner = ast.get_source_segment(text, node.args[0])
                out.append(finding(s, e, Fix("unwrap", SAFE, (Edit(s, e, inner),)), "W"))
            if isinstance(node, ast.Name) and node.id in ("BAD", "WORSE"):
                s = Location(node.lineno, node.col_offset)
                e = Location(node.end_lineno, node.end_col_offset)
                new = "GOOD" if node.id == "BAD" else "lambda:"  # "lambda:" alone does not parse
                out.append(finding(s, e, Fix("r", SAFE, (Edit(s, e, new),)), node.id))
        return out

    out = fix_text("a = wrap(BAD)\nb = wrap(WORSE)\n", lint, unsafe=False)
    assert out.text == "a = BAD\nb = WORSE\n"  # pass 1 kept, pass 2 discarded
    assert out.iterations == 1 and out.stop_reason == "unparsable"
    assert sorted(f.code for f in out.rejected) == ["BAD", "WORSE"]
    assert sorted(f.code for f in out.remaining) == ["BAD", "WORSE"]
    ast.parse(out.text)


def test_lint_errors_propagate():
    def lint(text):
        ast.parse(text)
        return []

    with pytest.raises(SyntaxError):
        fix_text("def (:\n", lint, unsafe=False)


def test_malformed_fix_rejected_others_applied():
    def lint(text):
        out = list(replace_lint()(text))
        far = Location(99, 0)
        out.append(finding(Location(1, 0), Location(1, 1), Fix("bad", SAFE, (Edit(far, far, "x"),)), "X"))
        return out

    out = fix_text("q = BAD\n", lint, unsafe=False)
    assert out.text == "q = GOOD\n"
    assert [f.code for f in out.rejected] == ["X"]


# ---------------------------------------------------------------------------
# newlines, characters, rows


@pytest.mark.parametrize("nl", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("trailing", [True, False])
def test_inserted_line_uses_file_newline(nl, trailing):
    body = nl.join(["import torch", "x = BAD", "y = BAD"]) + (nl if trailing else "")

    def lint(text):
        out = replace_lint()(text)
        if "import os" not in text:
            at = Location(2, 0)  # insert a whole line before line 2 (builders write \n)
            out.append(finding(at, at, Fix("ins", SAFE, (Edit(at, at, "import os\nimport re\n"),)), "I"))
        return out

    out = fix_text(body, lint, unsafe=False)
    expected = nl.join(["import torch", "import os", "import re", "x = GOOD", "y = GOOD"]) + (nl if trailing else "")
    assert out.text == expected
    assert dominant_newline(out.text) == nl
    assert out.text.endswith(nl) == trailing
    ast.parse(out.text)


def test_form_feed_and_other_unicode_separators_are_not_line_breaks():
    # str.splitlines() would break at \x0c, \x1c, \x1d, \x1e, \x85, \u2028, \u2029;
    # Python's tokenizer does not. BAD is on Python's line 2 and line 3.
    text = "a = '\x0c\x1c\x1d\x1e\x85\u2028\u2029'  # \x0c\u2028 comment\r\nb = BAD\rc = 'é€' + BAD\n"
    assert len(text.splitlines()) > 4  # the trap
    out = fix_text(text, replace_lint(), unsafe=False)
    assert out.text == text.replace("BAD", "GOOD")
    assert split_lines(text) == ["a = '\x0c\x1c\x1d\x1e\x85\u2028\u2029'  # \x0c\u2028 comment\r\n", "b = BAD\r", "c = 'é€' + BAD\n"]


def test_columns_are_characters_not_bytes():
    text = "s = '日本語'; t = BAD\n"
    ((s, e),) = names(text, "BAD")
    assert s == Location(1, 15)  # 15 characters, 21 bytes
    assert apply_edits(text, [Edit(s, e, "GOOD")]) == "s = '日本語'; t = GOOD\n"


def test_bom_character_counts_as_text_only_if_present_in_text():
    # read_source strips the BOM, so positions start after it.
    text = "x = BAD\n"
    assert apply_edits(text, [Edit(Location(1, 4), Location(1, 7), "OK")]) == "x = OK\n"


# ---------------------------------------------------------------------------
# apply_edits


def test_apply_edits_basics():
    text = "ab\r\ncd\ref\ngh"
    assert apply_edits(text, []) == text
    assert apply_edits(text, [Edit(Location(2, 1), Location(3, 1), "X")]) == "ab\r\ncXf\ngh"
    assert apply_edits(text, [Edit(Location(4, 2), Location(4, 2), "!")]) == text + "!"
    # end of a row's terminator == start of the next row
    assert apply_edits(text, [Edit(Location(1, 4), Location(1, 4), "Z")]) == "ab\r\nZcd\ref\ngh"
    # edits given out of order are applied by position
    edits = [Edit(Location(3, 0), Location(3, 1), "E"), Edit(Location(1, 0), Location(1, 1), "A")]
    assert apply_edits(text, edits) == "Ab\r\ncd\rEf\ngh"
    # a row after a final newline exists (column 0 only)
    assert apply_edits("x\n", [Edit(Location(2, 0), Location(2, 0), "y\n")]) == "x\ny\n"


@pytest.mark.parametrize(
    "start,end",
    [
        (Location(0, 0), Location(1, 0)),  # row 0
        (Location(5, 0), Location(5, 0)),  # past the last row
        (Location(1, 9), Location(1, 9)),  # past the end of the row
        (Location(1, -1), Location(1, 0)),
        (Location(1, 3), Location(1, 3)),  # between \r and \n
        (Location(2, 1), Location(1, 0)),  # ends before it starts
        (Location(4, 1), Location(4, 1)),  # row after the final newline has no column 1
    ],
)
def test_apply_edits_rejects_bad_positions(start, end):
    with pytest.raises(EditError):
        apply_edits("ab\r\ncd\nef\n", [Edit(start, end, "x")])


def test_apply_edits_rejects_overlaps():
    text = "abcdef\n"
    with pytest.raises(EditError):
        apply_edits(text, [Edit(Location(1, 0), Location(1, 3), "x"), Edit(Location(1, 2), Location(1, 4), "y")])
    with pytest.raises(EditError):
        apply_edits(text, [Edit(Location(1, 2), Location(1, 2), "x"), Edit(Location(1, 2), Location(1, 2), "y")])
    with pytest.raises(EditError):
        apply_edits(text, [Edit(Location(1, 0), Location(1, 4), "x"), Edit(Location(1, 2), Location(1, 2), "y")])
    # insertion at the boundary of a replacement is fine and ordered
    assert apply_edits(text, [Edit(Location(1, 0), Location(1, 2), "X"), Edit(Location(1, 2), Location(1, 2), "-")]) == "X-cdef\n"
    assert apply_edits(text, [Edit(Location(1, 2), Location(1, 2), "-"), Edit(Location(1, 2), Location(1, 4), "Y")]) == "ab-Yef\n"


def test_apply_edits_inserts_content_verbatim():
    # newline conversion is fix_text's job; apply_edits is exact
    assert apply_edits("a\r\n", [Edit(Location(1, 0), Location(1, 0), "b\n")]) == "b\na\r\n"


_ALPHABET = st.sampled_from(["a", "b", " ", "é", "日", "\n", "\r", "\r\n", "\x0c", "\x1c", "\u2028", "\x85", "\t"])


def _reference_location(text: str, offset: int) -> Location:
    # Rows per Python: count \r\n, \r, \n before offset.
    before = text[:offset].replace("\r\n", "\n").replace("\r", "\n")
    row = before.count("\n") + 1
    line_start = len(before) - (before.rfind("\n") + 1)
    # map back to a character column in the original text: the column equals
    # the number of characters after the last line break before ``offset``
    col = 0
    i = offset
    while i > 0 and text[i - 1] not in "\r\n":
        i -= 1
        col += 1
    assert col == line_start
    return Location(row, col)


@settings(max_examples=300, deadline=None)
@given(st.lists(_ALPHABET, max_size=30).map("".join), st.data())
def test_apply_edits_matches_offsets(text, data):
    # any two offsets that do not split a \r\n pair
    valid = [i for i in range(len(text) + 1) if not (0 < i < len(text) and text[i - 1] == "\r" and text[i] == "\n")]
    a = data.draw(st.sampled_from(valid))
    b = data.draw(st.sampled_from([i for i in valid if i >= a]))
    content = data.draw(st.lists(_ALPHABET, max_size=5).map("".join))
    start, end = _reference_location(text, a), _reference_location(text, b)
    assert to_offset(text, start) == a and to_offset(text, end) == b
    assert apply_edits(text, [Edit(start, end, content)]) == text[:a] + content + text[b:]
    assert "".join(split_lines(text)) == text


# ---------------------------------------------------------------------------
# unified_diff


def test_unified_diff_format():
    old = "a\nb\nc\n"
    new = "a\nB\nc\n"
    assert unified_diff("pkg/m.py", old, new) == "--- pkg/m.py\n+++ pkg/m.py\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
    assert unified_diff("m.py", old, old) == ""


def test_unified_diff_no_newline_at_end():
    d = unified_diff("m.py", "a\nb", "a\nc")
    assert d == "--- m.py\n+++ m.py\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"


@pytest.mark.skipif(shutil.which("patch") is None, reason="needs the patch program")
@pytest.mark.parametrize(
    "old,new",
    [
        ("x = BAD\ny = 1\n", "import os\nx = GOOD\ny = 1\n"),
        ("x = BAD\r\ny = 1\r\n", "x = GOOD\r\ny = 1\r\n"),
        ("x = BAD\ny = 1", "x = GOOD\ny = 1"),
        ("x = BAD\ny = 1", "x = BAD\ny = 1\n"),
    ],
)
def test_unified_diff_applies_with_patch(tmp_path, old, new):
    target = tmp_path / "m.py"
    target.write_bytes(old.encode())
    diff = unified_diff("m.py", old, new)
    subprocess.run(["patch", "-s", "-p0", "--binary"], input=diff.encode(), cwd=tmp_path, check=True)
    assert target.read_bytes() == new.encode()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 4)), max_size=25), st.integers(0, 30), st.integers(0, 4))
def test_conflict_search_matches_brute_force(raw_spans, begin, length):
    # Build a pairwise-disjoint accepted set greedily, then compare the bisect
    # search against checking every accepted span.
    from fakegrad_lint.fix.apply import _conflicts, _overlaps

    accepted = []
    for b, n in raw_spans:
        span = (b, b + n, "")
        if not any(_overlaps(span, t) for t in accepted):
            accepted.append(span)
    accepted.sort()
    span = (begin, begin + length, "")
    assert _conflicts(span, accepted) == any(_overlaps(span, t) for t in accepted)
