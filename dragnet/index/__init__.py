"""One index build: views and design documents, the addview benchmark, rows and their comparison."""
