from __future__ import annotations

import logging

from evalsite.management.base import EvalsiteCommand
from evaluation.demo import demo_load


class Command(EvalsiteCommand):
    help = (
        "Load the demo: tenant demo/demo with the ClapNQ collection and its golden set, a dashboard user and an "
        "API key (both kept in the data directory so every start prints the same ones). Safe to run again."
    )
    operator_only = "the operator's: loads the demo tenant"

    def handle(self, *args, **options):
        # The task queue logs each job it is given ("Enqueued [evalsite] 1"); the steps say what happens instead.
        queue_log = logging.getLogger("django-q")
        level = queue_log.level
        queue_log.setLevel(logging.WARNING)
        try:
            password, secret = demo_load(say=self.stdout.write)
        finally:
            queue_log.setLevel(level)
        self.stdout.write(f"Dashboard login: demo / {password}")
        self.stdout.write(f"API key (cluster_id=demo, tenant_id=demo): {secret}")
