"""Scaling benchmark: a stage probe (probe.py) and the per-hour fits and tables of its figures (growth.py)."""
