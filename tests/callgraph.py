"""Which functions of bot/ and kb_index/ a function reaches, read from the source with `ast`.

For tests/test_docs.py: the docs' walk through the code (docs/contributing/life-of-a-question.md) must name steps in
the order the code takes them. Static, by the types the code writes down:
`self.m` is the class's own method; `self.part.m` and `part.m` are the method
of the type `part` is annotated with (a dataclass field, a parameter, an
assignment in `__init__`) or constructed as; a bare name is what the module
defines or imports under it. A method of a part of unknown type
(`self.part.m`) is reached only when one class alone defines `m`: guessing
among several would join steps that never meet; of anything else (a regex,
a local of unknown type) not at all. A reference counts like a
call: a handler put in a table or passed to `within_budget` is reached too.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path

PACKAGES = ("bot", "kb_index")


def _own_nodes(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterable[ast.AST]:
    """The nodes of `fn`'s body, not those of functions defined inside it (they are functions of
    their own: the outer one refers to them by name, and their calls are not the outer's sequence)."""
    todo: list[ast.AST] = [*fn.args.defaults, *fn.body]
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            todo.extend(ast.iter_child_nodes(node))


class CallGraph:
    def __init__(self, root: Path):
        self.root = root
        self.edges: dict[str, set[str]] = defaultdict(set)  # "bot/x.py:Class.method" -> what it refers to
        # What it calls, in the order it calls them: (line, column, callee).
        self.refs: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
        self.by_method: dict[str, set[str]] = defaultdict(set)  # "method" -> every "file:Class.method"
        self.defined: set[str] = set()
        modules = [p for package in PACKAGES for p in sorted((root / package).rglob("*.py"))]
        self._trees = {self._file(p): ast.parse(p.read_text()) for p in modules}
        for file, tree in self._trees.items():
            self._collect(file, tree)
        for file, tree in self._trees.items():
            self._link(file, tree)

    def _file(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    @staticmethod
    def _functions(tree: ast.Module) -> Iterable[tuple[str | None, ast.FunctionDef | ast.AsyncFunctionDef]]:
        """(class or None, function) for every function, methods and the functions defined inside
        others too (Bolt listeners are closures of `register_events`), each under its own name."""
        def nested(fn: ast.AST) -> Iterable[ast.FunctionDef | ast.AsyncFunctionDef]:
            for node in ast.walk(fn):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    yield node

        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                yield from ((None, fn) for fn in nested(node))
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        yield from ((node.name, fn) for fn in nested(item))

    def _collect(self, file: str, tree: ast.Module) -> None:
        for owner, fn in self._functions(tree):
            name = f"{file}:{owner}.{fn.name}" if owner else f"{file}:{fn.name}"
            self.defined.add(name)
            if owner:
                self.by_method[fn.name].add(name)

    @cached_property
    def _module_files(self) -> dict[str, str]:
        return {f.removesuffix(".py").removesuffix("/__init__").replace("/", "."): f for f in self._trees}

    def _imports(self, file: str, tree: ast.Module) -> dict[str, str]:
        """Bare names of the module -> "file:name" (its own functions and classes, what it imports,
        followed through a package's re-exports), or "module:file" for an imported module."""
        names = {d.split(":")[1]: d for d in self.defined if d.startswith(file + ":") and "." not in d.split(":")[1]}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.ImportFrom) and node.module in self._module_files):
                continue
            for alias in node.names:
                module = f"{node.module}.{alias.name}"
                if module in self._module_files:  # from bot.slack import replies
                    names[alias.asname or alias.name] = f"module:{self._module_files[module]}"
                else:
                    names[alias.asname or alias.name] = self._defining(self._module_files[node.module], alias.name)
        return names

    def _defining(self, file: str, name: str, depth: int = 3) -> str:
        """Where `name`, imported from `file`, is defined: a package's __init__ re-exports it."""
        if f"{file}:{name}" in self.defined or depth == 0 or file not in self._trees:
            return f"{file}:{name}"
        for node in ast.walk(self._trees[file]):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module in self._module_files
                and any((alias.asname or alias.name) == name for alias in node.names)
            ):
                return self._defining(self._module_files[node.module], name, depth - 1)
        return f"{file}:{name}"

    @staticmethod
    def _type_name(annotation: ast.expr | None) -> str | None:
        """`Pipeline`, `Pipeline | None`, `"Pipeline"` -> "Pipeline"; anything else -> None."""
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            annotation = ast.parse(annotation.value, mode="eval").body
        if isinstance(annotation, ast.BinOp):  # X | None
            return CallGraph._type_name(annotation.left)
        return annotation.id if isinstance(annotation, ast.Name) else None

    def _attribute_types(self, cls: ast.ClassDef) -> dict[str, str]:
        """self.<attr> -> the name of its type, from the class body and __init__."""
        types: dict[str, str] = {}
        for item in cls.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                if (t := self._type_name(item.annotation)) is not None:
                    types[item.target.id] = t
            elif isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == "__init__":
                params = self._param_types(item)
                for node in ast.walk(item):
                    target, value, annotation = None, None, None
                    if isinstance(node, ast.AnnAssign):
                        target, value, annotation = node.target, node.value, node.annotation
                    elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                        target, value = node.targets[0], node.value
                    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"):
                        continue
                    t = self._type_name(annotation) or self._value_type(value, params)
                    if t is not None:
                        types[target.attr] = t
        return types

    def _param_types(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, str]:
        args = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
        return {a.arg: t for a in args if (t := self._type_name(a.annotation)) is not None}

    @staticmethod
    def _value_type(value: ast.expr | None, known: dict[str, str]) -> str | None:
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            return value.func.id  # x = Pipeline(...)
        if isinstance(value, ast.Name):
            return known.get(value.id)  # self.x = x, x annotated
        return None

    def _method_of(self, type_name: str, method: str, names: dict[str, str]) -> set[str]:
        cls = names.get(type_name)
        if cls is None:
            return set()
        # The class's own, or inherited, or a Protocol's implementations: the methods of that
        # name in the class's file (backends.py holds Backend and the classes that implement it).
        file = cls.split(":")[0]
        return {d for d in self.by_method.get(method, ()) if d.startswith(file + ":")}

    def _classes(self, tree: ast.Module) -> dict[str, ast.ClassDef]:
        return {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}

    def _link(self, file: str, tree: ast.Module) -> None:
        names = self._imports(file, tree)
        classes = self._classes(tree)
        for owner, fn in self._functions(tree):
            caller = f"{file}:{owner}.{fn.name}" if owner else f"{file}:{fn.name}"
            attrs = self._attribute_types(classes[owner]) if owner else {}
            local = self._param_types(fn)
            for node in _own_nodes(fn):
                if (
                    isinstance(node, ast.Assign)
                    and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name)
                    and (t := self._value_type(node.value, local)) is not None
                ):
                    local[node.targets[0].id] = t
            # A call happens when its arguments have been evaluated: in f(g(x)), g comes first.
            # So a called name is placed where its call ends, a mere reference where it stands.
            nodes = list(_own_nodes(fn))
            called_at = {
                id(node.func): (node.end_lineno or node.lineno, node.end_col_offset or 0)
                for node in nodes
                if isinstance(node, ast.Call)
            }
            # Handed to a call (asyncio.to_thread(self.retrieve, ...)): run there and then, too.
            passed = {id(arg) for node in nodes if isinstance(node, ast.Call) for arg in node.args}
            for node in nodes:
                targets: set[str] = set()
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):  # defined here to be called
                    targets = {f"{file}:{owner}.{node.name}" if owner else f"{file}:{node.name}"}
                elif isinstance(node, ast.Name) and node.id in names:
                    targets = {names[node.id]}
                elif isinstance(node, ast.Attribute):
                    targets = self._attribute_targets(file, owner, node, attrs, local, names)
                self.edges[caller].update(targets)
                # Only what runs here has an order; a table of handlers (the CLI's commands) has none.
                if targets and (id(node) in called_at or id(node) in passed):
                    line, column = called_at.get(id(node), (node.lineno, node.col_offset))
                    self.refs[caller] += [(line, column, t) for t in targets]

    def _attribute_targets(
        self, file: str, owner: str | None, node: ast.Attribute, attrs: dict[str, str], local: dict[str, str],
        names: dict[str, str],
    ) -> set[str]:
        receiver = node.value
        if isinstance(receiver, ast.Name) and receiver.id == "self" and owner:
            own = f"{file}:{owner}.{node.attr}"
            return {own} if own in self.defined else set()
        if isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) and receiver.value.id == "self":
            if receiver.attr in attrs:
                return self._method_of(attrs[receiver.attr], node.attr, names)
            # A part handed in without its type written down: the one class with such a method.
            candidates = self.by_method.get(node.attr, set())
            return set(candidates) if len(candidates) == 1 else set()
        if isinstance(receiver, ast.Name):
            if receiver.id in local:
                return self._method_of(local[receiver.id], node.attr, names)
            target = names.get(receiver.id, "")
            if target.startswith("module:"):  # replies.answer_message
                return {self._defining(target.removeprefix("module:"), node.attr)} & self.defined
            if target:  # Class.method
                return self._method_of(receiver.id, node.attr, names)
        return set()  # a regex, a dict, a module of the standard library: nothing of ours

    def resolve(self, file: str, name: str) -> set[str]:
        """The functions `name` ("f", "Class", "Class.method") of `file` stands for; a class stands for its methods,
        a method of a class that inherits it for the base's (any method of that name in the file)."""
        exact = f"{file}:{name}"
        if exact in self.defined:
            return {exact}
        found = {d for d in self.defined if d.startswith(f"{exact}.")}  # a class: its methods
        if not found and "." in name:
            method = name.rpartition(".")[2]
            found = {d for d in self.by_method.get(method, ()) if d.startswith(file + ":")}
        return found

    def reached(self, source: str) -> frozenset[str]:
        """Every function `source` reaches through the calls it makes, transitively, itself included."""
        if source not in self._reached:
            seen, todo = {source}, [source]
            while todo:
                for callee in self.edges.get(todo.pop(), ()):
                    if callee not in seen:
                        seen.add(callee)
                        todo.append(callee)
            self._reached[source] = frozenset(seen)
        return self._reached[source]

    @cached_property
    def _reached(self) -> dict[str, frozenset[str]]:
        return {}

    def reaches(self, sources: set[str], targets: set[str]) -> bool:
        """Does a function of `sources` reach one of `targets` (transitively)?"""
        return any(self.reached(s) & targets - {s} for s in sources)

    def comes_before(self, first: set[str], then: set[str]) -> bool:
        """Does some function call what leads to `first` and, after it, what leads to `then`?

        How a walk goes on from a step whose function returns to its caller:
        `Pipeline.answer` retrieves, then builds the prompt, then generates.
        "Leads to" one and not the other: a helper called twice that leads to
        both (the regeneration) says nothing about their order.
        """
        for refs in self.refs.values():
            seen_first = False
            for _, _, callee in sorted(refs):
                reached = self.reached(callee)
                to_first, to_then = bool(reached & first), bool(reached & then)
                if seen_first and to_then and not to_first:
                    return True
                seen_first = seen_first or (to_first and not to_then)
        return False
