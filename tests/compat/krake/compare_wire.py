"""The same requests against Krake 1.0.1's own API server and Drover's Krake dialect, answers
compared: status, content type and body, with what differs by nature set aside (uids and
times; the wording of a 422's marshmallow messages and of 401/403 details). Every other
difference must be one of ALLOWED below, each with its reason (docs/KRAKE.md lists them too).

Usage: compare_wire.py KRAKE_URL DROVER_URL DROVER_TOKEN
  Krake's server runs with its static user and always-allow; Drover's requests carry
  DROVER_TOKEN (an operator's); the namespace `ns1` must be a tenant of Drover.
Prints one line per step and exits 1 at an unexplained difference.
"""
import asyncio
import json
import sys

from aiohttp import ClientSession, ClientTimeout

KRAKE, DROVER, TOKEN = sys.argv[1:4]

# Steps whose answers differ on purpose: step name -> the reason.
ALLOWED = {
    "update with a stale modified": "Drover refuses a full-object PUT whose metadata.modified is not the "
    "object's (409 TRANSACTION_ERROR) where Krake keeps the last writer's object",
    "kafka provider": "Drover reads metrics from prometheus and static providers only: a kafka "
    "provider is a 422 naming spec.type",
    "delete it again": "as for the read after delete below: the object Drover returns has lost "
    "cascade_deletion already",
    "read after delete": "Drover runs Krake's garbage collection in the same write: cascade_deletion is "
    "gone as soon as nothing depends on the object (Krake waits for its garbage-collector process, "
    "not running beside this server)",
    "delete the application": "Drover runs Krake's garbage collection in the same write, and an "
    "application that was never placed has nothing to remove: it is gone at once, answered as it "
    "was last (DELETING, no finalizer) where Krake's waits for its garbage collector and controller",
    "read the application after delete": "as above: Drover's is gone (404) where Krake's waits for "
    "processes not running beside this server",
    "write the application's status": "an Application's status is what Drover's service actor observes "
    "of its instances: /status is 422 naming why (Krake merges the body's status)",
    "write a global cloud's status": "a cloud's status is what Drover resolves of its metrics: "
    "/status is 422 naming why (Krake merges the body's status)",
    "me": "the user is the credential's subject (Drover's request carries an operator's token; "
    "Krake's server names its static user)",
}


def normalise(body):
    """Sets aside what differs by nature: uids and times (kept as present or null), the
    version Drover's lists add for watches to resume from, and secrets — a password or token,
    which Drover never shows (docs/KRAKE.md) — kept as present or null."""
    if isinstance(body, dict):
        out = {}
        for key, value in body.items():
            if key in ("uid", "created", "modified", "deleted"):
                out[key] = None if value is None else "<set>"
            elif key in ("password", "token") and (value is None or isinstance(value, str)):
                out[key] = None if value is None else "<secret>"
            elif key == "resourceVersion":
                continue  # Drover's lists say where a watch may resume (docs/KRAKE.md)
            else:
                out[key] = normalise(value)
        return out
    if isinstance(body, list):
        return [normalise(item) for item in body]
    return body


# Krake's scheduler, which gives a PENDING application no cluster may take its reason, does not
# run beside this server; Drover's scheduler is part of every node and says so at once.
SCHEDULER_REASON = ("an application no cluster may take shows Drover's scheduler's reason "
                    "(50 NO_SUITABLE_RESOURCE, as Krake's scheduler writes it); Krake's scheduler "
                    "does not run beside this server, so its reason stays null")


# The steps whose applications' reasons were set aside (told once, at the end).
REASONS_SET_ASIDE = []


def set_scheduler_reason_aside(krake, drover):
    """Drover's body with the reason of its PENDING applications that Krake's shows without one
    set to null, and whether there was any."""
    def pending_reason(k, d):
        if not (isinstance(k, dict) and isinstance(d, dict)):
            return False
        k_status, d_status = k.get("status"), d.get("status")
        if not (isinstance(k_status, dict) and isinstance(d_status, dict)):
            return False
        reason = d_status.get("reason")
        return (d.get("kind") == "Application" and d_status.get("state") == "PENDING"
                and k_status.get("reason") is None and isinstance(reason, dict) and reason.get("code") == 50)

    if not isinstance(drover, dict):
        return drover, False
    pairs = [(krake, drover)]
    if isinstance(krake, dict) and isinstance(krake.get("items"), list) and isinstance(drover.get("items"), list):
        pairs = list(zip(krake["items"], drover["items"]))
    drover = json.loads(json.dumps(drover))
    targets = drover["items"] if len(pairs) > 1 or "items" in drover else [drover]
    found = False
    for (k, _), d in zip(pairs, targets):
        if pending_reason(k, d):
            d["status"]["reason"] = None
            found = True
    return drover, found


def problem_core(body):
    """A problem document's type, title and status (the detail's words may differ)."""
    return {key: body.get(key) for key in ("type", "title", "status", "instance")}


class Target:
    def __init__(self, url, headers):
        self.url = url
        self.session = ClientSession(headers=headers, timeout=ClientTimeout(total=20))
        self.modified = {}

    async def send(self, method, path, body=None, raw=None):
        kwargs = {}
        if raw is not None:
            kwargs["data"] = raw
        elif body is not None:
            kwargs["data"] = json.dumps(body)
        async with self.session.request(method, self.url + path, **kwargs) as response:
            text = await response.text()
            try:
                parsed = json.loads(text) if text else None
            except ValueError:
                parsed = text
            return response.status, response.headers.get("Content-Type", ""), parsed

    async def first_event(self, path, then):
        """Opens a watch, runs `then`, returns the first event line."""
        async with self.session.get(self.url + path + "?watch&heartbeat=0", timeout=ClientTimeout(sock_read=10)) as response:
            await then()
            line = await asyncio.wait_for(response.content.readline(), 10)
            return response.status, response.headers.get("Content-Type", ""), json.loads(line)


def metric(name, namespace=None, maximum=1.0, finalizers=None):
    kind = "Metric" if namespace else "GlobalMetric"
    return {
        "api": "core",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, "finalizers": finalizers or [], "labels": {"a": "b"}},
        "spec": {"min": 0, "max": maximum, "provider": {"name": "prov", "metric": "load"}},
    }


def steps():
    """(name, method, path, body or a function of the target, raw, kind of comparison)."""
    gm, ns = "/core/globalmetrics", "/core/namespaces/ns1/metrics"
    role = {"api": "core", "kind": "Role", "metadata": {"name": "r1"},
            "rules": [{"api": "core", "resources": ["metrics"], "namespaces": ["ns1"], "verbs": ["get", "list_all"]}]}
    binding = {"api": "core", "kind": "RoleBinding", "metadata": {"name": "b1"}, "users": ["ann"], "roles": ["r1"]}
    static = {"api": "core", "kind": "GlobalMetricsProvider", "metadata": {"name": "prov"},
              "spec": {"type": "static", "static": {"metrics": {"load": 0.5}}}}
    prometheus = {"api": "core", "kind": "MetricsProvider", "metadata": {"name": "prom"},
                  "spec": {"type": "prometheus", "prometheus": {"url": "http://127.0.0.1:9/"}}}
    clusters = "/kubernetes/namespaces/ns1/clusters"
    kubeconfig = {
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
        "users": [{"name": "u", "user": {"token": "a-token-0123456789"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
    }
    apps = "/kubernetes/namespaces/ns1/applications"
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "app1"},
                  "spec": {"replicas": 1, "template": {"spec": {"containers": [
                      {"name": "main", "image": "exec", "command": ["sleep", "600"]}]}}}}
    app = {"api": "kubernetes", "kind": "Application", "metadata": {"name": "app1"},
           "spec": {"manifest": [deployment],
                    "constraints": {"cluster": {"labels": [], "custom_resources": [], "metrics": []}, "migration": True}}}
    infra = "/infrastructure"
    im = {"api": "infrastructure", "kind": "GlobalInfrastructureProvider", "metadata": {"name": "im1"},
          "spec": {"type": "im", "im": {"url": "http://127.0.0.1:9/im", "token": "an-im-token"}}}
    im_ns = {"api": "infrastructure", "kind": "InfrastructureProvider", "metadata": {"name": "im2"},
             "spec": {"type": "im", "im": {"url": "http://127.0.0.1:9/im", "username": "u", "password": "p"}}}
    no_auth = {"metadata": {"name": "im3"}, "spec": {"type": "im", "im": {"url": "http://127.0.0.1:9/im"}}}

    def cloud(name, kind="GlobalCloud", provider_namespaced=False):
        return {"api": "infrastructure", "kind": kind, "metadata": {"name": name},
                "spec": {"type": "openstack", "openstack": {
                    "url": "http://127.0.0.1:9/v3",
                    "auth": {"type": "password", "password": {"version": "3",
                             "user": {"username": "admin", "password": "s3cret", "domain_name": "Default"},
                             "project": {"name": "p", "domain_id": "default"}}},
                    "metrics": [],
                    "infrastructure_provider": {"name": "im1", "namespaced": provider_namespaced}}}}
    two_users = dict(kubeconfig, users=kubeconfig["users"] + [{"name": "v", "user": {"token": "t"}}])
    kafka = {"api": "core", "kind": "GlobalMetricsProvider", "metadata": {"name": "kafka"},
             "spec": {"type": "kafka", "kafka": {"url": "http://127.0.0.1:9/", "table": "t", "comparison_column": "c", "value_column": "v"}}}

    def read_then(path, change):
        async def body(target):
            _, _, current = await target.send("GET", path)
            change(current)
            return current
        return body

    def stale(path):
        async def body(target):
            _, _, current = await target.send("GET", path)
            current["spec"]["max"] = 7.0
            await target.send("PUT", path, body=current)
            current["spec"]["max"] = 8.0  # still carries the modified read before the PUT above
            return current
        return body

    return [
        ("version", "GET", "/", None, None),
        ("me", "GET", "/me", None, None),
        ("create a global metric", "POST", gm, metric("m1"), None),
        ("create it again", "POST", gm, metric("m1"), None),
        ("read it", "GET", gm + "/m1", None, None),
        ("read a missing one", "GET", gm + "/nope", None, None),
        ("list", "GET", gm, None, None),
        ("update with no change", "PUT", gm + "/m1", read_then(gm + "/m1", lambda o: None), None),
        ("update the spec", "PUT", gm + "/m1", read_then(gm + "/m1", lambda o: o["spec"].update(max=2.0)), None),
        ("update the name", "PUT", gm + "/m1", read_then(gm + "/m1", lambda o: o["metadata"].update(name="m2")), None),
        ("update the labels, uid ignored", "PUT", gm + "/m1",
         read_then(gm + "/m1", lambda o: o["metadata"].update(labels={"c": "d"}, uid="other")), None),
        ("update with a stale modified", "PUT", gm + "/m1", stale(gm + "/m1"), None),
        ("update a missing one", "PUT", gm + "/nope", metric("nope"), None),
        ("a body that is not JSON", "POST", gm, None, b"not json"),
        ("a body that is a list", "POST", gm, [1], None),
        ("a name Krake refuses", "POST", gm, metric("-bad"), None),
        ("a label Krake refuses", "POST", gm, dict(metric("m3"), metadata={"name": "m3", "labels": {"-x": "y"}}), None),
        ("the wrong kind", "POST", gm, dict(metric("m4"), kind="Role"), None),
        ("no spec", "POST", gm, {"metadata": {"name": "m5"}}, None),
        ("create a metric in ns1", "POST", ns, metric("n1", "ns1"), None),
        ("the body's namespace is the path's", "POST", ns, metric("n2", "elsewhere"), None),
        ("read in ns1", "GET", ns + "/n1", None, None),
        ("read a missing one in ns1", "GET", ns + "/nope", None, None),
        ("list ns1", "GET", ns, None, None),
        ("list every namespace", "GET", "/core/metrics", None, None),
        ("create a static provider", "POST", "/core/globalmetricsproviders", static, None),
        ("create a prometheus provider", "POST", "/core/namespaces/ns1/metricsproviders", prometheus, None),
        ("kafka provider", "POST", "/core/globalmetricsproviders", kafka, None),
        ("create a role", "POST", "/core/roles", role, None),
        ("create a role binding", "POST", "/core/rolebindings", binding, None),
        ("list role bindings", "GET", "/core/rolebindings", None, None),
        ("create a held metric", "POST", gm, metric("held", finalizers=["hold"]), None),
        ("delete it", "DELETE", gm + "/held", None, None),
        ("delete it again", "DELETE", gm + "/held", None, None),
        ("read after delete", "GET", gm + "/held", None, None),
        ("delete a missing one", "DELETE", gm + "/nope", None, None),
        ("delete a namespaced one", "DELETE", ns + "/n1", None, None),
        ("an unknown route", "GET", "/core/nothing", None, None),
        ("a wrong method", "PATCH", gm, None, None),
        ("a namespaced kind without namespace", "POST", "/core/metrics", metric("x"), None),
        ("a cluster without constraints", "POST", clusters, {"metadata": {"name": "c1"}, "spec": {"kubeconfig": kubeconfig}}, None),
        ("a cluster's kubeconfig with two users", "POST", clusters,
         {"metadata": {"name": "c2"}, "spec": {"kubeconfig": two_users, "constraints": {"cloud": {"labels": [], "metrics": []}}}}, None),
        ("a cluster with neither kubeconfig nor tosca", "POST", clusters,
         {"metadata": {"name": "c3"}, "spec": {"constraints": {"cloud": {"labels": [], "metrics": []}}}}, None),
        ("read a missing cluster", "GET", clusters + "/nope", None, None),
        ("list the clusters of ns1", "GET", clusters, None, None),
        ("list every namespace's clusters", "GET", "/kubernetes/clusters", None, None),
        ("delete a missing cluster", "DELETE", clusters + "/nope", None, None),
        ("create an application", "POST", apps, app, None),
        ("create the application again", "POST", apps, app, None),
        ("read the application", "GET", apps + "/app1", None, None),
        ("list the applications of ns1", "GET", apps, None, None),
        ("list every namespace's applications", "GET", "/kubernetes/applications", None, None),
        ("update the application's manifest", "PUT", apps + "/app1",
         read_then(apps + "/app1", lambda o: o["spec"]["manifest"][0]["spec"].update(replicas=2)), None),
        ("write the application's status", "PUT", apps + "/app1/status", read_then(apps + "/app1", lambda o: None), None),
        ("retry an application that needs no retry", "PUT", apps + "/app1/retry", None, None),
        ("an application without constraints", "POST", apps,
         {"metadata": {"name": "app2"}, "spec": {"manifest": [deployment]}}, None),
        ("an application with neither manifest nor tosca", "POST", apps,
         {"metadata": {"name": "app3"}, "spec": {"constraints": app["spec"]["constraints"]}}, None),
        ("read a missing application", "GET", apps + "/nope", None, None),
        ("delete the application", "DELETE", apps + "/app1", None, None),
        ("read the application after delete", "GET", apps + "/app1", None, None),
        ("create a global infrastructure provider", "POST", infra + "/globalinfrastructureproviders", im, None),
        ("create it once more", "POST", infra + "/globalinfrastructureproviders", im, None),
        ("a provider without credentials", "POST", infra + "/globalinfrastructureproviders", no_auth, None),
        ("read the provider", "GET", infra + "/globalinfrastructureproviders/im1", None, None),
        ("update the provider's url, its token as read", "PUT", infra + "/globalinfrastructureproviders/im1",
         read_then(infra + "/globalinfrastructureproviders/im1",
                   lambda o: o["spec"]["im"].update(url="http://127.0.0.1:9/im2")), None),
        ("create a provider in ns1", "POST", infra + "/namespaces/ns1/infrastructureproviders", im_ns, None),
        ("list every namespace's providers", "GET", infra + "/infrastructureproviders", None, None),
        ("create a global cloud", "POST", infra + "/globalclouds", cloud("os1"), None),
        ("a global cloud naming a namespaced provider", "POST", infra + "/globalclouds", cloud("os2", provider_namespaced=True), None),
        ("create a cloud in ns1", "POST", infra + "/namespaces/ns1/clouds", cloud("os3", "Cloud", True), None),
        ("read the cloud in ns1", "GET", infra + "/namespaces/ns1/clouds/os3", None, None),
        ("list the global clouds", "GET", infra + "/globalclouds", None, None),
        ("write a global cloud's status", "PUT", infra + "/globalclouds/os1/status", read_then(infra + "/globalclouds/os1", lambda o: None), None),
        ("delete the cloud in ns1", "DELETE", infra + "/namespaces/ns1/clouds/os3", None, None),
    ]


def compare(name, krake, drover):
    k_status, k_type, k_body = krake
    d_status, d_type, d_body = drover
    d_body, scheduled = set_scheduler_reason_aside(k_body, d_body)
    if scheduled:
        REASONS_SET_ASIDE.append(name)
    differences = []
    if k_status != d_status:
        differences.append(f"status {k_status} / {d_status}")
    if k_type.split(";")[0] != d_type.split(";")[0]:
        differences.append(f"content type {k_type} / {d_type}")
    if isinstance(k_body, dict) and "instance" in k_body and isinstance(d_body, dict):
        if problem_core(k_body) != problem_core(d_body):
            differences.append(f"problem {problem_core(k_body)} / {problem_core(d_body)}")
        titled = k_body.get("title") is not None
        if titled and k_status != 422 and k_body.get("detail") != d_body.get("detail"):
            differences.append(f"detail {k_body.get('detail')!r} / {d_body.get('detail')!r}")
    elif normalise(k_body) != normalise(d_body):
        differences.append(f"body {json.dumps(normalise(k_body))} / {json.dumps(normalise(d_body))}")
    if not differences:
        print(f"same: {name}", flush=True)
        return True
    if name in ALLOWED:
        print(f"differs as documented: {name} ({'; '.join(differences)}): {ALLOWED[name]}", flush=True)
        return True
    print(f"DIFFERENT: {name}: {'; '.join(differences)}", flush=True)
    return False


async def main():
    krake = Target(KRAKE, {})
    drover = Target(DROVER, {"Authorization": TOKEN})
    unexplained = 0
    try:
        for name, method, path, body, raw in steps():
            answers = []
            for target in (krake, drover):
                sent = await body(target) if callable(body) else body
                answers.append(await target.send(method, path, body=sent, raw=raw))
            if not compare(name, *answers):
                unexplained += 1
        # A watch's first event, for an object made after it started.
        answers = []
        for target in (krake, drover):
            async def make(target=target):
                await target.send("POST", "/core/roles", body={"metadata": {"name": "watched"}, "rules": []})
            answers.append(await target.first_event("/core/roles", make))
        if not compare("a watch's ADDED event", *answers):
            unexplained += 1
    finally:
        await krake.session.close()
        await drover.session.close()
    if REASONS_SET_ASIDE:
        print(f"differs as documented: status.reason in {', '.join(REASONS_SET_ASIDE)}: {SCHEDULER_REASON}")
    if unexplained:
        print(f"{unexplained} unexplained differences")
        sys.exit(1)
    print("no unexplained difference")


if __name__ == "__main__":
    asyncio.run(main())
