"""onsale command line and composition root."""
