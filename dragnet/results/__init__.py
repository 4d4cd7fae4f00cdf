"""Results files: the schema, the reader and writer, the store, comparison and history."""
