"""The `nexus-gateway` command line."""
