"""single-session-user facts (templates): the user states a detail once ("My sister, Priya, ...").

Each ``_ssu_*`` maker draws its values, picks one of its phrasings and returns a ``_Fact``
(or None when its key is already claimed in this history); ``_SSU_FAMILIES`` lists them in
the order ``plan`` shuffles them. The statement helpers (``_relation_stmt``, ``_pet_stmt``,
``_price_stmt``) are shared with multi-session and abstention.
"""

from __future__ import annotations

from lazymem.data.synthetic.model import _a, _Draw, _Fact, _money, _Stmt
from lazymem.data.synthetic.pools import (
    CITIES,
    DISHES,
    FEMALE_NAMES,
    FIELDS_OF_STUDY,
    INSTRUMENTS,
    MALE_NAMES,
    MONTHS,
    NAMES,
    PET_KINDS,
    PET_NAMES,
    PRICES,
    PRODUCTS,
    RELATIONS,
    RESTAURANTS,
    STORES,
    UNIVERSITIES,
)


def _ssu_relation(d: _Draw) -> _Fact | None:
    rel = d.key("rel", RELATIONS)
    if rel is None:
        return None
    name = d.one(_names_for(rel))
    return _Fact("single-session-user", [_relation_stmt(d, rel, name)], f"What is my {rel}'s name?", name)


def _names_for(relation: str) -> tuple[str, ...]:
    if relation in ("sister", "niece", "aunt", "grandmother"):
        return FEMALE_NAMES
    if relation in ("brother", "nephew", "uncle", "grandfather"):
        return MALE_NAMES
    return NAMES


def _relation_stmt(d: _Draw, rel: str, name: str) -> _Stmt:
    user, assistant = d.pick(
        (
            (
                f"I need to write a thank-you note to my {rel}, {name}, who helped me a lot this month. Can you help me "
                "word it?",
                "Of course. Something like: 'Thank you so much for all your help this month. It made a real difference, "
                "and I'm lucky to have you.' Short and specific is best.",
            ),
            (
                f"{name}, my {rel}, invited me over for dinner on Friday. What's a good thing to bring?",
                "A bottle of something nice, a dessert you made yourself, or fresh flowers are all safe choices. Ask "
                "ahead if there are any dietary restrictions.",
            ),
            (
                f"I have a long phone call planned tonight with my {rel} {name}, and I want to talk about something "
                "difficult. How should I start?",
                "Start by saying why the conversation matters to you, keep it about your own feelings, and leave room "
                "for them to respond.",
            ),
        )
    )
    return _Stmt("social", user, assistant, (name, rel))


def _ssu_pet(d: _Draw) -> _Fact | None:
    kind = d.key("pet", PET_KINDS)
    if kind is None:
        return None
    pet = d.one(PET_NAMES)
    stmt = _pet_stmt(d, kind, pet)
    if d.rng.random() < 0.5:
        return _Fact("single-session-user", [stmt], f"What is the name of my {kind}?", pet)
    return _Fact("single-session-user", [stmt], f"What kind of pet is {pet}?", f"{_a(kind).capitalize()} {kind}")


def _pet_stmt(d: _Draw, kind: str, pet: str) -> _Stmt:
    user, assistant = d.pick(
        (
            (
                f"I adopted {_a(kind)} {kind} named {pet} a few weeks ago. How do I help a new pet settle into a routine?",
                "Keep feeding, walks or play and bedtime at the same times every day, give them a quiet spot of their "
                "own, and introduce new people slowly.",
            ),
            (
                f"My {kind}, {pet}, has been really picky about food lately. Should I be worried?",
                "A little pickiness is common, especially with heat or a change in routine. If it lasts more than a "
                "couple of days or comes with other symptoms, call the vet.",
            ),
            (
                f"I'm going away for a weekend and need someone to look after {pet}, my {kind}. Sitter or boarding?",
                "A sitter at home is usually less stressful for the animal, while boarding gives more supervision. A "
                "trial visit beforehand helps either way.",
            ),
        )
    )
    return _Stmt("pets", user, assistant, (pet, kind))


def _ssu_price(d: _Draw) -> _Fact | None:
    product = d.one(PRODUCTS)
    price = _price(d, product)
    return _Fact(
        "single-session-user", [_price_stmt(d, product, price)], f"How much did I pay for my {product}?", _money(price)
    )


def _price(d: _Draw, product: str) -> int:
    lo, hi = PRICES[product]
    return d.rng.randrange(lo, hi + 1, 5)


def _price_stmt(d: _Draw, product: str, price: int) -> _Stmt:
    user, assistant = d.pick(
        (
            (
                f"I finally bought {_a(product)} {product} for {_money(price)}. Is there anything I should do in the first "
                "week to make it last?",
                "Read the care section of the manual, register the warranty, and keep the receipt somewhere safe. Most "
                "problems show up early, while returns are still easy.",
            ),
            (
                f"Just paid {_money(price)} for {_a(product)} {product}, which is more than I planned. How do I stop "
                "feeling guilty about it?",
                "If it's something you'll use often, divide the price by the number of uses; it usually looks much more "
                "reasonable. Then enjoy it.",
            ),
        )
    )
    return _Stmt("money", user, assistant, (_money(price), product))


def _ssu_commute(d: _Draw) -> _Fact | None:
    if d.key("commute", ("",)) is None:
        return None
    n, mode = d.rng.randrange(15, 80, 5), d.pick(("bus", "train", "bike", "car", "ferry"))
    user = (
        f"My commute is {n} minutes each way by {mode}, so I'm looking for podcasts or audiobooks to fill the "
        "time. Any suggestions?"
    )
    assistant = (
        "Pick a mix: one long-form interview show, one short daily news podcast, and a gripping audiobook "
        "for the days you're tired."
    )
    return _Fact(
        "single-session-user",
        [_Stmt("work", user, assistant, (f"{n} minutes",))],
        "How long is my commute to work, one way?",
        f"{n} minutes",
    )


def _ssu_degree(d: _Draw) -> _Fact | None:
    if d.key("degree", ("",)) is None:
        return None
    subject, uni = d.one(FIELDS_OF_STUDY), d.one(UNIVERSITIES)
    user = (
        f"I have a degree in {subject} from {uni}, and I'm thinking about going back for a certificate. "
        "Is that worth it mid-career?"
    )
    assistant = (
        "It can be, if the certificate is something employers in your field ask for. Look at a few job "
        "postings you'd want in two years and see what they list."
    )
    if d.rng.random() < 0.5:
        return _Fact(
            "single-session-user", [_Stmt("work", user, assistant, (subject,))], "What did I get my degree in?", subject
        )
    return _Fact(
        "single-session-user", [_Stmt("work", user, assistant, (uni,))], "Which school did I get my degree from?", uni
    )


def _ssu_instrument(d: _Draw) -> _Fact | None:
    inst = d.key("inst", INSTRUMENTS)
    if inst is None:
        return None
    n = d.rng.randint(2, 25)
    user = f"I've been playing the {inst} for {n} years, but I feel like I've hit a plateau. How can I get better?"
    assistant = (
        "Record yourself and listen back, learn one piece slightly above your level, and spend part of "
        "each session on slow, deliberate practice of the hard bits."
    )
    return _Fact(
        "single-session-user",
        [_Stmt("hobbies", user, assistant, (f"{n} years", inst))],
        f"How many years have I been playing the {inst}?",
        f"{n} years",
    )


def _ssu_birthday(d: _Draw) -> _Fact | None:
    rel = d.key("bday", RELATIONS)
    if rel is None:
        return None
    md = f"{d.pick(MONTHS)} {d.rng.randint(1, 28)}"
    user = f"My {rel}'s birthday is on {md}, and I want to start planning something early this year. Any ideas?"
    assistant = (
        "Starting early is smart. Think about what they've mentioned wanting to do lately, book anything "
        "that needs a reservation now, and keep a note of small gift ideas as they come up."
    )
    return _Fact("single-session-user", [_Stmt("social", user, assistant, (md,))], f"When is my {rel}'s birthday?", md)


def _ssu_store(d: _Draw) -> _Fact | None:
    product, store = d.one(PRODUCTS), d.one(STORES)
    user = f"I picked up my new {product} at {store}, but it came without a manual. Where can I find one online?"
    assistant = (
        "Check the manufacturer's support page and search by the model number on the label. Sites that "
        "collect manuals are a good backup."
    )
    return _Fact(
        "single-session-user",
        [_Stmt("tech", user, assistant, (store, product))],
        f"Where did I buy my new {product}?",
        store[0].upper() + store[1:] if store[0].islower() else store,
    )


def _ssu_hometown(d: _Draw) -> _Fact | None:
    if d.key("hometown", ("",)) is None:
        return None
    city = d.one(CITIES)
    user = f"I grew up in {city}, and I still miss the food there. Can you help me recreate a few hometown favorites?"
    assistant = (
        "I'd love to. Tell me two or three dishes you miss most, and I'll suggest recipes and where to "
        "find the harder ingredients."
    )
    return _Fact("single-session-user", [_Stmt("food", user, assistant, (city,))], "Where did I grow up?", city)


def _ssu_allergy(d: _Draw) -> _Fact | None:
    if d.key("allergy", ("",)) is None:
        return None
    what = d.pick(("peanuts", "shellfish", "sesame", "tree nuts", "eggs", "soy", "kiwi"))
    user = (
        f"I'm allergic to {what}, so I have to be careful when I eat out. How can I ask restaurants about "
        "ingredients without being a pain?"
    )
    assistant = (
        "Mention it when you book and again when you order, keep it short and matter-of-fact, and ask how "
        "the dish is prepared, not just what's in it."
    )
    return _Fact(
        "single-session-user", [_Stmt("health", user, assistant, (what,))], "What food am I allergic to?", what
    )


def _ssu_parking(d: _Draw) -> _Fact | None:
    if d.key("parking", ("",)) is None:
        return None
    n = d.rng.randint(2, 240)
    user = f"My parking spot at work is number {n}, and someone keeps taking it. How should I handle it?"
    assistant = (
        "Leave a polite note first. If it keeps happening, let building management know with the dates "
        "and, if possible, a photo of the car."
    )
    return _Fact(
        "single-session-user",
        [_Stmt("work", user, assistant, (f"number {n}",))],
        "What is my parking spot number at work?",
        str(n),
    )


def _ssu_restaurant(d: _Draw) -> _Fact | None:
    if d.key("restaurant", ("",)) is None:
        return None
    r, dish = d.one(RESTAURANTS), d.pick(DISHES)
    user = f"My favorite restaurant is {r}, and I'm obsessed with their {dish}. Can you help me make it at home?"
    assistant = (
        "Let's try. Restaurant versions usually use more fat, more salt and higher heat than home "
        "recipes, so start there and adjust."
    )
    return _Fact("single-session-user", [_Stmt("food", user, assistant, (r,))], "What is my favorite restaurant?", r)


_SSU_FAMILIES = (
    _ssu_relation,
    _ssu_pet,
    _ssu_price,
    _ssu_commute,
    _ssu_degree,
    _ssu_instrument,
    _ssu_birthday,
    _ssu_store,
    _ssu_hometown,
    _ssu_allergy,
    _ssu_parking,
    _ssu_restaurant,
)
