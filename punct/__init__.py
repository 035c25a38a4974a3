"""punct: speech-informed punctuation restoration recipes (EfficientPunct, SCL, speech-informed ITN)."""

__version__ = "0.1.0"
