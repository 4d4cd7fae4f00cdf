"""dragnet: measure how fast CouchDB builds views, on which query server, and at what cost."""

__version__ = "0.1.0"
