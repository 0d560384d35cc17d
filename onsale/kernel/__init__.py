"""The shared kernel every tier stands on: database access, problems, inputs, the time
format, settings, sessions, background tasks and the bounded HTTP server. It imports no
tier (docs/design.md, "Layers"; `make lint` enforces it)."""
