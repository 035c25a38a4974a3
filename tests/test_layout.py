"""The package's shape: one concept per subpackage, imports only downwards, one name one meaning.

The floors below (also in ``punct/__init__.py``'s docstring), lowest first: a module may import its own
area and the areas on lower floors, never one on its own floor or higher (no lazy import inside a function
either), so no two areas import each other.  An area is a subpackage of ``punct`` (``punct.models.<model>``
for the models) or ``punct.labels``.

  0  utils
  1  labels, io, features, training, synthesis
  2  text, scoring, am
  3  align, recognition, models (its docstring only), models.text, models.pause
  4  am_data, models.cross_attention
  5  corpora, models.punct_tdnn
  6  inference, results
  7  bin
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import re
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "punct"

FLOORS = [
    ["punct.utils"],
    ["punct.labels", "punct.io", "punct.features", "punct.training", "punct.synthesis"],
    ["punct.text", "punct.scoring", "punct.am"],
    ["punct.align", "punct.recognition", "punct.models", "punct.models.text", "punct.models.pause"],
    ["punct.am_data", "punct.models.cross_attention"],
    ["punct.corpora", "punct.models.punct_tdnn"],
    ["punct.inference", "punct.results"],
    ["punct.bin"],
]
MAX_FUNCTION_LINES = 60


@functools.cache
def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def area(module: str) -> str:
    parts = module.split(".")
    if len(parts) >= 3 and parts[1] == "models":
        return ".".join(parts[:3])
    return ".".join(parts[:2])


def imported_modules(module: str, path: Path) -> set[str]:
    """Every ``punct.*`` module a file imports, at the top or inside a function (``from punct.models import
    text`` imports ``punct.models.text``; a relative import is resolved against ``module``)."""
    known = modules()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1]) if node.level else ""
            source = ".".join(part for part in (base, node.module) if part)
            for alias in node.names:
                names.add(f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source)
    return {name for name in names if name == "punct" or name.startswith("punct.")}


def area_imports() -> dict[str, dict[str, list[str]]]:
    """area -> imported area -> the modules that import it."""
    edges: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for module, path in modules().items():
        for target in imported_modules(module, path):
            if target == "punct":
                continue
            if area(target) != area(module):
                edges[area(module)][area(target)].append(module)
    return edges


def floor_of() -> dict[str, int]:
    return {name: level for level, names in enumerate(FLOORS) for name in names}


def test_only_labels_lives_at_the_top() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert top == ["__init__.py", "labels.py"], f"top-level modules besides labels.py: {top}"


def test_every_area_is_on_a_floor_and_named_in_its_docstring() -> None:
    floors = floor_of()
    areas = {area(m) for m in modules() if m != "punct"}
    assert sorted(areas - set(floors)) == [], "areas missing from FLOORS"
    assert sorted(set(floors) - areas) == [], "FLOORS names areas that do not exist"
    undocumented = [
        str(init) for init in sorted(PACKAGE.rglob("__init__.py")) if not ast.get_docstring(ast.parse(init.read_text()))
    ]
    assert undocumented == [], "subpackages without a docstring naming their concept"


def test_imports_go_only_downwards() -> None:
    floors = floor_of()
    upward = [
        f"{importer} ({floors[source]}) imports {target} ({floors[target]})"
        for source, targets in area_imports().items()
        for target, importers in targets.items()
        for importer in importers
        if floors[target] >= floors[source]
    ]
    assert upward == []


def test_no_two_classes_share_a_name() -> None:
    where = defaultdict(list)
    for module, path in modules().items():
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                where[node.name].append(module)
    assert {name: places for name, places in where.items() if len(places) > 1} == {}


def test_functions_are_short() -> None:
    long = []
    for module, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                if node.end_lineno - first + 1 > MAX_FUNCTION_LINES:
                    long.append(f"{module}.{node.name}: {node.end_lineno - first + 1} lines")
    assert long == []


def test_the_package_docstring_lists_the_floors() -> None:
    """punct/__init__.py's docstring draws FLOORS: one line per floor, ``N  area, area`` without ``punct.``."""
    drawn = {}
    for line in (ast.get_docstring(ast.parse((PACKAGE / "__init__.py").read_text())) or "").splitlines():
        number, _, names = line.strip().partition("  ")
        if number.isdigit():
            drawn[int(number)] = [name.split(" (")[0].strip() for name in names.split(",")]
    assert drawn == {level: [name.removeprefix("punct.") for name in names] for level, names in enumerate(FLOORS)}


def module_graph() -> dict[str, set[str]]:
    """module -> the ``punct`` modules it imports, at the top or inside a function."""
    return {module: imported_modules(module, path) & modules().keys() for module, path in modules().items()}


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The modules of ``graph`` (module -> the modules it imports) that import each other, directly or round a
    longer circle (Tarjan's strongly connected components), each circle sorted."""
    index: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(module: str) -> None:
        index[module] = lowest[module] = len(index)
        stack.append(module)
        for target in graph.get(module, ()):
            if target not in index:
                visit(target)
                lowest[module] = min(lowest[module], lowest[target])
            elif target in stack:
                lowest[module] = min(lowest[module], index[target])
        if lowest[module] == index[module]:
            component = stack[stack.index(module) :]
            del stack[stack.index(module) :]
            if len(component) > 1:
                circles.append(sorted(component))

    for module in graph:
        if module not in index:
            visit(module)
    return circles


def test_no_two_modules_import_each_other() -> None:
    """Within an area too (the floors order only the areas): a circle, even through an import inside a
    function, means two modules that cannot be read or loaded apart."""
    assert import_circles(module_graph()) == []


def test_an_import_circle_is_found() -> None:
    graph = {"punct.a": {"punct.b"}, "punct.b": {"punct.c"}, "punct.c": {"punct.a"}, "punct.d": {"punct.a"}}
    assert import_circles(graph) == [["punct.a", "punct.b", "punct.c"]]


# Modules that load trained models but never train one: they read checkpoints through each model's
# ``checkpoint`` module (``punct.am.checkpoint``, ``punct.models.<model>.checkpoint``), not its ``train``.
LOADING_AREAS = ("punct.inference", "punct.results", "punct.recognition", "punct.align")
LOADING_ENTRY_POINTS = (
    "punct.bin.punctuate",
    "punct.bin.punctuate_itn",
    "punct.bin.export_model",
    "punct.bin.decode_*",
    "punct.bin.align",
    "punct.bin.dump_*",
)


def training_imports(graph: dict[str, set[str]]) -> list[str]:
    """``<module> imports <training module>`` for each loading module of ``graph`` (module -> the modules it
    imports) that imports a ``punct.*.train`` module."""
    return sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if area(module) in LOADING_AREAS or any(fnmatch.fnmatchcase(module, name) for name in LOADING_ENTRY_POINTS)
        for target in targets
        if target.startswith("punct.") and target.rpartition(".")[2] == "train"
    )


def test_loading_modules_do_not_import_training_modules() -> None:
    """A ``train`` module (its data pipeline, optimizers, DDP) is imported by training code only; inference,
    results, recognition, word alignment and the decoding entry points load through ``checkpoint`` modules."""
    assert training_imports(module_graph()) == []


def test_a_training_import_is_found() -> None:
    graph = {
        "punct.inference.recipe": {"punct.am.checkpoint", "punct.models.punct_tdnn.train"},
        "punct.bin.decode_am": {"punct.am.train"},
        "punct.bin.train_am": {"punct.am.train"},
        "punct.am.init_from": {"punct.am.train"},
    }
    assert training_imports(graph) == [
        "punct.bin.decode_am imports punct.am.train",
        "punct.inference.recipe imports punct.models.punct_tdnn.train",
    ]


# A corpus is named in ``punct/corpora/`` and ``egs/`` only (docs/architecture.md); shared code takes the manifest
# prefix and paths from the recipe.  Docstrings, comments and "e.g." examples may name one.
CORPUS_NAME = re.compile(r"(?<![a-z0-9])(must-?c|parczech|ted)(?![a-z0-9])", re.IGNORECASE)
EXAMPLE = re.compile(r"e\.g\.[^)\n]*")
CORPUS_AREAS = ("punct.corpora",)
# Entry points whose job is one corpus (docs/architecture.md, stage 0 of each recipe).
CORPUS_ENTRY_POINTS = {
    "punct.bin.prepare_mustc": "MuST-C's folders -> egs/mustc's manifests",
    "punct.bin.prepare_parczech": "ParCzech's folders -> egs/parczech's manifests",
    "punct.bin.prepare_imported": "a corpus of your own -> egs/mustc's manifests, with prepare_mustc's report",
    "punct.bin.build_mini_corpus": "builds egs/mustc's mini corpus in MuST-C's layout",
    "punct.bin.build_parczech_mini": "builds egs/parczech's mini corpus in ParCzech's layout",
}


def docstring_ids(tree: ast.AST) -> set[int]:
    """``id()`` of every docstring constant of ``tree`` (module, class and function docstrings)."""
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, kinds) and node.body and ast.get_docstring(node, clean=False) is not None
    }


def identifier_names(node: ast.AST) -> list[str]:
    """The names ``node`` defines or uses: variables, attributes, functions, classes, arguments, imports."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.arg, ast.keyword)):
        return [node.arg] if node.arg else []
    if isinstance(node, ast.alias):
        return [node.name, node.asname or ""]
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""]
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return list(node.names)
    return []


def corpus_names(source: str) -> list[str]:
    """``line: text`` for each corpus name (whole tokens, any case) in the code of ``source``: in its string
    constants other than docstrings and outside "e.g." examples, and in its identifiers (``snake_case`` and
    ``CamelCase`` parts alike); comments are not code."""
    tree = ast.parse(source)
    docstrings = docstring_ids(tree)
    found = []
    for node in ast.walk(tree):
        # (what is reported, what is searched): an identifier split at its CamelCase humps
        texts = [(name, re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)) for name in identifier_names(node)]
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            texts.append((node.value, EXAMPLE.sub("", node.value)))
        found += [f"{node.lineno}: {shown[:80]!r}" for shown, searched in texts if CORPUS_NAME.search(searched)]
    return found


@functools.cache
def corpus_names_in_package() -> dict[str, list[str]]:
    """module -> its corpus names, for every module outside the corpus areas (the module's own dotted name too)."""
    named = {}
    for module, path in modules().items():
        if area(module) in CORPUS_AREAS:
            continue
        found = corpus_names(path.read_text())
        if CORPUS_NAME.search(module.replace("_", " ")):
            found.append(f"module name {module}")
        if found:
            named[module] = found
    return named


def test_no_corpus_name_in_shared_code() -> None:
    """Outside punct/corpora/ code takes a corpus' prefix and paths from the recipe (``--prefix``,
    ``--cuts-pattern``, ... required, or a neutral default); only the corpus entry points name their corpus."""
    allowed = CORPUS_ENTRY_POINTS.keys()
    assert {module: found for module, found in corpus_names_in_package().items() if module not in allowed} == {}


def test_corpus_allowances_are_needed() -> None:
    """Each allowed module exists and still names a corpus: a stale entry (moved, renamed or cleaned) goes."""
    named = corpus_names_in_package()
    assert sorted(CORPUS_ENTRY_POINTS.keys() - named.keys()) == []


@pytest.mark.parametrize(
    "source,expected",
    [
        ('parser.add_argument("--prefix", default="mustc")', ["1: 'mustc'"]),
        ('PATTERN = "parczech_cuts_{split}.jsonl.gz"', ["1: 'parczech_cuts_{split}.jsonl.gz'"]),
        ('raise ValueError(f"egs/parczech decodes need {n} classes")', ["1: 'egs/parczech decodes need '"]),
        ('title = "MuST-C tst-COMMON"', ["1: 'MuST-C tst-COMMON'"]),
        ('talks = "TED talks"', ["1: 'TED talks'"]),
        ("def prepare_mustc(): pass", ["1: 'prepare_mustc'"]),
        ("class ParczechConfig: pass", ["1: 'ParczechConfig'"]),
        ("from punct.results.mustc import system_key", ["1: 'punct.results.mustc'"]),
        ("mustc_prefix = 1", ["1: 'mustc_prefix'"]),
        ('"""MuST-C and ParCzech in a docstring."""\nx = 1  # mustc in a comment', []),
        ('help = "manifest name prefix (e.g. mustc)"', []),
        ('help = "e.g. parczech_supervisions_dev.jsonl.gz"', []),
        ('words = ["started", "tedious", "muster", "must", "parczechia"]', []),
        ("sorted_ted_x = 1", ["1: 'sorted_ted_x'"]),
    ],
)
def test_corpus_names_are_found(source: str, expected: list[str]) -> None:
    assert corpus_names(source) == expected


# The chain of punctuation is written once (``punct.inference.chain.Chain``: the models and the steps); the drivers
# only decide which stretch of speech is ready and what to keep.  A driver imports no other driver (the offline
# one hands a whole recording to the long-form one), reads only the chain's public members, and no module of
# ``punct.inference`` or ``punct.bin`` reaches into another object's private members.
CHAIN = "punct.inference.chain"
DRIVERS = {
    "punct.inference.pipeline": {"punct.inference.long_form"},
    "punct.inference.long_form": set(),
    "punct.inference.streaming": set(),
    "punct.inference.itn_stream": set(),
}
NAMEDTUPLE_MEMBERS = {"_replace", "_asdict", "_fields", "_make"}


def driver_imports(graph: dict[str, set[str]]) -> list[str]:
    """``<driver> imports <driver>`` for each driver of ``graph`` that imports another it may not."""
    return sorted(
        f"{module} imports {target}"
        for module, allowed in DRIVERS.items()
        for target in graph.get(module, set())
        if target in DRIVERS and target != module and target not in allowed
    )


def private_reaches(source: str) -> list[str]:
    """``<line>: <expression>`` for each ``x._name`` in ``source`` whose ``x`` is not ``self`` or ``cls``."""
    return [
        f"{node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and node.attr not in NAMEDTUPLE_MEMBERS
        and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
    ]


def public_members(source: str, class_name: str) -> set[str]:
    """The public names of class ``class_name`` in ``source``: its methods and class attributes, and what its
    methods assign to ``self``."""
    cls = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == class_name)
    names = {n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    names |= {
        t.id
        for n in cls.body
        if isinstance(n, (ast.Assign, ast.AnnAssign))
        for t in ast.walk(n)
        if isinstance(t, ast.Name)
    }
    names |= {
        t.attr
        for t in ast.walk(cls)
        if isinstance(t, ast.Attribute)
        and isinstance(t.ctx, ast.Store)
        and isinstance(t.value, ast.Name)
        and t.value.id == "self"
    }
    return {name for name in names if not name.startswith("_")}


def chain_reads(source: str) -> set[str]:
    """The members a driver reads of its chain: ``self.chain.<name>`` and ``chain.<name>``."""
    return {
        node.attr
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute)
        and (
            (isinstance(node.value, ast.Name) and node.value.id == "chain")
            or (isinstance(node.value, ast.Attribute) and node.value.attr == "chain")
        )
    }


def test_drivers_do_not_import_each_other() -> None:
    assert driver_imports(module_graph()) == []


def test_a_driver_importing_another_is_found() -> None:
    graph = {
        "punct.inference.streaming": {"punct.inference.pipeline", CHAIN},
        "punct.inference.pipeline": {"punct.inference.long_form", CHAIN},
        "punct.inference.long_form": {CHAIN},
    }
    assert driver_imports(graph) == ["punct.inference.streaming imports punct.inference.pipeline"]


def test_drivers_read_only_the_chains_public_members() -> None:
    members = public_members(modules()[CHAIN].read_text(), "Chain")
    assert {"am_embedding", "text_outputs", "tdnn_posteriors", "alpha", "timer", "global_cmvn"} <= members
    for driver in ("punct.inference.long_form", "punct.inference.streaming"):
        reads = chain_reads(modules()[driver].read_text())
        assert reads and sorted(reads - members) == [], driver


def test_no_module_reaches_into_another_objects_private_members() -> None:
    found = [
        f"{module}:{reach}"
        for module, path in modules().items()
        if module.startswith(("punct.inference", "punct.bin"))
        for reach in private_reaches(path.read_text())
    ]
    assert found == []


def test_a_private_reach_is_found() -> None:
    planted = (
        "class StreamingPunctuator:\n"
        "    def stretch(self, punctuator):\n"
        "        self._own, point = self._cache, point._replace(x=1)\n"
        "        return punctuator._tdnn_posteriors([]), self.chain._text_models()\n"
    )
    assert private_reaches(planted) == ["4: punctuator._tdnn_posteriors", "4: self.chain._text_models"]
    assert sorted(chain_reads(planted + "        chain.features, self.chain.run\n")) == [
        "_text_models",
        "features",
        "run",
    ]
