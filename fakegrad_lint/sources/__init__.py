"""Source kinds and text utilities: Python files (encodings, newlines), lazy parsing, notebooks."""
