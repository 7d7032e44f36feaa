"""Bundled plans (TOML), one per study; `boardlab list --presets` shows them."""
