"""NATS wiring: stream and subject names, declarations, connection."""
