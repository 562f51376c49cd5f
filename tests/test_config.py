"""Settings: defaults, validation with one-line errors, .env, Slack requirement."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import kb_index
from bot.config import BUNDLED_KB_DIR, ConfigError, Settings, load_settings, normalize_llm_url
from bot.models import AnswerMode


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    """No variable of the developer's shell, and no stray .env, may leak in."""
    for field in Settings.model_fields.values():
        monkeypatch.delenv(str(field.validation_alias), raising=False)
    monkeypatch.chdir(tmp_path)


def config_error(**env) -> str:
    with pytest.raises(ConfigError) as info:
        load_settings(env_file=None, **env)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_defaults_match_the_design_table():
    s = load_settings(env_file=None)
    assert s.slack_api_url == "https://slack.com/api/"
    assert s.redis_url == "redis://localhost:6379/0"
    assert s.index_dir == Path("./.citebot/index")
    assert s.language == "en"
    assert s.llm == "extractive"
    assert s.answer_mode is AnswerMode.CITATIONS
    assert s.top_k == 8
    assert s.prompt_budget_chars == 24_000
    assert s.max_question_chars == 4000
    assert s.reviewers == []
    assert s.review_channel is None and s.channels_file is None
    assert s.slack_bot_token is None


def test_default_kb_dir_is_the_bundled_sample_inside_kb_index():
    assert Path(kb_index.__file__).resolve().parent / "sample" == BUNDLED_KB_DIR
    assert Settings.model_fields["kb_dir"].default == BUNDLED_KB_DIR


def test_reads_environment_variables(monkeypatch):
    monkeypatch.setenv("CITEBOT_TOP_K", "3")
    monkeypatch.setenv("CITEBOT_LANGUAGE", "de")
    monkeypatch.setenv("CITEBOT_ANSWER_MODE", "claims")
    s = load_settings(env_file=None)
    assert (s.top_k, s.language, s.answer_mode) == (3, "de", AnswerMode.CLAIMS)


def test_reads_dotenv_file_and_environment_wins(monkeypatch, tmp_path):
    (tmp_path / ".env").write_text("CITEBOT_TOP_K=5\nCITEBOT_REVIEW_CHANNEL=C123\n")
    assert load_settings().top_k == 5
    monkeypatch.setenv("CITEBOT_TOP_K", "7")
    s = load_settings()
    assert (s.top_k, s.review_channel) == (7, "C123")


def test_empty_value_in_dotenv_means_unset(tmp_path):
    (tmp_path / ".env").write_text("CITEBOT_REVIEW_CHANNEL=\nCITEBOT_TOP_K=\n")
    s = load_settings()
    assert s.review_channel is None and s.top_k == 8


def test_invalid_integer_names_variable_in_one_line():
    assert config_error(CITEBOT_TOP_K="abc") == "CITEBOT_TOP_K: must be a positive integer (got 'abc')"


@pytest.mark.parametrize("value", ["0", "-3", "2.5"])
def test_non_positive_or_fractional_integers_fail(value):
    assert config_error(CITEBOT_PROMPT_BUDGET_CHARS=value).startswith("CITEBOT_PROMPT_BUDGET_CHARS: must be")


def test_invalid_value_from_environment_names_variable(monkeypatch):
    monkeypatch.setenv("CITEBOT_MAX_QUESTION_CHARS", "lots")
    assert config_error() == "CITEBOT_MAX_QUESTION_CHARS: must be a positive integer (got 'lots')"


def test_several_errors_stay_on_one_line():
    message = config_error(CITEBOT_TOP_K="x", CITEBOT_LANGUAGE="fr")
    assert "CITEBOT_TOP_K" in message and "CITEBOT_LANGUAGE" in message


def test_language_must_be_en_or_de():
    assert config_error(CITEBOT_LANGUAGE="fr") == "CITEBOT_LANGUAGE: must be one of en, de (got 'fr')"


def test_llm_backend_must_be_known():
    assert config_error(CITEBOT_LLM="gpt").startswith("CITEBOT_LLM: must be one of extractive, openai, ollama")


def test_answer_mode_must_be_known():
    assert config_error(CITEBOT_ANSWER_MODE="json").startswith("CITEBOT_ANSWER_MODE: must be one of")


@pytest.mark.parametrize(
    "given",
    ["http://localhost:8000", "http://localhost:8000/", "http://localhost:8000/v1", "http://localhost:8000/v1/"],
)
def test_llm_url_with_or_without_v1_becomes_the_server_root(given):
    s = load_settings(env_file=None, CITEBOT_LLM="openai", CITEBOT_LLM_URL=given, CITEBOT_LLM_MODEL="m")
    assert s.llm_url == "http://localhost:8000"


def test_llm_url_pasted_with_endpoint_path_becomes_root():
    assert normalize_llm_url("https://llm.example.com/v1/chat/completions") == "https://llm.example.com"
    assert normalize_llm_url("http://h:11434/api/chat") == "http://h:11434"


def test_llm_url_must_be_http():
    message = config_error(CITEBOT_LLM="openai", CITEBOT_LLM_URL="localhost:8000", CITEBOT_LLM_MODEL="m")
    assert message.startswith("CITEBOT_LLM_URL: must be an http:// or https:// URL")


def test_openai_backend_needs_url_and_model():
    assert config_error(CITEBOT_LLM="openai", CITEBOT_LLM_MODEL="m") == (
        "CITEBOT_LLM_URL: required when CITEBOT_LLM=openai"
    )
    assert config_error(CITEBOT_LLM="openai", CITEBOT_LLM_URL="http://h:8000") == (
        "CITEBOT_LLM_MODEL: required when CITEBOT_LLM=openai"
    )


def test_ollama_defaults_to_its_local_port():
    s = load_settings(env_file=None, CITEBOT_LLM="ollama", CITEBOT_LLM_MODEL="qwen3")
    assert s.llm_url == "http://localhost:11434"


def test_the_judge_is_auto_by_default_on_wherever_a_model_answers_and_llm_needs_one():
    extractive = load_settings(env_file=None)
    assert extractive.judge == "auto" and extractive.judge_kind == "off"
    model = load_settings(env_file=None, CITEBOT_LLM="ollama", CITEBOT_LLM_MODEL="qwen3")
    assert model.judge_kind == "llm"
    on = load_settings(env_file=None, CITEBOT_JUDGE="LLM", CITEBOT_LLM="ollama", CITEBOT_LLM_MODEL="qwen3")
    assert on.judge == "llm"
    off = load_settings(env_file=None, CITEBOT_JUDGE="off", CITEBOT_LLM="ollama", CITEBOT_LLM_MODEL="qwen3")
    assert off.judge_kind == "off"
    assert config_error(CITEBOT_JUDGE="model") == "CITEBOT_JUDGE: must be one of auto, off, llm, minicheck (got 'model')"
    assert config_error(CITEBOT_JUDGE="llm") == (
        "CITEBOT_JUDGE: llm needs a model to judge with (CITEBOT_LLM=openai or ollama)"
    )


def test_minicheck_runs_on_ollama_by_default_or_on_the_server_given():
    default = load_settings(env_file=None, CITEBOT_JUDGE="minicheck")
    assert (default.judge_kind, default.judge_llm, default.judge_url, default.judge_model) == (
        "minicheck", "ollama", "http://localhost:11434", "bespoke-minicheck")
    served = load_settings(env_file=None, CITEBOT_JUDGE="minicheck", CITEBOT_JUDGE_LLM="openai",
                           CITEBOT_JUDGE_URL="http://judge:8000/v1", CITEBOT_JUDGE_MODEL="minicheck-7b")
    assert (served.judge_url, served.judge_model) == ("http://judge:8000", "minicheck-7b")
    assert config_error(CITEBOT_JUDGE="minicheck", CITEBOT_JUDGE_LLM="openai") == (
        "CITEBOT_JUDGE_URL: required when CITEBOT_JUDGE=minicheck and CITEBOT_JUDGE_LLM=openai")


def test_llm_timeout_must_be_positive():
    assert config_error(CITEBOT_LLM_TIMEOUT="0").startswith("CITEBOT_LLM_TIMEOUT: must be a positive number")
    assert load_settings(env_file=None, CITEBOT_LLM_TIMEOUT="2.5").llm_timeout == 2.5


def test_reviewers_are_a_comma_list(monkeypatch):
    monkeypatch.setenv("CITEBOT_REVIEWERS", "U111, U222,,U333 ")
    assert load_settings(env_file=None).reviewers == ["U111", "U222", "U333"]


def test_kb_dir_must_exist(tmp_path):
    missing = tmp_path / "nope"
    assert config_error(CITEBOT_KB_DIR=str(missing)) == f"CITEBOT_KB_DIR: is not a directory (got '{missing}')"
    assert load_settings(env_file=None, CITEBOT_KB_DIR=str(tmp_path)).kb_dir == tmp_path


def test_channels_file_must_exist(tmp_path):
    assert config_error(CITEBOT_CHANNELS_FILE=str(tmp_path / "c.yml")).startswith(
        "CITEBOT_CHANNELS_FILE: file not found"
    )


def test_redis_url_needs_redis_scheme():
    assert config_error(CITEBOT_REDIS_URL="localhost:6379").startswith("CITEBOT_REDIS_URL: must be a redis://")


def test_slack_api_url_gets_trailing_slash():
    s = load_settings(env_file=None, CITEBOT_SLACK_API_URL="http://127.0.0.1:9999/api")
    assert s.slack_api_url == "http://127.0.0.1:9999/api/"


def test_slack_is_optional_until_required():
    s = load_settings(env_file=None)
    with pytest.raises(ConfigError, match=r"^SLACK_BOT_TOKEN: required for serve and worker"):
        s.require_bot_token()
    with pytest.raises(ConfigError, match=r"^SLACK_BOT_TOKEN: required for serve and worker"):
        s.require_web()


def test_serve_in_http_mode_names_the_missing_signing_secret():
    s = load_settings(env_file=None, SLACK_BOT_TOKEN="xoxb-1")
    with pytest.raises(ConfigError, match=r"^SLACK_SIGNING_SECRET: required for serve in HTTP mode"):
        s.require_web()


def test_the_worker_and_socket_mode_need_no_signing_secret():
    worker = load_settings(env_file=None, SLACK_BOT_TOKEN="xoxb-1")
    assert worker.require_bot_token() == "xoxb-1"
    socket = load_settings(env_file=None, SLACK_BOT_TOKEN="xoxb-1", SLACK_APP_TOKEN="xapp-1")
    assert socket.socket_mode is True
    assert socket.require_web() == ("xoxb-1", None)


def test_http_mode_returns_both_credentials():
    s = load_settings(env_file=None, SLACK_BOT_TOKEN="xoxb-1", SLACK_SIGNING_SECRET="sec")
    assert s.require_web() == ("xoxb-1", "sec")
    assert s.socket_mode is False


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("SLACK_BOT_TOKEN", "xapp-1-A1-2-abc", r"^SLACK_BOT_TOKEN: must start with xoxb- \(this is an app-level token;"),
        ("SLACK_BOT_TOKEN", "xoxp-1-2", r"^SLACK_BOT_TOKEN: must start with xoxb- \(this is a user token;"),
        ("SLACK_BOT_TOKEN", "8f14e45fceea167a", r"^SLACK_BOT_TOKEN: must start with xoxb- \(this is not a Slack token;"),
        ("SLACK_APP_TOKEN", "xoxb-1-2-abc", r"^SLACK_APP_TOKEN: must start with xapp- \(this is a bot token;"),
    ],
)
def test_a_token_of_the_wrong_kind_is_refused_with_where_to_find_the_right_one(name, value, expected):
    message = config_error(**{name: value})
    assert re.match(expected, message), message
    assert value not in message  # a token never reaches a log line, even a wrong one


def test_rotating_tokens_keep_their_kind():
    s = load_settings(env_file=None, SLACK_BOT_TOKEN="xoxe.xoxb-1-abc", SLACK_APP_TOKEN=" xapp-1-A1 ")
    assert s.slack_bot_token == "xoxe.xoxb-1-abc"
    assert s.slack_app_token == "xapp-1-A1"


def test_secrets_stay_out_of_repr():
    s = load_settings(env_file=None, SLACK_BOT_TOKEN="xoxb-secret", CITEBOT_LLM_API_KEY="sk-secret")
    assert "secret" not in repr(s)


def test_fields_can_be_set_by_name_in_code():
    assert Settings(top_k=2, _env_file=None).top_k == 2


def test_how_long_an_asker_may_wait_is_in_seconds_with_one_line_errors():
    s = load_settings(env_file=None)
    assert (s.llm_max_retry_after_s, s.question_budget_s) == (30.0, 120.0)
    assert config_error(CITEBOT_QUESTION_BUDGET_S="0") == "CITEBOT_QUESTION_BUDGET_S: must be a positive number of seconds (got '0')"
    assert config_error(CITEBOT_QUESTION_BUDGET_S="two minutes").startswith("CITEBOT_QUESTION_BUDGET_S: must be a positive")
    assert config_error(CITEBOT_LLM_MAX_RETRY_AFTER_S="-1").startswith(
        "CITEBOT_LLM_MAX_RETRY_AFTER_S: must be a number of seconds, 0 or more"
    )
    # 0: a model's Retry-After is never waited out.
    assert load_settings(env_file=None, CITEBOT_LLM_MAX_RETRY_AFTER_S="0").llm_max_retry_after_s == 0.0
