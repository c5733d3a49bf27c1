"""Rankers evaluated on CLIR collections, registered by name and imported lazily.

``bm25`` searches the target language's index; ``dense[@INDEX][:MODEL]`` is a
sentence-transformers bi-encoder, searched exactly or through a FAISS index;
any ranker's top K can be re-scored by a cross-encoder (``--rerank MODEL``).
Every model runs where the device policy (:mod:`tasks.placement`) puts it.
"""
