"""Standing redrive policies: `policies` (defining them, audited), `matching` (which parked
messages each one will replay, kept in the due index), `scheduler` (the beat's tick that
replays what is due) and `tripping` (a policy whose replays keep coming back stops)."""
