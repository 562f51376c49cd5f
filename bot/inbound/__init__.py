"""What comes in from Slack: the web app and Socket Mode, the event and action listeners, /citebot and the
shortcuts, the assistant panel, help channels and the access events. Each turns a request into a job on the queue
(bot.inbound.intake) or a view; nothing here answers a question."""
