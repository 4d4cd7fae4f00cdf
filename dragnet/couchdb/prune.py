"""`dragnet couch prune`: the Docker containers, volumes and networks dragnet made, found by its labels
only (dragnet.couchdb.docker.LABEL, TEMP_LABEL), listed, then removed. Talks to the Docker engine.

Never touched: anything without those labels (a volume named like dragnet's but unlabelled, as earlier
versions made them, included), the objects of a CouchDB `dragnet couch up` recorded in this state
directory (`couch down --purge` is its way out), a running container unless asked (it may be another
user's bench), and a volume or network a container still uses.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from dragnet.couchdb import control as ctl
from dragnet.couchdb.docker import LABEL, TEMP_LABEL, _short, client


@dataclass
class Item:
    kind: str                  # container, volume or network
    name: str
    id: str
    port: int | None           # the label's port; None for a temporary container's objects
    state: str = ""            # a container's status
    keep: str | None = None    # why it stays
    removed: bool = False
    error: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def _port(labels: dict | None) -> int | None:
    v = (labels or {}).get(LABEL)
    return int(v) if v is not None and str(v).isdigit() else None


def _ours(labels: dict | None) -> bool:
    return LABEL in (labels or {}) or TEMP_LABEL in (labels or {})


def find(*, port: int | None = None, running: bool = False, env: dict | None = None, c=None) -> list[Item]:
    """dragnet's objects (only those of `port` when given), each marked with why it stays, if it does."""
    c = c or client(env)
    selectors = [f"{LABEL}={port}"] if port is not None else [LABEL, TEMP_LABEL]
    recorded = {inst.port for inst in ctl.list_states(env)}
    items: list[Item] = []
    seen: set[str] = set()
    for sel in selectors:
        for ct in c.containers.list(all=True, filters={"label": sel}):
            if ct.id not in seen and _ours(ct.labels):
                seen.add(ct.id)
                items.append(Item("container", ct.name, ct.id, _port(ct.labels), ct.status))
        for vol in c.volumes.list(filters={"label": sel}):
            if vol.id not in seen and _ours(vol.attrs.get("Labels")):
                seen.add(vol.id)
                items.append(Item("volume", vol.name, vol.id, _port(vol.attrs.get("Labels"))))
        for net in c.networks.list(filters={"label": sel}):
            if net.id not in seen and _ours(net.attrs.get("Labels")):
                seen.add(net.id)
                items.append(Item("network", net.name, net.id, _port(net.attrs.get("Labels"))))
    used: dict[str, str] = {}      # volume or network name -> the kept container using it
    for it in items:
        if it.port is not None and it.port in recorded:
            it.keep = (f"the CouchDB on port {it.port} that `dragnet couch up` recorded: "
                       f"`dragnet couch down --port {it.port} --purge` removes it")
        elif it.kind == "container" and it.state == "running" and not running:
            it.keep = "running (another bench may use it): --running removes it too"
        if it.kind == "container" and it.keep:
            ct = c.containers.get(it.id)
            for m in ct.attrs.get("Mounts") or []:
                if m.get("Type") == "volume":
                    used[m.get("Name")] = it.name
            for net in ((ct.attrs.get("NetworkSettings") or {}).get("Networks") or {}):
                used[net] = it.name
    for it in items:
        if it.kind != "container" and not it.keep and it.name in used:
            it.keep = f"in use by container {used[it.name]}, which stays"
    return items


def remove(items: list[Item], *, env: dict | None = None, c=None) -> list[Item]:
    """Remove every item not kept: containers first (with their anonymous volumes), then networks and
    volumes. An engine's refusal (in use by a container not dragnet's) is recorded, not raised."""
    from docker.errors import APIError, NotFound

    c = c or client(env)
    order = {"container": 0, "network": 1, "volume": 2}
    for it in sorted(items, key=lambda i: order[i.kind]):
        if it.keep:
            continue
        try:
            if it.kind == "container":
                c.containers.get(it.id).remove(force=True, v=True)
            elif it.kind == "network":
                c.networks.get(it.id).remove()
            else:
                c.volumes.get(it.name).remove()
            it.removed = True
        except NotFound:
            it.removed = True          # gone already (a container's anonymous volume went with it)
        except APIError as exc:
            it.error = _short(exc)
    return items
