"""Every ``--help`` of the ``lazymem`` command renders: the top level and each subcommand, nested ones too.

argparse %-formats help strings, so a bare "95%" in one of them turns ``--help`` into a traceback.
"""

from __future__ import annotations

import argparse

import pytest

from lazymem.cli import build_parser, main


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command path, parser) for the parser and every subparser below it, depth first."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, path + (name,))


PATHS = [path for path, _ in _walk(build_parser())]


def test_the_walk_reaches_the_nested_commands():
    for path in [
        (),
        ("data", "summary"),
        ("data", "split"),
        ("bench", "retrieval"),
        ("bench", "pipeline"),
        ("train", "sft"),
        ("train", "grpo"),
        ("notebooks", "run"),
        ("eval",),
        ("report",),
        ("perturb",),
    ]:
        assert path in PATHS, path


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "lazymem")
def test_every_help_renders(path, capsys):
    parser = dict(_walk(build_parser()))[path]
    text = parser.format_help()
    assert text.startswith("usage: lazymem")
    with pytest.raises(SystemExit) as exit_:
        main([*path, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out == text
    for action in parser._actions:  # each option's help, as argparse expands it
        if action.help and action.help is not argparse.SUPPRESS:
            parser._get_formatter()._expand_help(action)


def test_report_help_keeps_its_percent_sign(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "paired bootstrap 95% intervals" in " ".join(capsys.readouterr().out.split())


def test_version_prints_the_package_version(capsys):
    from lazymem import __version__

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"lazymem {__version__}\n" == "lazymem 0.2.0\n"


def test_pyproject_and_package_agree_on_the_version():
    import re
    from pathlib import Path

    from lazymem import __version__

    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^version = "([^"]+)"', pyproject, re.M).group(1) == __version__
