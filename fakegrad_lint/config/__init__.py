"""Configuration: settings from pyproject.toml and flags, and which files to check."""
