"""Framework plugins. Each lives in its own distribution; ``penstock.plugin.<name>`` resolves to it."""
