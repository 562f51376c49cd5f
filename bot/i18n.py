"""Every sentence the bot writes, in every language it speaks: one table, one lookup.

Three readers share the table: the asker (the bot's own messages and the notes
under an answer), the Slack interface (buttons, modal titles, card headings)
and the model (the prompt's rules, block labels and retry feedback, and the
entailment judge's instructions). A translation is one edit here, and the
refusal sentence the prompt asks the model for is the string the verifier
looks for: both read Key.REFUSAL.

One fallback rule: a language the bot does not speak gets English, whole
(`normalize_language`). Within a language every key is present (the tests check
it), so no single sentence ever falls back on its own.
"""

from __future__ import annotations

from enum import StrEnum

# The table has a column for each of these; tests/test_floor.py holds it to them.
from citebot_core.languages import LANGUAGES

DEFAULT_LANGUAGE = "en"


class Key(StrEnum):
    # -- the asker: the bot's own messages and the notes under an answer
    REFUSAL = "refusal"  # the KB has nothing on the question
    UNCERTAIN = "uncertain"  # a draft existed but could not be backed by the KB
    PARTIAL = "partial"  # only some statements of the answer could be verified
    NOT_COVERED = "not_covered"  # the answer says what the KB does not cover; the question goes to the gaps report
    NOT_JUDGED = "not_judged"  # CITEBOT_JUDGE=off: the statements were not checked against the sources
    TRUNCATED = "truncated"  # the question was cut to the maximum length
    EXTRACTIVE_LEAD = "extractive_lead"  # before the passages the extractive backend quotes: what they are
    EXTRACTIVE_NEAR = "extractive_near"  # before the nearest passages to a question retrieval judged near
    HELP = "help"  # an empty mention
    COMMAND_HELP = "command_help"  # an empty /citebot
    LOOKING_UP = "looking_up"  # /citebot acknowledged: the answer follows, to the asker alone
    SHARED_BY = "shared_by"  # under a /citebot answer its asker posted in the channel
    LLM_DOWN = "llm_down"  # the model failed past all retries, or took the question's whole time budget
    FAILED = "failed"  # anything else failed past all retries (never Slack: it cannot carry the news)
    KB_NOT_READY = "kb_not_ready"  # the index is missing or holds no entry: nothing can be answered yet
    ACCESS_UNCHECKED = "access_unchecked"  # Slack did not say who may read what, past all tries: nothing answered
    EXTERNAL_CHANNEL = "external_channel"  # a channel shared with another organization, with no collection for it
    MORE_IN_PRIVATE = "more_in_private"  # above the private answer to an asker who may read more than the channel
    BETTER_IN_PRIVATE = "better_in_private"  # the channel was answered, but what only the asker may read fits better
    ANSWER_PRIVATELY = "answer_privately"  # its button
    SOURCES_RESTRICTED = "sources_restricted"  # the Sources modal for someone who may not read them
    REVIEW_RESTRICTED = "review_restricted"  # a review card whose draft not every review channel member may read
    NOT_OPEN_TO_CHANNEL = "not_open_to_channel"  # "Post in channel": not everyone there may read its sources
    NOT_OPEN_TO_ASKER = "not_open_to_asker"  # a DM's or private question's asker may no longer read its sources
    REVIEWED_BY = "reviewed_by"  # a reviewer's answer posted into the asker's thread
    SOURCES = "sources"  # heading of the sources list, title of the Sources modal
    REVIEW_DISMISSED = "review_dismissed"  # a reviewer closed a rejected draft without an answer
    SOURCE_CHANGED = "source_changed"  # a cited entry changed after the answer was posted
    SOURCE_REMOVED = "source_removed"  # a cited entry left the knowledge base after the answer was posted
    SHORTENED = "shortened"  # an answer too long for Slack, cut
    SHORTENED_NO_SOURCES = "shortened_no_sources"
    MORE_SOURCES = "more_sources"  # the footnote list, cut
    # -- the Slack interface: buttons, modals, the review card
    HELPFUL = "helpful"
    # -- help channels (bot.helpdesk): the hand-over to people
    STILL_NEED_HELP = "still_need_help"  # the button under a reply where `escalate_to` is set
    HANDED_OVER = "handed_over"  # in the asker's thread: {asker}, {people}
    HANDED_OVER_DM = "handed_over_dm"  # to the asker in a DM or the panel: {people}
    HANDOVER_REQUEST = "handover_request"  # in the review channel, for a DM's question: {people}, {asker}
    HANDOVER_REVIEW_HEADING = "handover_review_heading"  # the card of a person's answer in a handed-over thread
    HANDOVER_REVIEW_NOTE = "handover_review_note"  # {people}, {helper}
    THEIR_ANSWER = "their_answer"
    HANDOVER_SAVED = "handover_saved"  # the decided card: {user}, {time}
    HANDOVER_DISMISSED = "handover_dismissed"
    POST_IN_CHANNEL = "post_in_channel"  # under a /citebot answer only its asker sees
    POSTED_IN_CHANNEL = "posted_in_channel"  # the asker's copy, once Post in channel has posted it
    OPEN_POST = "open_post"
    NOT_POSTED_IN_CHANNEL = "not_posted_in_channel"
    SHARE_REFUSED = "share_refused"  # "Post in channel" refused: to the clicker alone, with the reason
    NOT_YOURS_TO_POST = "not_yours_to_post"  # a reason: the clicker did not ask the question
    ANSWER_NOT_SHAREABLE = "answer_not_shareable"  # a reason: no such answer kept, or one given in a DM
    NOT_HELPFUL = "not_helpful"
    CLOSE = "close"
    CANCEL = "cancel"
    QUESTION = "question"
    PASSAGE_SHORTENED = "passage_shortened"
    MORE_PASSAGES = "more_passages"
    NO_PASSAGE = "no_passage"
    REVIEW_HEADING = "review_heading"
    FEEDBACK_HEADING = "feedback_heading"
    FEEDBACK_REASON = "feedback_reason"
    NO_REASON = "no_reason"
    FLAGGED_ANSWER = "flagged_answer"
    ASKED_BY = "asked_by"
    ASKED_BY_USER = "asked_by_user"
    ASKED_IN_DM = "asked_in_dm"
    FLAGGED_BY = "flagged_by"
    DECISION_FAILED = "decision_failed"  # to the reviewer whose decision Slack refused
    REJECTED_DRAFT = "rejected_draft"
    NO_DRAFT = "no_draft"
    VIOLATIONS = "violations"
    NO_VIOLATIONS = "no_violations"
    MORE_VIOLATIONS = "more_violations"
    RETRIEVED_SOURCES = "retrieved_sources"
    NO_SOURCES = "no_sources"
    APPROVE = "approve"
    WRITE_ANSWER = "write_answer"
    ANSWER_REQUIRED = "answer_required"  # the write-answer modal submitted empty
    DISMISS = "dismiss"
    APPROVED_BY = "approved_by"
    ANSWERED_BY = "answered_by"
    DISMISSED_BY = "dismissed_by"
    POSTED_ANSWER = "posted_answer"
    REVIEW_FALLBACK = "review_fallback"
    REVIEW_MODAL_TITLE = "review_modal_title"
    REVIEW_MODAL_SUBMIT = "review_modal_submit"
    YOUR_ANSWER = "your_answer"
    ANSWER_HINT = "answer_hint"
    ANSWER_PLACEHOLDER = "answer_placeholder"
    SAVE_DRAFT_LABEL = "save_draft_label"
    SAVE_DRAFT_OPTION = "save_draft_option"
    FEEDBACK_TITLE = "feedback_title"
    FEEDBACK_SUBMIT = "feedback_submit"
    FEEDBACK_LABEL = "feedback_label"
    FEEDBACK_PLACEHOLDER = "feedback_placeholder"
    # -- the Home tab (bot.home.view)
    HOME_HOW_TO_ASK = "home_how_to_ask"
    HOME_WHERE = "home_where"
    HOME_MY_QUESTIONS = "home_my_questions"
    HOME_NONE_YET = "home_none_yet"
    HOME_KB = "home_kb"
    HOME_INDEX = "home_index"
    HOME_NO_EMBEDDER = "home_no_embedder"
    HOME_REVIEWS = "home_reviews"
    HOME_NO_REVIEWS = "home_no_reviews"
    HOME_MORE_REVIEWS = "home_more_reviews"
    HOME_DM_QUESTION = "home_dm_question"
    HOME_OPEN_CARD = "home_open_card"
    HOME_NO_CARD = "home_no_card"
    HOME_NOT_POSTED = "home_not_posted"
    HOME_DECIDE_HERE = "home_decide_here"
    HOME_AGE = "home_age"
    HOME_GAPS = "home_gaps"
    HOME_NO_GAPS = "home_no_gaps"
    HOME_ANSWERED = "home_answered"
    HOME_UNCERTAIN = "home_uncertain"
    HOME_REFUSED = "home_refused"
    HOME_FAILED = "home_failed"
    HOME_PENDING = "home_pending"
    # -- the assistant panel (bot.inbound.assistant); statuses follow the app's name in Slack
    ASSISTANT_GREETING = "assistant_greeting"
    ASSISTANT_PROMPTS_TITLE = "assistant_prompts_title"
    ASSISTANT_PROMPT_COLLECTION = "assistant_prompt_collection"  # {collection}
    ASSISTANT_SEARCHING = "assistant_searching"
    ASSISTANT_CHECKING = "assistant_checking"
    # -- the model (bot.answer.prompt). Apart from the interface keys even where the
    # words agree today: a new label in the modal must not change what the model reads.
    PROMPT_RULES_CITATIONS = "prompt_rules_citations"  # {refusal}: Key.REFUSAL, word for word
    PROMPT_RULES_CLAIMS = "prompt_rules_claims"  # {max_claims}; JSON braces doubled for str.format
    PROMPT_BLOCKS = "prompt_blocks"
    PROMPT_TITLE = "prompt_title"
    PROMPT_SECTION = "prompt_section"
    PROMPT_LEGAL = "prompt_legal"
    PROMPT_XREF = "prompt_xref"
    PROMPT_HISTORY = "prompt_history"
    PROMPT_QUESTION = "prompt_question"
    PROMPT_RETRY_INTRO = "prompt_retry_intro"
    PROMPT_RETRY_OUTRO = "prompt_retry_outro"
    # -- the entailment judge (bot.answer.judge): its own words, so that a change to the
    # answer prompt never changes what the judge is asked, nor the reverse
    JUDGE_RULES = "judge_rules"  # {example}: the reply's JSON form; the verdict words stay English (JSON values)
    JUDGE_STATEMENTS = "judge_statements"
    JUDGE_CITES = "judge_cites"
    JUDGE_QUESTION = "judge_question"


_TEXT: dict[str, dict[Key, str]] = {
    "en": {
        Key.REFUSAL: "The knowledge base does not cover this question.",
        Key.UNCERTAIN: (
            "I'm not sure about this one: I could not back an answer with the knowledge base. "
            "A reviewer may follow up in this thread."
        ),
        Key.PARTIAL: "Partial answer: only the statements above could be verified against the knowledge base.",
        Key.NOT_JUDGED: (
            "Not verified: the statements of this answer were not checked against its sources; only its citations were."
        ),
        Key.NOT_COVERED: (
            "The knowledge base does not cover all of your question; the owners of the knowledge base "
            "have been told what is missing."
        ),
        Key.TRUNCATED: "Your question was longer than {limit} characters, so I answered its first {limit} characters.",
        Key.EXTRACTIVE_LEAD: "The passages of the knowledge base closest to your question:",
        Key.EXTRACTIVE_NEAR: (
            "The knowledge base may not answer this question as asked. The nearest it says is this:"
        ),
        Key.HELP: (
            "Ask me a question and I will answer it from the company knowledge base, "
            "with a source for every statement. For example: @citebot How many vacation days do I get?"
        ),
        Key.LLM_DOWN: (
            "Sorry, I can't answer right now: the language model is not responding. "
            "Your question has been recorded; please try again later."
        ),
        Key.KB_NOT_READY: (
            "The knowledge base is not ready yet: no document has been indexed so far. "
            "Please try again later; the operators have been told."
        ),
        Key.FAILED: (
            "Sorry, something went wrong while answering your question. "
            "It has been recorded; please try again later."
        ),
        Key.ACCESS_UNCHECKED: (
            "Sorry, I could not check which parts of the knowledge base you may read here, so I did not answer. "
            "Please try again later."
        ),
        Key.EXTERNAL_CHANNEL: (
            "I don't answer in this channel: it is shared with another organization, and no part of the "
            "knowledge base is meant for people outside the company. Ask me in a direct message instead."
        ),
        Key.MORE_IN_PRIVATE: (
            "Only you see this: in this channel I answer only from what everyone in it may read, and you may "
            "read more. From that:"
        ),
        Key.BETTER_IN_PRIVATE: (
            "Only you see this: I answered here from what everyone in this channel may read, but something only "
            "you may read here may answer it better."
        ),
        Key.ANSWER_PRIVATELY: "Answer privately",
        Key.SOURCES_RESTRICTED: "These sources are not open to you, so they are not shown.",
        Key.NOT_OPEN_TO_CHANNEL: "not everyone in the channel may read its sources",
        Key.NOT_OPEN_TO_ASKER: "the asker may not read its sources now",
        Key.REVIEW_RESTRICTED: (
            "Restricted review: not everyone in this channel may read the draft or its sources, so neither is "
            "shown here. Reviewers who may read them decide it on citebot's Home tab."
        ),
        Key.REVIEWED_BY: "Reviewed by {reviewer}.",
        Key.COMMAND_HELP: (
            "Type your question after the command, for example: /citebot How many vacation days do I get? "
            "Only you see the answer, and you can post it in the channel. In a thread, or to ask the channel, "
            "use @citebot or the message shortcut Ask citebot."
        ),
        Key.LOOKING_UP: "Looking that up in the knowledge base; only you will see the answer.",
        Key.SHARED_BY: "Asked by {asker} with /citebot.",
        Key.POST_IN_CHANNEL: "Post in channel",
        Key.POSTED_IN_CHANNEL: "📣 Posted in {channel} for everyone.",
        Key.OPEN_POST: "open the post",
        Key.NOT_POSTED_IN_CHANNEL: "This was not posted in {channel}: Slack said {reason}. Invite @citebot there (`/invite @citebot`), then ask again.",
        Key.SHARE_REFUSED: "Only you see this: the answer was not posted in {channel} — {reason}.",
        Key.NOT_YOURS_TO_POST: "only the person who asked the question can post its answer",
        Key.ANSWER_NOT_SHAREABLE: "this answer is no longer kept or was given privately",
        Key.SOURCES: "Sources",
        Key.REVIEW_DISMISSED: "A reviewer looked at your question: the knowledge base has no answer to it yet.",
        Key.SOURCE_CHANGED: "⚠️ Source [{n}] has changed since this answer — ask again.",
        Key.SOURCE_REMOVED: "⚠️ Source [{n}] has been removed from the knowledge base since this answer — ask again.",
        Key.SHORTENED: "…answer shortened, see Sources for the passages.",
        Key.SHORTENED_NO_SOURCES: "…answer shortened.",
        Key.MORE_SOURCES: "…and {count} more sources.",
        Key.HELPFUL: "👍 Helpful",
        Key.STILL_NEED_HELP: "🙋 Still need help?",
        Key.HANDED_OVER: "{asker}, I've asked {people} to help you with this. {people}: could you take a look at the "
                         "question above?",
        Key.HANDED_OVER_DM: "I've asked {people} to help you with this; they will get in touch with you.",
        Key.HANDOVER_REQUEST: "{people}: {asker} still needs help with a question they asked citebot privately:",
        Key.HANDOVER_REVIEW_HEADING: "A person answered a handed-over question",
        Key.HANDOVER_REVIEW_NOTE: "{people} were asked; {helper} answered in the thread. Approve saves their answer "
                                  "as a draft KB entry, Write answer lets you edit it first (tick the box to save it), Dismiss "
                                  "saves nothing.",
        Key.THEIR_ANSWER: "Their answer",
        Key.HANDOVER_SAVED: "Saved as a draft KB entry by {user} at {time}",
        Key.HANDOVER_DISMISSED: "Dismissed by {user} at {time}",
        Key.NOT_HELPFUL: "👎 Not helpful",
        Key.CLOSE: "Close",
        Key.CANCEL: "Cancel",
        Key.QUESTION: "Question",
        Key.PASSAGE_SHORTENED: "…passage shortened.",
        Key.MORE_PASSAGES: "{count} more sources are not shown.",
        Key.NO_PASSAGE: "(no passage text stored)",
        Key.REVIEW_HEADING: "Answer needs review",
        Key.FEEDBACK_HEADING: "Answer marked as not helpful",
        Key.FEEDBACK_REASON: "Reason given",
        Key.NO_REASON: "(no reason given)",
        Key.FLAGGED_ANSWER: "The answer that was posted",
        Key.ASKED_BY: "Asked by {user} in {channel}",
        Key.ASKED_BY_USER: "Asked by {user}",
        Key.ASKED_IN_DM: "Asked in a direct message",
        Key.FLAGGED_BY: "flagged by {user}",
        Key.DECISION_FAILED: (
            "Your decision was not posted in the asker's thread: Slack said {reason}. "
            "The review is open again; click again once that is fixed."
        ),
        Key.REJECTED_DRAFT: "Rejected draft",
        Key.NO_DRAFT: "(no draft)",
        Key.VIOLATIONS: "Why it was rejected",
        Key.NO_VIOLATIONS: "No violations recorded.",
        Key.MORE_VIOLATIONS: "…and {count} more.",
        Key.RETRIEVED_SOURCES: "Retrieved sources",
        Key.NO_SOURCES: "No sources were retrieved.",
        Key.APPROVE: "Approve draft",
        Key.WRITE_ANSWER: "Write answer",
        Key.ANSWER_REQUIRED: "Please write an answer.",
        Key.DISMISS: "Dismiss",
        Key.APPROVED_BY: "✅ Approved by {user} at {time}",
        Key.ANSWERED_BY: "✍️ Answered by {user} at {time}",
        Key.DISMISSED_BY: "🚫 Dismissed by {user} at {time}",
        Key.POSTED_ANSWER: "Posted answer",
        Key.REVIEW_FALLBACK: "Answer needs review: {question}",
        Key.REVIEW_MODAL_TITLE: "Write the answer",
        Key.REVIEW_MODAL_SUBMIT: "Post answer",
        Key.YOUR_ANSWER: "Your answer",
        Key.ANSWER_HINT: "Posted in the asker's thread, marked as reviewed by you.",
        Key.ANSWER_PLACEHOLDER: "Answer from the knowledge base…",
        Key.SAVE_DRAFT_LABEL: "Knowledge base",
        Key.SAVE_DRAFT_OPTION: "Also save as a draft KB entry",
        Key.FEEDBACK_TITLE: "Feedback",
        Key.FEEDBACK_SUBMIT: "Send",
        Key.FEEDBACK_LABEL: "What was wrong with the answer? (optional)",
        Key.FEEDBACK_PLACEHOLDER: "e.g. outdated, wrong source, did not answer my question",
        Key.PROMPT_RULES_CITATIONS: """You answer employees' questions from the company knowledge base, and only from it.
Rules:
1. Use only what the knowledge-base blocks below state. Add nothing from your own knowledge.
2. After every statement, write the KB-ID of the block it comes from in square brackets, as shown in the block header, e.g. [hr-travel-01]. Several sources: [hr-travel-01, hr-travel-02].
3. If the blocks do not answer the question, reply with exactly this sentence and nothing else: {refusal} If they answer only part of it, answer that part and say in one sentence without a KB-ID what the knowledge base does not state (e.g. "The knowledge base does not say whether …").
4. Write numbers, dates and amounts exactly as the cited block states them.
5. Use double quotes only for text copied word for word from a cited block.
6. Each block has a Stand (the date its content is valid for). If blocks disagree, follow the most recent Stand and say which Stand the answer is based on.
7. Answer in English, briefly and plainly.""",
        Key.PROMPT_RULES_CLAIMS: """You answer employees' questions from the company knowledge base, and only from it.
Reply with JSON only, in this form: {{"claims": [{{"text": "...", "evidence_ids": ["E1"]}}]}}
Rules:
1. Each claim is one short statement that the knowledge-base blocks below state. Add nothing from your own knowledge.
2. Keep to the wording of the block. evidence_ids lists the E-numbers of the blocks that state the claim (see the block headers).
3. Write numbers, dates and amounts exactly as the block states them.
4. No quotation marks inside a claim's text.
5. At most {max_claims} claims.
6. If the blocks do not answer the question, reply with {{"claims": []}}. If they answer only part of it, give the claims for that part, and one claim that says what the knowledge base does not state (e.g. "The knowledge base does not say whether …"), with the blocks you looked in as its evidence_ids.
7. Each block has a Stand (the date its content is valid for). If blocks disagree, follow the most recent Stand.
8. Write the claims in English.""",
        Key.PROMPT_BLOCKS: "Knowledge-base blocks:",
        Key.PROMPT_TITLE: "Title",
        Key.PROMPT_SECTION: "Section",
        Key.PROMPT_LEGAL: "Legal bases",
        Key.PROMPT_XREF: "cross-reference",
        Key.PROMPT_HISTORY: "Earlier in this thread:",
        Key.PROMPT_QUESTION: "Question",
        Key.PROMPT_RETRY_INTRO: "Your answer could not be verified against the knowledge-base blocks:",
        Key.PROMPT_RETRY_OUTRO: (
            "Answer again and follow the rules. If the blocks do not answer the question, say so as the rules ask."
        ),
        Key.JUDGE_RULES: """You check statements against knowledge-base blocks. For each statement below, read the blocks it cites, and only those, and decide:
- supports: the cited blocks state it. Copy into "quote" the words of one block that state it, exactly as they stand there.
- contradicts: the cited blocks state something else (the opposite, another number, date or condition). Copy the words that say so into "quote".
- not_stated: the cited blocks do not say it, or only part of it. Leave "quote" empty.
An answer may apply what its cited blocks state to the facts the asker gives in the question (their dates, amounts, hours, situation) and say what follows for them. Such a statement is supported when the rule it applies is stated in its cited blocks and what it works out is right: redo the arithmetic and the counting of days yourself, and quote the words of the rule. A result worked out wrongly contradicts. A rule, number, deadline, condition or exception the cited blocks do not state is not_stated, however plausible.
A statement that says nothing the blocks could state (a greeting, sympathy, congratulations, a lead-in such as "Here is what applies:") is supported: quote the words of a cited block about what it refers to.
Judge by the question and the blocks alone, never by your own knowledge.
Reply with JSON only, one verdict for every statement, in this form: {example}""",
        Key.JUDGE_STATEMENTS: "Statements to check:",
        Key.JUDGE_CITES: "cites",
        Key.JUDGE_QUESTION: "The asker's question:",
        Key.HOME_HOW_TO_ASK: 'How to ask',
        Key.HOME_WHERE: 'In a channel, mention @citebot (invite it first with `/invite @citebot`); privately, write to it in the Messages tab.',
        Key.HOME_MY_QUESTIONS: 'Your recent questions',
        Key.HOME_NONE_YET: 'None yet.',
        Key.HOME_KB: 'Knowledge base',
        Key.HOME_INDEX: 'Index {generation} · {entries} entries, {chunks} chunks · last indexed {built_at} · embedder {embedder}',
        Key.HOME_NO_EMBEDDER: 'none (keyword search only)',
        Key.HOME_REVIEWS: 'Open reviews ({count}), oldest first',
        Key.HOME_NO_REVIEWS: 'No open reviews.',
        Key.HOME_MORE_REVIEWS: '…and {more} more: `citebot review list` shows them all.',
        Key.HOME_DM_QUESTION: 'a question asked in a direct message',
        Key.HOME_OPEN_CARD: 'open the card',
        Key.HOME_NO_CARD: 'no card',
        Key.HOME_NOT_POSTED: 'not posted yet',
        Key.HOME_DECIDE_HERE: 'decide it here',
        Key.HOME_AGE: '{age} old',
        Key.HOME_GAPS: 'Top gaps, last {days} days',
        Key.HOME_NO_GAPS: 'No unanswered questions.',
        Key.HOME_ANSWERED: '✅ answered',
        Key.HOME_UNCERTAIN: '🤔 not sure (sent to a reviewer)',
        Key.HOME_REFUSED: '🚫 not in the knowledge base',
        Key.HOME_FAILED: '⚠️ failed',
        Key.HOME_PENDING: '⏳ being answered',
        Key.ASSISTANT_GREETING: (
            "Hi! Ask me anything the company knowledge base covers: I answer from it alone, "
            "with a source for every statement."
        ),
        Key.ASSISTANT_PROMPTS_TITLE: "Try asking",
        Key.ASSISTANT_PROMPT_COLLECTION: "What does the knowledge base say about {collection}?",
        Key.ASSISTANT_SEARCHING: "is searching the knowledge base…",
        Key.ASSISTANT_CHECKING: "is checking the answer…",
    },
    "de": {
        Key.REFUSAL: "Dazu enthält die Wissensbasis keine Aussage.",
        Key.UNCERTAIN: (
            "Da bin ich mir nicht sicher: Ich konnte keine Antwort mit der Wissensbasis belegen. "
            "Eine Prüferin oder ein Prüfer meldet sich eventuell in diesem Thread."
        ),
        Key.PARTIAL: "Teilantwort: Nur die Aussagen oben ließen sich anhand der Wissensbasis belegen.",
        Key.NOT_JUDGED: (
            "Nicht geprüft: Die Aussagen dieser Antwort wurden nicht mit ihren Quellen abgeglichen, nur ihre Zitate."
        ),
        Key.NOT_COVERED: (
            "Die Wissensbasis deckt deine Frage nicht ganz ab; die Verantwortlichen der Wissensbasis "
            "wissen jetzt, was fehlt."
        ),
        Key.TRUNCATED: "Deine Frage war länger als {limit} Zeichen; ich habe die ersten {limit} Zeichen beantwortet.",
        Key.EXTRACTIVE_LEAD: "Die Stellen der Wissensbasis, die deiner Frage am nächsten kommen:",
        Key.EXTRACTIVE_NEAR: (
            "So, wie die Frage gestellt ist, beantwortet die Wissensbasis sie vielleicht nicht. Am nächsten kommt dies:"
        ),
        Key.HELP: (
            "Stell mir eine Frage, und ich beantworte sie aus der Wissensbasis des Unternehmens, "
            "mit einer Quelle für jede Aussage. Zum Beispiel: @citebot Wie viele Urlaubstage habe ich?"
        ),
        Key.LLM_DOWN: (
            "Entschuldigung, ich kann gerade nicht antworten: Das Sprachmodell reagiert nicht. "
            "Deine Frage wurde festgehalten; bitte versuch es später noch einmal."
        ),
        Key.KB_NOT_READY: (
            "Die Wissensbasis ist noch nicht bereit: Bisher ist kein Dokument indexiert. "
            "Bitte versuch es später noch einmal; die Betreiber wissen Bescheid."
        ),
        Key.FAILED: (
            "Entschuldigung, beim Beantworten deiner Frage ist etwas schiefgegangen. "
            "Sie wurde festgehalten; bitte versuch es später noch einmal."
        ),
        Key.ACCESS_UNCHECKED: (
            "Entschuldigung, ich konnte nicht prüfen, welche Teile der Wissensbasis du hier lesen darfst, und habe "
            "deshalb nicht geantwortet. Bitte versuch es später noch einmal."
        ),
        Key.EXTERNAL_CHANNEL: (
            "In diesem Kanal antworte ich nicht: Er ist mit einer anderen Organisation geteilt, und kein Teil der "
            "Wissensbasis ist für Personen außerhalb des Unternehmens bestimmt. Frag mich stattdessen per Direktnachricht."
        ),
        Key.MORE_IN_PRIVATE: (
            "Nur du siehst das: In diesem Kanal antworte ich nur aus dem, was alle darin lesen dürfen, und du "
            "darfst mehr lesen. Daraus:"
        ),
        Key.BETTER_IN_PRIVATE: (
            "Nur du siehst das: Ich habe hier aus dem geantwortet, was alle in diesem Kanal lesen dürfen, aber "
            "etwas, das nur du hier lesen darfst, könnte besser antworten."
        ),
        Key.ANSWER_PRIVATELY: "Privat antworten",
        Key.SOURCES_RESTRICTED: "Diese Quellen sind für dich nicht freigegeben und werden daher nicht gezeigt.",
        Key.NOT_OPEN_TO_CHANNEL: "nicht alle im Kanal dürfen seine Quellen lesen",
        Key.NOT_OPEN_TO_ASKER: "die fragende Person darf seine Quellen jetzt nicht lesen",
        Key.REVIEW_RESTRICTED: (
            "Eingeschränkte Prüfung: Nicht alle in diesem Kanal dürfen den Entwurf oder seine Quellen lesen, "
            "daher wird beides hier nicht gezeigt. Prüfer, die sie lesen dürfen, entscheiden auf dem Home-Tab von citebot."
        ),
        Key.REVIEWED_BY: "Geprüft von {reviewer}.",
        Key.COMMAND_HELP: (
            "Schreib deine Frage hinter den Befehl, zum Beispiel: /citebot Wie viele Urlaubstage habe ich? "
            "Nur du siehst die Antwort, und du kannst sie im Channel posten. In einem Thread, oder um den "
            "Channel zu fragen, nimm @citebot oder die Nachrichten-Aktion Ask citebot."
        ),
        Key.LOOKING_UP: "Ich suche das in der Wissensbasis; nur du wirst die Antwort sehen.",
        Key.SHARED_BY: "Gefragt von {asker} mit /citebot.",
        Key.POST_IN_CHANNEL: "Im Channel posten",
        Key.POSTED_IN_CHANNEL: "📣 Für alle in {channel} gepostet.",
        Key.OPEN_POST: "zum Beitrag",
        Key.NOT_POSTED_IN_CHANNEL: "Das wurde nicht in {channel} gepostet: Slack meldet {reason}. Lade @citebot dort ein (`/invite @citebot`) und frag dann noch einmal.",
        Key.SHARE_REFUSED: "Nur du siehst das: Die Antwort wurde nicht in {channel} gepostet — {reason}.",
        Key.NOT_YOURS_TO_POST: "nur wer die Frage gestellt hat, kann ihre Antwort posten",
        Key.ANSWER_NOT_SHAREABLE: "diese Antwort ist nicht mehr gespeichert oder wurde privat gegeben",
        Key.SOURCES: "Quellen",
        Key.REVIEW_DISMISSED: "Deine Frage wurde geprüft: Die Wissensbasis enthält dazu noch keine Antwort.",
        Key.SOURCE_CHANGED: "⚠️ Quelle [{n}] hat sich seit dieser Antwort geändert – bitte frag noch einmal.",
        Key.SOURCE_REMOVED: (
            "⚠️ Quelle [{n}] wurde seit dieser Antwort aus der Wissensbasis entfernt – bitte frag noch einmal."
        ),
        Key.SHORTENED: "…Antwort gekürzt, die Fundstellen stehen unter Quellen.",
        Key.SHORTENED_NO_SOURCES: "…Antwort gekürzt.",
        Key.MORE_SOURCES: "…und {count} weitere Quellen.",
        Key.HELPFUL: "👍 Hilfreich",
        Key.STILL_NEED_HELP: "🙋 Noch Hilfe nötig?",
        Key.HANDED_OVER: "{asker}, ich habe {people} gebeten, dir hier weiterzuhelfen. {people}: Könnt ihr euch die "
                         "Frage oben ansehen?",
        Key.HANDED_OVER_DM: "Ich habe {people} gebeten, dir weiterzuhelfen; sie melden sich bei dir.",
        Key.HANDOVER_REQUEST: "{people}: {asker} braucht noch Hilfe zu einer Frage, die citebot privat gestellt wurde:",
        Key.HANDOVER_REVIEW_HEADING: "Eine Person hat eine übergebene Frage beantwortet",
        Key.HANDOVER_REVIEW_NOTE: "Gefragt waren {people}; {helper} hat im Thread geantwortet. Freigeben speichert "
                                  "die Antwort als Entwurf für die Wissensbasis, Antwort schreiben lässt sie vorher "
                                  "bearbeiten (mit Häkchen gespeichert), Verwerfen speichert nichts.",
        Key.THEIR_ANSWER: "Ihre Antwort",
        Key.HANDOVER_SAVED: "Als Entwurf für die Wissensbasis gespeichert von {user} am {time}",
        Key.HANDOVER_DISMISSED: "Verworfen von {user} am {time}",
        Key.NOT_HELPFUL: "👎 Nicht hilfreich",
        Key.CLOSE: "Schließen",
        Key.CANCEL: "Abbrechen",
        Key.QUESTION: "Frage",
        Key.PASSAGE_SHORTENED: "…Fundstelle gekürzt.",
        Key.MORE_PASSAGES: "{count} weitere Quellen werden nicht angezeigt.",
        Key.NO_PASSAGE: "(kein Text der Fundstelle gespeichert)",
        Key.REVIEW_HEADING: "Antwort muss geprüft werden",
        Key.FEEDBACK_HEADING: "Antwort als nicht hilfreich markiert",
        Key.FEEDBACK_REASON: "Angegebener Grund",
        Key.NO_REASON: "(kein Grund angegeben)",
        Key.FLAGGED_ANSWER: "Die gepostete Antwort",
        Key.ASKED_BY: "Gefragt von {user} in {channel}",
        Key.ASKED_BY_USER: "Gefragt von {user}",
        Key.ASKED_IN_DM: "In einer Direktnachricht gefragt",
        Key.FLAGGED_BY: "gemeldet von {user}",
        Key.DECISION_FAILED: (
            "Deine Entscheidung wurde nicht im Thread der fragenden Person gepostet: Slack meldete {reason}. "
            "Die Prüfung ist wieder offen; klick noch einmal, sobald das behoben ist."
        ),
        Key.REJECTED_DRAFT: "Abgelehnter Entwurf",
        Key.NO_DRAFT: "(kein Entwurf)",
        Key.VIOLATIONS: "Warum er abgelehnt wurde",
        Key.NO_VIOLATIONS: "Keine Verstöße festgehalten.",
        Key.MORE_VIOLATIONS: "…und {count} weitere.",
        Key.RETRIEVED_SOURCES: "Gefundene Quellen",
        Key.NO_SOURCES: "Es wurden keine Quellen gefunden.",
        Key.APPROVE: "Entwurf freigeben",
        Key.WRITE_ANSWER: "Antwort schreiben",
        Key.ANSWER_REQUIRED: "Bitte eine Antwort schreiben.",
        Key.DISMISS: "Verwerfen",
        Key.APPROVED_BY: "✅ Freigegeben von {user} am {time}",
        Key.ANSWERED_BY: "✍️ Beantwortet von {user} am {time}",
        Key.DISMISSED_BY: "🚫 Verworfen von {user} am {time}",
        Key.POSTED_ANSWER: "Gepostete Antwort",
        Key.REVIEW_FALLBACK: "Antwort muss geprüft werden: {question}",
        Key.REVIEW_MODAL_TITLE: "Antwort schreiben",
        Key.REVIEW_MODAL_SUBMIT: "Antwort posten",
        Key.YOUR_ANSWER: "Deine Antwort",
        Key.ANSWER_HINT: "Wird im Thread der fragenden Person gepostet, als von dir geprüft markiert.",
        Key.ANSWER_PLACEHOLDER: "Antwort aus der Wissensbasis…",
        Key.SAVE_DRAFT_LABEL: "Wissensbasis",
        Key.SAVE_DRAFT_OPTION: "Auch als Entwurf für die Wissensbasis speichern",
        Key.FEEDBACK_TITLE: "Rückmeldung",
        Key.FEEDBACK_SUBMIT: "Senden",
        Key.FEEDBACK_LABEL: "Was war an der Antwort falsch? (optional)",
        Key.FEEDBACK_PLACEHOLDER: "z. B. veraltet, falsche Quelle, Frage nicht beantwortet",
        Key.PROMPT_RULES_CITATIONS: """Du beantwortest Fragen von Mitarbeitenden aus der Wissensbasis des Unternehmens, und nur aus ihr.
Regeln:
1. Verwende nur, was die Blöcke aus der Wissensbasis unten aussagen. Ergänze nichts aus eigenem Wissen.
2. Schreibe nach jeder Aussage die KB-ID des Blocks, aus dem sie stammt, in eckigen Klammern, wie im Blockkopf angegeben, z. B. [lb-atz-01]. Mehrere Quellen: [lb-atz-01, lb-atz-02].
3. Wenn die Blöcke die Frage nicht beantworten, antworte genau mit diesem Satz und sonst nichts: {refusal} Beantworten sie nur einen Teil, beantworte diesen Teil und sage in einem Satz ohne KB-ID, wozu die Wissensbasis nichts sagt (z. B. „Ob …, sagt die Wissensbasis nicht.“).
4. Gib Zahlen, Daten und Beträge genau so wieder, wie der zitierte Block sie nennt.
5. Setze nur wörtlich aus einem zitierten Block übernommenen Text in doppelte Anführungszeichen.
6. Jeder Block hat einen Stand (das Datum, für das sein Inhalt gilt). Widersprechen sich Blöcke, richte dich nach dem neuesten Stand und nenne den Stand, auf dem die Antwort beruht.
7. Antworte auf Deutsch, knapp und verständlich.""",
        Key.PROMPT_RULES_CLAIMS: """Du beantwortest Fragen von Mitarbeitenden aus der Wissensbasis des Unternehmens, und nur aus ihr.
Antworte nur mit JSON in dieser Form: {{"claims": [{{"text": "...", "evidence_ids": ["E1"]}}]}}
Regeln:
1. Jede Aussage (claim) ist ein kurzer Satz, den die Blöcke aus der Wissensbasis unten aussagen. Ergänze nichts aus eigenem Wissen.
2. Bleib beim Wortlaut des Blocks. evidence_ids nennt die E-Nummern der Blöcke, die die Aussage treffen (siehe Blockkopf).
3. Gib Zahlen, Daten und Beträge genau so wieder, wie der Block sie nennt.
4. Keine Anführungszeichen im Text einer Aussage.
5. Höchstens {max_claims} Aussagen.
6. Wenn die Blöcke die Frage nicht beantworten, antworte mit {{"claims": []}}. Beantworten sie nur einen Teil, gib die Aussagen zu diesem Teil an und eine Aussage, wozu die Wissensbasis nichts sagt (z. B. „Ob …, sagt die Wissensbasis nicht.“), mit den Blöcken, in denen du nachgesehen hast, als evidence_ids.
7. Jeder Block hat einen Stand (das Datum, für das sein Inhalt gilt). Widersprechen sich Blöcke, richte dich nach dem neuesten Stand.
8. Schreibe die Aussagen auf Deutsch.""",
        Key.PROMPT_BLOCKS: "Blöcke aus der Wissensbasis:",
        Key.PROMPT_TITLE: "Titel",
        Key.PROMPT_SECTION: "Abschnitt",
        Key.PROMPT_LEGAL: "Rechtsgrundlagen",
        Key.PROMPT_XREF: "Querverweis",
        Key.PROMPT_HISTORY: "Bisher in diesem Thread:",
        Key.PROMPT_QUESTION: "Frage",
        Key.PROMPT_RETRY_INTRO: "Deine Antwort ließ sich nicht anhand der Blöcke aus der Wissensbasis belegen:",
        Key.PROMPT_RETRY_OUTRO: (
            "Antworte noch einmal und halte dich an die Regeln. Wenn die Blöcke die Frage nicht beantworten, "
            "sag das so, wie die Regeln es verlangen."
        ),
        Key.JUDGE_RULES: """Du prüfst Aussagen anhand von Blöcken aus der Wissensbasis. Lies für jede Aussage unten die Blöcke, die sie zitiert, und nur diese, und entscheide:
- supports: Die zitierten Blöcke sagen das aus. Kopiere die Worte eines Blocks, die es aussagen, genau so in "quote", wie sie dort stehen.
- contradicts: Die zitierten Blöcke sagen etwas anderes (das Gegenteil, eine andere Zahl, ein anderes Datum, eine andere Bedingung). Kopiere die Worte, die das sagen, in "quote".
- not_stated: Die zitierten Blöcke sagen das nicht oder nur zum Teil. Lass "quote" leer.
Eine Antwort darf das, was ihre zitierten Blöcke sagen, auf die Angaben der fragenden Person in der Frage anwenden (ihre Daten, Beträge, Stunden, ihre Lage) und sagen, was daraus für sie folgt. Eine solche Aussage ist gestützt, wenn die Regel, die sie anwendet, in ihren zitierten Blöcken steht und das Ergebnis stimmt: Rechne und zähle die Tage selbst nach, und zitiere die Worte der Regel. Ein falsch ausgerechnetes Ergebnis ist contradicts. Eine Regel, Zahl, Frist, Bedingung oder Ausnahme, die die zitierten Blöcke nicht nennen, ist not_stated, so plausibel sie klingt.
Eine Aussage, die nichts sagt, was die Blöcke aussagen könnten (ein Gruß, Anteilnahme, ein Glückwunsch, eine Überleitung wie „Das gilt hier:“), ist supports: Zitiere die Worte eines zitierten Blocks zu dem, worauf sie sich bezieht.
Urteile nur nach der Frage und den Blöcken, nie nach eigenem Wissen.
Antworte nur mit JSON, mit einem Urteil für jede Aussage, in dieser Form: {example}""",
        Key.JUDGE_STATEMENTS: "Zu prüfende Aussagen:",
        Key.JUDGE_CITES: "zitiert",
        Key.JUDGE_QUESTION: "Die Frage der fragenden Person:",
        Key.HOME_HOW_TO_ASK: 'So fragst du',
        Key.HOME_WHERE: 'In einem Channel erwähnst du @citebot (lade es zuerst mit `/invite @citebot` ein); vertraulich schreibst du ihm im Tab „Nachrichten“.',
        Key.HOME_MY_QUESTIONS: 'Deine letzten Fragen',
        Key.HOME_NONE_YET: 'Noch keine.',
        Key.HOME_KB: 'Wissensbasis',
        Key.HOME_INDEX: 'Index {generation} · {entries} Einträge, {chunks} Abschnitte · zuletzt indexiert {built_at} · Embedder {embedder}',
        Key.HOME_NO_EMBEDDER: 'keiner (nur Stichwortsuche)',
        Key.HOME_REVIEWS: 'Offene Prüfungen ({count}), die ältesten zuerst',
        Key.HOME_NO_REVIEWS: 'Keine offenen Prüfungen.',
        Key.HOME_MORE_REVIEWS: '…und {more} weitere: `citebot review list` zeigt alle.',
        Key.HOME_DM_QUESTION: 'eine Frage aus einer Direktnachricht',
        Key.HOME_OPEN_CARD: 'zur Karte',
        Key.HOME_NO_CARD: 'keine Karte',
        Key.HOME_NOT_POSTED: 'noch nicht gepostet',
        Key.HOME_DECIDE_HERE: 'hier entscheiden',
        Key.HOME_AGE: 'seit {age}',
        Key.HOME_GAPS: 'Häufigste Lücken, letzte {days} Tage',
        Key.HOME_NO_GAPS: 'Keine unbeantworteten Fragen.',
        Key.HOME_ANSWERED: '✅ beantwortet',
        Key.HOME_UNCERTAIN: '🤔 unsicher (an die Prüfung gegangen)',
        Key.HOME_REFUSED: '🚫 nicht in der Wissensbasis',
        Key.HOME_FAILED: '⚠️ fehlgeschlagen',
        Key.HOME_PENDING: '⏳ wird beantwortet',
        Key.ASSISTANT_GREETING: (
            "Hallo! Frag mich alles, was die Wissensbasis des Unternehmens abdeckt: Ich antworte nur aus ihr, "
            "mit einer Quelle für jede Aussage."
        ),
        Key.ASSISTANT_PROMPTS_TITLE: "Zum Beispiel",
        Key.ASSISTANT_PROMPT_COLLECTION: "Was sagt die Wissensbasis zu {collection}?",
        Key.ASSISTANT_SEARCHING: "sucht in der Wissensbasis…",
        Key.ASSISTANT_CHECKING: "prüft die Antwort…",
    },
}


def normalize_language(language: str | None) -> str:
    """'de-AT' -> 'de'; anything the bot does not speak -> English, never an error,
    because a channel setting with an odd language must not stop an answer."""
    code = (language or "").strip().lower().replace("_", "-").split("-")[0]
    return code if code in LANGUAGES else DEFAULT_LANGUAGE


def message(key: str, language: str | None = DEFAULT_LANGUAGE, **fields: object) -> str:
    """The sentence `key` in `language`; `fields` fill placeholders such as {limit}."""
    text = _TEXT[normalize_language(language)][Key(key)]
    return text.format(**fields) if fields else text


def all_translations(key: str) -> list[str]:
    """The sentence in every language: a model may reply in another language than asked."""
    return [table[Key(key)] for table in _TEXT.values()]
