"""The refusal the door answers with: the bottom layer every rule module imports.

A rule that does not let a request in raises :class:`Refused` (through :func:`refuse`);
nothing of the request is logged and the door state is left as it was.
"""

from __future__ import annotations

from typing import NoReturn

from pydantic import JsonValue

from chips_common.rules.may import No


class Refused(Exception):
    """A request the door does not let in; nothing of it is logged.

    ``data`` is what a refusal tells beside its sentence, merged into the error the client
    gets: ``agent_elsewhere`` names the room the agent is in (``space_id``).
    """

    def __init__(
        self,
        code: str,
        message: str,
        field: str | None = None,
        data: dict[str, JsonValue] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field
        self.data = data


def refuse(
    code: str, message: str, field: str | None = None, data: dict[str, JsonValue] | None = None
) -> NoReturn:
    """Refuse the request being decided, with the ``{code, message}`` the client gets."""
    raise Refused(code, message, field, data)


def refuse_if(no: No | None) -> None:
    """Refuse with what a shared rule (``chips_common.rules.may``) answered, if it refused."""
    if no is not None:
        raise Refused(no.code, no.message, no.field)
