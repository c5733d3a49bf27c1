"""tasks.warehouse: see its modules."""

from tasks.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "Warehouse": "db",
})
