"""Fixtures of the multimodal tests (helpers live in tests/mm/helpers.py)."""

from tests.mm.helpers import tokenizer  # noqa: F401  (a fixture)
