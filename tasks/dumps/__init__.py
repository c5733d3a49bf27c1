"""tasks.dumps: see its modules."""

from tasks.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "DocKind": "sources",
    "download": "download",
})
