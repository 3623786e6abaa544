"""The fleet console: server-rendered pages for DBAs (docs/console.md)."""
