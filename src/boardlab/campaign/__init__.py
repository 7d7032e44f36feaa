"""Campaigns: plans and presets, the schedule, the runner and resume."""
