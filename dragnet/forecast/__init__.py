"""How long a full rebuild takes and how much disk it needs: the fit, the sweep that feeds it, its chart."""
