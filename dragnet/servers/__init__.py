"""Query servers: the registry, registration with CouchDB, native builds and the line protocol."""
