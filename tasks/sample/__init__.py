"""tasks.sample: see its modules."""

from tasks.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "build_sample_mirror": "mirror",
    "load_questions": "xrag_sample",
    "write_xrag_sample": "xrag_sample",
})
