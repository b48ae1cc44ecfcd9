"""The one ``# FGLnnn`` marker parser (``tests/markers.py``) and its rules."""

from __future__ import annotations

import textwrap

from markers import marked_rows, markers_in_source, strip_markers

SOURCE = textwrap.dedent(
    '''\
    a = "# FGL001"  # FGL002
    b = 1  # FGL001, FGL004
    c = 2  # FGL001 because
    d = """
    # FGL003
    """
    e = 3  #FGL003
    f = 4  # FGL001 FGL004,
    g = 5  # noqa: FGL001
    h = 6  # fgl001
    # FGL002 is prose
    '''
)


def test_marker_rules():
    assert markers_in_source(SOURCE) == {
        (1, "FGL002"),  # the one in the string is not a marker
        (2, "FGL001"), (2, "FGL004"),  # comma separated
        (7, "FGL003"),  # no blank after `#`
        (8, "FGL001"), (8, "FGL004"),  # blank separated, trailing comma
    }
    assert marked_rows(SOURCE) == [1, 2, 7, 8]
    assert marked_rows(SOURCE, "FGL004") == [2, 8]


def test_strip_markers_keeps_everything_else():
    stripped = strip_markers(SOURCE)
    assert markers_in_source(stripped) == set()
    assert len(stripped.splitlines()) == len(SOURCE.splitlines())
    assert stripped.splitlines()[:3] == ['a = "# FGL001"', "b = 1", "c = 2  # FGL001 because"]
    assert stripped.splitlines()[6:] == ["e = 3", "f = 4", *SOURCE.splitlines()[8:]]
    assert strip_markers("x = 1  # FGL001\r\ny = 2\r\n") == "x = 1\r\ny = 2\r\n"
    assert strip_markers("x = 1\n") == "x = 1\n"


def test_a_marker_after_a_noqa_directive():
    # an unused-noqa finding sits on the directive's row, which has one comment
    source = "x = 1  # noqa: FGL001  # FGL100\ny = 2  # noqa  #FGL100, FGL001\nz = 3  # see # FGL001\n"
    assert markers_in_source(source) == {(1, "FGL100"), (2, "FGL100"), (2, "FGL001")}
    assert strip_markers(source) == "x = 1  # noqa: FGL001\ny = 2  # noqa\nz = 3  # see # FGL001\n"
