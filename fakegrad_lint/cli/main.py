"""``fakegrad-lint``: arguments -> settings -> discovery -> pipeline -> reporter.

The configuration flags become an :class:`~fakegrad_lint.config.settings.Overrides`
(:func:`overrides`, a plain copy); ``Settings.load`` finds, validates and
resolves everything (each file's codes, the output format, ``unsafe-fixes``).
This module never reads or changes configuration itself.

Startup stays light: nothing heavy (libcst, torch, process pools) is imported
here at module level; the pipeline imports what it needs when it needs it.
"""

from __future__ import annotations

import os
import sys

from fakegrad_lint import __version__

PROG = "fakegrad-lint"
SUBCOMMANDS = {
    "rule": ("fakegrad_lint.cli.rule_docs", "show the documentation of a rule (`rule FGL001`, `rule --all`)"),
    "confirm": ("fakegrad_lint.cli.confirm", "run a script under the runtime watcher to confirm findings"),
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
    sel.add_argument("--extend-ignore", action="append", metavar="CODES",
                     help="codes or prefixes to disable in addition to --ignore (as ruff and flake8)")
    sel.add_argument("--per-file-ignores", action="append", metavar="PATTERN:CODES",
                     help="ignore codes in files matching a glob, e.g. 'tests/*:FGL004' (replaces the configured table)")
    sel.add_argument("--extend-per-file-ignores", action="append", metavar="PATTERN:CODES",
                     help="like --per-file-ignores, on top of the configured table")
    from fakegrad_lint.rules import UNUSED_NOQA_CODE

    sel.add_argument("--report-unused-noqa", action="store_true",
                     help=f"report `# noqa: FGL...` codes that silence nothing (same as --extend-select {UNUSED_NOQA_CODE})")
    fix = parser.add_argument_group("fixes")
    fix.add_argument("--fix", action="store_true", help="apply safe fixes")
    fix.add_argument("--unsafe-fixes", action="store_true", default=None,
                     help="also apply (and mark as fixable) unsafe fixes")
    fix.add_argument("--no-unsafe-fixes", dest="unsafe_fixes", action="store_false",
                     help="do not apply unsafe fixes even if the configuration enables them")
    fix.add_argument("--diff", action="store_true",
                     help="print the fixes as a unified diff instead of writing them (exit 1 when there are any)")
    fix.add_argument("--fix-only", action="store_true", help="apply fixes and report nothing else (exit 0)")
    fix.add_argument("--show-fixes", action="store_true",
                     help="with --fix: list the fixes applied, per file; without: list the fixes available")
    fix.add_argument("--exit-non-zero-on-fix", action="store_true",
                     help="exit 1 when --fix changed a file, even if no finding remains")
    fix.add_argument("--add-noqa", action="store_true",
                     help="append `# noqa: CODE` to every line with a finding (merging into existing comments)")
    out = parser.add_argument_group("output")
    from fakegrad_lint.config.pyproject import OUTPUT_FORMATS

    out.add_argument("--output-format", default=None, metavar="FORMAT",
                     help=f"output format: {', '.join(OUTPUT_FORMATS)} (default: text)")
    out.add_argument("--statistics", action="store_true", help="print the number of findings per code")
    out.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                     help="colour and source snippets in text output (auto: when stdout is a terminal and NO_COLOR is unset)")
    out.add_argument("-q", "--quiet", action="store_true", help="print findings only, no summary")
    out.add_argument("-s", "--silent", action="store_true",
                     help="print nothing on stdout (the exit status still says whether there are findings)")
    out.add_argument("-o", "--output-file", metavar="PATH", help="write the report to this file instead of stdout")
    out.add_argument("--show-settings", action="store_true", help="print the settings used for the first path and exit")
    out.add_argument("--show-files", action="store_true", help="print the files that would be checked and exit")
    out.add_argument("--show-trace", action="store_true",
                     help="text output: print each finding's chain (source, region, op, backward) under it")
    out.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings (2 still means errors)")
    cfg = parser.add_argument_group("configuration and files")
    cfg.add_argument("--config", action="append", metavar="PATH | KEY=VALUE",
                     help="the pyproject.toml to use for every file (instead of each file's nearest one), "
                          "or a TOML `KEY = VALUE` override such as 'select = [\"FGL001\"]' (repeatable; overrides win)")
    cfg.add_argument("--stdin-filename", metavar="PATH",
                     help="the name of the file read from standard input (`-`): findings, configuration and "
                          "per-file-ignores use it")
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
    argv_given = argv  # None: the process entry point (it exits after this)
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:
        return _delegate(argv[0], argv[1:])
    if argv == ["--version"]:
        sys.stdout.write(f"{PROG} {__version__}\n")
        return EXIT_CLEAN
    parser = build_parser()
    argv = _drop_check_command(parser, argv)
    # paths and options in any order (`src --fix tests`), as in ruff
    args = parser.parse_intermixed_args(argv)
    try:
        return _check(args, final=argv_given is None)
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


def _drop_check_command(parser, argv: list[str]) -> list[str]:
    """Remove the ``check`` command wherever it stands before the first path
    (``-q check src``), skipping the values of options that take one."""
    takes_value = {
        opt for action in parser._actions for opt in action.option_strings if action.nargs != 0
    }
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            return argv
        if tok.startswith("-") and tok != "-":
            if tok in takes_value:
                i += 1  # `--select FGL001`: skip the value
            i += 1
            continue
        if tok == "check":
            return argv[:i] + argv[i + 1 :]
        return argv
    return argv


def overrides(args):
    """The configuration flags of ``args``, as :meth:`Settings.load` takes them."""
    from fakegrad_lint.config.settings import Overrides

    extend_select = tuple(args.extend_select or ())
    if args.report_unused_noqa:
        from fakegrad_lint.rules import UNUSED_NOQA_CODE

        extend_select += (UNUSED_NOQA_CODE,)
    return Overrides(
        config=tuple(args.config or ()),
        isolated=args.isolated,
        select=tuple(args.select) if args.select is not None else None,
        extend_select=extend_select,
        ignore=tuple(args.ignore or ()) + tuple(args.extend_ignore or ()),
        per_file_ignores=tuple(args.per_file_ignores) if args.per_file_ignores is not None else None,
        extend_per_file_ignores=tuple(args.extend_per_file_ignores or ()),
        extend_exclude=tuple(args.extend_exclude or ()),
        force_exclude=args.force_exclude,
        unsafe_fixes=args.unsafe_fixes,
        output_format=args.output_format,
        stdin_filename=args.stdin_filename,
    )


def _check(args, final: bool = False) -> int:
    from fakegrad_lint.config import settings as settings_mod

    # `--stdin-filename` alone reads stdin, as in ruff
    paths = args.paths or (["-"] if args.stdin_filename else ["."])
    if "-" in paths and len(paths) > 1:
        _err("`-` (standard input) cannot be combined with other paths")
        return EXIT_ERROR
    try:
        st = settings_mod.Settings.load(paths, overrides(args))
    except settings_mod.ConfigError as exc:
        _err(str(exc))
        return EXIT_ERROR

    from fakegrad_lint import report
    from fakegrad_lint.config import discover
    from fakegrad_lint.engine import process as pipeline

    try:
        report.load(st.output_format)  # a format missing from this build: fail before any work
    except report.UnknownFormat as exc:
        _err(str(exc))
        return EXIT_ERROR

    if args.show_settings:
        sys.stdout.write(_show_settings(st, paths))
        return EXIT_CLEAN
    mode = _mode(args)
    options = pipeline.Options(mode=mode, unsafe_fixes=st.unsafe_fixes, timeout=args.timeout_per_file or None)
    from fakegrad_lint.analysis.project import set_run_roots

    # the folders of the run are import roots of the whole-project analysis
    set_run_roots([os.path.dirname(os.path.abspath(args.stdin_filename or "-"))] if paths == ["-"] else paths)
    if paths == ["-"]:
        from fakegrad_lint.cli import stdin as stdin_mod

        name = args.stdin_filename or "-"
        if args.show_files:
            sys.stdout.write(f"{name}\n")
            return EXIT_CLEAN
        try:
            codes = st.codes_for(name)
        except settings_mod.ConfigError as exc:
            _err(str(exc))
            return EXIT_ERROR
        if st.force_exclude and args.stdin_filename and st.excluder().match_with_parents(os.path.abspath(name)):
            if mode in ("fix", "fix-only"):  # excluded: the text passes through unchanged
                sys.stdout.write(sys.stdin.read())
            return EXIT_CLEAN
        result, found_errors, fixed_bytes = stdin_mod.run(name, codes, options)
        if isinstance(result, str):  # a one-line error
            _err(result)
            return EXIT_ERROR
        result = pipeline.RunResult([result], [], 1)
    else:
        try:
            found = discover.discover(paths, st, respect_gitignore=args.respect_gitignore)
        except settings_mod.ConfigError as exc:  # a bad configuration below the first path
            _err(str(exc))
            return EXIT_ERROR
        files = found.files
        if args.show_files:
            sys.stdout.write("".join(f"{f}\n" for f in files))
            for e in found.errors:
                sys.stderr.write(f"{e}\n")
            return EXIT_ERROR if found.errors else EXIT_CLEAN
        cache = None
        if files and mode == "check" and not args.no_cache:
            from fakegrad_lint.engine.cache import open_cache

            cache = open_cache(True, st.config_path, args.cache_dir)
        result = pipeline.run(files, st.codes_for, options, jobs=args.jobs, cache=cache, final=final)
        if mode in ("fix", "fix-only", "diff"):
            from fakegrad_lint.fix.projects import fix_across_modules  # edits in the module of the region

            fix_across_modules(result, st.codes_for, options, files)
        if mode in ("check", "fix"):
            from fakegrad_lint.fix.projects import offer_across_modules  # the findings left carry those fixes

            offer_across_modules(result, st.codes_for, options, files)
        found_errors = found.errors
        fixed_bytes = None

    errors = list(found_errors) + result.all_errors
    for e in errors:
        sys.stderr.write(f"{e}\n")
    sys.stderr.flush()

    color = report.use_color(args.color, sys.stdout)
    try:
        stdout_tty = sys.stdout.isatty()
    except (AttributeError, ValueError):
        stdout_tty = False
    ctx = report.ReportContext.from_run(
        result,
        options,
        errors=errors,
        show_source=(stdout_tty and args.color != "never") or args.color == "always"
        or (args.color == "auto" and bool(os.environ.get("FORCE_COLOR"))),
        color=color,
        statistics=args.statistics,
        quiet=args.quiet,
        show_fixes=args.show_fixes,
        show_trace=args.show_trace,
    )
    text = report.render(st.output_format, ctx)
    if args.show_fixes and st.output_format in ("text", "concise"):
        if ctx.fixed_by_file and mode in ("fix", "fix-only"):
            text += _show_fixes(ctx)
        elif mode == "check":
            text += _available_fixes(ctx)
    _emit(args, text, fixed_bytes, mode)

    if errors:
        return EXIT_ERROR
    if args.exit_non_zero_on_fix and mode in ("fix", "fix-only") and ctx.fixed:
        return EXIT_FINDINGS
    if args.exit_zero:
        return EXIT_CLEAN
    if mode == "add-noqa" or mode == "fix-only":
        return EXIT_CLEAN
    if mode == "diff":
        return EXIT_FINDINGS if ctx.diffs else EXIT_CLEAN
    return EXIT_FINDINGS if ctx.findings else EXIT_CLEAN


def _emit(args, text: str, fixed_bytes: bytes | None, mode: str) -> None:
    """The report to stdout (or ``--output-file``; nothing with ``--silent``).
    Reading from stdin with ``--fix``/``--fix-only``, stdout carries the fixed
    text and the report goes to stderr, as ruff does."""
    stdin_fix = fixed_bytes is not None
    if stdin_fix:
        sys.stdout.flush()
        sys.stdout.buffer.write(fixed_bytes)
        sys.stdout.buffer.flush()
    if args.output_file:
        from fakegrad_lint.sources.sourcefile import SourceError, write_atomic

        try:
            write_atomic(args.output_file, text.encode("utf-8", "surrogateescape"))
        except SourceError as exc:
            _err(f"{args.output_file}: {exc}")
        return
    if args.silent or not text:
        return
    _write_out(text, sys.stderr if stdin_fix else sys.stdout)


def _available_fixes(ctx) -> str:
    """``--show-fixes`` without ``--fix``: every fix on offer, with its safety."""
    fixes = [f for f in ctx.findings if f.fix is not None and f.fix.edits]
    if not fixes:
        return ""
    lines = [f"\n{len(fixes)} fix{'es' if len(fixes) != 1 else ''} available:"]
    for f in fixes:
        where = f.filename if f.cell is None else f"{f.filename}:cell {f.cell}"
        how = f.fix.applicability.value
        if how == "unsafe" and not ctx.unsafe_fixes:
            how += ", needs --unsafe-fixes"
        elif how == "display-only":
            how += ", never applied"
        lines.append(f"- {where}:{f.location.row}:{f.location.column + 1}: {f.code} ({how}) {f.fix.message}")
    return "\n".join(lines) + "\n"


def _show_settings(st, paths: list[str]) -> str:
    config_path = st.config_path

    def toml_list(items) -> str:
        return "[" + ", ".join(f'"{i}"' for i in items) + "]"

    lines = [
        f"Resolved settings for: {os.path.abspath(paths[0])}",
        f"Settings path: {os.path.abspath(config_path) if config_path else '(none: defaults)'}",
        "",
        f"enabled = {toml_list(sorted(st.enabled))}",
        "per-file-ignores = {" + ", ".join(f'"{p}" = {toml_list(sorted(c))}' for p, c in st.per_file_ignores) + "}",
        f"exclude = {toml_list(st.exclude)}",
        f"extend-exclude = {toml_list(st.extend_exclude)}",
        f"force-exclude = {str(st.force_exclude).lower()}",
        f"unsafe-fixes = {str(st.unsafe_fixes).lower()}",
        f"output-format = \"{st.output_format}\"",
        f"root = \"{st.root}\"",
    ]
    return "\n".join(lines) + "\n"


def _write_out(text: str, stream=None) -> None:
    """Write the report; a character stdout's encoding cannot hold (a file
    name's undecodable byte, kept as a surrogate escape) is written as the
    original byte, or escaped, instead of ending the run with a traceback."""
    stream = stream or sys.stdout
    try:
        stream.write(text)
    except UnicodeEncodeError:
        encoding = getattr(stream, "encoding", None) or "utf-8"
        try:
            data = text.encode(encoding, "surrogateescape")
        except UnicodeEncodeError:
            data = text.encode(encoding, "backslashreplace")
        buffer = getattr(stream, "buffer", None)
        if buffer is None:
            stream.write(data.decode(encoding, "replace"))
        else:
            stream.flush()
            buffer.write(data)
    stream.flush()


def _show_fixes(ctx) -> str:
    from fakegrad_lint.findings import display_path

    n = ctx.fixed
    lines = [f"\nFixed {n} error{'s' if n != 1 else ''}:"]
    for path in sorted(ctx.fixed_by_file):
        lines.append(f"- {display_path(path)}: {ctx.fixed_by_file[path]} fixed")
    return "\n".join(lines) + "\n"
