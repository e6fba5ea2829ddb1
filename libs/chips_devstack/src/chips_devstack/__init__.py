"""Running Chips on one machine (``make up``) and in the end-to-end tests."""
