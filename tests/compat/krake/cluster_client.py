"""A Krake Cluster on Drover through Krake 1.0.1's own client library (`krake.client`),
unchanged: create (the kubeconfig names a drover agent and its join token), read, list, list
across namespaces, a full-object update of what was read (the token shown redacted is kept),
watch (ADDED, MODIFIED, DELETED with the last state) and delete.

Usage: cluster_client.py URL TOKEN AGENT_URL JOIN_TOKEN
  The namespace `ns1` must be a tenant; TOKEN an operator's.
"""
import asyncio
import sys

from aiohttp import ClientSession
from checks import check
from krake.client import Client
from krake.client.kubernetes import KubernetesApi
from krake.data.core import Metadata, WatchEventType
from krake.data.kubernetes import Cluster, ClusterState

URL, TOKEN, AGENT, JOIN_TOKEN = sys.argv[1:5]


def body(name):
    return Cluster.deserialize(
        {
            "api": "kubernetes",
            "kind": "Cluster",
            "metadata": {"name": name, "namespace": "ns1", "labels": {"zone": "a"}, "uid": "x",
                         "created": "2026-01-01T00:00:00+00:00", "modified": "2026-01-01T00:00:00+00:00"},
            "spec": {
                "kubeconfig": {
                    "apiVersion": "v1", "kind": "Config", "current-context": "edge",
                    "clusters": [{"name": "edge", "cluster": {"server": AGENT}}],
                    "users": [{"name": "edge", "user": {"token": JOIN_TOKEN}}],
                    "contexts": [{"name": "edge", "context": {"cluster": "edge", "user": "edge"}}],
                },
                "constraints": {"cloud": {"labels": [], "metrics": []}},
            },
            "status": {},
        }
    )


async def next_event(events, timeout=20):
    return await asyncio.wait_for(events.__anext__(), timeout)


async def main():
    client = Client(URL)
    client.session = ClientSession(headers={"Authorization": TOKEN}, raise_for_status=True)
    try:
        api = KubernetesApi(client)
        async with api.watch_clusters(namespace="ns1", heartbeat=1) as events:
            created = await api.create_cluster(body("edge"), namespace="ns1")
            check(created.metadata.uid != "x" and created.status.state in (ClusterState.PENDING, ClusterState.ONLINE), f"created, {created.status.state}")
            # Other clusters of ns1 may change state meanwhile: their events are passed over.
            while True:
                event = await next_event(events)
                if event.type == WatchEventType.ADDED and event.object.metadata.name == "edge":
                    break
            print("ok: watch ADDED", flush=True)
            while True:
                read = await api.read_cluster(namespace="ns1", name="edge")
                if read.status.state == ClusterState.ONLINE:
                    break
                await asyncio.sleep(0.2)
            check(read.spec.kubeconfig["clusters"][0]["cluster"]["server"] == AGENT, "the server is the agent")
            check(JOIN_TOKEN not in str(read.spec.kubeconfig), "the join token is not shown")
            listed = await api.list_clusters(namespace="ns1")
            check("edge" in [c.metadata.name for c in listed.items], "listed")
            everywhere = await api.list_all_clusters()
            check(any(c.metadata.name == "edge" for c in everywhere.items), "listed across namespaces")
            read.metadata.labels = {"zone": "b"}
            updated = await api.update_cluster(read, namespace="ns1", name="edge")
            check(updated.metadata.labels == {"zone": "b"} and updated.metadata.uid == created.metadata.uid, "updated")
            while True:
                event = await next_event(events)
                if event.type == WatchEventType.MODIFIED and event.object.metadata.labels == {"zone": "b"}:
                    break
            print("ok: watch MODIFIED", flush=True)
            again = await api.read_cluster(namespace="ns1", name="edge")
            check(again.status.state == ClusterState.ONLINE, "still ONLINE: the token was kept")
            deleted = await api.delete_cluster(namespace="ns1", name="edge")
            check(deleted.metadata.deleted is not None, "delete marks it")
            while True:
                event = await next_event(events)
                if event.type == WatchEventType.DELETED and event.object.metadata.name == "edge":
                    break
            check(event.object.metadata.labels == {"zone": "b"}, "watch DELETED with the last state")
    finally:
        await client.close()
    print("all checks passed")


if __name__ == "__main__":
    asyncio.run(main())
