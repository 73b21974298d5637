"""The package uses Lightning through its public API only: no import of a private Lightning name or module, no
override or use of a private method or attribute of a Lightning class it extends, no private attribute of another
object, and none of the loop state that Lightning keeps for itself (``trainer.fit_loop``, a checkpoint's ``loops``).
Where tacred needs such state (how far a fit had trained), it keeps its own (``tacred_resume`` in the checkpoint)."""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap

from tests.test_layout import MODULES

LIGHTNING = ("lightning", "pytorch_lightning", "lightning_fabric")

# Lightning's loops and the checkpoint keys that hold their state: internal (the loops are not an extension point
# since Lightning 2.0), though not spelled with a leading underscore
LOOP_INTERNALS = {"fit_loop", "validate_loop", "test_loop", "predict_loop", "epoch_loop", "val_loop", "batch_progress",
                  "epoch_progress", "scheduler_progress", "optimizer_progress", "loops", "_checkpoint_connector"}

# private attributes of other libraries' objects that the package reads, each with the reason (none of Lightning)
FOREIGN = {
    "_values": "torch: the values of an uncoalesced sparse gradient, in place (tacred/training/clipping.py)",
    "_attn_implementation": "transformers: the attention implementation of a config built without loading weights",
}


# packages of optional extras (pyproject's optional-dependencies) that `make test` does not install
OPTIONAL_EXTRAS = {"ray"}


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def is_lightning(module: str) -> bool:
    return module.split(".")[0] in LIGHTNING


def own_names(trees: list[ast.AST]) -> set[str]:
    """Every name the package defines: functions, classes, assigned names and attributes, imports."""
    names: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.alias):
                names.add((node.asname or node.name).split(".")[0])
            elif isinstance(node, ast.arg):
                names.add(node.arg)
    return names


def on_self(node: ast.Attribute) -> bool:
    value = node.value
    return (isinstance(value, ast.Name) and value.id in ("self", "cls")) or (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super")


def private_uses(source: str, defined: set[str]) -> list[str]:
    """The private Lightning names ``source`` uses that need no import of it to see: imports of private Lightning
    modules or names, Lightning's loop state (attributes or checkpoint keys), and private attributes of objects
    other than ``self`` that the package does not define itself (``defined``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            found += [f"{line}: import {a.name}" for a in node.names
                      if is_lightning(a.name) and any(private(p) for p in a.name.split("."))]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and is_lightning(node.module or ""):
            if any(private(p) for p in (node.module or "").split(".")):
                found.append(f"{line}: from {node.module} import ...")
            found += [f"{line}: from {node.module} import {a.name}" for a in node.names if private(a.name)]
        elif isinstance(node, ast.Attribute):
            if node.attr in LOOP_INTERNALS:
                found.append(f"{line}: .{node.attr} (Lightning's loop state)")
            elif private(node.attr) and not on_self(node) and node.attr not in defined and node.attr not in FOREIGN:
                found.append(f"{line}: .{node.attr} (a private attribute the package does not define)")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                node.value in LOOP_INTERNALS or any(f"{name}." in node.value for name in LOOP_INTERNALS)):
            found.append(f"{line}: {node.value!r} (a key of Lightning's loop state)")
    return found


def lightning_privates(cls: type) -> set[str]:
    """The private methods and attributes of the Lightning classes in ``cls``'s ancestry (class attributes, and the
    ``self._x`` their code sets or reads)."""
    names: set[str] = set()
    for base in cls.__mro__:
        if not is_lightning(base.__module__):
            continue
        names |= {n for n in vars(base) if private(n)}
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(base)))
        except (OSError, TypeError):
            continue
        names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and on_self(n) and private(n.attr)}
    return names


def own_privates(cls: type) -> dict[str, str]:
    """The private names that the classes of ``cls``'s ancestry below its first Lightning one define or use on
    ``self``, with how."""
    names: dict[str, str] = {}
    for base in cls.__mro__:
        if is_lightning(base.__module__):
            break
        tree = ast.parse(textwrap.dedent(inspect.getsource(base)))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and private(node.name):
                names.setdefault(node.name, f"{base.__name__} defines {node.name}()")
            elif isinstance(node, ast.Attribute) and on_self(node) and private(node.attr):
                names.setdefault(node.attr, f"{base.__name__} uses self.{node.attr}")
    return names


def overridden_privates(cls: type) -> list[str]:
    """How ``cls`` (a subclass of a Lightning class) overrides or uses the private names of its Lightning base."""
    theirs = lightning_privates(cls)
    return [how for name, how in own_privates(cls).items() if name in theirs]


def imports_lightning(tree: ast.AST) -> bool:
    return any(isinstance(n, ast.Import) and any(is_lightning(a.name) for a in n.names)
               or isinstance(n, ast.ImportFrom) and n.level == 0 and is_lightning(n.module or "") for n in ast.walk(tree))


def package_classes() -> list[type]:
    """The classes of every module; a module whose optional extra is not installed (``tacred[ray]``'s stages, which
    ``make test`` does not install) is left out only when it does not import Lightning, so holds no subclass of it
    (its source is still read by :func:`private_uses`)."""
    classes = []
    for name, path in MODULES.items():
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name not in OPTIONAL_EXTRAS or imports_lightning(ast.parse(path.read_text(encoding="utf-8"))):
                raise
            continue
        classes += [c for c in vars(module).values() if inspect.isclass(c) and c.__module__ == name]
    return classes


def test_the_package_uses_no_private_lightning_name():
    trees = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in MODULES.items()}
    defined = own_names(list(trees.values()))
    found = {name: private_uses(MODULES[name].read_text(encoding="utf-8"), defined) for name in trees}
    for cls in package_classes():
        if any(is_lightning(base.__module__) for base in cls.__mro__):
            found[cls.__module__] += overridden_privates(cls)
    found = {name: uses for name, uses in found.items() if uses}
    assert not found, f"private Lightning use (take a public hook or keep the state in tacred's own field): {found}"


def test_the_rule_catches_an_override_of_a_private_cli_method_and_lightning_loop_state():
    """The two uses the rule exists for: LightningCLI._parse_ckpt_path overridden, and the fit loop's batch progress
    read from a trainer or from a checkpoint."""
    from lightning.pytorch.cli import LightningCLI

    class ParsesItsOwn(LightningCLI):
        def _parse_ckpt_path(self) -> None:
            pass

    class ReadsOnSelf(LightningCLI):
        def before_instantiate_classes(self) -> None:
            self._add_configure_optimizers_method_to_model(None)

    assert overridden_privates(ParsesItsOwn) == ["ParsesItsOwn defines _parse_ckpt_path()"]
    assert overridden_privates(ReadsOnSelf) == ["ReadsOnSelf uses self._add_configure_optimizers_method_to_model"]

    loop_state = textwrap.dedent("""
        def batches(trainer, checkpoint):
            done = trainer.fit_loop.epoch_loop.batch_progress.current.ready
            saved = checkpoint["loops"]["fit_loop"]["epoch_loop.batch_progress"]
            return done, saved, trainer._checkpoint_connector, trainer._accelerator_connector
        """)
    found = private_uses(loop_state, defined=set())
    assert [use.split(": ", 1)[1] for use in found if use.startswith("3:")] == [
        ".batch_progress (Lightning's loop state)", ".epoch_loop (Lightning's loop state)",
        ".fit_loop (Lightning's loop state)"]
    assert {use.split(": ", 1)[1] for use in found if use.startswith("4:")} == {
        "'loops' (a key of Lightning's loop state)", "'fit_loop' (a key of Lightning's loop state)",
        "'epoch_loop.batch_progress' (a key of Lightning's loop state)"}
    assert {use.split(": ", 1)[1] for use in found if use.startswith("5:")} == {
        "._checkpoint_connector (Lightning's loop state)",
        "._accelerator_connector (a private attribute the package does not define)"}
    imports = "from lightning.pytorch.trainer.connectors.checkpoint_connector import _CheckpointConnector\n" \
              "from lightning.pytorch.utilities.types import _PATH\nimport lightning.pytorch._graveyard\n"
    assert len(private_uses(imports, defined=set())) == 3

