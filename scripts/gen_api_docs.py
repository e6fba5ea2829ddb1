"""Write the gateway's OpenAPI and AsyncAPI documents to docs/protocol/.

The documents the gateway serves at ``/openapi.json`` and ``/asyncapi.json``, built from
its routes and types without starting it, so a client can be generated from files in
the repository: the people's app generates its protocol types from them
(``web/scripts/gen-types.mjs`` into ``web/src/gen/api.ts``). A test checks the files are
current and that the running gateway serves the same documents.

Usage::

    python scripts/gen_api_docs.py           # write the files
    python scripts/gen_api_docs.py --check   # exit 1 and name the stale files
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "protocol"


@functools.cache
def documents() -> dict[str, dict[str, Any]]:
    """Each document by its file name, built from the gateway's app."""
    from chips_gateway import asyncapi, openapi
    from chips_gateway.app import build_app
    from chips_gateway.config import GatewaySettings

    logging.disable(logging.WARNING)  # "the app is not built" is no concern of the docs
    app = build_app(GatewaySettings())
    return {"openapi.json": openapi.document(app), "asyncapi.json": asyncapi.document(app)}


def render(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a file is stale")
    parser.add_argument("out", nargs="?", type=Path, default=OUT)
    args = parser.parse_args(argv)
    stale = []
    for name, doc in documents().items():
        path = args.out / name
        text = render(doc)
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path))
        else:
            path.write_text(text)
    if stale:
        print("stale (run python scripts/gen_api_docs.py):", *stale, sep="\n  ", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
