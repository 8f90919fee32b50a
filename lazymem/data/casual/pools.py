"""Slot pools of the casual generator (data): speakers, the people they talk about, things they do.

Planted facts draw values from these pools at most once per conversation (``facts._Draw``);
small talk and distractors draw from the same pools, so the vocabulary of a fact also turns
up where it is not the answer (another person's dog, a coworker's trip).
"""
from __future__ import annotations

# Speakers and third parties by pronoun (questions say "her dog" / "his dog" as LoCoMo's do).
SHE = ("Maya", "Priya", "Aisha", "Elena", "Sofia", "Hannah", "Chloe", "Nora", "Leila", "Grace", "Zoe", "Ines",
       "Keiko", "Amara", "Rosa", "Yara", "Clara", "Nadia", "Tess", "June", "Iris", "Ada", "Fatima", "Julia")
HE = ("Daniel", "Lucas", "Marcus", "Kenji", "Omar", "Diego", "Arjun", "Felix", "Jonah", "Mateo", "Theo", "Ravi",
      "Caleb", "Hugo", "Miles", "Jamal", "Oscar", "Wes", "Rafael", "Kofi", "Pablo", "Sam", "Ethan", "Leo")
OTHERS_SHE = ("Lena", "Anya", "Ivy", "Sara", "Mia", "Emma", "Zara", "Olga", "Beth", "Tara", "Gwen", "Dina", "Lola",
              "Maddie", "Suki")
OTHERS_HE = ("Ben", "Tom", "Malik", "Victor", "Noah", "Liam", "Finn", "Raj", "Joel", "Nico", "Hal", "Cyrus", "Reza",
             "Pete", "Arlo")
HOBBIES = ("birdwatching", "bouldering", "knitting", "gardening", "trail running", "board games", "sourdough baking",
           "film photography", "paddleboarding", "thrifting", "journaling", "chess")
FAMILY = ("sister", "brother", "cousin", "mom", "dad", "aunt", "uncle", "grandma", "niece", "nephew")
CIRCLE = ("coworker", "neighbor", "friend", "roommate", "teammate", "old college friend", "boss", "yoga buddy")
PETS = ("golden retriever", "beagle", "border collie", "corgi", "tabby cat", "rescue greyhound", "dachshund",
        "Siamese cat", "labrador puppy", "parrot", "bunny", "husky")
PET_NAMES = ("Biscuit", "Luna", "Pepper", "Mochi", "Ziggy", "Olive", "Maple", "Scout", "Waffles", "Juniper",
             "Bean", "Rocket", "Nugget", "Pickles", "Clover", "Tofu", "Hazel", "Milo", "Pretzel", "Sunny")
CLASSES = ("pottery", "salsa", "watercolor", "improv", "ceramics", "woodworking", "photography", "Spanish",
           "guitar", "cooking", "swing dance", "calligraphy", "sign language", "pastry", "kickboxing", "jewelry-making")
INSTRUMENTS = ("ukulele", "cello", "piano", "drums", "violin", "saxophone", "banjo", "harmonica")
PLACES = ("Lisbon", "Kyoto", "Denver", "Barcelona", "Vancouver", "Prague", "Austin", "Edinburgh", "Seoul",
          "Montreal", "Nashville", "Copenhagen", "Oaxaca", "Marrakesh", "Reykjavik", "Hanoi", "Cape Town",
          "Melbourne", "Santa Fe", "Porto")
OUTINGS = ("a farmers market", "an art museum", "a jazz bar", "a street food festival", "a botanical garden",
           "an escape room", "a comedy show", "a pottery fair", "a book fair", "a drive-in movie")
# (past tense, base form) of one-off events; {poss} is my / her / his.
EVENTS = (("ran {poss} first 10K", "run {poss} first 10K"), ("went to a Coldplay concert", "go to a Coldplay concert"),
          ("gave a talk at a local meetup", "give a talk at a local meetup"), ("went to a wedding in the mountains",
          "go to a wedding in the mountains"), ("hiked to the top of Mount Tam", "hike to the top of Mount Tam"),
          ("finished a 1,000-piece puzzle", "finish a 1,000-piece puzzle"),
          ("volunteered at the food bank", "volunteer at the food bank"),
          ("played {poss} first open mic", "play {poss} first open mic"),
          ("went to a charity gala", "go to a charity gala"),
          ("went to a sunrise yoga session", "go to a sunrise yoga session"),
          ("baked bread from scratch for the first time", "bake bread from scratch for the first time"),
          ("took {poss} niece to the aquarium", "take {poss} niece to the aquarium"),
          ("painted {poss} living room", "paint {poss} living room"),
          ("went kayaking on the river", "go kayaking on the river"),
          ("went to a poetry reading", "go to a poetry reading"),
          ("ran a bake sale at the library", "run a bake sale at the library"),
          ("went to a pottery workshop", "go to a pottery workshop"),
          ("saw a meteor shower", "see a meteor shower"))
JOBS = ("nursing", "graphic design", "teaching", "marketing", "accounting", "physical therapy", "journalism",
        "software", "landscape design", "social work", "event planning", "architecture")
WORKPLACES = ("a children's hospital", "a small design studio", "the public library", "a startup downtown",
              "a community college", "a bakery on Main Street", "a vet clinic", "a bookstore cafe",
              "a recording studio", "a nonprofit for refugees")
BOOKS = ("The Night Circus", "Educated", "Circe", "Project Hail Mary", "Pachinko", "The Midnight Library",
         "Where the Crawdads Sing", "A Gentleman in Moscow", "Becoming", "The Alchemist", "Klara and the Sun",
         "Little Fires Everywhere")
SHOWS = ("a baking competition show", "a true-crime podcast", "a Korean drama", "a nature documentary series",
         "an old sitcom", "a cooking show", "a space documentary", "a murder mystery series")
FOODS = ("homemade ramen", "banana bread", "a lemon tart", "veggie lasagna", "chicken curry", "sourdough",
         "dumplings", "paella", "tacos al pastor", "shakshuka", "pad thai", "apple pie")
PHOTOS = ("a golden retriever running on a beach", "a sunset over a lake", "a plate of homemade dumplings",
          "a hand-painted mug on a shelf", "a mountain trail covered in wildflowers", "a cozy reading nook",
          "a crowded street market at night", "a birthday cake with candles", "a little garden of tomato plants",
          "a cat curled up on a windowsill", "a bookshelf full of paperbacks", "a bowl of ramen with a soft egg",
          "a misty forest path", "a kid holding a giant pumpkin", "a city skyline from a rooftop",
          "a painted canvas of a sunflower field", "a pair of muddy hiking boots", "a row of colorful houses")
WEATHER = ("rainy", "freezing", "super hot", "gorgeous", "gloomy", "windy", "snowy", "sticky and humid")
FEELINGS = ("so proud", "a little nervous", "really happy", "exhausted but happy", "pumped", "kind of emotional",
            "so relieved", "super excited")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
