"""The CouchDB a bench manages: the one `dragnet couch up` recorded for its URL, started when there is none, and
restarted with its data on another storage, or another release, core count or settings (the bench's axes)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dragnet.couchdb.client import split_credentials


def managed_instance(url: str, env: dict | None = None):
    """The instance `dragnet couch up` recorded for url's port (same host), or None."""
    from urllib.parse import urlsplit

    from dragnet.couchdb import control as ctl

    parts = urlsplit(split_credentials(url)[0])
    port = parts.port or 5984
    inst = ctl.load_state(port, env)
    if inst is None:
        return None
    local = {"127.0.0.1", "localhost", "::1"}
    if parts.hostname != inst.host and not (parts.hostname in local and inst.host in local):
        return None
    return inst


def _admin_env(url: str, env: dict | None) -> dict:
    """The environment for `dragnet couch up`: its admin is the one in the URL when the URL names one."""
    env = dict(os.environ if env is None else env)
    _, user, password = split_credentials(url)
    if user:
        env["COUCHDB_USER"] = user
    if password:
        env["COUCHDB_PASSWORD"] = password
    return env


def _backend(name: str):
    if name == "docker":
        from dragnet.couchdb import docker as mod
    else:
        from dragnet.couchdb import local as mod
    return mod


def start_managed(backend: str, url: str, storage_kind: str, *, data_size: int = 0, env: dict | None = None,
                  **where: Any):
    """Start a CouchDB with `dragnet couch up`'s backend on the URL's port (for a bench that finds none);
    where: image= (docker) or home= (local), the first value of a --couchdb axis."""
    from urllib.parse import urlsplit

    port = urlsplit(split_credentials(url)[0]).port or 5984
    return _backend(backend).up(port=port, storage_kind=storage_kind, data_size=data_size,
                                env=_admin_env(url, env), **where)


def stop_managed(inst, env: dict | None = None) -> None:
    _backend(inst.backend).stop(inst, env=env)


def drop_tmpfs_data(inst, keep: str | None) -> bool:
    """Remove the data a stopped CouchDB left on a tmpfs (it holds memory) when the bench put it there:
    only a dragnet/couch-<port> directory on a tmpfs, never `keep` (the data the bench found)."""
    import shutil

    from dragnet.couchdb.storage import is_tmpfs

    d = Path(inst.data_dir) if inst.data_dir else None
    if (d is None or inst.storage != "tmpfs" or inst.mounted_tmpfs or str(d) == keep
            or d.parent.name != "dragnet" or not d.name.startswith("couch-") or not d.is_dir() or not is_tmpfs(d)):
        return False
    shutil.rmtree(d, ignore_errors=True)
    return True


_KEEP = object()


def restart_on(inst, storage_kind: str, url: str, *, data_size: int = 0, env: dict | None = None,
               limits: Any = _KEEP, home: str | None = None, image: str | None = None, cpus: Any = _KEEP,
               ini: Any = _KEEP):
    """Stop the managed CouchDB and start it again (same backend, port, limits) with data on storage_kind.
    docker: `limits` are a scenario's container settings (None: the instance's own --memory only).
    home (local release), image (docker) and cpus: another CouchDB or core count (bench axes); ini (local):
    settings written into its ini before it starts (local: its local.ini; docker: a local.d file bound in;
    --config-restart; kept unless given)."""
    env = _admin_env(url, env)
    mod = _backend(inst.backend)
    mod.stop(inst, env=env)
    cpus = inst.cpus if cpus is _KEEP else cpus
    ini = getattr(inst, "ini", None) if ini is _KEEP else ini
    if inst.backend == "docker":
        return mod.up(port=inst.port, storage_kind=storage_kind, image=image or inst.image, cpus=cpus,
                      memory=str(inst.memory) if inst.memory else None, data_size=data_size, env=env,
                      limits=inst.limits if limits is _KEEP else limits, ini=ini)
    return mod.up(port=inst.port, storage_kind=storage_kind, home=home or inst.home, cpus=cpus,
                  data_size=data_size, env=env, ini=ini)

