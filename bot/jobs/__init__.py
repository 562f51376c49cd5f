"""The Redis job queue between the web process and the workers, and the jobs the workers run."""
