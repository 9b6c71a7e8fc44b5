"""CLI command groups. Each module here defines ``register(subparsers)``; ``workbench.cli``
discovers them, so a new command group is a new file and nothing else."""
