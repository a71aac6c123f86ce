"""Helpers shared by tests: a real redis-server, and workers for multi-process tests."""
