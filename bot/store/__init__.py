"""What citebot keeps in Redis besides the queue: key names, post, answer and review records, the audit trail."""
