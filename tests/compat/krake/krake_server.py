"""Krake 1.0.1's own API server on loopback, for tests and benchmarks that compare Drover's
Krake dialect with it. `python -m krake.api` binds 0.0.0.0, so this builds the application
with `create_app` and serves it on 127.0.0.1 instead.

Usage: krake_server.py PORT ETCD_PORT [--rbac]
  Without --rbac every request is the static user `system:admin`, allowed everything (Krake's
  `always-allow`); with it, static authentication is off, anonymous access on, and RBAC decides.
"""
import sys

from aiohttp import web
from krake.api.app import create_app
from krake.data.config import ApiConfiguration


def main():
    port, etcd_port = int(sys.argv[1]), int(sys.argv[2])
    rbac = "--rbac" in sys.argv[3:]
    config = ApiConfiguration.deserialize(
        {
            "port": port,
            "etcd": {"host": "127.0.0.1", "port": etcd_port, "retry_transactions": 1},
            "docs": {
                "problem_base_url": "https://rak-n-rok.readthedocs.io/projects/krake/en/latest/user/problem.html"
            },
            "tls": {"enabled": False, "cert": "", "key": "", "client_ca": ""},
            "authentication": {
                "allow_anonymous": rbac,
                "cors_origin": "*",
                "strategy": {
                    "keystone": {"enabled": False, "endpoint": "http://localhost"},
                    "keycloak": {"enabled": False, "endpoint": "http://localhost", "realm": "krake"},
                    "static": {"enabled": not rbac, "name": "system:admin"},
                },
            },
            "authorization": "RBAC" if rbac else "always-allow",
            "log": {"version": 1, "disable_existing_loggers": False},
        }
    )
    web.run_app(create_app(config), host="127.0.0.1", port=port, print=None)


if __name__ == "__main__":
    main()
