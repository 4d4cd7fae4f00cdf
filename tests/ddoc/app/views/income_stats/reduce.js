_stats
