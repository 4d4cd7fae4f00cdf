"""Query servers head to head over the protocol, with no CouchDB."""
