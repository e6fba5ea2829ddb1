"""HTTP routes under /v1."""
