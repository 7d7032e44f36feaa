"""Monitoring of every run: a sampler thread that reads the board through the platform layer."""
