"""Questions as the product has them (ADR 0131): Chips's clock expires a question nobody
answered, keeping the card and taking its default; several choices, in the order asked."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.e2e.client import Api, Socket
from tests.e2e.test_run_cards import question
from tests.e2e.test_runs import harness_room, start


def soon(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


async def test_a_question_nobody_answers_expires_and_its_default_is_taken(stack, api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    sock = await Socket.open(stack.gateway_a, jacobian)
    await sock.subscribe(owner.workspace_id)
    run_id = await start(api, jacobian, room)
    asked = await question(api, jacobian, run_id, default="g", expires_at=soon(1.5))
    waiting = await question(api, jacobian, run_id)  # 30 minutes, unless its asker says

    frame = await sock.wait_for(
        lambda f: f["frame"] == "event" and f["event"]["type"] == "question.expired",
        timeout=20,
    )
    expired = frame["event"]
    assert expired["question_id"] == asked
    assert expired["actor"] == {"kind": "system", "id": "system"}
    assert (expired["value"], expired["default_taken"]) == ("g", True)
    assert expired["note"] == "Nobody answered in time, so the default was taken: Globex."
    await api.refused(
        owner,
        {"type": "question.answered", "question_id": asked, "value": "acme"},
        "invalid_event",
        "an expired card takes no answer",
    )
    # The card is kept, among the run's, marked by what expired it.
    log = await api.read(owner, space_id=room)
    ask = next(e for e in log if e["type"] == "question.ask" and e["question_id"] == waiting)
    assert datetime.fromisoformat(ask["expires_at"]) > datetime.now(UTC) + timedelta(minutes=29)
    assert [e["question_id"] for e in log if e["type"] == "question.expired"] == [asked]
    await api.append(owner, {"type": "question.answered", "question_id": waiting, "value": "g"})
    await sock.close()


async def test_several_choices_reach_the_asker_in_the_order_asked(api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    run_id = await start(api, jacobian, room)
    options = [
        {"label": "Acme", "value": "acme"},
        {"label": "Globex", "value": "g"},
        {"label": "Initech", "value": "i"},
    ]
    asked = await question(api, jacobian, run_id, options=options, multiple=True)
    chosen = {"type": "question.answered", "question_id": asked, "values": ["i", "acme"]}
    seq = await api.append(owner, chosen)
    log = await api.read(owner, since=seq - 1, space_id=room)
    assert [e.get("values") for e in log if e["type"] == "question.answered"] == [["acme", "i"]]
    await api.refused(
        jacobian,
        {"type": "question.expired", "question_id": asked},
        "forbidden",
        "",
    )
