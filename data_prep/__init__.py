"""Declaration data for dragnet: a synthetic NACP-shaped generator (generate), the normaliser
(normalise) and streaming readers for JSON lines, JSON arrays and NACP dump directories (nacp)."""
