"""Composer commands (docs/product/spaces.md, Several harnesses and people in one space; Retitling
and archiving; Leaving one): "/add @name and /remove @name do the same from the composer";
"/title, /archive and /unarchive do the same from the composer"; "/leave in the composer
takes a space off your list"."""

from __future__ import annotations

import pytest

from chips_common.rules.commands import Command, CommandError, parse_command, resolve_handle

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("/add @maya", Command("add", ("maya",))),
        ("/add @Maya @LEDGER @maya", Command("add", ("maya", "ledger"))),
        ("  /remove @jacobian·mini  ", Command("remove", ("jacobian·mini",))),
        ("/title Launch plan", Command("title", title="Launch plan")),
        ("/TITLE  India trip 2026 ", Command("title", title="India trip 2026")),
        ("/archive", Command("archive")),
        ("/Unarchive", Command("unarchive")),
        ("/leave", Command("leave")),
        ("/wrong the total is off", Command("wrong", note="the total is off")),
        ("/Wrong  it missed Friday ", Command("wrong", note="it missed Friday")),
    ],
)
def test_the_commands(text: str, command: Command) -> None:
    """Each command, case-insensitive, handles case-folded and without repeats."""
    assert parse_command(text) == command


@pytest.mark.parametrize(
    "text",
    ["hello", "see /add in the docs", "//compact", "/wrongly", "/", "/ "],
)
def test_anything_else_is_a_message(text: str) -> None:
    """Other slash words (a harness's //command, a word that is no command) are words."""
    assert parse_command(text) is None


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("/add", "names people by their handle"),
        ("/add maya", "names people by their handle"),
        ("/remove @maya please", "names people by their handle"),
        ("/title", "needs the new title"),
        ("/title " + "x" * 201, "at most 200"),
        ("/archive now", "takes nothing after it"),
        ("/leave @maya", "takes nothing after it"),
        ("/wrong", "needs what is wrong"),
    ],
)
def test_a_command_written_wrong_is_refused_with_how_to_write_it(text: str, says: str) -> None:
    """A command written wrong is not posted as words; the refusal says how to write it."""
    with pytest.raises(CommandError, match=says):
        parse_command(text)


def test_a_handle_is_the_name_without_spaces_or_its_first_word() -> None:
    """docs/product/spaces.md, rule 1: "A handle is a participant's name without its spaces, or its
    first word — @jacobian for Jacobian · mini"; case does not matter."""
    people = [("usr_m", "Maya Chen"), ("hrn_j", "Jacobian · mini"), ("usr_p", "Maya Patel")]
    assert resolve_handle("mayachen", people) == "usr_m"
    assert resolve_handle("jacobian", people) == "hrn_j"
    assert resolve_handle("jacobian·mini", people) == "hrn_j"
    with pytest.raises(CommandError, match="could be Maya Chen, Maya Patel"):
        resolve_handle("maya", people)
    with pytest.raises(CommandError, match="nobody here is called @olga"):
        resolve_handle("olga", people)
