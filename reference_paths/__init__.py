"""Bundled reference paths (data files; regenerate with ``python reference_paths/make_paths.py``)."""
