"""`citebot access --user U… [--channel C…]`: which collections that person may read there, and why.

The same rules and Slack calls as the worker (bot.access), on the live index's collections: without
--channel, what the person's DM, assistant panel and /citebot replies may draw on; with it, also what an
answer posted in that channel may draw on (every member's access, and external: true where another
organization reads), and who or what keeps a collection out.
"""

from __future__ import annotations

from typing import Any

from bot.access.policy import may_read, readable
from bot.access.resolver import AccessResolver, AccessUnavailable
from bot.access.scope import Accesses
from bot.commands import EXIT_OK, CliError
from bot.commands.shared import with_redis
from bot.config import Settings
from bot.slack.calls import make_client
from bot.terminal import echo, json_text
from kb_index.index import IndexNotFound


def cmd_access(args, settings: Settings) -> int:
    try:
        report = with_redis(settings, lambda redis: access_report(settings, redis, args.user, args.channel))
    except AccessUnavailable as exc:
        raise CliError(f"Slack did not say who may read what: {exc}") from None
    except IndexNotFound as exc:
        raise CliError(str(exc)) from None
    if args.json:
        print(json_text(report, indent=1))
        return EXIT_OK
    where = f" in {args.channel}" if args.channel else ""
    echo(f"{args.user} ({report['kind']}){where}:", newlines=False)
    width = max([16, *(len(row["collection"]) for row in report["collections"])])  # a synced part's name is long
    for row in report["collections"]:
        own = "reads" if row["reads"] else "no"
        line = f"  {row['collection']:<{width}} {own:<5} {row['why']}"
        if args.channel:
            line += f"  | posted here: {'yes' if row['in_channel'] else 'no'}"
            if row.get("channel_why"):
                line += f" ({row['channel_why']})"
        echo(line, newlines=False)
    return EXIT_OK


async def access_report(settings: Settings, redis: Any, user: str, channel: str | None) -> dict[str, Any]:
    slack = make_client(settings.require_bot_token(), settings.slack_api_url)
    resolver = AccessResolver(slack, redis)
    accesses = Accesses(settings.index_dir).current()
    person = await resolver.person(user)
    directory = await resolver.directory(accesses)
    decisions = readable(person, accesses, directory)
    rows: list[dict[str, Any]] = [{"collection": name, "reads": d.allowed, "why": d.why} for name, d in decisions.items()]
    if channel:
        kind = await resolver.channel(channel)
        members = await resolver.channel_members(channel)
        people = [p for p in await resolver.people(sorted(members)) if p.kind.value != "bot"]
        for row in rows:
            access = accesses[row["collection"]]
            why = None
            if not row["reads"]:
                why = "the asker may not read it"
            elif kind.shared_externally and not access.external:
                why = "shared with another organization, and the collection is not external: true"
            elif not members:
                why = "no member of the channel is known"
            else:
                blocked = next((p for p in people if not may_read(p, access, directory).allowed), None)
                if blocked is not None:
                    why = f"{blocked.id} may not read it: {may_read(blocked, access, directory).why}"
            row.update(in_channel=why is None, channel_why=why)
    return {"user": user, "kind": person.kind.value, "channel": channel, "collections": rows}


