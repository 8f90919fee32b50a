"""Slot pools of the synthetic generator (data): names, places, products with prices, ...

Facts draw their values from these pools (each value at most once per history, see
``model._Draw``); distractor chat fills its ``{slot}`` placeholders from ``_SLOTS``
(see ``history._Fill``), so the same vocabulary turns up in facts and in distractors.
"""
from __future__ import annotations

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
