"""Speaking as an agent, and being spoken to (docs/product/websocket.md: Agents — Speaking as one,
Being spoken to, One of yours addressing another of yours; What a harness hears; Who is in
the room; docs/adr/0075).

A harness names one of its agents as an event's actor; a harness with several agents in a
room names one; a message is delivered once to the harness's connection however many of
its agents it is for, with ``for`` saying which; one agent's words to another of the same
harness come back as that one's turn; rooms show agents with their harness.
"""

from __future__ import annotations

from typing import Any

from chips_sdk import Client
from tests.e2e.client import Api, Identity, Socket, key


async def new_agent(api: Api, harness: Identity, agent_key: str, name: str) -> str:
    """Register an agent of ``harness`` (POST /v1/harnesses/:id/agents); its id."""
    r = await api.http.post(
        f"/v1/harnesses/{harness.participant_id}/agents",
        json={"key": agent_key, "name": name},
        headers=api.auth(harness),
    )
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def as_agent(agent_id: str) -> dict[str, str]:
    return {"kind": "agent", "id": agent_id}


def post(space_id: str, text: str, **fields: Any) -> dict[str, Any]:
    return {"type": "message.post", "space_id": space_id, "text": text, **fields}


def at(seq: int) -> Any:
    def match(frame: dict[str, Any]) -> bool:
        return frame["frame"] == "event" and frame["event"]["seq"] == seq

    return match


class Room:
    """Arjun's room with Maya and two of Scout's agents, J1 ("ASCII Art") and J2; Scout
    declared ``agents``; Ledger is another harness of Arjun's with an agent of its own."""

    owner: Identity
    maya: Identity
    scout: Identity
    ledger: Identity
    space_id: str
    j1: str
    j2: str
    oc: str


async def room(api: Api, *, two: bool = True) -> Room:
    r = Room()
    r.owner = await api.create_workspace(owner="Arjun Rao")
    r.maya = await api.add_person(r.owner, "Maya Chen")
    r.scout, _ = await api.connect_harness(r.owner, "Scout")
    r.ledger, _ = await api.connect_harness(r.owner, "Ledger")
    declared = {"harness_id": r.scout.participant_id, "capabilities": ["agents"]}
    await api.append(r.scout, {"type": "harness.declared", **declared})
    r.j1 = await new_agent(api, r.scout, "j1", "ASCII Art")
    r.j2 = await new_agent(api, r.scout, "j2", "J2")
    r.oc = await new_agent(api, r.ledger, "oc", "Oc")
    r.space_id = await api.open_space(r.owner, "Alphabet", [r.maya.participant_id])
    for agent in [r.j1, r.j2] if two else [r.j1]:
        added = {"type": "membership.added", "space_id": r.space_id, "participant_id": agent}
        await api.append(r.owner, added)
    return r


async def listening(api: Api, who: Identity) -> Socket:
    sock = await Socket.open(api.base_url, who)
    await sock.subscribe(who.workspace_id)
    await sock.attached()
    return sock


# --- speaking as one ---------------------------------------------------------------------


async def test_an_agent_speaks_over_the_socket_and_over_http(api: Api) -> None:
    r = await room(api)
    arjun = await listening(api, r.owner)
    scout = await listening(api, r.scout)
    k = await scout.write({**post(r.space_id, "F–J are in."), "actor": as_agent(r.j1)})
    ack = await scout.answer(k)
    assert ack["frame"] == "ack", ack
    heard = (await arjun.wait_for(at(ack["seq"])))["event"]
    assert heard["actor"] == {"kind": "agent", "id": r.j1, "harness_id": r.scout.participant_id}
    http = await api.post_event(
        r.scout,
        {**post(r.space_id, "K–O next."), "actor": as_agent(r.j2), "idempotency_key": key()},
    )
    assert http.status_code == 200, http.text
    heard = (await arjun.wait_for(at(http.json()["seq"])))["event"]
    assert heard["actor"]["id"] == r.j2
    await arjun.close()
    await scout.close()


async def test_a_person_names_no_actor(api: Api) -> None:
    r = await room(api)
    event = {**post(r.space_id, "as J1"), "actor": as_agent(r.j1)}
    await api.refused(r.owner, event, "invalid_event", "actor is filled in by Chips")


async def test_another_harness_s_agent_is_forbidden(api: Api) -> None:
    r = await room(api)
    event = {**post(r.space_id, "as J1"), "actor": as_agent(r.j1)}
    await api.refused(r.ledger, event, "forbidden", "another harness's agent")


async def test_a_harness_with_several_agents_in_the_room_names_one(api: Api) -> None:
    r = await room(api)
    scout = await listening(api, r.scout)
    k = await scout.write(post(r.space_id, "which of us?"))
    refusal = await scout.answer(k)
    assert (refusal["frame"], refusal["code"]) == ("error", "which_agent"), refusal
    await scout.close()
    await api.refused(r.scout, post(r.space_id, "again"), "which_agent", "name the one")


async def test_a_harness_as_itself_is_its_one_agent_in_the_room(api: Api) -> None:
    r = await room(api, two=False)
    seq = await api.append(r.scout, post(r.space_id, "Hello, I am ASCII Art."))
    said = next(e for e in await api.read(r.owner, since=seq - 1) if e["seq"] == seq)
    assert said["actor"] == {"kind": "agent", "id": r.j1, "harness_id": r.scout.participant_id}


async def test_a_member_harness_beside_its_own_agent_speaks_as_that_agent(api: Api) -> None:
    """A harness that is a member of a room itself, with one of its agents added there: the
    room shows the agent in its place, so what the harness says as itself is the agent's,
    and the agent's next turn starts after those words. Beside two of its agents it names
    one. Taking its agents out leaves it a member; taking it out takes its agent along."""
    r = await room(api, two=False)
    scout = r.scout.participant_id
    shared = await api.open_space(r.owner, "Shared", [r.maya.participant_id, scout])
    await api.append(
        r.owner, {"type": "membership.removed", "space_id": r.space_id, "participant_id": r.j1}
    )
    added = {"type": "membership.added", "space_id": shared, "participant_id": r.j1}
    await api.append(r.owner, added)
    sheet = await api.sheet(r.owner, shared, await api.head(r.owner))
    assert [m["participant_id"] for m in sheet["members"]] == [
        r.owner.participant_id,
        r.maya.participant_id,
        r.j1,
    ]
    sock = await listening(api, r.scout)
    first = await api.say(r.maya, shared, "What is on the list?")
    heard = (await sock.wait_for(at(first)))["event"]
    assert (heard["type"], heard["for"]) == ("message.new", [r.j1])
    answered = await api.append(r.scout, post(shared, "F to O."))
    said = (await sock.wait_for(at(answered)))["event"]
    assert said["actor"] == {"kind": "agent", "id": r.j1, "harness_id": scout}
    again = await api.say(r.maya, shared, "And after that?")
    turn = (await sock.wait_for(at(again)))["event"]
    # Its context starts after its own last turn: Maya's first question, which it answered,
    # is not handed it again (it would be, were those words the harness's).
    assert first not in [line["seq"] for line in turn["context"]["lines"]], turn["context"]

    await api.append(r.owner, {**added, "participant_id": r.j2})
    await api.refused(r.scout, post(shared, "which of us?"), "which_agent", "name the one")
    before = await api.head(r.owner)
    for agent in (r.j1, r.j2):
        await api.append(
            r.owner, {"type": "membership.removed", "space_id": shared, "participant_id": agent}
        )
    left = [e for e in await api.read(r.owner, since=before, space_id=shared)]
    assert [e.get("participant_id") for e in left if e["type"] == "membership.removed"] == [
        r.j1,
        r.j2,
    ]  # it stays, a member itself, and speaks as itself again
    alone = await api.append(r.scout, post(shared, "Just me now."))
    said = (await sock.wait_for(at(alone)))["event"]
    assert said["actor"] == {"kind": "harness", "id": scout}

    await api.append(r.owner, added)
    before = await api.head(r.owner)
    await api.append(
        r.owner, {"type": "membership.removed", "space_id": shared, "participant_id": scout}
    )
    gone = await api.read(r.owner, since=before, space_id=shared)
    assert [(e["type"], e.get("participant_id") or e.get("agent_id")) for e in gone] == [
        ("agent.released", r.j1),
        ("membership.removed", r.j1),
        ("membership.removed", scout),
    ]
    await sock.close()


# --- being spoken to ---------------------------------------------------------------------


async def test_one_delivery_for_two_agents_with_for(api: Api) -> None:
    r = await room(api)
    scout = await listening(api, r.scout)
    seq = await api.say(r.owner, r.space_id, "Morning both: letters F to O today.")
    heard = (await scout.wait_for(at(seq)))["event"]
    assert heard["type"] == "message.new"
    assert heard["addressed_to"] == [r.j1, r.j2]
    assert heard["for"] == [r.j1, r.j2]
    assert set(heard["room"]["notes"]) == {r.j1, r.j2}
    # Once, however many of its agents it is for: the next event comes, and no second copy.
    marker = await api.say(r.maya, r.space_id, "@Arjun coffee?")
    await scout.wait_for(at(marker))
    assert [e["seq"] for e in scout.events()].count(seq) == 1
    await scout.close()


async def test_a_mention_of_an_agent_s_handle_is_for_that_agent(api: Api) -> None:
    r = await room(api)
    scout = await listening(api, r.scout)
    seq = await api.say(r.owner, r.space_id, "@ASCIIArt draw the F")
    heard = (await scout.wait_for(at(seq)))["event"]
    assert (heard["type"], heard["addressed_to"], heard["mentions"]) == (
        "message.new",
        [r.j1],
        [r.j1],
    )
    assert heard["for"] == [r.j1]
    await scout.close()


async def test_a_numbered_agent_is_reached_by_its_numbered_handle(api: Api) -> None:
    """ "OpenClaw" was taken, so the agent is "OpenClaw 2", and @OpenClaw2 is for it alone."""
    r = await room(api, two=False)
    ledger = await new_agent(api, r.scout, "oc", "Ledger")  # the harness has the name
    await api.append(
        r.owner, {"type": "membership.added", "space_id": r.space_id, "participant_id": ledger}
    )
    scout = await listening(api, r.scout)
    seq = await api.say(r.owner, r.space_id, "@Ledger2 the totals, please")
    heard = (await scout.wait_for(at(seq)))["event"]
    assert (heard["addressed_to"], heard["for"]) == ([ledger], [ledger])
    members = {m["participant_id"]: m for m in heard["room"]["members"]}
    assert (members[ledger]["name"], members[ledger]["handle"]) == ("Ledger 2", "@Ledger2")
    await scout.close()


async def test_for_names_the_harness_itself_where_the_room_holds_it(api: Api) -> None:
    """A harness that speaks agents, in a room as itself with no agent of its own there:
    a message for it names the harness's own id in for."""
    r = await room(api)
    shared = await api.open_space(r.owner, "Shared", [r.scout.participant_id])
    scout = await listening(api, r.scout)
    seq = await api.say(r.owner, shared, "Anything new?")
    heard = (await scout.wait_for(at(seq)))["event"]
    assert heard["type"] == "message.new"
    assert (heard["addressed_to"], heard["for"]) == (
        [r.scout.participant_id],
        [r.scout.participant_id],
    )
    await scout.close()


async def test_a_message_for_another_harness_s_agent_is_overheard(api: Api) -> None:
    r = await room(api)
    added = {"type": "membership.added", "space_id": r.space_id, "participant_id": r.oc}
    await api.append(r.owner, added)
    scout = await listening(api, r.scout)
    seq = await api.say(r.owner, r.space_id, "@Oc the totals, please")
    heard = (await scout.wait_for(at(seq)))["event"]
    assert heard["type"] == "message.overheard"
    assert "for" not in heard and "room" not in heard
    await scout.close()


async def test_one_agent_to_another_of_its_harness_comes_back_as_that_one_s_turn(
    api: Api,
) -> None:
    r = await room(api)
    scout = await listening(api, r.scout)
    k = await scout.write({**post(r.space_id, "@J2 over to you for K–O"), "actor": as_agent(r.j1)})
    ack = await scout.answer(k)
    assert ack["frame"] == "ack", ack
    heard = (await scout.wait_for(at(ack["seq"])))["event"]
    assert heard["type"] == "message.new"
    assert heard["for"] == [r.j2]
    assert heard["from"]["id"] == r.j1
    assert set(heard["room"]["notes"]) == {r.j2}
    # Its own words to the people come back as they were sent.
    k = await scout.write({**post(r.space_id, "Done with F–J."), "actor": as_agent(r.j1)})
    ack = await scout.answer(k)
    own = (await scout.wait_for(at(ack["seq"])))["event"]
    assert (own["type"], own["addressed_to"]) == ("message.post", [])
    await scout.close()


async def test_room_members_are_agents_with_their_harness(api: Api) -> None:
    r = await room(api)
    scout = await listening(api, r.scout)
    seq = await api.say(r.owner, r.space_id, "@J2 your turn")
    heard = (await scout.wait_for(at(seq)))["event"]
    members = {m["participant_id"]: m for m in heard["room"]["members"]}
    assert r.scout.participant_id not in members, "the harness behind its agents is not listed"
    assert members[r.j1] == {
        "participant_id": r.j1,
        "kind": "agent",
        "name": "ASCII Art",
        "harness": "Scout",
        "standing": "member",
        "handle": "@ASCIIArt",
    }
    assert [m["kind"] for m in heard["room"]["members"]] == ["person", "person", "agent", "agent"]
    assert "ASCII Art (Scout agent, @ASCIIArt)" in heard["room"]["notes"][r.j2]
    await scout.close()


async def test_two_agents_share_the_context_of_the_one_that_heard_least(api: Api) -> None:
    """J1 spoke last, so its context starts after its words; J2 has heard nothing since it
    joined. They share J2's, and J1 sees its own words again."""
    r = await room(api)
    scout = await listening(api, r.scout)
    await api.say(r.owner, r.space_id, "@ASCIIArt draw the F")
    k = await scout.write({**post(r.space_id, "F is drawn."), "actor": as_agent(r.j1)})
    assert (await scout.answer(k))["frame"] == "ack"
    seq = await api.append(r.owner, post(r.space_id, "Both of you: G and H next.", to=["everyone"]))
    heard = (await scout.wait_for(at(seq)))["event"]
    assert heard["for"] == [r.j1, r.j2]
    said = [line["text"] for line in heard["context"]["lines"] if line["kind"] == "said"]
    assert said == ["@ASCIIArt draw the F", "F is drawn."]
    await scout.close()


async def test_a_replay_hands_over_the_same_turn(api: Api) -> None:
    r = await room(api)
    scout = await listening(api, r.scout)
    before = await api.head(r.owner)
    started = {"type": "run.started", "run_id": "run_r", "space_id": r.space_id, "goal": "F"}
    k = await scout.write({**started, "actor": as_agent(r.j1)})
    assert (await scout.answer(k))["frame"] == "ack"
    seq = await api.say(r.owner, r.space_id, "@J2 and G?")
    live = (await scout.wait_for(at(seq)))["event"]
    assert live["working_turns"] == [{"agent_id": r.j1, "run_id": "run_r"}]
    await scout.close()
    again = await Socket.open(api.base_url, r.scout)
    await again.subscribe(r.scout.workspace_id, since=before)
    replayed = (await again.wait_for(at(seq)))["event"]
    assert replayed == live
    await again.close()


# --- working turns and message.heard -----------------------------------------------------


async def test_a_message_names_the_turns_of_the_other_agents_working_there(api: Api) -> None:
    r = await room(api)
    scout = await listening(api, r.scout)
    started = {"type": "run.started", "run_id": "run_j1", "space_id": r.space_id, "goal": "F–J"}
    k = await scout.write({**started, "actor": as_agent(r.j1)})
    assert (await scout.answer(k))["frame"] == "ack"
    seq = await api.say(r.owner, r.space_id, "@J2 start on K")
    heard = (await scout.wait_for(at(seq)))["event"]
    assert heard["for"] == [r.j2]
    assert heard["working_turns"] == [{"agent_id": r.j1, "run_id": "run_j1"}]
    # The turn says it has the words; as the run's agent, though the harness sent it.
    k = await scout.write(
        {"type": "message.heard", "run_id": "run_j1", "message_id": heard["message_id"]}
    )
    ack = await scout.answer(k)
    assert ack["frame"] == "ack", ack
    said = (await scout.wait_for(at(ack["seq"])))["event"]
    assert (said["type"], said["actor"]["id"], said["space_id"]) == (
        "message.heard",
        r.j1,
        r.space_id,
    )
    # The room reads who heard it beneath the message ("ASCII Art heard this while working").
    lines = await api.lines(r.owner, r.space_id, after_seq=ack["seq"])
    line = next(li for li in lines if li["id"] == heard["message_id"])
    assert line["heard_by"] == [r.j1]
    # Its own words as they come back name its other agent's turn too.
    k = await scout.write({**post(r.space_id, "K is started."), "actor": as_agent(r.j2)})
    ack = await scout.answer(k)
    own = (await scout.wait_for(at(ack["seq"])))["event"]
    assert own["working_turns"] == [{"agent_id": r.j1, "run_id": "run_j1"}]
    assert (own["type"], own["from"]["id"], own["from"]["name"]) == ("message.post", r.j2, "J2")
    await scout.close()


async def test_words_for_the_people_name_the_turns_working_there(api: Api) -> None:
    """A message for somebody else is overheard, and names the turns of the harness's
    agents working in the room (the words are theirs to hear, not a turn to take); the
    turn of the one that said them is never named."""
    r = await room(api)
    scout = await listening(api, r.scout)
    started = {"type": "run.started", "run_id": "run_j1", "space_id": r.space_id, "goal": "F–J"}
    k = await scout.write({**started, "actor": as_agent(r.j1)})
    assert (await scout.answer(k))["frame"] == "ack"
    seq = await api.say(r.maya, r.space_id, "@Arjun coffee?")
    heard = (await scout.wait_for(at(seq)))["event"]
    assert heard["type"] == "message.overheard"
    assert heard["working_turns"] == [{"agent_id": r.j1, "run_id": "run_j1"}]
    # J1's own words to the people, while it works: its own turn is not named.
    k = await scout.write({**post(r.space_id, "F is drawn."), "actor": as_agent(r.j1)})
    ack = await scout.answer(k)
    own = (await scout.wait_for(at(ack["seq"])))["event"]
    assert own["type"] == "message.post" and "working_turns" not in own, own
    await scout.close()


# --- the SDK -------------------------------------------------------------------------------


async def test_the_sdk_answers_and_works_as_the_agent_the_message_is_for(api: Api) -> None:
    r = await room(api)
    client = Client([api.base_url], r.scout.token, name="agents")

    @client.on("message.new")
    async def answer(message: dict[str, Any]) -> None:
        async with client.report_run(message) as run:
            await run.reply("On it.")

    await client.start()
    arjun = await listening(api, r.owner)
    await api.say(r.owner, r.space_id, "@J2 what about K?")
    reply = await arjun.wait_for(
        lambda f: f["frame"] == "event" and f["event"].get("text") == "On it."
    )
    assert reply["event"]["actor"]["id"] == r.j2
    done = await arjun.wait_for(
        lambda f: f["frame"] == "event" and f["event"]["type"] == "run.completed"
    )
    assert done["event"]["actor"]["id"] == r.j2, "the run's events are its agent's"
    await arjun.close()
    await client.close()
