"""Scores of benchmark runs: ranking metrics per query, and bootstrap intervals over queries."""
