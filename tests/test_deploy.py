"""deploy/: the compose file and Kubernetes manifests parse and hang together, every
setting has its line in .env.example, the ConfigMap or the Secret, the Dockerfile has
the essentials, and the entrypoint and health check behave (run here, without Docker).
"""

from __future__ import annotations

import http.server
import importlib.util
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import redis
import yaml

from bot.config import Settings
from tests.harness import free_port

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
VENV_BIN = Path(sys.executable).parent

SECRET_VARS = {"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "CITEBOT_LLM_API_KEY", "CITEBOT_EMBED_API_KEY"}
# Read by the image's entrypoint, not by Settings.
ENTRYPOINT_VARS = {"CITEBOT_INDEX_ON_START"}


def setting_vars() -> set[str]:
    """Every environment variable Settings reads: a new setting must show up in deploy/."""
    names = set()
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        assert isinstance(alias, str), f"Settings.{name} has no single env name"
        names.add(alias)
    return names


def test_settings_have_the_secrets_and_the_design_variables():
    names = setting_vars()
    assert names >= SECRET_VARS
    assert {"CITEBOT_REDIS_URL", "CITEBOT_KB_DIR", "CITEBOT_INDEX_DIR", "CITEBOT_LLM", "CITEBOT_CHANNELS_FILE"} <= names


# ---------------------------------------------------------------- .env.example


def env_example_names() -> dict[str, bool]:
    """name -> active (True) or commented out (False), for every `NAME=` line."""
    names = {}
    for line in (DEPLOY / ".env.example").read_text().splitlines():
        match = re.match(r"^(#\s*)?([A-Z][A-Z0-9_]*)=", line)
        if match:
            names[match.group(2)] = match.group(1) is None
    return names


def test_env_example_lists_every_setting():
    names = env_example_names()
    missing = setting_vars() - names.keys()
    assert not missing, f"deploy/.env.example has no line for {sorted(missing)}"
    assert names.keys() >= ENTRYPOINT_VARS


def test_env_example_leaves_secrets_empty_and_loads_as_defaults(tmp_path, monkeypatch):
    text = (DEPLOY / ".env.example").read_text()
    for var in SECRET_VARS:
        assert re.search(rf"^{var}=$", text, re.M), f"{var} must be an empty line to fill in"
    # A copied .env.example, unedited, is a valid configuration (empty means unset).
    for var in setting_vars():
        monkeypatch.delenv(var, raising=False)
    env = tmp_path / ".env"
    shutil.copy(DEPLOY / ".env.example", env)
    settings = Settings(_env_file=env)
    assert settings.slack_bot_token is None and settings.llm == "extractive"


# ---------------------------------------------------------------- compose


def load_compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def test_compose_services():
    compose = load_compose()
    services = compose["services"]
    assert {"redis", "indexer", "web", "worker", "ollama"} <= services.keys()
    for name, service in services.items():
        assert "image" in service or "build" in service, name

    web, worker, indexer = services["web"], services["worker"], services["indexer"]
    assert web["command"][:3] == ["serve", "--port", "3000"]
    assert any(str(p).endswith(":3000") for p in web["ports"])
    assert "citebot-healthcheck" in web["healthcheck"]["test"] and "web" in web["healthcheck"]["test"]
    assert worker["command"][0] == "worker"
    assert worker["deploy"]["replicas"] == 2
    assert "worker" in worker["healthcheck"]["test"]
    assert services["redis"]["healthcheck"]["test"][-2:] == ["redis-cli", "ping"]
    assert indexer["command"][0] == "index" and indexer["restart"] == "no"
    for name in ("web", "worker"):
        deps = services[name]["depends_on"]
        assert deps["redis"]["condition"] == "service_healthy"
        assert deps["indexer"]["condition"] == "service_completed_successfully"

    # The optional model server only comes up with --profile ollama.
    for name, service in services.items():
        assert ("ollama" in service.get("profiles", [])) == name.startswith("ollama"), name

    # One index volume shared by indexer, web and workers; the image is built from the repo root.
    for name in ("indexer", "web", "worker"):
        service = services[name]
        assert "index:/data/index" in service["volumes"]
        assert service["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile"}
        assert (DEPLOY / service["build"]["context"] / service["build"]["dockerfile"]).is_file()
        assert service["environment"]["CITEBOT_INDEX_DIR"] == "/data/index"
        assert service["env_file"][0]["path"] == ".env"
    for service in services.values():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if not source.startswith(("$", ".", "/")):
                assert source in compose["volumes"], f"undeclared volume {source}"
    # The default KB mount is the bundled sample KB, relative to deploy/.
    kb_mount = next(v for v in services["web"]["volumes"] if v.endswith(":/data/kb:ro"))
    default = re.search(r":-([^}]+)}", kb_mount).group(1)
    assert (DEPLOY / default).is_dir()


def test_docker_compose_config_when_available(tmp_path):
    docker = shutil.which("docker")
    if docker is None or subprocess.run([docker, "compose", "version"], capture_output=True).returncode != 0:
        pytest.skip("docker compose is not installed here; the structure is checked by test_compose_services")
    env = DEPLOY / ".env"
    created = not env.exists()
    if created:
        shutil.copy(DEPLOY / ".env.example", env)
    try:
        result = subprocess.run(
            [docker, "compose", "-f", str(DEPLOY / "compose.yaml"), "--profile", "ollama", "config", "--quiet"],
            capture_output=True,
            text=True,
        )
    finally:
        if created:
            env.unlink()
    assert result.returncode == 0, result.stderr


# ---------------------------------------------------------------- Kubernetes


def k8s_docs() -> list[tuple[str, dict]]:
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                docs.append((path.name, doc))
    return docs


def find(kind: str, name: str) -> dict:
    matches = [doc for _, doc in k8s_docs() if doc["kind"] == kind and doc["metadata"]["name"] == name]
    assert len(matches) == 1, f"{kind}/{name}: {len(matches)} found"
    return matches[0]


def test_every_k8s_document_is_a_named_resource():
    docs = k8s_docs()
    assert len(docs) >= 8
    for filename, doc in docs:
        assert doc.get("apiVersion"), filename
        assert doc.get("kind"), filename
        assert doc.get("metadata", {}).get("name"), filename
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert set(kustomization["resources"]) == {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}


def test_kubectl_kustomize_renders_when_available():
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed here; the documents are checked by the other tests")
    result = subprocess.run([kubectl, "kustomize", str(K8S)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    rendered = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    assert len(rendered) == len(k8s_docs())
    for doc in rendered:
        for container in pod_containers(doc):
            if container["name"] != "redis":
                assert container["image"] == "citebot:0.1.0"


def pod_spec(doc: dict) -> dict | None:
    return doc.get("spec", {}).get("template", {}).get("spec")


def pod_containers(doc: dict) -> list[dict]:
    spec = pod_spec(doc) or {}
    return spec.get("initContainers", []) + spec.get("containers", [])


def test_configmap_and_secret_hold_every_setting_once():
    config = find("ConfigMap", "citebot-config")["data"]
    secret = find("Secret", "citebot-secrets")["stringData"]
    assert set(secret) == SECRET_VARS
    assert set(config) == (setting_vars() - SECRET_VARS) | ENTRYPOINT_VARS
    assert all(isinstance(value, str) for value in [*config.values(), *secret.values()])
    # The redis URL names the Service of redis.yaml.
    host = re.match(r"redis://([^:/]+)", config["CITEBOT_REDIS_URL"]).group(1)
    find("Service", host)


def test_the_configmap_defaults_are_valid_settings(monkeypatch, tmp_path):
    config = find("ConfigMap", "citebot-config")["data"]
    for var in setting_vars():
        monkeypatch.delenv(var, raising=False)
    for var, value in config.items():
        monkeypatch.setenv(var, value)
    monkeypatch.setenv("CITEBOT_KB_DIR", str(tmp_path))  # /data/kb exists in the image only
    settings = Settings(_env_file=None)
    assert str(settings.index_dir) == "/data/index"


def test_web_deployment_and_service():
    web = find("Deployment", "citebot-web")
    labels = web["spec"]["template"]["metadata"]["labels"]
    assert web["spec"]["selector"]["matchLabels"].items() <= labels.items()
    spec = pod_spec(web)
    container = next(c for c in spec["containers"] if c["name"] == "web")
    assert container["args"][:3] == ["serve", "--port", "3000"]
    port = next(p for p in container["ports"] if p["name"] == "http")
    assert port["containerPort"] == 3000
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        get = container[probe]["httpGet"]
        assert get["path"] == "/healthz" and get["port"] in ("http", 3000), probe
    annotations = web["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true" and annotations["prometheus.io/port"] == "3000"

    service = find("Service", "citebot-web")
    assert service["spec"]["selector"].items() <= labels.items()
    assert service["spec"]["ports"][0]["targetPort"] in ("http", 3000)


def test_worker_deployment_and_autoscaler():
    worker = find("Deployment", "citebot-worker")
    labels = worker["spec"]["template"]["metadata"]["labels"]
    assert worker["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert "replicas" not in worker["spec"], "the autoscaler owns the replica count"
    container = next(c for c in pod_spec(worker)["containers"] if c["name"] == "worker")
    assert container["args"][0] == "worker"
    assert container["livenessProbe"]["exec"]["command"] == ["citebot-healthcheck", "worker"]
    assert any(p["containerPort"] == 9100 for p in container["ports"])
    assert worker["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"] == "9100"

    hpa = find("HorizontalPodAutoscaler", "citebot-worker")
    assert hpa["apiVersion"] == "autoscaling/v2"
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["apiVersion"], target["kind"], target["name"]) == ("apps/v1", "Deployment", "citebot-worker")
    assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
    # Utilization needs a CPU request on every container of the pod.
    assert all(c["resources"]["requests"]["cpu"] for c in pod_spec(worker)["containers"])


def test_pods_index_first_run_as_non_root_and_read_their_settings():
    for name in ("citebot-web", "citebot-worker"):
        deployment = find("Deployment", name)
        spec = pod_spec(deployment)
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["runAsUser"] == dockerfile_uid()
        assert [c["args"][0] for c in spec.get("initContainers", [])] == ["index"]
        volumes = {v["name"] for v in spec["volumes"]}
        for container in pod_containers(deployment):
            refs = {next(iter(ref)): next(iter(ref.values()))["name"] for ref in container["envFrom"]}
            assert refs == {"configMapRef": "citebot-config", "secretRef": "citebot-secrets"}, name
            mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
            assert mounts["/data/index"] == "index"
            assert set(mounts.values()) <= volumes
            assert container["securityContext"]["allowPrivilegeEscalation"] is False


# ---------------------------------------------------------------- Dockerfile


def dockerfile() -> str:
    return (DEPLOY / "Dockerfile").read_text()


def dockerfile_uid() -> int:
    return int(re.search(r"^ARG CITEBOT_UID=(\d+)$", dockerfile(), re.M).group(1))


def test_dockerfile_essentials():
    text = dockerfile()
    stages = re.findall(r"^FROM\s+(\S+)(?:\s+AS\s+(\S+))?", text, re.M)
    assert [alias for _, alias in stages][-1] == "runtime"
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.11-slim", text, re.M)
    # The final stage installs nothing with apt: compilers stay in the build stage.
    runtime = text[text.index("AS runtime") :]
    assert "apt-get" not in runtime and "gcc" not in runtime
    assert re.search(r"^USER citebot$", runtime, re.M)
    assert not re.search(r"^USER (root|0)\b", runtime, re.M)
    assert "PYTHONDONTWRITEBYTECODE=1" in runtime
    assert re.search(r"^EXPOSE 3000$", runtime, re.M)
    assert re.search(r"^HEALTHCHECK .*\n.*citebot-healthcheck", runtime, re.M)
    assert re.search(r'^ENTRYPOINT \["docker-entrypoint.sh"\]$', runtime, re.M)
    assert not re.search(r"^ADD\s+https?:", text, re.M | re.I)
    # Every file the Dockerfile copies from the context exists and is not excluded by .dockerignore.
    ignored = [line for line in (ROOT / ".dockerignore").read_text().splitlines() if line and not line.startswith("#")]
    copies = re.findall(r"^COPY (?:--chmod=\S+ )?(?!--from)(.+)$", text, re.M)
    sources = [part for line in copies for part in line.split()[:-1]]
    assert {"pyproject.toml", "README.md", "bot", "kb_index", "deploy/healthcheck.py"} <= set(sources)
    for part in sources:
        assert (ROOT / part).exists(), part
        assert not any(Path(part).match(pattern) or part.startswith(pattern + "/") for pattern in ignored), part


def test_dockerignore_keeps_secrets_and_local_state_out():
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".env", "**/.env", ".git", ".venv", ".citebot"} <= ignored


# ---------------------------------------------------------------- entrypoint


def run_entrypoint(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("CITEBOT_", "SLACK_"))}
    environ.update(PATH=f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}", **env)
    return subprocess.run(
        ["sh", str(DEPLOY / "docker-entrypoint.sh"), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=environ,
        timeout=120,
    )


def test_entrypoint_indexes_a_missing_index_then_runs_citebot(tmp_path):
    index = tmp_path / "index"
    result = run_entrypoint(["search", "vacation days carry over", "--json"], tmp_path, CITEBOT_INDEX_DIR=str(index))
    assert result.returncode == 0, result.stderr
    assert "no index yet" in result.stderr
    assert (index / "CURRENT").is_file()
    assert '"entry_id"' in result.stdout
    generation = (index / "CURRENT").read_text()

    # An existing index is left alone by default, and brought up to date with `update`.
    again = run_entrypoint(["search", "vacation"], tmp_path, CITEBOT_INDEX_DIR=str(index))
    assert again.returncode == 0 and "no index yet" not in again.stderr
    assert (index / "CURRENT").read_text() == generation
    update = run_entrypoint(["search", "vacation"], tmp_path, CITEBOT_INDEX_DIR=str(index), CITEBOT_INDEX_ON_START="update")
    assert update.returncode == 0, update.stderr
    assert (index / "CURRENT").read_text() != generation


def test_entrypoint_never_and_other_commands(tmp_path):
    index = tmp_path / "index"
    never = run_entrypoint(["search", "vacation"], tmp_path, CITEBOT_INDEX_DIR=str(index), CITEBOT_INDEX_ON_START="never")
    assert never.returncode != 0 and not index.exists()
    bad = run_entrypoint(["search", "vacation"], tmp_path, CITEBOT_INDEX_ON_START="sometimes")
    assert bad.returncode == 2 and "CITEBOT_INDEX_ON_START" in bad.stderr
    # Anything that is not a citebot command runs as given.
    echo = run_entrypoint(["echo", "hello"], tmp_path, CITEBOT_INDEX_DIR=str(index))
    assert echo.stdout == "hello\n" and not index.exists()


# ---------------------------------------------------------------- health check


def load_healthcheck():
    spec = importlib.util.spec_from_file_location("citebot_healthcheck", DEPLOY / "healthcheck.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_healthcheck(*args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("CITEBOT_", "SLACK_"))}
    environ.update(env)
    return subprocess.run(
        [sys.executable, str(DEPLOY / "healthcheck.py"), *args], capture_output=True, text=True, env=environ, timeout=60
    )


def test_healthcheck_reads_the_role_from_the_command_line():
    role_from_cmdline = load_healthcheck().role_from_cmdline
    assert role_from_cmdline(["/opt/citebot/bin/python", "/opt/citebot/bin/citebot", "serve", "--port", "3001"]) == (
        "web",
        3001,
    )
    assert role_from_cmdline(["python", "/opt/citebot/bin/citebot", "serve", "--port=8080"]) == ("web", 8080)
    assert role_from_cmdline(["python", "/opt/citebot/bin/citebot", "serve"]) == ("web", 3000)
    assert role_from_cmdline(["python", "/opt/citebot/bin/citebot", "worker", "--concurrency", "8"]) == ("worker", 0)
    assert role_from_cmdline(["python", "/opt/citebot/bin/citebot", "index"]) is None
    assert role_from_cmdline(["python", "/usr/local/bin/citebot-healthcheck", "auto"]) is None


class _Healthz(http.server.BaseHTTPRequestHandler):
    status = 200

    def do_GET(self):  # noqa: N802 - the http.server API
        body = b'{"ok": false, "redis": "unavailable"}' if self.status != 200 else b'{"ok": true}'
        self.send_response(self.status if self.path == "/healthz" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def healthz_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Healthz)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


def test_healthcheck_web(healthz_server):
    port = str(healthz_server.server_address[1])
    _Healthz.status = 200
    assert run_healthcheck("web", "--port", port).returncode == 0
    _Healthz.status = 503
    try:
        unhealthy = run_healthcheck("web", "--port", port)
    finally:
        _Healthz.status = 200
    assert unhealthy.returncode == 1 and "503" in unhealthy.stdout
    assert run_healthcheck("web", "--port", str(free_port())).returncode == 1


def test_healthcheck_worker_looks_for_this_hosts_heartbeat(redis_url):
    from bot.store.keys import heartbeat_key

    # A database of its own: other suites flush the shared test database while they run.
    url = re.sub(r"/\d*$", "/12", redis_url)
    ours = heartbeat_key(f"{socket.gethostname()}-1234-deploytest")
    other = heartbeat_key("another-host-1-deploytest")
    with redis.Redis.from_url(url) as client:
        client.delete(ours, other)
        try:
            assert run_healthcheck("worker", CITEBOT_REDIS_URL=url).returncode == 1
            client.set(other, "{}", px=30_000)
            assert run_healthcheck("worker", CITEBOT_REDIS_URL=url).returncode == 1
            client.set(ours, "{}", px=30_000)
            healthy = run_healthcheck("worker", CITEBOT_REDIS_URL=url)
            assert healthy.returncode == 0, healthy.stdout
        finally:
            client.delete(ours, other)


def test_healthcheck_worker_passes_when_redis_is_down():
    result = run_healthcheck("worker", CITEBOT_REDIS_URL=f"redis://127.0.0.1:{free_port()}/0")
    assert result.returncode == 0 and "unreachable" in result.stdout
