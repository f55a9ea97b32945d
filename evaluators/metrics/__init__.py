"""Metrics: small pure functions over outputs tables (see each function's doctest)."""
