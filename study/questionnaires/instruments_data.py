"""The shipped instruments and default consent text, as plain data (written for this platform).

Each questionnaire is a dict: ``slug``, ``title``, ``kind``, ``intro`` (Markdown) and ``items``,
a list of dicts with the ``Item`` fields (``key``, ``type``, ``text``, optional ``help_text``,
``required`` (default True), ``choices``, ``min_value``/``max_value``, ``show_if``, ``scale``).

Design decisions:

- **Workload (post-trial).** The six NASA-TLX dimensions, reworded, each a *number from 0 to
  100* (0 = very low, 100 = very high). All six point the same way: the performance item asks
  how far the participant fell *short* of their goal, so a higher number always means more
  workload. Raw TLX ("RTLX") is the unweighted mean of the six (``scale_scores()["nasa_tlx"]``);
  no pairwise weighting is collected. Researchers who prefer the 21-gradation form may round
  answers to multiples of 5 at analysis time.
- **Likert.** 5 points for agreement statements (1 = strongly disagree, 5 = strongly agree);
  7 points for confidence and load ratings. Negatively worded items carry the ``:r`` scale
  suffix and are reverse-scored.
- **Quasi-identifiers are coarse at source**: age in bands, occupation as a type (no employer
  or institution names), experience in bands, no country; no "other, please specify" text.
- **Free text** items are optional and ask for no names or contact details.
- **Per-condition** items in the post-study say "with the AI assistant" / "without the AI
  assistant"; their scales end in ``_with_ai`` / ``_without_ai``.
"""

from __future__ import annotations

from typing import Any

Spec = dict[str, Any]


def _opts(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"value": value, "label": label} for value, label in pairs]


def _anchors(low: str, high: str) -> list[dict[str, str]]:
    return [{"low": low, "high": high}]


AGREE = _anchors("Strongly disagree", "Strongly agree")
CONFIDENCE = _anchors("Not at all confident", "Completely confident")
AI_USERS = {"item": "ai_frequency", "in": ["tried", "monthly", "weekly", "daily"]}
REGULAR_AI_USERS = {"item": "ai_frequency", "in": ["monthly", "weekly", "daily"]}
NO_PII = "Please leave out names, employers and contact details."
WITH_WITHOUT = _opts(
    ("with_ai", "With the AI assistant"),
    ("without_ai", "Without the AI assistant"),
    ("same", "About the same"),
)

# --- Pre-study screening ------------------------------------------------------------------
SCREENING: Spec = {
    "slug": "screening",
    "title": "About you and your programming background",
    "kind": "screening",
    "intro": (
        "Before the tasks begin, please tell us a little about your background. Your answers "
        "help us describe who took part and choose the kind of tasks you will work on. "
        "Where a question is personal, you can choose *Prefer not to say*."
    ),
    "items": [
        {
            "key": "age_band",
            "type": "single",
            "text": "What is your age?",
            "choices": _opts(
                ("18_24", "18 to 24"),
                ("25_34", "25 to 34"),
                ("35_44", "35 to 44"),
                ("45_plus", "45 or older"),
                ("no_answer", "Prefer not to say"),
            ),
        },
        {
            "key": "gender",
            "type": "single",
            "text": "Which of these describes your gender?",
            "choices": _opts(
                ("woman", "Woman"),
                ("man", "Man"),
                ("another", "Another gender"),
                ("no_answer", "Prefer not to say"),
            ),
        },
        {
            "key": "occupation",
            "type": "single",
            "text": "Which best describes what you mainly do at the moment?",
            "choices": _opts(
                ("student_undergrad", "Undergraduate student"),
                ("student_grad", "Master's or doctoral student"),
                ("academia", "Research or teaching at a university or institute"),
                ("industry", "Working in industry (employed or self-employed)"),
                ("other", "Something else"),
            ),
        },
        {
            "key": "education",
            "type": "single",
            "text": "What is the highest level of education you have completed?",
            "choices": _opts(
                ("secondary", "Secondary school or equivalent"),
                ("some_university", "Some university or college, no degree yet"),
                ("bachelor", "Bachelor's degree"),
                ("master", "Master's degree"),
                ("doctorate", "Doctorate"),
                ("no_answer", "Other, or prefer not to say"),
            ),
        },
        {
            "key": "field",
            "type": "single",
            "text": "In which field is most of your education or training?",
            "choices": _opts(
                ("computing", "Computer science or software engineering"),
                ("data", "Data science, statistics or machine learning"),
                ("engineering", "Another engineering discipline"),
                ("science", "Mathematics or a natural science"),
                ("other", "Another field"),
            ),
        },
        {
            "key": "programming_years",
            "type": "single",
            "text": "For how long have you been programming, in any setting?",
            "choices": _opts(
                ("lt_1", "Less than a year"),
                ("1_2", "1 to 2 years"),
                ("3_5", "3 to 5 years"),
                ("6_10", "6 to 10 years"),
                ("gt_10", "More than 10 years"),
            ),
        },
        {
            "key": "professional_years",
            "type": "single",
            "text": "For how long have you been paid to write software or do data work?",
            "help_text": "Internships and part-time jobs count.",
            "choices": _opts(
                ("none", "Not at all"),
                ("lt_1", "Less than a year"),
                ("1_2", "1 to 2 years"),
                ("3_5", "3 to 5 years"),
                ("gt_5", "More than 5 years"),
            ),
        },
        {
            "key": "python_skill",
            "type": "likert5",
            "text": "How would you rate your own skill in Python?",
            "choices": _anchors("Beginner", "Expert"),
        },
        {
            "key": "python_recent",
            "type": "single",
            "text": "How often have you written Python code in the last six months?",
            "choices": _opts(
                ("daily", "Most days"),
                ("weekly", "Every week"),
                ("monthly", "Every month"),
                ("rarely", "Less than once a month"),
                ("never", "Not at all"),
            ),
        },
        {
            "key": "languages",
            "type": "multiple",
            "text": "Which programming languages have you used in the last two years?",
            "help_text": "Tick all that apply.",
            "choices": _opts(
                ("python", "Python"),
                ("js_ts", "JavaScript or TypeScript"),
                ("java_kotlin", "Java or Kotlin"),
                ("c_cpp", "C or C++"),
                ("csharp", "C#"),
                ("go", "Go"),
                ("rust", "Rust"),
                ("r", "R"),
                ("sql", "SQL"),
                ("other", "Another language"),
            ),
        },
        {
            "key": "work_areas",
            "type": "multiple",
            "text": "Which kinds of work have you done in the last two years?",
            "help_text": "Tick all that apply.",
            "choices": _opts(
                ("backend", "Back-end services, APIs or databases"),
                ("frontend", "Web front-ends or mobile apps"),
                ("ml_training", "Training or evaluating machine-learning models"),
                ("ml_serving", "Deploying or serving machine-learning models"),
                ("analysis", "Data analysis, statistics or visualisation"),
                ("pipelines", "Data pipelines or data engineering"),
                ("scientific", "Scientific or numerical computing"),
                ("none", "None of these"),
            ),
        },
        {
            "key": "editors",
            "type": "multiple",
            "text": "Which editors or coding environments do you use most?",
            "help_text": "Tick all that apply.",
            "choices": _opts(
                ("vscode", "Visual Studio Code"),
                ("jetbrains", "A JetBrains IDE (PyCharm, IntelliJ IDEA, ...)"),
                ("notebooks", "Jupyter or another notebook"),
                ("terminal", "Vim, Emacs or another terminal editor"),
                ("browser", "A browser-based environment (Codespaces, Colab, ...)"),
                ("other", "Something else"),
            ),
        },
        {
            "key": "ai_frequency",
            "type": "single",
            "text": "How often do you use AI assistants while programming?",
            "choices": _opts(
                ("never", "Never"),
                ("tried", "I have tried them a few times"),
                ("monthly", "A few times a month"),
                ("weekly", "A few times a week"),
                ("daily", "Every day or nearly every day"),
            ),
        },
        {
            "key": "ai_tools",
            "type": "multiple",
            "text": "Which kinds of AI help have you used for programming?",
            "help_text": "Tick all that apply.",
            "show_if": AI_USERS,
            "choices": _opts(
                ("inline", "Suggestions that appear as you type (e.g. GitHub Copilot)"),
                ("chat", "A chat assistant (e.g. ChatGPT, Claude or Gemini)"),
                ("ai_editor", "An editor built around AI (e.g. Cursor)"),
                ("agent", "An agent that edits and runs code by itself"),
                ("other", "Something else"),
            ),
        },
        {
            "key": "ai_tasks",
            "type": "multiple",
            "text": "What do you usually ask AI assistants to help with?",
            "help_text": "Tick all that apply.",
            "required": False,
            "show_if": REGULAR_AI_USERS,
            "choices": _opts(
                ("write", "Writing new code"),
                ("explain", "Explaining code or error messages"),
                ("debug", "Finding and fixing bugs"),
                ("tests", "Writing tests"),
                ("docs", "Writing documentation or comments"),
                ("learn", "Learning an unfamiliar library or API"),
                ("design", "Talking through a design or approach"),
            ),
        },
        {
            "key": "ai_checks_output",
            "type": "likert5",
            "text": "When an AI assistant gives me code, I check it carefully before using it.",
            "show_if": AI_USERS,
            "choices": AGREE,
        },
        {
            "key": "english_comfort",
            "type": "likert5",
            "text": "How comfortable are you reading technical instructions written in English?",
            "choices": _anchors("Not comfortable at all", "Completely comfortable"),
        },
        {
            "key": "track_preference",
            "type": "single",
            "text": "The study has three kinds of tasks. Which kind would you like to work on?",
            "help_text": "We follow your choice whenever we can; the research team may "
            "occasionally assign another kind to keep the groups balanced.",
            "choices": _opts(
                ("SDE", "Software development: services, APIs and data handling"),
                ("MLE", "Machine-learning engineering: training, evaluating and serving models"),
                ("DS", "Data science: exploring data and computing statistical summaries"),
                ("none", "No preference: any kind is fine"),
            ),
        },
        {
            "key": "screening_comments",
            "type": "long_text",
            "text": "Is there anything else about your programming background you want us to know?",
            "help_text": NO_PII,
            "required": False,
        },
    ],
}

# --- After each trial ---------------------------------------------------------------------
_TLX_HELP = "Enter a number from 0 to 100. "

POST_TRIAL: Spec = {
    "slug": "post-trial",
    "title": "About the task you just finished",
    "kind": "post_trial",
    "intro": (
        "A few quick questions about the task you have just finished. There are no right or "
        "wrong answers: we want to know how the task felt *to you*.\n\n"
        "The first six questions use a scale from **0** (very low) to **100** (very high)."
    ),
    "items": [
        {
            "key": "tlx_mental",
            "type": "number",
            "text": "Mental demand: how much thinking, remembering and deciding did the task ask "
            "of you?",
            "help_text": _TLX_HELP + "0 = very little, 100 = a great deal.",
        },
        {
            "key": "tlx_physical",
            "type": "number",
            "text": "Physical demand: how much physical effort did the task take (typing, "
            "sitting, watching the screen)?",
            "help_text": _TLX_HELP + "0 = very little, 100 = a great deal.",
        },
        {
            "key": "tlx_temporal",
            "type": "number",
            "text": "Time pressure: how hurried did you feel by the pace of the task?",
            "help_text": _TLX_HELP + "0 = not hurried at all, 100 = extremely hurried.",
        },
        {
            "key": "tlx_performance",
            "type": "number",
            "text": "Performance: how far did you fall short of what you set out to achieve?",
            "help_text": _TLX_HELP + "0 = I achieved everything I aimed for, 100 = I achieved "
            "nothing I aimed for. (Higher means worse, like the other questions.)",
        },
        {
            "key": "tlx_effort",
            "type": "number",
            "text": "Effort: how hard did you have to push yourself to reach the result you got?",
            "help_text": _TLX_HELP + "0 = hardly at all, 100 = extremely hard.",
        },
        {
            "key": "tlx_frustration",
            "type": "number",
            "text": "Frustration: how irritated, stressed or discouraged did you feel?",
            "help_text": _TLX_HELP + "0 = not at all, 100 = extremely.",
        },
        {
            "key": "confidence_correct",
            "type": "likert7",
            "text": "How confident are you that the solution you submitted is correct?",
            "choices": CONFIDENCE,
            "scale": "confidence",
        },
        {
            "key": "confidence_efficient",
            "type": "likert7",
            "text": "How confident are you that your solution is fast and lean enough?",
            "choices": CONFIDENCE,
            "scale": "confidence_efficiency",
        },
        {
            "key": "understood_task",
            "type": "likert7",
            "text": "How well did you understand what the task asked for?",
            "choices": _anchors("Not at all", "Completely"),
        },
        {
            "key": "trial_comments",
            "type": "long_text",
            "text": "Anything you want to tell us about this task?",
            "help_text": NO_PII,
            "required": False,
        },
    ],
}
for _item in POST_TRIAL["items"][:6]:
    _item.update(min_value=0, max_value=100, scale="nasa_tlx")

# --- After the last trial -----------------------------------------------------------------
POST_STUDY: Spec = {
    "slug": "post-study",
    "title": "Looking back on the study",
    "kind": "post_study",
    "intro": (
        "You have finished all the tasks - thank you! This last questionnaire asks about the "
        "platform, how working **with the AI assistant** compared with working **without the "
        "AI assistant**, and how realistic the study felt. It takes about ten minutes."
    ),
    "items": [
        # Usability of the platform
        {"key": "us_easy", "type": "likert5", "text": "The study platform was easy to use."},
        {
            "key": "us_focus",
            "type": "likert5",
            "text": "I could concentrate on the tasks rather than on the tools.",
        },
        {
            "key": "us_editor",
            "type": "likert5",
            "text": "The code editor and the test runner behaved as I expected.",
        },
        {
            "key": "us_instructions",
            "type": "likert5",
            "text": "Each page made clear what I had to do next.",
        },
        {
            "key": "us_unsure",
            "type": "likert5",
            "text": "I was often unsure what the platform was doing with my work.",
            "scale": "usability:r",
        },
        {
            "key": "us_slow",
            "type": "likert5",
            "text": "The platform was slow or got in my way.",
            "scale": "usability:r",
        },
        # The two conditions compared
        {
            "key": "cmp_preferred",
            "type": "single",
            "text": "If you had to solve a similar task tomorrow, how would you rather work?",
            "choices": _opts(
                ("with_ai", "With the AI assistant"),
                ("without_ai", "Without the AI assistant"),
                ("no_preference", "I have no preference"),
            ),
        },
        {
            "key": "cmp_faster",
            "type": "single",
            "text": "When did you make progress faster?",
            "choices": WITH_WITHOUT,
        },
        {
            "key": "cmp_better",
            "type": "single",
            "text": "When do you think your solutions were better?",
            "choices": WITH_WITHOUT,
        },
        # Cognitive load and confidence per condition
        {
            "key": "load_with_ai",
            "type": "likert7",
            "text": "How much mental effort did the tasks you did with the AI assistant take?",
            "choices": _anchors("Very little", "A great deal"),
            "scale": "load_with_ai",
        },
        {
            "key": "load_without_ai",
            "type": "likert7",
            "text": "How much mental effort did the tasks you did without the AI assistant take?",
            "choices": _anchors("Very little", "A great deal"),
            "scale": "load_without_ai",
        },
        {
            "key": "overview_with_ai",
            "type": "likert7",
            "text": "When working with the AI assistant, how hard was it to keep track of what "
            "your code was doing?",
            "choices": _anchors("Very easy", "Very hard"),
            "scale": "load_with_ai",
        },
        {
            "key": "overview_without_ai",
            "type": "likert7",
            "text": "When working without the AI assistant, how hard was it to keep track of "
            "what your code was doing?",
            "choices": _anchors("Very easy", "Very hard"),
            "scale": "load_without_ai",
        },
        {
            "key": "confidence_with_ai",
            "type": "likert7",
            "text": "How confident are you in the solutions you submitted with the AI assistant?",
            "choices": CONFIDENCE,
            "scale": "confidence_with_ai",
        },
        {
            "key": "confidence_without_ai",
            "type": "likert7",
            "text": "How confident are you in the solutions you submitted without the AI "
            "assistant?",
            "choices": CONFIDENCE,
            "scale": "confidence_without_ai",
        },
        # Roles the AI played
        {
            "key": "ai_roles",
            "type": "multiple",
            "text": "What did the AI assistant do for you while you worked with it?",
            "help_text": "Tick all that apply.",
            "choices": _opts(
                ("explainer", "Helped me understand the problem and its requirements"),
                ("planner", "Suggested an approach or a plan"),
                ("coder", "Wrote code that I then used"),
                ("debugger", "Helped me find or fix bugs"),
                ("reviewer", "Reviewed or explained code I had written"),
                ("reference", "Answered questions about libraries or syntax"),
                ("tester", "Wrote or suggested tests"),
                ("little", "I hardly used it"),
            ),
        },
        {
            "key": "ai_main_stage",
            "type": "single",
            "text": "At which stage of your work was the AI assistant most useful?",
            "choices": _opts(
                ("comprehension", "Understanding the problem"),
                ("planning", "Planning the solution"),
                ("generation", "Writing the code"),
                ("debugging", "Testing and debugging"),
                ("none", "It was not really useful"),
            ),
        },
        {
            "key": "ai_in_control",
            "type": "likert5",
            "text": "I stayed in charge of the solution while working with the AI assistant.",
        },
        # Trust in code and explanations
        {
            "key": "trust_code_correct",
            "type": "likert5",
            "text": "The code the AI assistant wrote was usually correct.",
            "scale": "trust_code",
        },
        {
            "key": "trust_code_every_line",
            "type": "likert5",
            "text": "I felt I had to double-check every line the AI assistant wrote.",
            "scale": "trust_code:r",
        },
        {
            "key": "trust_code_real_work",
            "type": "likert5",
            "text": "After a normal review, I would use code from this assistant in real work.",
            "scale": "trust_code",
        },
        {
            "key": "trust_expl_accurate",
            "type": "likert5",
            "text": "What the AI assistant told me about code and requirements was accurate.",
            "scale": "trust_explanations",
        },
        {
            "key": "trust_expl_helpful",
            "type": "likert5",
            "text": "The AI assistant's explanations helped me understand the task or the code.",
            "scale": "trust_explanations",
        },
        {
            "key": "trust_expl_misled",
            "type": "likert5",
            "text": "At least once, an explanation from the AI assistant led me the wrong way.",
            "scale": "trust_explanations:r",
        },
        # Order effects
        {
            "key": "order_effect",
            "type": "single",
            "text": "Do you think the order in which you worked with and without the AI "
            "assistant changed how you worked?",
            "choices": _opts(
                ("a_lot", "Yes, a lot"),
                ("somewhat", "Yes, somewhat"),
                ("no", "No"),
                ("unsure", "I am not sure"),
            ),
        },
        {
            "key": "order_effect_how",
            "type": "long_text",
            "text": "How did the order change the way you worked?",
            "required": False,
            "show_if": {"item": "order_effect", "in": ["a_lot", "somewhat"]},
        },
        {
            "key": "practice_effect",
            "type": "likert5",
            "text": "Later tasks felt easier because I had got used to the platform and the "
            "style of the tasks.",
        },
        # Realism
        {
            "key": "real_tasks",
            "type": "likert5",
            "text": "The tasks resembled problems I meet in my work or studies.",
            "scale": "realism",
        },
        {
            "key": "real_requirements",
            "type": "likert5",
            "text": "The unclear or incomplete parts of the tasks felt like real project "
            "requirements.",
            "scale": "realism",
        },
        {
            "key": "real_time",
            "type": "likert5",
            "text": "The time limit let me work the way I usually do.",
            "scale": "realism",
        },
        {
            "key": "real_ai_use",
            "type": "likert5",
            "text": "Working with the AI assistant here felt like using AI tools elsewhere.",
            "scale": "realism",
        },
        # Score reports
        {
            "key": "report_seen",
            "type": "single",
            "text": "Have you already seen score reports for your tasks?",
            "choices": _opts(("yes", "Yes"), ("no", "No")),
        },
        {
            "key": "report_accuracy",
            "type": "likert5",
            "text": "The score reports matched how well I think I did.",
            "show_if": {"item": "report_seen", "in": ["yes"]},
        },
        {
            "key": "report_clarity",
            "type": "likert5",
            "text": "The score reports were easy to understand.",
            "show_if": {"item": "report_seen", "in": ["yes"]},
        },
        {
            "key": "report_comments",
            "type": "long_text",
            "text": "Did anything in the score reports surprise you or seem wrong?",
            "required": False,
            "show_if": {"item": "report_seen", "in": ["yes"]},
        },
        # Free text
        {
            "key": "comments_ai_helped",
            "type": "long_text",
            "text": "What helped you most when working with the AI assistant?",
            "required": False,
        },
        {
            "key": "comments_ai_hindered",
            "type": "long_text",
            "text": "What got in your way most when working with the AI assistant?",
            "required": False,
        },
        {
            "key": "comments_general",
            "type": "long_text",
            "text": "Is there anything else you would like to tell us about the study?",
            "help_text": NO_PII,
            "required": False,
        },
    ],
}
for _item in POST_STUDY["items"]:
    if _item["type"] == "likert5":
        _item.setdefault("choices", AGREE)
    if _item["key"].startswith("us_"):
        _item.setdefault("scale", "usability")

QUESTIONNAIRES: tuple[Spec, ...] = (SCREENING, POST_TRIAL, POST_STUDY)

# --- Default consent ----------------------------------------------------------------------
# ``string.Template`` placeholders: $study_title, $contact, $withdrawal (filled at install).
CONSENT_VERSION = "1.0"
CONSENT_TITLE = "Information and consent"
CONSENT_BODY = """\
## About this study

You are invited to take part in **$study_title**, a research study of how people solve
programming tasks with and without an AI assistant. Please read this page carefully. Take
your time, and ask the research team if anything is unclear.

## What you will be asked to do

1. Answer a short questionnaire about your background and your use of programming tools.
2. Solve programming tasks in your web browser, usually four tasks over two sessions about a
   day apart. Each task has a time limit (normally 60 minutes). For some tasks an AI assistant
   is available; for others it is switched off.
3. Answer a few questions after each task, and a final questionnaire at the end.

Altogether this takes about four and a half hours.

## What the platform records

While you work on a task, the platform records:

- **your code**: the files you write, every edit you make and when you made it, so that your
  work can be replayed step by step, and the solutions you submit;
- **test runs**: when you run the visible tests and what the results were, and the results
  of the hidden tests we run on your submissions;
- **your interactions with the AI assistant**: what you type to it, what it answers, which
  suggestions you accept or reject, and how many tokens each exchange used;
- **timings**: when each task starts and ends, periods of activity and inactivity, and whether
  the study page is in focus (not what you do elsewhere on your computer);
- **your questionnaire answers**.

We do **not** use your camera or microphone, record your screen, or read other browser tabs.

Your requests to the AI assistant are sent to an external AI provider to produce the answers.
Please do not type personal information into the assistant or into your code.

## How your data is protected and anonymised

- You use an account with a random pseudonym. We do not need your name to run the study.
- Any contact or payment details are kept apart from the study data, encrypted, seen only
  by the people who handle contact and payment, and deleted when they are no longer needed.
- In the research data you are identified only by a random code. Times are stored relative to
  the start of the study, and background questions use broad groups (for example age ranges).
- Before data leaves the research team we remove or coarsen anything that could single you
  out, check free-text answers for personal details, and merge or hide small groups.
- Results are published only as statistics and anonymous examples. A de-identified data set
  may be shared with other researchers. Your code is included in a public data set only if you
  tick the optional box below.

## Risks and benefits

The risks are small: you may find some tasks tiring or frustrating. You can take a break
between tasks. You may learn about your own way of working with AI tools, and you will see
score reports for your tasks when the study releases them.

## Taking part is voluntary

You may stop at any time, without giving a reason and without any disadvantage, using the
*Withdraw from the study* link at the top of every page. $withdrawal

Data that has already been published in anonymous form cannot be withdrawn, because it can
no longer be linked to you.

## Questions

Contact: $contact
"""
WITHDRAWAL_KEEP = (
    "If you withdraw, we stop collecting data at once; what was collected up to then is kept "
    "and used as described above."
)
WITHDRAWAL_DELETE = (
    "If you withdraw, we stop collecting data at once and delete the research data collected "
    "from you."
)
NO_CONTACT = "the research team named on the study's welcome page."

CONSENT_CHECKBOXES: list[dict[str, Any]] = [
    {"id": "adult", "label": "I am 18 years of age or older.", "required": True},
    {
        "id": "read_understood",
        "label": "I have read and understood the information above.",
        "required": True,
    },
    {
        "id": "voluntary",
        "label": "I take part voluntarily and know that I can stop at any time.",
        "required": True,
    },
    {
        "id": "data_use",
        "label": "I agree that my code, edits, AI interactions, timings and answers are "
        "recorded and used as described above.",
        "required": True,
    },
    {
        "id": "public_code",
        "label": "Optional: my de-identified code may be included in a public data set.",
        "required": False,
    },
    {
        "id": "future_contact",
        "label": "Optional: the research team may contact me about future studies.",
        "required": False,
    },
]
