"""Helpers shared by test modules (fixtures stay in conftest.py)."""
