"""Service lifecycle: logging, health endpoints, graceful shutdown."""
