"""``babelbench publish --push REPO``: upload a published folder to the Hugging Face hub with huggingface-hub.

Only with a token (``HF_TOKEN``, or the one ``hf auth login`` stored): without one the push is refused before
anything is sent, saying how to give one.  The dataset repository is created when missing; the folder is uploaded
as one commit, so the hub shows the old dataset or the new one.  ``HF_ENDPOINT`` names another hub (a mirror).
"""

from __future__ import annotations

from pathlib import Path

from huggingface_hub import HfApi, get_token
from huggingface_hub.errors import HfHubHTTPError

from tasks.errors import BabelbenchError, ConfigError


def push_folder(folder: Path, repo: str, token: str | None = None) -> str:
    """Upload ``folder`` to the dataset repository ``repo``; returns the commit's URL."""
    token = token or get_token()
    if not token:
        raise ConfigError(f"--push {repo}: no Hugging Face token; set HF_TOKEN or run `hf auth login` (the folder is"
                          f" written at {folder})")
    api = HfApi(token=token, library_name="babelbench")
    try:
        api.create_repo(repo, repo_type="dataset", exist_ok=True)
        commit = api.upload_folder(repo_id=repo, folder_path=folder, repo_type="dataset",
                                   commit_message=f"babelbench publish {folder.name}")
    except HfHubHTTPError as exc:
        raise BabelbenchError(f"--push {repo}: the hub refused the upload: {exc}") from exc
    return str(commit.commit_url)
