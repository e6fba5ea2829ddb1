"""Who is delivered which event: ``MembershipView`` folds membership in seq order.

docs/product/websocket.md, Subscribing and resuming: "A subscription is scoped by membership: it
delivers the events of the spaces the credential belongs to, and the workspace-wide events
that belong to none." docs/architecture/design.md §4: the decision for event N uses membership as of
N.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chips_common.rules.scope import MembershipView

pytestmark = pytest.mark.unit

ME = "usr_me"
OTHER = "usr_other"
HARNESS = "hrn_scout"
SPACE = "spc_a"


def person(participant_id: str) -> dict[str, str]:
    return {"kind": "person", "id": participant_id}


def post(space_id: str, by: str = OTHER) -> dict[str, Any]:
    return {"type": "message.post", "space_id": space_id, "text": "hi", "actor": person(by)}


def added(space_id: str, who: str, by: str = OTHER) -> dict[str, Any]:
    return {
        "type": "membership.added",
        "space_id": space_id,
        "participant_id": who,
        "actor": person(by),
    }


def removed(space_id: str, who: str, by: str = OTHER) -> dict[str, Any]:
    return {
        "type": "membership.removed",
        "space_id": space_id,
        "participant_id": who,
        "actor": person(by),
    }


def created(space_id: str, by: str, members: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "space.created",
        "space_id": space_id,
        "kind": "group",
        "members": members or [],
        "actor": person(by),
    }


@pytest.mark.parametrize(
    "event",
    [
        {
            "type": "workspace.created",
            "name": "Northwind",
            "actor": {"kind": "operator", "id": "op"},
        },
        {"type": "participant.joined", "participant_id": HARNESS, "kind": "harness", "name": "S"},
    ],
    ids=["workspace.created", "participant.joined"],
)
def test_workspace_wide_events_are_visible(event: dict[str, Any]) -> None:
    """An event of no space is delivered to everyone.

    docs/product/websocket.md, Subscribing and resuming: "the workspace-wide events that belong to
    none".
    """
    assert MembershipView(ME).fold(event) is True


def test_space_events_are_visible_only_to_members() -> None:
    """A space's events reach its members and nobody else.

    docs/product/websocket.md, Subscribing and resuming: "A harness’s token sees no space its
    harness is not in."
    """
    outsider = MembershipView(ME)
    member = MembershipView(ME, spaces=[SPACE])
    assert outsider.fold(post(SPACE)) is False
    assert member.fold(post(SPACE)) is True


def test_opener_of_a_space_is_its_first_member() -> None:
    """Whoever opens a space is its first member (docs/product/websocket.md, Writing)."""
    view = MembershipView(ME)
    assert view.fold(created(SPACE, by=ME)) is True
    assert view.fold(post(SPACE)) is True
    assert SPACE in view.spaces


def test_members_a_space_opens_with_are_in_it() -> None:
    """The ``members`` of space.created are in the space from its first event
    (docs/product/spaces.md)."""
    view = MembershipView(HARNESS)
    assert view.fold(created(SPACE, by=OTHER, members=[HARNESS])) is True
    assert view.fold(post(SPACE)) is True


def test_a_space_a_harness_opens_for_its_owner_is_the_owners_too() -> None:
    """docs/product/spaces.md, How one is opened: through its door a harness gets "a direct space
    with itself and its owner in it, opened for the owner"."""
    event = {
        "type": "space.created",
        "space_id": SPACE,
        "kind": "direct",
        "key": "chips-main",
        "opened_for": ME,
        "actor": {"kind": "harness", "id": HARNESS},
    }
    owner, harness, other = MembershipView(ME), MembershipView(HARNESS), MembershipView(OTHER)
    assert owner.fold(event) is True and harness.fold(event) is True
    assert other.fold(event) is False
    assert owner.fold(post(SPACE, by=HARNESS)) is True


def test_a_space_opened_without_me_is_not_mine() -> None:
    """A space opened by somebody else, without me in it, stays hidden."""
    view = MembershipView(ME)
    assert view.fold(created(SPACE, by=OTHER, members=[HARNESS])) is False
    assert view.fold(post(SPACE)) is False


def test_being_added_is_delivered_and_lets_me_in() -> None:
    """membership.added of me is delivered to me, and the space is mine from then on.

    docs/product/spaces.md, Leaving one: anyone still in the space can add you back.
    """
    view = MembershipView(ME)
    assert view.fold(post(SPACE)) is False
    assert view.fold(added(SPACE, ME)) is True
    assert view.fold(post(SPACE)) is True


def test_being_removed_is_delivered_and_then_the_space_is_gone() -> None:
    """membership.removed of me reaches me (I was in before), and then nothing of it does.

    docs/product/spaces.md, Leaving one: /leave is a membership.removed naming you.
    """
    view = MembershipView(ME, spaces=[SPACE])
    assert view.fold(removed(SPACE, ME, by=ME)) is True
    assert view.fold(post(SPACE)) is False
    assert SPACE not in view.spaces


def test_removal_from_a_space_i_was_not_in_is_not_delivered() -> None:
    """A removal of me from a space I was never in is news of a space I cannot see."""
    view = MembershipView(ME)
    assert view.fold(removed(SPACE, ME)) is False


def test_other_peoples_membership_follows_the_space() -> None:
    """Membership events about others are visible only in spaces I am in."""
    outsider = MembershipView(ME)
    assert outsider.fold(added(SPACE, OTHER)) is False
    assert outsider.fold(removed(SPACE, OTHER)) is False
    member = MembershipView(ME, spaces=[SPACE])
    assert member.fold(added(SPACE, OTHER)) is True
    assert member.fold(removed(SPACE, OTHER)) is True
    assert SPACE in member.spaces


def test_membership_is_per_space() -> None:
    """Being in one space says nothing about another."""
    view = MembershipView(ME)
    view.fold(added("spc_a", ME))
    assert view.fold(post("spc_a")) is True
    assert view.fold(post("spc_b")) is False


# --- property: the fold against a model that reads the history backwards -----------------

SPACES = ("spc_a", "spc_b", "spc_c")
PEOPLE = (ME, OTHER, HARNESS)

spaces_st = st.sampled_from(SPACES)
people_st = st.sampled_from(PEOPLE)
events_st = st.one_of(
    st.builds(added, spaces_st, people_st, people_st),
    st.builds(removed, spaces_st, people_st, people_st),
    st.builds(post, spaces_st, people_st),
    st.builds(created, spaces_st, people_st, st.lists(people_st, max_size=2, unique=True)),
    st.just({"type": "participant.joined", "participant_id": OTHER, "kind": "person", "name": "O"}),
)


def _lets_me_in(event: dict[str, Any]) -> bool | None:
    """Whether ``event`` puts me in its space (True), takes me out (False), or neither (None)."""
    kind: str = event["type"]
    if kind == "space.created":
        if event["actor"]["id"] == ME or ME in event["members"]:
            return True
        return None
    if kind in ("membership.added", "membership.removed") and event["participant_id"] == ME:
        return kind == "membership.added"
    return None


def reference_member(initial: frozenset[str], history: list[dict[str, Any]], space: str) -> bool:
    """Am I in ``space`` after ``history``? The last event about me there decides."""
    for event in reversed(history):
        if event.get("space_id") == space:
            verdict = _lets_me_in(event)
            if verdict is not None:
                return verdict
    return space in initial


def reference_visible(
    initial: frozenset[str], history: list[dict[str, Any]], event: dict[str, Any]
) -> bool:
    """Is ``event`` delivered to me, given everything before it?"""
    space = event.get("space_id")
    if space is None:
        return True
    if _lets_me_in(event):
        return True
    return reference_member(initial, history, space)


@given(st.frozensets(spaces_st), st.lists(events_st, max_size=40))
def test_fold_matches_reference_model(
    initial: frozenset[str], events: list[dict[str, Any]]
) -> None:
    """For any history, each event's visibility is membership as of that event.

    docs/architecture/design.md §4: the decision for event N uses membership as of N; a removal of
    me is delivered because I was in before it, an addition because I am in after it.
    """
    view = MembershipView(ME, spaces=initial)
    for i, event in enumerate(events):
        expected = reference_visible(initial, events[:i], event)
        assert view.fold(event) is expected, (i, event)
    for space in SPACES:
        assert (space in view.spaces) is reference_member(initial, events, space)


@given(st.lists(events_st, max_size=40), st.data())
def test_resuming_from_a_snapshot_decides_the_same(
    events: list[dict[str, Any]], data: st.DataObject
) -> None:
    """A view resumed mid-stream from the spaces it had there decides as one that never stopped.

    docs/product/websocket.md, Subscribing and resuming: replay and live delivery give the same
    frames.
    """
    cut = data.draw(st.integers(min_value=0, max_value=len(events)))
    whole = MembershipView(ME)
    decisions = [whole.fold(event) for event in events]
    first = MembershipView(ME)
    for event in events[:cut]:
        first.fold(event)
    resumed = MembershipView(ME, spaces=first.spaces)
    assert [resumed.fold(event) for event in events[cut:]] == decisions[cut:]


def test_own_only_events_are_told_to_their_doer_alone() -> None:
    """turn.passed and delete-for-me reach only whoever did them (docs/product/messages.md)."""
    for kind in ("turn.passed", "message.hidden", "message.shown"):
        event = {**post(SPACE, by=ME), "type": kind}
        assert MembershipView(ME, spaces=[SPACE]).fold(event) is True
        assert MembershipView(OTHER, spaces=[SPACE]).fold(event) is False


def test_a_harness_is_told_the_pass_its_agent_made() -> None:
    """docs/adr/0154: a harness passes its turn through the agent Chips gave it there."""
    agent = {"kind": "agent", "id": "agt_given", "harness_id": HARNESS}
    event = {**post(SPACE, by=OTHER), "type": "turn.passed", "actor": agent}
    assert MembershipView(HARNESS, spaces=[SPACE], kind="harness").fold(event) is True
    assert MembershipView(OTHER, spaces=[SPACE], kind="harness").fold(event) is False


def test_a_harness_hears_feedback_only_about_its_own_words() -> None:
    event = {**post(SPACE, by=ME), "type": "feedback", "about": HARNESS}
    assert MembershipView(HARNESS, spaces=[SPACE], kind="harness").fold(event) is True
    assert MembershipView(OTHER, spaces=[SPACE], kind="harness").fold(event) is False
    assert MembershipView(OTHER, spaces=[SPACE], kind="person").fold(event) is True


def thread(space_id: str, parent: str, by: str = OTHER) -> dict[str, Any]:
    return {
        "type": "space.created",
        "space_id": space_id,
        "kind": "thread",
        "members": [],
        "parent_space_id": parent,
        "root_message_id": "msg_root",
        "actor": person(by),
    }


def erased(space_id: str, threads: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "space.erased",
        "space_id": space_id,
        "threads": threads or [],
        "follows": [],
        "actor": person(OTHER),
    }


def test_whoever_is_in_the_room_is_in_its_threads() -> None:
    """docs/product/messages.md, Threads: no members of their own; the room's are in them, and
    leave them with the room."""
    view = MembershipView(ME, [SPACE])
    assert view.fold(thread("spc_t", SPACE)) is True
    assert view.fold(post("spc_t")) is True
    assert view.fold(removed(SPACE, ME)) is True
    assert view.fold(post("spc_t")) is False
    assert view.fold(added(SPACE, ME)) is True
    assert view.fold(post("spc_t")) is True


def test_a_thread_of_a_room_you_are_not_in_is_not_yours() -> None:
    view = MembershipView(ME)
    assert view.fold(thread("spc_t", SPACE, by=OTHER)) is False
    assert view.fold(post("spc_t")) is False


def test_threads_known_from_before_a_replay_are_scoped_by_their_room() -> None:
    view = MembershipView(ME, [SPACE], parents={"spc_t": SPACE})
    assert view.fold(post("spc_t")) is True


def test_space_erased_goes_to_whoever_was_in_it_and_ends_it() -> None:
    """docs/product/spaces.md, Deleting one: every device is sent it and forgets the room."""
    view = MembershipView(ME, [SPACE], parents={"spc_t": SPACE})
    assert view.fold(erased(SPACE, ["spc_t"])) is True
    assert view.spaces == set() and view.parents == {}
    assert view.fold(post(SPACE)) is False
    outsider = MembershipView(ME)
    assert outsider.fold(erased(SPACE)) is False


# --- Agents (docs/product/websocket.md, Agents; docs/adr/0079) --------------------------------

JACOBIAN = "hrn_jacobian"
AGENT = "agt_j1"


def registered(agent_id: str = AGENT, harness_id: str = JACOBIAN) -> dict[str, Any]:
    return {
        "type": "agent.registered",
        "agent_id": agent_id,
        "harness_id": harness_id,
        "key": "k",
        "name": "J1",
        "actor": {"kind": "harness", "id": harness_id},
    }


def renamed(agent_id: str = AGENT, harness_id: str = JACOBIAN) -> dict[str, Any]:
    return {
        "type": "agent.updated",
        "agent_id": agent_id,
        "harness_id": harness_id,
        "name": "J One",
        "actor": {"kind": "harness", "id": harness_id},
    }


def test_agent_news_goes_to_its_harness_and_the_people_told_who_everybody_is() -> None:
    member = MembershipView(ME, kind="person", role="member")
    admin = MembershipView(ME, kind="person", role="admin")
    guest = MembershipView(ME, kind="person", role="guest")
    own = MembershipView(JACOBIAN, kind="harness", speaks_agents=True)
    stranger = MembershipView(HARNESS, kind="harness", speaks_agents=True)
    for event in (registered(), renamed()):
        assert member.fold(event) and admin.fold(event) and own.fold(event)
        assert not guest.fold(event)
        assert not stranger.fold(event)


def test_a_guest_or_a_harness_sharing_a_room_with_the_agent_is_told() -> None:
    guest = MembershipView(ME, [SPACE], kind="person", role="guest")
    harness = MembershipView(HARNESS, [SPACE], kind="harness", speaks_agents=True)
    elsewhere = MembershipView(OTHER, ["spc_b"], kind="person", role="guest")
    for view in (guest, harness, elsewhere):
        assert not view.fold(registered())  # the agent is in no room yet
    for view in (guest, harness, elsewhere):
        view.fold(added(SPACE, AGENT))
    assert guest.fold(renamed()) and harness.fold(renamed())
    assert not elsewhere.fold(renamed())
    for view in (guest, harness, elsewhere):
        view.fold(removed(SPACE, AGENT))
    assert not guest.fold(renamed()) and not harness.fold(renamed())


def test_an_agent_in_a_room_from_before_the_view_started_is_known() -> None:
    guest = MembershipView(ME, [SPACE], role="guest", agent_rooms={AGENT: {SPACE}})
    assert guest.fold(renamed())
    guest.fold({"type": "space.erased", "space_id": SPACE, "actor": person(OTHER)})
    assert not guest.fold(renamed())


def test_an_agent_a_room_is_opened_with_is_in_it() -> None:
    guest = MembershipView(ME, kind="person", role="guest")
    guest.fold(created(SPACE, OTHER, [ME, AGENT]))
    assert guest.fold(renamed())


def test_held_words_go_to_the_agents_harness_alone() -> None:
    held = {
        "type": "message.held",
        "agent_id": AGENT,
        "harness_id": JACOBIAN,
        "text": "hi",
        "actor": {"kind": "agent", "id": AGENT, "harness_id": JACOBIAN},
    }
    assert MembershipView(JACOBIAN, kind="harness", speaks_agents=True).fold(held)
    assert not MembershipView(ME, kind="person", role="owner").fold(held)
    assert not MembershipView(HARNESS, kind="harness", speaks_agents=True).fold(held)


def test_a_fork_asked_in_a_room_reaches_the_harness_not_in_it() -> None:
    fork = {
        "type": "agent.fork",
        "space_id": SPACE,
        "agent_id": AGENT,
        "harness_id": JACOBIAN,
        "actor": person(OTHER),
    }
    assert MembershipView(JACOBIAN, kind="harness", speaks_agents=True).fold(fork)
    assert MembershipView(ME, [SPACE]).fold(fork)
    assert not MembershipView(HARNESS, kind="harness", speaks_agents=True).fold(fork)


def test_a_harness_before_agents_is_shown_its_agents_as_itself() -> None:
    view = MembershipView(JACOBIAN, [SPACE], kind="harness")
    assert view.seen(registered()) is None  # told, but not in the pre-agents view
    assert view.own_agents == {AGENT}
    said = {
        "type": "message.post",
        "space_id": SPACE,
        "text": "hi",
        "actor": {"kind": "agent", "id": AGENT, "harness_id": JACOBIAN},
        "addressed_to": [AGENT],
    }
    shown = view.seen(said)
    assert shown is not None
    assert shown["actor"] == {"kind": "harness", "id": JACOBIAN}
    assert shown["addressed_to"] == [JACOBIAN]
    # Declaring agents, as of its seq, shows agents as agents from then on.
    view.fold({"type": "harness.declared", "harness_id": JACOBIAN, "capabilities": ["agents"]})
    assert view.seen(said) is said
    assert view.seen(renamed()) is not None
    view.fold({"type": "harness.declared", "harness_id": JACOBIAN, "capabilities": []})
    assert view.seen(renamed()) is None


def test_a_person_is_shown_agents_as_agents() -> None:
    view = MembershipView(ME, [SPACE], kind="person")
    said = {
        "type": "message.post",
        "space_id": SPACE,
        "text": "hi",
        "actor": {"kind": "agent", "id": AGENT, "harness_id": JACOBIAN},
    }
    assert view.seen(said) is said
