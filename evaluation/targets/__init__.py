"""Targets: the external systems a tenant already runs, evaluated like a built-in configuration.

- `kinds` (pure): the kinds of target; `definitions` (pure): what a target's definition may hold, checked
  within limits before it is stored or called;
- `callers` (pure): each kind of target called once per question, within its concurrency and rate limit;
- `secret_box` (pure): secret header values sealed at rest;
- `services`: targets created, changed and deleted (audited), their URLs checked against the egress policy.
"""
