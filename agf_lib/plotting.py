"""Plotting helpers (filled below)."""
