"""Runners: `bench`, `bench --gate` and `qsbench` as one library call each; they run the lower stages and hand
what they ran to `report` for the model a renderer prints."""
