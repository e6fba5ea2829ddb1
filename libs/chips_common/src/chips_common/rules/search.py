"""Search, as pure functions: the words a search finds, the query, snippets and cursors.

docs/product/messages.md, Search: every word of ``q`` is required and the last is a prefix, so a
search narrows as it is typed; a hit carries a snippet with the match marked; pages follow
a cursor. The index itself is Postgres full-text search with the ``chips_search`` text
search configuration (``simple`` plus ``unaccent``, docs/adr/0028); Postgres splits both
the indexed words and the query's words with the same parser, so this module never
tokenises: it only quotes each word the user typed so that nothing they type can change
the query's structure.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

from chips_common.events.wire import EventJson

# How much of a query we take: enough for any sentence a person types into a search box.
MAX_QUERY_CHARS = 500
MAX_QUERY_WORDS = 32

# The marks ts_headline puts around a match. The indexed words never contain them:
# ``clean_text`` turns every control character but tab and newline into a space, which
# the text search parser reads as a space anyway, so no word changes.
MATCH_START = "\x02"
MATCH_STOP = "\x03"
FRAGMENT_DELIMITER = " … "
HEADLINE_OPTIONS = (
    f"StartSel={MATCH_START}, StopSel={MATCH_STOP}, MaxWords=30, MinWords=12, "
    f'ShortWord=2, MaxFragments=2, FragmentDelimiter="{FRAGMENT_DELIMITER}"'
)

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class SearchProblem(ValueError):
    """A search request that cannot be answered as asked: the field and a sentence."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def clean_text(text: str) -> str:
    """Indexed words without control characters (they are separators to the parser)."""
    return _CONTROL.sub(" ", text)


def _quoted(word: str) -> str:
    # Inside a quoted tsquery operand a backslash escapes the next character and a quote
    # is doubled; escaping both leaves the operand's text exactly what was typed.
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"


def query_words(q: str) -> list[str]:
    """The words of ``q`` a search looks for: split on white space, without the ones that
    hold no letter or digit (punctuation alone finds nothing), in the order typed."""
    return [w for w in clean_text(q).split() if any(ch.isalnum() for ch in w)]


def build_tsquery(q: str) -> str:
    """The text for ``to_tsquery('chips_search', …)``: every word required, the last a prefix.

    Each word is one quoted operand, so ``&``, ``|``, ``!``, ``:*``, parentheses and quotes
    typed by the user are only characters of a word. Postgres then splits an operand the
    way it splits indexed text (``don't`` becomes the phrase ``'don' <-> 't'``), so a word
    is found as it was written.

    Raises:
        SearchProblem: ``q`` is too long, has too many words, or has none.
    """
    if len(q) > MAX_QUERY_CHARS:
        raise SearchProblem("q", f"a search is at most {MAX_QUERY_CHARS} characters")
    words = query_words(q)
    if not words:
        raise SearchProblem("q", "say at least one word to search for")
    if len(words) > MAX_QUERY_WORDS:
        raise SearchProblem("q", f"a search is at most {MAX_QUERY_WORDS} words")
    operands = [_quoted(w) for w in words]
    operands[-1] += ":*"
    return " & ".join(operands)


# --- what a message says, for the index ---------------------------------------------

# The fields of each card that are words somebody may look for (docs/product/messages.md, the
# eleven kinds). ``name[]`` is a list of strings; ``name[].field`` a field of each item.
CARD_WORDS: dict[str, tuple[str, ...]] = {
    "status": ("phase", "verb"),
    "approval": ("action", "preview"),
    "question": ("prompt", "options[].label"),
    "receipt": ("steps[].title", "steps[].summary"),
    "artifact": ("name", "content"),
    "task": ("goal", "constraints[]"),
    "handoff": ("summary", "open_items[]"),
    "checkpoint": ("milestone", "next"),
    "summary": ("outcome", "changed[]", "follow_ups[]"),
}


def _strings(value: Any, path: str) -> Iterable[str]:
    name, _, rest = path.partition(".")
    if name.endswith("[]"):
        items = value.get(name[:-2]) if isinstance(value, dict) else None
        for item in items if isinstance(items, list) else []:
            yield from (_strings(item, rest) if rest else [item] if isinstance(item, str) else [])
        return
    found = value.get(name) if isinstance(value, dict) else None
    if rest:
        yield from _strings(found, rest)
    elif isinstance(found, str):
        yield found


def card_words(event: EventJson) -> str:
    """The words of a message's card, one line per field ('' for text and system)."""
    kind = str(event.get("kind", "text"))
    card = event.get(kind)
    if not isinstance(card, dict):
        return ""
    lines = [s for path in CARD_WORDS.get(kind, ()) for s in _strings(card, path)]
    return clean_text("\n".join(lines))


def message_words(event: EventJson) -> str:
    """A message's own words: its text (a card's caption), '' when it has none."""
    text = event.get("text")
    return clean_text(text) if isinstance(text, str) else ""


def step_words(event: EventJson) -> tuple[str | None, str | None]:
    """What a ``step.log`` says of its step: its title and summary (None: not said again)."""
    title, summary = event.get("title"), event.get("summary")
    return (
        clean_text(title) if isinstance(title, str) else None,
        clean_text(summary) if isinstance(summary, str) else None,
    )


# --- snippets ------------------------------------------------------------------------


class SegmentJson(TypedDict):
    """A stretch of a snippet's words, and whether it is what was searched for."""

    text: str
    match: NotRequired[bool]


def snippet_segments(headline: str) -> list[SegmentJson]:
    """A ts_headline answer as segments, ``{"text": …}`` or ``{"text": …, "match": true}``.

    Segments rather than markup, so no client has to parse (or trust) HTML made from what
    somebody wrote.
    """
    segments: list[SegmentJson] = []
    matched = False
    for part in re.split(f"([{MATCH_START}{MATCH_STOP}])", headline):
        if part == MATCH_START:
            matched = True
        elif part == MATCH_STOP:
            matched = False
        elif part:
            segment: SegmentJson = {"text": part}
            if matched:
                segment["match"] = True
            if segments and segments[-1].get("match", False) == matched:
                segments[-1]["text"] += part
            else:
                segments.append(segment)
    return segments


# --- cursors -------------------------------------------------------------------------


@dataclass(frozen=True)
class CursorScope:
    """What a cursor belongs to: one participant's one search (its query and narrowing)."""

    workspace_id: str
    participant_id: str
    tsquery: str
    space_id: str | None

    def message(self, seq: int) -> bytes:
        parts = (self.workspace_id, self.participant_id, self.tsquery, self.space_id or "")
        return "\x1f".join((*parts, str(seq))).encode()


_MAC_BYTES = 16


def encode_cursor(key: str, scope: CursorScope, seq: int) -> str:
    """An opaque cursor for the page of hits older than ``seq``, signed for ``scope``."""
    mac = hmac.new(key.encode(), scope.message(seq), hashlib.sha256).digest()[:_MAC_BYTES]
    return base64.urlsafe_b64encode(struct.pack(">Q", seq) + mac).decode().rstrip("=")


def decode_cursor(key: str, scope: CursorScope, cursor: str) -> int:
    """The seq a cursor pages before; refuses one this search did not give.

    A cursor only says where a page starts: the spaces searched are the caller's now,
    whatever the cursor says, so even a forged one could never widen what is found. It is
    signed all the same, so a cursor altered, or taken to another search, is told apart.

    Raises:
        SearchProblem: the cursor is malformed, altered, or from another search.
    """
    refused = SearchProblem("cursor", "that cursor was not given by this search")
    if len(cursor) > 64:
        raise refused
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except ValueError:
        raise refused from None
    if len(raw) != 8 + _MAC_BYTES:
        raise refused
    (seq,) = struct.unpack(">Q", raw[:8])
    if seq >= 2**63:
        raise refused
    expected = hmac.new(key.encode(), scope.message(seq), hashlib.sha256).digest()[:_MAC_BYTES]
    if not hmac.compare_digest(expected, raw[8:]):
        raise refused
    return int(seq)
