"""Agents (docs/adr/0070, 0071): registering them, where they may be, and what a free one
says (docs/product/websocket.md: Agents, One room at a time, Forks, New agents).

**One rule decides where an agent may be**: :func:`refusal_to_enter`. Every way an agent
enters a room goes through it as the event is written — a person's add
(``rules/spaces.py``), a move, attach, an unarchive bringing back the agents its archive
released, a fork's copy or a new agent joining the room it was asked for, and a free
agent opening a room with its harness's owner — so two at once leave it in one room and
the other is told ``agent_elsewhere``.

**Entering** (:func:`enter`): the harness stands behind the agent, so when it is not in
the room it is added first with standing ``agents``; then the agent's ``membership.added``
and ``agent.attached``; then what it said while free, posted by it, oldest first, with
``held_since``. **Leaving** (:func:`leave`): each run of the agent in the room is sent
``run.cancel`` while it is still there; then ``agent.released``, its ``membership.removed``,
and the harness's row when it stood there only behind its agents and none is left.

Each operation is a :class:`Plan`: the events to log, in order, each decided against the
door state as it will stand when that event is staged (the plan reads through its own
changes), with the seq it will be logged at accounted for in its changes.
"""

from chips_eventlog.rules.agents.adjust import may_adjust, run_attach, run_move, run_rename
from chips_eventlog.rules.agents.asks import check_asked, check_fork
from chips_eventlog.rules.agents.free import hold, open_room, route_post
from chips_eventlog.rules.agents.plan import (
    BEHIND,
    STOP_WHY,
    HeldPost,
    Plan,
    agent_named,
    facts_of,
    main_agent,
    main_room_of,
    run_agent,
    same_name,
)
from chips_eventlog.rules.agents.register import (
    archive_agent,
    ask_answered,
    register_again,
    register_new,
    run_register,
    unarchive_agent,
    wait_words,
)
from chips_eventlog.rules.agents.rooms import (
    archive_room,
    bring_back,
    check_enter,
    enter,
    leave,
    refusal_to_enter,
    release_for_deletion,
)

__all__ = [
    "BEHIND",
    "STOP_WHY",
    "HeldPost",
    "Plan",
    "agent_named",
    "archive_agent",
    "archive_room",
    "ask_answered",
    "bring_back",
    "check_asked",
    "check_enter",
    "check_fork",
    "enter",
    "facts_of",
    "hold",
    "leave",
    "main_agent",
    "main_room_of",
    "may_adjust",
    "open_room",
    "refusal_to_enter",
    "register_again",
    "register_new",
    "release_for_deletion",
    "route_post",
    "run_agent",
    "run_attach",
    "run_move",
    "run_register",
    "run_rename",
    "same_name",
    "unarchive_agent",
    "wait_words",
]
