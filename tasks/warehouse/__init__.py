"""tasks.warehouse: see its modules."""

from tasks.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "WAREHOUSE_ENV": "location",
    "Warehouse": "db",
    "cli_prefix": "db",
    "copy_target": "location",
    "copy_warehouse": "copy",
    "parse_location": "location",
    "snapshot_label": "db",
})
