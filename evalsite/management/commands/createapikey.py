from django.contrib.auth import get_user_model

from evalsite.audit.services import actor_command
from evalsite.errors import NotFound
from evalsite.management.base import EvalsiteCommand
from evalsite.tenancy.access import needs
from evalsite.tenancy.roles import ROLE_DESCRIPTIONS, Perm, Role
from evalsite.tenancy.services import KEY_MAX_DAYS, api_key_create, key_expiry, tenant_get_or_create


class Command(EvalsiteCommand):
    help = (
        "Create an API key for a tenant (creating the cluster and tenant when missing), with its role and, for a "
        "person's key, its person. The key is printed alone on the last line: the only time it is shown."
    )
    required_permissions = needs(Perm.ADMINISTER)

    def add_arguments(self, parser):
        self.add_scope_arguments(parser, collection=False)
        parser.add_argument(
            "--role",
            required=True,
            choices=[role.value for role in Role],
            help="What the key may do: "
            + "; ".join(f"{role.value}: {ROLE_DESCRIPTIONS[role]}" for role in Role)
            + " (docs/teams.md).",
        )
        parser.add_argument(
            "--user",
            default=None,
            metavar="USERNAME",
            help="The person behind the key (a member of the tenant holding at least the key's role); the "
            "audit trail names them. Leave out for a machine's key (a CI job).",
        )
        parser.add_argument("--name", default="", help="A label to recognise the key by.")
        parser.add_argument(
            "--expires",
            type=int,
            default=None,
            metavar="DAYS",
            help=f"Refuse the key DAYS days from now (1-{KEY_MAX_DAYS}); by default it never expires.",
        )

    def handle(self, *args, **options):
        expires_at = key_expiry(options["expires"], field="--expires")
        user = None
        if options["user"] is not None:
            user = get_user_model().objects.filter(username=options["user"]).first()
            if user is None:
                raise NotFound("User", options["user"])
        # A person's key is for a tenant they are a member of, so it exists; a machine's key may start one.
        tenant = (
            self.tenant(options)
            if user is not None
            else tenant_get_or_create(cluster_slug=options["cluster"], tenant_slug=options["tenant"])
        )
        key, secret = api_key_create(
            tenant=tenant,
            role=options["role"],
            name=options["name"],
            user=user,
            expires_at=expires_at,
            actor=actor_command("createapikey"),
        )
        person = f", person {user.get_username()}" if user else ""
        until = f", expires {key.expires_at:%Y-%m-%d %H:%M} UTC" if key.expires_at else ""
        self.stdout.write(
            f"Created {key.role} API key {key.prefix}… for {tenant}{person}{until} "
            "(store it now; it is not shown again):"
        )
        self.stdout.write(secret)
