"""Measuring a build: the _active_tasks poller, sysstat (pidstat, iostat), statistics and the machine."""
