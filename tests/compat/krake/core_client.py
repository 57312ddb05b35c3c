"""Drover's Krake dialect driven by Krake 1.0.1's own client library (`krake.client`),
unchanged: the `core` group's six kinds and the `infrastructure` group's four through create,
read, list, list-all, full-object update, delete with finalizers and cascading deletion, and
watch (an infrastructure object's secrets never shown, and kept when sent back as shown); every error as Krake's
problem document; RBAC with Role and RoleBinding, and `GET /me`.

Krake's client has no credential option (Krake's controllers authenticate with client
certificates); the session it uses is given the caller's token in `Authorization`, bare, as
Krake's Keystone strategy sends it.

Usage: core_client.py URL OPERATOR_TOKEN USER_TOKEN USER_NAME
  The namespaces `ns1` and `ns2` must be tenants already; USER_NAME is the user's subject.
Prints one line per check and exits 1 at the first that fails.
"""
import asyncio
import json
import sys

from aiohttp import ClientResponseError, ClientSession, ClientTimeout
from checks import check
from krake.client import Client
from krake.client.core import CoreApi
from krake.client.infrastructure import InfrastructureApi
from krake.data.core import (
    GlobalMetric,
    GlobalMetricsProvider,
    Metadata,
    Metric,
    MetricSpec,
    MetricSpecProvider,
    MetricsProvider,
    MetricsProviderSpec,
    ResourceRef,
    Role,
    RoleBinding,
    RoleRule,
    Verb,
    WatchEventType,
)
from krake.data.infrastructure import (
    Cloud,
    CloudSpec,
    CloudStatus,
    GlobalCloud,
    GlobalInfrastructureProvider,
    InfrastructureProvider,
    InfrastructureProviderSpec,
)

URL, OPERATOR, USER, USER_NAME = sys.argv[1:5]
BASE = "https://rak-n-rok.readthedocs.io/projects/krake/en/latest/user/problem.html"


def client(token):
    krake = Client(URL)
    krake.session = ClientSession(headers={"Authorization": token}, raise_for_status=True)
    return krake


def meta(name, namespace=None, **kwargs):
    return Metadata(name=name, namespace=namespace, uid=None, created=None, modified=None, **kwargs)


def metric_spec(minimum=0, maximum=10):
    return MetricSpec(min=minimum, max=maximum, provider=MetricSpecProvider(name="prov", metric="load"))


def provider_spec(value=1.0):
    return MetricsProviderSpec.deserialize({"type": "static", "static": {"metrics": {"load": value}}})


async def problem(session, method, path, body=None, raw=None, headers=None):
    """A raw request; the answer's status, content type and JSON body."""
    kwargs = {"headers": headers or {}}
    if raw is not None:
        kwargs["data"] = raw
    elif body is not None:
        kwargs["json"] = body
    async with session.request(method, URL + path, **kwargs) as response:
        text = await response.text()
        return response.status, response.headers.get("Content-Type", ""), json.loads(text) if text else None


def is_problem(answer, status, title, what):
    code, content_type, body = answer
    check(code == status, f"{what}: status {code} == {status}")
    check(content_type.startswith("application/problem+json"), f"{what}: problem+json ({content_type})")
    check(set(body) == {"type", "title", "status", "detail", "instance"}, f"{what}: every field of RFC 7807 ({sorted(body)})")
    expected_type = f"{BASE}#{title.lower().replace('_', '-')}" if title else "about:blank"
    check(body["title"] == title and body["type"] == expected_type and body["status"] == status, f"{what}: title {body['title']} type {body['type']}")


def im_spec():
    return InfrastructureProviderSpec.deserialize({"type": "im", "im": {"url": "http://127.0.0.1:9/im", "token": "im-secret-token"}})


def cloud_spec(provider_namespaced=False):
    return CloudSpec.deserialize({"type": "openstack", "openstack": {
        "url": "http://127.0.0.1:9/v3",
        "auth": {"type": "password", "password": {"version": "3",
                 "user": {"username": "admin", "password": "cloud-secret", "domain_name": "Default"},
                 "project": {"name": "p", "domain_id": "default"}}},
        "metrics": [], "infrastructure_provider": {"name": "im", "namespaced": provider_namespaced}}})


INFRASTRUCTURE = {
    "GlobalInfrastructureProvider": (None, lambda n, ns, **m: GlobalInfrastructureProvider(metadata=meta(n, **m), spec=im_spec()),
                                     lambda o: setattr(o.spec.im, "url", "http://127.0.0.1:9/other"),
                                     "global_infrastructure_provider", "globalinfrastructureproviders"),
    "InfrastructureProvider": ("ns1", lambda n, ns, **m: InfrastructureProvider(metadata=meta(n, ns, **m), spec=im_spec()),
                               lambda o: setattr(o.spec.im, "url", "http://127.0.0.1:9/other"),
                               "infrastructure_provider", "infrastructureproviders"),
    "GlobalCloud": (None, lambda n, ns, **m: GlobalCloud(metadata=meta(n, **m), spec=cloud_spec(), status=CloudStatus()),
                    lambda o: setattr(o.spec.openstack, "url", "http://127.0.0.1:9/v3/other"), "global_cloud", "globalclouds"),
    "Cloud": ("ns1", lambda n, ns, **m: Cloud(metadata=meta(n, ns, **m), spec=cloud_spec(True), status=CloudStatus()),
              lambda o: setattr(o.spec.openstack, "url", "http://127.0.0.1:9/v3/other"), "cloud", "clouds"),
}

KINDS = {
    # kind: (namespace, make(name, namespace, **meta), change(obj), api methods, plural)
    "GlobalMetric": (None, lambda n, ns, **m: GlobalMetric(metadata=meta(n, **m), spec=metric_spec()),
                     lambda o: setattr(o.spec, "max", o.spec.max + 1), "global_metric", "globalmetrics"),
    "Metric": ("ns1", lambda n, ns, **m: Metric(metadata=meta(n, ns, **m), spec=metric_spec()),
               lambda o: setattr(o.spec, "max", o.spec.max + 1), "metric", "metrics"),
    "GlobalMetricsProvider": (None, lambda n, ns, **m: GlobalMetricsProvider(metadata=meta(n, **m), spec=provider_spec()),
                              lambda o: o.spec.static.metrics.update(load=2.0), "global_metrics_provider", "globalmetricsproviders"),
    "MetricsProvider": ("ns1", lambda n, ns, **m: MetricsProvider(metadata=meta(n, ns, **m), spec=provider_spec()),
                        lambda o: o.spec.static.metrics.update(load=2.0), "metrics_provider", "metricsproviders"),
    "Role": (None, lambda n, ns, **m: Role(metadata=meta(n, **m), rules=[RoleRule(api="core", resources=["metrics"], namespaces=["ns1"], verbs=[Verb.get])]),
             lambda o: o.rules[0].verbs.append(Verb.list), "role", "roles"),
    "RoleBinding": (None, lambda n, ns, **m: RoleBinding(metadata=meta(n, **m), users=["nobody"], roles=["none"]),
                    lambda o: o.users.append("somebody"), "role_binding", "rolebindings"),
}


def call(api, verb, suffix, *args, namespace=None, **kwargs):
    method = getattr(api, f"{verb}_{suffix}")
    if namespace is not None:
        kwargs["namespace"] = namespace
    return method(*args, **kwargs)


async def next_event(events, timeout=10):
    return await asyncio.wait_for(events.__anext__(), timeout)


async def one_kind(api, session, kind, group="core", kinds=KINDS):
    namespace, make, change, suffix, plural = kinds[kind]
    plural_suffix = suffix + "s" if not suffix.endswith("s") else suffix
    list_name = {"role_binding": "role_bindings"}.get(suffix, plural_suffix)
    prefix = f"/{group}/namespaces/{namespace}/{plural}" if namespace else f"/{group}/{plural}"
    watch = getattr(api, f"watch_{list_name}")
    watch_kwargs = {"namespace": namespace} if namespace else {}
    async with watch(heartbeat=1, **watch_kwargs) as events:
        created = await call(api, "create", suffix, make("first", namespace, labels={"team": "blue"}), namespace=namespace)
        check(created.metadata.uid and created.metadata.created == created.metadata.modified, f"{kind}: created with uid and times")
        check(created.metadata.namespace == namespace, f"{kind}: namespace {created.metadata.namespace}")
        event = await next_event(events)
        check(event.type == WatchEventType.ADDED and event.object.metadata.name == "first", f"{kind}: watch ADDED")

        read = await call(api, "read", suffix, name="first", namespace=namespace)
        check(read.serialize() == created.serialize(), f"{kind}: read what was created")
        if group == "infrastructure":
            shown = json.dumps(read.serialize())
            check("im-secret-token" not in shown and "cloud-secret" not in shown, f"{kind}: its secrets are not shown")
        listed = await call(api, "list", list_name, **watch_kwargs)
        check([item.metadata.name for item in listed.items] == ["first"], f"{kind}: listed")
        if namespace:
            list_all = f"all_{list_name}" if hasattr(api, f"list_all_{list_name}") else list_name
            everywhere = await call(api, "list", list_all)
            check(any(item.metadata.name == "first" and item.metadata.namespace == namespace for item in everywhere.items), f"{kind}: listed across namespaces")

        # A full-object update: what the server sets is ignored, the change is kept.
        change(read)
        read.metadata.labels = {"team": "green"}
        read.metadata.uid = "not-the-uid"
        updated = await call(api, "update", suffix, read, name="first", namespace=namespace)
        check(updated.metadata.uid == created.metadata.uid and updated.metadata.labels == {"team": "green"}, f"{kind}: update kept the uid, took the labels")
        check(updated.metadata.modified > created.metadata.modified and updated.metadata.created == created.metadata.created, f"{kind}: modified moved, created did not")
        event = await next_event(events)
        check(event.type == WatchEventType.MODIFIED and event.object.metadata.labels == {"team": "green"}, f"{kind}: watch MODIFIED")

        # The errors, as Krake's problem documents.
        is_problem(await problem(session, "GET", f"{prefix}/missing"), 404, "NOT_FOUND_ERROR", f"{kind}: 404")
        is_problem(await problem(session, "POST", prefix, body=make("first", namespace).serialize()), 409, "RESOURCE_ALREADY_EXISTS", f"{kind}: 409 create")
        same = updated.serialize()
        is_problem(await problem(session, "PUT", f"{prefix}/first", body=same), 400, "UPDATE_ERROR", f"{kind}: 400 no update")
        renamed = dict(same, metadata=dict(same["metadata"], name="other"))
        is_problem(await problem(session, "PUT", f"{prefix}/first", body=renamed), 400, "UPDATE_ERROR", f"{kind}: 400 immutable name")
        stale = created.serialize()
        stale["metadata"]["labels"] = {"team": "red"}
        is_problem(await problem(session, "PUT", f"{prefix}/first", body=stale), 409, "TRANSACTION_ERROR", f"{kind}: 409 stale update (Drover)")
        bad = make("-bad", namespace).serialize()
        is_problem(await problem(session, "POST", prefix, body=bad), 422, None, f"{kind}: 422 name")
        is_problem(await problem(session, "POST", prefix, raw=b"not json"), 415, None, f"{kind}: 415")
        is_problem(await problem(session, "GET", prefix, headers={"Authorization": "no-such-token-00000000"}), 401, None, f"{kind}: 401")

        # Delete with a finalizer of the caller's: marked, held, then gone.
        held = make("held", namespace, finalizers=["mine"])
        await call(api, "create", suffix, held, namespace=namespace)
        await next_event(events)  # ADDED held
        marked = await call(api, "delete", suffix, name="held", namespace=namespace)
        check(marked.metadata.deleted is not None and marked.metadata.finalizers[-1] == "cascade_deletion", f"{kind}: delete marks it with cascade_deletion")
        event = await next_event(events)
        check(event.type == WatchEventType.MODIFIED and event.object.metadata.deleted is not None, f"{kind}: watch MODIFIED on delete")
        still = await call(api, "read", suffix, name="held", namespace=namespace)
        check(still.metadata.finalizers == ["mine"], f"{kind}: held by its own finalizer ({still.metadata.finalizers})")
        adding = still.serialize()
        adding["metadata"]["finalizers"] = ["mine", "more"]
        is_problem(await problem(session, "PUT", f"{prefix}/held", body=adding), 409, "UPDATE_ERROR", f"{kind}: 409 finalizer added in deletion")
        still.metadata.finalizers = []
        await call(api, "update", suffix, still, name="held", namespace=namespace)
        event = await next_event(events)
        check(event.type == WatchEventType.DELETED and event.object.metadata.name == "held", f"{kind}: watch DELETED with the last state")
        is_problem(await problem(session, "GET", f"{prefix}/held"), 404, "NOT_FOUND_ERROR", f"{kind}: gone")

        # Cascading deletion: a dependent goes first, then its owner.
        owner_ref = ResourceRef(api=group, namespace=namespace, kind=kind, name="first")
        await call(api, "create", suffix, make("dependent", namespace, owners=[owner_ref]), namespace=namespace)
        await next_event(events)  # ADDED dependent
        await call(api, "delete", suffix, name="first", namespace=namespace)
        gone = set()
        while len(gone) < 2:
            event = await next_event(events)
            if event.type == WatchEventType.DELETED:
                gone.add(event.object.metadata.name)
        check(gone == {"first", "dependent"}, f"{kind}: the owner's delete took its dependent")
        listed = await call(api, "list", list_name, **watch_kwargs)
        check(listed.items == [], f"{kind}: nothing left")

    # Heartbeats: bare newlines on a quiet watch.
    async with session.get(f"{URL}{prefix}?watch&heartbeat=1", timeout=ClientTimeout(sock_read=5)) as response:
        check(response.headers["Content-Type"] == "application/x-ndjson", f"{kind}: watch is ndjson")
        line = await asyncio.wait_for(response.content.readline(), 5)
        check(line == b"\n", f"{kind}: heartbeat {line!r}")


async def rbac(operator_api, operator_session):
    rule = RoleRule(api="core", resources=["metrics"], namespaces=["ns1"], verbs=[Verb.get, Verb.list])
    await operator_api.create_role(Role(metadata=meta("metric-reader"), rules=[rule]))
    await operator_api.create_role_binding(RoleBinding(metadata=meta("reader-binding"), users=[USER_NAME], roles=["metric-reader"]))
    await operator_api.create_metric(Metric(metadata=meta("visible", "ns1"), spec=metric_spec()), namespace="ns1")
    user = client(USER)
    try:
        api = CoreApi(user)
        me = await (await user.session.get(URL + "/me")).json()
        check(me == {"user": USER_NAME, "roles": ["metric-reader"]}, f"GET /me names the roles: {me}")
        got = await api.read_metric(name="visible", namespace="ns1")
        check(got.metadata.name == "visible", "RBAC: get allowed in ns1")
        listed = await api.list_metrics(namespace="ns1")
        check([i.metadata.name for i in listed.items] == ["visible"], "RBAC: list allowed in ns1")
        session = ClientSession(headers={"Authorization": USER})
        try:
            body = Metric(metadata=meta("nope", "ns1"), spec=metric_spec()).serialize()
            is_problem(await problem(session, "POST", "/core/namespaces/ns1/metrics", body=body), 403, None, "RBAC: create refused in ns1")
            is_problem(await problem(session, "GET", "/core/namespaces/ns2/metrics/visible"), 403, None, "RBAC: read refused in ns2")
            is_problem(await problem(session, "GET", "/core/metrics"), 403, None, "RBAC: list of every namespace refused (Krake allows it)")
            is_problem(await problem(session, "GET", "/core/roles"), 403, None, "RBAC: roles refused")
        finally:
            await session.close()
    finally:
        await user.close()
    await operator_api.delete_metric(name="visible", namespace="ns1")
    await operator_api.delete_role_binding(name="reader-binding")
    await operator_api.delete_role(name="metric-reader")


async def main():
    operator = client(OPERATOR)
    try:
        api = CoreApi(operator)
        session = ClientSession(headers={"Authorization": OPERATOR})
        try:
            version = await (await operator.session.get(URL + "/")).json()
            check(version == {"version": "1.0.1"}, f"GET / {version}")
            for kind in KINDS:
                await one_kind(api, session, kind)
            infrastructure = InfrastructureApi(operator)
            for kind in INFRASTRUCTURE:
                await one_kind(infrastructure, session, kind, "infrastructure", INFRASTRUCTURE)
            await rbac(api, session)
            is_problem(await problem(session, "GET", "/core/nothing"), 404, None, "unknown route")
            is_problem(await problem(session, "PATCH", "/core/roles"), 405, None, "wrong method")
        finally:
            await session.close()
    finally:
        await operator.close()
    print("all checks passed")


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except ClientResponseError as error:
        print(f"FAILED: {error.request_info.method} {error.request_info.url}: {error.status} {error.message}")
        sys.exit(1)
