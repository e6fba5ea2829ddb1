"""Starting the whole Chips stack for a bench: this tree's code, or another version's.

A bench's ``--versus`` (or ``--tree``) names an exported tree of another version (``git
archive HEAD | tar -x -C DIR``): the stack's services then run that tree's packages, its
``libs/*/src`` and ``services/*/src`` on PYTHONPATH, ahead of this tree's editable
installs. Used by bench/fastpath.py, bench/idle.py and bench/calls.py.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from chips_devstack.stack import Stack, local_stack


def tree_path(tree: str | Path) -> list[str]:
    """The packages of an exported tree, its libs/*/src and services/*/src, sorted."""
    root = Path(tree)
    return [str(p) for p in sorted([*root.glob("libs/*/src"), *root.glob("services/*/src")])]


def stack_env(env: dict[str, str], tree: str = "", first: Sequence[str] = ()) -> dict[str, str]:
    """``env`` with PYTHONPATH set to ``first`` and then the tree's packages, when there is
    a tree or a ``first``; else ``env`` as it is (the services run this tree's code)."""
    if not tree and not first:
        return dict(env)
    return {**env, "PYTHONPATH": ":".join([*first, *(tree_path(tree) if tree else [])])}


@contextlib.contextmanager
def bench_stack(
    env: dict[str, str],
    tree: str = "",
    *,
    prefix: str = "chips-bench-",
    first: Sequence[str] = (),
) -> Iterator[Stack]:
    """The whole system on free ports, one gateway, with ``env`` (see ``stack_env`` for
    ``tree`` and ``first``); stopped on the way out."""
    with local_stack(prefix=prefix, gateways=1, env=stack_env(env, tree, first)) as stack:
        yield stack


def service_pids(stack: Stack) -> dict[str, int]:
    """The pid of each process the stack started, by name (``infra-`` dropped), but
    Redis's."""
    return {
        n.removeprefix("infra-"): p.pid
        for n, p in stack.procs.items()
        if n != "infra-redis" and p.popen is not None
    }
