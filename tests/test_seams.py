"""The seams hold (issue 16): each table's SQL lives with the module that creates the table, and no import
runs in a circle, between files or between packages.

Both checks read the project's sources with `ast` (every import counts, including those inside functions, and so
does every import string: a string constant naming a project module such as "arena.services.handoff" or "pkg.mod:attr", and
any argument of importlib.import_module / __import__, issue 27); each is first shown to catch a planted fault, so a
check that silently sees nothing fails.
"""
from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("arena", "eval_backend", "leaderboard", "space_shell")
TOP_FILES = ("app.py", "app_context.py")

# A table's owner is the file that creates it, plus the files named here that share its storage.
CO_OWNERS = {"eval_backend/submissions/queue.py": {"eval_backend/submissions/secrets.py"},
             "arena/tables/storage.py": {"arena/tables/storage_sync.py"}}

# Circles another branch of issue 16 removes (seams-core: the metric modules' circle, one Wilson helper).
# Once that branch is merged they are gone and the tests below fail until these entries are deleted.

SQL = re.compile(r"\b(SELECT|INSERT\s+(?:OR\s+\w+\s+)?INTO|UPDATE|DELETE\s+FROM|FROM|JOIN|ALTER\s+TABLE|"
                 r"CREATE\s+(?:UNIQUE\s+)?(?:TABLE|INDEX|TRIGGER))\b")
CREATE = re.compile(r"CREATE\s+TABLE\s+IF\s+NOT\s+EXISTS\s+(\w+)")


def sources(root: Path) -> dict[str, Path]:
    """{module name: file} of the project's own modules (tests excepted)."""
    out = {}
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    for name in TOP_FILES:
        if (root / name).is_file():
            out[name[:-3]] = root / name
    return out


# ---------------------------------------------------------------- SQL with its owner
TABLE_CALLS = ("has_table", "sync_ids")     # Store methods that take a table's name


def strings(tree: ast.AST) -> list[tuple[int, str, bool]]:
    """(line, text, names_a_table) for string literals that are not docstrings or bare comments-as-strings; an
    f-string's literal parts joined (with `{}` for each field), so `f"SELECT ... FROM arena_votes WHERE {col}=?"`
    is one text. `names_a_table`: the literal is an argument of a Store method that takes a table name."""
    bare = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    inside_f = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    table_args = {id(a) for node in ast.walk(tree) if isinstance(node, ast.Call)
                  and isinstance(node.func, ast.Attribute) and node.func.attr in TABLE_CALLS for a in node.args}
    out = []
    for node in ast.walk(tree):
        if id(node) in bare or id(node) in inside_f:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append((node.lineno, node.value, id(node) in table_args))
        elif isinstance(node, ast.JoinedStr):
            out.append((node.lineno, "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values),
                        False))
    return out


def sql_outside_owners(root: Path) -> list[str]:
    """'file:line: table' for every SQL text naming a table outside its owner, and every table name handed to a
    Store method (has_table, sync_ids) outside its owner."""
    texts = {path.relative_to(root).as_posix(): strings(ast.parse(path.read_text(encoding="utf-8")))
             for path in sources(root).values()}
    owners: dict[str, set[str]] = {}
    for rel, found in texts.items():
        for _, text, _ in found:
            for table in CREATE.findall(text):
                owners.setdefault(table, set()).update({rel, *CO_OWNERS.get(rel, ())})
    bad = []
    for rel, found in texts.items():
        for line, text, is_table_arg in found:
            for table, allowed in owners.items():
                if rel in allowed:
                    continue
                named = re.search(rf"(?<![\w.]){table}(?![\w.])", text)
                if (named and SQL.search(text)) or (is_table_arg and text == table):
                    bad.append(f"{rel}:{line}: {table}")
    return sorted(bad)


def test_every_table_is_queried_only_by_its_owner():
    assert sql_outside_owners(ROOT) == []


def test_the_sql_check_catches_a_stray_query(tmp_path):
    (tmp_path / "arena").mkdir()
    (tmp_path / "arena" / "storage.py").write_text(
        'X = "CREATE TABLE IF NOT EXISTS arena_things (id INTEGER)"\n')
    (tmp_path / "leaderboard").mkdir()
    (tmp_path / "leaderboard" / "board.py").write_text(
        '"""Reads arena_things FROM somewhere (a docstring: not code)."""\n'
        'def n(store, col):\n'
        '    return store.query(f"SELECT COUNT(*) FROM arena_things WHERE {col} > 0")\n'
        'def has(store):\n'
        '    return store.has_table("arena_things")\n')
    (tmp_path / "eval_backend").mkdir()
    assert sql_outside_owners(tmp_path) == ["leaderboard/board.py:3: arena_things",
                                            "leaderboard/board.py:5: arena_things"]


def test_every_table_has_an_owner():
    """The tables the store's migrations create are the ones the check knows (none escapes it)."""
    from eval_backend.store import MIGRATIONS
    import arena.tables.storage  # noqa: F401  (registers the arena's migrations)
    import eval_backend.submissions.queue  # noqa: F401
    created = {t for m in MIGRATIONS.values() for sql in ([m.sqlite] if isinstance(m.sqlite, str) else m.sqlite)
               for t in CREATE.findall(sql)}
    known = {t for path in sources(ROOT).values() for _, text, _ in strings(ast.parse(path.read_text()))
             for t in CREATE.findall(text)}
    assert {"arena_votes", "arena_battles", "replies", "meta", "submissions", "submission_events"} <= created
    assert created <= known


# ---------------------------------------------------------------- no import circles
IMPORT_CALLS = ("import_module", "__import__")
# "pkg.mod" or "pkg.mod:attr" (an entry string); a bare "arena" is too often a plain word (a dict key, a label)
MODULE_STRING = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?::[\w.]+)?$|^[A-Za-z_]\w*:[\w.]+$")


def import_strings(tree: ast.AST, mods) -> list[str]:
    """Project modules a file names in strings: every constant argument of importlib.import_module / __import__
    (bare names included), and string constants of the form "pkg.mod", "pkg.mod:attr" or "pkg.mod.attr" whose
    module is one of `mods` (a dotted one: "arena.x" is not read as the package arena)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            fn = node.func
            called = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
            if called in IMPORT_CALLS:
                for arg in node.args[:1]:
                    text = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else ""
                    while text and text not in mods:
                        text = text.rpartition(".")[0]
                    out += [text] if text else []
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE_STRING.match(node.value):
            module = node.value.partition(":")[0]
            out += [m for m in (module, module.rpartition(".")[0]) if m in mods and "." in m][:1]
    return out


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the project's modules it imports (anywhere in the file), or names in an import string.
    `from pkg import name` is an edge to pkg.name when that is a module, else to pkg."""
    mods = sources(root)
    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in mods.items():
        is_pkg = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"))
        edges[name].update(m for m in import_strings(tree, mods) if m != name)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_pkg else name.split(".")[:-1]
                    base = base[:len(base) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in mods else module for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in mods:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges[name].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    nodes = set(edges) | {w for ws in edges.values() for w in ws}
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(frozenset(comp))
    return found


def package_graph(edges: dict[str, set[str]], level: int) -> dict[str, set[str]]:
    """Edges between packages: top-level ones (level 1) or sibling subpackages such as eval_backend.scoring
    and eval_backend.submissions (level 2; modules at a package's root are left out at that level)."""
    out: dict[str, set[str]] = defaultdict(set)
    for a, targets in edges.items():
        for b in targets:
            pa, pb = a.split(".")[:level], b.split(".")[:level]
            if len(pa) == len(pb) == level and pa != pb and a.count(".") >= level and b.count(".") >= level:
                out[".".join(pa)].add(".".join(pb))
            elif level == 1 and pa[0] != pb[0]:
                out[pa[0]].add(pb[0])
    return out


def test_no_import_circle_between_files():
    assert cycles(import_graph(ROOT)) == []


def test_no_import_circle_between_packages():
    edges = import_graph(ROOT)
    assert cycles(package_graph(edges, 1)) == []
    assert cycles(package_graph(edges, 2)) == []
    assert upward_from_eval_backend(edges) == []


def upward_from_eval_backend(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """eval_backend's edges to an upper module (by an import or an import string)."""
    return sorted((a, b) for a, bs in edges.items() if a.split(".")[0] == "eval_backend" for b in bs
                  if b.split(".")[0] in ("arena", "leaderboard", "space_shell", "app", "app_context"))


# The layers, lowest first: a module imports its own layer or lower ones only. eval_backend evaluates; space_shell
# serves the web app; the arena's folders go from its pure core up to its Gradio tab; the leaderboard and the app
# sit on top. (arena.config: the arena's settings, read by its tables and services.)
LAYERS = ("eval_backend", "space_shell", "arena.core", "arena.config", "arena.tables", "arena.services", "arena.web",
          "arena.ui", "arena", "leaderboard", "app_context", "app")


def layer(module: str) -> int:
    return max(i for i, name in enumerate(LAYERS) if module == name or module.startswith(name + "."))


def test_every_import_goes_down_the_layers():
    edges = import_graph(ROOT)
    assert sorted((a, b) for a, bs in edges.items() for b in bs if layer(b) > layer(a)) == []


def test_the_import_check_catches_a_circle_inside_a_function(tmp_path):
    for pkg, body in (("eval_backend", "def f():\n    from arena import x\n"), ("arena", "from eval_backend import y\n")):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / "eval_backend" / "y.py").write_text("def f():\n    from arena import x\n")
    (tmp_path / "arena" / "x.py").write_text("from eval_backend import y\n")
    (tmp_path / "leaderboard").mkdir()
    edges = import_graph(tmp_path)
    assert edges["eval_backend.y"] == {"arena.x"} and edges["arena.x"] == {"eval_backend.y"}
    assert cycles(edges) == [frozenset({"arena.x", "eval_backend.y"})]
    assert cycles(package_graph(edges, 1)) == [frozenset({"arena", "eval_backend"})]


def test_the_import_check_reads_import_strings(tmp_path):
    """A command table's "leaderboard.cli", a plugin default "arena.hand:fn" and importlib.import_module("app")
    are upward edges from eval_backend like imports; a plain word ("arena") and a metric name are not."""
    for pkg in PACKAGES:
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / "app.py").write_text("")
    (tmp_path / "leaderboard" / "cli.py").write_text("")
    (tmp_path / "arena" / "hand.py").write_text("")
    (tmp_path / "eval_backend" / "main.py").write_text(
        'import importlib\n'
        'COMMANDS = {"agreement": ("leaderboard.cli", "help")}\n'
        'DEFAULT = "arena.hand:fn"\n'
        'def load():\n    return importlib.import_module("app")\n')
    (tmp_path / "eval_backend" / "words.py").write_text(
        'ROW = {"arena": "servable", "metric": "audio.delivery_shift", "model": "arena.x"}\n')
    edges = import_graph(tmp_path)
    assert upward_from_eval_backend(edges) == [("eval_backend.main", "app"), ("eval_backend.main", "arena.hand"),
                                               ("eval_backend.main", "leaderboard.cli")]
    assert not edges.get("eval_backend.words")


def is_command_line(module: str) -> bool:
    last = module.split(".")[-1]
    return last.endswith("cli") or last == "__main__"


def test_only_command_lines_import_command_lines():
    """What a command line builds (settings, a scorer's inputs) lives in a module of its own, so the worker and
    the bootstrap do not reach into a CLI module (issue 27: build_settings lived in scoring/cli.py)."""
    edges = import_graph(ROOT)
    assert sorted((a, b) for a, bs in edges.items() for b in bs if is_command_line(b) and not is_command_line(a)) == []


# ---------------------------------------------------------------- short modules
MAX_LINES = 500


def long_files(root: Path) -> list[str]:
    return sorted(f"{p.relative_to(root).as_posix()}: {n}" for p in sources(root).values()
                  if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES)


def test_no_product_file_is_over_500_lines():
    assert long_files(ROOT) == []


# ---------------------------------------------------------------- imports at the top
MAX_DEFERRED_IMPORTS = 40


def deferred_imports(root: Path) -> list[tuple[str, int, str]]:
    """(file, line, text) of every import of a project module inside a function body."""
    ours = set(PACKAGES) | {name[:-3] for name in TOP_FILES}
    out = []
    for module, path in sources(root).items():
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for fn in ast.walk(ast.parse(text)):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                names = ([node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else
                         [a.name for a in node.names] if isinstance(node, ast.Import) else [])
                if (isinstance(node, ast.ImportFrom) and node.level) or any(n.split(".")[0] in ours for n in names):
                    out.append((path.relative_to(root).as_posix(), node.lineno, lines[node.lineno - 1]))
    return sorted(set(out))


def test_project_imports_sit_at_the_top_unless_they_say_why():
    """Issue 27: at most 40 imports of project modules inside functions, each with a `# why` on its line (a heavy
    optional dependency, start-up time, an import order that matters)."""
    deferred = deferred_imports(ROOT)
    assert len(deferred) <= MAX_DEFERRED_IMPORTS, len(deferred)
    assert [d for d in deferred if "# why" not in d[2]] == []
