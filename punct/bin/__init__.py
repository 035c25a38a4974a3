"""Command-line entry points, one per recipe step: ``python -m punct.bin.<name> --help``."""
