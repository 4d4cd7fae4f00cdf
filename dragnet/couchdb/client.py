"""HTTP access to CouchDB: credentials kept out of URLs and messages, one-line errors."""

from __future__ import annotations

import base64
import os
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

import requests

from dragnet.errors import DragnetError


class CouchError(DragnetError):
    """CouchDB answered with an error status."""

    def __init__(self, method: str, path: str, status: int, error: str = "", reason: str = ""):
        self.method, self.path, self.status, self.error, self.reason = method, path, status, error, reason
        detail = f"{error}: {reason}" if reason else (error or "no body")
        super().__init__(f"CouchDB answered {status} to {method} {path}: {detail}")

    def answered(self) -> str:
        """What CouchDB answered, without the request: for an error that names the resource itself."""
        return f"CouchDB answered {self.status} {self.error}" + (f" ({self.reason})" if self.reason else "")


class CouchUnreachable(DragnetError):
    """No HTTP answer at all (refused, reset, timed out, DNS)."""


def split_credentials(url: str) -> tuple[str, str | None, str | None]:
    """Return (url without user:password, user, password)."""
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        raise DragnetError(f"not a CouchDB URL: {mask_url(url)!r} (expected http://host:port)")
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    clean = urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
    # userinfo is percent-encoded in a URL: http://admin:p%40ss@host means the password "p@ss"
    user = unquote(parts.username) if parts.username is not None else None
    password = unquote(parts.password) if parts.password is not None else None
    return clean, user, password


def mask_url(url: str) -> str:
    """The URL as it may be shown: any password replaced by ***."""
    if "://" not in url and "@" in url:
        # no scheme (user:pass@host:port): urlsplit finds no netloc, so mask everything before the '@'
        userinfo, _, rest = url.rpartition("@")
        return f"{userinfo.partition(':')[0]}:***@{rest}"
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        host = parts.netloc.rsplit("@", 1)[1]
        return urlunsplit((parts.scheme, f"{parts.username}:***@{host}", parts.path, parts.query, parts.fragment))
    except ValueError:
        return "<unparseable URL>"


_USERINFO = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://)([^/\s:@]*):([^@\s/]*)@")


def mask_urls_in(text: str) -> str:
    """Every URL password in free text (another process's command line, a log line) replaced by ***."""
    return _USERINFO.sub(lambda m: f"{m[1]}{m[2]}:***@", text)


def release(version: str | None) -> tuple[int, int, int] | None:
    """(major, minor, patch) of a CouchDB version as GET / gives it ("3.5.2", "3.5.0-6525b6b"; "3.5" is 3.5.0),
    or None for anything else: which defaults and code paths a node has follows from it."""
    m = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?(?:[-+].*)?", (version or "").strip())
    return (int(m[1]), int(m[2]), int(m[3] or 0)) if m else None


def db_path(db: str) -> str:
    """URL path of a database; names may hold '/' and '+' which must be escaped."""
    return "/" + quote(db, safe="")


class BasicAuth(requests.auth.AuthBase):
    """HTTP Basic credentials encoded in UTF-8, as CouchDB decodes them (requests encodes latin-1 where it can,
    which CouchDB refuses for a name or password with characters 128-255). Every client of dragnet sends this
    one header: the session, the load generators."""

    def __init__(self, user: str, password: str):
        self.user, self.password = user, password

    def header(self) -> str:
        return "Basic " + base64.b64encode(f"{self.user}:{self.password}".encode("utf-8")).decode("ascii")

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        r.headers["Authorization"] = self.header()
        return r

    def __repr__(self) -> str:     # never the password
        return f"BasicAuth(user={self.user!r})"


@dataclass
class Couch:
    """A CouchDB server: base URL without secrets plus an authenticated session."""

    url: str
    user: str | None = None
    timeout: float = 60.0
    session: requests.Session = field(default_factory=requests.Session, repr=False)

    def request(self, method: str, path: str, *, ok: tuple[int, ...] | None = None,
                timeout: float | None = None, **kwargs: Any) -> requests.Response:
        """Send a request; raise CouchError for an unexpected status, CouchUnreachable for no answer.

        ok=None accepts any 2xx status; otherwise only the listed ones.
        """
        for attempt in (1, 2):
            try:
                resp = self.session.request(method, self.url + path, timeout=timeout or self.timeout, **kwargs)
                break
            except requests.RequestException as exc:
                # a reset or closed keep-alive connection (stale in the pool, or a proxy's) gets one more
                # try when the request is safe to repeat; a refused connection or a timeout does not
                if attempt == 1 and method in ("GET", "HEAD") and _reason(exc) in ("connection reset",
                                                                                   "connection closed"):
                    continue
                raise CouchUnreachable(f"cannot reach CouchDB at {self.url} ({_reason(exc)})") from None
        if (ok is None and resp.ok) or (ok is not None and resp.status_code in ok):
            return resp
        raise error_from_response(method, path, resp)

    def get(self, path: str, **kw: Any) -> Any:
        return self.request("GET", path, **kw).json()

    def put(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.request("PUT", path, json=body, **kw).json()

    def post(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.request("POST", path, json=body, **kw).json()

    def delete(self, path: str, **kw: Any) -> Any:
        return self.request("DELETE", path, **kw).json()

    def version(self) -> dict:
        """GET / plus /_node/_local/_versions (JS engine etc.) where the server has it, and the view updater's
        settings this node was given ("view_updater": {} where it runs on its defaults; None where it would not
        say): its queue cap sets how large the writer's batches can grow (forecast.writer_queue)."""
        info = self.get("/")
        try:
            info["view_updater"] = self.get("/_node/_local/_config/view_updater")
        except CouchError:
            info["view_updater"] = None
        try:
            nodes = self.get("/_membership").get("all_nodes") or []
        except CouchError:
            nodes = []
        if nodes == ["nonode@nohost"]:
            # on a node without a distribution name CouchDB 3.5 answers _versions by crashing its ioq
            # server (a monitor of clouseau@...); a few of those in a row take the whole node down
            info["node_versions"] = None
            info["node_versions_skipped"] = "not asked: a node named nonode@nohost crashes on _versions"
            return info
        try:
            info["node_versions"] = self.get("/_node/_local/_versions")
        except CouchError:
            info["node_versions"] = None
        return info


def connect(url: str, *, user: str | None = None, password: str | None = None, timeout: float = 60.0,
            env: dict | None = None) -> Couch:
    """A Couch for url; credentials from the URL, else the arguments, else COUCHDB_USER/COUCHDB_PASSWORD."""
    env = os.environ if env is None else env
    clean, url_user, url_password = split_credentials(url)
    user = url_user or user or env.get("COUCHDB_USER") or None
    password = url_password or password or env.get("COUCHDB_PASSWORD") or None
    couch = Couch(url=clean, user=user, timeout=timeout)
    if user is not None:
        couch.session.auth = BasicAuth(user, password or "")
    couch.session.headers.update({"Accept": "application/json", "User-Agent": "dragnet"})
    return couch


def error_from_response(method: str, path: str, resp: requests.Response) -> CouchError:
    try:
        body = resp.json()
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    text = "" if body else resp.text.strip()[:200]
    return CouchError(method, path, resp.status_code, str(body.get("error", text)), str(body.get("reason", "")))


def _reason(exc: requests.RequestException) -> str:
    if isinstance(exc, requests.Timeout):
        return "timed out"
    if isinstance(exc, requests.ConnectionError):
        text = str(exc)
        for needle, short in (("Connection refused", "connection refused"), ("Connection reset", "connection reset"),
                              ("Name or service not known", "unknown host"), ("RemoteDisconnected", "connection closed"),
                              ("Connection aborted", "connection closed")):
            if needle in text:
                return short
        return "connection failed"
    return type(exc).__name__
