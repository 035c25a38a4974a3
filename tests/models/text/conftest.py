"""Fixtures of the text-branch tests (helpers in tests/helpers/text_model.py)."""

from tests.helpers.text_model import tiny_encoder, tiny_tokenizer  # noqa: F401  (fixtures)
