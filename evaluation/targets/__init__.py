"""Targets: the external systems a tenant already runs, evaluated like a built-in configuration.

- `callers` (pure): each kind of target called once per question, within its concurrency and rate limit;
- `secret_box` (pure): secret header values sealed at rest;
- `services`: targets created, changed and deleted (audited), their URLs checked against the egress policy.
"""
