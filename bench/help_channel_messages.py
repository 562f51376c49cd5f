"""40 messages of a day in a company help channel (#ask-hr-and-it), labelled.

Written as people post them: questions with and without question marks,
thanks, chatter, statements and announcements, in English and German, Slack
markup and emoji as they come. `True`: the message asks something the bot
should try to answer; `False`: the bot must leave it alone. Written before the
filter's rules were tuned against it; bench/help_channel.py reads it.
"""

MESSAGES: list[tuple[str, bool]] = [
    # -- questions
    ("How many days of annual leave do I get per year?", True),
    ("Hi all, quick question: can I carry over unused vacation days into next year?", True),
    ("does anyone know how to reset my VPN password", True),
    ("Wie lange dauert die Probezeit bei uns?", True),
    ("Hallo zusammen, weiß jemand, wo ich die Reisekostenabrechnung einreiche", True),
    ("What's the per diem for a business trip to Munich?", True),
    ("Is the expense limit for client dinners per person or per table?", True),
    ("Kann ich mein Firmenhandy auch privat nutzen?", True),
    ("Where do I find the parental leave form? :pray:", True),
    ("how do I get access to the shared finance drive", True),
    ("Gibt es einen Zuschuss fürs Jobticket", True),
    ("Hey team, when is the deadline for submitting October expenses?", True),
    ("Can someone tell me who approves overtime in the Berlin office", True),
    ("Muss ich eine Krankmeldung schon ab dem ersten Tag einreichen?", True),
    ("I'm looking for the policy on working from abroad, e.g. two weeks from Spain", True),
    ("Do I need a manager's approval for a second monitor? Asking for the home office budget.", True),
    ("Welche Unterlagen brauche ich für die Elternzeit?", True),
    ("Quick one - are part-timers entitled to the same number of sick days?", True),
    ("My laptop keeps losing the wifi in the 3rd floor meeting rooms. Is there a known fix?", True),
    ("Wie viele Überstunden darf ich im Monat machen", True),
    # -- not questions
    ("Thanks a lot, that worked! :raised_hands:", False),
    ("Danke dir!", False),
    ("+1", False),
    ("lunch anyone? :pizza:", False),
    ("Reminder: please submit your timesheets by Friday 5pm.", False),
    ("I'll be out of office tomorrow, back on Monday.", False),
    ("nvm, found it in the handbook", False),
    ("Guten Morgen zusammen :sunny:", False),
    ("The printer on the 2nd floor is working again.", False),
    ("Wie besprochen habe ich das Formular an HR geschickt.", False),
    ("When I joined last year the onboarding took two weeks, now it is just three days.", False),
    ("ok cool", False),
    ("Have a nice weekend everyone!", False),
    ("FYI: the VPN maintenance window is tonight from 22:00 to 23:00 CET.", False),
    ("Super, vielen Dank für die schnelle Hilfe :pray:", False),
    ("Ich bin heute im Homeoffice, erreichbar über Slack.", False),
    ("<@U0HRLEAD> has joined the channel", False),
    ("Coffee break in 5? :coffee:", False),
    ("Great, the new expense tool is so much faster than the old one", False),
    ("Frohe Weihnachten und einen guten Rutsch!", False),
]
