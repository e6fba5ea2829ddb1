"""Settings: ``CHIPS_*`` variables with working local defaults, dev secrets refused in production.

docs/architecture/code-style.md, A service is wired, not imported: "default secrets refused outside
development"; docs/architecture/design.md §9: configuration is environment variables ``CHIPS_*``
only.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from chips_common.config import DEV_OPERATOR_SECRET, DEV_SIGNING_KEY, Settings

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever CHIPS_* the machine has set must not decide these tests."""
    for name in ("CHIPS_ENV", "CHIPS_OPERATOR_SECRET", "CHIPS_SIGNING_KEY"):
        monkeypatch.delenv(name, raising=False)


def test_development_works_with_defaults() -> None:
    """Local defaults work as they are: a fresh checkout runs without any variable set."""
    settings = Settings()
    assert settings.env == "development"
    assert settings.operator_secret == DEV_OPERATOR_SECRET
    assert settings.signing_key == DEV_SIGNING_KEY


def test_production_refuses_the_default_operator_secret() -> None:
    """Production with the development operator secret does not start."""
    with pytest.raises(ValidationError, match="CHIPS_OPERATOR_SECRET"):
        Settings(env="production", signing_key="a-real-signing-key")


def test_production_refuses_the_default_signing_key() -> None:
    """Production with the development signing key does not start either."""
    with pytest.raises(ValidationError, match="CHIPS_SIGNING_KEY"):
        Settings(env="production", operator_secret="a-real-operator-secret")


def test_production_with_both_secrets_set_works() -> None:
    """With both secrets set, production settings validate."""
    settings = Settings(
        env="production",
        operator_secret="a-real-operator-secret",
        signing_key="a-real-signing-key",
    )
    assert settings.env == "production"


def test_production_secrets_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same rule holds when everything comes from ``CHIPS_*`` variables."""
    monkeypatch.setenv("CHIPS_ENV", "production")
    with pytest.raises(ValidationError, match="CHIPS_OPERATOR_SECRET"):
        Settings()
    monkeypatch.setenv("CHIPS_OPERATOR_SECRET", "a-real-operator-secret")
    monkeypatch.setenv("CHIPS_SIGNING_KEY", "a-real-signing-key")
    settings = Settings()
    assert settings.env == "production"
    assert settings.operator_secret == "a-real-operator-secret"
