"""Errors that end a dragnet command with a one-line message and a non-zero exit code."""


class DragnetError(Exception):
    """A failure the user can act on; str() is the one-line message."""

    exit_code = 1


class UsageError(DragnetError):
    """Bad arguments or input given by the user."""

    exit_code = 2
