"""single-session-preference facts (templates): the user states a like or dislike; the answer is a rubric.

Each family is one (statement, question, rubric) template with ``{slot}`` fillers drawn
per history; ``_SSP_FAMILIES`` lists them.
"""

from __future__ import annotations

from lazymem.data.synthetic.model import _Draw, _Fact, _Stmt
from lazymem.data.synthetic.pools import CITIES, CUISINES, GENRES


def _ssp(key: str, theme: str, user: str, assistant: str, contains: tuple[str, ...], question: str, rubric: str):
    def make(d: _Draw) -> _Fact | None:
        if d.key("ssp", (key,)) is None:
            return None
        slots = {
            "cuisine": d.pick(CUISINES),
            "diet": d.pick(("vegetarian", "pescatarian", "vegan")),
            "genre": d.pick(GENRES),
            "city": d.pick(CITIES),
            "film": d.pick(("mystery", "science fiction", "period drama", "romantic comedy", "heist", "western")),
        }
        f = lambda s: s.format(**slots)  # noqa: E731
        return _Fact(
            "single-session-preference",
            [_Stmt(theme, f(user), f(assistant), tuple(map(f, contains)))],
            f(question),
            f(rubric),
        )

    return make


_SSP_FAMILIES = (
    _ssp(
        "food",
        "food",
        "I've been {diet} for a few years now, and {cuisine} food is my absolute favorite. Could you help me put "
        "together a grocery list for the week?",
        "Sure. Build it around a few staples you can mix and match: grains, beans or tofu, lots of vegetables, "
        "and a couple of sauces for variety.",
        ("{diet}", "{cuisine}"),
        "Can you suggest a dinner I could cook tonight?",
        "The user would prefer {diet} dinner ideas, ideally {cuisine}-inspired dishes. They would not prefer "
        "recipes that don't fit a {diet} diet.",
    ),
    _ssp(
        "books",
        "books",
        "I'm a huge fan of {genre}, especially books with a twist I don't see coming. How can I find more like that?",
        "Reader forums and 'if you liked this' lists are great for that, and librarians give excellent "
        "recommendations if you name two or three favorites.",
        ("{genre}",),
        "Can you recommend a book for my next flight?",
        "The user would prefer {genre} recommendations, ideally with a surprising twist. They might not prefer "
        "books from genres they haven't mentioned enjoying.",
    ),
    _ssp(
        "travel",
        "travel",
        "Whenever I travel I'm happiest somewhere quiet in nature, like a cabin near a lake. Crowded tourist spots "
        "wear me out. How do I find places like that?",
        "Look at smaller regional parks, book midweek, and search rental sites with a map view away from the "
        "big towns.",
        ("quiet in nature",),
        "Any ideas for a long weekend trip next month?",
        "The user would prefer quiet, nature-focused getaways such as a cabin near a lake. They would not prefer "
        "crowded tourist destinations or busy city breaks.",
    ),
    _ssp(
        "exercise",
        "fitness",
        "I honestly can't stand running, but I could go swimming every single day. How do I make swimming a "
        "better full-body workout?",
        "Mix strokes, add short intervals with rest, and use a kickboard and pull buoy to focus on legs and "
        "arms separately.",
        ("can't stand running",),
        "What workout should I do this weekend?",
        "The user would prefer swimming or other low-impact workouts they enjoy. They would not prefer running.",
    ),
    _ssp(
        "music",
        "hobbies",
        "For background music I mostly go for jazz, especially old piano trios. How do I discover more of it?",
        "Follow the sidemen: look up who played on the records you love and explore their other albums.",
        ("jazz",),
        "Can you suggest some music for my study session tonight?",
        "The user would prefer jazz, especially piano trio recordings. They might not prefer pop or genres with "
        "prominent vocals.",
    ),
    _ssp(
        "drinks",
        "health",
        "I'm cutting out caffeine after 2 p.m., and I've gotten really into herbal teas like rooibos. What else "
        "is similar?",
        "Honeybush is close to rooibos, and chamomile, peppermint and lemon balm are all caffeine-free and easy "
        "to find.",
        ("rooibos",),
        "What should I drink this afternoon?",
        "The user would prefer a caffeine-free drink such as rooibos or another herbal tea. They would not prefer "
        "coffee or other caffeinated drinks in the afternoon.",
    ),
    _ssp(
        "movies",
        "books",
        "I love a good {film} movie, but I can't handle horror at all. What makes a movie night feel special?",
        "Good snacks, phones away, and picking the film in advance so nobody scrolls for an hour.",
        ("can't handle horror",),
        "What should I watch tonight?",
        "The user would prefer a {film} movie. They would not prefer horror movies.",
    ),
    _ssp(
        "gadgets",
        "tech",
        "I've used Lenovo laptops for years, and battery life is the thing I care about most. How do I keep a "
        "laptop battery healthy?",
        "Avoid keeping it at 100% all the time, keep it cool, and use the manufacturer's battery-saving charge "
        "limit if it has one.",
        ("battery life",),
        "Which new laptop should I consider?",
        "The user would prefer a Lenovo laptop with long battery life. They might not prefer models with short "
        "battery life, whatever their other strengths.",
    ),
    _ssp(
        "stays",
        "travel",
        "When I travel I always prefer small guesthouses over big chain hotels, and I need a kitchen so I can "
        "cook. Is that usually cheaper?",
        "Often, especially for longer stays, since cooking a few meals saves a lot. Weekly discounts help too.",
        ("small guesthouses",),
        "Where should I stay on my trip to {city}?",
        "The user would prefer a small guesthouse or apartment with a kitchen. They would not prefer large "
        "chain hotels.",
    ),
    _ssp(
        "podcasts",
        "books",
        "I listen to history podcasts on my walks, but I prefer episodes under 30 minutes. How do I find good "
        "short ones?",
        "Search for 'daily' or 'in 20 minutes' shows, and check episode lengths in the feed before subscribing.",
        ("history podcasts",),
        "Can you suggest a podcast for my walk tomorrow?",
        "The user would prefer short history podcasts, with episodes under 30 minutes. They might not prefer "
        "long episodes or unrelated topics.",
    ),
    _ssp(
        "hobby",
        "hobbies",
        "I'm an introvert and love quiet, hands-on hobbies I can do at home, like knitting. How do I keep "
        "improving without a class?",
        "Video tutorials and a project slightly above your level work well; online groups are great for "
        "feedback without going out.",
        ("hands-on hobbies",),
        "What new hobby could I pick up this winter?",
        "The user would prefer a quiet, hands-on hobby they can do at home, similar to knitting. They might not "
        "prefer group or outdoor activities.",
    ),
    _ssp(
        "coffee",
        "food",
        "I only drink oat milk in my coffee, and I like it strong but not bitter. Which roast should I buy?",
        "A medium roast usually gives you strength without the bitterness; look for chocolate or caramel notes.",
        ("oat milk",),
        "Can you suggest a coffee drink for me to order at a cafe?",
        "The user would prefer a strong but not bitter coffee made with oat milk, like an oat milk flat white. "
        "They would not prefer drinks with dairy milk or very bitter dark roasts.",
    ),
)
