"""Who may post which kind of message (docs/product/messages.md, the table of kinds).

Text and a hand-off are anyone's. The cards that report a harness's work (status,
approval, question, receipt, artifact, checkpoint, summary) are a harness's. A task is
given by a person. A system line is Chips's own: nobody posts one.
"""

from __future__ import annotations

HARNESS_ONLY = frozenset(
    {"status", "approval", "question", "receipt", "artifact", "checkpoint", "summary"}
)
PERSON_ONLY = frozenset({"task"})
ARTICLE = {"approval": "an", "artifact": "an"}

# What a harness posts to say it has nothing to say (docs/product/websocket.md, What a harness
# hears).
NO_REPLY = "NO_REPLY"


def refusal(kind: str, sender_kind: str) -> str | None:
    """Why a sender of ``sender_kind`` may not post a message of ``kind``, or None."""
    a = ARTICLE.get(kind, "a")
    if kind == "system":
        return "a system line is Chips's own; nobody posts one"
    if kind in HARNESS_ONLY and sender_kind != "harness":
        return f"{a} {kind} card is a harness's to post"
    if kind in PERSON_ONLY and sender_kind != "person":
        return f"{a} {kind} is given by a person"
    return None


def passes(kind: str, text: str | None, sender_kind: str) -> bool:
    """Whether a post is a harness passing its turn: ``NO_REPLY`` and nothing else.

    A person's words are theirs, whatever they say.
    """
    return sender_kind == "harness" and kind == "text" and (text or "").strip() == NO_REPLY
