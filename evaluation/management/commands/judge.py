"""`manage.py judge`: a pool's documents judged by a chat model as a relevance assessor
(evaluation.judgments.assess), stored beside people's judgments as rater `llm-relevance:<model>`.

    manage.py judge --cluster C --tenant T --collection X --pool POOL_ID [--model M] [--samples 1]
    manage.py judge --cluster C --tenant T --collection X --pool POOL_ID --assessor lexical

The model is EVALSITE_LLM_MODEL unless --model names one; the endpoint is EVALSITE_LLM_BASE_URL. Items it judged
already are skipped. Prints what it judged, what it could not read and which calls failed; no endpoint, or an
unknown pool, exits 2 saying why.
"""

from django.conf import settings

from evalsite.errors import EvalsiteError, NotFound
from evalsite.llm.client import ChatClient
from evalsite.tenancy.access import needs
from evalsite.tenancy.roles import Perm
from evaluation.judgments.assess import pool_assess, pool_assess_lexical
from evaluation.judgments.pools import pool_get
from goldenset.management.base import CollectionCommand


class Command(CollectionCommand):
    help = "Judge a pool's documents with a chat model (UMBRELA-style prompt, versioned), beside people's grades."
    required_permissions = needs(Perm.CURATE)

    def add_arguments(self, parser):
        self.add_scope_arguments(parser)
        parser.add_argument("--pool", required=True, help="The pool's id.")
        parser.add_argument(
            "--assessor", choices=["llm", "lexical"], default="llm",
            help="llm (default): the chat model; lexical: the keyless word-overlap assessor, a weak fallback.",
        )  # fmt: skip
        parser.add_argument("--model", help="Default: EVALSITE_LLM_MODEL.")
        parser.add_argument(
            "--samples", type=int, default=1, help="Answers asked per document; their majority."
        )

    def handle(self, *args, **options):
        collection = self.collection(options)
        pool = pool_get(tenant=collection.tenant, pool_id=options["pool"])
        if pool.collection_id != collection.pk:  # another collection's pool is none of this one's
            raise NotFound("Pool", options["pool"])
        if options["assessor"] == "lexical":
            result = pool_assess_lexical(pool=pool, actor="command:judge")
        else:
            model = options["model"] or settings.EVALSITE_LLM_MODEL
            if not model:
                raise EvalsiteError(
                    "validation-error", "--model: name the model (or set EVALSITE_LLM_MODEL)."
                )
            with ChatClient.from_settings() as client:
                result = pool_assess(
                    pool=pool, client=client, model=model, samples=options["samples"], actor="command:judge"
                )
        grades = ", ".join(f"{grade}: {n}" for grade, n in result["grades"].items()) or "none"
        self.stdout.write(
            f"pool {pool.pk}: {result['judged']} of {result['items']} documents judged by {result['rater']} "
            f"({result['prompt_version']}, {result['samples']} sample(s) each; grades {grades}); "
            f"{result['unreadable']} unreadable, {result['failed']} failed calls, {result['gone']} gone; "
            f"{result['judged_before']} judged before"
        )
