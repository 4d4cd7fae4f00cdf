"""Reports: tables, charts and the HTML page, from results files."""
