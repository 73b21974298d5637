"""The user docs hold: the MkDocs site builds without a warning, every ``tacred`` command line in a bash block of the
README and the docs pages names a real command with options its parser accepts, and every Python block compiles
(tests/inference/test_api.py runs the README's ``load_model`` example)."""

from __future__ import annotations

import contextlib
import importlib
import io
import re
import shlex
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def blocks(page: Path, language: str) -> list[str]:
    """The fenced ``language`` blocks of a Markdown page."""
    return re.findall(rf"^```{language}\n(.*?)^```", page.read_text(encoding="utf-8"), flags=re.M | re.S)


def command_lines(page: Path) -> list[list[str]]:
    """The ``tacred`` invocations of a page's bash blocks as argument lists (continuations joined, comments, pipes
    and leading ``VAR=value`` assignments removed), the command name first."""
    found = []
    for block in blocks(page, "bash"):
        pending = ""
        for line in block.replace("\\\n", " ").splitlines():
            pending += line + "\n"
            try:
                words = shlex.split(pending, comments=True, posix=True)
            except ValueError:  # a quoted string (`python -c "..."`) goes on over the next lines
                continue
            pending = ""
            # a shell variable stands for a value the reader supplies ($N_TRIALS, $((50/N)))
            words = ["1" if "$" in w and not w.startswith("--") else w for w in words]
            segment: list[str] = []
            for word in [*words, "|"]:
                if word in ("|", "&", "&&", ";", "||"):
                    while segment and re.fullmatch(r"[A-Z_]+=\S*", segment[0]):
                        segment.pop(0)
                    if segment and Path(segment[0]).name == "tacred":
                        found.append(segment[1:])
                    segment = []
                else:
                    segment.append(word)
    return found


@cache
def lightning_options(command: str) -> frozenset[str]:
    """Every option ``tacred COMMAND --help`` lists (Lightning's parser, with the project's own options)."""
    from tacred.cli import run_lightning

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        run_lightning([command, "--help"])
    return frozenset(re.findall(r"(--[A-Za-z_][\w.]*)", out.getvalue()))


@cache
def network_options() -> frozenset[str]:
    """``--model.network.FIELD`` for every field of the network's configuration (the help lists the group only)."""
    from dataclasses import fields

    from tacred.models.config import NetworkConfig

    return frozenset(f"--model.network.{f.name}" for f in fields(NetworkConfig))


def check_lightning(command: str, args: list[str]) -> None:
    known = lightning_options(command) | network_options()
    unknown = [a.split("=", 1)[0] for a in args if a.startswith("--") and a.split("=", 1)[0] not in known]
    assert not unknown, f"tacred {command}: options its parser does not know: {unknown}"


def check_command(args: list[str]) -> None:
    from tacred.cli import LIGHTNING_COMMANDS
    from tacred.commands import COMMANDS
    from tacred.commands.parsing import underscored

    if not args or args[0].startswith("-"):  # `tacred --help`, `tacred --version`
        assert not args or args[0] in ("-h", "--help", "-V", "--version"), f"tacred {shlex.join(args)}"
        return
    command, rest = args[0], underscored(args[1:], stop=None)
    assert command in (*LIGHTNING_COMMANDS, *COMMANDS), f"tacred {command}: no such command"
    if command == "predict" and "--sentences" in rest:
        from tacred.commands.predict_raw import build_parser

        build_parser().parse_args(rest)
    elif command in LIGHTNING_COMMANDS:
        check_lightning(command, rest)
    else:
        module = importlib.import_module(f"tacred.commands.{COMMANDS[command]}")
        parser = module.build_parser() if hasattr(module, "build_parser") else module._parser()
        if command == "ensemble":  # what its parser does not take goes to `tacred fit`
            _, fit_args = parser.parse_known_args(rest)
            check_lightning("fit", fit_args)
        else:
            parser.parse_args(rest)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_tacred_command_parses(page, capsys):
    commands = command_lines(page)
    for args in commands:
        try:
            check_command(args)
        except SystemExit as stopped:  # argparse: an unknown option, a bad value
            raise AssertionError(f"{page.name}: `tacred {shlex.join(args)}`: {capsys.readouterr().err}") from stopped
    if page.name == "README.md":
        assert len(commands) >= 7 and {a[0] for a in commands} >= {"fit", "test", "predict", "serve", "ablate"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_python_block_compiles(page):
    for number, code in enumerate(blocks(page, "python"), 1):
        compile(code, f"{page.name}, python block {number}", "exec")


def test_the_readme_links_resolve():
    """README is read on the repository's page, outside the site: its relative links must name files that exist."""
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", (REPO / "README.md").read_text(encoding="utf-8"))
    local = [t for t in targets if "://" not in t]
    assert len(local) >= 15
    missing = [t for t in local if not (REPO / t).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_the_readme_stays_short():
    assert (REPO / "README.md").stat().st_size <= 15_000


def test_no_manual_page_runs_over_300_lines():
    """A page that grows past 300 lines is split by subject (as the NER page and performance.md were)."""
    long = {p.name: n for p in PAGES[1:] if (n := len(p.read_text(encoding="utf-8").splitlines())) > 300}
    assert not long, f"manual pages over 300 lines: {long}"


def test_the_site_builds_strictly(tmp_path, monkeypatch):
    """`make docs` in this process (MkDocs' own build with --strict): a warning, such as a broken link or anchor,
    aborts it, and the warnings are what the assertion shows."""
    import logging

    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    monkeypatch.setenv("NO_MKDOCS_2_WARNING", "1")  # Material's notice about MkDocs 2
    warnings: list[str] = []

    class Kept(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            warnings.append(record.getMessage())

    handler = Kept(level=logging.WARNING)
    logging.getLogger("mkdocs").addHandler(handler)
    try:
        build(load_config(str(REPO / "mkdocs.yml"), strict=True, site_dir=str(tmp_path / "site")))
    except SystemExit as aborted:  # mkdocs.exceptions.Abort: warnings in strict mode
        pytest.fail(f"{aborted}: {warnings}")
    finally:
        logging.getLogger("mkdocs").removeHandler(handler)
    assert not warnings, warnings
    assert (tmp_path / "site" / "index.html").is_file() and (tmp_path / "site" / "using" / "index.html").is_file()
