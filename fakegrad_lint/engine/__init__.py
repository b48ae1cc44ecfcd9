"""The engine: one path per file.

``process.py`` reads a file once, opens it as its source kind, prefilters it
once (``prefilter.py``), looks it up in the cache once (``cache.py``) and runs
the one mode dispatch; ``lint.py``'s ``lint_source`` turns a program text into
the findings to report (parse, analysis, rules, ``noqa.py``) for every front
end; ``subprocs.py`` keeps workers and children in line.
"""
