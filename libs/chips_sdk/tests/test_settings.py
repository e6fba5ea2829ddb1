"""Where the SDK (and the ``chips`` command) find Chips, and which token a harness runs on."""

from __future__ import annotations

import pytest

from chips_sdk import Client, SettingError, gateway_urls, harness_token

pytestmark = pytest.mark.unit


def test_chips_url_wins_then_the_port_base_then_the_usual_port() -> None:
    assert gateway_urls({}) == ["http://127.0.0.1:8080"]
    assert gateway_urls({"CHIPS_PORT_BASE": "18400"}) == ["http://127.0.0.1:18400"]
    both = {"CHIPS_PORT_BASE": "18400", "CHIPS_URL": "http://chips.example:1/"}
    assert gateway_urls(both) == ["http://chips.example:1"]
    several = {"CHIPS_URL": "http://a:1, http://b:2,"}
    assert gateway_urls(several) == ["http://a:1", "http://b:2"]
    assert gateway_urls({"CHIPS_URL": "", "CHIPS_PORT_BASE": " "}) == ["http://127.0.0.1:8080"]


@pytest.mark.parametrize("raw", ["eighty", "80", "70000"])
def test_a_port_base_that_is_not_one_is_said_in_a_sentence(raw: str) -> None:
    with pytest.raises(SettingError, match=r"^CHIPS_PORT_BASE="):
        gateway_urls({"CHIPS_PORT_BASE": raw})


def test_a_harness_runs_on_its_own_token() -> None:
    assert harness_token({"CHIPS_HARNESS_TOKEN": "chips_at_1"}) == "chips_at_1"
    mixed = {"CHIPS_HARNESS_TOKEN": "chips_at_1", "CHIPS_TOKEN": "chips_pt_2"}
    assert harness_token(mixed) == "chips_at_1"
    assert harness_token({"CHIPS_TOKEN": "chips_at_3"}) == "chips_at_3"


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"CHIPS_TOKEN": "chips_pt_2"}, "CHIPS_TOKEN is a person's token"),
        ({"CHIPS_HARNESS_TOKEN": "chips_pt_2"}, "CHIPS_HARNESS_TOKEN is a person's token"),
        ({}, "no token"),
    ],
)
def test_a_person_s_token_or_none_is_refused_naming_the_variable(
    env: dict[str, str], named: str
) -> None:
    with pytest.raises(SettingError) as refused:
        harness_token(env)
    sentence = str(refused.value)
    assert sentence.startswith(named)
    assert "set CHIPS_HARNESS_TOKEN to the token `chips connect` printed" in sentence
    assert sentence.count(". ") == 0  # one sentence


def test_the_client_reads_both_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CHIPS_URL", "CHIPS_HARNESS_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CHIPS_PORT_BASE", "18400")
    monkeypatch.setenv("CHIPS_TOKEN", "chips_pt_person")
    with pytest.raises(SettingError, match="CHIPS_TOKEN is a person's token"):
        Client()
    monkeypatch.setenv("CHIPS_HARNESS_TOKEN", "chips_at_harness")
    client = Client()
    assert client.urls == ["http://127.0.0.1:18400"] and client.token == "chips_at_harness"
    # A person's tool that means to connect as its person says so by passing the token.
    assert Client(token="chips_pt_person").token == "chips_pt_person"
