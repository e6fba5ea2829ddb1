"""The event catalogue: every event type Chips logs, each with its schema.

Importing this package registers every type; ``parse_event`` decodes one.
"""

from chips_common.events import messages, spaces, workspaces
from chips_common.events.base import (
    CATALOGUE,
    ENVELOPE_FIELDS,
    EVENT_VERSION,
    PROTOCOL_VERSION,
    EventBody,
    InvalidEvent,
    canonical,
    parse_event,
)
from chips_common.events.messages import MessagePost
from chips_common.events.spaces import (
    MembershipAdded,
    MembershipRemoved,
    SpaceClaimed,
    SpaceCreated,
    SpaceErased,
    SpaceLockSet,
    SpaceUpdated,
)
from chips_common.events.workspaces import (
    CAPABILITIES,
    HarnessDeclared,
    ParticipantJoined,
    WorkspaceCreated,
)

# Delivered shapes that are not logged types: a harness hears a person's message.post
# as message.new (websocket.md, What a harness hears).
DELIVERED_TYPES = frozenset({"message.new"})

__all__ = [
    "CAPABILITIES",
    "CATALOGUE",
    "DELIVERED_TYPES",
    "ENVELOPE_FIELDS",
    "EVENT_VERSION",
    "PROTOCOL_VERSION",
    "EventBody",
    "HarnessDeclared",
    "InvalidEvent",
    "MembershipAdded",
    "MembershipRemoved",
    "MessagePost",
    "ParticipantJoined",
    "SpaceClaimed",
    "SpaceCreated",
    "SpaceErased",
    "SpaceLockSet",
    "SpaceUpdated",
    "WorkspaceCreated",
    "canonical",
    "messages",
    "parse_event",
    "spaces",
    "workspaces",
]
