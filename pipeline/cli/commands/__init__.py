"""One module per vramlab command: ``register(sub)`` adds its parser, ``cmd_*`` runs it."""
