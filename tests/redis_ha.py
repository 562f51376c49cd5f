"""Real Redis Cluster and Sentinel deployments on localhost, for tests and benches.

`RedisClusterServers`: 3 masters, each with one replica (redis-server
--cluster-enabled yes, joined by `redis-cli --cluster create`); a few seconds
to start. `SentinelSet`: one master, one replica and three Sentinels
(`redis-server --sentinel`, so no separate package is needed). Every port is
free when picked, and a cluster node's bus port (its port + 10000) too, so
runs side by side do not clash. Nothing persists: these test the client's
side of failover, not durability (the fault suite's RedisServer does that).
"""

from __future__ import annotations

import random
import secrets
import shutil
import signal
import socket
import subprocess
from pathlib import Path
from typing import Any

import redis
from redis.cluster import ClusterNode, RedisCluster
from redis.crc import key_slot
from redis.sentinel import Sentinel

from bot.store.redis_target import RedisMode, RedisTarget
from tests.polling import wait_until

START_TIMEOUT_S = 30.0
# How long a master may be unreachable before the others fail it over: short,
# so a failover test takes seconds; long enough that a loaded CI machine does
# not fail a healthy node over.
CLUSTER_NODE_TIMEOUT_MS = 2000
SENTINEL_DOWN_AFTER_MS = 1000


def redis_binary(name: str = "redis-server") -> str:
    path = shutil.which(name)
    if path is None:
        raise FileNotFoundError(f"{name} is not installed (apt-get install redis-server, which brings redis-cli)")
    return path


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(count: int, *, with_bus: bool = False) -> list[int]:
    """`count` ports free now (and, `with_bus`, each port + 10000: a cluster node's bus)."""
    ports: list[int] = []
    while len(ports) < count:
        port = random.randint(20000, 45000)
        if port in ports or (port + 10000) in ports:
            continue
        if _bindable(port) and (not with_bus or _bindable(port + 10000)):
            ports.append(port)
    return ports


class _Node:
    def __init__(self, workdir: Path, port: int, args: list[str]):
        self.workdir, self.port, self.args = workdir, port, args
        self.proc: subprocess.Popen | None = None
        workdir.mkdir(parents=True, exist_ok=True)

    def start(self) -> None:
        with open(self.workdir / "redis.log", "a") as log:
            self.proc = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir)

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_connect_timeout=1, socket_timeout=2, decode_responses=True)

    def answers(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise RuntimeError(f"redis on {self.port} exited:\n{(self.workdir / 'redis.log').read_text()}")
        try:
            with self.client() as c:
                return bool(c.ping())
        except (redis.RedisError, OSError):
            return False

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def pause(self) -> None:
        """SIGSTOP: alive to the kernel, deaf to its master and to clients, until resume()."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # a paused server cannot act on SIGTERM
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _server_args(port: int, *extra: str) -> list[str]:
    # A replica's first sync starts at once, not after the default 5 s wait for more replicas.
    return [redis_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--repl-diskless-sync-delay", "0", *extra]


class RedisClusterServers:
    """A 3-master, 3-replica cluster on free localhost ports."""

    def __init__(self, workdir: Path, *, masters: int = 3, node_timeout_ms: int = CLUSTER_NODE_TIMEOUT_MS):
        self.workdir = workdir
        ports = free_ports(masters * 2, with_bus=True)
        self.nodes = [
            _Node(workdir / str(port), port, _server_args(
                port, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", str(node_timeout_ms),
                # A replica may take over however long its link was down: the
                # tests kill masters on purpose.
                "--cluster-replica-validity-factor", "0",
            ))
            for port in ports
        ]

    @property
    def url(self) -> str:
        """What CITEBOT_REDIS_URL names: every node (a client learns the cluster from any one)."""
        return "redis://" + ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)

    def start(self) -> RedisClusterServers:
        for node in self.nodes:
            node.start()
        for node in self.nodes:
            wait_until(node.answers, START_TIMEOUT_S, f"cluster node {node.port} to answer")
        create = [redis_binary("redis-cli"), "--cluster", "create",
                  *(f"127.0.0.1:{n.port}" for n in self.nodes), "--cluster-replicas", "1", "--cluster-yes"]
        done = subprocess.run(create, capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create failed:\n{done.stdout}\n{done.stderr}")
        wait_until(self.healthy, START_TIMEOUT_S, "the cluster to be ok on every node")
        return self

    def healthy(self) -> bool:
        """Every live node says the cluster is ok, and every slot has a live master."""
        live = [n for n in self.nodes if n.proc is not None and n.proc.poll() is None]
        try:
            for node in live:
                with node.client() as c:
                    if c.cluster("info")["cluster_state"] != "ok":
                        return False
            if len(self.masters()) != len(self.nodes) // 2:
                return False
            # Replicas synced: until then WAIT cannot count them, and a failover has nothing to promote.
            for node in live:
                with node.client() as c:
                    info = c.info("replication")
                    if info["role"] == "slave" and info.get("master_link_status") != "up":
                        return False
            return True
        except (redis.RedisError, OSError):
            return False

    def masters(self) -> list[_Node]:
        """The live nodes that serve slots now."""
        out = []
        for node in self.nodes:
            if node.proc is None or node.proc.poll() is not None:
                continue
            try:
                with node.client() as c:
                    info = c.info("replication")
                    if info["role"] == "master" and _has_slots(c):
                        out.append(node)
            except (redis.RedisError, OSError):
                continue
        return out

    def master_of(self, key: str) -> _Node:
        """The live master that serves `key`'s slot."""
        slot = key_slot(key.encode())
        with self.masters()[0].client() as c:
            for start, end, primary, *_ in c.execute_command("CLUSTER", "SLOTS"):
                if start <= slot <= end:
                    return next(n for n in self.nodes if n.port == int(primary[1]))
        raise LookupError(f"no live master serves slot {slot}")

    def node_id(self, node: _Node) -> str:
        with node.client() as c:
            return str(c.execute_command("CLUSTER", "MYID"))

    def migrate_slot(self, slot: int, to: _Node, *, batch: int = 10) -> int:
        """Moves `slot` to master `to` the way redis-cli --cluster reshard does, key by key
        (IMPORTING / MIGRATING, MIGRATE, then SETSLOT NODE on every master); returns the keys moved.
        Clients see ASK, TRYAGAIN and finally MOVED while it runs."""
        source = next(n for n in self.masters() if self._serves(n, slot))
        if source is to:
            raise ValueError(f"slot {slot} is on {to.port} already")
        source_id, to_id = self.node_id(source), self.node_id(to)
        moved = 0
        with source.client() as src, to.client() as dst:
            dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
            src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", to_id)
            while keys := src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, batch):
                src.execute_command("MIGRATE", "127.0.0.1", to.port, "", 0, 5000, "KEYS", *keys)
                moved += len(keys)
            for node in self.masters():
                with node.client() as c:
                    c.execute_command("CLUSTER", "SETSLOT", slot, "NODE", to_id)
        return moved

    def _serves(self, node: _Node, slot: int) -> bool:
        with node.client() as c:
            for start, end, primary, *_ in c.execute_command("CLUSTER", "SLOTS"):
                if start <= slot <= end:
                    return int(primary[1]) == node.port
        return False

    def flush(self) -> None:
        for node in self.masters():
            with node.client() as c:
                c.flushall()

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def _has_slots(client: redis.Redis) -> bool:
    me = next(line for line in client.execute_command("CLUSTER", "NODES").splitlines() if "myself" in line)
    return len(me.split()) > 8


class SentinelSet:
    """One master, one replica and three Sentinels watching them as `mymaster`."""

    NAME = "mymaster"

    def __init__(self, workdir: Path):
        self.workdir = workdir
        master, replica, *sentinels = free_ports(5)
        self.master = _Node(workdir / "master", master, _server_args(master))
        self.replica = _Node(workdir / "replica", replica, _server_args(replica, "--replicaof", "127.0.0.1", str(master)))
        self.sentinels = []
        # Each Sentinel is told the others' ids and the replica up front:
        # learning them over the master's hello channel takes 2 s per round.
        ids = {port: secrets.token_hex(20) for port in sentinels}
        for port in sentinels:
            conf = workdir / f"sentinel-{port}" / "sentinel.conf"
            conf.parent.mkdir(parents=True, exist_ok=True)
            known = "".join(
                f"sentinel known-sentinel {self.NAME} 127.0.0.1 {other} {ids[other]}\n" for other in sentinels if other != port
            )
            conf.write_text(
                f"port {port}\nbind 127.0.0.1\nsentinel myid {ids[port]}\n"
                f"sentinel monitor {self.NAME} 127.0.0.1 {master} 2\n"
                f"sentinel down-after-milliseconds {self.NAME} {SENTINEL_DOWN_AFTER_MS}\n"
                f"sentinel failover-timeout {self.NAME} 10000\n"
                f"sentinel parallel-syncs {self.NAME} 1\n"
                f"sentinel known-replica {self.NAME} 127.0.0.1 {replica}\n" + known
            )
            self.sentinels.append(_Node(conf.parent, port, [redis_binary(), str(conf), "--sentinel"]))

    def url(self, db: int = 0) -> str:
        return "redis+sentinel://" + ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels) + f"/{self.NAME}/{db}"

    def start(self) -> SentinelSet:
        for node in (self.master, self.replica, *self.sentinels):
            node.start()
        for node in (self.master, self.replica, *self.sentinels):
            wait_until(node.answers, START_TIMEOUT_S, f"redis on {node.port} to answer")
        wait_until(self._replica_synced, START_TIMEOUT_S, "the replica to sync")
        wait_until(self._sentinels_agree, START_TIMEOUT_S, "the sentinels to see each other and the replica")
        return self

    def _replica_synced(self) -> bool:
        with self.replica.client() as c:
            if c.info("replication").get("master_link_status") != "up":
                return False
        # The replica acknowledges writes (what WAIT counts), not only that its link is up.
        with self.master.client() as c:
            c.set("citebot-test:probe", "1")
            acked = c.wait(1, 1000)
            c.delete("citebot-test:probe")
            return acked >= 1

    def _sentinels_agree(self) -> bool:
        for s in self.sentinels:
            with s.client() as c:
                state = c.sentinel_master(self.NAME)
                if int(state.get("num-other-sentinels", 0)) < 2 or int(state.get("num-slaves", 0)) < 1:
                    return False
        return True

    def current_master_port(self) -> int:
        with self.sentinels[0].client() as c:
            _, port = c.sentinel_get_master_addr_by_name(self.NAME)
        return int(port)

    def cut_replica_off(self) -> None:
        """Pauses the replica and drops its link from the master's side: what the master
        writes from now on reaches no replica, and the paused replica cannot reconnect."""
        self.replica.pause()
        with self.node(self.current_master_port()).client() as c:
            c.execute_command("CLIENT", "KILL", "TYPE", "replica")

    def node(self, port: int) -> _Node:
        return next(n for n in (self.master, self.replica) if n.port == port)

    def wait_for_failover(self, old_port: int, timeout: float = 30.0) -> int:
        """Waits until every Sentinel names a master other than `old_port`, which then answers as master."""
        def moved() -> int | None:
            ports = set()
            for s in self.sentinels:
                with s.client() as c:
                    ports.add(int(c.sentinel_get_master_addr_by_name(self.NAME)[1]))
            if len(ports) != 1 or old_port in ports:
                return None
            (port,) = ports
            with self.node(port).client() as c:
                return port if c.info("replication")["role"] == "master" else None
        return wait_until(moved, timeout, "the sentinels to promote the replica")

    def flush(self) -> None:
        with self.node(self.current_master_port()).client() as c:
            c.flushall()
            c.wait(1, 2000)

    def stop(self) -> None:
        for node in (*self.sentinels, self.master, self.replica):
            node.stop()



def sync_client(url: str) -> Any:
    """A blocking client for any CITEBOT_REDIS_URL form, for the harness to look into Redis
    (heartbeats, the queue): a cluster's and a Sentinel master's as well as one server's."""
    target = RedisTarget(url)
    mode = target.resolved_mode
    options: dict[str, Any] = {"socket_connect_timeout": 1, "socket_timeout": 2}
    if mode is RedisMode.CLUSTER:
        return RedisCluster(startup_nodes=[ClusterNode(h, p) for h, p in target.nodes], **options)
    if mode is RedisMode.SENTINEL:
        name, db = target.sentinel_master
        return Sentinel(target.nodes, sentinel_kwargs=options).master_for(name, db=db, **options)
    return redis.Redis.from_url(url, **options)
