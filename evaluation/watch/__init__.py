"""Quality watched over time: schedules that evaluate a collection's golden set on a cadence, exactly once per
tick whatever the workers (`schedules.py`, cadences in `cadence.py`, pure), their gates (`gate.py`, pure), the
alerts a failing gate fires and resolves, told to webhooks and e-mail with every attempt recorded (`alerts.py`),
and the heartbeat's tick that drives them (`ticks.py`). It stands over retrieval, runs, targets and reports."""
