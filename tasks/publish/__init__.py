"""Publishing a benchmark (or a recipe's own kind of dataset, such as a CLIR collection): a Hugging Face dataset
folder with its card and Croissant metadata, written from the warehouse (``babelbench publish``), and the upload
to the hub."""

from tasks.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "Published": "folder",
    "publish": "folder",
    "push_folder": "hub",
})
