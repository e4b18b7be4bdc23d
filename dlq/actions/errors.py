"""How an action refuses: the errors every action raises and the API and the pages answer
(400 field by field, 404, 409)."""


class ActionError(Exception):
    """Bad input: field-by-field errors (HTTP 400)."""

    status = 400

    def __init__(self, errors: dict[str, list[str]] | str):
        self.errors = errors if isinstance(errors, dict) else {"detail": [errors]}
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in self.errors.items()))


class Conflict(ActionError):
    """The message's status does not allow the action (HTTP 409)."""

    status = 409


class NotFound(ActionError):
    status = 404


class DrainedRoute(ActionError):
    """A replay's route reaches a queue the console drains itself (HTTP 400 on `target`);
    the pages offer the override for it (dlq/actions/routes.py)."""
