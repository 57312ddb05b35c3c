"""The official Kubernetes Python client against a Drover node, unchanged.

Usage: python3 kube_python.py http://127.0.0.1:PORT [BEARER_TOKEN]
Exits non-zero with a message on the first behaviour that differs from a Kubernetes API server.
"""

import datetime
import sys

from kubernetes import client
from kubernetes.client.rest import ApiException


def expect_status(call, status, what):
    try:
        call()
    except ApiException as error:
        if error.status != status:
            sys.exit(f"{what}: expected {status}, got {error.status}: {error.body}")
        return
    sys.exit(f"{what}: expected {status}, but the call succeeded")


def coordination_lease(api):
    coordination = client.CoordinationV1Api(api)
    now = datetime.datetime.now(datetime.timezone.utc)
    lease = client.V1Lease(
        metadata=client.V1ObjectMeta(name="py-lease", labels={"app": "python"}),
        spec=client.V1LeaseSpec(holder_identity="py-1", lease_duration_seconds=15, acquire_time=now, renew_time=now),
    )
    created = coordination.create_namespaced_lease("default", lease)
    first_version = created.metadata.resource_version
    assert created.metadata.uid, "created lease has a uid"
    got = coordination.read_namespaced_lease("py-lease", "default")
    assert got.spec.holder_identity == "py-1", got.spec
    assert got.spec.acquire_time is not None, got.spec
    got.spec.holder_identity = "py-2"
    replaced = coordination.replace_namespaced_lease("py-lease", "default", got)
    assert replaced.metadata.resource_version != first_version, "replace moves the version"
    assert replaced.spec.holder_identity == "py-2"
    got.metadata.resource_version = first_version
    expect_status(lambda: coordination.replace_namespaced_lease("py-lease", "default", got), 409, "stale replace")
    listed = coordination.list_namespaced_lease("default", label_selector="app=python")
    assert [item.metadata.name for item in listed.items] == ["py-lease"], listed.items
    coordination.delete_namespaced_lease("py-lease", "default")
    expect_status(lambda: coordination.read_namespaced_lease("py-lease", "default"), 404, "read after delete")


def akka_lease(api):
    custom = client.CustomObjectsApi(api)
    body = {
        "apiVersion": "akka.io/v1",
        "kind": "Lease",
        "metadata": {"name": "py-system-akka-sbr"},
        "spec": {"owner": "", "version": "", "time": 0},
    }
    created = custom.create_namespaced_custom_object("akka.io", "v1", "default", "leases", body)
    expect_status(
        lambda: custom.create_namespaced_custom_object("akka.io", "v1", "default", "leases", body),
        409,
        "second create",
    )
    created["spec"]["owner"] = "akka://system@10.0.0.1:2552"
    created["spec"]["time"] = 638700000000000000
    updated = custom.replace_namespaced_custom_object(
        "akka.io", "v1", "default", "leases", "py-system-akka-sbr", created
    )
    assert updated["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
    assert updated["spec"]["owner"] == "akka://system@10.0.0.1:2552", updated
    expect_status(
        lambda: custom.replace_namespaced_custom_object(
            "akka.io", "v1", "default", "leases", "py-system-akka-sbr", created
        ),
        409,
        "heartbeat at a stale version",
    )
    fetched = custom.get_namespaced_custom_object("akka.io", "v1", "default", "leases", "py-system-akka-sbr")
    assert fetched["spec"]["time"] == 638700000000000000, fetched


def main():
    configuration = client.Configuration()
    configuration.host = sys.argv[1]
    if len(sys.argv) > 2:
        configuration.api_key = {"authorization": sys.argv[2]}
        configuration.api_key_prefix = {"authorization": "Bearer"}
    with client.ApiClient(configuration) as api:
        coordination_lease(api)
        akka_lease(api)
    print("kubernetes python client: ok")


if __name__ == "__main__":
    main()
