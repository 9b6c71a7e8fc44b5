"""Persistence: SQLModel tables and repository functions (SQLite by default)."""
