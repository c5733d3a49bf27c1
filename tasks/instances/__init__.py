"""Benchmark instances per setting, and their JSON Lines export."""
