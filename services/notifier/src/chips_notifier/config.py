"""Notifier settings (docs/configuration.md, Notifications)."""

from __future__ import annotations

from pydantic import Field

from chips_common.config import Settings


class NotifierSettings(Settings):
    port: int = 8096
    # How often the heads of the log are compared with the checkpoints (a prompt lost at
    # a workspace's tail), and approvals past their time are marked done.
    notifier_sweep_seconds: float = Field(default=1.0, gt=0)
    # How often the senders look for what falls due.
    notifier_send_seconds: float = Field(default=0.5, gt=0)
    # A notification older than this when first folded (a rebuild, a notifier down for a
    # day) is listed but neither mailed nor pushed.
    notify_stale_seconds: float = Field(default=86400.0, gt=0)
    # SMTP: no host, no email. STARTTLS is used when the server offers it (always, with
    # smtp_starttls "require"; never with "off"); smtp_ssl for implicit TLS (port 465).
    smtp_host: str = ""
    smtp_port: int = 587
    smtp_username: str = ""
    smtp_password: str = ""
    smtp_from: str = "Chips <chips@localhost>"
    smtp_starttls: str = Field(default="auto", pattern="^(auto|require|off)$")
    smtp_ssl: bool = False
    smtp_timeout_seconds: float = Field(default=20.0, gt=0)
    # Web Push: the contact the push services are given in the VAPID claim (RFC 8292).
    vapid_subject: str = "mailto:admin@localhost"
    push_timeout_seconds: float = Field(default=10.0, gt=0)

    def app_url(self) -> str:
        """The app's address, for the links in emails and pushes: the gateway's public
        URL (CHIPS_PUBLIC_URL)."""
        return (self.public_url or "http://127.0.0.1:8080").rstrip("/")
