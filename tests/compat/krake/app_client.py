"""A Krake Application on Drover through Krake 1.0.1's own client library (`krake.client`),
unchanged: create (a Deployment that runs as `exec` processes), watch ADDED, read until
RUNNING, list, list across namespaces, a full-object update of what was read (three replicas
instead of two), watch MODIFIED, the status subresource (refused: Drover observes it), delete,
watch DELETED with the last state, and a read answering 404.

Usage: app_client.py URL TOKEN
  The namespace `ns1` must be a tenant with an environment and an ONLINE cluster; TOKEN an
  operator's.
"""
import asyncio
import sys
import time

from aiohttp import ClientResponseError, ClientSession
from checks import check
from krake.client import Client
from krake.client.kubernetes import KubernetesApi
from krake.data.core import WatchEventType
from krake.data.kubernetes import Application, ApplicationState

URL, TOKEN = sys.argv[1:3]


def body(name, replicas):
    return Application.deserialize(
        {
            "api": "kubernetes",
            "kind": "Application",
            "metadata": {"name": name, "namespace": "ns1", "labels": {"app": name}, "uid": "x",
                         "created": "2026-01-01T00:00:00+00:00", "modified": "2026-01-01T00:00:00+00:00"},
            "spec": {
                "manifest": [{
                    "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                    "spec": {"replicas": replicas, "template": {"spec": {"containers": [
                        {"name": "main", "image": "exec", "command": ["sleep", "600"],
                         "resources": {"requests": {"cpu": "10m", "memory": "8Mi"}}}]}}},
                }],
                "constraints": {"cluster": {"labels": ["zone in (a, b)"], "custom_resources": [], "metrics": []},
                                "migration": True},
            },
            "status": {},
        }
    )


async def next_event(events, timeout=60):
    return await asyncio.wait_for(events.__anext__(), timeout)


async def until(api, condition, what, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        read = await api.read_application(namespace="ns1", name="pyapp")
        if condition(read):
            return read
        await asyncio.sleep(0.2)
    check(False, what)


async def main():
    client = Client(URL)
    client.session = ClientSession(headers={"Authorization": TOKEN}, raise_for_status=True)
    try:
        api = KubernetesApi(client)
        async with api.watch_applications(namespace="ns1", heartbeat=1) as events:
            created = await api.create_application(body("pyapp", 2), namespace="ns1")
            check(created.metadata.uid != "x" and created.status.state in (ApplicationState.PENDING, ApplicationState.CREATING, ApplicationState.RUNNING),
                  f"created, {created.status.state}")
            while True:
                event = await next_event(events)
                if event.type == WatchEventType.ADDED and event.object.metadata.name == "pyapp":
                    break
            print("ok: watch ADDED", flush=True)
            read = await until(api, lambda a: a.status.state == ApplicationState.RUNNING, "RUNNING")
            check(read.status.running_on.name in ("a", "b") and read.status.running_on.kind == "Cluster", f"runs on {read.status.running_on.name}")
            check(read.status.container_health.desired_pods == 2, "two pods desired")
            listed = await api.list_applications(namespace="ns1")
            check("pyapp" in [a.metadata.name for a in listed.items], "listed")
            everywhere = await api.list_all_applications()
            check(any(a.metadata.name == "pyapp" for a in everywhere.items), "listed across namespaces")
            read.spec.manifest[0]["spec"]["replicas"] = 3
            updated = await api.update_application(read, namespace="ns1", name="pyapp")
            check(updated.spec.manifest[0]["spec"]["replicas"] == 3 and updated.metadata.uid == created.metadata.uid, "updated")
            while True:
                event = await next_event(events)
                if event.type == WatchEventType.MODIFIED and event.object.spec.manifest[0]["spec"]["replicas"] == 3:
                    break
            print("ok: watch MODIFIED", flush=True)
            await until(api, lambda a: a.status.state == ApplicationState.RUNNING and a.status.container_health.running_pods == 3, "three pods running")
            try:
                await api.update_application_status(updated, namespace="ns1", name="pyapp")
                check(False, "the status is refused")
            except ClientResponseError as error:
                check(error.status == 422, "the status is refused with 422")
            deleted = await api.delete_application(namespace="ns1", name="pyapp")
            check(deleted.metadata.deleted is not None, "delete marks it")
            while True:
                event = await next_event(events)
                if event.type == WatchEventType.DELETED and event.object.metadata.name == "pyapp":
                    break
            check(event.object.spec.manifest[0]["spec"]["replicas"] == 3, "watch DELETED with the last state")
            try:
                await api.read_application(namespace="ns1", name="pyapp")
                check(False, "gone")
            except ClientResponseError as error:
                check(error.status == 404, "a read of it answers 404")
    finally:
        await client.close()
    print("all checks passed")


if __name__ == "__main__":
    asyncio.run(main())
