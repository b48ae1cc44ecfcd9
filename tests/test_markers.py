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
