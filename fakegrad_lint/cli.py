"""``fakegrad-lint``: arguments -> settings -> discovery -> pipeline -> reporter.

Startup stays light: nothing heavy (libcst, torch, process pools) is imported
here at module level; the pipeline imports what it needs when it needs it.
"""

from __future__ import annotations

import os
import sys

from fakegrad_lint import __version__

PROG = "fakegrad-lint"
FORMATS = ("text", "concise", "json", "json-lines", "sarif", "github")
SUBCOMMANDS = {
    "rule": ("fakegrad_lint.rule_docs", "show the documentation of a rule (`rule FGL001`, `rule --all`)"),
    "confirm": ("fakegrad_lint.confirm_cli", "run a script under the runtime watcher to confirm findings"),
}
EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _err(message: str) -> None:
    sys.stderr.write(f"{PROG}: error: {message}\n")


def _delegate(name: str, argv: list[str]) -> int:
    module_name, _ = SUBCOMMANDS[name]
    import importlib

    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            _err(f"the `{name}` command is not available in this build")
            return EXIT_ERROR
        raise
    rc = module.main(argv)
    return int(rc or 0)


def _positive_int(value: str) -> int:
    import argparse

    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}")
    return n


def _seconds(value: str) -> float:
    import argparse

    try:
        n = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {value!r}") from None
    if n < 0 or n != n:
        raise argparse.ArgumentTypeError(f"expected a number of seconds >= 0, got {value!r}")
    return n


def build_parser():
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message):  # one line, exit 2
            self.exit(EXIT_ERROR, f"{PROG}: error: {message}\n")

    subs = "\n".join(f"  {k:<9}{v[1]}" for k, v in SUBCOMMANDS.items())
    parser = Parser(
        prog=PROG,
        usage=f"{PROG} [check] [OPTIONS] [PATHS ...]\n       {PROG} rule [CODE | --all]\n       {PROG} confirm ...",
        description=(
            "Find real requires-grad tensors that leak into FakeTensorMode before a backward.\n\n"
            f"commands:\n  check    check files (the default)\n{subs}"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.add_argument("paths", nargs="*", metavar="PATHS", help="files or folders to check (default: .)")
    sel = parser.add_argument_group("rule selection")
    sel.add_argument("--select", action="append", metavar="CODES",
                     help="comma-separated codes or prefixes to enable (replaces the configured selection); ALL for every rule")
    sel.add_argument("--extend-select", action="append", metavar="CODES",
                     help="codes or prefixes to enable in addition")
    sel.add_argument("--ignore", action="append", metavar="CODES", help="codes or prefixes to disable")
    sel.add_argument("--report-unused-noqa", action="store_true",
                     help="report `# noqa: FGL...` codes that silence nothing (same as --extend-select FGL100)")
    fix = parser.add_argument_group("fixes")
    fix.add_argument("--fix", action="store_true", help="apply safe fixes")
    fix.add_argument("--unsafe-fixes", action="store_true", default=None,
                     help="also apply (and mark as fixable) unsafe fixes")
    fix.add_argument("--no-unsafe-fixes", dest="unsafe_fixes", action="store_false",
                     help="do not apply unsafe fixes even if the configuration enables them")
    fix.add_argument("--diff", action="store_true",
                     help="print the fixes as a unified diff instead of writing them (exit 1 when there are any)")
    fix.add_argument("--fix-only", action="store_true", help="apply fixes and report nothing else (exit 0)")
    fix.add_argument("--show-fixes", action="store_true", help="list the fixes applied, per file")
    fix.add_argument("--add-noqa", action="store_true",
                     help="append `# noqa: CODE` to every line with a finding (merging into existing comments)")
    out = parser.add_argument_group("output")
    out.add_argument("--output-format", choices=FORMATS, default=None, help="output format (default: text)")
    out.add_argument("--statistics", action="store_true", help="print the number of findings per code")
    out.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                     help="colour and source snippets in text output (auto: when stdout is a terminal and NO_COLOR is unset)")
    out.add_argument("-q", "--quiet", action="store_true", help="print findings only, no summary")
    out.add_argument("--show-trace", action="store_true",
                     help="text output: print each finding's chain (source, region, op, backward) under it")
    out.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings (2 still means errors)")
    cfg = parser.add_argument_group("configuration and files")
    cfg.add_argument("--config", metavar="PATH", help="the pyproject.toml to use (instead of searching for one)")
    cfg.add_argument("--isolated", action="store_true", help="ignore every configuration file")
    cfg.add_argument("--extend-exclude", action="append", metavar="GLOBS",
                     help="comma-separated globs to exclude in addition")
    cfg.add_argument("--force-exclude", action="store_true",
                     help="apply excludes to explicitly named files too")
    cfg.add_argument("--no-respect-gitignore", dest="respect_gitignore", action="store_false",
                     help="do not skip files ignored by .gitignore")
    run = parser.add_argument_group("running")
    run.add_argument("-j", "--jobs", type=_positive_int, default=None, metavar="N",
                     help="worker processes (default: the number of CPUs)")
    run.add_argument("--timeout-per-file", type=_seconds, default=20.0, metavar="SECONDS",
                     help="give up on a file after this long and report it as an error (default: 20; 0: no limit)")
    run.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    run.add_argument("--cache-dir", metavar="PATH", default=None,
                     help="where to keep the cache (default: $FAKEGRAD_LINT_CACHE_DIR, else .fakegrad_cache/ "
                          "next to the configuring pyproject.toml, else the platform cache folder)")
    return parser


def _codes(values: list[str] | None) -> list[str] | None:
    if values is None:
        return None
    from fakegrad_lint.settings import split_codes

    out: list[str] = []
    for v in values:
        out.extend(split_codes(v))
    return out


def _mode(args) -> str:
    if args.add_noqa:
        return "add-noqa"
    if args.diff:
        return "diff"
    if args.fix_only:
        return "fix-only"
    if args.fix:
        return "fix"
    return "check"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:
        return _delegate(argv[0], argv[1:])
    if argv and argv[0] == "check":
        argv = argv[1:]
    if argv == ["--version"]:
        sys.stdout.write(f"{PROG} {__version__}\n")
        return EXIT_CLEAN
    args = build_parser().parse_args(argv)
    try:
        return _check(args)
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG}: interrupted\n")
        return 130
    except BrokenPipeError:
        # stdout closed early (`| head`): exit quietly
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        except OSError:
            pass
        return EXIT_ERROR


def _check(args) -> int:
    from fakegrad_lint import settings as settings_mod

    paths = args.paths or ["."]
    try:
        config: dict = {}
        config_path = None
        if args.config and not args.isolated:
            config_path = args.config
            if not os.path.isfile(config_path):
                raise settings_mod.ConfigError(f"{config_path}: no such configuration file")
            config = settings_mod.load_config(config_path)
        elif not args.isolated:
            config_path = settings_mod.find_config(paths[0])
            if config_path:
                config = settings_mod.load_config(config_path)
        extend_select = _codes(args.extend_select) or []
        if args.report_unused_noqa:
            extend_select.append("FGL100")
        extend_exclude = None
        if args.extend_exclude:
            extend_exclude = [g.strip() for v in args.extend_exclude for g in v.split(",") if g.strip()]
        st = settings_mod.resolve(
            config,
            config_path=config_path,
            select=_codes(args.select),
            ignore=_codes(args.ignore),
            extend_select=extend_select,
            unsafe_fixes=args.unsafe_fixes,
            output_format=args.output_format,
            extend_exclude=extend_exclude,
        )
        st.force_exclude = args.force_exclude
    except settings_mod.ConfigError as exc:
        _err(str(exc))
        return EXIT_ERROR

    from fakegrad_lint import discover, pipeline, report

    try:
        report.load(st.output_format)  # fail before doing any work
    except report.UnknownFormat as exc:
        _err(str(exc))
        return EXIT_ERROR

    found = discover.discover(paths, st, respect_gitignore=args.respect_gitignore)
    mode = _mode(args)
    options = pipeline.Options(mode=mode, unsafe_fixes=st.unsafe_fixes, timeout=args.timeout_per_file or None)
    cache = None
    if found.files and mode == "check" and not args.no_cache:
        from fakegrad_lint.cache import open_cache

        cache = open_cache(True, config_path, args.cache_dir)
    from fakegrad_lint.analysis.project import set_run_roots

    set_run_roots(args.paths or ["."])
    result = pipeline.run(found.files, st.codes_for, options, jobs=args.jobs, cache=cache)

    errors = list(found.errors) + result.all_errors
    for e in errors:
        sys.stderr.write(f"{e}\n")
    sys.stderr.flush()

    sources = {r.path: r.source for r in result.results if r.source is not None}

    def source_provider(filename: str, cell):
        if cell is not None:
            try:
                from fakegrad_lint import notebook  # type: ignore[attr-defined]

                return notebook.cell_source(filename, cell).splitlines()
            except Exception:
                return []
        text = sources.get(filename)
        if text is None:
            return report._read_lines(filename)
        from fakegrad_lint.fixes import split_lines

        return [line.rstrip("\r\n") for line in split_lines(text)]

    color = report.use_color(args.color, sys.stdout)
    try:
        stdout_tty = sys.stdout.isatty()
    except (AttributeError, ValueError):
        stdout_tty = False
    findings = result.findings
    ctx = report.ReportContext(
        findings=findings,
        errors=errors,
        mode=mode,
        unsafe_fixes=st.unsafe_fixes,
        fixed=sum(r.fixed for r in result.results),
        fixed_by_file={r.path: r.fixed for r in result.results if r.fixed},
        hidden_unsafe_fixes=sum(r.hidden_unsafe for r in result.results),
        diffs=[r.diff for r in result.results if r.diff],
        added_noqa=sum(r.added_noqa for r in result.results),
        show_source=(stdout_tty and args.color != "never") or args.color == "always",
        color=color,
        statistics=args.statistics,
        quiet=args.quiet,
        show_fixes=args.show_fixes,
        show_trace=args.show_trace,
        files_checked=result.files_checked,
        source_provider=source_provider,
    )
    text = report.render(st.output_format, ctx)
    if args.show_fixes and ctx.fixed_by_file and mode in ("fix", "fix-only") and st.output_format in ("text", "concise"):
        text += _show_fixes(ctx)
    _write_out(text)

    if errors:
        return EXIT_ERROR
    if mode == "add-noqa" or mode == "fix-only":
        return EXIT_CLEAN
    if mode == "diff":
        return EXIT_FINDINGS if ctx.diffs else EXIT_CLEAN
    if args.exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if findings else EXIT_CLEAN


def _write_out(text: str) -> None:
    """Write the report; a character stdout's encoding cannot hold (a file
    name's undecodable byte, kept as a surrogate escape) is written as the
    original byte, or escaped, instead of ending the run with a traceback."""
    try:
        sys.stdout.write(text)
    except UnicodeEncodeError:
        encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
        try:
            data = text.encode(encoding, "surrogateescape")
        except UnicodeEncodeError:
            data = text.encode(encoding, "backslashreplace")
        buffer = getattr(sys.stdout, "buffer", None)
        if buffer is None:
            sys.stdout.write(data.decode(encoding, "replace"))
        else:
            sys.stdout.flush()
            buffer.write(data)
    sys.stdout.flush()


def _show_fixes(ctx) -> str:
    from fakegrad_lint.findings import display_path

    n = ctx.fixed
    lines = [f"\nFixed {n} error{'s' if n != 1 else ''}:"]
    for path in sorted(ctx.fixed_by_file):
        lines.append(f"- {display_path(path)}: {ctx.fixed_by_file[path]} fixed")
    return "\n".join(lines) + "\n"
