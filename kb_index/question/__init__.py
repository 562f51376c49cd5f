"""The question as people write it, made fit to retrieve with.

People don't write in the KB's words. They greet, thank, sign off, mention
colleagues, paste links and emoji, and ask two things at once. Pure functions,
stdlib only, no I/O; one module per job:

- markup.py: Slack markup, links, URLs and emoji out (`strip_markup`);
- chatter.py: greetings, thanks, fillers and sign-offs out (`strip_chatter`);
- parts.py: a message that asks two things split into its questions (`split_question`);
- follow_up.py: a thread follow-up retrieved with the question before it (`retrieval_text`);
- words.py: what they share: phrase patterns, question words, content words, sentences.

strip_chatter(text) -> str
    Removes Slack markup (user / channel / special mentions; links together
    with their labels, since "this page" or "here" is no topic; bare URLs),
    emoji (shortcodes, unicode pictographs, ascii smileys) and greeting /
    thanks / sign-off / filler phrases in English and German. Phrases go only
    at the start of the message, at its end, or when they form a sentence of
    their own; words inside a question stay ("Thanks to the new policy, ..."
    and "How do I say thanks" are left alone). E-mail addresses stay, also
    from <mailto:...> links; so does the text of <!date^...|Feb 18>.
    Whitespace is collapsed. Never "" for a message with words: if everything
    was chatter ("Thanks! :pray:"), the markup-free text ("Thanks!") is
    returned; only a message of markup and emoji alone comes back empty.

split_question(text) -> list[str]
    The questions of a message that is already chatter-stripped. Splits at
    sentence ends between questions/requests ("A? B?"), at explicit
    connectives ("and also", "und außerdem", ", also", ", plus"), and at
    "and"/"und"/"sowie"/","/"or"/"oder" only when the left side is a question
    and the right side starts its own with a question word or auxiliary
    ("..., and can I carry them over?", "... und wie werden Überstunden
    vergütet?"; after "or" only a wh-word: "... or do I need to come in?" is
    one question). A part needs MIN_CONTENT_WORDS content words, or one in a
    complete question of its own ("Was ist die Kilometerpauschale?");
    otherwise it stays joined ("Teilzeit- und Vollzeitkräfte", "from home and
    from abroad", "... and what about interns?", "... and is it paid?").
    Statements ("I work part-time.") are context: they go with the next
    question. At most MAX_PARTS parts, the rest joins the last one. Split
    parts lose leading/trailing connectives and get the "?" of their sentence.
    One question -> [text], unchanged.

retrieval_text(question, history=()) -> str
    The text to retrieve with in a thread: the chatter-stripped question,
    preceded by the chatter-stripped previous question only when the current
    one is a follow-up: at most one content word ("und bei Teilzeit?", "what
    if I'm sick?"), a follow-up opening ("what about", "and for", "was ist
    mit") with at most three, or a pronoun pointing back ("Can I carry them
    over?") with at most two. Only one earlier question is used, the most
    recent one that isn't pure chatter ("thanks!"), itself chatter-stripped
    and clipped to HISTORY_CHARS, so an old greeting or essay cannot swamp
"""
