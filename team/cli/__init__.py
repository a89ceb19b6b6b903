"""The thin CLI over the library."""
