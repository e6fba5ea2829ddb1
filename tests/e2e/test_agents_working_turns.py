"""``working_turns`` for every harness (docs/product/websocket.md, What a harness hears; Agents;
docs/adr/0136).

A message said in a room where one of the harness's agents has a turn going names that turn,
on ``message.overheard`` as on ``message.new``. A harness that has not declared ``agents``
is its own one agent where it is a member itself, so a run it started as itself is that
agent's turn, named with the harness's own id; its registered agents' turns are named with
its own id too (the view before agents writes every own agent's id as the harness's).
"""

from __future__ import annotations

from tests.e2e.client import Api, Identity, Socket
from tests.e2e.test_agents_speaking import as_agent, at, listening, new_agent, post


async def plain_room(api: Api) -> tuple[Identity, Identity, Identity, str]:
    """Arjun's room with Maya and the harness Scout, a member itself, that declared nothing."""
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    scout, _ = await api.connect_harness(owner, "Scout")
    space_id = await api.open_space(owner, "Alphabet", [maya.participant_id, scout.participant_id])
    return owner, maya, scout, space_id


async def test_an_overheard_message_names_the_harness_s_own_turn(api: Api) -> None:
    """The client written from the spec alone: it starts a turn as itself, and a message
    for somebody else overheard meanwhile names that turn; the turn's end names it no more."""
    owner, maya, scout, space_id = await plain_room(api)
    me = scout.participant_id
    sock = await listening(api, scout)
    started = {"type": "run.started", "run_id": "run_f", "space_id": space_id, "goal": "F–J"}
    k = await sock.write(started)
    assert (await sock.answer(k))["frame"] == "ack"
    seq = await api.say(maya, space_id, "@Arjun coffee?")
    heard = (await sock.wait_for(at(seq)))["event"]
    assert heard["type"] == "message.overheard"
    assert heard["working_turns"] == [{"agent_id": me, "run_id": "run_f"}]
    # Its own words while it works name no turn: its own is never named to itself.
    k = await sock.write(post(space_id, "F is drawn."))
    ack = await sock.answer(k)
    own = (await sock.wait_for(at(ack["seq"])))["event"]
    assert own["type"] == "message.post" and "working_turns" not in own, own
    # A subscription that starts after the turn began reads it from the log.
    await sock.close()
    again = await Socket.open(api.base_url, scout)
    await again.subscribe(scout.workspace_id)
    await again.attached()
    seq = await api.say(owner, space_id, "@Maya and tea?")
    heard = (await again.wait_for(at(seq)))["event"]
    assert heard["working_turns"] == [{"agent_id": me, "run_id": "run_f"}]
    k = await again.write(
        {"type": "run.completed", "run_id": "run_f", "space_id": space_id, "summary": "F"}
    )
    assert (await again.answer(k))["frame"] == "ack"
    seq = await api.say(maya, space_id, "@Arjun biscuits?")
    heard = (await again.wait_for(at(seq)))["event"]
    assert heard["type"] == "message.overheard" and "working_turns" not in heard, heard
    await again.close()


async def test_a_harness_before_agents_reads_its_agent_s_turn_as_its_own(api: Api) -> None:
    """An agent of a harness that never declared ``agents`` works in a room (the harness
    started the run as itself and was read as that agent): words overheard there name the
    turn, with the harness's own id where the agent's would be."""
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    scout, _ = await api.connect_harness(owner, "Scout")
    j1 = await new_agent(api, scout, "j1", "ASCII Art")
    space_id = await api.open_space(owner, "Alphabet", [maya.participant_id])
    added = {"type": "membership.added", "space_id": space_id, "participant_id": j1}
    await api.append(owner, added)
    sock = await listening(api, scout)
    started = {"type": "run.started", "run_id": "run_j1", "space_id": space_id, "goal": "F–J"}
    k = await sock.write(started)
    ack = await sock.answer(k)
    assert ack["frame"] == "ack", ack
    seq = await api.say(maya, space_id, "@Arjun coffee?")
    heard = (await sock.wait_for(at(seq)))["event"]
    assert heard["type"] == "message.overheard"
    assert heard["working_turns"] == [{"agent_id": scout.participant_id, "run_id": "run_j1"}]
    assert j1 not in str(heard)
    await sock.close()


async def test_a_harness_that_speaks_agents_is_named_its_agent_s_turn(api: Api) -> None:
    """The same for a harness that declared ``agents``: the agent's own id."""
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    scout, _ = await api.connect_harness(owner, "Scout")
    declared = {"harness_id": scout.participant_id, "capabilities": ["agents"]}
    await api.append(scout, {"type": "harness.declared", **declared})
    j1 = await new_agent(api, scout, "j1", "ASCII Art")
    space_id = await api.open_space(owner, "Alphabet", [maya.participant_id])
    added = {"type": "membership.added", "space_id": space_id, "participant_id": j1}
    await api.append(owner, added)
    sock = await listening(api, scout)
    started = {"type": "run.started", "run_id": "run_j1", "space_id": space_id, "goal": "F–J"}
    k = await sock.write({**started, "actor": as_agent(j1)})
    assert (await sock.answer(k))["frame"] == "ack"
    seq = await api.say(maya, space_id, "@Arjun coffee?")
    heard = (await sock.wait_for(at(seq)))["event"]
    assert heard["type"] == "message.overheard"
    assert heard["working_turns"] == [{"agent_id": j1, "run_id": "run_j1"}]
    await sock.close()
