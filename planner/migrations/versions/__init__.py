"""Numbered migrations, oldest first."""
