"""`python -m spherekit ...` is the same as the `spherekit` command."""

from .cli import main

raise SystemExit(main())
