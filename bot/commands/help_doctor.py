"""`citebot doctor`'s help-channel lines: which channels answer without a mention, that the bot is in
them (else it never sees their messages), and that every `escalate_to` names a user group or person
Slack knows (else a hand-over mentions nobody).

Only with a channels file that sets `answer: questions` or `escalate_to`, and a bot token: without
them there is nothing to check. A Slack error (a missing scope) is a warning that says which scope.
"""

from __future__ import annotations

from typing import Any

from bot.channels import ChannelPolicy, ChannelsConfig, load_channels
from bot.commands.finding import FAIL, OK, WARN, Finding
from bot.config import Settings
from bot.slack.calls import SlackError, call, make_client

CHECK = "help"


async def check_help_channels(settings: Settings) -> list[Finding]:
    if not settings.slack_bot_token or settings.channels_file is None:
        return []
    channels = load_channels(settings.channels_file)
    policies = _named_policies(channels)
    if not any(p.answers_questions or p.escalate_to for _, p in policies):
        return []
    slack = make_client(settings.slack_bot_token, settings.slack_api_url)
    findings: list[Finding] = []
    groups: set[str] | None = None
    for name, policy in policies:
        if policy.answers_questions:
            cap = f", at most {policy.max_per_hour} an hour" if policy.max_per_hour else ""
            if name.startswith("C") or name.startswith("G"):
                try:
                    info = (await call(slack.conversations_info(channel=name), "conversations.info"))["channel"]
                except SlackError as exc:
                    findings.append(Finding(CHECK, WARN, f"{name}: answers every question, but Slack cannot say "
                                                         f"whether the bot is in it: {exc.code}"))
                    continue
                if not info.get("is_member"):
                    findings.append(Finding(CHECK, WARN, f"#{info.get('name', '?')} ({name}) is set to answer every "
                                                         "question, but the bot is not a member: it never sees the "
                                                         "channel's messages; /invite @citebot there"))
                    continue
                findings.append(Finding(CHECK, OK, f"#{info.get('name', '?')} ({name}) answers every question "
                                                   f"without a mention{cap}"))
            elif name == "default":
                findings.append(Finding(CHECK, OK, f"every channel the bot is in and channels.yml does not list "
                                                   f"answers every question without a mention{cap}"))
        for target in policy.escalate_to:
            try:
                if target.startswith("S"):
                    if groups is None:
                        reply = await call(slack.usergroups_list(), "usergroups.list")
                        listed: list[dict[str, Any]] = reply.get("usergroups") or []
                        groups = {str(g.get("id")) for g in listed}
                    known = target in groups
                else:
                    await call(slack.users_info(user=target), "users.info")
                    known = True
            except SlackError as exc:
                if exc.code == "user_not_found":
                    known = False
                else:
                    scope = "usergroups:read" if target.startswith("S") else "users:read"
                    findings.append(Finding(CHECK, WARN, f"{name}: escalate_to {target} not checked: {exc.code} "
                                                         f"(the check needs the {scope} scope)"))
                    continue
            kind = "user group" if target.startswith("S") else "user"
            if known:
                findings.append(Finding(CHECK, OK, f"{name}: \"Still need help?\" hands over to the {kind} {target}"))
            else:
                findings.append(Finding(CHECK, FAIL, f"{name}: escalate_to names the {kind} {target}, which Slack "
                                                     "does not know: a hand-over would mention nobody"))
    return findings


def _named_policies(channels: ChannelsConfig) -> list[tuple[str, ChannelPolicy]]:
    named = [("default", channels.default)]
    if channels.dm is not None:
        named.append(("dm", channels.dm))
    return named + sorted(channels.channels.items())
