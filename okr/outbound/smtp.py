"""Email: the settings (OKR_SMTP_URL, OKR_SMTP_PASSWORD, OKR_MAIL_FROM; links start with the public URL) and sending one plain-text
message with the standard library's smtplib. Knows nothing of Flask: it reads a config mapping.

smtp://HOST[:PORT] talks STARTTLS (port 587 by default) and refuses to go on without it, so that the password
and the links never cross the network in clear (only a relay on this machine, localhost, may go without); smtps://HOST[:PORT] is TLS from the start (port 465). A user
and password may stand in the URL (percent-encoded) or the password in OKR_SMTP_PASSWORD. Every refusal,
timeout or broken connection comes out as one MailError, whose message never holds the password.
"""
import ipaddress
import smtplib
import socket
import ssl
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.message import EmailMessage
from email.utils import format_datetime, formataddr, make_msgid, parseaddr
from urllib.parse import unquote, urlsplit

from ..proxies import public_url
from ..rules.names import one_line
from ..settings import default

DEFAULT_TIMEOUT = default("SMTP_TIMEOUT")
DEFAULT_PORTS = {"smtp": 587, "smtps": 465}
NOT_SET_UP = "email is not set up"


class MailError(Exception):
    """A message that was not sent: the server refused it, did not answer in time, or could not be reached."""


class MailSettingsError(ValueError):
    """Email settings that cannot work; the message names the setting."""


@dataclass(frozen=True)
class MailSettings:
    scheme: str
    host: str
    port: int
    sender: str
    base_url: str
    user: str = None
    password: str = field(default=None, repr=False)  # never in a log line, nor in repr()
    timeout: float = DEFAULT_TIMEOUT


def parse_smtp_url(url, password=None):
    """(scheme, host, port, user, password) of an smtp:// or smtps:// URL; MailSettingsError when it is none."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise MailSettingsError("OKR_SMTP_URL must start with smtp:// (STARTTLS) or smtps:// (TLS)")
    if not parts.hostname:
        raise MailSettingsError("OKR_SMTP_URL must name a host, as in smtp://mail.example.com:587")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise MailSettingsError("OKR_SMTP_URL must have no path, query nor fragment")
    try:
        port = parts.port or DEFAULT_PORTS[scheme]
    except ValueError:
        raise MailSettingsError("OKR_SMTP_URL has a port that is not a number from 1 to 65535") from None
    user = unquote(parts.username) if parts.username else None
    if parts.password is not None:
        password = unquote(parts.password)
    if password and not user:
        raise MailSettingsError("OKR_SMTP_URL needs a user name for its password, as in smtp://USER@HOST")
    return scheme, parts.hostname, port, user, password or None


def server_address(host, port):
    """The server's address for a browser: http://HOST:PORT/, an IPv6 address in brackets."""
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def public_base(config, remedy="set OKR_PUBLIC_URL to the one people use"):
    """The address every link sent out starts with, without a trailing slash: the public URL (okr.proxies.public_url:
    OKR_PUBLIC_URL, else OKR_BASE_URL), else the server's own (http://HOST:PORT); MailSettingsError when neither
    will do."""
    try:
        url = public_url(config)
    except ValueError as error:
        raise MailSettingsError(str(error)) from None
    if url:
        return url
    host = str(config["HOST"])
    try:
        everywhere = ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        everywhere = False
    if everywhere:
        raise MailSettingsError(f"the server listens on every address ({host}), which is no address for links in "
                                f"emails: {remedy}, such as https://okr.example.com")
    return server_address(host, config["PORT"]).rstrip("/")


def settings(config):
    """The MailSettings of a config, or None when OKR_SMTP_URL is not set; MailSettingsError when the settings
    cannot work (OKR_MAIL_FROM missing, a bad URL)."""
    url = config.get("SMTP_URL")
    if not url:
        return None
    scheme, host, port, user, password = parse_smtp_url(url, config.get("SMTP_PASSWORD"))
    sender = config.get("MAIL_FROM")
    if not sender:
        raise MailSettingsError("OKR_SMTP_URL is set but OKR_MAIL_FROM is not: set it to the address emails come "
                                "from, such as okr@example.com")
    if "@" not in parseaddr(sender)[1] or "\n" in sender or "\r" in sender:
        raise MailSettingsError(f"OKR_MAIL_FROM {sender!r} is not an email address")
    timeout = config.get("SMTP_TIMEOUT") or DEFAULT_TIMEOUT
    return MailSettings(scheme, host, port, sender, public_base(config), user, password, timeout)


def settings_or_none(config):
    """settings(config), or None when they are missing or cannot work (the pages then say email is not set up;
    okr serve refuses to start with bad ones, so a served app never has them)."""
    try:
        return settings(config)
    except MailSettingsError:
        return None


def message(mail_settings, to_name, to_address, subject, body):
    """A plain-text EmailMessage from OKR_MAIL_FROM to one person."""
    email = EmailMessage()
    email["From"] = mail_settings.sender
    # A name stored before okr.rules.names' rule may hold a line break, which no header takes.
    email["To"] = formataddr((one_line(to_name), to_address))
    email["Subject"] = subject
    # The moment it is ready to go (RFC 5322's origination date): spam filters mark a message without one.
    email["Date"] = format_datetime(datetime.now(timezone.utc))
    email["Message-ID"] = make_msgid(domain=parseaddr(mail_settings.sender)[1].rpartition("@")[2] or None)
    email["Auto-Submitted"] = "auto-generated"  # no out-of-office answers back
    email.set_content(body)
    return email


def invitation_text(name, email, url):
    """The invitation email's text (the People page's and okr users invite's)."""
    return (f"Hello {name},\n\nYou are invited to the OKR dashboard as {email}. To choose your password and sign "
            f"in, open this link:\n\n{url}\n\nIt works once, within 7 days.\n")


def is_loopback(host):
    """Whether host is this machine (a local relay, which may take mail without TLS: nothing crosses a network)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def tls_context():
    """The TLS context the server's certificate is checked with: the system's trusted authorities."""
    return ssl.create_default_context()


def send(mail_settings, email):
    """Sends one EmailMessage; MailError when it was not sent (refused, timed out, unreachable)."""
    where = f"{mail_settings.scheme}://{mail_settings.host}:{mail_settings.port}"
    try:
        if mail_settings.scheme == "smtps":
            connection = smtplib.SMTP_SSL(mail_settings.host, mail_settings.port, timeout=mail_settings.timeout,
                                          context=tls_context())
        else:
            connection = smtplib.SMTP(mail_settings.host, mail_settings.port, timeout=mail_settings.timeout)
        with connection:
            if mail_settings.scheme == "smtp":
                connection.ehlo()
                if connection.has_extn("starttls"):
                    connection.starttls(context=tls_context())
                elif not is_loopback(mail_settings.host):
                    raise MailError(f"the mail server {where} offers no STARTTLS, and okr sends in clear only to "
                                    "this machine: use smtps:// if it takes TLS from the start")
            if mail_settings.user:
                connection.login(mail_settings.user, mail_settings.password or "")
            connection.send_message(email)
    except smtplib.SMTPAuthenticationError as error:
        raise MailError(f"the mail server {where} refused the user name or password ({error.smtp_code})") from None
    except smtplib.SMTPRecipientsRefused as error:
        codes = ", ".join(f"{code} {text.decode('utf-8', 'replace')}" for code, text in error.recipients.values())
        raise MailError(f"the mail server {where} refused the recipient: {codes}") from None
    except smtplib.SMTPResponseException as error:
        text = error.smtp_error.decode("utf-8", "replace") if isinstance(error.smtp_error, bytes) else error.smtp_error
        raise MailError(f"the mail server {where} refused the message: {error.smtp_code} {text}") from None
    except (socket.timeout, TimeoutError):
        raise MailError(f"the mail server {where} did not answer within {mail_settings.timeout:g} seconds") from None
    except smtplib.SMTPServerDisconnected as error:
        if not isinstance(error.__context__, TimeoutError):  # smtplib says a timeout so
            raise MailError(f"the mail server {where} closed the connection: {error}") from None
        raise MailError(f"the mail server {where} did not answer within {mail_settings.timeout:g} seconds") from None
    except (smtplib.SMTPException, ssl.SSLError, OSError) as error:
        raise MailError(f"cannot send through the mail server {where}: {error}") from None
