"""What a bench varies: the Axis model and one module per axis (CouchDB install, settings, cores, shards, design-doc revision)."""
