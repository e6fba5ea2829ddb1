"""Composer commands: room operations written as a message (docs/adr/0008).

docs/product/spaces.md: "/add @name and /remove @name do the same from the composer"; "/title,
/archive and /unarchive do the same from the composer"; "/leave in the composer takes a
space off your list. It is a membership.removed naming you". A handle is "a participant's
name without its spaces, or its first word" (rule 1).
"""

from __future__ import annotations

from tests.e2e.client import Api, Identity, Socket


async def room(api: Api) -> tuple[Identity, Identity, Identity, str]:
    owner = await api.create_workspace()
    maya = await api.add_person(owner, "Maya Chen")
    olga = await api.add_person(owner, "Olga Other")
    space_id = await api.open_space(owner, "Planning", [maya.participant_id])
    return owner, maya, olga, space_id


def said(space_id: str, text: str) -> dict[str, str]:
    return {"type": "message.post", "space_id": space_id, "text": text}


async def test_add_and_remove_by_handle_from_the_composer(stack, api: Api) -> None:
    """docs/product/spaces.md: "/add @name and /remove @name do the same from the composer"; the
    handle is the name without spaces or its first word, in any case."""
    owner, maya, olga, space_id = await room(api)
    scout, _ = await api.connect_harness(owner, "Scout")
    head = await api.head(owner)
    watch = await Socket.open(stack.gateway_b, maya)
    await watch.subscribe(maya.workspace_id, since=head)

    added = await api.append(maya, said(space_id, "/add @OLGA @scout"))
    events = await api.read(owner, since=head, space_id=space_id)
    assert [(e["type"], e["participant_id"]) for e in events[:2]] == [
        ("membership.added", olga.participant_id),
        ("membership.added", scout.participant_id),
    ]
    assert all(e["actor"]["id"] == maya.participant_id for e in events[:2])
    # Then Scout is given its agent in the room, logged as its own (docs/adr/0154).
    assert [e["type"] for e in events[2:]] == [
        "agent.registered",
        "membership.added",
        "agent.attached",
        "membership.replaced",
    ]
    assert all(e["actor"]["id"] == scout.participant_id for e in events[2:])
    given = events[2]["name"]
    assert events[-1]["seq"] == added, "the ack names the last event the command became"
    assert not [e for e in events if e["type"] == "message.post"], "the words are not posted"

    removed = await api.append(owner, said(space_id, "/remove @olgaother"))
    await watch.wait_for_seq(removed)
    lines = [x["text"] for x in await api.lines(owner, space_id, removed)]
    assert lines[-4:] == [
        "Maya Chen added Olga Other",
        "Maya Chen added Scout",
        f"Scout added {given}",
        "Arjun Rao removed Olga Other",
    ]
    await watch.close()


async def test_title_archive_and_unarchive_from_the_composer_over_the_socket(
    stack, api: Api
) -> None:
    """docs/product/spaces.md, Retitling and archiving: "/title, /archive and /unarchive do the same
    from the composer"."""
    owner, maya, _, space_id = await room(api)
    sock = await Socket.open(stack.gateway_a, maya)
    await sock.subscribe(maya.workspace_id, since=await api.head(owner))
    acks = []
    for text in ("/title Launch plan", "/archive", "/unarchive"):
        k = await sock.write(said(space_id, text))
        ack = await sock.answer(k)
        assert ack["frame"] == "ack", ack
        acks.append(ack["seq"])
        await sock.wait_for_seq(ack["seq"])
    got = {e["seq"]: e for e in sock.events()}
    assert got[acks[0]]["type"] == "space.updated" and got[acks[0]]["title"] == "Launch plan"
    assert got[acks[1]]["state"] == "closed" and got[acks[2]]["state"] == "open"
    sheet = await api.sheet(owner, space_id, acks[-1])
    assert (sheet["title"], sheet["state"]) == ("Launch plan", "open")
    await sock.close()


async def test_leave_from_the_composer(stack, api: Api) -> None:
    """docs/product/spaces.md, Leaving one: "/leave ... is a membership.removed naming you"."""
    owner, maya, _, space_id = await room(api)
    left = await api.append(maya, said(space_id, "/leave"))
    (event,) = await api.read(owner, since=left - 1, space_id=space_id)
    assert event["type"] == "membership.removed"
    assert event["participant_id"] == maya.participant_id
    assert space_id not in {s["id"] for s in (await api.spaces(maya, left))["spaces"]}
    lines = await api.lines(owner, space_id, left)
    assert lines[-1]["text"] == "Maya Chen left"


async def test_a_command_is_decided_by_the_same_rules_as_the_event_it_becomes(
    stack, api: Api
) -> None:
    """docs/product/spaces.md, Who may do what in a space: a guest "Talk, and leave" — so /title and
    /add from a guest are refused like space.updated and membership.added, and nothing lands."""
    owner, maya, olga, space_id = await room(api)
    gus = await api.add_person(owner, "Gus Guest", role="guest")
    await api.add_to_room(owner, space_id, gus.participant_id, "guest")
    head = await api.head(owner)
    await api.refused(gus, said(space_id, "/title Mine now"), "forbidden", "a guest")
    await api.refused(gus, said(space_id, "/add @olga"), "forbidden", "a guest")
    await api.refused(maya, said(space_id, "/remove @gus"), "forbidden", "only the space's owner")
    await api.refused(olga, said(space_id, "/archive"), "forbidden", "not a member")
    assert await api.head(owner) == head


async def test_a_command_written_wrong_or_naming_nobody_is_refused_and_not_posted(
    stack, api: Api
) -> None:
    """A command that cannot be carried out is refused with the reason, and its words are
    not posted as a message; the whole command lands or none of it does."""
    owner, maya, _, space_id = await room(api)
    await api.add_person(owner, "Maya Patel")
    head = await api.head(owner)
    await api.refused(owner, said(space_id, "/title"), "invalid_event", "needs the new title")
    await api.refused(owner, said(space_id, "/add maya"), "invalid_event", "by their handle")
    await api.refused(owner, said(space_id, "/add @nobody"), "not_found", "nobody here")
    await api.refused(
        owner, said(space_id, "/add @maya"), "invalid_event", "could be Maya Chen, Maya Patel"
    )
    await api.refused(owner, said(space_id, "/add @mayapatel @maya"), "invalid_event", "could be")
    await api.refused(owner, said(space_id, "/remove @mayapatel"), "not_found", "nobody here")
    await api.refused(owner, said(space_id, "/archive please"), "invalid_event", "nothing after")
    assert await api.head(owner) == head
    sheet = await api.sheet(owner, space_id, head)
    assert "Maya Patel" not in {m["name"] for m in sheet["members"]}


async def test_other_slash_words_and_a_harness_words_are_messages(stack, api: Api) -> None:
    """Only the commands are room operations, and only from a person's composer: a
    //command passed through, a slash word that is no command, and a harness saying
    "/archive" are words."""
    owner = await api.create_workspace()
    scout, home = await api.connect_harness(owner, "Scout")
    for who, text in (
        (owner, "//compact"),
        (owner, "/wrongly placed"),
        (owner, "please /archive this later"),
        (scout, "/archive"),
        (scout, "/title Scout's room"),
    ):
        seq = await api.say(who, home, text)
        (event,) = await api.read(owner, since=seq - 1, space_id=home)
        assert event["type"] == "message.post" and event["text"] == text
