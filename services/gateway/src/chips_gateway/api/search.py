"""``GET /v1/search``: words said in the caller's rooms, newest first (docs/product/messages.md).

Every word of ``q`` is required and the last is a prefix; a hit carries a snippet with
the match marked, its space, its message (or run step) and its seq, so a client opens the
room at the line. Scope is the caller's rooms now and their threads (``space_id`` narrows
to one). Freshness: the answer waits (a bounded while) until the index has folded in
``after_seq`` — by default the workspace's head when the search arrived, so everything
acknowledged before it, the caller's own writes included — and says in ``as_of_seq``
which seq of the log it answers as of (docs/adr/0029).
"""

from __future__ import annotations

from datetime import UTC
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Response
from pydantic import BaseModel

from chips_common.rules.search import (
    MAX_QUERY_CHARS,
    CursorScope,
    SearchProblem,
    build_tsquery,
    decode_cursor,
    encode_cursor,
    snippet_segments,
)
from chips_gateway.agents import present_view_of
from chips_gateway.auth import bearer
from chips_gateway.context import Ctx
from chips_gateway.errors import ChipsError
from chips_gateway.search import Hit, NotInSpace, Searcher, UnknownToken

router = APIRouter(prefix="/v1")

DEFAULT_LIMIT = 20
MAX_LIMIT = 100


class Segment(BaseModel):
    text: str
    match: bool = False


class SearchHit(BaseModel):
    """One thing found: a message, or a step of a run (a line of its receipt)."""

    kind: str  # message | step
    space_id: str
    room_id: str  # the room it is in: the space itself, or a thread's room
    seq: int
    ts: str
    author_id: str
    message_id: str | None = None
    message_kind: str | None = None
    run_id: str | None = None
    step_id: str | None = None
    # The hit quotes what a machine heard in a voice note (its words may be misheard).
    voice_note: bool = False
    snippet: list[Segment]


class SearchAnswer(BaseModel):
    as_of_seq: int
    hits: list[SearchHit]
    next_cursor: str | None


def hit_of(hit: Hit) -> SearchHit:
    return SearchHit(
        kind=hit.kind,
        space_id=hit.space_id,
        room_id=hit.room_id,
        seq=hit.seq,
        ts=hit.ts.astimezone(UTC).isoformat().replace("+00:00", "Z"),
        author_id=hit.author_id,
        message_id=hit.message_id,
        message_kind=hit.message_kind,
        run_id=hit.run_id,
        step_id=hit.step_id,
        voice_note=bool(hit.voice_note),
        snippet=[Segment(**s) for s in snippet_segments(hit.headline)],
    )


def unknown_token() -> ChipsError:
    return ChipsError("unauthorized", "that token is not known or was withdrawn")


async def get_searcher(ctx: Ctx, authorization: Annotated[str | None, Header()] = None) -> Searcher:
    """Who is searching, as ``Caller`` decides it for every other route, but remembered:
    a search checks in its own statement that the credential still stands, so knowing
    who a token is costs no round trip of its own after the first search."""
    token = bearer(authorization)
    if token is None:
        raise ChipsError("unauthorized", "send your token as Authorization: Bearer <token>")
    try:
        return await ctx.search.searcher(token)
    except UnknownToken:
        raise unknown_token() from None


SearchCaller = Annotated[Searcher, Depends(get_searcher)]


@router.get("/search", response_model=SearchAnswer)
async def search(
    ctx: Ctx,
    caller: SearchCaller,
    q: Annotated[str, Query(max_length=MAX_QUERY_CHARS)],
    space_id: Annotated[str | None, Query(pattern=r"^[A-Za-z0-9_.:\-]{1,200}$")] = None,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
    after_seq: Annotated[int | None, Query(ge=0, lt=2**63)] = None,
) -> Response:
    ws_id = caller.workspace_id
    try:
        tsquery = build_tsquery(q)
        scope = CursorScope(ws_id, caller.participant_id, tsquery, space_id)
        before = decode_cursor(ctx.settings.signing_key, scope, cursor) if cursor else 2**63 - 1
    except SearchProblem as problem:
        # Who the caller is comes first, as on every route: a withdrawn credential the
        # gateway remembers is told so, not that its request is malformed.
        if not await ctx.search.still_known(caller):
            raise unknown_token() from None
        raise ChipsError("invalid_request", problem.message, field=problem.field) from None
    try:
        found = await ctx.search.search(
            caller,
            tsquery,
            space_id=space_id,
            before=before,
            limit=limit + 1,
            after_seq=after_seq,
            wait=ctx.settings.search_wait_seconds,
        )
    except UnknownToken:
        ctx.search.forget_credential(caller)
        raise unknown_token() from None
    except NotInSpace:
        # A stranger and a missing room look alike (as for every other read of a room).
        raise ChipsError(
            "forbidden", "you are not a member of this space", space_id=space_id
        ) from None
    page = found.hits[:limit]
    more = len(found.hits) > limit
    answer = SearchAnswer(
        as_of_seq=found.as_of_seq,
        hits=[hit_of(h) for h in page],
        next_cursor=encode_cursor(ctx.settings.signing_key, scope, page[-1].seq) if more else None,
    )
    if any(h.author_id.startswith("agt_") for h in answer.hits):
        # A harness before agents reads its agents' words as its own (docs/adr/0079); only
        # a page that names an agent costs the look at what the caller declared.
        kind = "harness" if caller.participant_id.startswith("hrn_") else "person"
        translate = await present_view_of(ctx.reader, kind, caller.participant_id)
        if translate is not None:
            seen = translate(answer.model_dump()) or {}
            answer = SearchAnswer.model_validate(seen)
    # Encoded once, here: returned as a model, FastAPI would validate it against
    # ``response_model`` again and encode it in two more passes.
    return Response(answer.model_dump_json(), media_type="application/json")
