"""Adapters over the same findings and fixes: flake8, Fixit, LibCST codemod."""
