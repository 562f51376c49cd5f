"""A redis-server that speaks only TLS and knows one ACL user, with certificates made at
test time (the `cryptography` package), so no key ever sits in the repository."""

from __future__ import annotations

from pathlib import Path

import redis

from tests.polling import wait_until
from tests.redis_ha import START_TIMEOUT_S, _Node, _server_args, free_ports, redis_binary


def make_certificates(folder: Path) -> dict[str, Path]:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, all made now
    (the `cryptography` package), so no key ever sits in the repository."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])

    def write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> Path:
        path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
        return path

    def write_cert(cert: x509.Certificate, path: Path) -> Path:
        path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return path

    def issue(subject: str, key: ec.EllipticCurvePrivateKey, ca_key: ec.EllipticCurvePrivateKey, *,
              ca: bool = False, ip: str | None = None) -> x509.Certificate:
        builder = (x509.CertificateBuilder().subject_name(name(subject)).issuer_name(name("citebot test CA"))
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if ip:
            builder = builder.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(ip))]), critical=False)
        return builder.sign(ca_key, hashes.SHA256())

    ca_key, server_key, client_key = (ec.generate_private_key(ec.SECP256R1()) for _ in range(3))
    return {
        "ca": write_cert(issue("citebot test CA", ca_key, ca_key, ca=True), folder / "ca.crt"),
        "server_cert": write_cert(issue("127.0.0.1", server_key, ca_key, ip="127.0.0.1"), folder / "server.crt"),
        "server_key": write_key(server_key, folder / "server.key"),
        "client_cert": write_cert(issue("citebot", client_key, ca_key), folder / "client.crt"),
        "client_key": write_key(client_key, folder / "client.key"),
    }


class TlsRedis:
    """A redis-server that speaks only TLS, asks clients for a certificate
    (`client_certs`), and knows one ACL user besides a disabled default."""

    def __init__(self, workdir: Path, *, user: str, password: str, client_certs: bool = True):
        self.certs = make_certificates(workdir / "certs")
        (self.port,) = free_ports(1)
        self.user, self.password = user, password
        # ACL users go in a config file: on the command line each "--user" is one token.
        conf = workdir / "acl.conf"
        conf.parent.mkdir(parents=True, exist_ok=True)
        conf.write_text(f"user default off\nuser {user} on >{password} ~* &* +@all\n")
        self.node = _Node(workdir / "server", self.port, [redis_binary(), str(conf), *_server_args(
            0, "--tls-port", str(self.port),
            "--tls-cert-file", str(self.certs["server_cert"]), "--tls-key-file", str(self.certs["server_key"]),
            "--tls-ca-cert-file", str(self.certs["ca"]), "--tls-auth-clients", "yes" if client_certs else "no",
        )[1:]])

    def url(self, db: int = 0) -> str:
        return f"rediss://{self.user}:{self.password}@127.0.0.1:{self.port}/{db}"

    def start(self) -> TlsRedis:
        self.node.start()
        wait_until(self._answers, START_TIMEOUT_S, "the TLS redis-server to answer")
        return self

    def _answers(self) -> bool:
        if self.node.proc is not None and self.node.proc.poll() is not None:
            raise RuntimeError(f"redis exited:\n{(self.node.workdir / 'redis.log').read_text()}")
        try:
            with redis.Redis(port=self.port, ssl=True, ssl_ca_certs=str(self.certs["ca"]),
                             ssl_certfile=str(self.certs["client_cert"]), ssl_keyfile=str(self.certs["client_key"]),
                             username=self.user, password=self.password, socket_timeout=1) as c:
                return bool(c.ping())
        except (redis.RedisError, OSError):
            return False

    def stop(self) -> None:
        self.node.stop()
