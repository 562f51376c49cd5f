#!/usr/bin/env python
"""Health check of a citebot container: exit 0 when healthy, 1 when not.

    citebot-healthcheck web [--port 3000]   GET /healthz of `citebot serve` answers 200
    citebot-healthcheck worker              this host's worker wrote a heartbeat to Redis
    citebot-healthcheck auto                the role (and port) read from the running
                                            citebot process: the image's HEALTHCHECK,
                                            which must serve every role of one image

A worker has no HTTP endpoint of its own; what shows that it still works is its
heartbeat key in Redis, renewed every few seconds by the loop that also renews
its job leases. When Redis itself cannot be reached, the worker is reported
healthy: restarting workers does not bring Redis back, and a liveness probe
that fails on a shared dependency restarts every pod at once.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import urllib.error
import urllib.request
from pathlib import Path

HEALTHY, UNHEALTHY = 0, 1
DEFAULT_PORT = 3000
TIMEOUT_S = 3.0


def check_web(port: int, host: str = "127.0.0.1") -> tuple[int, str]:
    url = f"http://{host}:{port}/healthz"
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            return HEALTHY, f"{url}: {response.status}"
    except urllib.error.HTTPError as exc:  # 503 with the reason in its JSON body
        return UNHEALTHY, f"{url}: {exc.code} {exc.read(500).decode('utf-8', 'replace')}"
    except OSError as exc:
        return UNHEALTHY, f"{url}: {exc}"


def check_worker() -> tuple[int, str]:
    import redis

    from bot.config import ConfigError, load_settings
    from bot.store.connection import connect_blocking
    from bot.store.keys import HEARTBEAT_PREFIX

    try:
        settings = load_settings()
    except ConfigError as exc:
        return UNHEALTHY, f"configuration error: {exc}"
    # Worker ids start with the host name (the container's, the pod's name in Kubernetes).
    pattern = f"{HEARTBEAT_PREFIX}{socket.gethostname()}-*"
    client = connect_blocking(settings.redis, timeout=TIMEOUT_S)
    try:
        keys = [key for key in client.scan_iter(match=pattern, count=1000)]
    except (redis.RedisError, OSError) as exc:
        return HEALTHY, f"Redis unreachable ({type(exc).__name__}); not the worker's fault"
    finally:
        client.close()
    if not keys:
        return UNHEALTHY, f"no heartbeat {pattern} in Redis"
    first = keys[0]
    return HEALTHY, f"heartbeat {first.decode() if isinstance(first, bytes) else first}"


def role_from_cmdline(argv: list[str]) -> tuple[str, int] | None:
    """('web', port) for `citebot serve [--port N]`, ('worker', 0) for `citebot worker`."""
    if not any(Path(arg).name == "citebot" for arg in argv):
        return None
    if "serve" in argv:
        port = DEFAULT_PORT
        for i, arg in enumerate(argv):
            if arg == "--port" and i + 1 < len(argv):
                port = int(argv[i + 1])
            elif arg.startswith("--port="):
                port = int(arg.split("=", 1)[1])
        return "web", port
    if "worker" in argv:
        return "worker", 0
    return None


def find_role(proc: Path = Path("/proc")) -> tuple[str, int] | None:
    for entry in sorted(proc.glob("[0-9]*"), key=lambda p: int(p.name)):
        try:
            argv = (entry / "cmdline").read_bytes().decode("utf-8", "replace").split("\0")
        except OSError:  # the process ended while we looked
            continue
        role = role_from_cmdline([arg for arg in argv if arg])
        if role:
            return role
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="citebot-healthcheck", description=__doc__.splitlines()[0])
    parser.add_argument("role", choices=("web", "worker", "auto"))
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    args = parser.parse_args(argv)
    role, port = args.role, args.port
    if role == "auto":
        found = find_role()
        if found is None:  # a one-shot command (index, ask, a shell): nothing long-lived to check
            print("no citebot serve or worker process here")
            return HEALTHY
        role, port = found[0], found[1] or port
    status, detail = check_web(port) if role == "web" else check_worker()
    print(json.dumps({"role": role, "healthy": status == HEALTHY, "detail": detail}))
    return status


if __name__ == "__main__":
    sys.exit(main())
