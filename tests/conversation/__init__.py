"""Tests of ``reasoning_stream.conversation``: one file per module of the package."""
