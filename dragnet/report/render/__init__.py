"""Renderers of the report model (dragnet.report.model.Report): console, Markdown, CSV, JSON, HTML, PNG."""
