"""A watch through Krake 1.0.1's own client (`krake.client`'s `watch_roles`) is told every Role
made and removed, however short its life: while the watch is open on one node, COUNT roles are
each created and at once deleted through other nodes (no pause between, so each lives a few
milliseconds, far less than a poll), and the watch must tell, for every one, `ADDED` before
`DELETED` — each once.

Usage: quick_watch.py WATCH_URL WRITE_URL OPERATOR_TOKEN PREFIX COUNT
Prints one line per check and exits 1 at the first that fails.
"""
import asyncio
import sys

from aiohttp import ClientSession, ClientTimeout
from checks import check
from krake.client import Client
from krake.client.core import CoreApi
from krake.data.core import Metadata, Role, WatchEventType

WATCH_URL, WRITE_URL, TOKEN, PREFIX = sys.argv[1:5]
COUNT = int(sys.argv[5])


def client(url):
    krake = Client(url)
    krake.session = ClientSession(headers={"Authorization": TOKEN}, raise_for_status=True)
    return krake


async def churn(api):
    """Creates and deletes every role, one right after the other."""
    for i in range(COUNT):
        name = f"{PREFIX}{i}"
        role = Role(metadata=Metadata(name=name, uid=None, created=None, modified=None), rules=[])
        await api.create_role(body=role)
        await api.delete_role(name=name)


async def main():
    watcher, writer = client(WATCH_URL), client(WRITE_URL)
    told = {}
    async with watcher, writer:
        watch_api, write_api = CoreApi(watcher), CoreApi(writer)
        async with watch_api.watch_roles(heartbeat=1) as events:
            writing = asyncio.create_task(churn(write_api))

            async def read():
                async for event in events:
                    name = event.object.metadata.name
                    if not name.startswith(PREFIX):
                        continue
                    told.setdefault(name, []).append(event.type)
                    if len(told) == COUNT and all(WatchEventType.DELETED in seen for seen in told.values()):
                        return

            try:
                await asyncio.wait_for(read(), timeout=30)
            except asyncio.TimeoutError:
                pass
            await writing
    for i in range(COUNT):
        name = f"{PREFIX}{i}"
        seen = [t.name for t in told.get(name, [])]
        check(
            seen[:1] == ["ADDED"] and seen[-1:] == ["DELETED"] and seen.count("ADDED") == 1 and seen.count("DELETED") == 1,
            f"{name}: told ADDED first and DELETED last, once each ({seen})",
        )
    print("all checks passed", flush=True)


asyncio.run(main())
