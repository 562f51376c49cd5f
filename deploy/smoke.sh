#!/usr/bin/env bash
# Smoke test of the citebot image: builds deploy/Dockerfile, then runs every role in the
# image it built.
#
#   deploy/smoke.sh                 (from anywhere in the checkout; no arguments)
#
# Exit status:
#   0  passed
#   1  failed: the build or a check went wrong (printed, with the container logs)
#   2  usage: the script was given arguments
#   3  no container builder: neither docker (with a daemon that answers), podman nor buildah
#   4  no base image: PYTHON_IMAGE (default: the Dockerfile's) is neither local nor pullable,
#      and there is no local base from deploy/base-image.sh either
#   5  the host lacks what runs beside the containers: python3 3.11 or newer (the fake
#      Slack and LLM servers of tests/fakes), or redis-server (or set SMOKE_REDIS_URL)
#
# What it checks, in the built image:
#   1. `citebot --help`, as the non-root user 10001
#   2. `citebot ask --json "How many vacation days do I get?"` on the baked sample KB with
#      the extractive backend: a verified answer with citations
#   3. `serve` and `worker` in two containers on the host network, against the project's
#      fake Slack Web API and fake LLM server and a Redis with a password, all on this
#      host: a signed app_mention gets one answer in its thread, with footnotes and the
#      Sources button, judged as the defaults have it (CITEBOT_JUDGE=auto: the fake model
#      answers the judge too, and supports the answer); /healthz and citebot-healthcheck
#      pass for both roles
# Containers it started are removed at the end, whatever happened; the image is kept.
#
# Environment:
#   SMOKE_BUILDER         docker | podman | buildah (default: the first that works, in that order)
#   SMOKE_IMAGE           tag for the built image (default: citebot:smoke)
#   PYTHON_IMAGE          the base image (default: the Dockerfile's ARG PYTHON_IMAGE)
#   SMOKE_LOCAL_BASE      used when PYTHON_IMAGE cannot be had (default: localhost/citebot-base:bookworm,
#                         what deploy/base-image.sh makes)
#   SMOKE_PULL_TIMEOUT    seconds to wait for a pull of the base (default: 300)
#   SMOKE_REDIS_URL       a Redis database of its own for the test, instead of a redis-server
#                         started here on a free port (its data is left in place)
#   STORAGE_DRIVER        podman/buildah storage driver, e.g. vfs where overlay cannot be mounted
#   BUILDAH_ISOLATION     podman/buildah build isolation, e.g. chroot inside a container
#
# With podman, containers run with `podman run`; where that cannot start a container (a
# sandbox that forbids setting resource limits) and buildah is installed, they run with
# `buildah from` + `buildah run`, which calls the image's entrypoint explicitly.
set -euo pipefail

readonly EXIT_FAILED=1 EXIT_USAGE=2 EXIT_NO_BUILDER=3 EXIT_NO_BASE=4 EXIT_NO_HOST_DEPS=5

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DOCKERFILE=$ROOT/deploy/Dockerfile
IMAGE=${SMOKE_IMAGE:-citebot:smoke}
LOCAL_BASE=${SMOKE_LOCAL_BASE:-localhost/citebot-base:bookworm}
# The fakes the end-to-end tests use, run as their own processes.
SLACK_FAKE_MODULE=tests.fakes.slack_server
LLM_FAKE_MODULE=tests.fakes.llm_server
# What the fake LLM answers: a sentence of the sample KB's entry hb-pto-01, cited, in words the
# checks accept (its number with its unit, "28 working days"). It answers the entailment judge's
# request itself (--judge): supported, quoting the entry.
LLM_ANSWER="Every employee on a five-day week receives 28 working days of paid annual leave per calendar year [hb-pto-01]."

say() { printf 'smoke: %s\n' "$*" >&2; }
fail() { say "FAILED: $*"; exit "$EXIT_FAILED"; }

[ $# -eq 0 ] || { say "usage: deploy/smoke.sh (settings come from the environment; see the top of this file)"; exit "$EXIT_USAGE"; }

work=$(mktemp -d "${TMPDIR:-/tmp}/citebot-smoke.XXXXXX")
containers=()   # docker/podman container names, or buildah working containers
background=()   # process groups started here: fakes, redis-server, `buildah run`s

cleanup() {
  local status=$?
  set +e
  for ctr in "${containers[@]}"; do
    case "$runner" in
      docker | podman) "${RUN[@]}" rm -f "$ctr" >/dev/null 2>&1 ;;
    esac
  done
  for pgid in "${background[@]}"; do
    kill -TERM -- "-$pgid" 2>/dev/null
  done
  for pgid in "${background[@]}"; do
    for _ in $(seq 1 50); do kill -0 -- "-$pgid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pgid" 2>/dev/null
  done
  if [ "$runner" = buildah ]; then
    for ctr in "${containers[@]}"; do "${RUN[@]}" rm "$ctr" >/dev/null 2>&1; done
  fi
  rm -rf "$work"
  exit "$status"
}
runner=none
RUN=()
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- builder

storage=()
[ -n "${STORAGE_DRIVER:-}" ] && storage=(--storage-driver "$STORAGE_DRIVER")

docker_answers() { command -v docker >/dev/null 2>&1 && timeout 20 docker info >/dev/null 2>&1; }

builder=${SMOKE_BUILDER:-}
if [ -z "$builder" ]; then
  if docker_answers; then builder=docker
  elif command -v podman >/dev/null 2>&1; then builder=podman
  elif command -v buildah >/dev/null 2>&1; then builder=buildah
  fi
fi
case "$builder" in
  docker) docker_answers || { say "docker is not installed or its daemon does not answer"; exit "$EXIT_NO_BUILDER"; } ;;
  podman | buildah) command -v "$builder" >/dev/null 2>&1 || { say "$builder is not installed"; exit "$EXIT_NO_BUILDER"; } ;;
  "")
    say "no container builder here: docker (with a running daemon), podman or buildah is needed"
    exit "$EXIT_NO_BUILDER"
    ;;
  *) say "SMOKE_BUILDER must be docker, podman or buildah (got '$builder')"; exit "$EXIT_USAGE" ;;
esac
if [ "$builder" = docker ]; then B=(docker); else B=("$builder" "${storage[@]}"); fi

image_present() {
  case "$builder" in
    docker) docker image inspect "$1" >/dev/null 2>&1 ;;
    podman) podman "${storage[@]}" image exists "$1" ;;
    buildah) buildah "${storage[@]}" inspect --type image "$1" >/dev/null 2>&1 ;;
  esac
}

# ---------------------------------------------------------------- host programs

if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  say "python3 3.11 or newer is needed on this host to run the fake Slack and LLM servers"
  exit "$EXIT_NO_HOST_DEPS"
fi
if [ -z "${SMOKE_REDIS_URL:-}" ] && ! command -v redis-server >/dev/null 2>&1; then
  say "redis-server is needed on this host (or set SMOKE_REDIS_URL to a Redis database the test may use)"
  exit "$EXIT_NO_HOST_DEPS"
fi

# ---------------------------------------------------------------- base image

base=${PYTHON_IMAGE:-$(sed -n 's/^ARG PYTHON_IMAGE=//p' "$DOCKERFILE" | head -n 1)}
[ -n "$base" ] || fail "no ARG PYTHON_IMAGE=... line in $DOCKERFILE"
if image_present "$base"; then
  say "base image $base (local)"
elif say "pulling base image $base" && timeout "${SMOKE_PULL_TIMEOUT:-300}" "${B[@]}" pull "$base" >"$work/pull.log" 2>&1; then
  say "base image $base (pulled)"
else
  say "cannot pull $base: $(tail -n 1 "$work/pull.log" 2>/dev/null || echo 'timed out')"
  if [ -z "${PYTHON_IMAGE:-}" ] && image_present "$LOCAL_BASE"; then
    base=$LOCAL_BASE
    say "base image $base (local, made by deploy/base-image.sh)"
  else
    say "no base image: pull $base where a registry is reachable, set PYTHON_IMAGE to a local one," \
      "or make one from Debian's packages with deploy/base-image.sh (as root)"
    exit "$EXIT_NO_BASE"
  fi
fi

# ---------------------------------------------------------------- build

say "building $IMAGE with $builder"
build_started=$(date +%s)
case "$builder" in
  docker)
    DOCKER_BUILDKIT=1 docker build -f "$DOCKERFILE" --build-arg "PYTHON_IMAGE=$base" -t "$IMAGE" "$ROOT" \
      >"$work/build.log" 2>&1 || { tail -n 40 "$work/build.log" >&2; fail "docker build"; }
    ;;
  podman | buildah)
    verb=build; [ "$builder" = buildah ] && verb=bud
    # docker format: OCI images have no HEALTHCHECK.
    "${B[@]}" "$verb" --format docker --layers --force-rm --pull=missing -f "$DOCKERFILE" \
      --build-arg "PYTHON_IMAGE=$base" -t "$IMAGE" "$ROOT" >"$work/build.log" 2>&1 \
      || { tail -n 40 "$work/build.log" >&2; fail "$builder $verb"; }
    ;;
esac
build_seconds=$(( $(date +%s) - build_started ))
say "built $IMAGE in ${build_seconds} s"

# ---------------------------------------------------------------- runner

runner=$builder
if [ "$builder" = podman ] && ! podman "${storage[@]}" run --rm --network host "$IMAGE" true >"$work/podman-run.log" 2>&1; then
  if command -v buildah >/dev/null 2>&1; then
    say "podman run cannot start a container here ($(tail -n 1 "$work/podman-run.log")); running them with buildah"
    runner=buildah
  else
    cat "$work/podman-run.log" >&2
    fail "podman run cannot start a container here"
  fi
fi
if [ "$runner" = docker ]; then RUN=(docker); else RUN=("$runner" "${storage[@]}"); fi

n=0
# run_once ARGS...: a citebot command (or any command) in a fresh container, through the
# image's entrypoint, with the image's own settings; prints its output.
run_once() {
  local name=citebot-smoke-once-$$-$((n += 1))
  containers+=("$name")
  case "$runner" in
    docker | podman) "${RUN[@]}" run --rm --name "$name" --network host "$IMAGE" "$@" ;;
    buildah)
      "${RUN[@]}" from --pull-never --name "$name" "$IMAGE" >/dev/null
      "${RUN[@]}" run --network host "$name" -- docker-entrypoint.sh "$@"
      ;;
  esac
}

# start NAME ARGS...: a long-running role in the background, logging to $work/NAME.log.
start() {
  local name=citebot-smoke-$1-$$
  shift
  case "$runner" in
    docker | podman)
      "${RUN[@]}" run -d --name "$name" --network host "${container_env[@]}" "$IMAGE" "$@" >/dev/null
      containers+=("$name")
      ;;
    buildah)
      "${RUN[@]}" from --pull-never --name "$name" "$IMAGE" >/dev/null
      containers+=("$name")
      setsid "${RUN[@]}" run --network host "${container_env[@]}" "$name" -- docker-entrypoint.sh "$@" \
        >"$work/$name.log" 2>&1 </dev/null &
      background+=("$!")
      ;;
  esac
}

# in_container NAME ARGS...: a command next to a running role (docker/podman exec; with
# buildah, another process in the same working container, given the same settings).
in_container() {
  local name=citebot-smoke-$1-$$
  shift
  case "$runner" in
    docker | podman) "${RUN[@]}" exec "$name" "$@" ;;
    buildah) "${RUN[@]}" run --network host "${container_env[@]}" "$name" -- "$@" ;;
  esac
}

logs_of() {
  local name=citebot-smoke-$1-$$
  case "$runner" in
    docker | podman) "${RUN[@]}" logs "$name" 2>&1 | tail -n 60 ;;
    buildah) tail -n 60 "$work/$name.log" 2>/dev/null ;;
  esac
}

# ---------------------------------------------------------------- 1. --help, user

say "1/3 citebot --help"
run_once --help >"$work/help.out" 2>&1 || { cat "$work/help.out" >&2; fail "citebot --help"; }
{ grep -q "serve" "$work/help.out" && grep -q "worker" "$work/help.out"; } || { cat "$work/help.out" >&2; fail "citebot --help lists no serve/worker"; }
uid=$(run_once id -u 2>&1) || fail "id -u in the image: $uid"
[ "$uid" = 10001 ] || fail "the image runs as uid $uid, not 10001"
say "    ok: citebot --help; runs as uid $uid"

# ---------------------------------------------------------------- 2. ask

say "2/3 citebot ask on the baked sample KB (extractive)"
run_once ask --json "How many vacation days do I get?" >"$work/ask.json" 2>"$work/ask.err" \
  || { cat "$work/ask.err" "$work/ask.json" >&2; fail "citebot ask"; }
python3 - "$work/ask.json" <<'PY' || fail "citebot ask gave no verified answer with citations"
import json
import sys

answer = json.load(open(sys.argv[1]))
problems = []
if answer.get("refused"):
    problems.append("refused")
if not answer.get("verified"):
    problems.append("not verified")
if not answer.get("citations"):
    problems.append("no citations")
if not any(s.get("id") in answer.get("citations", []) for s in answer.get("sources", [])):
    problems.append("no source for the citations")
if "28" not in answer.get("answer", ""):
    problems.append("the answer does not name the 28 days")
if problems:
    print("smoke: ask: " + ", ".join(problems) + "\n" + json.dumps(answer, indent=1)[:3000], file=sys.stderr)
    sys.exit(1)
print(f"smoke:     ok: {answer['answer'][:90]}... cites {', '.join(answer['citations'])}", file=sys.stderr)
PY

# ---------------------------------------------------------------- 3. serve + worker

say "3/3 serve + worker against fake Slack, a fake LLM and Redis"

# launch NAME CMD...: a host process in its own process group, logging to $work/NAME.log.
launch() {
  local name=$1
  shift
  setsid "$@" >"$work/$name.log" 2>&1 </dev/null &
  background+=("$!")
}

# url_of NAME: the URL a fake printed ("listening on URL").
url_of() {
  local line
  for _ in $(seq 1 100); do
    line=$(grep -m 1 -o 'listening on .*' "$work/$1.log" 2>/dev/null || true)
    [ -n "$line" ] && { echo "${line#listening on }"; return 0; }
    sleep 0.1
  done
  cat "$work/$1.log" >&2
  fail "$1 did not start"
}

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

token=xoxb-smoke-$$
signing_secret=smoke-signing-secret-$$-$RANDOM
printf '{"default": "%s"}\n' "$LLM_ANSWER" >"$work/llm-script.json"
launch slack env PYTHONPATH="$ROOT" python3 -m "$SLACK_FAKE_MODULE" --port 0 --token "$token"
launch llm env PYTHONPATH="$ROOT" python3 -m "$LLM_FAKE_MODULE" --port 0 --script "$work/llm-script.json" --judge
slack_url=$(url_of slack)
llm_url=$(url_of llm)

if [ -n "${SMOKE_REDIS_URL:-}" ]; then
  redis_url=$SMOKE_REDIS_URL
else
  redis_port=$(free_port)
  redis_password=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
  # As in deploy/compose.yaml and deploy/k8s: a password, a memory cap that refuses writes.
  printf 'requirepass %s\n' "$redis_password" >"$work/redis.conf"
  launch redis redis-server "$work/redis.conf" --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no \
    --maxmemory 64mb --maxmemory-policy noeviction --dir "$work"
  redis_url="redis://:$redis_password@127.0.0.1:$redis_port/0"
fi
python3 - "$redis_url" <<'PY' || fail "Redis does not answer at the test's URL (with its password)"
import socket
import sys
import time
from urllib.parse import unquote, urlsplit

url = urlsplit(sys.argv[1])
auth = b""
if url.password:
    words = [url.username, url.password] if url.username else [url.password]
    auth = ("AUTH " + " ".join(unquote(w) for w in words) + "\r\n").encode()
deadline = time.monotonic() + 10
while time.monotonic() < deadline:
    try:
        with socket.create_connection((url.hostname, url.port or 6379), timeout=1) as sock:
            sock.sendall(auth + b"PING\r\n")
            time.sleep(0.05)
            if b"+PONG" in sock.recv(256):
                sys.exit(0)
    except OSError:
        pass
    time.sleep(0.1)
sys.exit(1)
PY

web_port=$(free_port)
container_env=(
  -e "SLACK_BOT_TOKEN=$token"
  -e "SLACK_SIGNING_SECRET=$signing_secret"
  -e "CITEBOT_SLACK_API_URL=$slack_url"
  -e "CITEBOT_REDIS_URL=$redis_url"
  -e CITEBOT_LLM=openai
  -e "CITEBOT_LLM_URL=$llm_url"
  -e CITEBOT_LLM_MODEL=smoke-model
  -e CITEBOT_LLM_TIMEOUT=20
  -e "CITEBOT_REVIEW_CHANNEL=#citebot-review"
  # The baked index is there: nothing to index at start, as in Kubernetes.
  -e CITEBOT_INDEX_ON_START=never
)
start web serve --port "$web_port" --host 127.0.0.1
start worker worker --concurrency 2 --metrics-port 0

say "    waiting for /healthz on port $web_port"
python3 - "http://127.0.0.1:$web_port/healthz" <<'PY' || { logs_of web >&2; fail "serve did not become healthy"; }
import json
import sys
import time
import urllib.error
import urllib.request

deadline, last = time.monotonic() + 120, "no answer"
while time.monotonic() < deadline:
    try:
        with urllib.request.urlopen(sys.argv[1], timeout=2) as resp:
            print(f"smoke:     ok: /healthz {json.loads(resp.read())}", file=sys.stderr)
            sys.exit(0)
    except urllib.error.HTTPError as exc:
        last = f"{exc.code} {exc.read()[:200]!r}"
    except OSError as exc:
        last = str(exc)
    time.sleep(0.5)
print(f"smoke: /healthz: {last}", file=sys.stderr)
sys.exit(1)
PY

say "    sending a signed app_mention"
python3 - "http://127.0.0.1:$web_port/slack/events" "$signing_secret" "$slack_url" "$llm_url" <<'PY' \
  || { say "web:"; logs_of web >&2; say "worker:"; logs_of worker >&2; fail "no answer to the app_mention"; }
import hashlib
import hmac
import json
import sys
import time
import urllib.error
import urllib.request

events_url, secret, slack_url, llm_url = sys.argv[1], sys.argv[2], sys.argv[3].rstrip("/"), sys.argv[4].rstrip("/")
control = slack_url.removesuffix("/api")
bot_user = "UBOT0001"  # the fake's auth.test user
n = time.time_ns() // 1000
ts = f"{n // 1_000_000}.{n % 1_000_000:06d}"
body = json.dumps({
    "token": "unused", "team_id": "T0SMOKE", "api_app_id": "A0SMOKE", "type": "event_callback",
    "event_id": f"EvSmoke{n}", "event_time": int(time.time()),
    # A channel the fake Slack knows: citebot asks who its members are before it answers there, and a channel
    # Slack cannot describe is answered from nothing (it could be shared with another organization).
    "event": {"type": "app_mention", "user": "USMOKE", "channel": "CGENERAL", "ts": ts, "event_ts": ts,
              "text": f"<@{bot_user}> How many days of annual leave do I get?"},
    "authorizations": [{"team_id": "T0SMOKE", "user_id": bot_user, "is_bot": True, "is_enterprise_install": False}],
})
stamp = str(int(time.time()))
signature = "v0=" + hmac.new(secret.encode(), f"v0:{stamp}:{body}".encode(), hashlib.sha256).hexdigest()
request = urllib.request.Request(events_url, data=body.encode(), method="POST", headers={
    "Content-Type": "application/json", "X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": signature})
with urllib.request.urlopen(request, timeout=10) as resp:
    if resp.status != 200:
        sys.exit(f"smoke: /slack/events answered {resp.status}")


def get(path):
    with urllib.request.urlopen(control + path, timeout=10) as resp:
        return json.loads(resp.read())


def posts_in_thread():
    return [c["body"] for c in get("/_calls")["calls"]
            if c["method"] == "chat.postMessage" and c["status"] == 200 and not c["error"]
            and c["body"].get("thread_ts") == ts]


deadline = time.monotonic() + 90
while not posts_in_thread():
    if time.monotonic() > deadline:
        sys.exit("smoke: no chat.postMessage into the question's thread within 90 s")
    time.sleep(0.5)
time.sleep(2)  # a second post, if there were one, would arrive now
posts = posts_in_thread()
problems = []
if len(posts) != 1:
    problems.append(f"{len(posts)} posts in the question's thread, not 1")
post = posts[0] if posts else {}
text, blocks = post.get("text", ""), json.dumps(post.get("blocks", []))
if "28 working days" not in text or "[1]" not in text:
    problems.append("the answer lacks '28 working days' or the footnote [1]")
if "citebot_sources" not in blocks or "Annual leave" not in blocks:
    problems.append("no Sources button or no source title")
calls = get("/_calls")["calls"]
# The judge was asked (CITEBOT_JUDGE=auto, the default) and supported every statement.
with urllib.request.urlopen(llm_url + "/_calls", timeout=10) as resp:
    judged = [json.loads(c["reply"])["verdicts"] for c in json.loads(resp.read()) if c.get("reply")]
if not judged:
    problems.append("no judge's verdicts from the fake model: the entailment judge was not asked (CITEBOT_JUDGE=auto "
                    "asks it wherever a model answers), or the fake was not told to answer it (--judge)")
elif any(v["verdict"] != "supports" for v in judged[-1]):
    problems.append(f"the judge did not support the answer: {judged[-1]}")
if problems:
    sys.exit("smoke: " + "; ".join(problems) + "\n" + json.dumps(posts, indent=1)[:3000])
methods = sorted({c["method"] for c in calls})
print(f"smoke:     ok: answered in the thread: {text[:90]!r}; Slack calls: {', '.join(methods)}", file=sys.stderr)
print(f"smoke:     ok: judged: {', '.join(v['verdict'] for v in judged[-1])}: {judged[-1][0]['quote'][:70]!r}",
      file=sys.stderr)
PY
if logs_of worker | grep -q 'entailment judge unavailable'; then
  logs_of worker >&2
  fail "the entailment judge was unavailable: the answer went out on the checks alone"
fi

say "    health checks inside the containers"
out=$(in_container web citebot-healthcheck web --port "$web_port" 2>&1) || { echo "$out" >&2; fail "citebot-healthcheck web"; }
say "    ok: web: $out"
out=$(in_container worker citebot-healthcheck worker 2>&1) || { echo "$out" >&2; fail "citebot-healthcheck worker"; }
say "    ok: worker: $out"

say "PASSED: $IMAGE (built with $builder in ${build_seconds} s, run with $runner, base $base)"
