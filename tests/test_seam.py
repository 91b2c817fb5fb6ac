"""The seam between the core and JetStream (docs/design.md, internal.py):
JetStream reaches the core only through ``internal.Messaging``, never a
``.server`` back-pointer, and the core imports JetStream in one place,
``internal.jetstream()``. Read off the sources' syntax trees, so a
``.server`` in a JetStream module or a new ``from .jetstream ...`` in a
core module fails here. Inside JetStream, a folder per concept with the
arrows one way: the stores (``jetstream/store/``) import no stream, consumer
or API module. natslab only: it is about natslab's layout, not a server
behaviour."""

from __future__ import annotations

import ast
from pathlib import Path

import natslab.server as server_pkg

SERVER = Path(server_pkg.__file__).parent
JETSTREAM = SERVER / "jetstream"


def _trees(root: Path, recursive: bool):
    for path in sorted(root.rglob("*.py") if recursive else root.glob("*.py")):
        yield path, ast.parse(path.read_text(), str(path))


def _core_files():
    for path, tree in _trees(SERVER, True):
        if JETSTREAM not in path.parents:
            yield path, tree


def test_jetstream_never_reaches_for_the_server():
    found = [f"{path.relative_to(JETSTREAM)}:{node.lineno}"
             for path, tree in _trees(JETSTREAM, True)
             for node in ast.walk(tree)
             if isinstance(node, ast.Attribute) and node.attr in ("server", "srv")]
    assert found == []


def _jetstream_imports(path: Path, tree: ast.Module) -> list[int]:
    """Lines of ``path`` (a core module) that import the JetStream package
    or one of its modules."""
    lines = []
    pkg = path.parent.relative_to(SERVER.parent).parts  # e.g. ("server",) or ("server", "monitor")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(pkg[: len(pkg) - node.level + 1])
                target = base + (node.module.split(".") if node.module else [])
                names = [target + [a.name] for a in node.names] if not node.module else [target]
            else:
                names = [(node.module or "").split(".")]
            if any(n[:2] == ["server", "jetstream"] or n[:3] == ["natslab", "server", "jetstream"] for n in names):
                lines.append(node.lineno)
        elif isinstance(node, ast.Import):
            if any(a.name.startswith("natslab.server.jetstream") for a in node.names):
                lines.append(node.lineno)
    return lines


def test_the_core_imports_jetstream_in_one_place():
    found = {path.relative_to(SERVER).as_posix(): lines
             for path, tree in _core_files() if (lines := _jetstream_imports(path, tree))}
    assert list(found) == ["internal.py"], found
    assert len(found["internal.py"]) == 1


def test_account_internal_is_gone():
    assert not (SERVER / "account_internal.py").exists()


def _imported(path: Path, tree: ast.Module) -> set[tuple[str, ...]]:
    """The modules (or packages) ``path`` imports, as dotted paths under
    ``natslab``, relative imports resolved; type-checking imports included."""
    pkg = ("natslab",) + path.parent.relative_to(SERVER.parent).parts
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = pkg[: len(pkg) - node.level + 1] if node.level else ()
            mod = base + (tuple(node.module.split(".")) if node.module else ())
            out.add(mod)
            out.update(mod + (a.name,) for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(tuple(a.name.split(".")) for a in node.names)
    return out


def test_jetstream_is_in_folders_by_concept():
    folders = {p.name for p in JETSTREAM.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == {"api", "stream", "consumer", "store"}
    assert (JETSTREAM / "store" / "file" / "__init__.py").exists()
    # the old flat modules are gone, with no shim left behind
    assert not [p.name for p in JETSTREAM.glob("*.py")
                if p.stem in ("api", "stream", "consumer", "store", "filestore", "memstore", "acks", "delivery")
                or p.stem.startswith("filestore_")]


def test_the_stores_import_no_stream_consumer_or_api():
    up = [("natslab", "server", "jetstream", n) for n in ("stream", "consumer", "api", "jetstream")]
    found = {path.relative_to(JETSTREAM).as_posix(): sorted(".".join(m) for m in mods if any(m[:4] == u for u in up))
             for path, tree in _trees(JETSTREAM / "store", True)
             if (mods := _imported(path, tree))}
    assert {k: v for k, v in found.items() if v} == {}
