"""`citebot doctor`: can this configuration work? One line per finding: ok, warn or fail.

It looks at what a running citebot needs, in the order a question meets it:
the model (bot.answer.probe: answers at all, in which structured-output form,
how fast, with how much context), the entailment judge where a model answers
(off, the model itself, or a MiniCheck server asked one sentence), Slack (the
tokens, auth.test, Socket Mode or the signing secret, the review channel), the
help channels (bot.commands.help_doctor: which answer without a mention, the bot a
member, every escalate_to known to Slack),
Redis, and the index (its generation, entries and vectors, and the embedder).
It changes nothing.

`fail` is what cannot work as configured, and makes the exit status 1; `warn`
is what works, but not as well as it could, or only for `citebot ask`
(without a Slack token, Slack and Redis are not needed).
"""

from __future__ import annotations

import asyncio
import math
import time
from pathlib import Path
from typing import Any

from redis.exceptions import RedisError

from bot.answer.backends import PROSE_MAX_TOKENS, STRUCTURED_MAX_TOKENS, make_backend
from bot.answer.budget import BudgetSpent, within_budget
from bot.answer.judge import JUDGE_OFF_WARNING, unjudged_model
from bot.answer.llm_http import LLMError
from bot.answer.minicheck import MAX_TOKENS, make_minicheck, prompt, read_answer
from bot.answer.probe import probe_model
from bot.answer.prompt import system_rules
from bot.answer.verify.judgement import JudgeReplyInvalid
from bot.commands import EXIT_FAILED, EXIT_OK
from bot.commands.finding import FAIL, OK, WARN, Finding
from bot.commands.help_doctor import check_help_channels
from bot.commands.shared import granted_scopes, shared_history_lines, unknown_audience_names
from bot.commands.sources_doctor import check_sources
from bot.config import ConfigError, Settings
from bot.embedder import make_embedder
from bot.models import AnswerMode, GenerationRequest
from bot.review.reviewers import missing_reviewers
from bot.slack.calls import SlackError, call, make_client
from bot.slack.startup import StartupError, check_app_token, check_bot_token, resolve_review_channel
from bot.store.connection import connect, redis_location
from bot.store.shared_history import restricted_in_shared_channels
from bot.terminal import echo, json_text
from kb_index.collection import Audience, CollectionAccess
from kb_index.entries import collection_file_problems
from kb_index.index import IndexNotFound, built_from, check_generation, current_generation, read_access, read_manifest
from kb_index.vector_store import STORE_FILE, store_size
from kb_index.vectors import model_of

REDIS_TIMEOUT_S = 5.0
# Redis commands citebot relies on (XAUTOCLAIM, GETDEL) came with 6.2.
REDIS_MIN_VERSION = (6, 2)
# Characters per token when guessing how many tokens a full prompt takes: low on
# purpose (German and numbers tokenize densely), so that a warning comes early.
CHARS_PER_TOKEN = 3


def cmd_doctor(args, settings: Settings) -> int:
    findings = asyncio.run(examine(settings))
    failed = any(f.status == FAIL for f in findings)
    if args.json:
        print(json_text({"ok": not failed, "findings": [f.as_json() for f in findings]}, indent=1))
    else:
        for f in findings:
            echo(f"{f.status:<4}  {f.check:<5}  {f.detail}", newlines=False)
    return EXIT_FAILED if failed else EXIT_OK


async def examine(settings: Settings) -> list[Finding]:

    return [*await check_model(settings), *await check_judge(settings), *await check_slack(settings),
            *await check_help_channels(settings), await check_redis(settings), *check_index(settings),
            *await check_access(settings), *await check_sources(settings)]


# ---------------------------------------------------------------- the model


async def check_model(settings: Settings) -> list[Finding]:
    # One try: a probe reports what the server does, not what the retries make of it.
    backend = make_backend(settings, retries=0)
    try:
        report = await probe_model(backend, settings.question_budget_s)
    finally:
        await backend.aclose()
    findings = [Finding("model", OK if report.answers else FAIL, report.line(), report.as_json())]
    if not report.answers:
        return findings
    if settings.answer_mode is AnswerMode.CLAIMS and not report.constrained:
        findings.append(Finding("model", WARN, "claims mode, but the server constrains no output to the schema: "
                                "answers rely on the prompt and the lenient JSON parser"))
    if report.context is not None:
        findings += _context_fits(settings, report.context[0])
    return findings


# ---------------------------------------------------------------- the judge

# MiniCheck's probe: a claim its document states word for word, which any grounding model supports.
PROBE_DOCUMENT = "Annual leave\nEmployees get 28 days of paid annual leave per calendar year."
PROBE_CLAIM = "Employees get 28 days of paid annual leave per calendar year."


async def check_judge(settings: Settings) -> list[Finding]:
    """The entailment judge: off is worth a word only where a model writes the answers (the extractive
    backend quotes the knowledge base: there is nothing for a judge to catch); a MiniCheck server is asked."""
    kind = settings.judge_kind
    if kind == "off":
        return [Finding("judge", WARN, JUDGE_OFF_WARNING)] if unjudged_model(settings) else []
    if kind == "llm":
        return [Finding("judge", OK, "the answering model judges each answer that passes the checks (one more call)")]
    return [await _probe_minicheck(settings)]


async def _probe_minicheck(settings: Settings) -> Finding:
    """One sentence in MiniCheck's protocol that its document states word for word: the judge must say Yes."""
    judge = make_minicheck(settings, retries=0)
    where = f"judge {settings.judge_model} at {settings.judge_url}"
    request = GenerationRequest(messages=[{"role": "user", "content": prompt(PROBE_DOCUMENT, PROBE_CLAIM)}],
                                mode=AnswerMode.CITATIONS, question="", evidence=[], max_tokens=MAX_TOKENS)
    started = time.perf_counter()
    try:
        reply = await within_budget(judge.backend.generate(request), settings.question_budget_s)
        seconds = time.perf_counter() - started
        supported = read_answer(reply.text)
    except (LLMError, BudgetSpent) as exc:
        return Finding("judge", WARN, f"{where}: no answer ({exc}); until it answers, answers are posted as the "
                                      "checks alone decide")
    except JudgeReplyInvalid as exc:
        return Finding("judge", WARN, f"{where}: replies outside MiniCheck's protocol ({exc}): is "
                                      "CITEBOT_JUDGE_MODEL a MiniCheck model? Until it is, the checks alone decide")
    finally:
        await judge.aclose()
    if not supported:
        return Finding("judge", WARN, f"{where}: says No to a sentence its document states word for word: is "
                                      "CITEBOT_JUDGE_MODEL a MiniCheck model? It would hold back right answers")
    return Finding("judge", OK, f"{where}: answers in MiniCheck's protocol ({seconds:.2f} s for one sentence)",
                   {"seconds": round(seconds, 3)})


def _context_fits(settings: Settings, context: int) -> list[Finding]:
    """A full prompt and the output cap must fit the context, or the server refuses or cuts the prompt."""
    structured = settings.answer_mode is AnswerMode.CLAIMS
    cap = settings.llm_max_tokens or (STRUCTURED_MAX_TOKENS if structured else PROSE_MAX_TOKENS)
    rules = max(len(system_rules(mode, language)) for mode in AnswerMode for language in ("en", "de"))
    prompt = math.ceil((settings.prompt_budget_chars + rules) / CHARS_PER_TOKEN)
    if prompt + cap <= context:
        return []
    fits = max(0, (context - cap) * CHARS_PER_TOKEN - rules)
    return [Finding("model", WARN, (
        f"a full prompt (CITEBOT_PROMPT_BUDGET_CHARS={settings.prompt_budget_chars}, about {prompt} tokens with the "
        f"rules) and the output cap ({cap} tokens) need more than the model's context of {context} tokens: set "
        f"CITEBOT_PROMPT_BUDGET_CHARS to about {fits}"
    ), {"prompt_tokens": prompt, "output_cap": cap, "context_tokens": context})]


# ---------------------------------------------------------------- Slack


async def check_slack(settings: Settings) -> list[Finding]:
    if not settings.slack_bot_token:
        return _without_slack(settings)
    slack = make_client(settings.slack_bot_token, settings.slack_api_url)
    try:
        identity = await check_bot_token(slack)
    except StartupError as exc:
        return [Finding("slack", FAIL, str(exc))]
    findings = [Finding("slack", OK, f"SLACK_BOT_TOKEN: signed in as @{identity.bot_name} ({identity.user_id}) "
                                     f"in {identity.team or '?'}")]
    try:
        if settings.socket_mode and settings.slack_app_token:
            await check_app_token(slack, settings.slack_app_token)
            findings.append(Finding("slack", OK, "SLACK_APP_TOKEN: Slack opens Socket Mode connections for it"))
        else:
            settings.require_web()
            findings.append(Finding("slack", OK, "HTTP mode: events are checked with SLACK_SIGNING_SECRET"))
    except (StartupError, ConfigError) as exc:
        findings.append(Finding("slack", FAIL, str(exc)))
    try:
        channel = await resolve_review_channel(slack, settings.review_channel, identity)
    except StartupError as exc:
        return [*findings, Finding("slack", FAIL, str(exc))]
    if channel is None:
        findings.append(Finding("slack", WARN, "no CITEBOT_REVIEW_CHANNEL: rejected drafts are kept, but no reviewer sees them"))
    else:
        findings.append(Finding("slack", OK, f"review channel {channel}"))
    if warning := missing_reviewers(settings):
        findings.append(Finding("slack", WARN, warning))
    return findings


def _without_slack(settings: Settings) -> list[Finding]:
    """Without a bot token nothing can be asked of Slack: each check that could not run, and what serve needs."""
    findings = [Finding("slack", WARN, "SLACK_BOT_TOKEN is not set: `citebot ask` works, serve and worker need it "
                                       "(docs/slack-app.md, steps 2 and 3)")]
    if settings.slack_app_token is None and not settings.slack_signing_secret:
        findings.append(Finding("slack", WARN, "SLACK_SIGNING_SECRET is not set either: serve over HTTP needs it "
                                               "(Socket Mode needs SLACK_APP_TOKEN instead)"))
    if settings.review_channel:
        findings.append(Finding("slack", WARN, f"not checked without a token: that the review channel "
                                               f"{settings.review_channel} exists and the bot is in it"))
    else:
        findings.append(Finding("slack", WARN, "CITEBOT_REVIEW_CHANNEL is not set: rejected drafts would reach no "
                                               "reviewer"))
    if not settings.reviewers:
        findings.append(Finding("slack", WARN, "CITEBOT_REVIEWERS is empty: nobody could decide a review card; list "
                                               "the reviewers' user IDs (U…)"))
    findings.append(Finding("slack", WARN, "not checked without a token: the token's scopes for the access checks ("
                                           + ", ".join(ACCESS_SCOPES) + ")"))
    return findings


# ---------------------------------------------------------------- who may read what

# The bot scopes the access checks need (bot.access): users.info, usergroups.*, conversations.members/.info.
ACCESS_SCOPES = ("users:read", "usergroups:read", "channels:read", "groups:read")


async def check_access(settings: Settings) -> list[Finding]:
    """Each collection's audience; with a Slack token, the scopes the checks need and the groups and
    channels the audiences name (an unknown one grants nobody access)."""
    try:
        accesses = read_access(current_generation(settings.index_dir))
    except (IndexNotFound, OSError, ValueError):
        accesses = {}
    findings = [Finding("access", FAIL if a.closed else OK, f"{name}: {_audience_line(a)}", {"collection": name})
                for name, a in sorted(accesses.items())]
    findings += _collection_file_problems(settings)
    if settings.slack_bot_token:
        findings += await _check_access_in_slack(settings, accesses)
        findings += await _shared_channel_history(settings, accesses)
    return findings


async def _shared_channel_history(settings: Settings, accesses: dict[str, Any]) -> list[Finding]:
    """A warn per channel shared with another organization whose history holds answers from collections without
    external: true (posted while it was internal). Redis out of reach is the redis check's finding, not this one's."""
    redis = connect(settings.redis, timeout=REDIS_TIMEOUT_S)
    try:
        found = [c for c in await restricted_in_shared_channels(redis, accesses) if c.answers]
    except (OSError, RedisError):
        return []
    finally:
        await redis.aclose()
    return [Finding("access", WARN, f"{line}: delete them in Slack or keep them (`citebot audit shared`)",
                    {"channel": shared.channel, "answers": [a.question_id for a in shared.answers]})
            for shared in found for line in shared_history_lines([shared])[:1]]


def _collection_file_problems(settings: Settings) -> list[Finding]:
    """The knowledge base's collection files as they are now, not as the live index was built: a file broken
    since is said before the next build closes its collection."""
    try:
        problems = collection_file_problems(settings.kb_dir)
    except OSError as exc:
        return [Finding("access", FAIL, f"cannot read the collection files of {settings.kb_dir}: {exc}")]
    return [Finding("access", FAIL, f"{settings.kb_dir / p.path}:{p.line}: {p.message}",
                    {"path": p.path, "line": p.line}) for p in problems]


def _audience_line(access: CollectionAccess) -> str:
    if access.closed:
        return "read by nobody: its collection file is invalid or misplaced (`citebot index` says why)"
    who = "every full member" if access.audience is None else _audience_names(access.audience)
    if access.also:
        who += "".join(f"; and only {_audience_names(a)}" for a in access.also)
    return f"{who}; guests {'yes' if access.guests else 'no'}; other organizations {'yes' if access.external else 'no'}"


def _audience_names(audience: Audience) -> str:
    return "; ".join(f"{kind} {', '.join(names)}" for kind, names in
                     (("groups", audience.groups), ("channels", audience.channels), ("users", audience.users)) if names)


async def _check_access_in_slack(settings: Settings, accesses: dict[str, Any]) -> list[Finding]:
    slack = make_client(settings.slack_bot_token, settings.slack_api_url)
    try:
        reply = await call(slack.auth_test(), "auth.test")
    except SlackError as exc:
        return [Finding("access", FAIL, f"cannot check the token's scopes: {exc}")]
    granted = granted_scopes(reply)
    findings = []
    if granted is None:
        findings.append(Finding("access", WARN, "Slack did not say the token's scopes; the access checks need "
                                                + ", ".join(ACCESS_SCOPES)))
    else:
        missing = [s for s in ACCESS_SCOPES if s not in granted]
        findings.append(Finding("access", FAIL, f"the token lacks {', '.join(missing)}: every question fails its access "
                                                "check; add them (manifest.yml) and reinstall the app")
                        if missing else Finding("access", OK, "the token has the scopes the access checks need"))
    try:
        findings += [Finding("access", FAIL, problem, {"collection": name})
                     for name, problem in await unknown_audience_names(slack, accesses)]
    except SlackError as exc:
        findings.append(Finding("access", FAIL, f"cannot check the audiences' groups and channels: {exc}"))
    return findings


# ---------------------------------------------------------------- Redis


async def check_redis(settings: Settings) -> Finding:
    target = settings.redis
    where = redis_location(target)
    mode = str(target.resolved_mode)
    tls = "TLS" if target.tls else "no TLS"
    # Without Slack, only serve and worker would need Redis, and they cannot run anyway.
    unusable = FAIL if settings.slack_bot_token else WARN
    redis = connect(target, timeout=REDIS_TIMEOUT_S)
    try:
        await redis.ping()
        version, server_cluster = await _server_facts(redis)
    except (OSError, RedisError) as exc:
        # redis-py's messages name host and port, never the password.
        return Finding("redis", unusable, f"cannot reach Redis at {where} ({mode}, {tls}): {exc}")
    finally:
        await redis.aclose()
    data = {"version": version, "mode": mode, "tls": target.tls}
    if tuple(int(part) for part in version.split(".")[:2] if part.isdigit()) < REDIS_MIN_VERSION:
        return Finding("redis", unusable, f"Redis {version} at {where}: citebot needs 6.2 or newer", data)
    if server_cluster and mode != "cluster":
        return Finding("redis", unusable, f"Redis {version} at {where} is a cluster node: set CITEBOT_REDIS_MODE=cluster "
                                          "(or name several nodes in CITEBOT_REDIS_URL)", data)
    return Finding("redis", OK, f"Redis {version} ({mode}, {tls}) at {where}", data)


async def _server_facts(redis) -> tuple[str, bool]:
    """The server's version, and whether it is a cluster node. A cluster client
    answers INFO per node: every node runs the same version in a healthy cluster."""
    info = await redis.info("server")
    if isinstance(info, dict) and "redis_version" not in info and info:
        info = next(iter(info.values()))
    version = str(info.get("redis_version", "0"))
    cluster_info = await redis.info("cluster")
    if isinstance(cluster_info, dict) and "cluster_enabled" not in cluster_info and cluster_info:
        cluster_info = next(iter(cluster_info.values()))
    return version, str(cluster_info.get("cluster_enabled", "0")) == "1"


# ---------------------------------------------------------------- the index


def check_index(settings: Settings) -> list[Finding]:
    try:
        embedder = make_embedder(settings)
    except ConfigError as exc:
        return [Finding("index", FAIL, f"embedder: {exc}")]
    embedder_name = embedder.name if embedder else None
    try:
        gen_dir = current_generation(settings.index_dir)
        check_generation(gen_dir)
    except IndexNotFound as exc:
        return [Finding("index", WARN, f"{exc} (`citebot ask` and the worker build it at start)")]
    manifest = read_manifest(gen_dir)
    entries = len(manifest["entries"])
    if not manifest.get("chunks"):
        return [Finding("index", FAIL, f"{gen_dir.name} in {settings.index_dir} holds no entries: no file of "
                                       f"{settings.kb_dir} could be indexed; questions get 'the knowledge base is "
                                       "not ready'"), *_unindexed_files(manifest)]
    vectors = model_of(gen_dir)
    data = {"generation": gen_dir.name, "entries": entries, "vectors": vectors, "embedder": embedder_name}
    findings = [Finding("index", OK, f"{gen_dir.name} in {settings.index_dir}: {entries} entries, "
                                     f"vectors of {vectors or 'no model'}; embedder {embedder_name or 'none (BM25 only)'}",
                        data)]
    if embedder_name and vectors != embedder_name:
        findings.append(Finding("index", WARN, f"the embedder is {embedder_name}, the index has vectors of "
                                               f"{vectors or 'no model'}: searches use BM25 alone until `citebot index`"))
    source = built_from(gen_dir)
    if source is not None and source != settings.kb_dir.resolve():
        findings.append(Finding("index", WARN, f"built from {source}, not from CITEBOT_KB_DIR ({settings.kb_dir})"))
    return findings + _vector_store(settings.index_dir) + _unindexed_files(manifest)


def _vector_store(index_dir: Path) -> list[Finding]:
    """The size of the vectors kept for the next builds (kb_index/vector_store.py), so that it is not a surprise."""
    found = store_size(index_dir)
    if found is None:
        return []
    size, count = found
    vectors = f"{count} vectors, " if count is not None else ""
    return [Finding("index", OK, f"vector store: {vectors}{size / 1e6:.1f} MB in {index_dir / STORE_FILE}",
                    {"bytes": size, "vectors": count})]


# A KB folder full of images would otherwise bury the other findings.
MAX_FILE_FINDINGS = 50


def _unindexed_files(manifest: dict) -> list[Finding]:
    """Each file the live index was built without, and why (as `citebot index` printed it); then the warnings.

    A file that could not be read is a warn; a file of a type the KB does not
    index is only listed (ok), so that nobody wonders why the bot never cites it.
    """
    files = manifest.get("not_indexed", [])
    findings = [
        Finding("index", WARN if f["error"] else OK, f"not indexed: {f['path']}: {f['reason']}",
                {"path": f["path"], "reason": f["reason"]})
        for f in files[:MAX_FILE_FINDINGS]
    ]
    if len(files) > MAX_FILE_FINDINGS:
        findings.append(Finding("index", WARN, f"… and {len(files) - MAX_FILE_FINDINGS} more files not indexed: "
                                               "`citebot index` lists them all"))
    findings += [Finding("index", WARN, f"warning: {w}") for w in manifest.get("warnings", [])[:MAX_FILE_FINDINGS]]
    return findings
