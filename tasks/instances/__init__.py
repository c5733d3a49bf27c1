"""Benchmark instances per setting, and their JSON Lines export."""

from tasks.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "InstanceConfig": "build",
    "export_instances": "export",
})
