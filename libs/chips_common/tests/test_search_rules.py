"""Search's pure rules: the tsquery built from what a person types, snippets, cursors,
and the words of each kind of message (docs/product/messages.md, Search; docs/adr/0028)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chips_common.rules.search import (
    MATCH_START,
    MATCH_STOP,
    MAX_QUERY_WORDS,
    CursorScope,
    SearchProblem,
    build_tsquery,
    card_words,
    clean_text,
    decode_cursor,
    encode_cursor,
    message_words,
    query_words,
    snippet_segments,
    step_words,
)

pytestmark = pytest.mark.unit

KEY = "test-signing-key"
SCOPE = CursorScope("ws_1", "usr_me", "'invoice':*", None)

# One quoted tsquery operand: a quote, then escaped characters or anything but a quote or
# a backslash, then a quote. This is the whole grammar build_tsquery may produce.
OPERAND = r"'((?:\\\\|\\'|''|[^'\\])*)'"


def operands(tsquery: str) -> list[tuple[str, bool]]:
    """Parse build_tsquery's output back into (word, is_prefix), or fail the test."""
    found: list[tuple[str, bool]] = []
    rest = tsquery
    while True:
        m = re.match(OPERAND + r"(:\*)?", rest)
        assert m, f"not a quoted operand at {rest!r} in {tsquery!r}"
        word = re.sub(r"\\(.)|''", lambda g: g.group(1) or "'", m.group(1))
        found.append((word, m.group(2) is not None))
        rest = rest[m.end() :]
        if not rest:
            return found
        assert rest.startswith(" & "), f"operands are joined by ' & ': {tsquery!r}"
        rest = rest[3:]


def test_every_word_is_required_and_the_last_is_a_prefix() -> None:
    assert build_tsquery("invoice acme") == "'invoice' & 'acme':*"
    assert build_tsquery("  Zürich  ") == "'Zürich':*"


def test_operators_typed_by_a_person_are_only_characters_of_a_word() -> None:
    built = build_tsquery("a & b | !c :* (d) 'e' \\f")
    assert operands(built) == [
        ("a", False),
        ("b", False),
        ("!c", False),
        ("(d)", False),
        ("'e'", False),
        ("\\f", True),
    ]


def test_punctuation_alone_is_not_a_word() -> None:
    assert query_words("hello , ... world !") == ["hello", "world"]
    with pytest.raises(SearchProblem) as caught:
        build_tsquery(" ... !!! ")
    assert caught.value.field == "q"


def test_an_empty_search_too_many_words_and_too_long_are_refused() -> None:
    for q in ("", "   ", " ".join(["w"] * (MAX_QUERY_WORDS + 1)), "x" * 501):
        with pytest.raises(SearchProblem):
            build_tsquery(q)


def test_control_characters_are_spaces() -> None:
    assert build_tsquery("a\x00b\x02c") == "'a' & 'b' & 'c':*"
    assert clean_text("tab\there\nline\x01x") == "tab\there\nline x"


@given(st.text(max_size=300))
def test_any_text_gives_a_well_formed_query_of_exactly_its_words(q: str) -> None:
    try:
        built = build_tsquery(q)
    except SearchProblem:
        words = query_words(q)
        assert len(q) > 500 or not words or len(words) > MAX_QUERY_WORDS
        return
    parsed = operands(built)
    assert [w for w, _ in parsed] == query_words(q)
    assert [p for _, p in parsed] == [False] * (len(parsed) - 1) + [True]


def test_a_snippet_is_segments_with_the_matches_marked() -> None:
    headline = f"the {MATCH_START}Zürich{MATCH_STOP} office {MATCH_START}inv{MATCH_STOP}"
    assert snippet_segments(headline) == [
        {"text": "the "},
        {"text": "Zürich", "match": True},
        {"text": " office "},
        {"text": "inv", "match": True},
    ]
    assert snippet_segments("no match here") == [{"text": "no match here"}]
    assert snippet_segments("") == []


def test_a_cursor_comes_back_as_its_seq() -> None:
    cursor = encode_cursor(KEY, SCOPE, 1234)
    assert decode_cursor(KEY, SCOPE, cursor) == 1234
    assert "1234" not in cursor


@pytest.mark.parametrize(
    "other",
    [
        CursorScope("ws_2", "usr_me", "'invoice':*", None),
        CursorScope("ws_1", "usr_other", "'invoice':*", None),
        CursorScope("ws_1", "usr_me", "'receipt':*", None),
        CursorScope("ws_1", "usr_me", "'invoice':*", "spc_a"),
    ],
)
def test_a_cursor_is_refused_by_another_search(other: CursorScope) -> None:
    with pytest.raises(SearchProblem) as caught:
        decode_cursor(KEY, other, encode_cursor(KEY, SCOPE, 1234))
    assert caught.value.field == "cursor"


@given(st.integers(min_value=0, max_value=2**62), st.data())
def test_an_altered_cursor_is_refused(seq: int, data: st.DataObject) -> None:
    cursor = encode_cursor(KEY, SCOPE, seq)
    i = data.draw(st.integers(min_value=0, max_value=len(cursor) - 1))
    replacement = data.draw(st.sampled_from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123456789-_"))
    altered = cursor[:i] + replacement + cursor[i + 1 :]
    if altered == cursor:
        return
    with pytest.raises(SearchProblem):
        decode_cursor(KEY, SCOPE, altered)


@pytest.mark.parametrize("forged", ["", "x", "not base64 at all!", "é" * 10, "A" * 65, "AAAA"])
def test_a_forged_cursor_is_refused(forged: str) -> None:
    with pytest.raises(SearchProblem):
        decode_cursor(KEY, SCOPE, forged)


def test_a_cursor_signed_with_another_key_is_refused() -> None:
    with pytest.raises(SearchProblem):
        decode_cursor(KEY, SCOPE, encode_cursor("another-key", SCOPE, 7))


def test_a_receipt_is_found_by_its_steps_titles_and_summaries() -> None:
    event = {
        "kind": "receipt",
        "text": "What I did",
        "receipt": {
            "steps": [
                {"title": "Read the ledger", "summary": "42 rows"},
                {"title": "Wrote report", "status": "failed"},
            ],
            "tool_calls": 3,
        },
    }
    assert message_words(event) == "What I did"
    assert card_words(event).split("\n") == ["Read the ledger", "Wrote report", "42 rows"]


@pytest.mark.parametrize(
    ("kind", "card", "words"),
    [
        ("status", {"phase": "working", "verb": "reading mail"}, ["working", "reading mail"]),
        ("approval", {"action": "send", "preview": "to Bob"}, ["send", "to Bob"]),
        (
            "question",
            {"prompt": "Which?", "options": [{"label": "A", "value": "a"}]},
            ["Which?", "A"],
        ),
        ("artifact", {"name": "q3.csv", "form": "table"}, ["q3.csv"]),
        (
            "task",
            {"goal": "Close books", "constraints": ["by Friday"]},
            ["Close books", "by Friday"],
        ),
        (
            "handoff",
            {"recipient": "x", "summary": "over to you", "open_items": ["vat"]},
            ["over to you", "vat"],
        ),
        ("checkpoint", {"milestone": "half", "next": "rest"}, ["half", "rest"]),
        ("summary", {"outcome": "done", "changed": ["a"], "follow_ups": ["b"]}, ["done", "a", "b"]),
    ],
)
def test_each_card_is_found_by_its_words(
    kind: str, card: dict[str, object], words: list[str]
) -> None:
    assert card_words({"kind": kind, kind: card}).split("\n") == words


def test_a_text_message_has_no_card_words() -> None:
    assert card_words({"kind": "text", "text": "hello"}) == ""
    assert message_words({"kind": "text", "text": "hello\x01there"}) == "hello there"


def test_a_step_says_what_it_says_again_and_nothing_else() -> None:
    assert step_words({"title": "Fetch", "summary": "ok"}) == ("Fetch", "ok")
    assert step_words({"status": "done"}) == (None, None)
