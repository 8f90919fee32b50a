"""Small talk of the casual generator (data): openers, reactions, photo turns, distractors, closers.

Templates use ``{S}`` (the turn's speaker), ``{O}`` (the other speaker) and pool slots filled by
``generator._Fill`` (``{pet}``, ``{other}``, ``{photo}``, ...). No small-talk turn states a
fact about a speaker that a question asks about: distractors are about third parties
(a coworker's new dog), and a speaker's own small talk is opinions, weather and vague plans.
"""

from __future__ import annotations

# First turn of a session (the starter) and the other speaker's answer.
OPENERS = (
    "Hey {O}! Long time no talk. How've you been?",
    "Hi {O}! Hope your week's going okay.",
    "{O}! So good to catch up. It's been a crazy couple of weeks over here.",
    "Hey hey! How are things?",
    "Hi {O}, got a minute? I feel like we haven't talked in forever.",
    "Morning {O}! What's new with you?",
    "Hey! I was just thinking about you. How's everything going?",
)
OPENER_REPLIES = (
    "Hey {O}! I'm good, busy with work but can't complain. You?",
    "Hi! Pretty good. The weather's been {weather} here all week, so I've mostly stayed in.",
    "Hey! Doing alright, just tired. It's been one of those weeks. What's up with you?",
    "{O}! Great to hear from you. Things are good, a little hectic. How about you?",
    "Hi! All good here.",
    "Hey, good to hear from you! Honestly it's been a whirlwind since we last talked, but a good one.",
)
# (turn, reply) small talk; either speaker may start it.
SMALL_TALK = (
    (
        "Have you watched anything good lately?",
        "I've been binging {show}. Not proud of how fast I'm going through it, but it's so relaxing after work.",
    ),
    (
        "The weather's been {weather} all week. I haven't left the house much.",
        "Same here! Perfect excuse for tea and a blanket, honestly.",
    ),
    (
        "Any plans for the weekend?",
        "Nothing big. Maybe check out {outing} if I have the energy, otherwise just resting.",
    ),
    ("Do you ever feel like the weeks are flying by?", "All the time. I blinked and it's {month} already!"),
    ("I'm trying to drink less coffee. It's going terribly.", "Haha, good luck. I gave up on that years ago."),
    (
        "Work has been nonstop lately.",
        "Ugh, I feel that. Make sure you take some time for yourself, even if it's just a walk around the block.",
    ),
    (
        "I need a new podcast for my commute, any ideas?",
        "I've heard good things about {show}, though that's more of a TV thing. Maybe try a history one?",
    ),
    ("Do you have a favorite comfort food?", "Probably {food}. It just feels like home."),
    ("I finally cleaned out my closet. It felt so good.", "Love that! I really need to do the same."),
    (
        "Been thinking about picking up a new hobby but can't decide what.",
        "You should try a bunch of things and see what sticks! That's what I'd do.",
    ),
)
# A photo turn and a reaction; the caption is LoCoMo-like text, not an image.
PHOTOS = (
    ("Look what I saw on my walk today! [shares a photo of {photo}]", "Wow, that's gorgeous! Where was that?"),
    ("This made my day. [shares a photo of {photo}]", "Aww, I love it!"),
    (
        "Had to share this one. [shares a photo of {photo}]",
        "That's amazing. You always find the best things to take pictures of.",
    ),
    ("[shares a photo of {photo}] Guess where I am right now!", "No idea, but I'm jealous!"),
)
# A third party does something a fact could be about: same vocabulary, other person, other value.
DISTRACTORS = (
    (
        "My {circle} {other} just adopted a {pet} named {pname}. It's the cutest thing.",
        "Aww! I love hearing about new pets.",
    ),
    (
        "{other} from work signed up for a {cls} class and keeps sending me videos of {their} projects.",
        "Haha, that's sweet. Sounds like {other} is really into it.",
    ),
    (
        "My {circle} {other} just got back from {place} and won't stop talking about the food.",
        "I've heard {place} is amazing! I'd love to go someday.",
    ),
    ("{other} is learning the {instrument}. The neighbors must love that.", "Haha, poor neighbors!"),
    ("My {circle} {other} {event} last month. So inspiring.", "That's awesome, good for {other}!"),
    ("My {circle} keeps recommending {book}. Have you read it?", "Not yet, but it's been on my list forever."),
    ("{other} made {food} for the potluck on Friday and everyone went back for seconds.", "Yum, now I'm hungry."),
    (
        "My {circle} {other} just started a job at {workplace}. {their_cap} first week was wild.",
        "Starting somewhere new is always a lot. Hope {other} settles in.",
    ),
    (
        "{other} has gotten really into {hobby}. {their_cap} whole weekend is planned around it now.",
        "Ha, I love when people find their thing.",
    ),
    ("My {circle} {other} is obsessed with the {instrument} these days.", "That's such a fun instrument!"),
)
# Topical echoes (the generator's `topical` option): (turn, reply) pairs that share a question's words
# and not its answer, by topic (facts.Fact.topic): either speaker asks in general or talks about a
# third party, so what the question asks is never stated. LoCoMo's conversations return to the
# same topics, so half the non-gold turns a question's windows show share a word with it; without
# these the generator's distractors seldom do (docs/development.md, "Is it more than word overlap?").
ECHOES = {
    "pet": (
        ("Is it hard having a {pet} in an apartment?", "Not really, you just need a good routine and lots of walks."),
        ("My {circle} {other} wants a {pet} too, but {their} landlord said no.", "Landlords, honestly."),
        ("I saw someone walking a {pet} today and it made my whole morning.", "They're the best, aren't they?"),
    ),
    "class": (
        (
            "The community center posted its new classes. Half of them fill up the day you sign up.",
            "Yeah, you have to be quick. The popular ones go in minutes.",
        ),
        ("{other} wants to sign up for a class with me, but we can't agree on one.", "Ha, just pick one at random!"),
    ),
    "job": (
        (
            "My {circle} {other} is looking for a new job, {their} boss is a nightmare.",
            "Ugh, I hope {other} finds something soon.",
        ),
        (
            "Job hunting is exhausting. Every listing wants five years of experience.",
            "It's the worst. The right new job will come, though.",
        ),
    ),
    "instrument": (
        (
            "I always wanted to learn an instrument as a kid, but we never had the money for lessons.",
            "It's never too late to start learning!",
        ),
        ("{other} from work is learning an instrument too, {their} whole office can hear it.", "Ha, poor coworkers!"),
    ),
    "book": (
        (
            "I haven't finished a single book this year. My attention span is gone.",
            "Ha, some months are like that. Reading comes back in waves.",
        ),
        (
            "My {circle} {other} finished a book a week last year. I don't know how.",
            "Some people are just built different.",
        ),
    ),
    "family": (
        ("How's your {fam} doing these days?", "Busy as always, we keep missing each other's calls."),
        (
            "My {circle} {other} has a {fam} who visits every summer, it sounds like a lot.",
            "Family visits always are, even the good ones.",
        ),
    ),
    "food": (
        (
            "Cooking from scratch takes forever. I don't know how people find the time.",
            "Honestly, a good takeout place is underrated.",
        ),
        ("{other} has been making everything from scratch lately, even {their} own pasta.", "Wow, that's dedication."),
    ),
    "event": (
        ("My {circle} {other} wants to {base} this year.", "Ha, good luck to {other}!"),
        ("{other} keeps talking about wanting to {base} someday.", "Someday, sure."),
    ),
    "trips": (
        (
            "Travel is so expensive lately, but I keep checking flights anyway.",
            "Same! I have tabs open for like six places I want to travel to.",
        ),
        (
            "{other} wants to travel to two new places every year from now on.",
            "Love that plan, if {other} can afford it.",
        ),
    ),
    "hobby": (
        ("Do you think it's weird to enjoy a hobby alone?", "Not at all. Some hobbies are better solo."),
        (
            "My {circle} {other} has a new hobby every month. {their_cap} garage is full of gear.",
            "Ha, I know a few people like that.",
        ),
    ),
    "relative": (
        ("It's wedding season again. {other} from work just got engaged too.", "Everyone is getting engaged lately!"),
        ("Family group chats are chaos. Mine has forty unread messages.", "Ha, mine too."),
    ),
    "trait:outdoors": (
        (
            "{other} keeps sending me vacation ideas, half in the mountains and half in a big city.",
            "Tough choice. I'd go wherever the food is good.",
        ),
    ),
    "trait:animals": (
        (
            "My {circle} {other} just started working at a vet clinic, {their} hours are brutal.",
            "Oof, but what a rewarding job.",
        ),
    ),
    "trait:books": (
        (
            "I never know what to get people. Is a gift card a lazy present?",
            "A gift card is never lazy! Bookstore ones especially.",
        ),
    ),
    "trait:cooking": (
        (
            "{other} went on a cooking-themed vacation last year and came back with so many recipes.",
            "That sounds like a dream trip.",
        ),
    ),
    "trait:music": (
        (
            "The music festival lineup came out and it's a bit disappointing this year.",
            "They say that every year, and every year it sells out.",
        ),
    ),
    "trait:art": (
        (
            "My {circle} {other} wants to pursue a creative hobby but can't decide which kind.",
            "Trying a few things first is the way to go.",
        ),
    ),
}
# First-person echoes (`topical=2`): the fact's own speaker on the same topic in another session, never the
# answer: LoCoMo's annotators mark one turn, and its speakers keep talking about their dog, their team,
# their class in turns that are not the evidence. (turn by the fact's speaker, the other's reply)
SELF_ECHOES = {
    "pet": (
        ("Took the {pet} to the vet this morning, all good, just a checkup.", "Glad it's nothing serious!"),
        ("The {pet} chewed through another phone charger last night. I give up.", "Ha, classic."),
    ),
    "class": (
        ("Class was cancelled this week, so I stayed home and practiced instead.", "Still counts!"),
        ("I was the worst one in class again yesterday, but the teacher is so patient.", "Everyone starts somewhere."),
    ),
    "job": (
        ("First weeks at the new job are a blur, so many names to learn.", "You'll have them down in no time."),
        ("Had my first big meeting at work today. I think it went okay?", "I'm sure it went great."),
    ),
    "instrument": (
        ("I practiced for an hour last night. My neighbors are saints.", "Ha, or very patient people."),
        ("I'm learning a new song right now, very slowly.", "Slow is how you learn it right."),
    ),
    "book": (
        ("I finished another book on the train yesterday, a short one this time.", "Nice, what's next on the pile?"),
        ("I keep falling asleep two pages into whatever I'm reading.", "That's the best kind of sleep aid."),
    ),
    "family": (
        ("My {fam} called me twice today, just to chat.", "That's sweet. You two are close."),
        ("My {fam} and I are trying to plan a trip together, but our calendars hate us.", "Ugh, scheduling."),
    ),
    "food": (
        ("I'm making something from scratch again tonight, wish me luck.", "Good luck! Send pictures."),
        ("I burned dinner last night, back to basics I guess.", "Happens to the best of us."),
    ),
    "trips": (("I'm already planning where to travel next, I can't help it.", "You have the travel bug for sure."),),
    "hobby": (("Honestly, having a hobby has been the best thing for me this year.", "I can tell, you seem happier."),),
    "relative": (("My family is planning a big get-together for the summer.", "That sounds lovely, and chaotic."),),
}
# Openers that put a planted statement's point later in its turn (`topical=2`), as many LoCoMo gold turns do.
LEAD_INS = (
    "Oh man, where do I even start.",
    "Sorry for the slow reply, this week got away from me.",
    "So much has happened since we talked, honestly.",
    "Okay, I have to tell you something.",
    "Things have been busy but good on my end.",
)
# The other speaker's reaction to a planted statement (one-liners to a few sentences).
REACTIONS = (
    "Wow, that's amazing, {O}!",
    "No way! Congrats!",
    "That's so cool. How do you feel about it?",
    "Ha, love that.",
    "Oh nice!",
    "That's awesome! I've always wanted to do something like that, but I never seem to find the time. You'll "
    "have to tell me all about it.",
    "Wait, really? That's huge. I'm so happy for you, {O}.",
    "Oh, I love that for you.",
    "Oh wow. I did not see that coming, but it sounds perfect for you.",
    "Yes!! Tell me everything.",
)
# The speaker's follow-up after the reaction (sometimes left out).
FOLLOWUPS = (
    "Thanks! I'm {feeling} about it.",
    "Haha, thanks. It still feels a bit unreal.",
    "Thank you! Honestly I almost didn't go through with it, but I'm glad I did.",
    "Thanks, {O}. It's been a good distraction from everything else going on.",
    "I know, right? I'll keep you posted.",
    "Thanks! It means a lot that you're excited too.",
)
# Extra sentences that lengthen a turn.
EXTRAS = (
    "Anyway, that's my news!",
    "Work has been nonstop, so this was a nice break.",
    "I keep telling myself to slow down a bit, but you know me.",
    "It's funny how things work out sometimes.",
    "I've been meaning to tell you about it for a while.",
    "Life has been a lot lately, in a good way.",
    "Honestly, I didn't expect it to hit me the way it did, but I've been smiling about it all week.",
    "I know it sounds like a small thing, but after the last few months it really means a lot to me.",
    "My family thinks I'm a little crazy for it, but they've been super supportive, which I appreciate.",
    "It reminded me how important it is to make time for the things that make you feel like yourself.",
    "I was nervous going in, to be honest, but everyone was so welcoming that I forgot about it in minutes.",
    "I'll tell you more next time, there's way too much to fit in one message!",
    "Anyway, how are you holding up? I feel like I've been talking about myself nonstop.",
    "The weather was perfect too, which made the whole thing even better.",
)
# When the next block opens with the same speaker as the last turn, the other speaker asks first.
BRIDGES = (
    "What about you, anything new?",
    "So what's new with you?",
    "Enough about me. How are things on your end?",
    "Anything exciting happening with you lately?",
    "How's everything else going?",
)
CLOSERS = (
    ("Anyway, I gotta run. Talk soon!", "Bye! Take care!"),
    ("Thanks for catching up, {O}. Let's talk again soon.", "Always! Take care of yourself."),
    ("Okay, dinner's ready, I should go. Great chatting!", "Enjoy! Talk later."),
    ("I'll let you go. Say hi to everyone for me!", "Will do. Bye!"),
)
SHORT = ("Haha", "Totally.", "Aww.", "lol same", "Right?!", "For sure.", "Ugh, I know.", "Ha, yes!")
