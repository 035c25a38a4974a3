"""Pieces shared by the command-line entry points in punct/bin."""

import argparse


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Shows defaults and keeps the layout of the module docstring."""
