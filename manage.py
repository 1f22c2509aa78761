#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        settings.SECRET_KEY  # noqa: B018  (reads the environment: a bad setting is one line, exit 2)
    except ImproperlyConfigured as exc:
        sys.stderr.write(f"evalsite: configuration error: {exc}\n")
        sys.exit(2)
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
