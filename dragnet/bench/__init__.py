"""The benchmark matrix: the plan and its runs, applying axis values, scenarios, size sweeps, Mango, whose fault a difference is."""
