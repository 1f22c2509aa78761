"""The curators' admin: golden entries first, then the reference data around them, then the records the
system writes. One module per area; importing this package registers them all.

Every write made here that changes a golden entry, a document, a collection or an API key goes through the
services, which record it in the audit trail as "user:<username>", like the API's ("api-key:<prefix>") and
the commands' ("command:<name>"). Changelists load their related rows with list_select_related and their
counts with annotations, so a page costs the same number of queries whatever its length.
"""

from goldenset.admin import content, golden, records
from goldenset.admin.common import actor_for
from goldenset.admin.golden import AUDIT_TRAIL_LENGTH, TAG_CHOICES_LIMIT

__all__ = ["AUDIT_TRAIL_LENGTH", "TAG_CHOICES_LIMIT", "actor_for", "content", "golden", "records"]
