"""Structured JSON logs, one object per line."""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime

from chips_common.otel import current_trace_id

# Tokens and tickets never appear in logs (docs/architecture/design.md §7), even where a library
# logs a URL.
SECRET_IN_URL = re.compile(r"((?:token|ticket)=)[^&\s\"']+")
SECRET_TOKEN = re.compile(r"chips_(?:at|pt|tk)_[A-Za-z0-9_-]+")


def redact(text: str) -> str:
    return SECRET_TOKEN.sub("chips_[redacted]", SECRET_IN_URL.sub(r"\1[redacted]", text))


class JsonFormatter(logging.Formatter):
    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname.lower(),
            "service": self.service,
            "logger": record.name,
            "msg": redact(record.getMessage()),
        }
        trace_id = getattr(record, "trace_id", None) or current_trace_id()
        if trace_id:
            entry["trace_id"] = trace_id
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def setup_logging(service: str, level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(service))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("uvicorn.access", "nats"):
        logging.getLogger(noisy).setLevel("WARNING")
