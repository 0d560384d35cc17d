"""The authoritative core: inventory, holds, accounts, migrations."""
