"""multi-session facts (templates): 2-4 statements in different sessions, aggregated (a count or a sum).

``_ms`` picks a kind not yet claimed (``spend`` may repeat) and calls its maker from
``_MS_MAKERS``; counts come from ``_ms_count``, sums from ``_ms_sum``.
"""

from __future__ import annotations

from lazymem.data.synthetic.facts_user import _price, _price_stmt
from lazymem.data.synthetic.model import _Draw, _Exhausted, _Fact, _join, _money, _Stmt
from lazymem.data.synthetic.pools import BANDS, BOOK_TITLES, COUNTRIES, CUISINES, MUSEUMS, PRODUCTS


# --- multi-session: k statements in k sessions, aggregated
def _ms(d: _Draw, k: int) -> _Fact | None:
    kinds = ["countries", "spend", "books", "miles", "concerts", "volunteer", "museums", "cooking", "savings"]
    d.rng.shuffle(kinds)
    for kind in kinds:
        if kind == "spend" or f"ms:{kind}" not in d.claimed:
            d.claimed.add(f"ms:{kind}")
            try:
                return _MS_MAKERS[kind](d, k)
            except _Exhausted:
                continue
    return None


def _varied(d: _Draw, templates: tuple, k: int) -> list:
    """k templates, without repeats while there are enough."""
    return [templates[i % len(templates)] for i in d.rng.sample(range(len(templates)), min(k, len(templates)))] + [
        d.pick(templates) for _ in range(k - len(templates))
    ]


def _ms_count(d, k, pool, theme, templates, question, reply):
    values = [d.one(pool) for _ in range(k)]
    stmts = [_Stmt(theme, t.format(v=v), reply, (v,)) for v, t in zip(values, _varied(d, templates, k))]
    return _Fact("multi-session", stmts, question, str(k))


def _ms_countries(d, k):
    return _ms_count(
        d,
        k,
        COUNTRIES,
        "travel",
        (
            "I just got back from a week in {v}, and I'm still sorting through my photos. What's a good way to organize "
            "travel pictures?",
            "Back home after my trip to {v}! I want to turn the best photos into a photo book. Which services are good?",
            "I spent last week in {v} and fell in love with the food. Can you suggest a recipe to recreate something "
            "from there?",
            "My trip to {v} was amazing, but the flight home wrecked my sleep. How do I reset my schedule?",
        ),
        "How many different countries have I traveled to?",
        "Sounds like a wonderful trip. Pick a favorite few photos per day and let the rest go; it keeps the "
        "album readable.",
    )


def _ms_books(d, k):
    return _ms_count(
        d,
        k,
        BOOK_TITLES,
        "books",
        (
            "I just finished reading '{v}' and I can't stop thinking about the ending. Can you suggest discussion "
            "questions for my book club?",
            "Finished '{v}' last night. What should I read next if I liked its pacing?",
            "I finally finished '{v}' on my commute. Is it normal to feel a bit sad when a good book ends?",
        ),
        "How many books have I finished reading?",
        "That's a great feeling. Ask what the characters wanted, what changed them, and whether the ending felt "
        "earned.",
    )


def _ms_concerts(d, k):
    return _ms_count(
        d,
        k,
        BANDS,
        "social",
        (
            "I went to see {v} live last night, and the opener was fantastic too. How do I find out about smaller shows "
            "in my area?",
            "Saw {v} in concert on Saturday and my ears are still ringing. Should I start bringing earplugs?",
            "I caught {v} at a small venue downtown yesterday. How do people get tickets before they sell out?",
        ),
        "How many concerts have I been to?",
        "Local venue newsletters and artists' mailing lists are the best way to hear about shows early.",
    )


def _ms_museums(d, k):
    return _ms_count(
        d,
        k,
        MUSEUMS,
        "travel",
        (
            "I spent the whole afternoon at {v} today. How do people keep museum visits from getting exhausting?",
            "Finally visited {v} this weekend and loved it. Are museum memberships usually worth it?",
            "I went to {v} with a friend yesterday. Any tips for taking good photos in dim galleries?",
        ),
        "How many different museums have I visited?",
        "Pick one or two rooms to see properly and skim the rest; a coffee break halfway helps a lot.",
    )


def _ms_cooking(d, k):
    return _ms_count(
        d,
        k,
        CUISINES,
        "food",
        (
            "I took a {v} cooking class on Saturday and we made everything from scratch. How do I keep practicing at "
            "home?",
            "Just finished a {v} cooking class with a friend. Which pantry staples should I stock up on?",
        ),
        "How many different cooking classes have I taken?",
        "Cook one of the class recipes again this week while it's fresh, then start changing one thing at a time.",
    )


def _ms_sum(d, k, theme, lo, hi, step, fmt, templates, question, total_fmt):
    values = [d.rng.randrange(lo, hi, step) for _ in range(k)]
    stmts = [_Stmt(theme, u.format(v=fmt(v)), a, (fmt(v),)) for v, (u, a) in zip(values, _varied(d, templates, k))]
    return _Fact("multi-session", stmts, question, total_fmt(sum(values)))


def _ms_miles(d, k):
    return _ms_sum(
        d,
        k,
        "fitness",
        8,
        41,
        1,
        lambda v: f"{v} miles",
        (
            (
                "I biked {v} miles this morning along the river trail. How should I fuel for longer rides?",
                "Eat something with carbohydrates before you go, and on rides over an hour bring a snack and water.",
            ),
            (
                "Did {v} miles on the bike today and my knees are a little sore. Could my saddle be too low?",
                "Quite possibly. Knee pain at the front often means the saddle is too low; raise it a few millimeters.",
            ),
            (
                "I rode {v} miles on my bike with a friend yesterday. What's a good way to build up to a century ride?",
                "Add about ten percent to your longest ride each week, with an easier week every month.",
            ),
        ),
        "How many miles have I biked in total?",
        lambda s: f"{s} miles",
    )


def _ms_volunteer(d, k):
    return _ms_sum(
        d,
        k,
        "social",
        2,
        7,
        1,
        lambda v: f"{v} hours",
        (
            (
                "I volunteered {v} at the animal shelter this week. Is there a good way to track volunteer hours for my "
                "résumé?",
                "A simple spreadsheet with dates, hours and tasks works; some shelters also log hours for you.",
            ),
            (
                "Spent {v} walking dogs at the animal shelter today. How do I keep the shy ones from getting stressed?",
                "Move slowly, let them approach you, and keep the first walks short and quiet.",
            ),
            (
                "I put in {v} at the animal shelter on Saturday, mostly cleaning kennels. Any ideas for enrichment toys "
                "I could make?",
                "Frozen treat cups, snuffle mats from old fleece, and cardboard boxes stuffed with paper.",
            ),
        ),
        "How many hours have I volunteered at the animal shelter in total?",
        lambda s: f"{s} hours",
    )


def _ms_savings(d, k):
    return _ms_sum(
        d,
        k,
        "money",
        100,
        950,
        50,
        _money,
        (
            (
                "I moved {v} into my savings account today. Is a high-yield savings account worth switching to?",
                "Usually yes: the rate difference adds up, and moving money online takes only a few minutes.",
            ),
            (
                "Just transferred {v} to savings from my bonus. Should I keep it there or invest some?",
                "Keep your emergency fund in savings; money you won't need for five years or more can be invested.",
            ),
            (
                "I put {v} into savings this month by cooking at home more. Any other easy ways to save?",
                "Cancel subscriptions you don't use, and set up an automatic transfer on payday.",
            ),
        ),
        "How much money have I moved into savings in total?",
        _money,
    )


def _ms_spend(d, k):
    items = [d.one(PRODUCTS) for _ in range(k)]
    prices = [_price(d, it) for it in items]
    stmts = [_price_stmt(d, it, p) for it, p in zip(items, prices)]
    return _Fact("multi-session", stmts, f"How much did I spend in total on my {_join(items)}?", _money(sum(prices)))


_MS_MAKERS = {
    "countries": _ms_countries,
    "spend": _ms_spend,
    "books": _ms_books,
    "miles": _ms_miles,
    "concerts": _ms_concerts,
    "volunteer": _ms_volunteer,
    "museums": _ms_museums,
    "cooking": _ms_cooking,
    "savings": _ms_savings,
}
