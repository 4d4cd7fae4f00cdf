"""The CouchDB being measured: the HTTP client, the local and Docker backends, clusters, storage and limits."""
