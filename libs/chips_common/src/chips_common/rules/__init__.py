"""Pure rule functions shared by the eventlog and the gateway (no I/O here)."""
