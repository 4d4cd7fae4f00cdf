"""The `--couchdb A,B` bench axis: CouchDB installs, each value a release directory (local backend) or an
image (docker backend). A value is applied by restarting the managed CouchDB on it; every build records
the node's versions (GET /_node/_local/_versions), which is also the check that the value is running."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from dragnet.errors import DragnetError, UsageError

IMAGE_DEFAULT_INI = "/opt/couchdb/etc/default.ini"


def label(value: str) -> str:
    """How a value names runs: an image as it is, a release directory by its path's last two parts."""
    if "/" in value and Path(value).exists():
        p = Path(value).resolve()
        return f"{p.parent.name}/{p.name}"
    return value


def check_release(value: str) -> str:
    """The release directory's absolute path, or a one-line UsageError."""
    from dragnet.couchdb.local import find_release

    try:
        return str(find_release(value).home)
    except (DragnetError, OSError) as exc:
        raise UsageError(f"--couchdb {value}: not a CouchDB release directory ({str(exc).splitlines()[0]})") from None


def image_file(image: str, path: str, env: dict | None = None) -> str | None:
    """A text file of an image (read from a created, never started container), None when it has none."""
    from docker.errors import APIError, ImageNotFound, NotFound

    from docker.types import Mount

    from dragnet.couchdb.docker import DATA_PATH, TEMP_LABEL, client

    c = client(env)
    mark = {TEMP_LABEL: "image-file"}    # left behind only if dragnet is killed here: `couch prune` finds both
    try:
        container = c.containers.create(image, command=["true"], entrypoint=[], labels=mark,
                                        mounts=[Mount(DATA_PATH, None, type="volume", labels=mark)])
    except ImageNotFound:
        raise UsageError(f"--couchdb {image}: no such image in the Docker engine") from None
    except APIError as exc:
        raise UsageError(f"--couchdb {image}: {str(exc).splitlines()[0]}") from None
    try:
        stream, _ = container.get_archive(path)
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            member = tar.next()
            f = tar.extractfile(member) if member is not None else None
            return f.read().decode(errors="replace") if f is not None else None
    except NotFound:
        return None
    finally:
        container.remove(force=True, v=True)   # and the anonymous volume of the image's VOLUME


def check_image(image: str, env: dict | None = None) -> str:
    """The image's default.ini, or a one-line UsageError when it is missing or not a CouchDB image."""
    text = image_file(image, IMAGE_DEFAULT_INI, env=env)
    if text is None:
        raise UsageError(f"--couchdb {image}: not a CouchDB image (no {IMAGE_DEFAULT_INI})")
    return text


def check_values(values: list[str], backend: str, env: dict | None = None) -> dict[str, str]:
    """value -> its default.ini text, every value checked before any build."""
    out = {}
    for v in values:
        if backend == "docker":
            out[v] = check_image(v, env)
        else:
            out[v] = (Path(check_release(v)) / "etc" / "default.ini").read_text()
    return out


def version_of(value: str, backend: str, env: dict | None = None) -> str | None:
    """The CouchDB version of an install, None when it does not say: a release's lib/couch-<version>, an
    image's COUCHDB_VERSION (the official images and dragnet's, built on them, set it)."""
    if backend == "docker":
        from dragnet.couchdb.docker import client

        try:
            env_list = client(env).images.get(value).attrs.get("Config", {}).get("Env") or []
        except Exception:   # the image was checked already: a version is only a bonus
            return None
        return next((e.split("=", 1)[1] for e in env_list if e.startswith("COUCHDB_VERSION=")), None) or None
    libs = sorted((Path(check_release(value)) / "lib").glob("couch-[0-9]*"))
    return libs[-1].name[len("couch-"):] if libs else None


def restart_settings(value: str, backend: str) -> dict:
    return {"image": value} if backend == "docker" else {"home": check_release(value)}


def versions(couch) -> dict:
    """CouchDB, Erlang/OTP and JS engine of the node (dragnet.couchdb.client.Couch.version)."""
    return versions_of(couch.version())


def versions_of(server: dict | None) -> dict | None:
    """{"couchdb", "erlang", "javascript_engine"} from Couch.version()'s answer (None when unknown)."""
    if not isinstance(server, dict) or not server.get("version"):
        return None
    from dragnet.results.schema import couchdb_versions

    return couchdb_versions({"couchdb": server})


def running(value: str, inst) -> bool:
    """Whether the managed node runs this install now."""
    if inst.backend == "docker":
        return inst.image == value
    return bool(inst.home) and check_release(value) == inst.home


def axis(values: list[str], backend: str | None):
    from dragnet.axes.model import CONTAINER, RESTART, Axis

    return Axis("couchdb", values, how=CONTAINER if backend == "docker" else RESTART, label=label,
                restart=lambda v, ctx: restart_settings(v, ctx.inst.backend),
                running=lambda v, ctx: running(v, ctx.inst))


def up_front(values: list[str], ctx, couch) -> None:
    """Before any build: every install exists on ctx.inst's backend; their default.ini texts are kept in
    ctx.installs (what --config's keys are checked against, dragnet.axes.config.up_front)."""
    backend = ctx.inst.backend if ctx.inst is not None else None
    ctx.installs = check_values(values, backend, ctx.env)


def _start_on(values: list[str], backend: str | None) -> dict:
    return {"image": values[0]} if backend == "docker" else {"home": values[0]}


def _kind():
    from dragnet.axes.model import AxisKind, Option, parse_list

    return AxisKind(
        "couchdb", (Option(("--couchdb",), "couchdbs", "A,B",
                           "Axis: CouchDB installs, release directories (local backend) or images (docker backend); "
                           "the managed CouchDB restarts on each."),),
        parse=lambda raw: parse_list(raw.get("couchdbs"), "--couchdb"), make=lambda v, backend: [axis(v, backend)],
        restarts=True, check_first=lambda v, backend, env: check_values(v, backend, env) if backend else None,
        start_on=_start_on, up_front=up_front)


KIND = _kind()
