"""The RAG arena (MIRAGE-BENCH): pairwise battles between systems turned into ratings with intervals."""
