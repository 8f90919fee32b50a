"""single-session-assistant facts (templates): the assistant states the detail.

A book it recommended, a total it worked out, a name it suggested: the evidence is the
assistant turn (``side=1``). ``_SSA_FAMILIES`` lists the makers.
"""

from __future__ import annotations

from lazymem.data.synthetic.model import _a, _Draw, _Fact, _money, _Stmt
from lazymem.data.synthetic.pools import (
    BOOK_TITLES,
    BUSINESS_NAMES,
    CITIES,
    GIFTS,
    HOBBIES,
    LANDMARKS,
    NAMES,
    PLANTS,
    RELATIONS,
    SURNAMES,
)

BOOK_TOPICS = (
    "personal finance",
    "habit building",
    "the history of maps",
    "urban gardening",
    "negotiation",
    "sleep science",
    "public speaking",
    "the deep ocean",
    "ancient Rome",
    "minimalism",
)
VENTURES = (
    "bakery",
    "podcast",
    "book club",
    "bike repair shop",
    "coffee cart",
    "dog-walking business",
    "online vintage shop",
    "trivia team",
    "running club",
    "food truck",
)
RECIPES = (
    ("banana bread", "baking soda", "teaspoon"),
    ("pancakes", "milk", "cup"),
    ("guacamole", "lime juice", "tablespoon"),
    ("chili", "cumin", "teaspoon"),
    ("vinaigrette", "olive oil", "tablespoon"),
    ("pizza dough", "yeast", "teaspoon"),
    ("lemonade", "sugar", "cup"),
    ("turkey brine", "salt", "cup"),
)
PACKING = (
    ("winter hike", ("microspikes", "hand warmers", "a thermos")),
    ("beach weekend", ("reef-safe sunscreen", "a quick-dry towel", "a beach umbrella")),
    ("camping trip", ("a headlamp", "a water filter", "extra tent stakes")),
    ("ski trip", ("goggles", "glove liners", "lip balm with SPF")),
    ("music festival", ("earplugs", "a portable phone charger", "a refillable water bottle")),
)


def _ssa_book(d: _Draw) -> _Fact | None:
    topic = d.key("ssa_book", BOOK_TOPICS)
    if topic is None:
        return None
    title, author = d.one(BOOK_TITLES), f"{d.pick(NAMES)} {d.pick(SURNAMES)}"
    user = f"Can you recommend a good book about {topic}? I want something readable, not a textbook."
    assistant = (
        f"I'd recommend '{title}' by {author}. It's approachable and full of stories, and each chapter "
        "stands on its own, so it's easy to read in short bursts."
    )
    return _Fact(
        "single-session-assistant",
        [_Stmt("books", user, assistant, (title,), side=1)],
        f"What book did you recommend to me about {topic}?",
        f"'{title}' by {author}",
    )


def _ssa_name(d: _Draw) -> _Fact | None:
    venture = d.key("ssa_name", VENTURES)
    if venture is None:
        return None
    name = d.one(BUSINESS_NAMES)
    user = f"I'm starting a {venture} with a couple of friends. Can you suggest a catchy name?"
    assistant = (
        f"How about '{name}'? It's short, easy to remember, and works well on a sign or as a social media handle."
    )
    return _Fact(
        "single-session-assistant",
        [_Stmt("work", user, assistant, (name,), side=1)],
        f"What name did you suggest for my {venture}?",
        name,
    )


def _ssa_recipe(d: _Draw) -> _Fact | None:
    dish = d.key("ssa_recipe", tuple(r[0] for r in RECIPES))
    if dish is None:
        return None
    _, ing, unit = next(r for r in RECIPES if r[0] == dish)
    amount = d.pick(("1", "1 1/2", "2", "2 1/2", "3", "4"))
    qty = f"{amount} {unit}" + ("" if amount == "1" else "s")
    people = d.rng.randint(4, 12)
    user = f"I'm making {dish} for {people} people this weekend. How much {ing} should I use?"
    assistant = f"For {people} people, use about {qty} of {ing}. Taste as you go and adjust at the end."
    return _Fact(
        "single-session-assistant",
        [_Stmt("food", user, assistant, (f"{qty} of {ing}",), side=1)],
        f"How much {ing} did you tell me to use for the {dish}?",
        qty,
    )


def _ssa_itinerary(d: _Draw) -> _Fact | None:
    city = d.key("ssa_city", CITIES)
    if city is None:
        return None
    spot = d.one(LANDMARKS)
    user = f"I have one free day in {city} next month. Where should I start my morning?"
    assistant = (
        f"Start early at {spot}; it's quiet before ten and a great place for breakfast. From there you "
        "can walk to most of the central sights."
    )
    return _Fact(
        "single-session-assistant",
        [_Stmt("travel", user, assistant, (spot,), side=1)],
        f"Where did you suggest I start my day in {city}?",
        spot[0].upper() + spot[1:],
    )


def _ssa_plan(d: _Draw) -> _Fact | None:
    sport = d.key(
        "ssa_plan",
        ("rowing", "swimming", "cycling", "yoga", "strength training", "jump rope", "kettlebell training", "pilates"),
    )
    if sport is None:
        return None
    k, m = d.rng.randint(2, 4), d.rng.randrange(15, 50, 5)
    user = f"Can you put together a beginner {sport} plan for me? I've never managed to do it consistently."
    assistant = (
        f"Here's a simple start: {k} sessions a week, {m} minutes each, for the first month. Keep the "
        "effort easy enough to hold a conversation, then add five minutes per session every two weeks."
    )
    return _Fact(
        "single-session-assistant",
        [_Stmt("fitness", user, assistant, (f"{m} minutes",), side=1)],
        f"How long did you say each session of my beginner {sport} plan should be?",
        f"{m} minutes",
    )


def _ssa_gift(d: _Draw) -> _Fact | None:
    rel = d.key("ssa_gift", RELATIONS)
    if rel is None:
        return None
    hobby, gift = d.pick(HOBBIES), d.one(GIFTS)
    user = f"My {rel} is really into {hobby}. What should I get them for their birthday?"
    assistant = (
        f"I'd suggest {_a(gift)} {gift}: it's thoughtful, a bit special, and easy to pair with a handwritten card."
    )
    return _Fact(
        "single-session-assistant",
        [_Stmt("social", user, assistant, (gift,), side=1)],
        f"What gift did you suggest for my {rel}?",
        f"{_a(gift).capitalize()} {gift}",
    )


def _ssa_total(d: _Draw) -> _Fact | None:
    if d.key("ssa_total", ("",)) is None:
        return None
    nights, rate, fee = d.rng.randint(2, 9), d.rng.randrange(80, 320, 5), d.rng.randrange(15, 90, 5)
    total = nights * rate + fee
    user = (
        f"I'm booking {nights} nights at {_money(rate)} a night, plus a {_money(fee)} cleaning fee. What will "
        "the total come to?"
    )
    assistant = (
        f"That comes to {_money(total)} in total: {nights} nights at {_money(rate)} is "
        f"{_money(nights * rate)}, plus the {_money(fee)} fee."
    )
    return _Fact(
        "single-session-assistant",
        [_Stmt("money", user, assistant, (_money(total),), side=1)],
        f"What total did you work out for my {nights}-night stay?",
        _money(total),
    )


def _ssa_water(d: _Draw) -> _Fact | None:
    plant = d.key("ssa_water", PLANTS)
    if plant is None:
        return None
    days = d.rng.randint(4, 14)
    user = f"I just got a {plant} for my living room. How often should I water it?"
    assistant = (
        f"Water your {plant} about every {days} days, and check that the top few centimeters of soil are "
        "dry first. Good drainage matters more than the exact schedule."
    )
    return _Fact(
        "single-session-assistant",
        [_Stmt("home", user, assistant, (f"every {days} days",), side=1)],
        f"How often did you tell me to water my {plant}?",
        f"Every {days} days",
    )


def _ssa_packing(d: _Draw) -> _Fact | None:
    trip = d.key("ssa_pack", tuple(p[0] for p in PACKING))
    if trip is None:
        return None
    items = list(next(p[1] for p in PACKING if p[0] == trip))
    d.rng.shuffle(items)
    user = f"I'm going on a {trip} soon. What do people usually forget to pack?"
    assistant = (
        f"The three things people forget most are {items[0]}, {items[1]} and {items[2]}. Put {items[0]} "
        "at the top of your list."
    )
    return _Fact(
        "single-session-assistant",
        [_Stmt("travel", user, assistant, (f"Put {items[0]} at the top",), side=1)],
        f"What did you say should go at the top of my packing list for the {trip}?",
        items[0],
    )


_SSA_FAMILIES = (
    _ssa_book,
    _ssa_name,
    _ssa_recipe,
    _ssa_itinerary,
    _ssa_plan,
    _ssa_gift,
    _ssa_total,
    _ssa_water,
    _ssa_packing,
)
