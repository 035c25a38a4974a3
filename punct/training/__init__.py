"""What every training loop shares: seeding, AMP, DDP setup, loader options, checkpoints and resume; held-out parts
(dev, test) drawn by a share of the hours (:mod:`~punct.training.heldout`)."""
