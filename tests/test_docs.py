"""The documentation says only what the scripts accept, and its links lead somewhere.

Every ``--option`` that a README (the top one, ``egs/*/README.md``, ``RESULTS.md`` and ``local/README.md``,
``docs/*.md``, ``benchmarks/README.md`` and the study pages ``benchmarks/*/README.md``) names after a script must be
in that script's ``--help`` (the option strings of an entry point's parser), and every relative link must name an
existing file.

An option belongs to a script when
- it follows the script on one command: a line of a fenced code block (``\\`` continues it) or an inline code span
  that starts with the script, up to ``|``, ``;``, ``&&``, ``||``, a redirection or the next script;
- it is in the first column of a table whose header's first cell names the script (``| `./run.sh` option | ...``).
Scripts: ``run.sh`` (the recipe of the file, or of the last ``cd egs/<recipe>``), ``local/``, ``steps/``, ``utils/``
and ``tests/`` shell scripts, ``$train_cmd``/``$decode_cmd``/``$cuda_cmd`` (utils/run.pl) and
``python -m punct.bin.<name>`` (also after ``torchrun ... -m``).  A bare ``--option`` with no script before it is
not checked: prose such as "sbatch ``--cpus-per-task``" names other programs' options.
"""

from __future__ import annotations

import argparse
import importlib
import re
import shlex
import subprocess
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
RECIPES = sorted(p.name for p in (REPO / "egs").iterdir() if (p / "run.sh").is_file())


def doc_files() -> list[Path]:
    return [
        REPO / "README.md",
        *sorted(REPO.glob("egs/*/README.md")),
        *sorted(REPO.glob("egs/*/RESULTS.md")),
        *sorted(REPO.glob("egs/*/local/README.md")),
        *sorted(REPO.glob("docs/*.md")),
        REPO / "benchmarks" / "README.md",
        *sorted(REPO.glob("benchmarks/*/README.md")),
    ]


class Mention(NamedTuple):
    doc: str  # file:line
    script: str  # "python -m punct.bin.x", or a path relative to the repository (egs/mustc/run.sh, steps/x.sh)
    option: str


# ---- which script a token names ----------------------------------------------------------------------------------

_SHELL = re.compile(
    r"^(?:\./)?(?:egs/(?P<recipe>[a-z]+)/)?(?P<path>run\.sh|(?:local|steps|utils|tests/gpu)/[\w./-]+\.(?:sh|pl))$"
)
_RUNNERS = {"$train_cmd", "$decode_cmd", "$cuda_cmd", '"$train_cmd"', '"$decode_cmd"', '"$cuda_cmd"'}
_SEPARATORS = {"|", "||", "&&", ";", "&", ">", ">>", "<", "2>", "2>&1", "(", ")"}


def script_of(token: str, recipe: str | None) -> str | None:
    """The script a command token names, as a repository path (or "python -m ..."); None when it names none."""
    if token in _RUNNERS:
        return "utils/run.pl"
    m = _SHELL.match(token)
    if not m:
        return None
    path, recipe = m["path"], m["recipe"] or recipe
    if path.startswith(("steps/", "utils/", "tests/")):
        return path
    if recipe is None:  # local/x.sh or run.sh outside any recipe: whichever recipe has it
        owners = [r for r in RECIPES if (REPO / "egs" / r / path).is_file()]
        recipe = owners[0] if len(owners) == 1 else None
    return f"egs/{recipe}/{path}" if recipe else f"egs/?/{path}"


def tokens_of(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|<>()")
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # an unbalanced quote in prose-like code: fall back to whitespace
        return command.split()


def options_after_scripts(command: str, recipe: str | None) -> Iterator[tuple[str, str]]:
    """(script, option) for each option that follows a script on ``command``.

    A shell script's options end at its first positional argument (Kaldi's parse_options: each ``--name`` takes
    one value); what follows goes to the recipe's run.sh for utils/multi_seed.sh, to nothing for the others.
    """
    current: str | None = None
    tokens = tokens_of(command)
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        option = re.match(r"^--[a-z][a-z0-9-]*(=|$)", tok)
        if tok in _SEPARATORS:
            current = None
        elif tok == "-m" and i + 1 < len(tokens) and tokens[i + 1].startswith("punct.bin."):
            current = "python -m " + tokens[i + 1]
            i += 1
        elif script_of(tok, recipe):
            current = script_of(tok, recipe)
        elif current and option:
            yield current, tok.split("=", 1)[0]
            if current.endswith(".sh") and "=" not in tok:
                i += 1  # its value
        elif current and current.endswith(".sh"):  # the first positional argument
            run_sh = f"egs/{recipe}/run.sh" if recipe else "egs/?/run.sh"
            current = run_sh if current == "utils/multi_seed.sh" else None
        i += 1


# ---- what a markdown file says ---------------------------------------------------------------------------------------

_CD = re.compile(r"(?:^|[;&(]\s*)cd\s+(?:\.\./\.\./)?(?:egs/)?(?P<recipe>[a-z]+)\b")


def mentions(path: Path, rel: Path | None = None) -> Iterator[Mention]:
    """Every (script, option) that ``path`` names; ``rel``: where it stands in the repository (default: where it is)."""
    rel = rel or path.relative_to(REPO)
    recipe = rel.parts[1] if rel.parts[0] == "egs" else None
    lines = path.read_text(encoding="utf-8").splitlines()
    in_code, table_script, pending, pending_line, generated = False, None, "", 0, False
    for n, line in enumerate(lines, 1):
        where = f"{rel}:{n}"
        # A generated table (a results region, or the "Generated by" line under a frozen one) records the command
        # that made it as it was at that commit: it is history, not a command to run today.
        if re.match(r"<!-- results:[\w-]+:(begin|end) -->", line):
            generated = line.endswith(":begin -->")
            continue
        if generated or "Generated by `punct.bin.results_table`" in line:
            continue
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            command = pending + line
            if command.rstrip().endswith("\\"):
                pending, pending_line = command.rstrip()[:-1] + " ", pending_line or n
                continue
            pending, where = "", f"{rel}:{pending_line or n}"
            pending_line = 0
            cd = _CD.search(command)
            if cd and cd["recipe"] in RECIPES:
                recipe = cd["recipe"]
            for script, option in options_after_scripts(command.split(" # ", 1)[0], recipe):
                yield Mention(where, script, option)
            continue
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if re.fullmatch(r"[-: ]+", cells[0] or "-"):
                pass
            elif table_script is None and n > 1 and not lines[n - 2].startswith("|"):  # a header row
                spans = re.findall(r"`([^`]+)`", cells[0])
                table_script = script_of(spans[0], recipe) if spans else ""
            elif table_script:
                for span in re.findall(r"`([^`]+)`", cells[0]):
                    for tok in span.split():
                        if tok.startswith("--"):
                            yield Mention(where, table_script, tok.split("=", 1)[0])
        else:
            table_script = None
        for span in re.findall(r"`([^`]+)`", line):
            cd = _CD.search(span)
            if cd and cd["recipe"] in RECIPES:
                recipe = cd["recipe"]
            for script, option in options_after_scripts(span, recipe):
                yield Mention(where, script, option)


# ---- what a script accepts -------------------------------------------------------------------------------------------


def _parser_options(parser: argparse.ArgumentParser) -> set[str]:
    found = set()
    for action in parser._actions:
        found.update(s for s in action.option_strings if s.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _parser_options(sub)
    return found


@cache
def accepted(script: str) -> set[str] | None:
    """The options of ``script``'s --help; None when the script does not exist."""
    if script.startswith("python -m "):
        module = script[len("python -m ") :]
        if not (REPO / (module.replace(".", "/") + ".py")).is_file():
            return None
        return _parser_options(importlib.import_module(module).get_parser()) | {"--help"}
    if script.startswith("egs/?/"):  # local/x.sh named outside a recipe: any recipe's
        found = [accepted(f"egs/{r}/{script[6:]}") for r in RECIPES]
        found = [f for f in found if f is not None]
        return set().union(*found) if found else None
    path = REPO / script
    if not path.is_file():
        return None
    cwd = path.parent.parent if path.parent.name == "local" else REPO / "egs" / RECIPES[0]
    cwd = path.parent if path.name == "run.sh" else cwd
    # Kaldi-style: --help prints the usage; run.pl/slurm.pl print theirs when called without arguments
    args = [] if path.suffix == ".pl" else ["--help"]
    out = subprocess.run([str(path), *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    return set(re.findall(r"--[a-z][a-z0-9-]*", out.stdout + out.stderr)) | ({"--help"} if args else set())


# ---- the tests -------------------------------------------------------------------------------------------------------


def all_mentions() -> list[Mention]:
    return [m for f in doc_files() for m in mentions(f)]


def unknown(found: list[Mention]) -> list[str]:
    bad = []
    for m in found:
        options = accepted(m.script)
        if options is None:
            bad.append(f"{m.doc}: {m.script}: no such script")
        elif m.option not in options:
            bad.append(f"{m.doc}: {m.script} has no {m.option} in its --help")
    return bad


def test_the_docs_name_options_of_many_scripts():
    """The attribution finds what the READMEs show (so the next test checks something)."""
    found = all_mentions()
    scripts = {m.script for m in found}
    assert {
        "egs/mustc/run.sh",
        "egs/parczech/run.sh",
        "steps/punctuate.sh",
        "python -m punct.bin.punctuate",
        "python -m punct.bin.results_table",
    } <= scripts, scripts
    assert ("egs/mustc/run.sh", "--mustc-root") in {(m.script, m.option) for m in found}
    assert ("egs/parczech/run.sh", "--am-data") in {(m.script, m.option) for m in found}
    assert len(found) > 100


def test_every_option_a_readme_names_is_in_its_scripts_help():
    bad = unknown(all_mentions())
    assert not bad, "\n".join(bad)


def test_a_wrong_option_fails(tmp_path):
    """An option a script does not have, in each place the docs name options, is found."""
    doc = tmp_path / "README.md"
    doc.write_text(
        "```bash\n./run.sh --stage 3 --no-such-option 1 \\\n  --mustc-root /data\n```\n\n"
        "Run `local/score.sh --alpha-rule argmax --nor-this` or `steps/punctuate.sh --nj 2 --nope`.\n\n"
        "| `./run.sh` option | what |\n|---|---|\n| `--seed N`, `--not-an-option X` | x |\n\n"
        "`python -m punct.bin.punctuate --recipe-dir . --wrong-one` and `local/nowhere.sh --x`\n",
        encoding="utf-8",
    )
    bad = unknown(list(mentions(doc, Path("egs/mustc/README.md"))))
    for option in ("--no-such-option", "--nor-this", "--nope", "--not-an-option", "--wrong-one"):
        assert any(option in b for b in bad), (option, bad)
    assert any("local/nowhere.sh: no such script" in b for b in bad), bad
    assert not any(
        o in b for b in bad for o in ("--stage", "--mustc-root", "--alpha-rule", "--nj", "--seed ", "--recipe-dir")
    ), bad


_LINK = re.compile(r"(?<!!)\[[^\]]*\]\((?P<target>[^)\s]+)\)")


def test_relative_links_lead_to_files():
    bad = []
    for f in doc_files():
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            for m in _LINK.finditer(line):
                target = m["target"]
                if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                    continue
                if not (f.parent / target.split("#", 1)[0]).exists():
                    bad.append(f"{f.relative_to(REPO)}:{n}: {target}")
    assert not bad, "\n".join(bad)


def test_the_top_readme_is_short_and_has_the_commands():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    for command in ("./install.sh", ". ./path.sh && python -m pytest", "cd egs/mustc", "cd egs/parczech", "./run.sh"):
        assert command in text, command
    for recipe in RECIPES:
        for name in ("README.md", "RESULTS.md"):
            assert f"(egs/{recipe}/{name})" in text, f"the top README links no egs/{recipe}/{name}"
