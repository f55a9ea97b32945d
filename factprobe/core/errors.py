"""The one exception type a user ever sees as a message rather than a traceback."""


class UserError(Exception):
    """Bad input or an unusable service: the CLI prints the message on one line and exits 2.

    The message says what is wrong and what to do about it. Never put a secret in it.
    """
