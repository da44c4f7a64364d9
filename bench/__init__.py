"""Latency benchmark of the realtime voice engine (not part of the test suite)."""
