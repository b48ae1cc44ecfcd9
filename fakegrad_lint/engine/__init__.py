"""The engine: one path per file (read, prefilter, parse, analyse, rules, noqa, fix), scheduling and the cache."""
