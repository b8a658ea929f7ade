"""The arena's tables: each module owns its tables' SQL (SQLite or PostgreSQL through the shared Store)."""
