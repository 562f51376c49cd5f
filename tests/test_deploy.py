"""deploy/: the compose file and Kubernetes manifests parse and hang together, every
setting has its line in .env.example, the ConfigMap or the Secret, the Dockerfile has
the essentials and builds the wheel from everything pyproject.toml ships, and the
entrypoint and health check behave (run here, without Docker).

The image itself (test_image_builds_and_answers, deploy/smoke.sh) runs only when selected
with `-m image`, so nothing else catches a broken image. When it must be run: a change to
`deploy/`, `pyproject.toml`, a default setting or the answer pipeline (bot/answer/) runs
`python -m pytest -m image -q -s tests/test_deploy.py`, and `-m llm_server`
(tests/test_llm_real_server.py), before the work is called done; the closing note quotes
what they printed (the smoke script's last lines and pytest's closing line).
"""

from __future__ import annotations

import http.server
import importlib
import importlib.util
import os
import posixpath
import re
import shutil
import socket
import subprocess
import sys
import threading
import tomllib
from fnmatch import fnmatchcase
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

SECRET_VARS = {"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "CITEBOT_LLM_API_KEY", "CITEBOT_EMBED_API_KEY",
               "CITEBOT_JUDGE_API_KEY"}
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
    assert "citebot index" in " ".join(indexer["command"]) and indexer["restart"] == "no"
    assert indexer["depends_on"]["redis"]["condition"] == "service_healthy"
    for name in ("web", "worker"):
        deps = services[name]["depends_on"]
        assert deps["redis"]["condition"] == "service_healthy"
        assert deps["indexer"]["condition"] == "service_completed_successfully"

    # The optional model server only comes up with --profile ollama.
    for name, service in services.items():
        assert ("ollama" in service.get("profiles", [])) == name.startswith("ollama"), name

    for name in ("indexer", "web", "worker"):
        service = services[name]
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
    kb_mount = next(v for v in indexer["volumes"] if v.endswith(":/data/kb:ro"))
    default = re.search(r":-([^}]+)}", kb_mount).group(1)
    assert (DEPLOY / default).is_dir()


def test_compose_only_the_indexer_writes_the_shared_index():
    services = load_compose()["services"]
    assert "index:/data/index" in services["indexer"]["volumes"]
    for name in ("web", "worker"):
        service = services[name]
        assert service["volumes"] == ["index:/data/index:ro"], name
        assert service["environment"]["CITEBOT_INDEX_ON_START"] == "never", name
        assert "index" not in service["command"]


def test_compose_redis_has_a_password_a_memory_cap_and_noeviction():
    compose = load_compose()
    redis_service = compose["services"]["redis"]
    script = " ".join(redis_service["command"])
    assert "requirepass" in script and "$$REDIS_PASSWORD" in script
    assert redis_service["environment"]["REDIS_PASSWORD"].startswith("${CITEBOT_REDIS_PASSWORD:?")
    assert "REDISCLI_AUTH" in redis_service["environment"]
    assert "grep -qx PONG" in " ".join(redis_service["healthcheck"]["test"])
    maxmemory = int(re.search(r"--maxmemory (\d+)mb", script).group(1))
    limit = redis_service["deploy"]["resources"]["limits"]["memory"]
    assert limit.endswith("M") and maxmemory < int(limit[:-1])
    assert "--maxmemory-policy noeviction" in script
    url = compose["services"]["web"]["environment"]["CITEBOT_REDIS_URL"]
    assert "redis://:${CITEBOT_REDIS_PASSWORD" in url and "@redis:6379/0" in url


def test_docker_compose_config_when_available(tmp_path):
    docker = shutil.which("docker")
    if docker is None or subprocess.run([docker, "compose", "version"], capture_output=True).returncode != 0:
        pytest.skip("docker compose is not installed here; the structure is checked by test_compose_services")
    env = DEPLOY / ".env"
    created = not env.exists()
    if created:
        text = (DEPLOY / ".env.example").read_text()
        env.write_text(text.replace("\nCITEBOT_REDIS_PASSWORD=\n", "\nCITEBOT_REDIS_PASSWORD=example\n"))
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
#
# The documents `kubectl apply -k deploy/k8s` applies: kustomization.yaml's resources,
# with its images and labels, rendered here without kubectl.


def kustomization() -> dict:
    return yaml.safe_load((K8S / "kustomization.yaml").read_text())


def k8s_docs() -> list[tuple[str, dict]]:
    kust = kustomization()
    images = {image["name"]: f"{image.get('newName', image['name'])}:{image['newTag']}" for image in kust["images"]}
    labels = {k: v for entry in kust.get("labels", []) for k, v in entry["pairs"].items()}
    docs = []
    for filename in kust["resources"]:
        for doc in yaml.safe_load_all((K8S / filename).read_text()):
            if doc is None:
                continue
            doc["metadata"].setdefault("labels", {}).update(labels)
            for container in pod_containers(doc):
                container["image"] = images.get(container["image"], container["image"])
            docs.append((filename, doc))
    return docs


def find(kind: str, name: str) -> dict:
    matches = [doc for _, doc in k8s_docs() if doc["kind"] == kind and doc["metadata"]["name"] == name]
    assert len(matches) == 1, f"{kind}/{name}: {len(matches)} found"
    return matches[0]


def pod_template(doc: dict) -> dict | None:
    spec = doc.get("spec", {})
    if doc["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    return spec.get("template")


def pod_spec(doc: dict) -> dict | None:
    template = pod_template(doc)
    return template["spec"] if template else doc["spec"] if doc["kind"] == "Pod" else None


def pod_containers(doc: dict) -> list[dict]:
    spec = pod_spec(doc) or {}
    return spec.get("initContainers", []) + spec.get("containers", [])


def pod_docs() -> list[dict]:
    return [doc for _, doc in k8s_docs() if pod_spec(doc)]


def citebot_pods() -> list[dict]:
    return [doc for doc in pod_docs() if any(c["image"].startswith("citebot:") for c in pod_containers(doc))]


def mounts(container: dict) -> dict[str, dict]:
    return {m["mountPath"]: m for m in container.get("volumeMounts", [])}


def volume(doc: dict, name: str) -> dict:
    return next(v for v in pod_spec(doc)["volumes"] if v["name"] == name)


def test_every_k8s_document_is_a_named_resource():
    docs = k8s_docs()
    assert len(docs) >= 12
    for filename, doc in docs:
        assert doc.get("apiVersion"), filename
        assert doc.get("kind"), filename
        assert doc.get("metadata", {}).get("name"), filename
        assert doc["metadata"]["labels"]["app.kubernetes.io/part-of"] == "citebot"


def test_kustomization_applies_every_manifest_but_the_examples():
    resources = set(kustomization()["resources"])
    examples = {p.name for p in K8S.glob("*.example.yaml")}
    assert {"secret.example.yaml", "kb-loader.example.yaml"} <= examples
    assert resources == {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"} - examples


def test_the_secret_is_created_by_hand_never_applied():
    assert not [doc for _, doc in k8s_docs() if doc["kind"] == "Secret"], "apply -k would overwrite the Secret"
    text = (K8S / "secret.example.yaml").read_text()
    [example] = [doc for doc in yaml.safe_load_all(text) if doc]
    assert (example["kind"], example["metadata"]["name"]) == ("Secret", "citebot-secrets")
    assert set(example["stringData"]) == SECRET_VARS | {"CITEBOT_REDIS_PASSWORD"}
    assert all(value == "" for value in example["stringData"].values())
    # The command that creates it is there to copy, with every key, each line continued
    # with a backslash up to the last (an inline comment would end the command halfway).
    lines = [line.removeprefix("#").strip() for line in text.splitlines()]
    start = lines.index("kubectl create secret generic citebot-secrets \\")
    command = []
    for line in lines[start + 1 :]:
        command.append(line)
        if not line.endswith("\\"):
            break
    assert all(line.startswith("--from-literal=") for line in command), command
    keys = {line.removeprefix("--from-literal=").split("=")[0] for line in command}
    assert keys == set(example["stringData"])


def test_kubectl_kustomize_renders_when_available():
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed here; the documents are checked by the other tests")
    result = subprocess.run([kubectl, "kustomize", str(K8S)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    rendered = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    assert sorted((d["kind"], d["metadata"]["name"]) for d in rendered) == sorted(
        (d["kind"], d["metadata"]["name"]) for _, d in k8s_docs()
    )
    for doc in rendered:
        for container in pod_containers(doc):
            if container["name"] != "redis":
                assert container["image"] == "citebot:0.1.0"


def test_configmap_holds_every_setting_but_the_secrets_and_the_redis_url():
    config = find("ConfigMap", "citebot-config")["data"]
    # CITEBOT_REDIS_URL carries the password: each pod builds it (see below).
    expected = (setting_vars() - SECRET_VARS - {"CITEBOT_REDIS_URL"}) | ENTRYPOINT_VARS | REDIS_URL_PARTS
    assert set(config) == expected
    assert all(isinstance(value, str) for value in config.values())
    # The Redis address names the Service of redis.yaml.
    host = re.match(r"([^:/]+)", config["CITEBOT_REDIS_ADDRESS"]).group(1)
    find("Service", host)
    # Web and workers read the index the indexer wrote; nobody indexes at start.
    assert config["CITEBOT_INDEX_ON_START"] == "never"


REDIS_URL_PARTS = {"CITEBOT_REDIS_SCHEME", "CITEBOT_REDIS_ADDRESS"}
EXAMPLE_PASSWORD = "0123456789abcdef"


def expand_env(container: dict, config: dict[str, str], secret: dict[str, str]) -> dict[str, str]:
    """The environment Kubernetes gives the container: envFrom, then env in order, `$(VAR)`
    expanded from the variables defined before it (as the kubelet does)."""
    env: dict[str, str] = {}
    for ref in container.get("envFrom", []):
        env.update(config if "configMapRef" in ref else secret)
    for var in container.get("env", []):
        if "value" in var:
            env[var["name"]] = re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m.group(1), m.group(0)), var["value"])
        elif "secretKeyRef" in var["valueFrom"]:
            ref = var["valueFrom"]["secretKeyRef"]
            assert ref["name"] == "citebot-secrets"
            env[var["name"]] = secret[ref["key"]]
        else:
            ref = var["valueFrom"]["configMapKeyRef"]
            assert ref["name"] == "citebot-config"
            env[var["name"]] = config[ref["key"]]
    return env


def test_every_citebot_container_builds_its_redis_url_with_the_password(monkeypatch, tmp_path):
    config = find("ConfigMap", "citebot-config")["data"]
    secret = {var: "" for var in SECRET_VARS} | {"CITEBOT_REDIS_PASSWORD": EXAMPLE_PASSWORD}
    checked = 0
    for doc in citebot_pods():
        for container in pod_spec(doc)["containers"]:
            env = expand_env(container, config, secret)
            url = env["CITEBOT_REDIS_URL"]
            assert url == f"redis://:{EXAMPLE_PASSWORD}@citebot-redis:6379/0", doc["metadata"]["name"]
            # citebot reads that URL as a valid setting, and redis-py takes the password from it.
            for var in setting_vars():
                monkeypatch.delenv(var, raising=False)
            monkeypatch.setenv("CITEBOT_REDIS_URL", url)
            monkeypatch.setenv("CITEBOT_KB_DIR", str(tmp_path))
            assert Settings(_env_file=None).redis_url == url
            kwargs = redis.Redis.from_url(url).connection_pool.connection_kwargs
            assert (kwargs["password"], kwargs["host"], kwargs["port"], kwargs["db"]) == (
                EXAMPLE_PASSWORD, "citebot-redis", 6379, 0
            )
            checked += 1
    assert checked == 4  # web, worker, the indexer Job and its CronJob


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


def test_citebot_pods_run_as_non_root_and_read_their_settings():
    for doc in citebot_pods():
        name = doc["metadata"]["name"]
        spec = pod_spec(doc)
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["securityContext"]["runAsUser"] == dockerfile_uid(), name
        volumes = {v["name"] for v in spec["volumes"]}
        for container in pod_containers(doc):
            assert set(m["name"] for m in container.get("volumeMounts", [])) <= volumes, name
            assert container["securityContext"]["allowPrivilegeEscalation"] is False, name
            assert container["securityContext"]["readOnlyRootFilesystem"] is True, name
        for container in spec["containers"]:
            refs = {next(iter(ref)): next(iter(ref.values()))["name"] for ref in container["envFrom"]}
            assert refs == {"configMapRef": "citebot-config", "secretRef": "citebot-secrets"}, name


# ---------------------------------------------------------------- Kubernetes: the shared index


def runs_citebot_index(container: dict) -> bool:
    words = " ".join([*container.get("command", []), *container.get("args", [])])
    return container.get("args", [None])[0] == "index" or "citebot index" in words


def test_the_shared_index_and_kb_volumes_exist():
    for name in ("citebot-index", "citebot-kb"):
        claim = find("PersistentVolumeClaim", name)
        assert claim["spec"]["accessModes"] == ["ReadWriteMany"], name
        assert claim["spec"]["resources"]["requests"]["storage"]


def test_the_indexer_writes_the_shared_index_from_the_kb_volume():
    config = find("ConfigMap", "citebot-config")["data"]
    job, cron = find("Job", "citebot-index"), find("CronJob", "citebot-index")
    # One pod, run once at install (the Job) and on a schedule (the CronJob).
    assert pod_template(job) == pod_template(cron)
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    assert pod_template(job)["metadata"]["labels"]["app.kubernetes.io/component"] == "indexer"
    for doc in (job, cron):
        [container] = pod_spec(doc)["containers"]
        assert runs_citebot_index(container)
        # It refuses an empty KB rather than index every entry as removed.
        assert 'ls -A "$CITEBOT_KB_DIR"' in container["args"][-1]
        at = mounts(container)
        index, kb = at[config["CITEBOT_INDEX_DIR"]], at[config["CITEBOT_KB_DIR"]]
        assert not index.get("readOnly")
        assert volume(doc, index["name"])["persistentVolumeClaim"]["claimName"] == "citebot-index"
        assert kb.get("readOnly") is True
        assert volume(doc, kb["name"])["persistentVolumeClaim"]["claimName"] == "citebot-kb"


def test_web_and_workers_mount_the_shared_index_read_only_and_never_index():
    for name in ("citebot-web", "citebot-worker"):
        deployment = find("Deployment", name)
        for container in pod_containers(deployment):
            assert not runs_citebot_index(container), f"{name}/{container['name']} indexes"
            index = mounts(container)["/data/index"]
            assert index.get("readOnly") is True, f"{name}/{container['name']}"
            assert "CITEBOT_INDEX_ON_START" not in {e["name"] for e in container.get("env", [])}
        claim = volume(deployment, "index")["persistentVolumeClaim"]
        assert claim == {"claimName": "citebot-index", "readOnly": True}
        # Before the first index exists, the pod waits for it instead of failing.
        [wait] = pod_spec(deployment)["initContainers"]
        assert "/data/index/CURRENT" in " ".join(wait["args"])


def test_nobody_indexes_into_scratch_space():
    for doc in pod_docs():
        for container in pod_containers(doc):
            index = mounts(container).get("/data/index")
            if index is not None:
                assert "persistentVolumeClaim" in volume(doc, index["name"]), doc["metadata"]["name"]
            if runs_citebot_index(container):
                assert doc["kind"] in ("Job", "CronJob"), doc["metadata"]["name"]


# ---------------------------------------------------------------- Kubernetes: Redis


def memory_bytes(quantity: str) -> int:
    number, unit = re.fullmatch(r"(\d+)(Ki|Mi|Gi|mb|gb)?", quantity).groups()
    return int(number) * {None: 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "mb": 2**20, "gb": 2**30}[unit]


def test_redis_has_a_password_from_the_secret_a_memory_cap_and_noeviction():
    [container] = pod_spec(find("StatefulSet", "citebot-redis"))["containers"]
    script = " ".join(container.get("command", []) + container.get("args", []))
    env = {var["name"]: var for var in container["env"]}
    assert env["REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": "citebot-secrets", "key": "CITEBOT_REDIS_PASSWORD"}
    assert "requirepass" in script and "$REDIS_PASSWORD" in script
    # Not on the command line, where `ps` shows it.
    assert "--requirepass" not in script
    maxmemory = memory_bytes(re.search(r"--maxmemory (\S+)", script).group(1))
    limit = memory_bytes(container["resources"]["limits"]["memory"])
    assert maxmemory <= 0.8 * limit, "room for the fork of an append-only rewrite"
    assert "--maxmemory-policy noeviction" in script
    assert "--appendonly yes" in script
    # The probe authenticates (REDISCLI_AUTH) and wants the PONG: redis-cli exits 0 on NOAUTH.
    assert env["REDISCLI_AUTH"]["valueFrom"]["secretKeyRef"]["key"] == "CITEBOT_REDIS_PASSWORD"
    assert "grep -qx PONG" in " ".join(container["readinessProbe"]["exec"]["command"])


def selects(selector: dict, labels: dict) -> bool:
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    for expr in selector.get("matchExpressions", []):
        value = labels.get(expr["key"])
        if expr["operator"] == "In" and value not in expr["values"]:
            return False
    return True


def test_only_citebot_pods_reach_redis():
    policies = [doc for _, doc in k8s_docs() if doc["kind"] == "NetworkPolicy"]
    redis_labels = pod_template(find("StatefulSet", "citebot-redis"))["metadata"]["labels"]
    [policy] = [p for p in policies if selects(p["spec"]["podSelector"], redis_labels)]
    assert {"Ingress", "Egress"} <= set(policy["spec"]["policyTypes"])
    assert policy["spec"]["egress"] == []
    [rule] = policy["spec"]["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": 6379}]
    assert all(set(peer) == {"podSelector"} for peer in rule["from"]), "pods of this namespace only"
    allowed = {doc["metadata"]["name"] for doc in pod_docs() if any(
        selects(peer["podSelector"], pod_template(doc)["metadata"]["labels"]) for peer in rule["from"]
    )}
    assert allowed == {"citebot-web", "citebot-worker", "citebot-index"}
    # And each citebot pod takes connections only on the port it serves.
    for doc in citebot_pods():
        labels = pod_template(doc)["metadata"]["labels"]
        [own] = [p for p in policies if selects(p["spec"]["podSelector"], labels)]
        served = {port["containerPort"] for c in pod_spec(doc)["containers"] for port in c.get("ports", [])}
        opened = {port["port"] for rule in own["spec"].get("ingress", []) for port in rule["ports"]}
        assert opened == served, doc["metadata"]["name"]


# ---------------------------------------------------------------- pinned images


def all_images() -> list[str]:
    images = [c["image"] for doc in pod_docs() for c in pod_containers(doc)]
    for path in K8S.glob("*.example.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and pod_spec(doc):
                images += [c["image"] for c in pod_containers(doc)]
    for service in load_compose()["services"].values():
        images.append(re.sub(r"\$\{[A-Z_]+:-([^}]+)\}", r"\1", service["image"]) if "image" in service else "")
    images.append(re.search(r"^ARG PYTHON_IMAGE=(\S+)$", dockerfile(), re.M).group(1))
    return [image for image in images if image]


def test_every_image_is_pinned_to_a_version():
    images = all_images()
    assert len(images) >= 10
    for image in images:
        name, _, digest = image.partition("@")
        tag = name.rpartition(":")[2] if ":" in name.rpartition("/")[2] else ""
        assert tag or digest, f"{image} has no tag"
        assert tag != "latest", image
        if image.startswith("citebot:"):
            continue  # this project's own image, tagged with its version
        # Third-party images: an exact release (three numbers), and fully qualified.
        assert re.match(r"\d+\.\d+\.\d+", tag), image
        assert name.split("/")[0] in ("docker.io", "ghcr.io", "quay.io", "registry.k8s.io"), image


# ---------------------------------------------------------------- Slack app manifest

# The bot scopes each Web API method needs. A method citebot calls that is missing here
# fails the test below: add it, and its scopes to manifest.yml.
HISTORY = {"channels:history", "groups:history", "im:history", "mpim:history"}
METHOD_SCOPES: dict[str, set[str]] = {
    "chat_postMessage": {"chat:write"},
    "chat_update": {"chat:write"},
    "chat_postEphemeral": {"chat:write"},
    "chat_delete": {"chat:write"},
    "reactions_add": {"reactions:write"},
    "reactions_remove": {"reactions:write"},
    # Threads and conversations of every kind the bot is in: channels, private channels,
    # DMs and group DMs (where it is mentioned).
    "conversations_replies": HISTORY,
    "conversations_history": HISTORY,
    "conversations_info": {"channels:read", "groups:read"},
    "conversations_list": {"channels:read", "groups:read"},
    # Who reads an answer posted in a conversation (bot/access): group DMs too. users.info and
    # usergroups.list also in citebot doctor: a help channel's escalate_to names someone Slack knows.
    "conversations_members": {"channels:read", "groups:read", "mpim:read"},
    "users_info": {"users:read"},
    # A cold large channel's people in bulk (bot/access/resolver.py).
    "users_list": {"users:read"},
    # The readers of a synced page, by e-mail (bot/access/by_email.py, citebot sync).
    "users_lookupByEmail": {"users:read.email"},
    "usergroups_list": {"usergroups:read"},
    "usergroups_users_list": {"usergroups:read"},
    "views_open": set(),
    "views_update": set(),
    "views_push": set(),
    "views_publish": set(),
    "auth_test": set(),
    # The assistant panel. Slack takes chat:write for setStatus too, and will take only that.
    "assistant_threads_setStatus": {"chat:write"},
    "assistant_threads_setTitle": {"assistant:write"},
    "assistant_threads_setSuggestedPrompts": {"assistant:write"},
}
# The events citebot handles: @mentions, direct messages (message.im), the messages of help
# channels (message.channels, message.groups: bot.helpdesk); app_home_opened
# (the Home tab) and assistant_thread_* (the assistant panel) need no scope.
EVENT_SCOPES = {"app_mentions:read", "im:history", "channels:history", "groups:history"}
# Calls Bolt makes for the code, out of the pattern's sight: the assistant panel's suggested
# prompts (bot/inbound/assistant.py, through Bolt's set_suggested_prompts).
BOLT_SCOPES = METHOD_SCOPES["assistant_threads_setSuggestedPrompts"]
# The slash command and the message shortcut the code listens for (bot/inbound/surfaces.py).
SURFACE_SCOPES = {"commands"}
# Start-up will resolve CITEBOT_REVIEW_CHANNEL and check the bot's membership with
# conversations.info; the scopes are in the manifest ahead of that call.
PLANNED_SCOPES = METHOD_SCOPES["conversations_info"]


def slack_methods_called() -> set[str]:
    pattern = re.compile(r"\.((?:chat|reactions|conversations|views|auth|users|usergroups|im|mpim|files|team|bots|pins|"
                         r"assistant)_[A-Za-z]+)\(")
    return {name for path in (ROOT / "bot").rglob("*.py") for name in pattern.findall(path.read_text())}


def load_manifest() -> tuple[dict, str]:
    text = (ROOT / "manifest.yml").read_text()
    return yaml.safe_load(text), text


def test_manifest_asks_for_exactly_the_scopes_the_code_uses():
    called = slack_methods_called()
    assert {"chat_postMessage", "conversations_replies", "reactions_add"} <= called
    unknown = called - METHOD_SCOPES.keys()
    assert not unknown, f"add {sorted(unknown)} to METHOD_SCOPES and their scopes to manifest.yml"
    needed = EVENT_SCOPES | SURFACE_SCOPES | PLANNED_SCOPES | BOLT_SCOPES | {scope for method in called for scope in METHOD_SCOPES[method]}
    manifest, text = load_manifest()
    scopes = manifest["oauth_config"]["scopes"]["bot"]
    assert len(scopes) == len(set(scopes))
    assert set(scopes) == needed
    assert "im:read" not in scopes
    # Each scope says which calls need it, in the comment above it (or above its group).
    for scope in scopes:
        commented = rf"#[^\n]*\n(\s+#[^\n]*\n)*(\s+- [a-z_:.]+\n)*\s+- {re.escape(scope)}\s*$"
        assert re.search(commented, text, re.M), f"{scope} has no comment"


def test_the_manifests_command_and_shortcut_are_the_ones_the_code_handles():
    from bot.inbound.surfaces import COMMAND, SHORTCUT_ASK

    manifest, _ = load_manifest()
    [command] = manifest["features"]["slash_commands"]
    assert command["command"] == COMMAND and command["url"].endswith("/slack/events")
    assert command["should_escape"] is False  # mentions arrive as <@U…>, which the question text reads
    [shortcut] = manifest["features"]["shortcuts"]
    assert (shortcut["type"], shortcut["callback_id"]) == ("message", SHORTCUT_ASK)
    assert len(shortcut["description"]) <= 80 and len(command["description"]) <= 100


def test_manifest_pastes_without_a_reachable_url():
    manifest, text = load_manifest()
    settings = manifest["settings"]
    # Slack rejects event subscriptions with neither a Request URL nor Socket Mode, and checks
    # a Request URL when the manifest is saved: neither is possible before citebot runs.
    assert "event_subscriptions" not in settings and "interactivity" not in settings
    assert settings["socket_mode_enabled"] is False
    # The blocks to uncomment in step 4: the events the code handles, both on /slack/events.
    after = text[text.index("\nsettings:") :].splitlines()
    commented = [line[4:] for line in after if line.startswith("  # ")]
    block = yaml.safe_load("\n".join(line for line in commented if line.startswith(("event_subscriptions:", "interactivity:", " "))))
    events = block["event_subscriptions"]
    from bot.inbound.access_events import ACCESS_EVENTS

    assert events["bot_events"] == ["app_mention", "message.im", "app_home_opened", "assistant_thread_started",
                                    "assistant_thread_context_changed", "message.channels", "message.groups",
                                    *ACCESS_EVENTS]
    # Each event of a help channel says why it is there, in the comment above it.
    for event in ("message.channels", "message.groups"):
        assert re.search(rf"  #\s+# [^\n]*\n  #\s+- {re.escape(event)}\n", text), f"{event} has no comment"
    # The assistant panel the AsyncAssistant listens for is on.
    assert manifest["features"]["assistant_view"]["assistant_description"]
    assert any("AsyncAssistant(" in path.read_text() for path in (ROOT / "bot").rglob("*.py"))
    # The Home tab the app_home_opened listener publishes to is on.
    assert manifest["features"]["app_home"]["home_tab_enabled"] is True
    assert any('"app_home_opened"' in path.read_text() for path in (ROOT / "bot").rglob("*.py"))
    assert events["request_url"].endswith("/slack/events")
    assert block["interactivity"] == {"is_enabled": True, "request_url": events["request_url"]}
    # The web process serves that path (events and interactivity alike).
    assert any('"/slack/events"' in path.read_text() for path in (ROOT / "bot").rglob("*.py"))


# ---------------------------------------------------------------- Dockerfile


def dockerfile() -> str:
    return (DEPLOY / "Dockerfile").read_text()


def dockerfile_uid() -> int:
    return int(re.search(r"^ARG CITEBOT_UID=(\d+)$", dockerfile(), re.M).group(1))


def dockerfile_stages(text: str) -> dict[str, str]:
    """Stage name -> its instructions, in order."""
    parts = re.split(r"^FROM\s+\S+\s+AS\s+(\S+)\s*$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_dockerfile_essentials():
    text = dockerfile()
    stages = dockerfile_stages(text)
    assert list(stages) == ["kb", "wheels", "runtime"]
    # No `# syntax=` line: it makes BuildKit pull a frontend image before anything else.
    assert not re.search(r"^#\s*syntax\s*=", text, re.M | re.I)
    runtime = stages["runtime"]
    # The final stage installs nothing with apt: compilers stay in the build stage.
    assert "apt-get" not in runtime and "gcc" not in runtime
    assert re.search(r"^USER citebot$", runtime, re.M)
    assert not re.search(r"^USER (root|0)\b", runtime, re.M)
    assert "PYTHONDONTWRITEBYTECODE=1" in runtime
    assert re.search(r"^EXPOSE 3000$", runtime, re.M)
    assert re.search(r"^HEALTHCHECK .*\n.*citebot-healthcheck", runtime, re.M)
    assert re.search(r'^ENTRYPOINT \["docker-entrypoint.sh"\]$', runtime, re.M)
    assert re.search(r"^ARG BAKE_INDEX=true$", runtime, re.M)
    assert "citebot index" in runtime
    assert not re.search(r"^ADD\s+https?:", text, re.M | re.I)
    # Every file the Dockerfile copies from the context exists and is not excluded by .dockerignore.
    copies = re.findall(r"^COPY (?:--chmod=\S+ )?(?!--from)(.+)$", text, re.M)
    sources = [part for line in copies for part in line.split()[:-1]]
    assert {"pyproject.toml", "README.md", "bot", "kb_index", "deploy/healthcheck.py"} <= set(sources)
    for part in sources:
        assert (ROOT / part).exists(), part
        assert not docker_ignored(posixpath.normpath(part)), f"{part}: .dockerignore keeps it out of the build"


def test_dockerfile_base_image_is_pinned_and_overridable():
    text = dockerfile()
    match = re.search(r"^ARG PYTHON_IMAGE=(\S+)$", text, re.M)
    assert match, "an ARG names the base, so another one can be passed in"
    base = match.group(1)
    # An exact release of the official image, fully qualified (podman has no default registry).
    assert re.fullmatch(r"docker\.io/library/python:3\.11\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?", base), base
    assert [image for image in re.findall(r"^FROM\s+(\S+)", text, re.M) if image != "scratch"] == ["${PYTHON_IMAGE}"] * 2


def test_dockerfile_builds_wheels_once_and_installs_only_them():
    stages = dockerfile_stages(dockerfile())
    wheels, runtime = stages["wheels"], stages["runtime"]
    # One build from the real sources: no stub files, no editable or second install.
    assert not re.search(r"\btouch\b", wheels)
    assert not re.search(r"pip install\b", wheels)
    assert re.search(r"pip wheel --no-deps --wheel-dir /wheels \.", wheels)
    assert re.search(r"pip wheel --wheel-dir /wheels --requirement", wheels)
    # The runtime installs the wheels from a mount (they stay out of its layers), offline.
    install = next(line for line in runtime.split("RUN ") if "pip install" in line)
    assert "--mount=type=bind,from=wheels,source=/wheels" in install
    assert "--no-index --find-links /wheels citebot" in install
    assert "-e " not in install and "--editable" not in install
    # Only the wheels' checksums are copied in, so that new wheels mean a new install layer.
    copied = re.findall(r"COPY --from=wheels (\S+)", runtime)
    assert copied == ["/wheels/SHA256SUMS"]
    assert "sha256sum *.whl > SHA256SUMS" in wheels


def test_dockerignore_keeps_secrets_and_local_state_out():
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".env", "**/.env", ".git", ".venv", ".citebot"} <= ignored


# What the wheel is built from: `pip install -e .` reads the checkout and hides a package the
# Dockerfile forgot; the wheel built in the image holds only what the wheels stage copied.


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def shipped_packages() -> list[str]:
    """The top-level packages pyproject.toml ships: its `packages.find` patterns resolved against the
    folders of the repository, as setuptools does (namespace packages too, unless switched off)."""
    find = pyproject()["tool"]["setuptools"]["packages"]["find"]
    assert find.get("where", ["."]) == ["."], "the packages are looked for in the repository root"
    include, exclude = find.get("include", ["*"]), find.get("exclude", [])
    namespaces = find.get("namespaces", True)
    found = []
    for folder in sorted(p for p in ROOT.iterdir() if p.is_dir() and p.name.isidentifier()):
        if not any(fnmatchcase(folder.name, pattern) for pattern in include):
            continue
        if any(fnmatchcase(folder.name, pattern) for pattern in exclude):
            continue
        if (folder / "__init__.py").is_file() or (namespaces and any(folder.rglob("*.py"))):
            found.append(folder.name)
    for pattern in include:
        assert any(fnmatchcase(name, pattern) for name in found), f"pyproject.toml includes {pattern!r}: no such package"
    return found


def dockerfile_instructions(stage: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a stage in order, continuation lines joined, comments left out."""
    lines = [line for line in stage.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    return [(m.group(1).upper(), m.group(2).strip()) for m in re.finditer(r"^\s*([A-Za-z]+)\s+(.*)$", joined, re.M)]


def wheel_build_tree() -> tuple[dict[str, str], str]:
    """What the wheels stage has copied from the build context when it builds citebot's own wheel:
    context path -> the path it lands at, and the folder the wheel is built from."""
    workdir, tree = "/", {}
    for instruction, args in dockerfile_instructions(dockerfile_stages(dockerfile())["wheels"]):
        if instruction == "WORKDIR":
            workdir = posixpath.join(workdir, args)
        elif instruction == "COPY" and "--from" not in args:
            *sources, dest = [word for word in args.split() if not word.startswith("--")]
            target = posixpath.normpath(posixpath.join(workdir, dest))
            for source in map(posixpath.normpath, sources):
                if (ROOT / source).is_dir():
                    tree[source] = target  # a folder's contents land in the destination
                elif dest.endswith("/") or len(sources) > 1:
                    tree[source] = posixpath.join(target, posixpath.basename(source))
                else:
                    tree[source] = target
        elif instruction == "RUN" and (built := re.search(r"pip wheel --no-deps\b.*?\s(\S+)\s*(?:&&|$)", args)):
            return tree, posixpath.normpath(posixpath.join(workdir, built.group(1)))
    raise AssertionError("the wheels stage never builds citebot's own wheel (pip wheel --no-deps ... .)")


def docker_ignored(path: str) -> bool:
    """Does .dockerignore keep this context path (or a folder above it) out of the build?"""
    ignored = False
    parts = path.split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for line in (ROOT / ".dockerignore").read_text().splitlines():
        pattern = line.strip()
        if not pattern or pattern.startswith("#"):
            continue
        keep = pattern.startswith("!")
        pattern = pattern.removeprefix("!").strip("/")
        regex = re.escape(pattern).replace(r"\*\*/", "(?:.*/)?").replace(r"\*\*", ".*").replace(r"\*", "[^/]*")
        regex = regex.replace(r"\?", "[^/]")
        if any(re.fullmatch(regex, candidate) for candidate in candidates):
            ignored = not keep
    return ignored


def missing_from_wheel_build(paths: list[str]) -> list[str]:
    """The context paths that are not in the folder the wheel is built from, in the same place."""
    tree, build_dir = wheel_build_tree()
    missing = []
    for path in paths:
        landed = False
        for source, target in tree.items():
            if source == "." or path == source or path.startswith(source + "/"):
                rest = path if source == "." else path[len(source) + 1 :]
                landed = landed or posixpath.normpath(posixpath.join(target, rest)) == posixpath.join(build_dir, path)
        if not landed or docker_ignored(path):
            missing.append(path)
    return missing


def source_files(folder: str) -> list[str]:
    return sorted(
        str(p.relative_to(ROOT)) for p in (ROOT / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts
        and p.suffix != ".pyc"
    )


def test_the_wheel_is_built_from_every_package_pyproject_ships():
    packages = shipped_packages()
    assert {"bot", "kb_index"} <= set(packages)
    for package in packages:
        modules = [path for path in source_files(package) if path.endswith(".py")]
        missing = missing_from_wheel_build(modules)
        assert not missing, (
            f"pyproject.toml ships the package {package} (packages.find include "
            f"{pyproject()['tool']['setuptools']['packages']['find']['include']}), but deploy/Dockerfile's wheels "
            f"stage does not copy it into the folder it builds the wheel from (or .dockerignore keeps it out): "
            f"{len(missing)} of its {len(modules)} modules missing, e.g. {missing[:3]}; add `COPY {package} ./{package}`"
        )


def test_the_wheel_build_has_the_entry_points_package_data_and_readme():
    project = pyproject()["project"]
    packages = shipped_packages()
    needed = ["pyproject.toml"]
    # The console scripts: their module is in a shipped package, and has the function.
    for script, target in project["scripts"].items():
        module, _, function = target.partition(":")
        assert module.split(".")[0] in packages, f"the script {script} runs {module}, which no shipped package holds"
        assert callable(getattr(importlib.import_module(module), function)), f"{target}: no such function"
        file = module.replace(".", "/")
        needed.append(f"{file}.py" if (ROOT / f"{file}.py").is_file() else f"{file}/__init__.py")
    # The package data: each glob finds files, in a shipped package.
    for package, globs in pyproject()["tool"]["setuptools"].get("package-data", {}).items():
        assert package in packages, f"package-data for {package}, which pyproject.toml does not ship"
        for pattern in globs:
            files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / package).glob(pattern) if p.is_file())
            assert files, f"package-data {package}: {pattern!r} finds no file"
            needed += files
    # The readme (the wheel's description: setuptools fails without it) and any license files.
    readme = project["readme"]
    needed.append(readme if isinstance(readme, str) else readme["file"])
    for pattern in project.get("license-files", []):
        needed += sorted(str(p.relative_to(ROOT)) for p in ROOT.glob(pattern) if p.is_file())
    for path in needed:
        assert (ROOT / path).is_file(), path
    missing = missing_from_wheel_build(needed)
    assert not missing, f"deploy/Dockerfile's wheels stage builds the wheel without {missing}"



# ---------------------------------------------------------------- the image itself

SMOKE_NO_BUILDER, SMOKE_NO_BASE, SMOKE_NO_HOST_DEPS = 3, 4, 5


def test_smoke_script_documents_its_exit_statuses():
    head = (DEPLOY / "smoke.sh").read_text().split("set -euo pipefail")[0]
    for status in (0, 1, 2, SMOKE_NO_BUILDER, SMOKE_NO_BASE, SMOKE_NO_HOST_DEPS):
        assert re.search(rf"^#\s+{status}\s+\S", head, re.M), f"exit status {status} is not described"


@pytest.mark.image
@pytest.mark.e2e
@pytest.mark.timeout(3600)
def test_image_builds_and_answers(request):
    """deploy/smoke.sh: builds the image and runs --help, ask, serve and worker in it.

    Minutes of work, so only when asked for: `python -m pytest -m image -s tests/test_deploy.py` (when it
    must be: the module's docstring).
    Skipped where there is no container builder or no base image (the script's own statuses).
    """
    if "image" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("builds the image (minutes): select it with -m image")
    result = subprocess.run(
        ["bash", str(DEPLOY / "smoke.sh")], capture_output=True, text=True, timeout=3500, stdin=subprocess.DEVNULL
    )
    output = (result.stdout + result.stderr)[-4000:]
    print(output)  # with -s: the smoke test's own account, for the closing note
    if result.returncode in (SMOKE_NO_BUILDER, SMOKE_NO_BASE, SMOKE_NO_HOST_DEPS):
        pytest.skip(output.strip().splitlines()[-1])
    assert result.returncode == 0, output
    assert "PASSED" in result.stderr


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

    # The test database (CITEBOT_TEST_REDIS_URL): a database picked by hand could be
    # another checkout's, flushed under this test while it runs.
    url = redis_url
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
