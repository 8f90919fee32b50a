"""temporal-reasoning facts (templates): events stated on the day they happen ("today (Saturday, May 20)").

The answers (days between, days ago, which first, when) come from the session dates, so
``_tr`` returns a fact whose ``resolve`` builds question and answer once the statements
have been placed in sessions.
"""

from __future__ import annotations

from lazymem.data.synthetic.model import _day_phrase, _Draw, _Fact, _md, _Stmt, _your

# --- temporal-reasoning: (base, past, gerund, key, theme, follow-up, reply)
EVENTS = (
    (
        "go to my first pottery class",
        "went to my first pottery class",
        "going to my first pottery class",
        "pottery class",
        "hobbies",
        "Any tips for centering clay on the wheel?",
        "Keep your elbows braced on your knees, use plenty of water, and let the wheel do the work.",
    ),
    (
        "run my first half marathon",
        "ran my first half marathon",
        "running my first half marathon",
        "half marathon",
        "fitness",
        "How should I recover this week?",
        "Easy walks, extra sleep and plenty of protein. Hold off on hard runs for at least a week.",
    ),
    (
        "get my wisdom teeth removed",
        "got my wisdom teeth removed",
        "getting my wisdom teeth removed",
        "wisdom teeth",
        "health",
        "What soft foods can I eat for the next few days?",
        "Yogurt, smoothies without a straw, mashed potatoes, scrambled eggs and lukewarm soup.",
    ),
    (
        "plant tomatoes in the backyard",
        "planted tomatoes in the backyard",
        "planting tomatoes in the backyard",
        "tomatoes",
        "home",
        "How often should I water them at first?",
        "Water deeply every couple of days while they establish, and mulch to keep the soil moist.",
    ),
    (
        "repaint the living room",
        "repainted the living room",
        "repainting the living room",
        "living room",
        "home",
        "How long should I wait before hanging pictures again?",
        "Give the paint at least two or three days, and a bit longer if it's humid.",
    ),
    (
        "sign up for an evening Spanish course",
        "signed up for an evening Spanish course",
        "signing up for an evening Spanish course",
        "Spanish course",
        "hobbies",
        "How can I practice between lessons?",
        "Ten minutes of flashcards a day, a podcast for learners, and narrating your day in Spanish.",
    ),
    (
        "get my car serviced",
        "got my car serviced",
        "getting my car serviced",
        "serviced",
        "money",
        "How often should I be doing this?",
        "Most cars need a service every 10,000 to 15,000 kilometers or once a year.",
    ),
    (
        "donate blood for the first time",
        "donated blood for the first time",
        "donating blood for the first time",
        "donated blood",
        "health",
        "How soon can I exercise again?",
        "Take it easy for the rest of the day and skip hard workouts until tomorrow.",
    ),
    (
        "finish my first 1,000-piece puzzle",
        "finished my first 1,000-piece puzzle",
        "finishing my first 1,000-piece puzzle",
        "1,000-piece puzzle",
        "hobbies",
        "Is there a good way to frame it?",
        "Use puzzle glue on the front, let it dry overnight, and mount it on foam board before framing.",
    ),
    (
        "go on my first scuba dive",
        "went on my first scuba dive",
        "going on my first scuba dive",
        "scuba dive",
        "travel",
        "Should I get certified next?",
        "If you enjoyed it, an open-water certification course is the natural next step.",
    ),
    (
        "see a live opera for the first time",
        "saw a live opera for the first time",
        "seeing a live opera for the first time",
        "live opera",
        "books",
        "Which opera should I see next?",
        "Something with famous melodies is a good second step, like a popular Italian classic.",
    ),
    (
        "get my flu shot",
        "got my flu shot",
        "getting my flu shot",
        "flu shot",
        "health",
        "Is a sore arm normal?",
        "Yes, a sore arm for a day or two is very common. Moving it around helps.",
    ),
    (
        "file my taxes",
        "filed my taxes",
        "filing my taxes",
        "taxes",
        "money",
        "How long should I keep the paperwork?",
        "Keeping records for about seven years is a safe rule of thumb.",
    ),
    (
        "bake my first sourdough loaf",
        "baked my first sourdough loaf",
        "baking my first sourdough loaf",
        "sourdough loaf",
        "food",
        "Why is the crumb so dense?",
        "Usually the dough was under-proofed. Try a longer bulk fermentation in a warm spot.",
    ),
    (
        "join a community choir",
        "joined a community choir",
        "joining a community choir",
        "community choir",
        "hobbies",
        "How do I get better at sight-reading?",
        "Practice a few lines a day, clap the rhythm first, and sing along with recordings of your part.",
    ),
    (
        "host a dinner party for ten people",
        "hosted a dinner party for ten people",
        "hosting a dinner party for ten people",
        "dinner party",
        "food",
        "How do I get wine stains out of a tablecloth?",
        "Blot, then cover with salt or baking soda, and wash in cold water as soon as you can.",
    ),
    (
        "go on my first overnight backpacking trip",
        "got back from my first overnight backpacking trip",
        "going on my first overnight backpacking trip",
        "backpacking trip",
        "travel",
        "My legs are wrecked. What helps?",
        "Gentle walking, stretching, a warm bath and plenty of water.",
    ),
    (
        "start a 30-day yoga challenge",
        "started a 30-day yoga challenge",
        "starting a 30-day yoga challenge",
        "yoga challenge",
        "fitness",
        "How do I stay consistent?",
        "Same time every day, mat left out, and a short session on busy days still counts.",
    ),
    (
        "renew my passport",
        "renewed my passport",
        "renewing my passport",
        "passport",
        "travel",
        "How long does the new one usually take to arrive?",
        "Often several weeks, so keep the receipt handy.",
    ),
    (
        "volunteer at the food bank",
        "volunteered at the food bank",
        "volunteering at the food bank",
        "food bank",
        "social",
        "How can I get more involved?",
        "Ask about regular shifts or helping with a food drive; steady volunteers are always needed.",
    ),
    (
        "go to the farmers market for the first time",
        "went to the farmers market for the first time",
        "going to the farmers market for the first time",
        "farmers market",
        "food",
        "What's in season right now?",
        "Look for whatever is piled highest; that's usually what's at its peak this week.",
    ),
    (
        "sell my old bike",
        "sold my old bike",
        "selling my old bike",
        "old bike",
        "money",
        "What should I do with the money?",
        "Putting it toward a goal you care about makes it feel more rewarding.",
    ),
    (
        "get an MRI on my knee",
        "got an MRI on my knee",
        "getting an MRI on my knee",
        "MRI",
        "health",
        "How long do results usually take?",
        "Often a few days; your doctor's office can tell you what to expect.",
    ),
    (
        "attend a college friend's wedding",
        "attended a college friend's wedding",
        "attending a college friend's wedding",
        "wedding",
        "social",
        "What's a nice way to follow up with the couple?",
        "A short card with a favorite moment from the day is a lovely touch.",
    ),
)
_EVENT_INTROS = ("", "Quick update: ", "Guess what? ", "Big day: ", "So, ")


def _event_stmt(d: _Draw, ev: tuple) -> _Stmt:
    base, past, gerund, key, theme, follow, reply = ev
    user = f"{d.pick(_EVENT_INTROS)}I {past} today ({{date}}). {follow}"
    return _Stmt(theme, user, reply, (key, "{date}"))


def _tr(d: _Draw, variant: str) -> _Fact | None:
    free = [e for e in EVENTS if e[3] not in d.used]
    if len(free) < 2:
        return None
    a, b = d.rng.sample(free, 2)
    d.used.update((a[3], b[3]))
    if variant == "between":

        def resolve(when, asked):
            days = (when[1].date() - when[0].date()).days
            return (f"How many days passed between {a[2]} and {b[2]}?", f"{days} day{'s' * (days != 1)}")

        return _Fact(
            "temporal-reasoning", [_event_stmt(d, a), _event_stmt(d, b)], "", "", distinct_days=True, resolve=resolve
        )
    if variant == "first":
        swap = d.rng.random() < 0.5

        def resolve(when, asked):
            x, y = (b, a) if swap else (a, b)
            return (
                f"Which did I do first, {x[2]} or {y[2]}?",
                f"{_your(a[2])[0].upper()}{_your(a[2])[1:]} came first, on {_md(when[0])}.",
            )

        return _Fact(
            "temporal-reasoning", [_event_stmt(d, a), _event_stmt(d, b)], "", "", distinct_days=True, resolve=resolve
        )
    if variant == "ago":

        def resolve(when, asked):
            days = (asked.date() - when[0].date()).days
            return f"How many days ago did I {a[0]}?", f"{days} day{'s' * (days != 1)} ago ({_md(when[0])})"

        return _Fact("temporal-reasoning", [_event_stmt(d, a)], "", "", resolve=resolve)

    def resolve(when, asked):
        w = when[0]
        return f"When did I {a[0]}?", f"On {_day_phrase(w)}, {w.year}."

    return _Fact("temporal-reasoning", [_event_stmt(d, a)], "", "", resolve=resolve)
