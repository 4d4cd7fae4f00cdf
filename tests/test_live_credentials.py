"""Live: a CouchDB user whose name and password are not ASCII gets in, through the session and through the
load generator's header, against a real CouchDB (which decodes Basic credentials as UTF-8)."""

import asyncio
import time
from urllib.parse import quote

import pytest

from dragnet.couchdb.client import CouchError, connect, split_credentials

pytestmark = pytest.mark.live


@pytest.fixture()
def user(live_url):
    admin = connect(live_url)
    try:
        admin.request("PUT", "/_users", ok=(201, 202, 412))
    except CouchError as exc:     # a node without _users to create: nothing to test against
        pytest.skip(f"no _users database: {exc}")
    name, password = f"dragnet-tü-{time.time_ns()}", "pä-€"
    doc_id = f"/_users/{quote('org.couchdb.user:' + name, safe=':')}"
    rev = admin.put(doc_id, {"name": name, "password": password, "roles": [], "type": "user"})["rev"]
    try:
        yield name, password
    finally:
        admin.request("DELETE", f"{doc_id}?rev={rev}", ok=(200, 202))


def test_a_user_with_a_non_ascii_name_and_password_gets_in(live_url, user):
    name, password = user
    base, _, _ = split_credentials(live_url)
    scheme, rest = base.split("://", 1)
    couch = connect(f"{scheme}://{quote(name, safe='')}:{quote(password, safe='')}@{rest}")
    assert couch.get("/_session")["userCtx"]["name"] == name
    # the same user from the environment
    couch = connect(base, env={"COUCHDB_USER": name, "COUCHDB_PASSWORD": password})
    assert couch.get("/_session")["userCtx"]["name"] == name


def test_the_load_generators_header_gets_the_same_user_in(live_url, user):
    import aiohttp

    name, password = user
    base, _, _ = split_credentials(live_url)
    header = connect(base, env={"COUCHDB_USER": name, "COUCHDB_PASSWORD": password}).session.auth.header()

    async def session() -> dict:
        async with aiohttp.ClientSession(headers={"Authorization": header}) as s:
            async with s.get(f"{base}/_session") as resp:
                return await resp.json()

    assert asyncio.run(session())["userCtx"]["name"] == name
