from evalsite.audit.services import actor_command
from evalsite.management.base import EvalsiteCommand
from evalsite.tenancy.services import api_key_create, tenant_get_or_create


class Command(EvalsiteCommand):
    help = (
        "Create an API key for a tenant (creating the cluster and tenant when missing). "
        "The key is printed alone on the last line: the only time it is shown."
    )

    def add_arguments(self, parser):
        self.add_scope_arguments(parser, collection=False)
        parser.add_argument("--name", default="", help="A label to recognise the key by.")

    def handle(self, *args, **options):
        tenant = tenant_get_or_create(cluster_slug=options["cluster"], tenant_slug=options["tenant"])
        key, secret = api_key_create(tenant=tenant, name=options["name"], actor=actor_command("createapikey"))
        self.stdout.write(
            f"Created API key {key.prefix}… for {tenant} (store it now; it is not shown again):"
        )
        self.stdout.write(secret)
