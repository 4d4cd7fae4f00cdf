"""Data into CouchDB: import with every record accounted for, and samples of a live database."""
