"""One step of a Krake Application's life on Drover through Krake 1.0.1's own client library
(`krake.client`), unchanged, for a test that checks the runtime between steps: create an
Application from a JSON file, update the manifest of what was read, read it (printing its
status as Krake's client parsed it), or delete it.

Usage: image_app_client.py URL TOKEN NAMESPACE NAME create FILE
       image_app_client.py URL TOKEN NAMESPACE NAME update FILE   (FILE: the new manifest)
       image_app_client.py URL TOKEN NAMESPACE NAME read
       image_app_client.py URL TOKEN NAMESPACE NAME delete
  TOKEN is a bearer token with the right to do it. `read` prints one line `status: {json}` with
  the state, `services`, `container_health` and `running_on` as the client's objects hold them.
"""
import asyncio
import json
import sys

from aiohttp import ClientSession
from krake.client import Client
from krake.client.kubernetes import KubernetesApi
from krake.data.kubernetes import Application

URL, TOKEN, NAMESPACE, NAME, ACTION = sys.argv[1:6]
FILE = sys.argv[6] if len(sys.argv) > 6 else None

# What Krake's schema requires of metadata that the server fills in.
PLACEHOLDERS = {"uid": "x", "created": "2026-01-01T00:00:00+00:00",
                "modified": "2026-01-01T00:00:00+00:00"}


def load(path):
    with open(path) as file:
        return json.load(file)


async def create(api):
    body = load(FILE)
    body["metadata"] = {**PLACEHOLDERS, "namespace": NAMESPACE, **body["metadata"]}
    body.setdefault("status", {})
    created = await api.create_application(Application.deserialize(body), namespace=NAMESPACE)
    print(f"created: {created.metadata.uid}", flush=True)


async def update(api):
    read = await api.read_application(namespace=NAMESPACE, name=NAME)
    read.spec.manifest = load(FILE)
    updated = await api.update_application(read, namespace=NAMESPACE, name=NAME)
    print(f"updated: {updated.metadata.modified}", flush=True)


async def read(api):
    app = await api.read_application(namespace=NAMESPACE, name=NAME)
    health = app.status.container_health
    status = {
        "state": app.status.state.name,
        "services": dict(app.status.services or {}),
        "running_on": app.status.running_on.name if app.status.running_on else None,
        "desired_pods": health.desired_pods if health else None,
        "running_pods": health.running_pods if health else None,
    }
    print(f"status: {json.dumps(status)}", flush=True)


async def delete(api):
    deleted = await api.delete_application(namespace=NAMESPACE, name=NAME)
    print(f"deleted: {deleted.metadata.deleted}", flush=True)


async def main():
    client = Client(URL)
    client.session = ClientSession(headers={"Authorization": TOKEN}, raise_for_status=True)
    try:
        step = {"create": create, "update": update, "read": read, "delete": delete}[ACTION]
        await step(KubernetesApi(client))
    finally:
        await client.close()


if __name__ == "__main__":
    asyncio.run(main())
