"""One email over SMTP, in two steps around the point of no return (docs/adr/0132).

``stage`` connects (STARTTLS when the server offers it, or as configured), logs in, names
the sender and recipient, and sends the whole message but the final ``.`` that ends
DATA: until that dot, a connection that drops leaves the server nothing to deliver.
``finish`` sends the dot and reads the answer. The sender commits a marker between the
two, so a notifier killed before the marker may send the email again safely, and only
one killed between the marker and the answer leaves it ``unsure``.

Both are blocking (``smtplib``) and run in a thread.
"""

from __future__ import annotations

import contextlib
import re
import smtplib
import ssl
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate

from chips_notifier.config import NotifierSettings


class Permanent(Exception):
    """The server refused the message for good (a 5xx): trying again will not help."""


@dataclass(frozen=True)
class Smtp:
    host: str
    port: int
    username: str
    password: str
    sender: str
    starttls: str  # auto | require | off
    implicit_tls: bool
    timeout: float

    @classmethod
    def from_settings(cls, settings: NotifierSettings) -> Smtp | None:
        if not settings.smtp_host:
            return None
        return cls(
            settings.smtp_host,
            settings.smtp_port,
            settings.smtp_username,
            settings.smtp_password,
            settings.smtp_from,
            settings.smtp_starttls,
            settings.smtp_ssl,
            settings.smtp_timeout_seconds,
        )


@dataclass(frozen=True)
class Mail:
    to: str
    subject: str
    text: str
    message_id: str  # the notification's id: the same email always has the same id


def build(smtp: Smtp, mail: Mail) -> bytes:
    message = EmailMessage()
    message["From"] = smtp.sender
    message["To"] = mail.to
    message["Subject"] = mail.subject
    message["Date"] = formatdate(localtime=False)
    domain = smtp.sender.rsplit("@", 1)[-1].strip(">") or "chips.local"
    message["Message-ID"] = f"<{mail.message_id}@{domain}>"
    message["Auto-Submitted"] = "auto-generated"
    message.set_content(mail.text)
    return message.as_bytes()


def envelope_sender(smtp: Smtp) -> str:
    found = re.search(r"<([^>]+)>", smtp.sender)
    return found.group(1) if found else smtp.sender.strip()


def _check(reply: tuple[int, bytes], wanted: tuple[int, ...], what: str) -> None:
    code, text = reply
    if code in wanted:
        return
    words = text.decode(errors="replace")
    if 500 <= code < 600:
        raise Permanent(f"{what}: {code} {words}")
    raise smtplib.SMTPResponseException(code, f"{what}: {words}".encode())


def stage(smtp: Smtp, mail: Mail) -> smtplib.SMTP:
    """Everything up to the final dot; the open connection, for ``finish`` or ``abandon``."""
    context = ssl.create_default_context()
    client: smtplib.SMTP
    if smtp.implicit_tls:
        client = smtplib.SMTP_SSL(smtp.host, smtp.port, timeout=smtp.timeout, context=context)
    else:
        client = smtplib.SMTP(smtp.host, smtp.port, timeout=smtp.timeout)
    try:
        client.ehlo()
        if not smtp.implicit_tls and smtp.starttls != "off":
            if client.has_extn("starttls"):
                client.starttls(context=context)
                client.ehlo()
            elif smtp.starttls == "require":
                raise smtplib.SMTPNotSupportedError("the SMTP server offers no STARTTLS")
        if smtp.username:
            client.login(smtp.username, smtp.password)
        _check(client.mail(envelope_sender(smtp)), (250,), "MAIL FROM")
        _check(client.rcpt(mail.to), (250, 251), "RCPT TO")
        _check(client.docmd("DATA"), (354,), "DATA")
        data = re.sub(rb"(?m)^\.", b"..", build(smtp, mail).replace(b"\r\n", b"\n"))
        data = data.replace(b"\n", b"\r\n")
        if not data.endswith(b"\r\n"):
            data += b"\r\n"
        client.send(data)
    except BaseException:
        abandon(client)
        raise
    return client


def finish(client: smtplib.SMTP) -> None:
    """The final dot: the server takes the message, or says why not. The connection is
    left open for ``close`` (QUIT), after the answer is committed."""
    try:
        client.send(b".\r\n")
        _check(client.getreply(), (250,), "end of DATA")
    except BaseException:
        abandon(client)
        raise


def close(client: smtplib.SMTP) -> None:
    with contextlib.suppress(Exception):
        client.quit()
    abandon(client)


def abandon(client: smtplib.SMTP) -> None:
    """Drop the connection before the dot: the server delivers nothing."""
    with contextlib.suppress(Exception):
        client.close()
