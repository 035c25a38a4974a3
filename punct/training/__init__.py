"""What every training loop shares: seeding, AMP, DDP setup, loader options, checkpoints and resume."""
