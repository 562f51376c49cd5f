"""What citebot keeps in Redis besides the queue: key names, answer and review records, the audit trail."""
