"""The e2e harness: the real stack, each service its own process, two gateways.

The stack itself is ``chips_devstack.stack.local_stack`` (the benchmarks use it too).
Tests talk to it only over HTTP and WebSocket; logs of every process are attached to the
report of a test that fails.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator, Iterator

import pytest

from chips_devstack.procs import free_port, nats_proc, wait_until
from chips_devstack.stack import UNLIMITED, Stack, local_stack
from tests.e2e.client import Api
from tests.e2e.otlp import OtlpReceiver

# The port the e2e tests' SMTP server listens on, when one runs (test_notify_email.py).
SMTP_PORT = free_port()


@pytest.fixture(scope="session")
def otlp() -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver().start()
    yield receiver
    receiver.stop()


@pytest.fixture(scope="module")
def own_nats(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A nats-server with JetStream of the module's own, not the stack's: its URL."""
    root = tmp_path_factory.mktemp("own-nats")
    port = free_port()
    proc = nats_proc(port, root / "store", root / "logs").start()

    def answers() -> bool:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return True
        return False

    wait_until(answers, 20, "nats-server", proc)
    yield f"nats://127.0.0.1:{port}"
    proc.stop()


@pytest.fixture(scope="session")
def stack(otlp: OtlpReceiver) -> Iterator[Stack]:
    # Every service sends its spans to the receiver; gateway B gives two-second tickets,
    # for the test of an expired one, and the referee hands a lead words after two quiet
    # seconds. The suite writes faster than any client (1,500
    # pipelined posts to make a long replay), so its gateways take no write limits; the
    # limits are tested on gateways of their own (test_limits.py).
    tracing = {"OTEL_EXPORTER_OTLP_ENDPOINT": otlp.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "200"}
    with local_stack(
        gateways=2,
        extra_env={
            "gateway_b": {"CHIPS_TICKET_TTL_SECONDS": "2"},
            # The lead's quiet spell is two seconds here, not twenty (test_lead.py).
            "referee": {"CHIPS_LEAD_HANDOFF_SECONDS": "2"},
            # Mail two seconds after a notification, to the SMTP server the notifier's
            # tests run on this port (test_notify_email.py); nobody else has an address.
            "notifier": {
                "CHIPS_NOTIFY_EMAIL_DELAY_SECONDS": "2",
                "CHIPS_SMTP_HOST": "127.0.0.1",
                "CHIPS_SMTP_PORT": str(SMTP_PORT),
                "CHIPS_SMTP_STARTTLS": "off",
                "CHIPS_SMTP_TIMEOUT_SECONDS": "3",
            },
        },
        env={**tracing, **UNLIMITED},
    ) as running:
        yield running


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> object:
    report = yield
    if report.when == "call" and report.failed and "stack" in getattr(item, "funcargs", {}):
        report.sections.append(("service logs", item.funcargs["stack"].logs()))
    return report


@pytest.fixture
async def api(stack: Stack) -> AsyncIterator[Api]:
    client = Api(stack.gateway_a)
    yield client
    await client.close()


@pytest.fixture
async def api_b(stack: Stack) -> AsyncIterator[Api]:
    client = Api(stack.gateway_b)
    yield client
    await client.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)
