"""Container health check for the web process: GET /healthz/ on this container's daphne.

Exit 0 when it answers HTTP 200 (the database is reachable), 1 otherwise. The request carries
the first ``DJANGO_ALLOWED_HOSTS`` entry as its Host header, because Django rejects any other
host; /healthz/ is exempt from the HTTPS redirect, so plain HTTP works.
"""

from __future__ import annotations

import http.client
import json
import os
import sys


def host_header() -> str:
    hosts = [h.strip() for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "").split(",")]
    for host in hosts:
        if host and host != "*":
            return host.lstrip(".")  # ".example.org" allows example.org and its subdomains
    return "localhost"


def main() -> int:
    port = int(os.environ.get("PORT", "8000"))
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=8)
    try:
        connection.request("GET", "/healthz/", headers={"Host": host_header()})
        response = connection.getresponse()
        body = response.read()
    except OSError as exc:
        print(f"healthcheck: no answer on port {port}: {exc}")
        return 1
    finally:
        connection.close()
    try:
        summary = json.loads(body).get("status", "?")
    except ValueError:
        summary = body[:200].decode("utf-8", "replace")
    print(f"healthcheck: HTTP {response.status}, {summary}")
    return 0 if response.status == 200 else 1


if __name__ == "__main__":
    sys.exit(main())
