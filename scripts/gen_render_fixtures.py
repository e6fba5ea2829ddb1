"""Write docs/protocol/render-fixtures.json: turns' contexts and rooms, with the words the
Python SDK renders for them.

@chipschat/protocol (web/packages/protocol) renders the same cases and must give the same
text byte for byte (its test reads this file); ``--check`` exits 1 when the file is not
what the SDK renders now (tests/docs runs it).

    .venv/bin/python scripts/gen_render_fixtures.py [--check]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from chips_sdk.render import note_without_rules, render_context, render_room_note

OUT = Path(__file__).resolve().parent.parent / "docs" / "protocol" / "render-fixtures.json"

MAYA = {"participant_id": "per_maya", "name": "Maya Chen", "kind": "person", "handle": "@maya"}
SCOUT = {"participant_id": "agt_scout", "name": "Scout", "kind": "agent", "handle": "@Scout"}
SCRIBE = {"participant_id": "agt_scribe", "name": "Scribe", "kind": "agent"}
OLD = {"participant_id": "hns_old", "name": "Old Harness", "kind": "harness"}

CONTEXTS: list[dict[str, Any] | None] = [
    None,
    {},
    {"lines": [], "files": []},
    {
        "lines": [
            {"kind": "said", "from": {"name": "Maya Chen"}, "text": "Can you check the build?"},
            {"kind": "said", "from": {"name": "Scout"}, "text": "On it.", "edited": True},
            {"kind": "joined", "from": {"name": "Scribe"}},
            {"kind": "left", "from": {"name": "Ravi"}},
            {"kind": "renamed", "from": {"name": "Maya Chen"}, "title": "Release 2.1"},
            {"kind": "archived", "from": {"name": "Maya Chen"}},
            {"kind": "unarchived", "from": {"name": "Maya Chen"}},
        ]
    },
    {
        "truncated": True,
        "lines": [
            {"kind": "said", "from": {"name": "Maya Chen"}, "text": ""},
            {"kind": "said", "from": None, "text": "a line from nobody named"},
            {"kind": "said", "from": {"name": "Ravi"}, "text": "ok  ", "transcript": "okay"},
            {"kind": "pinned", "from": {"name": "Ravi"}, "text": "the plan"},
            {"kind": "pinned", "from": {"name": "Ravi"}},
            {"from": {"name": "Ravi"}},
        ],
    },
    {
        "lines": [{"kind": "said", "from": {"name": "Zoë"}, "text": "Ünïcode — “quotes” ✓"}],
        "files": [
            {"name": "plan.pdf", "version": 3, "url": "https://chips.example/f/1"},
            {"name": "notes.odt", "version": 1},
            {"name": "draft.txt", "url": "https://chips.example/f/2"},
            {"version": 2},
        ],
    },
]

ROOMS: list[tuple[dict[str, Any] | None, str]] = [
    (None, "agt_scout"),
    ({}, "agt_scout"),
    ({"notes": {"agt_scout": "Maya asked you to check the build. In this space: …"}}, "agt_scout"),
    ({"members": [MAYA, SCOUT]}, "agt_scout"),
    ({"members": [SCOUT]}, "agt_scout"),
    ({"members": []}, "agt_scout"),
    ({"members": [MAYA, SCRIBE]}, "agt_scout"),
    ({"members": [MAYA, SCOUT, SCRIBE, OLD]}, "agt_scout"),
    ({"members": [MAYA, {**SCOUT, "lead": True}, SCRIBE]}, "agt_scout"),
    ({"members": [MAYA, SCOUT, {**SCRIBE, "lead": True}]}, "agt_scout"),
    (
        {
            "members": [MAYA, SCOUT, SCRIBE],
            "rules": {"agt_scout": "Only answer when asked."},
            "notes": {"agt_scout": "In this space: Maya Chen. Only answer when asked."},
        },
        "agt_scout",
    ),
]


def fixtures() -> dict[str, Any]:
    return {
        "contexts": [{"context": c, "text": render_context(c)} for c in CONTEXTS],
        "rooms": [
            {
                "room": room,
                "taker": taker,
                "note": render_room_note(room, taker),
                "without_rules": note_without_rules(room, taker),
            }
            for room, taker in ROOMS
        ],
    }


def main() -> None:
    text = json.dumps(fixtures(), indent=2, ensure_ascii=False) + "\n"
    if "--check" in sys.argv:
        if not OUT.exists() or OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} is stale: run scripts/gen_render_fixtures.py", file=sys.stderr)
            sys.exit(1)
        print(f"{OUT.name} is current")
        return
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
