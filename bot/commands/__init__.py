"""What every `citebot` command shares: its error and exit codes."""

from __future__ import annotations

from citebot_core.errors import Permanent

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class CliError(Permanent):
    """Ends a command with one line on stderr and an exit code."""

    def __init__(self, message: str, code: int = EXIT_FAILED):
        super().__init__(message)
        self.code = code


def snippet(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1].rsplit(" ", 1)[0] + " …"
