"""Distractor chat of the synthetic generator (data): exchanges per theme, openers, closers, bridges.

``THEMES`` maps a theme (travel, pets, food, ...) to (user, assistant) exchanges with
``{slot}`` placeholders (filled from ``pools._SLOTS`` by ``history._Fill``); none of them
states a fact about the user, so no distractor contradicts a planted fact.
"""

from __future__ import annotations

# (user, assistant) exchanges per theme, with {slot} fillers; none states a fact about the user.
THEMES: dict[str, tuple[tuple[str, str], ...]] = {
    "travel": (
        (
            "My friend {name} is heading to {city} next month. What are a few things worth seeing there?",
            "{city} has a lot going on. A walking tour of the old town, an afternoon at a local market and one nice "
            "dinner away from the main tourist streets would make a great first visit.",
        ),
        (
            "What's the best way to deal with jet lag after a long flight?",
            "Shift your sleep schedule a day or two before you leave, get sunlight in the morning once you land, and "
            "avoid long naps on the first afternoon.",
        ),
        (
            "Is it worth getting travel insurance for a short trip to {country}?",
            "It depends on what you already have. Check whether your credit card covers cancellations and medical "
            "costs abroad; if not, a basic policy is usually inexpensive.",
        ),
        (
            "How far in advance should I book flights to {city} to get a decent fare?",
            "For most routes, six to ten weeks ahead tends to hit the sweet spot. Setting a fare alert is the easiest "
            "way to catch a price drop.",
        ),
        (
            "My {relation} keeps saying {country} is the most underrated place they've ever been. When is the best "
            "season to go?",
            "Shoulder season, spring or early autumn, is usually the best balance of good weather, lower prices and "
            "smaller crowds.",
        ),
        (
            "What should I pack for a {n}-day trip if I only want to bring a carry-on?",
            "Stick to a small color palette so everything mixes and matches, roll your clothes, and plan on one quick "
            "load of laundry halfway through. Packing cubes help a lot.",
        ),
        (
            "Does a rail pass make sense for getting around {country}?",
            "If you're covering long distances on several days, a pass can pay off. For one or two trips, "
            "point-to-point tickets booked early are usually cheaper.",
        ),
        (
            "{name} is trying to choose between {city} and {city2} for a long weekend. Which one would you pick?",
            "Both are great. {city} is better for food and nightlife, while {city2} is more relaxed and walkable. "
            "It really comes down to the kind of weekend {name} wants.",
        ),
        (
            "Any tips for finding a good place to eat when I'm somewhere new?",
            "Walk a couple of blocks away from the main sights, look for places full of locals at lunchtime, and read "
            "recent reviews rather than the overall rating.",
        ),
        (
            "How do I avoid roaming charges on my phone abroad?",
            "The simplest option is a local or travel eSIM. Otherwise turn off data roaming, rely on Wi-Fi, and "
            "download offline maps before you go.",
        ),
    ),
    "pets": (
        (
            "My neighbor's {dog_breed} barks every time someone walks past. Is there a polite way to bring it up?",
            "Keep it friendly and specific: mention the times it happens and ask if they've noticed. Most people "
            "genuinely don't realize how much their dog barks while they're out.",
        ),
        (
            "What's a healthy amount of exercise for a {dog_breed}?",
            "Most dogs like that do well with at least an hour of activity a day, split between walks and play. "
            "Puzzle toys help burn off mental energy too.",
        ),
        (
            "My {relation} just adopted a {pet_kind} named {petname}. What's a good welcome gift?",
            "A sturdy toy, a comfortable bed or a gift card to a local pet store are all safe bets. Treats are always "
            "appreciated too.",
        ),
        (
            "How often should cats go to the vet for checkups?",
            "Healthy adult cats usually need a checkup once a year, and seniors over about ten benefit from "
            "twice-yearly visits.",
        ),
        (
            "Is it true that some pets are happier when they're adopted in pairs?",
            "For some social species, yes. Others are happier on their own, so ask the shelter about the individual "
            "animal's personality.",
        ),
        (
            "{name} is pet-sitting a parrot this weekend and is nervous about it. Any advice I can pass along?",
            "Keep the routine the same as at home, talk to the bird calmly, and don't let it out of the cage "
            "unsupervised. Fresh water and food every day matter most.",
        ),
        (
            "What human foods are dangerous for dogs?",
            "Chocolate, grapes and raisins, onions, garlic, xylitol and macadamia nuts are the big ones. When in "
            "doubt, skip it and call the vet.",
        ),
        (
            "Do pet insurance plans actually pay off?",
            "They can, especially accident and illness coverage for younger animals. Compare the deductible, the "
            "reimbursement rate and what counts as a pre-existing condition.",
        ),
        (
            "Our building is debating whether to allow large dogs like a {dog_breed}. What should the rules focus on?",
            "Rules work best when they focus on behavior rather than breed: leashes in common areas, cleanup and "
            "noise. Asking for proof of vaccinations is common too.",
        ),
        (
            "My cousin can't decide between {petname} and {petname2} as a name for a new {pet_kind}. Thoughts?",
            "Both are cute! {petname} is short and easy to call out at the park, which is a real advantage.",
        ),
    ),
    "food": (
        (
            "What's a good {cuisine} dish to bring to a potluck?",
            "Something that travels well and tastes good at room temperature is ideal. A big salad or a rice dish "
            "usually goes over better than anything that needs to stay hot.",
        ),
        (
            "How long does homemade {dish} keep in the fridge?",
            "Most cooked dishes like {dish} keep for three to four days in an airtight container. Freeze portions if "
            "you won't get to them by then.",
        ),
        (
            "{name} is hosting a dinner and asked me to bring dessert. Any easy ideas?",
            "A fruit crumble, chocolate bark or lemon bars are all easy and crowd-pleasing, and you can make them "
            "the day before.",
        ),
        (
            "Can I substitute Greek yogurt for sour cream in most recipes?",
            "Yes, usually one-to-one. It's a little tangier and can split if it boils, so stir it in at the end for "
            "hot dishes.",
        ),
        (
            "What's the trick to getting crispy roasted vegetables?",
            "High heat, around 220°C, a light coating of oil, and not crowding the pan. Give them space so they roast "
            "instead of steam.",
        ),
        (
            "My coworker meal-preps {dish} every Sunday. How do people keep meal prep from getting boring?",
            "Prep components instead of full meals: a grain, a protein, two vegetables and a couple of sauces. "
            "Mixing them differently keeps the week interesting.",
        ),
        (
            "What's the difference between baking soda and baking powder?",
            "Baking soda needs an acid in the recipe to react, while baking powder already contains one. That's why "
            "they aren't always interchangeable.",
        ),
        (
            "Is there a {cuisine} dish that's easy to make at home for a beginner?",
            "Start with something forgiving, like a curry, a noodle stir-fry or a stew. They're hard to mess up and "
            "easy to adjust to taste.",
        ),
        (
            "How do I keep fresh herbs from wilting so fast?",
            "Treat soft herbs like flowers: trim the stems and stand them in a glass of water in the fridge. Wrap "
            "hardy herbs in a damp paper towel.",
        ),
        (
            "What wine goes well with {dish}?",
            "A medium-bodied red or a crisp white both work, depending on the sauce. A dry rosé is a safe middle "
            "ground.",
        ),
    ),
    "fitness": (
        (
            "How do I know if I'm overtraining?",
            "Common signs are lingering soreness, poor sleep, a higher resting heart rate and workouts that feel "
            "harder than usual. A lighter week usually helps.",
        ),
        (
            "My {relation} wants to start {sport}. What's a sensible first month?",
            "Two or three short sessions a week, a focus on form and consistency, and more volume only once it feels "
            "easy.",
        ),
        (
            "Is it better to stretch before or after a workout?",
            "Dynamic movements before, like leg swings and lunges, and static stretching after, when your muscles "
            "are warm.",
        ),
        (
            "What's a good thing to eat after a morning {sport} session?",
            "Some protein and carbohydrates within an hour or two: eggs on toast, yogurt with fruit, or a smoothie.",
        ),
        (
            "{name} from work signed up for a half marathon without any training. How long does it usually take to "
            "prepare?",
            "For someone who already runs a bit, about twelve weeks is typical. Starting from scratch, four or five "
            "months is safer.",
        ),
        (
            "How many rest days a week do beginners need?",
            "Two or three rest days are a good starting point. Light walking or stretching on those days is fine.",
        ),
        (
            "What are good exercises for lower back pain?",
            "Gentle ones like bird dogs, glute bridges and cat-cow stretches are commonly recommended, but see a "
            "physiotherapist if the pain persists.",
        ),
        (
            "Is {sport} or {sport2} better for building endurance?",
            "Both build endurance. The best one is the one you'll actually stick with, so pick the one you look "
            "forward to.",
        ),
        (
            "How do people stay motivated to work out in winter?",
            "Plan indoor alternatives, lay out your gear the night before, and schedule workouts like meetings. A "
            "workout buddy helps a lot.",
        ),
        (
            "What does a good warm-up for {sport} look like?",
            "Five to ten minutes of easy movement to raise your heart rate, then a few drills that mimic the activity "
            "at a lower intensity.",
        ),
    ),
    "work": (
        (
            "How do I politely decline a meeting that doesn't really need me?",
            "Reply briefly, say you don't think you're needed for this one, and offer to review the notes or answer "
            "questions asynchronously.",
        ),
        (
            "My coworker {name} just became {a_job}. What's a nice way to congratulate them?",
            "A short personal note goes a long way. Mention something specific they did well and wish them luck in "
            "the new role.",
        ),
        (
            "What's a good structure for a weekly one-on-one?",
            "Start with how the person is doing, then blockers, then priorities for next week, and leave a few "
            "minutes for career topics.",
        ),
        (
            "How should I prepare for a performance review?",
            "Write down your main accomplishments with concrete results, note a couple of areas you want to grow in, "
            "and bring questions about expectations.",
        ),
        (
            "Any tips for writing clearer emails?",
            "Put the ask in the first two lines, keep paragraphs short, and end with a clear next step and a date.",
        ),
        (
            "{name} is interviewing for {a_job} role at {company}. What questions should they ask the interviewer?",
            "Good ones are: what does success look like in six months, how does the team handle disagreements, and "
            "what's the biggest challenge right now.",
        ),
        (
            "How do I stop checking work messages in the evening?",
            "Turn off notifications after a set time, move the apps off your home screen, and tell your team when "
            "you're offline so it feels less awkward.",
        ),
        (
            "Is it normal to feel nervous presenting to senior leadership?",
            "Completely normal. Rehearse the first minute out loud, prepare for the two hardest questions, and keep "
            "the slides simple.",
        ),
        (
            "What's a reasonable way to ask for a raise?",
            "Pick a good moment, bring market data and specific accomplishments, and name a number. Then listen and "
            "agree on next steps.",
        ),
        (
            "Are standing desks worth it for long workdays?",
            "They help if you alternate between sitting and standing. Standing all day isn't better than sitting all "
            "day; movement is what matters.",
        ),
    ),
    "tech": (
        (
            "Should I buy {a_product} now or wait for a sale?",
            "If nothing is broken, waiting for a seasonal sale usually saves money. If you need it now, buy it and "
            "don't overthink it.",
        ),
        (
            "How do I back up the photos on my phone?",
            "Turn on your phone's cloud backup, and once in a while also copy everything to an external drive. Two "
            "copies in different places is the goal.",
        ),
        (
            "My {relation}'s laptop is painfully slow. What should they try first?",
            "Check how much storage is free, remove apps that launch at startup, and install system updates. If it "
            "still has a hard drive, an SSD upgrade is a big boost.",
        ),
        (
            "What's a password manager, and do I need one?",
            "It stores a strong, unique password for every site behind one master password. For most people it's "
            "the single biggest security improvement.",
        ),
        (
            "Is it safe to use public Wi-Fi at airports?",
            "Mostly, for sites that use HTTPS. Avoid logging into banking on open networks, or use a VPN or your "
            "phone's hotspot.",
        ),
        (
            "{name} keeps recommending the {phone}. Is it good for photos?",
            "It has a solid camera for its price, especially in daylight. Low-light shots are where pricier models "
            "pull ahead.",
        ),
        (
            "How can I make my home Wi-Fi faster?",
            "Put the router somewhere central and elevated, away from thick walls, and restart it now and then. A "
            "mesh system helps in bigger homes.",
        ),
        (
            "What's the easiest way to cut down on screen time?",
            "Set limits for the worst apps, keep your phone out of the bedroom, and switch the screen to grayscale in "
            "the evening.",
        ),
        (
            "Do I need antivirus software on a Mac?",
            "The built-in protections cover most people. Keeping the system updated and being careful with downloads "
            "matters more than extra software.",
        ),
        (
            "What should I look for in noise-cancelling headphones?",
            "Comfort for long sessions, battery life, how well they handle low rumble, and whether the microphone is "
            "good enough for calls.",
        ),
    ),
    "home": (
        (
            "How often should I water a {plant}?",
            "Water when the top few centimeters of soil are dry. Indoors that's roughly once a week for many plants, "
            "less in winter.",
        ),
        (
            "What's the best way to get rid of fruit flies in the kitchen?",
            "Set out a small dish of apple cider vinegar with a drop of dish soap, and take out the trash and compost "
            "more often for a few days.",
        ),
        (
            "My {relation} is repainting their hallway. Satin or eggshell?",
            "Satin is easier to wipe clean, which suits a hallway. Eggshell hides wall imperfections better.",
        ),
        (
            "How do I unclog a bathroom sink without harsh chemicals?",
            "Pull out the stopper and clean it, then try a plunger or a plastic drain snake. Baking soda and hot water "
            "can help with minor buildup.",
        ),
        (
            "Any ideas for making a small apartment feel bigger?",
            "Use mirrors, keep the floor as clear as possible, choose furniture with legs, and stick to a light, "
            "consistent color palette.",
        ),
        (
            "{name} is moving to {city} and asked me how to pack fragile dishes. What should I tell them?",
            "Wrap each plate individually, stand them on edge like records, and fill the gaps with towels so nothing "
            "shifts.",
        ),
        (
            "What houseplants are hard to kill for someone who travels a lot?",
            "Snake plants, ZZ plants and pothos tolerate neglect well. Cacti are good too if you have a sunny window.",
        ),
        (
            "How do I get a landlord to fix a leaky faucet faster?",
            "Put the request in writing with photos and the date you first noticed it, and follow up politely after "
            "a few days.",
        ),
        (
            "Is composting worth it in an apartment?",
            "It can be. A small countertop bin plus a drop-off point or city collection works well, and it cuts down "
            "on trash smells.",
        ),
        (
            "What's a weekly cleaning routine that doesn't take forever?",
            "Fifteen minutes a day on one area, plus a quick reset of the kitchen every night. It adds up without "
            "eating your weekend.",
        ),
    ),
    "books": (
        (
            "{name} recommended a {genre} series to me. How do I know if it's worth starting?",
            "Read the first chapter or two. If the voice grabs you, keep going; life's too short for books you don't "
            "enjoy.",
        ),
        (
            "What are good ways to read more when I'm busy?",
            "Keep a book with you, read for ten minutes before bed, and try audiobooks during chores or commutes.",
        ),
        (
            "How do book clubs usually pick what to read?",
            "Many rotate who chooses, or vote from a short list. Keeping books under about 400 pages helps everyone "
            "finish.",
        ),
        (
            "Is an e-reader worth it if I mostly read at night?",
            "A backlit e-reader is easier on the eyes than a phone and a lot lighter than a hardback.",
        ),
        (
            "What's the difference between a novella and a novel?",
            "Mostly length. A novella runs roughly 20,000 to 40,000 words, while novels usually run longer.",
        ),
        (
            "My {relation} wants to get into podcasts. How do people find good ones?",
            "Start from a favorite topic and follow the guests to other shows they appear on. Friends' "
            "recommendations beat any chart.",
        ),
        (
            "Should I watch a movie adaptation before or after reading the book?",
            "Reading first usually gives the richer experience, since the film tends to compress the story.",
        ),
        (
            "What's a good way to keep track of books I want to read?",
            "A simple note on your phone works, or a reading app where you can add a book with one tap and rate it "
            "when you're done.",
        ),
        (
            "Are library apps any good for borrowing ebooks?",
            "They're great. You only need a library card; popular titles have waitlists, so put holds on a few at "
            "once.",
        ),
        (
            "{name} says {genre} is overrated. What makes it appealing to so many readers?",
            "At its best it gives you a strong hook and a sense of discovery, and good writers use that to say "
            "something about people.",
        ),
    ),
    "money": (
        (
            "What's a simple way to start budgeting?",
            "Track your spending for one month without changing anything, then set limits for the three biggest "
            "categories. Automating savings on payday helps.",
        ),
        (
            "Is it better to pay off debt or build an emergency fund first?",
            "A small emergency fund first, even one month of expenses, then high-interest debt, then build the fund "
            "further.",
        ),
        (
            "My {relation} just started their first job. What money advice should I give?",
            "Take any retirement match, keep fixed costs low, and build a small emergency fund before upgrading their "
            "lifestyle.",
        ),
        (
            "How do roommates usually split bills fairly?",
            "A shared expense app, utilities split evenly, and rent split by room size if the rooms differ a lot.",
        ),
        (
            "Are extended warranties on something like {a_product} worth it?",
            "Usually not. Many credit cards already extend the manufacturer's warranty, and failure rates rarely "
            "justify the cost.",
        ),
        (
            "How much should be in an emergency fund?",
            "Three to six months of essential expenses is the usual guideline, more if your income is irregular.",
        ),
        (
            "What's the difference between a Roth and a traditional retirement account?",
            "With a Roth you pay taxes now and withdraw tax-free later; with a traditional account you get the tax "
            "break now and pay taxes on withdrawals.",
        ),
        (
            "{name} bought {a_product} for ${price} and now regrets it. Is it worth trying to return it?",
            "If it's within the return window, absolutely. Many stores accept opened items, sometimes with a "
            "restocking fee.",
        ),
        (
            "Any tips for not overspending during the holidays?",
            "Set a total budget first, then divide it by person. Drawing names for a gift exchange saves a lot.",
        ),
        (
            "Do cashback credit cards actually save money?",
            "They do if you pay the balance in full every month. Otherwise the interest wipes out the rewards quickly.",
        ),
    ),
    "social": (
        (
            "My friend {name} is turning 40. Any party ideas that aren't cheesy?",
            "A dinner with close friends at a favorite restaurant, a small backyard gathering, or an experience like "
            "a cooking class together all feel special without being over the top.",
        ),
        (
            "How do I reconnect with an old friend without it being awkward?",
            "Keep it simple: mention something that reminded you of them and suggest a low-key coffee or call.",
        ),
        (
            "What's a thoughtful gift for a {relation} who has everything?",
            "Experiences tend to land better than things: tickets to a show, a class, or a nice meal together.",
        ),
        (
            "{name} and I keep missing each other's calls. How do busy friends stay in touch?",
            "Pick a standing time, like a monthly dinner, and send short voice messages in between. Consistency beats "
            "long catch-ups.",
        ),
        (
            "How do I tell a friend I can't afford the trip they're planning?",
            "Be honest and early. Say you'd love to celebrate together and suggest a cheaper plan you can join.",
        ),
        (
            "What are some fun things to do with kids on a rainy day?",
            "Build a blanket fort, bake something simple, run a scavenger hunt around the house, or set up an indoor "
            "picnic.",
        ),
        (
            "My {relation} is visiting {city} for the first time. What should they expect?",
            "Comfortable shoes, a bit of cash for small shops, and a loose plan: the best moments in a new city are "
            "usually unplanned.",
        ),
        (
            "How do I write a good wedding toast?",
            "Keep it under three minutes: one short story about the couple, one line about why they fit together, "
            "and a warm closing.",
        ),
        (
            "What's a good icebreaker for a neighborhood potluck?",
            "Ask everyone to bring a dish with a story behind it and share it in a sentence or two.",
        ),
        (
            "How can I support a friend who's going through a breakup?",
            "Check in regularly, listen more than you advise, and invite them to low-pressure plans.",
        ),
    ),
    "health": (
        (
            "How much water should I really drink in a day?",
            "Needs vary, but around two to three liters from all sources is a common guideline, more if it's hot or "
            "you're exercising.",
        ),
        (
            "Any tips for falling asleep faster?",
            "Keep a consistent schedule, dim the lights an hour before bed, and keep screens out of the bedroom. A "
            "cool room helps.",
        ),
        (
            "My {relation} just had their wisdom teeth removed. What should they eat?",
            "Soft, cool foods: yogurt, smoothies (no straw), mashed potatoes and soup that isn't too hot.",
        ),
        (
            "Is it normal to feel tired after a flu shot?",
            "Yes, mild tiredness or a sore arm for a day or two is a common reaction.",
        ),
        (
            "How often should running shoes be replaced?",
            "Roughly every 500 to 800 kilometers, or sooner if the cushioning feels flat or new aches show up.",
        ),
        (
            "What are simple ways to reduce stress during a busy week?",
            "Short walks, a few minutes of slow breathing, and protecting your sleep make a surprising difference.",
        ),
        (
            "{name} says intermittent fasting changed their life. Is there anything to it?",
            "Some people find it a convenient way to eat less, but overall diet quality matters more than timing.",
        ),
        (
            "How do I build a habit of stretching every day?",
            "Attach it to something you already do, like brushing your teeth, and start with just two minutes.",
        ),
        (
            "What belongs in a basic first-aid kit at home?",
            "Bandages, gauze, tape, antiseptic wipes, pain relievers, tweezers, a thermometer and any personal "
            "medications.",
        ),
        (
            "Is it bad to work out with a cold?",
            "Light exercise is usually fine if the symptoms are above the neck. Rest if you have a fever or chest "
            "congestion.",
        ),
    ),
    "hobbies": (
        (
            "How do people usually get started with {hobby}?",
            "A beginner class is the fastest way in. You learn the basics safely and meet people at the same level.",
        ),
        (
            "{name} wants to learn the {instrument}. Is it too late to start as an adult?",
            "Not at all. Adults often progress quickly because they practice deliberately. Fifteen minutes a day "
            "beats one long weekly session.",
        ),
        (
            "How do I keep a hobby fun instead of turning it into another chore?",
            "Drop the goals for a while and do it purely for enjoyment. Sharing it with a friend helps too.",
        ),
        (
            "What camera settings work for photos at dusk?",
            "A wide aperture, a slightly higher ISO, and steady hands or a tripod. Shoot in RAW if you can.",
        ),
        (
            "Is a {hobby} class a good idea for a first date?",
            "It can be! Doing something hands-on takes the pressure off conversation and gives you something to "
            "laugh about.",
        ),
        (
            "What are good board games for a group of six?",
            "Codenames, Wavelength and Just One work well with bigger groups, and they're easy to teach.",
        ),
        (
            "How do I learn {language} vocabulary without getting bored?",
            "Mix spaced-repetition flashcards with things you enjoy: shows with subtitles, easy podcasts, and labels "
            "on things around your home.",
        ),
        (
            "My {relation} has gotten really into birdwatching. What gear should they start with?",
            "A decent pair of 8x42 binoculars and a regional field guide or app are all they need at first.",
        ),
        (
            "My {relation} {event} and won't stop talking about it. Is it worth doing?",
            "Lots of people say it's worth it at least once. Try it with a friend so it's fun either way.",
        ),
        (
            "How do people find time for hobbies with a full-time job?",
            "Schedule small blocks, even thirty minutes twice a week, and protect them like appointments.",
        ),
    ),
}
THEME_NAMES = tuple(THEMES)
_OPENERS = ("", "", "", "", "Good question! ", "Sure! ", "Happy to help. ", "Great question. ")
_FOLLOWUPS = (
    "",
    "",
    "",
    "",
    " Hope that helps!",
    " Let me know how it goes!",
    " Want a few more ideas?",
    " Happy to go into more detail if you like.",
)
_CLOSERS = (
    ("Thanks, that's really helpful!", "You're welcome! Let me know if anything else comes up."),
    ("Perfect, thank you.", "Glad I could help. Good luck!"),
    ("Great, I'll try that.", "Sounds good. Feel free to check back in anytime."),
    ("Got it, thanks!", "Anytime! Have a great day."),
)
_BRIDGES = (
    "Switching topics for a second. ",
    "Unrelated question. ",
    "One more thing. ",
    "Different topic: ",
    "Oh, before I forget: ",
)
