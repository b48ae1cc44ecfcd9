"""Fixes: builders (facts -> edits), proof (a fix is offered only when proved), apply (the fix loop)."""
