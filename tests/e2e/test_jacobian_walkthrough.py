"""The Jacobian walkthrough replayed by a scripted harness (docs/product/jacobian-channel.md;
docs/jacobian-walkthrough.md follows it step by step).

A person's message starts a run; the harness reports status and three steps; an approval
is approved from a second device (first answer wins, the loser is refused and the other
device is told it was decided elsewhere); a question is answered by typing (wreply); the
run hands a job on to the Shopping room without waiting (a lane, whose route card shows in
both rooms); usage is reported and the run completes. A second person's message during the
run is answered with a queued receipt, and a run.steer interrupt with a steered one. The
job's turn in Shopping then takes over the lane and ends it with its answer and cost after
the run that opened it ended; the answer comes back in J's room. Then the run reads back as
its receipt, with its lane. Part two, Jacobian's agents, is the second test.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.e2e.client import Api, Socket


def of_type(kind: str, **match: Any) -> Any:
    def predicate(f: dict[str, Any]) -> bool:
        return (
            f["frame"] == "event"
            and f["event"]["type"] == kind
            and all(f["event"].get(k) == v for k, v in match.items())
        )

    return predicate


async def test_the_jacobian_walkthrough(stack, api: Api) -> None:
    arjun = await api.create_workspace(owner="Arjun Rao")
    jacobian, room = await api.connect_harness(arjun, "Jacobian")
    maya = await api.add_person(arjun, "Maya Chen")
    assert (await api.add_to_room(arjun, room, maya.participant_id)).status_code == 200
    shop = await api.open_space(arjun, "Shopping", [jacobian.participant_id])

    harness = await Socket.open(stack.gateway_b, jacobian)
    phone = await Socket.open(stack.gateway_a, arjun)
    desk = await Socket.open(stack.gateway_b, arjun)
    maya_s = await Socket.open(stack.gateway_a, maya)
    for sock in (harness, phone, desk, maya_s):
        await sock.subscribe(arjun.workspace_id)
        await sock.attached()

    # A turn begins on a message from Chips: no run is going, so only the ack.
    ask = await phone.write(
        {"type": "message.post", "space_id": room, "text": "Order the PO for Northwind"}
    )
    assert (await phone.answer(ask))["frame"] == "ack"
    heard = (await harness.wait_for(of_type("message.new")))["event"]

    async def send(event: dict[str, Any]) -> dict[str, Any]:
        answer = await harness.answer(await harness.write(event))
        assert answer["frame"] == "ack", answer
        return answer

    run = "run_jacobian-1"
    await send(
        {
            "type": "run.started",
            "run_id": run,
            "space_id": room,
            "goal": heard["text"],
            "message_id": heard["message_id"],
            "chips": True,
            "session_id": "telegram-less",
        }
    )
    await send({"type": "run.status", "run_id": run, "phase": "thinking", "text": "Reading"})
    titles = ["jacobian.read_file", "jacobian.search", "jacobian.shell.execute"]
    for i, title in enumerate(titles, 1):
        if i > 1:  # the previous step is done when the next begins
            await send(
                {
                    "type": "step.log",
                    "run_id": run,
                    "step_id": f"stp_{i - 1}",
                    "status": "done",
                    "summary": f"step {i - 1} done",
                }
            )
        await send(
            {
                "type": "step.log",
                "run_id": run,
                "step_id": f"stp_{i}",
                "status": "started",
                "title": title,
            }
        )

    # Maya speaks while the run works: ack, then a queued receipt; the harness too.
    said = await maya_s.write(
        {"type": "message.post", "space_id": room, "text": "Use the March prices"}
    )
    assert (await maya_s.answer(said))["frame"] == "ack"
    queued = await maya_s.wait_for(
        lambda f: f["frame"] == "receipt" and f["idempotency_key"] == said
    )
    assert queued["disposition"] == "queued" and queued["run_ids"] == [run]
    await harness.wait_for(lambda f: f["frame"] == "receipt" and f["idempotency_key"] == said)

    # A card with Approve and Deny, answered from two of Arjun's devices at once.
    asked = await send(
        {
            "type": "approval.request",
            "approval_id": "perm-1",
            "run_id": run,
            "action": "jacobian.shell.execute",
            "preview": "send PO.pdf to Northwind",
            "risk": "external_communication",
        }
    )
    waiting = await api.http.get(
        "/v1/approvals",
        params={"waiting": "true", "after_seq": asked["seq"]},
        headers=api.auth(arjun),
    )
    decision = {"type": "approval.resolved", "approval_id": "perm-1", "decision": "approve"}
    k_phone, k_desk = await asyncio.gather(phone.write(decision), desk.write(decision))
    answers = {"phone": await phone.answer(k_phone), "desk": await desk.answer(k_desk)}
    frames = sorted(a["frame"] for a in answers.values())
    assert frames == ["ack", "error"], answers
    loser = next(a for a in answers.values() if a["frame"] == "error")
    assert loser["code"] == "invalid_event" and "first by Arjun Rao (approve)" in loser["message"]
    winner, other = (phone, desk) if answers["phone"]["frame"] == "ack" else (desk, phone)
    assert (
        "resolved_elsewhere" not in (await winner.wait_for(of_type("approval.resolved")))["event"]
    )
    assert (await other.wait_for(of_type("approval.resolved")))["event"]["resolved_elsewhere"]
    assert (await maya_s.wait_for(of_type("approval.resolved")))["event"]["resolved_elsewhere"]
    assert [a["id"] for a in waiting.json()["approvals"]] == ["perm-1"]  # before the decision

    # Maya interrupts: ack, then steered.
    steer = await maya_s.write(
        {
            "type": "run.steer",
            "run_id": run,
            "mode": "interrupt",
            "text": "Stop: Northwind changed the slot",
        }
    )
    assert (await maya_s.answer(steer))["frame"] == "ack"
    steered = await maya_s.wait_for(
        lambda f: f["frame"] == "receipt" and f["idempotency_key"] == steer
    )
    assert steered["disposition"] == "steered"
    await harness.wait_for(lambda f: f["frame"] == "receipt" and f["idempotency_key"] == steer)

    # A Space's question, answered by typing in the composer.
    await send(
        {
            "type": "question.ask",
            "question_id": "q-7",
            "run_id": run,
            "prompt": "Which slot?",
            "options": [{"label": "Friday", "value": "fri"}],
            "free_text": True,
        }
    )
    typed = await phone.write(
        {"type": "message.post", "space_id": room, "text": "wreply q-7 Monday morning"}
    )
    assert (await phone.answer(typed))["frame"] == "ack"
    answered = (await harness.wait_for(of_type("question.answered", question_id="q-7")))["event"]
    assert answered["text"] == "Monday morning" and answered["actor"]["id"] == arjun.participant_id

    # A hand_down that does not wait: a lane opened at once into Shopping, from the run.
    lane = "lane_jacobian-1.1"
    await send(
        {
            "type": "lane.opened",
            "lane_id": lane,
            "run_id": run,
            "to_space_id": shop,
            "task": {"goal": "Find a cheaper carrier for the PO", "autonomy": "act"},
            "worker": "Shopping",
        }
    )
    card = await maya_s.wait_for(of_type("lane.opened", lane_id=lane))
    assert card["event"]["space_id"] == room and card["event"]["to_space_id"] == shop
    await phone.wait_for(of_type("lane.opened", lane_id=lane, space_id=shop))

    await send(
        {
            "type": "step.log",
            "run_id": run,
            "step_id": "stp_3",
            "status": "done",
            "summary": "Sent PO.pdf",
        }
    )
    await send(
        {"type": "usage", "run_id": run, "tokens_in": 5200, "tokens_out": 800, "cost_usd": 0.42}
    )
    done = await send(
        {"type": "run.completed", "run_id": run, "summary": "The PO is with Northwind"}
    )

    # After the end, a person's message is a message: an ack and nothing more.
    after = await maya_s.write({"type": "message.post", "space_id": room, "text": "thanks"})
    assert (await maya_s.answer(after))["frame"] == "ack"

    # The job's first turn in Shopping takes over the lane's run and ends the lane with its
    # answer and cost, after the run that opened it ended; the answer lands in J's room too.
    job = "run_jacobian-2"
    await send(
        {
            "type": "run.started",
            "run_id": job,
            "space_id": shop,
            "goal": "Find a cheaper carrier for the PO",
            "lane_id": lane,
        }
    )
    await send({"type": "step.log", "run_id": job, "step_id": "stp_1", "status": "started"})
    await send(
        {"type": "usage", "run_id": job, "tokens_in": 900, "tokens_out": 120, "cost_usd": 0.08}
    )
    await send({"type": "run.completed", "run_id": job, "summary": "DHL at $31"})
    ended = await send(
        {"type": "lane.completed", "lane_id": lane, "summary": "DHL at $31", "cost_usd": 0.08}
    )
    answer = (await maya_s.wait_for(of_type("lane.completed", lane_id=lane)))["event"]
    assert answer["space_id"] == room and answer["summary"] == "DHL at $31"
    await phone.wait_for(of_type("lane.completed", lane_id=lane, space_id=shop))

    # The run reads back as its receipt, with the lane it opened.
    r = await api.http.get(
        f"/v1/runs/{run}", params={"after_seq": ended["seq"]}, headers=api.auth(maya)
    )
    assert r.status_code == 200, r.text
    receipt = r.json()
    assert receipt["state"] == "completed" and receipt["summary"] == "The PO is with Northwind"
    assert receipt["chips"] is True and receipt["message_id"] == heard["message_id"]
    assert [(s["step_id"], s["status"], s["title"]) for s in receipt["steps"]] == [
        (f"stp_{i}", "done", title) for i, title in enumerate(titles, 1)
    ]
    assert receipt["usage"] == {
        "tokens_in": 5200,
        "tokens_out": 800,
        "cost_usd": 0.42,
        "uncosted": 0,
    }
    [handed] = receipt["lanes"]
    assert (handed["lane_id"], handed["to_space_id"], handed["working_run_id"]) == (
        lane,
        shop,
        job,
    )
    assert (handed["state"], handed["summary"], handed["cost_usd"]) == (
        "completed",
        "DHL at $31",
        0.08,
    )
    assert handed["ended_seq"] > done["seq"]  # it outlived the run that opened it
    cards = {c["id"]: c for c in receipt["cards"]}
    assert cards["perm-1"]["answer"]["decision"] == "approve"
    assert cards["q-7"]["answer"]["text"] == "Monday morning"
    listed = await api.http.get(f"/v1/spaces/{room}/runs", headers=api.auth(arjun))
    assert [x["run_id"] for x in listed.json()["runs"]] == [run]
    assert listed.json()["usage"]["cost_usd"] == 0.42
    assert not [
        f for f in maya_s.frames if f["frame"] == "receipt" and f["idempotency_key"] == after
    ]
    for sock in (harness, phone, desk, maya_s):
        await sock.close()


# --- Jacobian's agents: a Main agent, a Space agent each, moved, forked, asked for --------


async def test_jacobian_s_agents_move_fork_are_asked_for_and_restart(stack, api: Api) -> None:
    """docs/jacobian-walkthrough.md, part two (docs/product/websocket.md: Agents, One room at a
    time, Forks, New agents, Restarts).

    Jacobian declares agents, forks, new_agents and restarts; registers J, its Main agent,
    in J's room, and a Space agent for each of two Spaces, each attached in the harness's
    own place in the room it opened for that Space. Arjun moves the Research agent into a
    new room (adding it is refused: it is elsewhere, and the refusal names where), forks the
    Shopping agent into that room, and asks for a new agent there; Jacobian makes each in
    time and it joins with agent.attached. A restart reads "Restarting" for everybody until
    Jacobian's socket opens again, and a second until it reports its status.
    """
    arjun = await api.create_workspace(owner="Arjun Rao")
    jacobian, home = await api.connect_harness(arjun, "Jacobian")
    maya = await api.add_person(arjun, "Maya Chen")
    r = await api.http.put(
        f"/v1/harnesses/{jacobian.participant_id}/capabilities",
        json={"capabilities": ["new_spaces", "agents", "forks", "new_agents", "restarts"]},
        headers=api.auth(jacobian),
    )
    assert r.status_code == 200, r.text
    harness = await Socket.open(stack.gateway_b, jacobian, accepts=["restart"])
    phone = await Socket.open(stack.gateway_a, arjun)
    for sock in (harness, phone):
        await sock.subscribe(arjun.workspace_id)
        await sock.attached()

    async def register(**body: Any) -> dict[str, Any]:
        r = await api.http.post(
            f"/v1/harnesses/{jacobian.participant_id}/agents",
            json=body,
            headers=api.auth(jacobian),
        )
        assert r.status_code in (200, 201), r.text
        agent: dict[str, Any] = r.json()
        return agent

    # J, the root, is the Main agent: its Main room is Jacobian's home, J's room.
    j = await register(key="root", name="J", lead=True)
    assert (j["main"], j["space_id"]) == (True, home)
    # A Space directly under J is a room keyed by the Space's id, and an agent of its own
    # that takes the harness's place there.
    spaces: dict[str, tuple[str, dict[str, Any]]] = {}
    for space_key, title in (("space-shopping", "Shopping"), ("space-research", "Research")):
        opened = await api.open_by_key(jacobian, space_key, title)
        assert opened.status_code == 201, opened.text
        room = opened.json()["space_id"]
        assert (await api.add_to_room(arjun, room, maya.participant_id)).status_code == 200
        agent = await register(key=space_key, name=title)
        r = await api.http.post(
            f"/v1/agents/{agent['id']}/attach",
            json={"space_id": room, "replacing": jacobian.participant_id},
            headers=api.auth(jacobian),
        )
        assert r.status_code == 200, r.text
        spaces[title] = (room, r.json())
    shop, shopping = spaces["Shopping"]
    research_room, research = spaces["Research"]
    await harness.wait_for(of_type("membership.replaced", space_id=research_room))
    sheet = await api.sheet(arjun, shop, await api.head(arjun))
    assert [(m["participant_id"], m["kind"]) for m in sheet["members"]] == [
        (arjun.participant_id, "person"),
        (maya.participant_id, "person"),
        (shopping["id"], "agent"),
    ]
    r = await api.http.get("/v1/participants", headers=api.auth(maya))
    listed = {p["participant_id"]: p for p in r.json()["participants"]}
    rooms = {
        a["id"]: (listed[a["id"]]["harness_id"], listed[a["id"]]["space_id"])
        for a in (j, shopping, research)
    }
    assert rooms == {
        j["id"]: (jacobian.participant_id, home),
        shopping["id"]: (jacobian.participant_id, shop),
        research["id"]: (jacobian.participant_id, research_room),
    }

    # Arjun opens a launch room. Adding the Research agent is refused, with where it is;
    # he moves it instead, and Jacobian hears it go and come.
    launch = await api.open_space(arjun, "Launch", [maya.participant_id])
    added = {"type": "membership.added", "space_id": launch, "participant_id": research["id"]}
    refused = await phone.answer(await phone.write(added))
    assert (refused["frame"], refused["code"], refused["space_id"]) == (
        "error",
        "agent_elsewhere",
        research_room,
    )
    r = await api.http.post(
        f"/v1/agents/{research['id']}/move", json={"space_id": launch}, headers=api.auth(arjun)
    )
    assert r.status_code == 200 and r.json()["space_id"] == launch, r.text
    released = (await harness.wait_for(of_type("agent.released", agent_id=research["id"])))["event"]
    assert (released["reason"], released["moved_to"], released["space_id"]) == (
        "moved",
        launch,
        research_room,
    )
    await harness.wait_for(of_type("agent.attached", agent_id=research["id"], space_id=launch))
    # J stays in J's room.
    r = await api.http.post(
        f"/v1/agents/{j['id']}/move", json={"space_id": launch}, headers=api.auth(arjun)
    )
    assert (r.status_code, r.json()["code"]) == (409, "lead_room")

    # Fork: a copy of the Shopping agent for the launch room. Jacobian hears the ask (it
    # would though none of its agents were in the room), copies what the agent remembers,
    # registers the copy, and the copy joins the room.
    asked = await phone.answer(
        await phone.write({"type": "agent.fork", "space_id": launch, "agent_id": shopping["id"]})
    )
    assert asked["frame"] == "ack", asked
    fork = (await harness.wait_for(of_type("agent.fork", agent_id=shopping["id"])))["event"]
    copy = await register(
        key="space-shopping-copy", name="Shopping", forked_from=fork["agent_id"], space_id=launch
    )
    assert (copy["name"], copy["space_id"], copy["forked_from"]) == (
        "Shopping 2",
        launch,
        shopping["id"],
    )
    joined = await harness.wait_for(of_type("agent.attached", agent_id=copy["id"]))
    assert joined["event"]["fork_of"] == fork["id"]

    # A new agent: a Space under J that remembers nothing, made for Arjun's ask.
    asked = await phone.answer(
        await phone.write(
            {
                "type": "agent.asked",
                "space_id": launch,
                "harness_id": jacobian.participant_id,
                "name": "Planner",
            }
        )
    )
    assert asked["frame"] == "ack", asked
    wanted = (await harness.wait_for(of_type("agent.asked", space_id=launch)))["event"]
    assert wanted["actor"]["id"] == arjun.participant_id  # who asked: its owner
    planner = await register(
        key="space-planner", name=wanted["name"], made_for=wanted["id"], space_id=launch
    )
    assert (planner["name"], planner["space_id"]) == ("Planner", launch)
    joined = await harness.wait_for(of_type("agent.attached", agent_id=planner["id"]))
    assert joined["event"]["made_for"] == wanted["id"]

    # The launch room now holds three of Jacobian's agents; a message for one is that
    # one's turn, on Jacobian's one connection.
    said = await api.say(arjun, launch, "@Planner draft the launch plan")
    turn = (await harness.wait_for(of_type("message.new", space_id=launch)))["event"]
    assert turn["seq"] == said and turn["for"] == [planner["id"]]
    members = {m["participant_id"] for m in turn["room"]["members"]}
    assert {research["id"], copy["id"], planner["id"]} <= members

    # A restart: every face of Jacobian reads "Restarting" until its socket opens again.
    async def faces() -> dict[str, str]:
        r = await api.http.get("/v1/participants", headers=api.auth(maya))
        found = {p["participant_id"]: p for p in r.json()["participants"]}
        ids = [jacobian.participant_id, j["id"], planner["id"]]
        return {pid: str(found[pid]["status"]) for pid in ids}

    assert set((await faces()).values()) == {"connected"}
    r = await api.http.post(
        f"/v1/harnesses/{jacobian.participant_id}/restart", headers=api.auth(arjun)
    )
    assert r.status_code == 202, r.text
    frame = await harness.wait_for(lambda f: f["frame"] == "restart")
    assert frame["asked_by"] == arjun.participant_id
    assert set((await faces()).values()) == {"restarting"}
    await harness.close()
    back = await Socket.open(stack.gateway_a, jacobian, accepts=["restart"])
    assert set((await faces()).values()) == {"connected"}
    # (less the agent Jacobian was given in its home when it declared agents, which gave
    # J its place there: ADR 0146)
    hello_agents = (back.hello_frame or {})["agents"]
    agents = {a["id"]: a["space_id"] for a in hello_agents if not a["key"].startswith("chips:")}
    assert agents == {
        j["id"]: home,
        shopping["id"]: shop,
        research["id"]: launch,
        copy["id"]: launch,
        planner["id"]: launch,
    }
    # Again, and this time a bridge says how the thing behind it came back.
    r = await api.http.post(
        f"/v1/harnesses/{jacobian.participant_id}/restart", headers=api.auth(arjun)
    )
    assert r.status_code == 202, r.text
    await back.wait_for(lambda f: f["frame"] == "restart")
    assert set((await faces()).values()) == {"restarting"}
    r = await api.http.put(
        f"/v1/harnesses/{jacobian.participant_id}/status",
        json={"status": "ok"},
        headers=api.auth(jacobian),
    )
    assert r.status_code == 200, r.text
    assert set((await faces()).values()) == {"connected"}
    for sock in (back, phone):
        await sock.close()
