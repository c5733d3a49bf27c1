"""Per-response heuristic features (MIRAGE-BENCH): a registry by name; each feature its own stage cell."""
