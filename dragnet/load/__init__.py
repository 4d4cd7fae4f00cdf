"""Application load beside a build: requests at fixed rates (`spec`, pure; `generator`, HTTP), the index's lag."""
