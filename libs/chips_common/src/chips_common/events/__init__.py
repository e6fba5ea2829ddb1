"""The event catalogue: every event type Chips logs, each with its schema.

Importing this package registers every type; ``parse_event`` decodes one.
"""

from chips_common.events import lanes, messages, runs, spaces, workspaces
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
from chips_common.events.lanes import (
    LANE_TYPES,
    LaneCancelled,
    LaneCompleted,
    LaneFailed,
    LaneOpened,
)
from chips_common.events.messages import (
    KINDS,
    Feedback,
    MessageDeleted,
    MessageEdited,
    MessageHidden,
    MessagePinned,
    MessagePost,
    MessageShown,
    MessageUnpinned,
    TurnPassed,
    words_of,
)
from chips_common.events.runs import (
    ApprovalRequest,
    ApprovalResolved,
    QuestionAnswered,
    QuestionAsk,
    Receipt,
    RunCancel,
    RunCompleted,
    RunFailed,
    RunPaused,
    RunResumed,
    RunStarted,
    RunStatus,
    RunSteer,
    StepLog,
    Usage,
)
from chips_common.events.spaces import (
    MembershipAdded,
    MembershipRemoved,
    SpaceClaimed,
    SpaceCreated,
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
    "KINDS",
    "LANE_TYPES",
    "PROTOCOL_VERSION",
    "ApprovalRequest",
    "ApprovalResolved",
    "EventBody",
    "Feedback",
    "HarnessDeclared",
    "InvalidEvent",
    "LaneCancelled",
    "LaneCompleted",
    "LaneFailed",
    "LaneOpened",
    "MembershipAdded",
    "MembershipRemoved",
    "MessageDeleted",
    "MessageEdited",
    "MessageHidden",
    "MessagePinned",
    "MessagePost",
    "MessageShown",
    "MessageUnpinned",
    "ParticipantJoined",
    "QuestionAnswered",
    "QuestionAsk",
    "Receipt",
    "RunCancel",
    "RunCompleted",
    "RunFailed",
    "RunPaused",
    "RunResumed",
    "RunStarted",
    "RunStatus",
    "RunSteer",
    "SpaceClaimed",
    "SpaceCreated",
    "SpaceLockSet",
    "SpaceUpdated",
    "StepLog",
    "TurnPassed",
    "Usage",
    "WorkspaceCreated",
    "canonical",
    "lanes",
    "messages",
    "parse_event",
    "runs",
    "spaces",
    "words_of",
    "workspaces",
]
