from __future__ import annotations

from evalsite.management.base import EvalsiteCommand
from evaluation.demo import demo_load


class Command(EvalsiteCommand):
    help = (
        "Load the demo: tenant demo/demo with the ClapNQ collection and its golden set, a dashboard user and an "
        "API key (both kept in the data directory so every start prints the same ones). Safe to run again."
    )

    def handle(self, *args, **options):
        password, secret = demo_load(say=self.stdout.write)
        self.stdout.write(f"Dashboard login: demo / {password}")
        self.stdout.write(f"API key (cluster_id=demo, tenant_id=demo): {secret}")
