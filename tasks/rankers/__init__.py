"""Rankers evaluated on CLIR collections, registered by name and imported lazily.

``bm25`` searches the target language's index; ``dense[:MODEL]`` is a
sentence-transformers bi-encoder; any ranker's top K can be re-scored by a
cross-encoder (``--rerank MODEL``).
"""
