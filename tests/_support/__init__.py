"""Helpers shared by tests: where their data is, generated agent histories, a real redis-server,
and workers for multi-process tests."""
