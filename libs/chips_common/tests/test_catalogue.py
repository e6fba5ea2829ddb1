"""The event catalogue: one typed model per event type, and ``parse_event`` as the only decoder.

docs/architecture/code-style.md, One typed catalogue of events: every type has a sample and a
round-trip test, an undeclared field is a schema bug, and registering a name twice fails at import.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import pytest
from pydantic import TypeAdapter, ValidationError

from chips_common.events import (
    CATALOGUE,
    ENVELOPE_FIELDS,
    EventBody,
    InvalidEvent,
    canonical,
    parse_event,
)
from chips_common.events.base import ENVELOPE_ORDER, register
from chips_common.events.wire import ENVELOPE_KEYS, EventJson

pytestmark = pytest.mark.unit

USR = "usr_01J9ZQ5V1M3X8K2R7T4W6Y0ABC"
HRN = "hrn_01J9ZQ5V1M3X8K2R7T4W6Y0DEF"
AGT = "agt_01J9ZQ5V1M3X8K2R7T4W6Y0AGT"
SPC = "spc_01J9ZQ5V1M3X8K2R7T4W6Y0GHJ"
MSG = "msg_01J9ZQ5V1M3X8K2R7T4W6Y0KMN"
RUN = "run_jacobian-5"
LANE = "lane_jacobian-5.1"
SPC2 = "spc_01J9ZQ5V1M3X8K2R7T4W6Y0PQR"

# Runs, approvals, questions, steering and usage (chips_common.events.runs).
RUN_SAMPLES: dict[str, dict[str, Any]] = {
    "run.started": {
        "type": "run.started",
        "run_id": RUN,
        "space_id": SPC,
        "goal": "Order the PO for Northwind",
        "session_id": "sess-42",
        "message_id": MSG,
        "chips": True,
        "lane_id": LANE,
    },
    "run.status": {
        "type": "run.status",
        "run_id": RUN,
        "space_id": SPC,
        "phase": "working",
        "verb": "reading",
        "progress": 0.5,
        "text": "Reading the PO",
    },
    "step.log": {
        "type": "step.log",
        "run_id": RUN,
        "space_id": SPC,
        "step_id": "stp_2",
        "status": "done",
        "title": "jacobian.read_file",
        "summary": "Read the PO",
    },
    "run.paused": {"type": "run.paused", "run_id": RUN, "space_id": SPC, "why": "approval"},
    "run.resumed": {"type": "run.resumed", "run_id": RUN, "space_id": SPC},
    "run.completed": {"type": "run.completed", "run_id": RUN, "space_id": SPC, "summary": "Sent"},
    "run.failed": {"type": "run.failed", "run_id": RUN, "space_id": SPC, "why": "timed out"},
    "run.cancel": {"type": "run.cancel", "run_id": RUN, "space_id": SPC, "why": "/stop"},
    "run.steer": {
        "type": "run.steer",
        "run_id": RUN,
        "space_id": SPC,
        "mode": "interrupt",
        "text": "Use the March prices",
        "run_receipt": {
            "idempotency_key": "arjun-7",
            "disposition": "steered",
            "run_ids": [RUN],
            "harness_ids": [HRN],
        },
    },
    "usage": {
        "type": "usage",
        "run_id": RUN,
        "space_id": SPC,
        "tokens_in": 1200,
        "tokens_out": 300,
        "cost_usd": 0.42,
        "model": "claude",
    },
    "approval.request": {
        "type": "approval.request",
        "approval_id": "perm-17",
        "run_id": RUN,
        "space_id": SPC,
        "action": "jacobian.shell.execute",
        "args": "rm -rf build/",
        "preview": "rm -rf build/",
        "risk": "destructive",
        "expires_at": "2026-09-02T14:30:00Z",
        "answerers": [USR],
    },
    "approval.resolved": {
        "type": "approval.resolved",
        "approval_id": "perm-17",
        "decision": "edit",
        "edited": "rm -rf build/tmp",
        "note": "only tmp",
        "run_id": RUN,
        "space_id": SPC,
        "idempotency_key": "arjun-approve-1",
    },
    "question.ask": {
        "type": "question.ask",
        "question_id": "q-3",
        "run_id": RUN,
        "space_id": SPC,
        "prompt": "Which supplier?",
        "options": [{"label": "Acme", "value": "acme"}, {"label": "Globex", "value": "globex"}],
        "free_text": True,
        "default": "acme",
        "multiple": True,
        "expires_at": "2026-09-02T14:30:00Z",
    },
    "lane.opened": {
        "type": "lane.opened",
        "lane_id": LANE,
        "run_id": RUN,
        "space_id": SPC2,
        "from_space_id": SPC,
        "to_space_id": SPC2,
        "task": {
            "goal": "Find a cheaper carrier for the PO",
            "constraints": ["under $40"],
            "deadline": "2026-09-05T17:00:00Z",
            "autonomy": "act",
        },
        "worker": "Analyst",
    },
    "lane.completed": {
        "type": "lane.completed",
        "lane_id": LANE,
        "space_id": SPC,
        "from_space_id": SPC,
        "to_space_id": SPC2,
        "summary": "DHL at $31",
        "cost_usd": 0.12,
    },
    "lane.failed": {
        "type": "lane.failed",
        "lane_id": LANE,
        "space_id": SPC2,
        "from_space_id": SPC,
        "to_space_id": SPC2,
        "why": "no carrier answered",
    },
    "lane.cancelled": {
        "type": "lane.cancelled",
        "lane_id": LANE,
        "space_id": SPC2,
        "from_space_id": SPC,
        "to_space_id": SPC2,
        "why": "not needed",
    },
    "question.answered": {
        "type": "question.answered",
        "question_id": "q-3",
        "value": "acme",
        "text": "Acme",
        "run_id": RUN,
        "space_id": SPC,
    },
    "question.expired": {
        "type": "question.expired",
        "question_id": "q-3",
        "run_id": RUN,
        "space_id": SPC,
        "value": "acme",
        "default_taken": True,
        "note": "Nobody answered in time, so the default was taken: Acme.",
    },
}

# One sample per catalogued type, each giving every field the type has, so a round trip
# exercises all of them. A type added to the catalogue without a sample fails
# test_every_type_has_a_sample; a field added without one fails test_samples_give_every_field.
SAMPLES: dict[str, dict[str, Any]] = {
    "workspace.created": {"type": "workspace.created", "name": "Northwind"},
    "participant.joined": {
        "type": "participant.joined",
        "participant_id": HRN,
        "kind": "harness",
        "name": "Scout",
        "role": "member",
        "owner_id": USR,
        "autonomy": "off",
        "invite_id": "inv_01J0000000000000000000000",
    },
    "harness.disconnected": {"type": "harness.disconnected", "harness_id": HRN},
    "harness.policy_set": {
        "type": "harness.policy_set",
        "harness_id": HRN,
        "autonomy": "L2",
        "rules": [
            {"action": "jacobian.shell.execute", "args": "ls *", "effect": "allow"},
            {"action": "jacobian.mail.*", "effect": "ask"},
        ],
    },
    "invite.created": {
        "type": "invite.created",
        "invite_id": "inv_01J0000000000000000000000",
        "name": "Ada",
        "role": "member",
        "expires_at": "2026-01-08T00:00:00Z",
        "participant_id": USR,
    },
    "invite.withdrawn": {"type": "invite.withdrawn", "invite_id": "inv_01J0000000000000000000000"},
    "device.paired": {
        "type": "device.paired",
        "device_id": "crd_01J0000000000000000000000",
        "participant_id": USR,
        "kind": "browser",
        "invite_id": "inv_01J0000000000000000000000",
    },
    "person.updated": {
        "type": "person.updated",
        "participant_id": USR,
        "role": "guest",
        "active": False,
        "name": "Dana Ruiz",
        "time_zone": "Europe/Lisbon",
        "previous_name": "Dana",
        "disconnected": [HRN],
        "rooms_to": "usr_01J0000000000000000000002",
        "rooms_handed": [SPC],
    },
    "device.revoked": {
        "type": "device.revoked",
        "device_id": "crd_01J0000000000000000000000",
        "participant_id": USR,
    },
    "harness.declared": {
        "type": "harness.declared",
        "harness_id": HRN,
        "capabilities": ["new_spaces", "follows_rooms", "agents", "forks"],
    },
    "space.created": {
        "type": "space.created",
        "space_id": SPC,
        "kind": "direct",
        "title": "Scout",
        "members": [HRN],
        "home_of": HRN,
        "key": "chips-main",
        "shared": True,
        "opened_for": USR,
        "asked_of": HRN,
        "parent_space_id": "spc_01J8Z3PARENT0000000000000",
        "root_message_id": "msg_01J8Z3R00T00000000000000",
    },
    "space.erased": {
        "type": "space.erased",
        "space_id": SPC,
        "threads": ["spc_01J8Z3THREAD0000000000000"],
        "follows": [{"harness_id": HRN, "delete": True}],
    },
    "space.claimed": {
        "type": "space.claimed",
        "space_id": SPC,
        "key": "jspace-42",
        "shared": False,
    },
    "space.lock_set": {"type": "space.lock_set", "space_id": SPC, "locked": True},
    "space.spend_ceiling_set": {"type": "space.spend_ceiling_set", "space_id": SPC, "usd": 5.0},
    "workspace.referee_set": {
        "type": "workspace.referee_set",
        "stop": 12,
        "hold": "never",
        "circles": False,
    },
    "exchange.set": {
        "type": "exchange.set",
        "space_id": SPC,
        "state": "paused",
        "why": "spend",
        "spend": {"ceiling_usd": 3.0, "spent_usd": 3.1, "since_seq": 62, "uncounted_runs": 1},
    },
    "budget.warning": {
        "type": "budget.warning",
        "space_id": SPC,
        "budget": {"limit_usd": 3.0, "spent_usd": 2.41},
        "threshold": 80,
        "action": "warn",
        "scope": "job",
        "since_seq": 62,
    },
    "space.lead_set": {"type": "space.lead_set", "space_id": SPC, "agent_id": "agt_01J"},
    "room.working": {
        "type": "room.working",
        "space_id": SPC,
        "working": [
            {
                "agent_id": "agt_01J",
                "run_id": "run_7",
                "since": "2026-10-02T18:00:00.000Z",
                "heard_at": "2026-10-02T18:01:00.000Z",
                "silent_at": "2026-10-02T18:11:00.000Z",
                "last_step": "Editing ascii-alphabet.html",
            }
        ],
        "idle": [{"agent_id": "agt_02K", "since": "2026-10-02T17:57:00.000Z"}],
    },
    "room.idle": {
        "type": "room.idle",
        "space_id": SPC,
        "since": "2026-10-02T18:02:00.000Z",
        "idle": [{"agent_id": "agt_01J", "since": "2026-10-02T18:02:00.000Z"}],
    },
    "lead.handed": {
        "type": "lead.handed",
        "space_id": SPC,
        "message_id": "msg_01J",
        "agent_id": "agt_01J",
        "said_by": "agt_02K",
        "quiet_seconds": 20,
    },
    "space.updated": {
        "type": "space.updated",
        "space_id": SPC,
        "title": "India trip 2026",
        "state": "closed",
    },
    "membership.added": {
        "type": "membership.added",
        "space_id": SPC,
        "participant_id": HRN,
        "standing": "guest",
    },
    "membership.removed": {
        "type": "membership.removed",
        "space_id": SPC,
        "participant_id": HRN,
        "standing": "agents",
    },
    "message.post": {
        "type": "message.post",
        "space_id": SPC,
        "kind": "text",
        "text": "Northwind want the PO before they hold the slot.",
        "reply_to": MSG,
        "to": ["hrn_01J9ZQ3K4Y7M2N8P5R6S7T8V9W"],
        "mentions": ["hrn_01J9ZQ3K4Y7M2N8P5R6S7T8V9W"],
        "addressed_to": [],
        "exchange": {
            "count": 49,
            "stop": 16,
            "allowance": 48,
            "circle": True,
            "held": True,
            "note": "Stop now: tell the person what is done and what is blocked.",
        },
        "held": True,
        "held_for": ["hrn_01J9ZQ3K4Y7M2N8P5R6S7T8V9W"],
        "run_receipt": {
            "idempotency_key": "arjun-msg-7",
            "disposition": "queued",
            "run_ids": [RUN],
            "harness_ids": [HRN],
        },
    },
    "turn.passed": {"type": "turn.passed", "space_id": SPC, "reply_to": MSG},
    "message.heard": {"type": "message.heard", "run_id": RUN, "message_id": MSG, "space_id": SPC},
    "message.edited": {
        "type": "message.edited",
        "space_id": SPC,
        "message_id": MSG,
        "text": "Their slot holds until Friday noon.",
    },
    "message.deleted": {"type": "message.deleted", "space_id": SPC, "message_id": MSG},
    "message.hidden": {"type": "message.hidden", "space_id": SPC, "message_id": MSG},
    "message.shown": {"type": "message.shown", "space_id": SPC, "message_id": MSG},
    "message.pinned": {"type": "message.pinned", "space_id": SPC, "message_id": MSG},
    "message.unpinned": {"type": "message.unpinned", "space_id": SPC, "message_id": MSG},
    "feedback": {
        "type": "feedback",
        "space_id": SPC,
        "message_id": MSG,
        "kind": "reaction",
        "emoji": "👍",
        "about": "agt_01J9ZQ3K4Y7M2N8P5R6S7T8V9W",
        "harness_id": HRN,
        "standing": "owner",
        "withdrawn": True,
    },
    **RUN_SAMPLES,
    "attachment.caps_set": {
        "type": "attachment.caps_set",
        "photos_bytes": 20_000_000,
        "videos_bytes": 50_000_000,
        "files_bytes": 100_000_000,
    },
    "attachment.fetched": {
        "type": "attachment.fetched",
        "space_id": SPC,
        "attachment_id": "att_01J9ZQ5V1M3X8K2R7T4W6Y0STU",
        "name": "po.pdf",
        "message_id": MSG,
        "thumbnail": True,
    },
    "attachment.transcribed": {
        "type": "attachment.transcribed",
        "space_id": SPC,
        "message_id": MSG,
        "attachment_id": "att_01J9ZQ5V1M3X8K2R7T4W6Y0VWX",
        "outcome": "words",
        "transcript": "the quick brown fox jumps over the lazy dog",
        "note": "Heard by a machine: a name or a number may be misheard.",
        "engine": "pocketsphinx",
    },
    "agent.registered": {
        "type": "agent.registered",
        "agent_id": AGT,
        "harness_id": HRN,
        "key": "space-7",
        "name": "OpenClaw 2",
        "state": "active",
        "main": False,
        "space_id": SPC,
        "forked_from": AGT,
        "fork_of": "evt_01J9ZQ5V1M3X8K2R7T4W6Y0FRK",
        "made_for": "evt_01J9ZQ5V1M3X8K2R7T4W6Y0ASK",
        "face": "🦊",
    },
    "agent.updated": {
        "type": "agent.updated",
        "agent_id": AGT,
        "harness_id": HRN,
        "name": "Openings Prep",
        "state": "archived",
        "name_by": USR,
        "face": "att_01J9ZQ5V1M3X8K2R7T4W6Y0FACE",
    },
    "agent.attached": {
        "type": "agent.attached",
        "space_id": SPC,
        "agent_id": AGT,
        "harness_id": HRN,
        "replacing": HRN,
        "fork_of": "evt_01J9ZQ5V1M3X8K2R7T4W6Y0FRK",
        "made_for": "evt_01J9ZQ5V1M3X8K2R7T4W6Y0ASK",
        "catch_up": {"lines": [], "since_seq": 0, "truncated": False},
    },
    "agent.released": {
        "type": "agent.released",
        "space_id": SPC,
        "agent_id": AGT,
        "harness_id": HRN,
        "reason": "moved",
        "moved_to": SPC,
        "delete": False,
    },
    "membership.replaced": {
        "type": "membership.replaced",
        "space_id": SPC,
        "participant_id": AGT,
        "replaced": HRN,
    },
    "agent.fork": {"type": "agent.fork", "space_id": SPC, "agent_id": AGT, "harness_id": HRN},
    "agent.asked": {
        "type": "agent.asked",
        "space_id": SPC,
        "harness_id": HRN,
        "name": "J3",
        "by": USR,
    },
    "message.held": {
        "type": "message.held",
        "agent_id": AGT,
        "harness_id": HRN,
        "text": "Done with the PO.",
        "upload_ids": ["att_01J9ZQ5V1M3X8K2R7T4W6Y0STU"],
        "left_space_id": SPC,
    },
}


def _post(kind: str, card: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message.post", "space_id": SPC, "kind": kind, kind: card}


# Further samples of types whose fields one sample cannot all give (a message.post carries
# one card; feedback is a reaction or a correction): together they give every field.
MORE_SAMPLES: dict[str, list[dict[str, Any]]] = {
    # Several choices, in the order asked (ADR 0131).
    "question.answered": [
        {"type": "question.answered", "question_id": "q-4", "values": ["acme", "globex"]}
    ],
    # The dial's own decision (ADR 0130), by system.
    "approval.resolved": [
        {
            "type": "approval.resolved",
            "approval_id": "perm-18",
            "decision": "approve",
            "run_id": RUN,
            "space_id": SPC,
            "autonomy": "L2",
            "rule": {"action": "jacobian.shell.execute", "args": "ls *", "effect": "allow"},
            "bound_to": "sha256:" + "0" * 64,
        }
    ],
    "message.post": [
        # What a free agent said, posted by Chips in the room it joined (ADR 0071).
        {
            "type": "message.post",
            "space_id": SPC,
            "kind": "text",
            "text": "Done with the PO.",
            "held_since": "2026-09-02T14:20:02.004000Z",
        },
        # A reply on the run, as logged: Chips filled in the run's room.
        {
            "type": "message.post",
            "space_id": SPC,
            "run_id": "run_j_42",
            "kind": "text",
            "text": "Sent.",
        },
        {
            "type": "message.post",
            "space_id": SPC,
            "kind": "text",
            "upload_ids": ["att_01J9ZQ5V1M3X8K2R7T4W6Y0NEW"],
            "replaces": {"att_01J9ZQ5V1M3X8K2R7T4W6Y0NEW": "att_01J9ZQ5V1M3X8K2R7T4W6Y0OLD"},
            "attachments": [
                {
                    "attachment_id": "att_01J9ZQ5V1M3X8K2R7T4W6Y0NEW",
                    "name": "ascii-alphabet.png",
                    "mime_type": "image/png",
                    "kind": "photo",
                    "byte_size": 4812,
                    "sha256": "9f2c" * 16,
                    "version": 2,
                    "width": 640,
                    "height": 480,
                    "duration_ms": 0,
                    "thumbnail": True,
                    "replaces": "att_01J9ZQ5V1M3X8K2R7T4W6Y0OLD",
                    "heard": {
                        "outcome": "words",
                        "transcript": "the quick brown fox",
                        "note": "Heard by a machine: a name or a number may be misheard.",
                        "engine": "pocketsphinx",
                    },
                }
            ],
        },
        _post(
            "status",
            {"phase": "working", "verb": "Reading the PO", "progress": 0.4, "estimate": "2 min"},
        ),
        _post(
            "approval",
            {
                "action": "send_po",
                "preview": "PO 4471 to Northwind",
                "risk": "high",
                "expires_at": "2026-09-02T15:00:00Z",
                "answerers": [USR],
            },
        ),
        _post(
            "question",
            {
                "prompt": "Which supplier?",
                "options": [
                    {"label": "Northwind", "value": "nw"},
                    {"label": "Contoso", "value": "co"},
                ],
                "free_text": True,
                "default": "nw",
            },
        ),
        _post(
            "receipt",
            {
                "steps": [{"title": "Read the PO", "status": "done", "summary": "3 lines"}],
                "tool_calls": 4,
                "sources": ["po-4471.pdf"],
                "tokens": {"input": 1200, "output": 300},
                "cost_usd": 0.02,
                "duration_ms": 5400,
                "upload_ids": ["att_01J9ZQ5V1M3X8K2R7T4W6Y0RCP"],
            },
        ),
        _post(
            "artifact",
            {
                "name": "po.csv",
                "form": "table",
                "version": 2,
                "language": "csv",
                "content": "a,b",
                "upload_id": "att_01J9ZQ5V1M3X8K2R7T4W6Y0ART",
            },
        ),
        _post(
            "task",
            {
                "goal": "Get the PO out",
                "constraints": ["under $5k"],
                "deadline": "2026-09-05T17:00:00Z",
                "autonomy": "suggest",
                "upload_ids": ["att_01J9ZQ5V1M3X8K2R7T4W6Y0TSK"],
            },
        ),
        _post(
            "handoff",
            {
                "recipient": HRN,
                "summary": "PO drafted",
                "open_items": ["sign"],
                "upload_ids": ["att_01J9ZQ5V1M3X8K2R7T4W6Y0HND"],
            },
        ),
        _post("checkpoint", {"milestone": "PO drafted", "next": "Send it"}),
        _post(
            "summary",
            {
                "outcome": "PO sent",
                "changed": ["po.csv"],
                "cost_usd": 0.4,
                "follow_ups": ["Chase on Friday"],
                "upload_ids": ["att_01J9ZQ5V1M3X8K2R7T4W6Y0SUM"],
            },
        ),
    ],
    "feedback": [
        {
            "type": "feedback",
            "space_id": SPC,
            "message_id": MSG,
            "kind": "correction",
            "note": "The total is off",
            "reasons": ["wrong_facts", "too_long"],
        },
    ],
}

TYPES = sorted(CATALOGUE)
ALL_SAMPLES = [
    pytest.param(sample, id=f"{name}-{i}")
    for name in TYPES
    for i, sample in enumerate([SAMPLES[name], *MORE_SAMPLES.get(name, [])])
]


def test_every_type_has_a_sample() -> None:
    """Every catalogued type has a sample, and no sample names a type the catalogue lacks.

    docs/architecture/code-style.md, One typed catalogue of events: "Every event type has a sample
    and a round-trip test".
    """
    assert set(SAMPLES) - set(CATALOGUE) == set(), "samples for types not in the catalogue"
    assert set(CATALOGUE) - set(SAMPLES) == set(), "catalogued types without a sample"


@pytest.mark.parametrize("name", TYPES)
def test_samples_give_every_field(name: str) -> None:
    """A type's samples set every field it has, so the round trips cover all of them."""
    given = set(SAMPLES[name]).union(*(set(s) for s in MORE_SAMPLES.get(name, [])))
    assert given == set(CATALOGUE[name].model_fields)


@pytest.mark.parametrize("sample", ALL_SAMPLES)
def test_round_trip(sample: dict[str, Any]) -> None:
    """parse → JSON dump → parse gives the same event, and the dump is the sample.

    docs/architecture/code-style.md, One typed catalogue of events: a round-trip test for every
    type.
    """
    body = parse_event(sample)
    assert isinstance(body, CATALOGUE[sample["type"]])
    dumped = body.model_dump(mode="json", exclude_none=True)
    assert parse_event(dumped) == body
    assert dumped == sample


@pytest.mark.parametrize("name", TYPES)
def test_type_names_its_model(name: str) -> None:
    """The ``type`` literal is written once, as the model's default, and names its class.

    docs/architecture/code-style.md, Names explain themselves: ``message.post`` is ``MessagePost``.
    """
    cls = CATALOGUE[name]
    assert cls.model_fields["type"].default == name
    assert cls.__name__ == "".join(part.capitalize() for part in re.split(r"[._]", name))


@pytest.mark.parametrize("name", TYPES)
def test_every_type_has_a_docstring(name: str) -> None:
    """Each model says what its event is; docs/protocol/events.md shows the first line."""
    assert (CATALOGUE[name].__doc__ or "").strip()


@pytest.mark.parametrize("name", TYPES)
def test_bodies_are_frozen(name: str) -> None:
    """A parsed event is a fact: it cannot be changed after it is decoded."""
    body = parse_event(SAMPLES[name])
    with pytest.raises(ValidationError):
        body.type = "something.else"  # type: ignore[misc]


def _refused(data: Any) -> InvalidEvent:
    with pytest.raises(InvalidEvent) as caught:
        parse_event(data)
    return caught.value


def test_unknown_type_is_refused() -> None:
    """A type the catalogue lacks is invalid_event on ``type`` (docs/product/websocket.md,
    Writing)."""
    err = _refused({"type": "message.shouted", "space_id": SPC, "text": "hi"})
    assert err.field == "type"
    assert "message.shouted" in err.message


@pytest.mark.parametrize("data", [{}, {"type": ""}, {"type": 7}], ids=["absent", "empty", "int"])
def test_missing_type_is_refused(data: dict[str, Any]) -> None:
    """An event without a string ``type`` is refused on ``type``."""
    assert _refused(data).field == "type"


def test_non_object_is_refused() -> None:
    """An event is a JSON object; anything else is refused as a whole."""
    assert _refused(["message.post"]).field == "event"


def test_missing_required_field_is_refused() -> None:
    """A required field left out is refused naming it."""
    data = {k: v for k, v in SAMPLES["message.post"].items() if k != "text"}
    err = _refused(data)
    assert err.field == "text"
    assert err.message == "text is required"


def test_wrong_type_is_refused() -> None:
    """A field of the wrong JSON type is refused naming it."""
    err = _refused({**SAMPLES["message.post"], "text": 5})
    assert err.field == "text"


def test_bad_literal_is_refused() -> None:
    """A value outside a field's closed set is refused naming the field."""
    err = _refused({**SAMPLES["membership.added"], "standing": "emperor"})
    assert err.field == "standing"


def test_extra_field_is_refused() -> None:
    """An undeclared field is refused naming it: extra="forbid" on every model."""
    err = _refused({**SAMPLES["message.post"], "colour": "blue"})
    assert err.field == "colour"
    assert err.message == "colour is not a field of this event"


@pytest.mark.parametrize("field", sorted(ENVELOPE_FIELDS))
def test_envelope_field_is_refused(field: str) -> None:
    """Chips fills in the envelope; a client that sends any of it is refused naming it.

    docs/product/websocket.md, Writing: "Chips fills in v, id, ts, workspace_id and actor."
    """
    err = _refused({**SAMPLES["message.post"], field: 1})
    assert err.field == field


def test_registering_a_type_twice_fails() -> None:
    """A second model claiming a registered name is refused before it is added.

    docs/architecture/code-style.md, One typed catalogue of events: registering a name twice fails
    at import.
    """
    before = dict(CATALOGUE)

    class MessagePostAgain(EventBody):
        """A throwaway model that claims a name already taken."""

        type: Literal["message.post"] = "message.post"

    with pytest.raises(TypeError, match="registered twice"):
        register(MessagePostAgain)
    assert before == CATALOGUE


def test_registering_a_type_without_a_name_fails() -> None:
    """A model must give its ``type`` a literal default, or it cannot be catalogued."""
    before = dict(CATALOGUE)

    class Nameless(EventBody):
        """A throwaway model with no type name."""

    with pytest.raises(TypeError, match="literal default"):
        register(Nameless)
    assert before == CATALOGUE


def test_canonical_puts_the_envelope_first() -> None:
    """The envelope comes first in ENVELOPE_ORDER and the event's own fields follow, sorted.

    docs/architecture/design.md §4: replayed and live frames must be the same bytes, whatever order
    storage kept the fields in.
    """
    event = {
        "text": "hi",
        "space_id": SPC,
        "actor": {"kind": "person", "id": USR},
        "reply_to": MSG,
        "seq": 42,
        "kind": "text",
        "type": "message.post",
        "ts": "2026-09-02T14:20:02.004Z",
        "workspace_id": "ws_01J9ZQ5V1M3X8K2R7T4W6Y0PQR",
        "v": 1,
        "id": "evt_01J9ZQ5V1M3X8K2R7T4W6Y0KMN",
    }
    out = canonical(event)
    assert out == event
    assert list(out) == [*ENVELOPE_ORDER, "kind", "reply_to", "text"]


def test_canonical_skips_absent_envelope_fields() -> None:
    """An event without a space keeps the rest of the envelope in order and sorts its fields."""
    event = {"name": "Northwind", "type": "workspace.created", "seq": 1, "v": 1, "id": "evt_1"}
    assert list(canonical(event)) == ["v", "id", "seq", "type", "name"]


def test_card_lists_hold_bounded_lines() -> None:
    from chips_common.events import InvalidEvent, parse_event
    from chips_common.events.messages import MAX_LINE

    card = {"type": "message.post", "space_id": "spc_1", "kind": "task"}
    parse_event({**card, "task": {"goal": "g", "constraints": ["x" * MAX_LINE]}})
    with pytest.raises(InvalidEvent) as refused:
        parse_event({**card, "task": {"goal": "g", "constraints": ["x" * (MAX_LINE + 1)]}})
    assert refused.value.field.startswith("task.constraints")


def test_an_answer_carries_no_bulky_field() -> None:
    from chips_common.append import brief

    event = {
        "v": 1,
        "id": "e",
        "seq": 3,
        "type": "message.post",
        "message_id": "msg_e",
        "text": "y" * 40_000,
        "run_receipt": {"idempotency_key": "k"},
    }
    slim = brief(event)
    assert "text" not in slim
    assert slim["seq"] == 3 and slim["message_id"] == "msg_e" and slim["run_receipt"]


# --- EventJson says what the catalogue logs (chips_common.events.wire, docs/adr/0150) ---

WIRE = TypeAdapter(EventJson)
WIRE_ENVELOPE: dict[str, Any] = {
    "v": 1,
    "id": "evt_1",
    "seq": 7,
    "ts": "2026-12-04T13:00:00Z",
    "workspace_id": "wsp_1",
    "actor": {"kind": "harness", "id": "hrn_1"},
}


def logged(sample: dict[str, Any]) -> dict[str, Any]:
    body = parse_event(sample).model_dump(mode="json", exclude_none=True)
    return {**WIRE_ENVELOPE, **body}


def test_every_catalogue_field_is_a_key() -> None:
    keys = set(EventJson.__annotations__)
    fields = {f for model in CATALOGUE.values() for f in model.model_fields}
    assert fields - keys == set()
    assert keys >= ENVELOPE_KEYS


@pytest.mark.parametrize("sample", ALL_SAMPLES)
def test_a_logged_sample_is_event_json(sample: dict[str, Any]) -> None:
    event = logged(sample)
    assert WIRE.validate_python(event, strict=True) == event


def test_a_wrongly_typed_field_is_not() -> None:
    with pytest.raises(ValidationError):
        WIRE.validate_python({**WIRE_ENVELOPE, "type": "message.post", "space_id": 3}, strict=True)
