"""`make bench-krake`'s client: the same load, through Krake 1.0.1's own client library
(`krake.client`), against each target given (Krake's own API server, Drover's Krake dialect).

Per target: CLIENTS worker processes (one request in flight each) create OBJECTS GlobalMetrics,
update each once (the full object as read), read GETS objects, then all list the OBJECTS at once
(and one alone); a watch opened before the creates counts the ADDED and MODIFIED events it
receives. Prints one JSON line per target.

With --raw the same requests are sent as plain JSON through aiohttp, without Krake's data
classes (whose marshmallow (de)serialization costs the client more CPU than a Drover node spends
on the request): what the server can do rather than what the Python client can.

Usage: bench.py --target NAME=URL[=TOKEN] ... [--objects 1000] [--clients 8] [--gets 2000] [--raw]
"""
import argparse
import asyncio
import json
import os
import multiprocessing as mp
import time

from aiohttp import ClientSession, ClientTimeout


# The objects' names are PREFIX-0, PREFIX-1, …; each run takes its own prefix (Krake's core kinds
# cannot be deleted for good without its garbage collector).
PREFIX = "bench"

# A watch is done once every event came, or none came for this many seconds after the load.
QUIET = float(os.environ.get("BENCH_WATCH_QUIET", "10"))


def session(token):
    headers = {"Authorization": token} if token else {}
    return ClientSession(headers=headers, raise_for_status=True, timeout=ClientTimeout(total=600))


def metric(name):
    from krake.data.core import GlobalMetric, Metadata, MetricSpec, MetricSpecProvider

    return GlobalMetric(
        metadata=Metadata(name=name, uid=None, created=None, modified=None),
        spec=MetricSpec(min=0, max=100, provider=MetricSpecProvider(name="bench", metric="load")),
    )


def raw_metric(name):
    return {
        "api": "core",
        "kind": "GlobalMetric",
        "metadata": {"name": name},
        "spec": {"min": 0, "max": 100, "provider": {"name": "bench", "metric": "load"}},
    }


class RawApi:
    """The calls the bench makes, as plain JSON requests."""

    def __init__(self, url, http):
        self.url, self.http = url, http

    async def create_global_metric(self, body):
        async with self.http.post(f"{self.url}/core/globalmetrics", json=body) as response:
            return await response.read()

    async def read_global_metric(self, name):
        async with self.http.get(f"{self.url}/core/globalmetrics/{name}") as response:
            return RawObject(await response.json())

    async def update_global_metric(self, body, name):
        async with self.http.put(f"{self.url}/core/globalmetrics/{name}", json=body.serialize()) as response:
            return await response.read()

    async def list_global_metrics(self):
        async with self.http.get(f"{self.url}/core/globalmetrics") as response:
            return RawList(await response.json())


class RawObject:
    def __init__(self, data):
        self.data = data
        self.spec = self

    @property
    def max(self):
        return self.data["spec"]["max"]

    @max.setter
    def max(self, value):
        self.data["spec"]["max"] = value

    def serialize(self):
        return self.data


class RawList:
    def __init__(self, data):
        self.items = data["items"]


class Client:
    """Krake's client, or the plain-JSON one."""

    def __init__(self, url, token, raw):
        self.url, self.token, self.raw = url, token, raw

    async def __aenter__(self):
        if self.raw:
            self.http = session(self.token)
            return RawApi(self.url, self.http)
        from krake.client import Client as KrakeClient
        from krake.client.core import CoreApi

        self.client = KrakeClient(self.url)
        self.client.session = session(self.token)
        return CoreApi(self.client)

    async def __aexit__(self, *exc):
        if self.raw:
            await self.http.close()
        else:
            await self.client.close()


async def worker_phases(url, token, raw, index, clients, objects, gets, barrier, results):
    async with Client(url, token, raw) as api:
        await phases_of(api, index, clients, objects, gets, barrier, results)


async def phases_of(api, index, clients, objects, gets, barrier, results):
    mine = [f"{PREFIX}-{i}" for i in range(index, objects, clients)]

    async def timed(phase, work):
        await asyncio.get_running_loop().run_in_executor(None, barrier.wait, 600)
        start = time.time()
        count = await work()
        results.put((phase, index, start, time.time(), count))

    raw = isinstance(api, RawApi)

    async def creates():
        for name in mine:
            await api.create_global_metric(raw_metric(name) if raw else metric(name))
        return len(mine)

    read = {}

    async def updates():
        for name in mine:
            body = read[name]
            body.spec.max = body.spec.max + 1
            await api.update_global_metric(body, name=name)
        return len(mine)

    async def reads():
        count = gets // clients
        for i in range(count):
            await api.read_global_metric(name=mine[i % len(mine)])
        return count

    async def lists():
        listed = await api.list_global_metrics()
        return len(listed.items)

    await timed("create", creates)
    for name in mine:
        read[name] = await api.read_global_metric(name=name)
    await timed("update", updates)
    await timed("get", reads)
    await timed("list", lists)
    if index == 0:
        await timed("list alone", lists)
    else:
        await asyncio.get_running_loop().run_in_executor(None, barrier.wait)


def worker(*args):
    try:
        asyncio.run(worker_phases(*args))
    except Exception as error:  # reported, and the other workers are let go
        args[-1].put(("error", args[3], 0.0, 0.0, f"{type(error).__name__}: {error}"))
        args[-2].abort()


async def watch_events(url, token, objects, stop):
    """Counts the ADDED and MODIFIED events of bench objects (heartbeats aside)."""
    seen = {"ADDED": set(), "MODIFIED": set()}
    async with session(token) as http:
        async with http.get(f"{url}/core/globalmetrics?watch&heartbeat=1", timeout=ClientTimeout(sock_read=30)) as response:
            # After the load: until every event came, or none came for 10 s (at most 2 min).
            last, end = time.time(), None
            while True:
                now = time.time()
                if stop.is_set() and end is None:
                    end = now + 120
                if end and (all(len(v) >= objects for v in seen.values()) or now > end or now - last > QUIET):
                    break
                try:
                    line = await asyncio.wait_for(response.content.readline(), 1)
                except asyncio.TimeoutError:
                    continue
                if not line.strip():
                    continue
                last = time.time()
                event = json.loads(line)
                name = event["object"]["metadata"]["name"]
                if event["type"] in seen and name.startswith(PREFIX + "-"):
                    seen[event["type"]].add(name)
    return {kind: len(names) for kind, names in seen.items()}


def run_target(name, url, token, objects, clients, gets, raw):
    barrier = mp.Barrier(clients)
    results = mp.Queue()
    stop = mp.Event()
    watch = mp.Queue()
    watcher = mp.Process(target=lambda: watch.put(asyncio.run(watch_events(url, token, objects, stop))))
    watcher.start()
    time.sleep(1.0)  # the watch is open before the first create
    workers = [
        mp.Process(target=worker, args=(url, token, raw, i, clients, objects, gets, barrier, results))
        for i in range(clients)
    ]
    for process in workers:
        process.start()
    for process in workers:
        process.join()
    stop.set()
    watcher.join()
    phases = {}
    errors = []
    while not results.empty():
        phase, _, start, end, count = results.get()
        if phase == "error":
            errors.append(count)
            continue
        entry = phases.setdefault(phase, {"start": start, "end": end, "count": 0, "each": []})
        entry["start"], entry["end"] = min(entry["start"], start), max(entry["end"], end)
        entry["count"] += count
        entry["each"].append(end - start)
    seen = watch.get()
    if errors:
        return {"target": name, "errors": sorted(set(errors))}
    out = {"target": name, "client": "plain JSON" if raw else "krake.client", "objects": objects, "clients": clients}
    for phase in ("create", "update", "get"):
        entry = phases[phase]
        out[f"{phase}s_per_s"] = round(entry["count"] / (entry["end"] - entry["start"]), 1)
    out["list_s_concurrent_mean"] = round(sum(phases["list"]["each"]) / len(phases["list"]["each"]), 3)
    out["list_s_concurrent_max"] = round(max(phases["list"]["each"]), 3)
    out["listed"] = phases["list"]["count"] // clients
    out["list_s_alone"] = round(phases["list alone"]["each"][0], 3)
    out["watch_added"] = seen["ADDED"]
    out["watch_modified"] = seen["MODIFIED"]
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", action="append", required=True)
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--gets", type=int, default=2000)
    parser.add_argument("--raw", action="store_true")
    parser.add_argument("--prefix", default="bench")
    args = parser.parse_args()
    global PREFIX
    PREFIX = args.prefix
    mp.set_start_method("fork")
    for target in args.target:
        name, url, *token = target.split("=", 2)
        print(json.dumps(run_target(name, url, token[0] if token else None, args.objects, args.clients, args.gets, args.raw)), flush=True)


if __name__ == "__main__":
    main()
