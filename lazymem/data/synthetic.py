"""Deterministic synthetic chat histories in the official LongMemEval schema (the default data set).

Each history is a run of user/assistant sessions (6-16 messages, user first) of everyday
chat on one theme (travel, pets, food, ...). Into some of them the generator plants
facts, one (user, assistant) pair per statement, and asks one question per fact:

- single-session-user: the user states a detail once ("My sister, Priya, ...").
- single-session-assistant: the assistant states it (a book it recommended, a total it worked out).
- single-session-preference: the user states a like/dislike; the answer is a rubric.
- multi-session: 2-4 statements in different sessions, aggregated (a count or a sum).
- temporal-reasoning: events stated on the day they happen ("today (Saturday, May 20)");
  answers (days between, days ago, which first, when) come from the session dates.
- knowledge-update: a value stated, then changed in a later session; the answer is the new one.
- abstention (``_abs`` question ids, one per 12 questions): asks for something never
  said, next to a planted near-miss ("my brother's name" when only a sister was named).

Distractor sessions reuse the fact vocabulary about other people or in general
("My friend Tom is moving to Lisbon", "How often should I water a monstera?") so that
BM25 and dense retrieval have real work to do, and nothing in them contradicts a fact.

Records follow the official schema exactly, one per question. Records of one history
share the same ``haystack_session_ids`` and ``haystack_dates`` list objects, and their
``haystack_sessions`` lists share every session list object *except* the sessions that
hold that question's evidence: those are new lists in which the evidence turns are
shallow-copied dicts with ``has_answer: true`` (everywhere else ``has_answer`` is false).
Evidence follows LongMemEval: the user turn (the assistant turn for
single-session-assistant) of each statement; for knowledge-update both the old and the
new statement; for abstention the near-miss statement, whose session is in
``answer_session_ids`` (as in the official ``_abs`` records). Every evidence turn contains
its answer-bearing string verbatim; ``generate_with_facts`` returns those strings.

>>> records = generate_records(n_messages=60, seed=1, questions_per_history=6)
>>> len(records), sorted({r["question_type"] for r in records})[:2]
(6, ['knowledge-update', 'multi-session'])
>>> sum(len(s) for s in records[0]["haystack_sessions"])
60
"""
from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Callable, Iterator, NamedTuple

from lazymem.errors import ConfigError

# ---------------------------------------------------------------------------- slot pools
FEMALE_NAMES = ("Maya", "Priya", "Aisha", "Elena", "Sofia", "Hannah", "Chloe", "Nora", "Leila", "Grace", "Zoe",
                "Emma", "Ines", "Keiko", "Amara", "Rosa", "Yara", "Mia", "Clara", "Nadia", "Lena", "Ivy", "Anya",
                "Fatima", "Julia", "Sara", "Ada", "Tess", "June", "Iris")
MALE_NAMES = ("Daniel", "Lucas", "Tom", "Marcus", "Kenji", "Omar", "Diego", "Ben", "Mateo", "Arjun", "Felix",
              "Jonah", "Liam", "Noah", "Ethan", "Oscar", "Ravi", "Hugo", "Theo", "Jamal", "Victor", "Caleb", "Leo",
              "Kofi", "Miles", "Rafael", "Malik", "Pablo", "Wes", "Sam")
NAMES = FEMALE_NAMES + MALE_NAMES
SURNAMES = ("Alvarez", "Brennan", "Chen", "Dubois", "Okafor", "Fischer", "Gupta", "Haddad", "Ivanova", "Jensen",
            "Kowalski", "Lindqvist", "Moreau", "Nakamura", "O'Neill", "Petrov", "Quinn", "Rossi", "Sato", "Torres",
            "Varga", "Whitaker", "Yilmaz", "Zeller", "Abbott", "Carver", "Delgado", "Ellison", "Farrow", "Grant")
CITIES = ("Lisbon", "Denver", "Austin", "Toronto", "Melbourne", "Seattle", "Portland", "Barcelona", "Berlin",
          "Chicago", "Boston", "Dublin", "Edinburgh", "Vancouver", "Minneapolis", "San Diego", "Kyoto", "Prague",
          "Copenhagen", "Amsterdam", "Vienna", "Montreal", "Atlanta", "Nashville", "Pittsburgh", "Raleigh",
          "Phoenix", "Salt Lake City", "Madison", "Sacramento", "Oslo", "Helsinki", "Valencia", "Porto", "Lyon",
          "Munich", "Zurich", "Wellington", "Auckland", "Brisbane", "Cape Town", "Singapore", "Seoul", "Osaka",
          "Bristol", "Glasgow", "Manchester", "Ottawa", "Calgary", "Houston")
COUNTRIES = ("Portugal", "Japan", "Peru", "Iceland", "Morocco", "Vietnam", "Greece", "Norway", "Mexico", "Italy",
             "Thailand", "Croatia", "Chile", "Kenya", "Ireland", "New Zealand", "Argentina", "Turkey", "Spain",
             "Canada", "Egypt", "India", "Colombia", "Austria", "Switzerland", "Germany", "France", "South Korea",
             "Indonesia", "Costa Rica", "Denmark", "Poland", "Jordan", "Sweden", "Belgium")
RELATIONS = ("sister", "brother", "cousin", "best friend", "manager", "roommate", "neighbor", "niece", "nephew",
             "mentor", "aunt", "uncle", "grandmother", "grandfather", "business partner", "landlord")
# Distractors mention only these (gender-neutral) relations, never with a name: they cannot contradict a fact.
CHAT_RELATIONS = ("cousin", "best friend", "roommate", "neighbor", "coworker", "college friend", "teammate")
PET_KINDS = ("golden retriever", "beagle", "border collie", "corgi", "dachshund", "labrador", "shiba inu",
             "tabby cat", "Maine Coon", "Siamese cat", "rabbit", "parrot", "guinea pig", "bearded dragon")
DOG_BREEDS = ("golden retriever", "beagle", "border collie", "corgi", "dachshund", "labrador", "shiba inu", "poodle")
PET_NAMES = ("Biscuit", "Luna", "Pepper", "Mochi", "Ziggy", "Olive", "Maple", "Scout", "Waffles", "Juniper",
             "Bean", "Rocket", "Nugget", "Pickles", "Clover", "Tofu", "Hazel", "Milo", "Pretzel", "Sunny",
             "Cocoa", "Ginger", "Otis", "Poppy", "Finn")
# product -> plausible price range in dollars
PRICES: dict[str, tuple[int, int]] = {
    "standing desk": (250, 700), "espresso machine": (150, 900), "road bike": (600, 2500), "air fryer": (60, 200),
    "robot vacuum": (180, 700), "pair of noise-cancelling headphones": (120, 400), "mechanical keyboard": (70, 250),
    "e-reader": (90, 280), "stand mixer": (200, 500), "tent": (120, 500), "pair of hiking boots": (110, 260),
    "smartwatch": (150, 450), "rice cooker": (40, 200), "sofa": (500, 2200), "drone": (300, 1200),
    "projector": (200, 900), "blender": (50, 350), "electric kettle": (25, 90), "gaming monitor": (200, 700),
    "sewing machine": (150, 600), "camera lens": (250, 1200), "kayak": (350, 1200), "cast-iron skillet": (25, 80),
    "office chair": (150, 600), "electric toothbrush": (40, 180), "bread maker": (80, 250),
    "record player": (100, 450), "winter coat": (90, 350)}
PRODUCTS = tuple(PRICES)
CUISINES = ("Thai", "Mexican", "Italian", "Ethiopian", "Korean", "Indian", "Japanese", "Lebanese", "Vietnamese",
            "Greek", "Peruvian", "Moroccan", "Sichuan", "Turkish")
DISHES = ("lasagna", "pad thai", "shakshuka", "chicken tikka masala", "ramen", "paella", "risotto", "enchiladas",
          "banana bread", "falafel", "pho", "beef stew", "mushroom stroganoff", "chili", "dumplings", "gnocchi",
          "lentil curry", "fried rice")
HOBBIES = ("pottery", "rock climbing", "birdwatching", "knitting", "chess", "photography", "woodworking",
           "gardening", "salsa dancing", "baking", "calligraphy", "kayaking", "journaling", "origami")
SPORTS = ("running", "swimming", "cycling", "yoga", "pilates", "tennis", "rowing", "weightlifting", "bouldering",
          "hiking", "boxing")
JOBS = ("data analyst", "nurse", "graphic designer", "software engineer", "high school teacher", "product manager",
        "accountant", "pharmacist", "architect", "marketing coordinator", "UX researcher", "physical therapist",
        "copywriter", "civil engineer", "paralegal", "sous chef", "lab technician", "project manager",
        "financial advisor", "librarian")
COMPANIES = ("Northwind Labs", "Brightline Health", "Cobalt Analytics", "Juniper Logistics", "Redwood Media",
             "Harbor Bank", "Clearwater Energy", "Summit Outdoor Co.", "Lumen Studios", "Atlas Robotics",
             "Bluebird Insurance", "Meridian Foods", "Quarry Architects", "Fernway Pharmacy")
CARS = ("Honda Civic", "Toyota RAV4", "Subaru Outback", "Mazda CX-5", "Ford F-150", "Tesla Model 3", "Kia Niro",
        "Hyundai Ioniq 5", "Volkswagen Golf", "Jeep Wrangler", "Toyota Prius", "Chevy Bolt", "Volvo XC40",
        "Nissan Leaf")
PHONES = ("Pixel 8", "iPhone 15", "Galaxy S23", "iPhone 13 mini", "Pixel 7a", "OnePlus 11", "Galaxy A54",
          "iPhone 14 Pro", "Moto G Power", "Pixel 6")
GENRES = ("mystery", "science fiction", "historical fiction", "fantasy", "literary fiction", "thriller", "romance")
LANGUAGES = ("Spanish", "Japanese", "Portuguese", "Italian", "Korean", "German", "French", "Mandarin", "Greek",
             "Dutch")
INSTRUMENTS = ("guitar", "piano", "violin", "ukulele", "cello", "drums", "saxophone", "banjo", "flute", "bass")
PLANTS = ("fiddle-leaf fig", "monstera", "snake plant", "pothos", "peace lily", "rubber plant", "ZZ plant",
          "string of pearls", "calathea", "jade plant")
STORES = ("Costco", "Target", "IKEA", "Best Buy", "REI", "a local thrift store", "Home Depot", "a secondhand shop",
          "a garage sale", "the outlet mall")
MUSEUMS = tuple(f"the {a} Museum" for a in ("Maritime", "Natural History", "Modern Art", "Design", "Railway",
                                          "Science", "Photography", "Folk Art", "Textile", "Toy", "Glass",
                                          "Aviation"))
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_A = ("Silent", "Hidden", "Last", "Glass", "Salt", "Paper", "Northern", "Borrowed", "Quiet", "Winter", "Second",
      "Small")
_B = ("Orchard", "Harbor", "Atlas", "Garden", "Cartographer", "Lighthouse", "River", "Kingdom", "Alphabet",
      "Season", "Archive", "Bridge")
BOOK_TITLES = tuple(f"The {a} {b}" for a in _A for b in _B)
BUSINESS_NAMES = tuple(f"The {a} {b}" for a in ("Copper", "Golden", "Wandering", "Velvet", "Humble", "Lucky",
                                                 "Rustic", "Salty", "Bright", "Crooked")
                       for b in ("Whisk", "Spoon", "Sparrow", "Kettle", "Compass", "Acorn", "Pedal", "Thimble", "Fox"))
LANDMARKS = tuple(f"the {a} {b}" for a in ("Riverside", "Old Town", "Harbor", "Hilltop", "Cathedral", "Station",
                                            "Lantern", "Canal")
                  for b in ("Market", "Gardens", "Lookout", "Bookshop", "Food Hall"))
BANDS = tuple(f"{a} {b}" for a in ("The Paper", "Velvet", "Nine Mile", "The Copper", "Blue Tide", "Static",
                                   "The Midnight")
              for b in ("Lanterns", "Harbor", "Foxes", "Assembly", "Radio", "Orchestra"))
CAFES = ("Daily Grind", "Bean & Leaf", "Morning Ritual", "Third Wave Cafe", "Copperpot Coffee", "The Roastery",
         "Little Owl Cafe", "Steamworks", "Half Moon Coffee", "Corner Cup")
RESTAURANTS = ("Little Fig", "Casa Marisol", "The Blue Door", "Saffron House", "Nonna Rosa", "Kettle & Crumb",
               "Golden Lotus", "Harbor Street Oyster Bar", "Pho Corner", "El Farolito Grill")
UNIVERSITIES = ("Lakeside University", "Northfield College", "the University of Westbrook", "Ridgeview State",
                "Easton Polytechnic", "Hollis College")
FIELDS_OF_STUDY = ("economics", "biology", "mechanical engineering", "art history", "psychology", "computer science",
                   "journalism", "chemistry", "philosophy", "nursing")
GIFTS = ("leather-bound journal", "cast-iron teapot", "set of watercolor brushes", "birdwatching field guide",
         "sourdough starter kit", "personalized star map", "hammock", "pair of binoculars", "cookbook stand",
         "indoor herb garden", "vintage film camera", "puzzle box")
_SLOTS: dict[str, tuple[str, ...]] = {
    "name": NAMES, "city": CITIES, "country": COUNTRIES, "relation": CHAT_RELATIONS, "pet_kind": PET_KINDS,
    "dog_breed": DOG_BREEDS, "petname": PET_NAMES, "product": PRODUCTS, "cuisine": CUISINES, "dish": DISHES,
    "hobby": HOBBIES, "sport": SPORTS, "job": JOBS, "company": COMPANIES, "phone": PHONES, "genre": GENRES,
    "language": LANGUAGES, "instrument": INSTRUMENTS, "plant": PLANTS,
    "n": tuple(str(i) for i in range(3, 11)),
}
# Third-person versions of the temporal events: distractors about other people doing them.
EVENT_CHATTER = ("took a pottery class", "ran a half marathon", "had a wisdom tooth pulled",
                 "joined a community choir", "went on a scuba dive", "donated blood", "tried a Spanish course",
                 "finished a 1,000-piece puzzle", "baked a sourdough loaf", "saw a live opera", "hosted a dinner party",
                 "got a flu shot", "volunteered at the food bank", "went on a backpacking trip")

# ---------------------------------------------------------------------------- distractor chat
# (user, assistant) exchanges per theme, with {slot} fillers; none states a fact about the user.
THEMES: dict[str, tuple[tuple[str, str], ...]] = {
    "travel": (
        ("My friend {name} is heading to {city} next month. What are a few things worth seeing there?",
         "{city} has a lot going on. A walking tour of the old town, an afternoon at a local market and one nice "
         "dinner away from the main tourist streets would make a great first visit."),
        ("What's the best way to deal with jet lag after a long flight?",
         "Shift your sleep schedule a day or two before you leave, get sunlight in the morning once you land, and "
         "avoid long naps on the first afternoon."),
        ("Is it worth getting travel insurance for a short trip to {country}?",
         "It depends on what you already have. Check whether your credit card covers cancellations and medical "
         "costs abroad; if not, a basic policy is usually inexpensive."),
        ("How far in advance should I book flights to {city} to get a decent fare?",
         "For most routes, six to ten weeks ahead tends to hit the sweet spot. Setting a fare alert is the easiest "
         "way to catch a price drop."),
        ("My {relation} keeps saying {country} is the most underrated place they've ever been. When is the best "
         "season to go?",
         "Shoulder season, spring or early autumn, is usually the best balance of good weather, lower prices and "
         "smaller crowds."),
        ("What should I pack for a {n}-day trip if I only want to bring a carry-on?",
         "Stick to a small color palette so everything mixes and matches, roll your clothes, and plan on one quick "
         "load of laundry halfway through. Packing cubes help a lot."),
        ("Does a rail pass make sense for getting around {country}?",
         "If you're covering long distances on several days, a pass can pay off. For one or two trips, "
         "point-to-point tickets booked early are usually cheaper."),
        ("{name} is trying to choose between {city} and {city2} for a long weekend. Which one would you pick?",
         "Both are great. {city} is better for food and nightlife, while {city2} is more relaxed and walkable. "
         "It really comes down to the kind of weekend {name} wants."),
        ("Any tips for finding a good place to eat when I'm somewhere new?",
         "Walk a couple of blocks away from the main sights, look for places full of locals at lunchtime, and read "
         "recent reviews rather than the overall rating."),
        ("How do I avoid roaming charges on my phone abroad?",
         "The simplest option is a local or travel eSIM. Otherwise turn off data roaming, rely on Wi-Fi, and "
         "download offline maps before you go."),
    ),
    "pets": (
        ("My neighbor's {dog_breed} barks every time someone walks past. Is there a polite way to bring it up?",
         "Keep it friendly and specific: mention the times it happens and ask if they've noticed. Most people "
         "genuinely don't realize how much their dog barks while they're out."),
        ("What's a healthy amount of exercise for a {dog_breed}?",
         "Most dogs like that do well with at least an hour of activity a day, split between walks and play. "
         "Puzzle toys help burn off mental energy too."),
        ("My {relation} just adopted a {pet_kind} named {petname}. What's a good welcome gift?",
         "A sturdy toy, a comfortable bed or a gift card to a local pet store are all safe bets. Treats are always "
         "appreciated too."),
        ("How often should cats go to the vet for checkups?",
         "Healthy adult cats usually need a checkup once a year, and seniors over about ten benefit from "
         "twice-yearly visits."),
        ("Is it true that some pets are happier when they're adopted in pairs?",
         "For some social species, yes. Others are happier on their own, so ask the shelter about the individual "
         "animal's personality."),
        ("{name} is pet-sitting a parrot this weekend and is nervous about it. Any advice I can pass along?",
         "Keep the routine the same as at home, talk to the bird calmly, and don't let it out of the cage "
         "unsupervised. Fresh water and food every day matter most."),
        ("What human foods are dangerous for dogs?",
         "Chocolate, grapes and raisins, onions, garlic, xylitol and macadamia nuts are the big ones. When in "
         "doubt, skip it and call the vet."),
        ("Do pet insurance plans actually pay off?",
         "They can, especially accident and illness coverage for younger animals. Compare the deductible, the "
         "reimbursement rate and what counts as a pre-existing condition."),
        ("Our building is debating whether to allow large dogs like a {dog_breed}. What should the rules focus on?",
         "Rules work best when they focus on behavior rather than breed: leashes in common areas, cleanup and "
         "noise. Asking for proof of vaccinations is common too."),
        ("My cousin can't decide between {petname} and {petname2} as a name for a new {pet_kind}. Thoughts?",
         "Both are cute! {petname} is short and easy to call out at the park, which is a real advantage."),
    ),
    "food": (
        ("What's a good {cuisine} dish to bring to a potluck?",
         "Something that travels well and tastes good at room temperature is ideal. A big salad or a rice dish "
         "usually goes over better than anything that needs to stay hot."),
        ("How long does homemade {dish} keep in the fridge?",
         "Most cooked dishes like {dish} keep for three to four days in an airtight container. Freeze portions if "
         "you won't get to them by then."),
        ("{name} is hosting a dinner and asked me to bring dessert. Any easy ideas?",
         "A fruit crumble, chocolate bark or lemon bars are all easy and crowd-pleasing, and you can make them "
         "the day before."),
        ("Can I substitute Greek yogurt for sour cream in most recipes?",
         "Yes, usually one-to-one. It's a little tangier and can split if it boils, so stir it in at the end for "
         "hot dishes."),
        ("What's the trick to getting crispy roasted vegetables?",
         "High heat, around 220°C, a light coating of oil, and not crowding the pan. Give them space so they roast "
         "instead of steam."),
        ("My coworker meal-preps {dish} every Sunday. How do people keep meal prep from getting boring?",
         "Prep components instead of full meals: a grain, a protein, two vegetables and a couple of sauces. "
         "Mixing them differently keeps the week interesting."),
        ("What's the difference between baking soda and baking powder?",
         "Baking soda needs an acid in the recipe to react, while baking powder already contains one. That's why "
         "they aren't always interchangeable."),
        ("Is there a {cuisine} dish that's easy to make at home for a beginner?",
         "Start with something forgiving, like a curry, a noodle stir-fry or a stew. They're hard to mess up and "
         "easy to adjust to taste."),
        ("How do I keep fresh herbs from wilting so fast?",
         "Treat soft herbs like flowers: trim the stems and stand them in a glass of water in the fridge. Wrap "
         "hardy herbs in a damp paper towel."),
        ("What wine goes well with {dish}?",
         "A medium-bodied red or a crisp white both work, depending on the sauce. A dry rosé is a safe middle "
         "ground."),
    ),
    "fitness": (
        ("How do I know if I'm overtraining?",
         "Common signs are lingering soreness, poor sleep, a higher resting heart rate and workouts that feel "
         "harder than usual. A lighter week usually helps."),
        ("My {relation} wants to start {sport}. What's a sensible first month?",
         "Two or three short sessions a week, a focus on form and consistency, and more volume only once it feels "
         "easy."),
        ("Is it better to stretch before or after a workout?",
         "Dynamic movements before, like leg swings and lunges, and static stretching after, when your muscles "
         "are warm."),
        ("What's a good thing to eat after a morning {sport} session?",
         "Some protein and carbohydrates within an hour or two: eggs on toast, yogurt with fruit, or a smoothie."),
        ("{name} from work signed up for a half marathon without any training. How long does it usually take to "
         "prepare?",
         "For someone who already runs a bit, about twelve weeks is typical. Starting from scratch, four or five "
         "months is safer."),
        ("How many rest days a week do beginners need?",
         "Two or three rest days are a good starting point. Light walking or stretching on those days is fine."),
        ("What are good exercises for lower back pain?",
         "Gentle ones like bird dogs, glute bridges and cat-cow stretches are commonly recommended, but see a "
         "physiotherapist if the pain persists."),
        ("Is {sport} or {sport2} better for building endurance?",
         "Both build endurance. The best one is the one you'll actually stick with, so pick the one you look "
         "forward to."),
        ("How do people stay motivated to work out in winter?",
         "Plan indoor alternatives, lay out your gear the night before, and schedule workouts like meetings. A "
         "workout buddy helps a lot."),
        ("What does a good warm-up for {sport} look like?",
         "Five to ten minutes of easy movement to raise your heart rate, then a few drills that mimic the activity "
         "at a lower intensity."),
    ),
    "work": (
        ("How do I politely decline a meeting that doesn't really need me?",
         "Reply briefly, say you don't think you're needed for this one, and offer to review the notes or answer "
         "questions asynchronously."),
        ("My coworker {name} just became {a_job}. What's a nice way to congratulate them?",
         "A short personal note goes a long way. Mention something specific they did well and wish them luck in "
         "the new role."),
        ("What's a good structure for a weekly one-on-one?",
         "Start with how the person is doing, then blockers, then priorities for next week, and leave a few "
         "minutes for career topics."),
        ("How should I prepare for a performance review?",
         "Write down your main accomplishments with concrete results, note a couple of areas you want to grow in, "
         "and bring questions about expectations."),
        ("Any tips for writing clearer emails?",
         "Put the ask in the first two lines, keep paragraphs short, and end with a clear next step and a date."),
        ("{name} is interviewing for {a_job} role at {company}. What questions should they ask the interviewer?",
         "Good ones are: what does success look like in six months, how does the team handle disagreements, and "
         "what's the biggest challenge right now."),
        ("How do I stop checking work messages in the evening?",
         "Turn off notifications after a set time, move the apps off your home screen, and tell your team when "
         "you're offline so it feels less awkward."),
        ("Is it normal to feel nervous presenting to senior leadership?",
         "Completely normal. Rehearse the first minute out loud, prepare for the two hardest questions, and keep "
         "the slides simple."),
        ("What's a reasonable way to ask for a raise?",
         "Pick a good moment, bring market data and specific accomplishments, and name a number. Then listen and "
         "agree on next steps."),
        ("Are standing desks worth it for long workdays?",
         "They help if you alternate between sitting and standing. Standing all day isn't better than sitting all "
         "day; movement is what matters."),
    ),
    "tech": (
        ("Should I buy {a_product} now or wait for a sale?",
         "If nothing is broken, waiting for a seasonal sale usually saves money. If you need it now, buy it and "
         "don't overthink it."),
        ("How do I back up the photos on my phone?",
         "Turn on your phone's cloud backup, and once in a while also copy everything to an external drive. Two "
         "copies in different places is the goal."),
        ("My {relation}'s laptop is painfully slow. What should they try first?",
         "Check how much storage is free, remove apps that launch at startup, and install system updates. If it "
         "still has a hard drive, an SSD upgrade is a big boost."),
        ("What's a password manager, and do I need one?",
         "It stores a strong, unique password for every site behind one master password. For most people it's "
         "the single biggest security improvement."),
        ("Is it safe to use public Wi-Fi at airports?",
         "Mostly, for sites that use HTTPS. Avoid logging into banking on open networks, or use a VPN or your "
         "phone's hotspot."),
        ("{name} keeps recommending the {phone}. Is it good for photos?",
         "It has a solid camera for its price, especially in daylight. Low-light shots are where pricier models "
         "pull ahead."),
        ("How can I make my home Wi-Fi faster?",
         "Put the router somewhere central and elevated, away from thick walls, and restart it now and then. A "
         "mesh system helps in bigger homes."),
        ("What's the easiest way to cut down on screen time?",
         "Set limits for the worst apps, keep your phone out of the bedroom, and switch the screen to grayscale in "
         "the evening."),
        ("Do I need antivirus software on a Mac?",
         "The built-in protections cover most people. Keeping the system updated and being careful with downloads "
         "matters more than extra software."),
        ("What should I look for in noise-cancelling headphones?",
         "Comfort for long sessions, battery life, how well they handle low rumble, and whether the microphone is "
         "good enough for calls."),
    ),
    "home": (
        ("How often should I water a {plant}?",
         "Water when the top few centimeters of soil are dry. Indoors that's roughly once a week for many plants, "
         "less in winter."),
        ("What's the best way to get rid of fruit flies in the kitchen?",
         "Set out a small dish of apple cider vinegar with a drop of dish soap, and take out the trash and compost "
         "more often for a few days."),
        ("My {relation} is repainting their hallway. Satin or eggshell?",
         "Satin is easier to wipe clean, which suits a hallway. Eggshell hides wall imperfections better."),
        ("How do I unclog a bathroom sink without harsh chemicals?",
         "Pull out the stopper and clean it, then try a plunger or a plastic drain snake. Baking soda and hot water "
         "can help with minor buildup."),
        ("Any ideas for making a small apartment feel bigger?",
         "Use mirrors, keep the floor as clear as possible, choose furniture with legs, and stick to a light, "
         "consistent color palette."),
        ("{name} is moving to {city} and asked me how to pack fragile dishes. What should I tell them?",
         "Wrap each plate individually, stand them on edge like records, and fill the gaps with towels so nothing "
         "shifts."),
        ("What houseplants are hard to kill for someone who travels a lot?",
         "Snake plants, ZZ plants and pothos tolerate neglect well. Cacti are good too if you have a sunny window."),
        ("How do I get a landlord to fix a leaky faucet faster?",
         "Put the request in writing with photos and the date you first noticed it, and follow up politely after "
         "a few days."),
        ("Is composting worth it in an apartment?",
         "It can be. A small countertop bin plus a drop-off point or city collection works well, and it cuts down "
         "on trash smells."),
        ("What's a weekly cleaning routine that doesn't take forever?",
         "Fifteen minutes a day on one area, plus a quick reset of the kitchen every night. It adds up without "
         "eating your weekend."),
    ),
    "books": (
        ("{name} recommended a {genre} series to me. How do I know if it's worth starting?",
         "Read the first chapter or two. If the voice grabs you, keep going; life's too short for books you don't "
         "enjoy."),
        ("What are good ways to read more when I'm busy?",
         "Keep a book with you, read for ten minutes before bed, and try audiobooks during chores or commutes."),
        ("How do book clubs usually pick what to read?",
         "Many rotate who chooses, or vote from a short list. Keeping books under about 400 pages helps everyone "
         "finish."),
        ("Is an e-reader worth it if I mostly read at night?",
         "A backlit e-reader is easier on the eyes than a phone and a lot lighter than a hardback."),
        ("What's the difference between a novella and a novel?",
         "Mostly length. A novella runs roughly 20,000 to 40,000 words, while novels usually run longer."),
        ("My {relation} wants to get into podcasts. How do people find good ones?",
         "Start from a favorite topic and follow the guests to other shows they appear on. Friends' "
         "recommendations beat any chart."),
        ("Should I watch a movie adaptation before or after reading the book?",
         "Reading first usually gives the richer experience, since the film tends to compress the story."),
        ("What's a good way to keep track of books I want to read?",
         "A simple note on your phone works, or a reading app where you can add a book with one tap and rate it "
         "when you're done."),
        ("Are library apps any good for borrowing ebooks?",
         "They're great. You only need a library card; popular titles have waitlists, so put holds on a few at "
         "once."),
        ("{name} says {genre} is overrated. What makes it appealing to so many readers?",
         "At its best it gives you a strong hook and a sense of discovery, and good writers use that to say "
         "something about people."),
    ),
    "money": (
        ("What's a simple way to start budgeting?",
         "Track your spending for one month without changing anything, then set limits for the three biggest "
         "categories. Automating savings on payday helps."),
        ("Is it better to pay off debt or build an emergency fund first?",
         "A small emergency fund first, even one month of expenses, then high-interest debt, then build the fund "
         "further."),
        ("My {relation} just started their first job. What money advice should I give?",
         "Take any retirement match, keep fixed costs low, and build a small emergency fund before upgrading their "
         "lifestyle."),
        ("How do roommates usually split bills fairly?",
         "A shared expense app, utilities split evenly, and rent split by room size if the rooms differ a lot."),
        ("Are extended warranties on something like {a_product} worth it?",
         "Usually not. Many credit cards already extend the manufacturer's warranty, and failure rates rarely "
         "justify the cost."),
        ("How much should be in an emergency fund?",
         "Three to six months of essential expenses is the usual guideline, more if your income is irregular."),
        ("What's the difference between a Roth and a traditional retirement account?",
         "With a Roth you pay taxes now and withdraw tax-free later; with a traditional account you get the tax "
         "break now and pay taxes on withdrawals."),
        ("{name} bought {a_product} for ${price} and now regrets it. Is it worth trying to return it?",
         "If it's within the return window, absolutely. Many stores accept opened items, sometimes with a "
         "restocking fee."),
        ("Any tips for not overspending during the holidays?",
         "Set a total budget first, then divide it by person. Drawing names for a gift exchange saves a lot."),
        ("Do cashback credit cards actually save money?",
         "They do if you pay the balance in full every month. Otherwise the interest wipes out the rewards "
         "quickly."),
    ),
    "social": (
        ("My friend {name} is turning 40. Any party ideas that aren't cheesy?",
         "A dinner with close friends at a favorite restaurant, a small backyard gathering, or an experience like "
         "a cooking class together all feel special without being over the top."),
        ("How do I reconnect with an old friend without it being awkward?",
         "Keep it simple: mention something that reminded you of them and suggest a low-key coffee or call."),
        ("What's a thoughtful gift for a {relation} who has everything?",
         "Experiences tend to land better than things: tickets to a show, a class, or a nice meal together."),
        ("{name} and I keep missing each other's calls. How do busy friends stay in touch?",
         "Pick a standing time, like a monthly dinner, and send short voice messages in between. Consistency beats "
         "long catch-ups."),
        ("How do I tell a friend I can't afford the trip they're planning?",
         "Be honest and early. Say you'd love to celebrate together and suggest a cheaper plan you can join."),
        ("What are some fun things to do with kids on a rainy day?",
         "Build a blanket fort, bake something simple, run a scavenger hunt around the house, or set up an indoor "
         "picnic."),
        ("My {relation} is visiting {city} for the first time. What should they expect?",
         "Comfortable shoes, a bit of cash for small shops, and a loose plan: the best moments in a new city are "
         "usually unplanned."),
        ("How do I write a good wedding toast?",
         "Keep it under three minutes: one short story about the couple, one line about why they fit together, "
         "and a warm closing."),
        ("What's a good icebreaker for a neighborhood potluck?",
         "Ask everyone to bring a dish with a story behind it and share it in a sentence or two."),
        ("How can I support a friend who's going through a breakup?",
         "Check in regularly, listen more than you advise, and invite them to low-pressure plans."),
    ),
    "health": (
        ("How much water should I really drink in a day?",
         "Needs vary, but around two to three liters from all sources is a common guideline, more if it's hot or "
         "you're exercising."),
        ("Any tips for falling asleep faster?",
         "Keep a consistent schedule, dim the lights an hour before bed, and keep screens out of the bedroom. A "
         "cool room helps."),
        ("My {relation} just had their wisdom teeth removed. What should they eat?",
         "Soft, cool foods: yogurt, smoothies (no straw), mashed potatoes and soup that isn't too hot."),
        ("Is it normal to feel tired after a flu shot?",
         "Yes, mild tiredness or a sore arm for a day or two is a common reaction."),
        ("How often should running shoes be replaced?",
         "Roughly every 500 to 800 kilometers, or sooner if the cushioning feels flat or new aches show up."),
        ("What are simple ways to reduce stress during a busy week?",
         "Short walks, a few minutes of slow breathing, and protecting your sleep make a surprising difference."),
        ("{name} says intermittent fasting changed their life. Is there anything to it?",
         "Some people find it a convenient way to eat less, but overall diet quality matters more than timing."),
        ("How do I build a habit of stretching every day?",
         "Attach it to something you already do, like brushing your teeth, and start with just two minutes."),
        ("What belongs in a basic first-aid kit at home?",
         "Bandages, gauze, tape, antiseptic wipes, pain relievers, tweezers, a thermometer and any personal "
         "medications."),
        ("Is it bad to work out with a cold?",
         "Light exercise is usually fine if the symptoms are above the neck. Rest if you have a fever or chest "
         "congestion."),
    ),
    "hobbies": (
        ("How do people usually get started with {hobby}?",
         "A beginner class is the fastest way in. You learn the basics safely and meet people at the same level."),
        ("{name} wants to learn the {instrument}. Is it too late to start as an adult?",
         "Not at all. Adults often progress quickly because they practice deliberately. Fifteen minutes a day "
         "beats one long weekly session."),
        ("How do I keep a hobby fun instead of turning it into another chore?",
         "Drop the goals for a while and do it purely for enjoyment. Sharing it with a friend helps too."),
        ("What camera settings work for photos at dusk?",
         "A wide aperture, a slightly higher ISO, and steady hands or a tripod. Shoot in RAW if you can."),
        ("Is a {hobby} class a good idea for a first date?",
         "It can be! Doing something hands-on takes the pressure off conversation and gives you something to "
         "laugh about."),
        ("What are good board games for a group of six?",
         "Codenames, Wavelength and Just One work well with bigger groups, and they're easy to teach."),
        ("How do I learn {language} vocabulary without getting bored?",
         "Mix spaced-repetition flashcards with things you enjoy: shows with subtitles, easy podcasts, and labels "
         "on things around your home."),
        ("My {relation} has gotten really into birdwatching. What gear should they start with?",
         "A decent pair of 8x42 binoculars and a regional field guide or app are all they need at first."),
        ("My {relation} {event} and won't stop talking about it. Is it worth doing?",
         "Lots of people say it's worth it at least once. Try it with a friend so it's fun either way."),
        ("How do people find time for hobbies with a full-time job?",
         "Schedule small blocks, even thirty minutes twice a week, and protect them like appointments."),
    ),
}
THEME_NAMES = tuple(THEMES)
_OPENERS = ("", "", "", "", "Good question! ", "Sure! ", "Happy to help. ", "Great question. ")
_FOLLOWUPS = ("", "", "", "", " Hope that helps!", " Let me know how it goes!", " Want a few more ideas?",
              " Happy to go into more detail if you like.")
_CLOSERS = (("Thanks, that's really helpful!", "You're welcome! Let me know if anything else comes up."),
            ("Perfect, thank you.", "Glad I could help. Good luck!"),
            ("Great, I'll try that.", "Sounds good. Feel free to check back in anytime."),
            ("Got it, thanks!", "Anytime! Have a great day."))
_BRIDGES = ("Switching topics for a second. ", "Unrelated question. ", "One more thing. ", "Different topic: ",
            "Oh, before I forget: ")
_NOT_ENOUGH = "The information provided is not enough."


class Evidence(NamedTuple):
    """One gold turn of a question and the strings it must contain verbatim."""

    session_id: str
    turn: int  # 0-based index within the session
    contains: tuple[str, ...]  # answer-bearing strings (value, date phrase, ...) in the turn's content


# ---------------------------------------------------------------------------- facts
@dataclass
class _Stmt:
    """One planted statement: a (user, assistant) pair; "{date}" is replaced by the session's date."""

    theme: str
    user: str
    assistant: str
    contains: tuple[str, ...]
    side: int = 0  # which turn of the pair is evidence: 0 user, 1 assistant


@dataclass
class _Fact:
    """A question and the statements that answer it (chronological)."""

    qtype: str
    stmts: list[_Stmt]
    question: str
    answer: str
    abstention: bool = False
    distinct_days: bool = False  # statements must fall on different calendar days
    # (statement datetimes, question datetime) -> (question, answer), for temporal questions
    resolve: Callable[[list[datetime], datetime], tuple[str, str]] | None = field(default=None, repr=False)


class _Draw:
    """Per-history random draws: values unused so far (no two facts share a value) and claimed keys."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.used: set[str] = set()
        self.claimed: set[str] = set()

    def one(self, pool: tuple[str, ...]) -> str:
        for _ in range(64):
            v = self.rng.choice(pool)
            if v not in self.used:
                self.used.add(v)
                return v
        free = [v for v in pool if v not in self.used]  # pool nearly exhausted: fall back to a scan
        if not free:
            raise _Exhausted
        v = self.rng.choice(free)
        self.used.add(v)
        return v

    def key(self, prefix: str, options: tuple[str, ...]) -> str | None:
        """Claim an unclaimed key f"{prefix}:{option}"; the option, or None when all are taken."""
        free = [o for o in options if f"{prefix}:{o}" not in self.claimed]
        if not free:
            return None
        o = self.rng.choice(free)
        self.claimed.add(f"{prefix}:{o}")
        return o

    def pick(self, options):
        return self.rng.choice(options)


class _Exhausted(Exception):
    """A value pool ran out for this history."""


def _a(noun: str) -> str:
    return "an" if noun[0].lower() in "aeiou" else "a"


def _your(phrase: str) -> str:
    """First person to second person for answers ("my first class" -> "your first class")."""
    return re.sub(r"\bmy\b", "your", phrase)


def _money(x: int) -> str:
    return f"${x:,}"


def _join(items: list[str]) -> str:
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else items[0]


def _day_phrase(dt: datetime) -> str:
    """ "Saturday, May 20" (own name tables: no locale dependence)."""
    return f"{WEEKDAYS[dt.weekday()]}, {MONTHS[dt.month - 1]} {dt.day}"


def _md(dt: datetime) -> str:
    return f"{MONTHS[dt.month - 1]} {dt.day}"


def _stamp(dt: datetime) -> str:
    """LongMemEval's date format, e.g. "2023/05/20 (Sat) 02:21"."""
    return f"{dt.year:04d}/{dt.month:02d}/{dt.day:02d} ({WEEKDAYS[dt.weekday()][:3]}) {dt.hour:02d}:{dt.minute:02d}"


# --- single-session-user
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
    user, assistant = d.pick((
        (f"I need to write a thank-you note to my {rel}, {name}, who helped me a lot this month. Can you help me "
         "word it?",
         "Of course. Something like: 'Thank you so much for all your help this month. It made a real difference, "
         "and I'm lucky to have you.' Short and specific is best."),
        (f"{name}, my {rel}, invited me over for dinner on Friday. What's a good thing to bring?",
         "A bottle of something nice, a dessert you made yourself, or fresh flowers are all safe choices. Ask "
         "ahead if there are any dietary restrictions."),
        (f"I have a long phone call planned tonight with my {rel} {name}, and I want to talk about something "
         "difficult. How should I start?",
         "Start by saying why the conversation matters to you, keep it about your own feelings, and leave room "
         "for them to respond."),
    ))
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
    user, assistant = d.pick((
        (f"I adopted {_a(kind)} {kind} named {pet} a few weeks ago. How do I help a new pet settle into a routine?",
         "Keep feeding, walks or play and bedtime at the same times every day, give them a quiet spot of their "
         "own, and introduce new people slowly."),
        (f"My {kind}, {pet}, has been really picky about food lately. Should I be worried?",
         "A little pickiness is common, especially with heat or a change in routine. If it lasts more than a "
         "couple of days or comes with other symptoms, call the vet."),
        (f"I'm going away for a weekend and need someone to look after {pet}, my {kind}. Sitter or boarding?",
         "A sitter at home is usually less stressful for the animal, while boarding gives more supervision. A "
         "trial visit beforehand helps either way."),
    ))
    return _Stmt("pets", user, assistant, (pet, kind))


def _ssu_price(d: _Draw) -> _Fact | None:
    product = d.one(PRODUCTS)
    price = _price(d, product)
    return _Fact("single-session-user", [_price_stmt(d, product, price)], f"How much did I pay for my {product}?",
                 _money(price))


def _price(d: _Draw, product: str) -> int:
    lo, hi = PRICES[product]
    return d.rng.randrange(lo, hi + 1, 5)


def _price_stmt(d: _Draw, product: str, price: int) -> _Stmt:
    user, assistant = d.pick((
        (f"I finally bought {_a(product)} {product} for {_money(price)}. Is there anything I should do in the first "
         "week to make it last?",
         "Read the care section of the manual, register the warranty, and keep the receipt somewhere safe. Most "
         "problems show up early, while returns are still easy."),
        (f"Just paid {_money(price)} for {_a(product)} {product}, which is more than I planned. How do I stop "
         "feeling guilty about it?",
         "If it's something you'll use often, divide the price by the number of uses; it usually looks much more "
         "reasonable. Then enjoy it."),
    ))
    return _Stmt("money", user, assistant, (_money(price), product))


def _ssu_commute(d: _Draw) -> _Fact | None:
    if d.key("commute", ("",)) is None:
        return None
    n, mode = d.rng.randrange(15, 80, 5), d.pick(("bus", "train", "bike", "car", "ferry"))
    user = (f"My commute is {n} minutes each way by {mode}, so I'm looking for podcasts or audiobooks to fill the "
            "time. Any suggestions?")
    assistant = ("Pick a mix: one long-form interview show, one short daily news podcast, and a gripping audiobook "
                 "for the days you're tired.")
    return _Fact("single-session-user", [_Stmt("work", user, assistant, (f"{n} minutes",))],
                 "How long is my commute to work, one way?", f"{n} minutes")


def _ssu_degree(d: _Draw) -> _Fact | None:
    if d.key("degree", ("",)) is None:
        return None
    subject, uni = d.one(FIELDS_OF_STUDY), d.one(UNIVERSITIES)
    user = (f"I have a degree in {subject} from {uni}, and I'm thinking about going back for a certificate. "
            "Is that worth it mid-career?")
    assistant = ("It can be, if the certificate is something employers in your field ask for. Look at a few job "
                 "postings you'd want in two years and see what they list.")
    if d.rng.random() < 0.5:
        return _Fact("single-session-user", [_Stmt("work", user, assistant, (subject,))],
                     "What did I get my degree in?", subject)
    return _Fact("single-session-user", [_Stmt("work", user, assistant, (uni,))],
                 "Which school did I get my degree from?", uni)


def _ssu_instrument(d: _Draw) -> _Fact | None:
    inst = d.key("inst", INSTRUMENTS)
    if inst is None:
        return None
    n = d.rng.randint(2, 25)
    user = f"I've been playing the {inst} for {n} years, but I feel like I've hit a plateau. How can I get better?"
    assistant = ("Record yourself and listen back, learn one piece slightly above your level, and spend part of "
                 "each session on slow, deliberate practice of the hard bits.")
    return _Fact("single-session-user", [_Stmt("hobbies", user, assistant, (f"{n} years", inst))],
                 f"How many years have I been playing the {inst}?", f"{n} years")


def _ssu_birthday(d: _Draw) -> _Fact | None:
    rel = d.key("bday", RELATIONS)
    if rel is None:
        return None
    md = f"{d.pick(MONTHS)} {d.rng.randint(1, 28)}"
    user = f"My {rel}'s birthday is on {md}, and I want to start planning something early this year. Any ideas?"
    assistant = ("Starting early is smart. Think about what they've mentioned wanting to do lately, book anything "
                 "that needs a reservation now, and keep a note of small gift ideas as they come up.")
    return _Fact("single-session-user", [_Stmt("social", user, assistant, (md,))],
                 f"When is my {rel}'s birthday?", md)


def _ssu_store(d: _Draw) -> _Fact | None:
    product, store = d.one(PRODUCTS), d.one(STORES)
    user = (f"I picked up my new {product} at {store}, but it came without a manual. Where can I find one "
            "online?")
    assistant = ("Check the manufacturer's support page and search by the model number on the label. Sites that "
                 "collect manuals are a good backup.")
    return _Fact("single-session-user", [_Stmt("tech", user, assistant, (store, product))],
                 f"Where did I buy my new {product}?", store[0].upper() + store[1:] if store[0].islower() else store)


def _ssu_hometown(d: _Draw) -> _Fact | None:
    if d.key("hometown", ("",)) is None:
        return None
    city = d.one(CITIES)
    user = (f"I grew up in {city}, and I still miss the food there. Can you help me recreate a few hometown "
            "favorites?")
    assistant = ("I'd love to. Tell me two or three dishes you miss most, and I'll suggest recipes and where to "
                 "find the harder ingredients.")
    return _Fact("single-session-user", [_Stmt("food", user, assistant, (city,))], "Where did I grow up?", city)


def _ssu_allergy(d: _Draw) -> _Fact | None:
    if d.key("allergy", ("",)) is None:
        return None
    what = d.pick(("peanuts", "shellfish", "sesame", "tree nuts", "eggs", "soy", "kiwi"))
    user = (f"I'm allergic to {what}, so I have to be careful when I eat out. How can I ask restaurants about "
            "ingredients without being a pain?")
    assistant = ("Mention it when you book and again when you order, keep it short and matter-of-fact, and ask how "
                 "the dish is prepared, not just what's in it.")
    return _Fact("single-session-user", [_Stmt("health", user, assistant, (what,))], "What food am I allergic to?",
                 what)


def _ssu_parking(d: _Draw) -> _Fact | None:
    if d.key("parking", ("",)) is None:
        return None
    n = d.rng.randint(2, 240)
    user = f"My parking spot at work is number {n}, and someone keeps taking it. How should I handle it?"
    assistant = ("Leave a polite note first. If it keeps happening, let building management know with the dates "
                 "and, if possible, a photo of the car.")
    return _Fact("single-session-user", [_Stmt("work", user, assistant, (f"number {n}",))],
                 "What is my parking spot number at work?", str(n))


def _ssu_restaurant(d: _Draw) -> _Fact | None:
    if d.key("restaurant", ("",)) is None:
        return None
    r, dish = d.one(RESTAURANTS), d.pick(DISHES)
    user = f"My favorite restaurant is {r}, and I'm obsessed with their {dish}. Can you help me make it at home?"
    assistant = ("Let's try. Restaurant versions usually use more fat, more salt and higher heat than home "
                 "recipes, so start there and adjust.")
    return _Fact("single-session-user", [_Stmt("food", user, assistant, (r,))], "What is my favorite restaurant?", r)


# --- single-session-assistant (the evidence is the assistant turn)
BOOK_TOPICS = ("personal finance", "habit building", "the history of maps", "urban gardening", "negotiation",
               "sleep science", "public speaking", "the deep ocean", "ancient Rome", "minimalism")
VENTURES = ("bakery", "podcast", "book club", "bike repair shop", "coffee cart", "dog-walking business",
            "online vintage shop", "trivia team", "running club", "food truck")
RECIPES = (("banana bread", "baking soda", "teaspoon"), ("pancakes", "milk", "cup"),
           ("guacamole", "lime juice", "tablespoon"), ("chili", "cumin", "teaspoon"),
           ("vinaigrette", "olive oil", "tablespoon"), ("pizza dough", "yeast", "teaspoon"),
           ("lemonade", "sugar", "cup"), ("turkey brine", "salt", "cup"))
PACKING = (("winter hike", ("microspikes", "hand warmers", "a thermos")),
           ("beach weekend", ("reef-safe sunscreen", "a quick-dry towel", "a beach umbrella")),
           ("camping trip", ("a headlamp", "a water filter", "extra tent stakes")),
           ("ski trip", ("goggles", "glove liners", "lip balm with SPF")),
           ("music festival", ("earplugs", "a portable phone charger", "a refillable water bottle")))


def _ssa_book(d: _Draw) -> _Fact | None:
    topic = d.key("ssa_book", BOOK_TOPICS)
    if topic is None:
        return None
    title, author = d.one(BOOK_TITLES), f"{d.pick(NAMES)} {d.pick(SURNAMES)}"
    user = f"Can you recommend a good book about {topic}? I want something readable, not a textbook."
    assistant = (f"I'd recommend '{title}' by {author}. It's approachable and full of stories, and each chapter "
                 "stands on its own, so it's easy to read in short bursts.")
    return _Fact("single-session-assistant", [_Stmt("books", user, assistant, (title,), side=1)],
                 f"What book did you recommend to me about {topic}?", f"'{title}' by {author}")


def _ssa_name(d: _Draw) -> _Fact | None:
    venture = d.key("ssa_name", VENTURES)
    if venture is None:
        return None
    name = d.one(BUSINESS_NAMES)
    user = f"I'm starting a {venture} with a couple of friends. Can you suggest a catchy name?"
    assistant = (f"How about '{name}'? It's short, easy to remember, and works well on a sign or as a social media "
                 "handle.")
    return _Fact("single-session-assistant", [_Stmt("work", user, assistant, (name,), side=1)],
                 f"What name did you suggest for my {venture}?", name)


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
    return _Fact("single-session-assistant", [_Stmt("food", user, assistant, (f"{qty} of {ing}",), side=1)],
                 f"How much {ing} did you tell me to use for the {dish}?", qty)


def _ssa_itinerary(d: _Draw) -> _Fact | None:
    city = d.key("ssa_city", CITIES)
    if city is None:
        return None
    spot = d.one(LANDMARKS)
    user = f"I have one free day in {city} next month. Where should I start my morning?"
    assistant = (f"Start early at {spot}; it's quiet before ten and a great place for breakfast. From there you "
                 "can walk to most of the central sights.")
    return _Fact("single-session-assistant", [_Stmt("travel", user, assistant, (spot,), side=1)],
                 f"Where did you suggest I start my day in {city}?", spot[0].upper() + spot[1:])


def _ssa_plan(d: _Draw) -> _Fact | None:
    sport = d.key("ssa_plan", ("rowing", "swimming", "cycling", "yoga", "strength training", "jump rope",
                               "kettlebell training", "pilates"))
    if sport is None:
        return None
    k, m = d.rng.randint(2, 4), d.rng.randrange(15, 50, 5)
    user = f"Can you put together a beginner {sport} plan for me? I've never managed to do it consistently."
    assistant = (f"Here's a simple start: {k} sessions a week, {m} minutes each, for the first month. Keep the "
                 "effort easy enough to hold a conversation, then add five minutes per session every two weeks.")
    return _Fact("single-session-assistant", [_Stmt("fitness", user, assistant, (f"{m} minutes",), side=1)],
                 f"How long did you say each session of my beginner {sport} plan should be?", f"{m} minutes")


def _ssa_gift(d: _Draw) -> _Fact | None:
    rel = d.key("ssa_gift", RELATIONS)
    if rel is None:
        return None
    hobby, gift = d.pick(HOBBIES), d.one(GIFTS)
    user = f"My {rel} is really into {hobby}. What should I get them for their birthday?"
    assistant = (f"I'd suggest {_a(gift)} {gift}: it's thoughtful, a bit special, and easy to pair with a "
                 "handwritten card.")
    return _Fact("single-session-assistant", [_Stmt("social", user, assistant, (gift,), side=1)],
                 f"What gift did you suggest for my {rel}?", f"{_a(gift).capitalize()} {gift}")


def _ssa_total(d: _Draw) -> _Fact | None:
    if d.key("ssa_total", ("",)) is None:
        return None
    nights, rate, fee = d.rng.randint(2, 9), d.rng.randrange(80, 320, 5), d.rng.randrange(15, 90, 5)
    total = nights * rate + fee
    user = (f"I'm booking {nights} nights at {_money(rate)} a night, plus a {_money(fee)} cleaning fee. What will "
            "the total come to?")
    assistant = (f"That comes to {_money(total)} in total: {nights} nights at {_money(rate)} is "
                 f"{_money(nights * rate)}, plus the {_money(fee)} fee.")
    return _Fact("single-session-assistant", [_Stmt("money", user, assistant, (_money(total),), side=1)],
                 f"What total did you work out for my {nights}-night stay?", _money(total))


def _ssa_water(d: _Draw) -> _Fact | None:
    plant = d.key("ssa_water", PLANTS)
    if plant is None:
        return None
    days = d.rng.randint(4, 14)
    user = f"I just got a {plant} for my living room. How often should I water it?"
    assistant = (f"Water your {plant} about every {days} days, and check that the top few centimeters of soil are "
                 "dry first. Good drainage matters more than the exact schedule.")
    return _Fact("single-session-assistant", [_Stmt("home", user, assistant, (f"every {days} days",), side=1)],
                 f"How often did you tell me to water my {plant}?", f"Every {days} days")


def _ssa_packing(d: _Draw) -> _Fact | None:
    trip = d.key("ssa_pack", tuple(p[0] for p in PACKING))
    if trip is None:
        return None
    items = list(next(p[1] for p in PACKING if p[0] == trip))
    d.rng.shuffle(items)
    user = f"I'm going on a {trip} soon. What do people usually forget to pack?"
    assistant = (f"The three things people forget most are {items[0]}, {items[1]} and {items[2]}. Put {items[0]} "
                 "at the top of your list.")
    return _Fact("single-session-assistant", [_Stmt("travel", user, assistant, (f"Put {items[0]} at the top",),
                                                    side=1)],
                 f"What did you say should go at the top of my packing list for the {trip}?", items[0])


# --- single-session-preference (answer = rubric)
def _ssp(key: str, theme: str, user: str, assistant: str, contains: tuple[str, ...], question: str, rubric: str):
    def make(d: _Draw) -> _Fact | None:
        if d.key("ssp", (key,)) is None:
            return None
        slots = {"cuisine": d.pick(CUISINES), "diet": d.pick(("vegetarian", "pescatarian", "vegan")),
                 "genre": d.pick(GENRES), "city": d.pick(CITIES),
                 "film": d.pick(("mystery", "science fiction", "period drama", "romantic comedy", "heist", "western"))}
        f = lambda s: s.format(**slots)  # noqa: E731
        return _Fact("single-session-preference", [_Stmt(theme, f(user), f(assistant), tuple(map(f, contains)))],
                     f(question), f(rubric))
    return make


_SSP_FAMILIES = (
    _ssp("food", "food",
         "I've been {diet} for a few years now, and {cuisine} food is my absolute favorite. Could you help me put "
         "together a grocery list for the week?",
         "Sure. Build it around a few staples you can mix and match: grains, beans or tofu, lots of vegetables, "
         "and a couple of sauces for variety.",
         ("{diet}", "{cuisine}"), "Can you suggest a dinner I could cook tonight?",
         "The user would prefer {diet} dinner ideas, ideally {cuisine}-inspired dishes. They would not prefer "
         "recipes that don't fit a {diet} diet."),
    _ssp("books", "books",
         "I'm a huge fan of {genre}, especially books with a twist I don't see coming. How can I find more like "
         "that?",
         "Reader forums and 'if you liked this' lists are great for that, and librarians give excellent "
         "recommendations if you name two or three favorites.",
         ("{genre}",), "Can you recommend a book for my next flight?",
         "The user would prefer {genre} recommendations, ideally with a surprising twist. They might not prefer "
         "books from genres they haven't mentioned enjoying."),
    _ssp("travel", "travel",
         "Whenever I travel I'm happiest somewhere quiet in nature, like a cabin near a lake. Crowded tourist spots "
         "wear me out. How do I find places like that?",
         "Look at smaller regional parks, book midweek, and search rental sites with a map view away from the "
         "big towns.",
         ("quiet in nature",), "Any ideas for a long weekend trip next month?",
         "The user would prefer quiet, nature-focused getaways such as a cabin near a lake. They would not prefer "
         "crowded tourist destinations or busy city breaks."),
    _ssp("exercise", "fitness",
         "I honestly can't stand running, but I could go swimming every single day. How do I make swimming a "
         "better full-body workout?",
         "Mix strokes, add short intervals with rest, and use a kickboard and pull buoy to focus on legs and "
         "arms separately.",
         ("can't stand running",), "What workout should I do this weekend?",
         "The user would prefer swimming or other low-impact workouts they enjoy. They would not prefer running."),
    _ssp("music", "hobbies",
         "For background music I mostly go for jazz, especially old piano trios. How do I discover more of it?",
         "Follow the sidemen: look up who played on the records you love and explore their other albums.",
         ("jazz",), "Can you suggest some music for my study session tonight?",
         "The user would prefer jazz, especially piano trio recordings. They might not prefer pop or genres with "
         "prominent vocals."),
    _ssp("drinks", "health",
         "I'm cutting out caffeine after 2 p.m., and I've gotten really into herbal teas like rooibos. What else "
         "is similar?",
         "Honeybush is close to rooibos, and chamomile, peppermint and lemon balm are all caffeine-free and easy "
         "to find.",
         ("rooibos",), "What should I drink this afternoon?",
         "The user would prefer a caffeine-free drink such as rooibos or another herbal tea. They would not prefer "
         "coffee or other caffeinated drinks in the afternoon."),
    _ssp("movies", "books",
         "I love a good {film} movie, but I can't handle horror at all. What makes a movie night feel special?",
         "Good snacks, phones away, and picking the film in advance so nobody scrolls for an hour.",
         ("can't handle horror",), "What should I watch tonight?",
         "The user would prefer a {film} movie. They would not prefer horror movies."),
    _ssp("gadgets", "tech",
         "I've used Lenovo laptops for years, and battery life is the thing I care about most. How do I keep a "
         "laptop battery healthy?",
         "Avoid keeping it at 100% all the time, keep it cool, and use the manufacturer's battery-saving charge "
         "limit if it has one.",
         ("battery life",), "Which new laptop should I consider?",
         "The user would prefer a Lenovo laptop with long battery life. They might not prefer models with short "
         "battery life, whatever their other strengths."),
    _ssp("stays", "travel",
         "When I travel I always prefer small guesthouses over big chain hotels, and I need a kitchen so I can "
         "cook. Is that usually cheaper?",
         "Often, especially for longer stays, since cooking a few meals saves a lot. Weekly discounts help too.",
         ("small guesthouses",), "Where should I stay on my trip to {city}?",
         "The user would prefer a small guesthouse or apartment with a kitchen. They would not prefer large "
         "chain hotels."),
    _ssp("podcasts", "books",
         "I listen to history podcasts on my walks, but I prefer episodes under 30 minutes. How do I find good "
         "short ones?",
         "Search for 'daily' or 'in 20 minutes' shows, and check episode lengths in the feed before "
         "subscribing.",
         ("history podcasts",), "Can you suggest a podcast for my walk tomorrow?",
         "The user would prefer short history podcasts, with episodes under 30 minutes. They might not prefer "
         "long episodes or unrelated topics."),
    _ssp("hobby", "hobbies",
         "I'm an introvert and love quiet, hands-on hobbies I can do at home, like knitting. How do I keep "
         "improving without a class?",
         "Video tutorials and a project slightly above your level work well; online groups are great for "
         "feedback without going out.",
         ("hands-on hobbies",), "What new hobby could I pick up this winter?",
         "The user would prefer a quiet, hands-on hobby they can do at home, similar to knitting. They might not "
         "prefer group or outdoor activities."),
    _ssp("coffee", "food",
         "I only drink oat milk in my coffee, and I like it strong but not bitter. Which roast should I buy?",
         "A medium roast usually gives you strength without the bitterness; look for chocolate or caramel notes.",
         ("oat milk",), "Can you suggest a coffee drink for me to order at a cafe?",
         "The user would prefer a strong but not bitter coffee made with oat milk, like an oat milk flat white. "
         "They would not prefer drinks with dairy milk or very bitter dark roasts."),
)


# --- temporal-reasoning: (base, past, gerund, key, theme, follow-up, reply)
EVENTS = (
    ("go to my first pottery class", "went to my first pottery class", "going to my first pottery class",
     "pottery class", "hobbies", "Any tips for centering clay on the wheel?",
     "Keep your elbows braced on your knees, use plenty of water, and let the wheel do the work."),
    ("run my first half marathon", "ran my first half marathon", "running my first half marathon",
     "half marathon", "fitness", "How should I recover this week?",
     "Easy walks, extra sleep and plenty of protein. Hold off on hard runs for at least a week."),
    ("get my wisdom teeth removed", "got my wisdom teeth removed", "getting my wisdom teeth removed",
     "wisdom teeth", "health", "What soft foods can I eat for the next few days?",
     "Yogurt, smoothies without a straw, mashed potatoes, scrambled eggs and lukewarm soup."),
    ("plant tomatoes in the backyard", "planted tomatoes in the backyard", "planting tomatoes in the backyard",
     "tomatoes", "home", "How often should I water them at first?",
     "Water deeply every couple of days while they establish, and mulch to keep the soil moist."),
    ("repaint the living room", "repainted the living room", "repainting the living room", "living room", "home",
     "How long should I wait before hanging pictures again?",
     "Give the paint at least two or three days, and a bit longer if it's humid."),
    ("sign up for an evening Spanish course", "signed up for an evening Spanish course",
     "signing up for an evening Spanish course", "Spanish course", "hobbies",
     "How can I practice between lessons?",
     "Ten minutes of flashcards a day, a podcast for learners, and narrating your day in Spanish."),
    ("get my car serviced", "got my car serviced", "getting my car serviced", "serviced", "money",
     "How often should I be doing this?", "Most cars need a service every 10,000 to 15,000 kilometers or once a year."),
    ("donate blood for the first time", "donated blood for the first time", "donating blood for the first time",
     "donated blood", "health", "How soon can I exercise again?",
     "Take it easy for the rest of the day and skip hard workouts until tomorrow."),
    ("finish my first 1,000-piece puzzle", "finished my first 1,000-piece puzzle",
     "finishing my first 1,000-piece puzzle", "1,000-piece puzzle", "hobbies", "Is there a good way to frame it?",
     "Use puzzle glue on the front, let it dry overnight, and mount it on foam board before framing."),
    ("go on my first scuba dive", "went on my first scuba dive", "going on my first scuba dive", "scuba dive",
     "travel", "Should I get certified next?",
     "If you enjoyed it, an open-water certification course is the natural next step."),
    ("see a live opera for the first time", "saw a live opera for the first time",
     "seeing a live opera for the first time", "live opera", "books", "Which opera should I see next?",
     "Something with famous melodies is a good second step, like a popular Italian classic."),
    ("get my flu shot", "got my flu shot", "getting my flu shot", "flu shot", "health",
     "Is a sore arm normal?", "Yes, a sore arm for a day or two is very common. Moving it around helps."),
    ("file my taxes", "filed my taxes", "filing my taxes", "taxes", "money",
     "How long should I keep the paperwork?", "Keeping records for about seven years is a safe rule of thumb."),
    ("bake my first sourdough loaf", "baked my first sourdough loaf", "baking my first sourdough loaf",
     "sourdough loaf", "food", "Why is the crumb so dense?",
     "Usually the dough was under-proofed. Try a longer bulk fermentation in a warm spot."),
    ("join a community choir", "joined a community choir", "joining a community choir", "community choir",
     "hobbies", "How do I get better at sight-reading?",
     "Practice a few lines a day, clap the rhythm first, and sing along with recordings of your part."),
    ("host a dinner party for ten people", "hosted a dinner party for ten people",
     "hosting a dinner party for ten people", "dinner party", "food", "How do I get wine stains out of a tablecloth?",
     "Blot, then cover with salt or baking soda, and wash in cold water as soon as you can."),
    ("go on my first overnight backpacking trip", "got back from my first overnight backpacking trip",
     "going on my first overnight backpacking trip", "backpacking trip", "travel",
     "My legs are wrecked. What helps?", "Gentle walking, stretching, a warm bath and plenty of water."),
    ("start a 30-day yoga challenge", "started a 30-day yoga challenge", "starting a 30-day yoga challenge",
     "yoga challenge", "fitness", "How do I stay consistent?",
     "Same time every day, mat left out, and a short session on busy days still counts."),
    ("renew my passport", "renewed my passport", "renewing my passport", "passport", "travel",
     "How long does the new one usually take to arrive?", "Often several weeks, so keep the receipt handy."),
    ("volunteer at the food bank", "volunteered at the food bank", "volunteering at the food bank", "food bank",
     "social", "How can I get more involved?",
     "Ask about regular shifts or helping with a food drive; steady volunteers are always needed."),
    ("go to the farmers market for the first time", "went to the farmers market for the first time",
     "going to the farmers market for the first time", "farmers market", "food", "What's in season right now?",
     "Look for whatever is piled highest; that's usually what's at its peak this week."),
    ("sell my old bike", "sold my old bike", "selling my old bike", "old bike", "money",
     "What should I do with the money?", "Putting it toward a goal you care about makes it feel more rewarding."),
    ("get an MRI on my knee", "got an MRI on my knee", "getting an MRI on my knee", "MRI", "health",
     "How long do results usually take?", "Often a few days; your doctor's office can tell you what to expect."),
    ("attend a college friend's wedding", "attended a college friend's wedding", "attending a college friend's wedding",
     "wedding", "social", "What's a nice way to follow up with the couple?",
     "A short card with a favorite moment from the day is a lovely touch."),
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
        return _Fact("temporal-reasoning", [_event_stmt(d, a), _event_stmt(d, b)], "", "", distinct_days=True,
                     resolve=resolve)
    if variant == "first":
        swap = d.rng.random() < 0.5

        def resolve(when, asked):
            x, y = (b, a) if swap else (a, b)
            return (f"Which did I do first, {x[2]} or {y[2]}?",
                    f"{_your(a[2])[0].upper()}{_your(a[2])[1:]} came first, on {_md(when[0])}.")
        return _Fact("temporal-reasoning", [_event_stmt(d, a), _event_stmt(d, b)], "", "", distinct_days=True,
                     resolve=resolve)
    if variant == "ago":
        def resolve(when, asked):
            days = (asked.date() - when[0].date()).days
            return f"How many days ago did I {a[0]}?", f"{days} day{'s' * (days != 1)} ago ({_md(when[0])})"
        return _Fact("temporal-reasoning", [_event_stmt(d, a)], "", "", resolve=resolve)

    def resolve(when, asked):
        w = when[0]
        return f"When did I {a[0]}?", f"On {_day_phrase(w)}, {w.year}."
    return _Fact("temporal-reasoning", [_event_stmt(d, a)], "", "", resolve=resolve)


# --- knowledge-update: (old statement, new statement) about one attribute
def _ku(d: _Draw) -> _Fact | None:
    kinds = ["city", "job", "5k", "car", "gym", "rent", "phone", "plants", "goal", "cafe", "deadlift", "manager"]
    d.rng.shuffle(kinds)
    for kind in kinds:
        key = "rel:manager" if kind == "manager" else f"ku:{kind}"
        if key in d.claimed:
            continue
        d.claimed.add(key)
        return _KU_MAKERS[kind](d)
    return None


def _ku_fact(theme: str, old: tuple[str, str, str], new: tuple[str, str, str], question: str, answer: str) -> _Fact:
    return _Fact("knowledge-update", [_Stmt(theme, old[0], old[1], (old[2],)), _Stmt(theme, new[0], new[1], (new[2],))],
                 question, answer)


def _ku_city(d):
    c1, c2 = d.one(CITIES), d.one(CITIES)
    return _ku_fact(
        "home",
        (f"I moved to {c1} a couple of months ago and still don't know many people here. What are good ways to "
         "meet people in a new city?",
         "Join a club built around something you already enjoy, like a running group, a climbing gym or a "
         "volunteer shift, and say yes to invitations early on.", c1),
        (f"Update on my life: I just relocated from {c1} to {c2}. Can you help me make a checklist for the first "
         "week after a move?",
         "Of course. Set up utilities and internet, update your address with your bank and employer, find a "
         "local doctor, and unpack the kitchen first so you can cook.", c2),
        "Which city do I live in now?", c2)


def _ku_job(d):
    j1, j2, company = d.one(JOBS), d.one(JOBS), d.one(COMPANIES)
    return _ku_fact(
        "work",
        (f"I work as {_a(j1)} {j1} at {company}, and my days are packed with meetings. How can I protect time for deep "
         "work?",
         "Block two mornings a week on your calendar, decline meetings without an agenda, and batch your "
         "messages into a few fixed times.", j1),
        (f"Big change at work: I switched roles and I'm now {_a(j2)} {j2}. Any advice for my first month in a new "
         "position?",
         "Listen more than you talk, ask each teammate what they wish the last person had done differently, and "
         "pick one small early win.", j2),
        "What is my current job title?", j2)


def _ku_5k(d):
    t1 = d.rng.randint(22 * 60, 32 * 60)
    t2 = t1 - d.rng.randint(15, 120)
    mmss = lambda t: f"{t // 60}:{t % 60:02d}"  # noqa: E731
    return _ku_fact(
        "fitness",
        (f"My 5K personal best is {mmss(t1)}, and I'd love to get faster this season. What kind of interval "
         "workouts would help?",
         "Try 400-meter repeats at goal pace with equal rest, plus one tempo run a week.", mmss(t1)),
        (f"I ran a new 5K personal best this morning: {mmss(t2)}! How should I recover before my next hard "
         "workout?",
         "Congratulations! Take an easy day or two, stretch, and refuel with carbohydrates and protein.", mmss(t2)),
        "What is my current 5K personal best?", mmss(t2))


def _ku_car(d):
    c1, c2 = d.one(CARS), d.one(CARS)
    return _ku_fact(
        "money",
        (f"I drive a {c1}, and the check engine light just came on. Is it safe to keep driving for a few days?",
         "If it's steady rather than flashing, it's usually safe for a short while, but get the code read soon.",
         c1),
        (f"I finally traded in my {c1} and bought a {c2}. What maintenance should I keep track of with a new car?",
         "Oil changes, tire rotations and the first scheduled service; the manual lists the intervals.", c2),
        "What car do I drive now?", c2)


def _ku_gym(d):
    n1 = d.rng.randint(2, 5)
    n2 = d.pick([n for n in range(2, 7) if n != n1])
    return _ku_fact(
        "fitness",
        (f"I'm going to the gym {n1} times a week right now. How should I split my workouts across those days?",
         "Alternate upper- and lower-body days, and keep one day lighter if you feel run down.",
         f"{n1} times a week"),
        (f"I've changed my routine and I'm now going to the gym {n2} times a week. Can you help me rebalance my "
         "plan?",
         "Sure. Spread the hardest sessions apart and make sure each muscle group gets a rest day.",
         f"{n2} times a week"),
        "How many times a week do I go to the gym now?", f"{n2} times a week")


def _ku_rent(d):
    r1 = d.rng.randrange(1200, 2800, 50)
    r2 = r1 + d.rng.randrange(50, 325, 25)
    return _ku_fact(
        "money",
        (f"My rent is {_money(r1)} a month, which is about a third of my take-home pay. Is that a reasonable "
         "ratio?", "A third is right at the common guideline, so you're in a reasonable spot.", _money(r1)),
        (f"My landlord just raised my rent to {_money(r2)} a month. Should I try to negotiate or start looking "
         "elsewhere?",
         "It's worth asking; landlords often prefer a reliable tenant to a vacancy. Check local prices first.",
         _money(r2)),
        "How much is my monthly rent now?", _money(r2))


def _ku_phone(d):
    p1, p2 = d.one(PHONES), d.one(PHONES)
    return _ku_fact(
        "tech",
        (f"I'm using {_a(p1)} {p1} and the battery barely lasts until dinner. Any settings I should change?",
         "Lower the screen brightness, turn off background refresh for apps you rarely use, and check which app "
         "is using the most battery.", p1),
        (f"I gave up on my {p1} and upgraded to {_a(p2)} {p2}. What's the best way to move my photos and messages "
         "over?",
         "Use the built-in transfer tool during setup; it moves photos, messages and apps in one go.", p2),
        "What phone do I use now?", p2)


def _ku_plants(d):
    n1 = d.rng.randint(4, 15)
    n2 = n1 + d.rng.randint(2, 9)
    return _ku_fact(
        "home",
        (f"I have {n1} houseplants in my apartment, and a few of them have yellow leaves. What am I doing wrong?",
         "Yellow leaves usually mean too much water. Let the soil dry out more between waterings.",
         f"{n1} houseplants"),
        (f"My plant collection got out of hand: I'm up to {n2} houseplants now. Any tips for a watering schedule "
         "that scales?",
         "Group plants by how thirsty they are and check each group on a fixed day of the week.",
         f"{n2} houseplants"),
        "How many houseplants do I have now?", str(n2))


def _ku_goal(d):
    n1 = d.rng.randint(12, 30)
    n2 = n1 + d.rng.randint(5, 20)
    return _ku_fact(
        "books",
        (f"My reading goal for this year is {n1} books. How can I make sure I actually hit it?",
         "Always have the next book lined up, and read a few pages at the same time every day.", f"{n1} books"),
        (f"I'm ahead of schedule, so I raised my reading goal to {n2} books this year. Can you suggest a way to "
         "track my progress?", "A simple spreadsheet or a reading app with a yearly challenge works well.",
         f"{n2} books"),
        "What is my current reading goal for the year?", f"{n2} books")


def _ku_cafe(d):
    s1, s2 = d.one(CAFES), d.one(CAFES)
    return _ku_fact(
        "work",
        (f"My go-to coffee shop is {s1}; I work from there most Fridays. How can I be a considerate laptop "
         "customer?", "Buy something every couple of hours, avoid the big tables at lunch, and use headphones.", s1),
        (f"{s1} closed, so my new go-to coffee shop is {s2}. Any tips for staying focused when working from a "
         "cafe?", "Pick a seat facing a wall, set a timer for focused blocks, and leave your phone in your bag.",
         s2),
        "What is my go-to coffee shop now?", s2)


def _ku_deadlift(d):
    w1 = d.rng.randrange(135, 320, 5)
    w2 = w1 + d.rng.randrange(10, 45, 5)
    return _ku_fact(
        "fitness",
        (f"My deadlift max is {w1} pounds right now. How often should I test my one-rep max?",
         "Every eight to twelve weeks is plenty; test more often and you mostly just accumulate fatigue.",
         f"{w1} pounds"),
        (f"I hit a new deadlift max today: {w2} pounds! How should I adjust my training percentages?",
         "Recalculate your working sets from the new max, but ease in over a week or two.", f"{w2} pounds"),
        "What is my current deadlift max?", f"{w2} pounds")


def _ku_manager(d):
    n1, n2 = d.one(NAMES), d.one(NAMES)
    return _ku_fact(
        "work",
        (f"My manager, {n1}, wants weekly status updates. What's a good format for them?",
         "Three short sections work well: done this week, planned next week, and anything blocked.", n1),
        (f"There was a reorg at work and I now report to a new manager, {n2}. How do I start off on the right "
         "foot?", "Ask how they like to communicate, share your current priorities, and agree on a regular "
         "check-in.", n2),
        "What is my current manager's name?", n2)


_KU_MAKERS = {"city": _ku_city, "job": _ku_job, "5k": _ku_5k, "car": _ku_car, "gym": _ku_gym, "rent": _ku_rent,
              "phone": _ku_phone, "plants": _ku_plants, "goal": _ku_goal, "cafe": _ku_cafe,
              "deadlift": _ku_deadlift, "manager": _ku_manager}


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
    return [templates[i % len(templates)] for i in d.rng.sample(range(len(templates)), min(k, len(templates)))] + \
        [d.pick(templates) for _ in range(k - len(templates))]


def _ms_count(d, k, pool, theme, templates, question, reply):
    values = [d.one(pool) for _ in range(k)]
    stmts = [_Stmt(theme, t.format(v=v), reply, (v,)) for v, t in zip(values, _varied(d, templates, k))]
    return _Fact("multi-session", stmts, question, str(k))


def _ms_countries(d, k):
    return _ms_count(d, k, COUNTRIES, "travel", (
        "I just got back from a week in {v}, and I'm still sorting through my photos. What's a good way to organize "
        "travel pictures?",
        "Back home after my trip to {v}! I want to turn the best photos into a photo book. Which services are good?",
        "I spent last week in {v} and fell in love with the food. Can you suggest a recipe to recreate something "
        "from there?",
        "My trip to {v} was amazing, but the flight home wrecked my sleep. How do I reset my schedule?"),
        "How many different countries have I traveled to?",
        "Sounds like a wonderful trip. Pick a favorite few photos per day and let the rest go; it keeps the "
        "album readable.")


def _ms_books(d, k):
    return _ms_count(d, k, BOOK_TITLES, "books", (
        "I just finished reading '{v}' and I can't stop thinking about the ending. Can you suggest discussion "
        "questions for my book club?",
        "Finished '{v}' last night. What should I read next if I liked its pacing?",
        "I finally finished '{v}' on my commute. Is it normal to feel a bit sad when a good book ends?"),
        "How many books have I finished reading?",
        "That's a great feeling. Ask what the characters wanted, what changed them, and whether the ending felt "
        "earned.")


def _ms_concerts(d, k):
    return _ms_count(d, k, BANDS, "social", (
        "I went to see {v} live last night, and the opener was fantastic too. How do I find out about smaller shows "
        "in my area?",
        "Saw {v} in concert on Saturday and my ears are still ringing. Should I start bringing earplugs?",
        "I caught {v} at a small venue downtown yesterday. How do people get tickets before they sell out?"),
        "How many concerts have I been to?",
        "Local venue newsletters and artists' mailing lists are the best way to hear about shows early.")


def _ms_museums(d, k):
    return _ms_count(d, k, MUSEUMS, "travel", (
        "I spent the whole afternoon at {v} today. How do people keep museum visits from getting exhausting?",
        "Finally visited {v} this weekend and loved it. Are museum memberships usually worth it?",
        "I went to {v} with a friend yesterday. Any tips for taking good photos in dim galleries?"),
        "How many different museums have I visited?",
        "Pick one or two rooms to see properly and skim the rest; a coffee break halfway helps a lot.")


def _ms_cooking(d, k):
    return _ms_count(d, k, CUISINES, "food", (
        "I took a {v} cooking class on Saturday and we made everything from scratch. How do I keep practicing at "
        "home?",
        "Just finished a {v} cooking class with a friend. Which pantry staples should I stock up on?"),
        "How many different cooking classes have I taken?",
        "Cook one of the class recipes again this week while it's fresh, then start changing one thing at a time.")


def _ms_sum(d, k, theme, lo, hi, step, fmt, templates, question, total_fmt):
    values = [d.rng.randrange(lo, hi, step) for _ in range(k)]
    stmts = [_Stmt(theme, u.format(v=fmt(v)), a, (fmt(v),)) for v, (u, a) in zip(values, _varied(d, templates, k))]
    return _Fact("multi-session", stmts, question, total_fmt(sum(values)))


def _ms_miles(d, k):
    return _ms_sum(d, k, "fitness", 8, 41, 1, lambda v: f"{v} miles", (
        ("I biked {v} miles this morning along the river trail. How should I fuel for longer rides?",
         "Eat something with carbohydrates before you go, and on rides over an hour bring a snack and water."),
        ("Did {v} miles on the bike today and my knees are a little sore. Could my saddle be too low?",
         "Quite possibly. Knee pain at the front often means the saddle is too low; raise it a few millimeters."),
        ("I rode {v} miles on my bike with a friend yesterday. What's a good way to build up to a century ride?",
         "Add about ten percent to your longest ride each week, with an easier week every month.")),
        "How many miles have I biked in total?", lambda s: f"{s} miles")


def _ms_volunteer(d, k):
    return _ms_sum(d, k, "social", 2, 7, 1, lambda v: f"{v} hours", (
        ("I volunteered {v} at the animal shelter this week. Is there a good way to track volunteer hours for my "
         "résumé?", "A simple spreadsheet with dates, hours and tasks works; some shelters also log hours for you."),
        ("Spent {v} walking dogs at the animal shelter today. How do I keep the shy ones from getting stressed?",
         "Move slowly, let them approach you, and keep the first walks short and quiet."),
        ("I put in {v} at the animal shelter on Saturday, mostly cleaning kennels. Any ideas for enrichment toys "
         "I could make?", "Frozen treat cups, snuffle mats from old fleece, and cardboard boxes stuffed with paper.")),
        "How many hours have I volunteered at the animal shelter in total?", lambda s: f"{s} hours")


def _ms_savings(d, k):
    return _ms_sum(d, k, "money", 100, 950, 50, _money, (
        ("I moved {v} into my savings account today. Is a high-yield savings account worth switching to?",
         "Usually yes: the rate difference adds up, and moving money online takes only a few minutes."),
        ("Just transferred {v} to savings from my bonus. Should I keep it there or invest some?",
         "Keep your emergency fund in savings; money you won't need for five years or more can be invested."),
        ("I put {v} into savings this month by cooking at home more. Any other easy ways to save?",
         "Cancel subscriptions you don't use, and set up an automatic transfer on payday.")),
        "How much money have I moved into savings in total?", _money)


def _ms_spend(d, k):
    items = [d.one(PRODUCTS) for _ in range(k)]
    prices = [_price(d, it) for it in items]
    stmts = [_price_stmt(d, it, p) for it, p in zip(items, prices)]
    return _Fact("multi-session", stmts, f"How much did I spend in total on my {_join(items)}?", _money(sum(prices)))


_MS_MAKERS = {"countries": _ms_countries, "spend": _ms_spend, "books": _ms_books, "miles": _ms_miles,
              "concerts": _ms_concerts, "volunteer": _ms_volunteer, "museums": _ms_museums,
              "cooking": _ms_cooking, "savings": _ms_savings}


# --- abstention: a planted near-miss, and a question about something never said
def _abs(d: _Draw, qtype: str) -> _Fact | None:
    if qtype == "single-session-user":
        if d.rng.random() < 0.5:
            r1, r2 = d.key("rel", RELATIONS), d.key("rel", RELATIONS)
            if r1 is None or r2 is None:
                return None
            name = d.one(_names_for(r1))
            return _Fact(qtype, [_relation_stmt(d, r1, name)], f"What is my {r2}'s name?",
                         f"{_NOT_ENOUGH} You mentioned your {r1} {name}, but not your {r2}.", abstention=True)
        p1, p2 = d.one(PRODUCTS), d.one(PRODUCTS)
        stmt = _price_stmt(d, p1, _price(d, p1))
        return _Fact(qtype, [_Stmt(stmt.theme, stmt.user, stmt.assistant, (p1,))], f"How much did I pay for my {p2}?",
                     f"{_NOT_ENOUGH} You mentioned buying {_a(p1)} {p1}, but not {_a(p2)} {p2}.", abstention=True)
    if qtype == "temporal-reasoning":
        free = [e for e in EVENTS if e[3] not in d.used]
        if len(free) < 2:
            return None
        a, b = d.rng.sample(free, 2)
        d.used.update((a[3], b[3]))
        stmt = _event_stmt(d, a)
        stmt.contains = (a[3],)
        return _Fact(qtype, [stmt], f"How many days passed between {a[2]} and {b[2]}?",
                     f"{_NOT_ENOUGH} You mentioned {_your(a[2])}, but not {_your(b[2])}.", abstention=True)
    if qtype == "multi-session":
        p1, p2 = d.one(PRODUCTS), d.one(PRODUCTS)
        stmt = _price_stmt(d, p1, _price(d, p1))
        stmt.contains = (p1,)
        return _Fact(qtype, [stmt], f"How much did I spend in total on my {p1} and my {p2}?",
                     f"{_NOT_ENOUGH} You mentioned the {p1}, but not {_a(p2)} {p2}.", abstention=True)
    # knowledge-update: ask an attribute of the new value that was never stated
    for kind, question, missing in (("car", "What color is my {v}?", "its color"),
                                    ("city", "Which neighborhood of {v} do I live in now?", "which neighborhood"),
                                    ("phone", "How much storage does my {v} have?", "its storage size")):
        if f"ku:{kind}" in d.claimed:
            continue
        d.claimed.add(f"ku:{kind}")
        fact = _KU_MAKERS[kind](d)
        v = fact.answer
        fact.question, fact.answer, fact.abstention = (
            question.format(v=v), f"{_NOT_ENOUGH} You mentioned your {v}, but not {missing}.", True)
        if kind == "city":
            fact.answer = f"{_NOT_ENOUGH} You mentioned moving to {v}, but not {missing}."
        return fact
    return None


_FAMILIES: dict[str, tuple[Callable[[_Draw], _Fact | None], ...]] = {
    "single-session-user": (_ssu_relation, _ssu_pet, _ssu_price, _ssu_commute, _ssu_degree, _ssu_instrument,
                            _ssu_birthday, _ssu_store, _ssu_hometown, _ssu_allergy, _ssu_parking, _ssu_restaurant),
    "single-session-assistant": (_ssa_book, _ssa_name, _ssa_recipe, _ssa_itinerary, _ssa_plan, _ssa_gift,
                                 _ssa_total, _ssa_water, _ssa_packing),
    "single-session-preference": _SSP_FAMILIES,
}
# Type order of the question slots (cycled); every 12th slot is an abstention.
_TYPE_CYCLE = ("single-session-user", "single-session-assistant", "single-session-preference", "multi-session",
               "temporal-reasoning", "knowledge-update")
_ABS_TYPES = ("single-session-user", "multi-session", "temporal-reasoning", "knowledge-update")


def _make_fact(d: _Draw, qtype: str, n_sessions: int) -> _Fact | None:
    try:
        if qtype == "multi-session":
            return _ms(d, d.rng.randint(2, min(4, max(2, n_sessions // 2))))
        if qtype == "temporal-reasoning":
            variant = d.pick(("between", "first", "ago", "when") if n_sessions >= 2 else ("ago", "when"))
            return _tr(d, variant)
        if qtype == "knowledge-update":
            return _ku(d)
    except _Exhausted:
        return None
    families = list(_FAMILIES[qtype])
    d.rng.shuffle(families)
    for make in families:
        try:
            fact = make(d)
        except _Exhausted:
            continue
        if fact is not None:
            return fact
    return None


def _plan(d: _Draw, n_questions: int, n_sessions: int) -> list[_Fact]:
    """One fact per question slot; a slot whose type has run out of distinct facts takes the next type."""
    facts = []
    for i in range(n_questions):
        if i % 12 == 11:
            try:
                fact = _abs(d, d.pick(_ABS_TYPES))
            except _Exhausted:
                fact = None
            if fact is not None:
                facts.append(fact)
                continue
        for shift in range(len(_TYPE_CYCLE)):
            fact = _make_fact(d, _TYPE_CYCLE[(i + shift) % len(_TYPE_CYCLE)], n_sessions)
            if fact is not None:
                break
        else:
            raise ConfigError(f"questions_per_history={n_questions} is too many: ran out of distinct facts after "
                              f"{len(facts)} questions (a history holds about 200; past about 60 the type mix "
                              "is uneven)")
        facts.append(fact)
    return facts


# ---------------------------------------------------------------------------- histories
def _session_sizes(rng: random.Random, n_pairs: int) -> list[int]:
    """Pairs per session: 3-8 each (6-16 messages), summing to n_pairs exactly."""
    sizes, rem = [], n_pairs
    while rem > 0:
        p = rng.randint(3, 8)
        if rem - p < 3:
            p = rem if rem <= 8 else rem - 3
        sizes.append(p)
        rem -= p
    return sizes


def _session_times(rng: random.Random, n_sessions: int) -> tuple[list[datetime], datetime]:
    """Increasing session datetimes over at most ~2 years, and a question time a day or more after the last."""
    t = datetime(2022, 1, 3, 8, 0) + timedelta(days=rng.randint(0, 540), minutes=rng.randint(0, 600))
    mean = min(int(2.5 * 1440), 730 * 1440 // max(n_sessions, 1))  # minutes between sessions
    times = []
    for _ in range(n_sessions):
        times.append(t)
        # Gaps of a day or more while the span allows it, so temporal facts land on distinct days.
        gap = rng.randint(1440, 2 * mean - 1440) if mean >= 1.5 * 1440 else rng.randint(max(20, mean // 3),
                                                                                       mean * 5 // 3)
        t += timedelta(minutes=gap)
    return times, times[-1] + timedelta(minutes=rng.randint(1440, 4 * 1440))


def _place(rng: random.Random, facts: list[_Fact], sizes: list[int], times: list[datetime],
           n_messages: int) -> list[list[int]]:
    """Session index of each statement of each fact: distinct, chronological sessions, one pair per statement."""
    free = list(sizes)
    where: list[list[int] | None] = [None] * len(facts)
    # Multi-statement facts first, so single statements fill whatever room is left.
    for f in sorted(range(len(facts)), key=lambda f: -len(facts[f].stmts)):
        fact, k = facts[f], len(facts[f].stmts)
        cands = [s for s in range(len(sizes)) if free[s] > 0]
        chosen = None
        for _ in range(32):
            if len(cands) < k:
                break
            pick = sorted(rng.sample(cands, k))
            if not fact.distinct_days or all(times[a].date() < times[b].date() for a, b in zip(pick, pick[1:])):
                chosen = pick
                break
        if chosen is None and fact.distinct_days:
            per_day = list({times[s].date(): s for s in reversed(cands)}.values())[::-1]  # first session of each day
            if len(per_day) >= k:
                chosen = sorted(rng.sample(per_day, k))
        if chosen is None:
            need = sum(len(x.stmts) for x in facts)
            raise ConfigError(f"n_messages={n_messages} is too small for {len(facts)} questions per history "
                              f"({need} planted statements; n_messages >= {max(60, 6 * need)} always fits them)")
        for s in chosen:
            free[s] -= 1
        where[f] = chosen
    return where  # type: ignore[return-value]


class _Fill(dict):
    """format_map slots: each missing {slot} (or {slot2}) gets a random filler, fixed for the exchange."""

    def __init__(self, rng: random.Random):
        super().__init__()
        self.rng = rng

    def __missing__(self, key: str) -> str:
        base = key.rstrip("0123456789")
        if base == "event":
            value = self.rng.choice(EVENT_CHATTER)
        elif base.startswith("a_"):  # "{a_job}" -> "an accountant", and {job} is then the same job
            noun = self[base[2:]]
            value = f"{_a(noun)} {noun}"
        elif base == "price":  # in range for the {product} already chosen
            lo, hi = PRICES.get(self.get("product", ""), (40, 900))
            value = f"{self.rng.randrange(lo, hi + 1, 5):,}"
        else:
            pool = _SLOTS[base]
            value = self.rng.choice(pool)
            if base != key and value == self.get(base):  # {city2} differs from {city}
                value = pool[(pool.index(value) + 1) % len(pool)]
        self[key] = value
        return value


def _history(rng: random.Random, n_messages: int, n_questions: int, prefix: str):
    """(shared sessions, session ids, dates, question date, facts, evidence (session, turn) per fact)."""
    sizes = _session_sizes(rng, n_messages // 2)
    times, asked = _session_times(rng, len(sizes))
    facts = _plan(_Draw(rng), n_questions, len(sizes))
    where = _place(rng, facts, sizes, times, n_messages)
    # Statements per session, then pair slots within each session.
    by_session: dict[int, list[tuple[int, int]]] = {}
    for f, sessions in enumerate(where):
        for j, s in enumerate(sessions):
            by_session.setdefault(s, []).append((f, j))
    evidence: list[list[tuple[int, int, tuple[str, ...]]]] = [[] for _ in facts]
    out = []
    for s, n_pairs in enumerate(sizes):
        planted = by_session.get(s, [])
        slots = dict(zip(rng.sample(range(n_pairs), len(planted)), planted))
        first = min(slots) if slots else None
        theme = facts[slots[first][0]].stmts[slots[first][1]].theme if slots else rng.choice(THEME_NAMES)
        exchanges = THEMES[theme]
        order = rng.sample(range(len(exchanges)), min(len(exchanges), n_pairs))
        date = _day_phrase(times[s])
        turns = []
        for p in range(n_pairs):
            if p in slots:
                f, j = slots[p]
                st = facts[f].stmts[j]
                user = st.user.replace("{date}", date)
                if st.theme != theme and p != first:
                    for intro in _EVENT_INTROS[1:]:
                        user = user.removeprefix(intro)
                    user = rng.choice(_BRIDGES) + user
                assistant = rng.choice(_OPENERS) + st.assistant.replace("{date}", date)
                evidence[f].append((s, 2 * p + st.side, tuple(c.replace("{date}", _md(times[s]))
                                                              for c in st.contains)))
            elif p == n_pairs - 1 and p >= 3 and rng.random() < 0.4:
                user, assistant = rng.choice(_CLOSERS)
            else:
                fill = _Fill(rng)
                u, a = exchanges[order[p % len(order)]]
                user = u.format_map(fill)
                assistant = rng.choice(_OPENERS) + a.format_map(fill) + rng.choice(_FOLLOWUPS)
            turns.append({"role": "user", "content": user, "has_answer": False})
            turns.append({"role": "assistant", "content": assistant, "has_answer": False})
        out.append(turns)
    sids = [f"{prefix}-s{s}" for s in range(len(sizes))]
    return out, sids, [_stamp(t) for t in times], asked, facts, evidence, times


def _generate(n_messages: int, seed: int, n_histories: int, questions_per_history: int):
    for name, value, lo in (("n_messages", n_messages, 6), ("n_histories", n_histories, 1),
                            ("questions_per_history", questions_per_history, 1)):
        if not isinstance(value, int) or isinstance(value, bool) or value < lo:
            raise ConfigError(f"{name} must be an integer >= {lo}, got {value!r}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ConfigError(f"seed must be an integer, got {seed!r}")
    records, facts_out = [], {}
    for h in range(n_histories):
        # A string seed is hashed with SHA-512 by `random`: stable across runs and PYTHONHASHSEED,
        # and history h is the same whatever n_histories is.
        rng = random.Random(f"lazymem-synthetic:{seed}:{h}")
        prefix = f"syn{seed}-h{h}"
        sessions, sids, dates, asked, facts, evidence, times = _history(rng, n_messages, questions_per_history,
                                                                          prefix)
        for i, (fact, ev) in enumerate(zip(facts, evidence)):
            qid = f"{prefix}-q{i}" + ("_abs" if fact.abstention else "")
            question, answer = fact.question, fact.answer
            if fact.resolve is not None:
                question, answer = fact.resolve([times[s] for s, _, _ in ev], asked)
            hay = list(sessions)
            for s in sorted({s for s, _, _ in ev}):
                hay[s] = list(sessions[s])
            for s, t, _ in ev:
                hay[s][t] = {**hay[s][t], "has_answer": True}
            records.append({
                "question_id": qid, "question_type": fact.qtype, "question": question, "answer": answer,
                "question_date": _stamp(asked), "haystack_session_ids": sids, "haystack_dates": dates,
                "haystack_sessions": hay, "answer_session_ids": [sids[s] for s in sorted({s for s, _, _ in ev})],
            })
            facts_out[qid] = [Evidence(sids[s], t, c) for s, t, c in ev]
    return records, facts_out


def generate_records(n_messages: int = 400, seed: int = 0, n_histories: int = 1,
                     questions_per_history: int = 12) -> list[dict]:
    """LongMemEval-schema records, one per question, over n_histories synthetic histories.

    Each history has exactly ``n_messages`` messages (one fewer when odd: sessions are whole
    user/assistant pairs). Question ids are ``syn{seed}-h{h}-q{i}`` (``_abs`` appended for
    abstention). Deterministic in the arguments. See the module docstring for sharing and
    evidence. Raises ConfigError when n_messages is too small for the questions (roughly
    6 messages per planted statement) or questions_per_history exceeds what one history holds
    (~200; past ~60 the six types are no longer balanced, as types run out of distinct facts).

    >>> r = generate_records(n_messages=100, seed=0, questions_per_history=6)[0]
    >>> r["question_id"], r["haystack_dates"][0] < r["haystack_dates"][-1] < r["question_date"]
    ('syn0-h0-q0', True)
    """
    return _generate(n_messages, seed, n_histories, questions_per_history)[0]


def generate_with_facts(n_messages: int = 400, seed: int = 0, n_histories: int = 1,
                        questions_per_history: int = 12) -> tuple[list[dict], dict[str, list[Evidence]]]:
    """generate_records plus, per question id, its evidence turns and the strings each contains.

    For abstention questions the evidence is the near-miss statement (its strings are the
    near-miss values, e.g. the sister's name when the question asks for a brother's).
    """
    return _generate(n_messages, seed, n_histories, questions_per_history)


# ---------------------------------------------------------------------------- bytes, hashing, specs
def canonical_json_chunks(records: list[dict]) -> Iterator[bytes]:
    """The UTF-8 bytes of ``json.dumps(records, ensure_ascii=False, sort_keys=True, separators=(",", ":"))``, in pieces.

    Shared list objects (sessions, ids, dates) are encoded once: a 100k-message history
    repeated over 12 records costs one encoding, not twelve.

    >>> recs = [{"b": [[1], [2]], "a": "é"}]
    >>> b"".join(canonical_json_chunks(recs)).decode() == json.dumps(recs, ensure_ascii=False, sort_keys=True,
    ...                                                             separators=(",", ":"))
    True
    """
    def enc(obj) -> bytes:
        return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")

    memo: dict[int, bytes] = {}  # id() is stable: every object stays alive in `records` meanwhile

    def cached(obj) -> bytes:
        data = memo.get(id(obj))
        if data is None:
            data = memo[id(obj)] = enc(obj)
        return data

    yield b"["
    for i, rec in enumerate(records):
        yield b",{" if i else b"{"
        for j, key in enumerate(sorted(rec)):
            value = rec[key]
            yield (b"," if j else b"") + enc(key) + b":"
            if key == "haystack_sessions" and isinstance(value, list):
                yield b"["
                for k, session in enumerate(value):
                    if k:
                        yield b","
                    yield cached(session)
                yield b"]"
            elif isinstance(value, list):
                yield cached(value)
            else:
                yield enc(value)
        yield b"}"
    yield b"]"


def records_sha256(records: list[dict]) -> str:
    """sha256 of the canonical JSON bytes of the records (what write_synthetic writes)."""
    h = hashlib.sha256()
    for chunk in canonical_json_chunks(records):
        h.update(chunk)
    return h.hexdigest()


def spec_string(n_messages: int = 400, seed: int = 0, n_histories: int = 1, questions_per_history: int = 12) -> str:
    """The canonical spec of a generator call (Dataset.name and .source).

    >>> spec_string(1000, 3)
    'synthetic:messages=1000,seed=3,histories=1,questions=12'
    """
    return f"synthetic:messages={n_messages},seed={seed},histories={n_histories},questions={questions_per_history}"


def synthetic_dataset(n_messages: int = 400, seed: int = 0, n_histories: int = 1, questions_per_history: int = 12):
    """The generated records loaded as a Dataset; sha256 = records_sha256 (= write_synthetic's file hash)."""
    from lazymem.data.longmemeval import parse_records

    records = generate_records(n_messages, seed, n_histories, questions_per_history)
    spec = spec_string(n_messages, seed, n_histories, questions_per_history)
    return parse_records(records, file=spec, name=spec, sha256=records_sha256(records))


def write_synthetic(path, n_messages: int = 400, seed: int = 0, n_histories: int = 1,
                    questions_per_history: int = 12) -> str:
    """Write the records as canonical JSON (sorted keys, UTF-8, compact) and return the file's sha256.

    Byte-identical for the same arguments; the file loads with ``load_longmemeval``.
    """
    records = generate_records(n_messages, seed, n_histories, questions_per_history)
    h = hashlib.sha256()
    with open(path, "wb") as f:
        for chunk in canonical_json_chunks(records):
            h.update(chunk)
            f.write(chunk)
    return h.hexdigest()


_SPEC_KEYS = {"messages": "n_messages", "seed": "seed", "histories": "n_histories",
              "questions": "questions_per_history"}
_SUFFIX = {"": 1, "k": 1_000, "m": 1_000_000}


def _number(key: str, text: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmM]?)", text.strip().replace("_", ""))
    if m is None:
        raise ConfigError(f"synthetic spec: {key}={text!r} is not a whole number (examples: 400, 1k, 100k, 1.5k)")
    value = float(m.group(1)) * _SUFFIX[m.group(2).lower()] if "." in m.group(1) else \
        int(m.group(1)) * _SUFFIX[m.group(2).lower()]
    if value != int(value):
        raise ConfigError(f"synthetic spec: {key}={text!r} is not a whole number")
    return int(value)


def parse_spec(spec: str) -> dict:
    """Parse "synthetic[:messages=N,seed=S,histories=H,questions=Q]" into generate_records kwargs.

    Every key is optional (defaults: messages=400, seed=0, histories=1, questions=12);
    numbers accept k/m suffixes. A bad key or value raises ConfigError (a ValueError) naming it.

    >>> parse_spec("synthetic:messages=100k,seed=3")
    {'n_messages': 100000, 'seed': 3, 'n_histories': 1, 'questions_per_history': 12}
    >>> parse_spec("synthetic:size=3")
    Traceback (most recent call last):
    ...
    lazymem.errors.ConfigError: synthetic spec: unknown key 'size' (expected messages, seed, histories, questions)
    """
    head, _, body = str(spec).strip().partition(":")
    if head.strip() != "synthetic":
        raise ConfigError(f"synthetic spec must start with 'synthetic', got {spec!r}")
    out = {"n_messages": 400, "seed": 0, "n_histories": 1, "questions_per_history": 12}
    seen = set()
    for part in body.split(","):
        if not part.strip():
            continue
        key, eq, value = part.partition("=")
        key = key.strip()
        if key not in _SPEC_KEYS:
            raise ConfigError(f"synthetic spec: unknown key {key!r} (expected {', '.join(_SPEC_KEYS)})")
        if not eq:
            raise ConfigError(f"synthetic spec: key {key!r} has no value (write {key}=...)")
        if key in seen:
            raise ConfigError(f"synthetic spec: key {key!r} given twice")
        seen.add(key)
        out[_SPEC_KEYS[key]] = _number(key, value)
    return out
