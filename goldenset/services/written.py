"""What one documents_upsert transaction has written so far (its counts, the ids its audit event samples), and
the planner statistics it keeps current on PostgreSQL as it grows."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.db import OperationalError, connection, transaction

from goldenset.models import Document, Page

logger = logging.getLogger(__name__)
STATISTICS_FROM = 20_000  # documents one transaction writes before (and each time they double) it ANALYZEs


@dataclass
class Written:
    """What documents_upsert wrote so far, summed over its batches; a sample of the ids for the audit."""

    received: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    pages_written: int = 0
    pages_deleted: int = 0
    created_ids: list[str] = field(default_factory=list)
    updated_ids: list[str] = field(default_factory=list)
    # documents written when the tables' statistics are next refreshed
    statistics_at: int = field(default_factory=lambda: STATISTICS_FROM)

    def refresh_statistics(self) -> None:
        """On PostgreSQL, ANALYZE the document and page tables once this transaction has written STATISTICS_FROM
        documents, and again each time that doubles. Otherwise each batch's lookup of its ids is planned on the
        statistics of the tables before the transaction (an empty collection's: the planner then reads every
        document the transaction wrote, for every batch, and an import of 8.8M documents slows to a crawl).
        ANALYZE counts the transaction's own rows, and the planner reads what it wrote within the transaction.
        Its lock (held to the end of the transaction, and taken by one ANALYZE at a time) is waited for 100 ms at
        most: another large import holding it is never waited on, and the refresh is tried again later."""
        written = self.created + self.updated
        if connection.vendor != "postgresql" or written < self.statistics_at:
            return
        tables = f"{Document._meta.db_table}, {Page._meta.db_table}"
        try:
            with (
                transaction.atomic(),
                connection.cursor() as cursor,
            ):  # a savepoint: a refusal changes nothing
                cursor.execute("SELECT current_setting('lock_timeout')")
                (previous,) = cursor.fetchone()
                cursor.execute("SELECT set_config('lock_timeout', '100ms', true)")
                cursor.execute(f"ANALYZE {tables}")
                cursor.execute("SELECT set_config('lock_timeout', %s, true)", [previous])
        except OperationalError as exc:  # the lock not granted in time
            logger.info("statistics of %s not refreshed at %s documents (%s)", tables, written, exc)
            self.statistics_at = written + STATISTICS_FROM
            return
        self.statistics_at = 2 * written

    def counts(self) -> dict[str, int]:
        return {
            "received": self.received,
            "created": self.created,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "pages_written": self.pages_written,
            "pages_deleted": self.pages_deleted,
        }
