"""Which Redis to talk to, and how: one server, a Sentinel-managed master, or a cluster.

A `RedisTarget` is what a deployment's settings say (CITEBOT_REDIS_URL, CITEBOT_REDIS_MODE and
the TLS files); bot.store.connection opens clients from it. Kept apart from the connection
so that the mode can be known without connecting: the queue's shard count depends on it
(bot.store.keys), and the web process and every worker must agree on that count.

URL forms:

    redis://[user:password@]host:port[/db]            one server (rediss:// for TLS)
    redis://h1:7000,h2:7001,h3:7002                  a cluster: several nodes to learn it from
    redis+sentinel://[user:password@]s1:26379,s2:26379/mymaster[/db]
                                                     the master Sentinel names (rediss+sentinel:// for TLS)
    unix:///path/to/redis.sock[?db=0]                one server over a socket

A managed cluster usually gives one configuration endpoint: CITEBOT_REDIS_MODE=cluster says it
is one. `auto` (the default) decides by the URL alone: several hosts are a cluster, a
+sentinel scheme is Sentinel, anything else one server.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import unquote, urlsplit

from citebot_core.errors import Permanent

DEFAULT_PORT = 6379
DEFAULT_SENTINEL_PORT = 26379
SCHEMES = ("redis", "rediss", "unix", "redis+sentinel", "rediss+sentinel")


class RedisMode(StrEnum):
    AUTO = "auto"
    SINGLE = "single"
    SENTINEL = "sentinel"
    CLUSTER = "cluster"


class BadRedisUrl(Permanent, ValueError):
    """The URL cannot name a Redis: the message says why, never with the password."""


@dataclass(frozen=True)
class RedisTarget:
    url: str
    mode: RedisMode = RedisMode.AUTO
    ca_file: str | None = None  # CA bundle the server's certificate is checked against
    cert_file: str | None = None  # client certificate, for servers that ask for one
    key_file: str | None = None

    @property
    def resolved_mode(self) -> RedisMode:
        """The mode `auto` stands for with this URL."""
        if self.mode is not RedisMode.AUTO:
            return self.mode
        scheme = urlsplit(self.url).scheme
        if scheme.endswith("+sentinel"):
            return RedisMode.SENTINEL
        return RedisMode.CLUSTER if len(self.nodes) > 1 else RedisMode.SINGLE

    @property
    def tls(self) -> bool:
        return urlsplit(self.url).scheme.startswith("rediss")

    @property
    def nodes(self) -> list[tuple[str, int]]:
        """host, port of each node the URL names (Sentinels for a +sentinel URL)."""
        parts = urlsplit(self.url)
        if parts.scheme == "unix":
            return []
        default = DEFAULT_SENTINEL_PORT if parts.scheme.endswith("+sentinel") else DEFAULT_PORT
        netloc = parts.netloc.rpartition("@")[2]
        return [_host_port(item, default) for item in netloc.split(",") if item]

    @property
    def username(self) -> str | None:
        user = urlsplit(self.url).netloc.rpartition("@")[0].partition(":")[0]
        return unquote(user) or None

    @property
    def password(self) -> str | None:
        userinfo = urlsplit(self.url).netloc.rpartition("@")[0]
        if ":" not in userinfo:
            return None
        return unquote(userinfo.partition(":")[2]) or None

    @property
    def sentinel_master(self) -> tuple[str, int]:
        """The master's name and the db, from `/mymaster[/db]`."""
        segments = [s for s in urlsplit(self.url).path.split("/") if s]
        if not segments:
            raise BadRedisUrl("a redis+sentinel:// URL names the master: redis+sentinel://host:26379/mymaster")
        db = segments[1] if len(segments) > 1 else "0"
        if not db.isdigit():
            raise BadRedisUrl(f"the database after the master's name must be a number, not {db!r}")
        return unquote(segments[0]), int(db)

    @property
    def db(self) -> int:
        parts = urlsplit(self.url)
        if parts.scheme.endswith("+sentinel"):
            return self.sentinel_master[1]
        path = parts.path.strip("/")
        return int(path) if path.isdigit() else 0

    def location(self) -> str:
        """For messages: where, in which mode, never the password."""
        mode = self.resolved_mode
        parts = urlsplit(self.url)
        if parts.scheme == "unix":
            return f"unix:{parts.path}"
        hosts = ",".join(f"{h}:{p}" for h, p in self.nodes) or "localhost:6379"
        if mode is RedisMode.CLUSTER:
            return f"cluster {hosts}"
        if mode is RedisMode.SENTINEL:
            name, db = self.sentinel_master
            return f"master {name} of sentinels {hosts}/{db}"
        return f"{hosts}/{self.db}"

    def check(self) -> RedisTarget:
        """Raises BadRedisUrl when the URL cannot work in its mode."""
        parts = urlsplit(self.url)
        if parts.scheme not in SCHEMES:
            raise BadRedisUrl("must be a redis://, rediss://, redis+sentinel://, rediss+sentinel:// or unix:// URL")
        try:
            nodes = self.nodes
        except ValueError as exc:
            raise BadRedisUrl(str(exc)) from None
        mode = self.resolved_mode
        if mode is RedisMode.SENTINEL:
            self.sentinel_master  # noqa: B018 - raises when the master is not named
        elif mode is RedisMode.CLUSTER:
            if parts.scheme == "unix" or not nodes:
                raise BadRedisUrl("a cluster is reached over TCP: redis://host:port[,host:port]")
            if self.db != 0:
                raise BadRedisUrl("a cluster has only database 0")
        elif len(nodes) > 1:
            raise BadRedisUrl(f"names {len(nodes)} hosts, but CITEBOT_REDIS_MODE is {self.mode}")
        if (self.cert_file is None) != (self.key_file is None):
            raise BadRedisUrl("a client certificate needs both CITEBOT_REDIS_CERT_FILE and CITEBOT_REDIS_KEY_FILE")
        return self


def as_target(target: RedisTarget | str) -> RedisTarget:
    return target if isinstance(target, RedisTarget) else RedisTarget(target)


def _host_port(item: str, default: int) -> tuple[str, int]:
    if item.startswith("["):  # [::1]:7000
        host, _, rest = item[1:].partition("]")
        port = rest.lstrip(":")
    else:
        host, _, port = item.rpartition(":") if ":" in item else (item, "", "")
    if port and not port.isdigit():
        raise ValueError(f"the port of {item!r} is not a number")
    return host or "localhost", int(port) if port else default


__all__ = ["BadRedisUrl", "RedisMode", "RedisTarget", "as_target"]
