"""team: several named Claude agents working together on one machine."""

__version__ = "0.1.0"
