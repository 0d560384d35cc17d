"""web tier (see docs/architecture.md); built out by later issues."""
