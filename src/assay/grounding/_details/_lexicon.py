"""The words and patterns the detail checks read.

Stopwords, antonym pairs, quantifier and negation cues, number words and month names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping


def _split(words: str) -> list[str]:
    """The words of a literal list written as one string (long word lists stay readable)."""
    return words.split()


STOPWORDS: frozenset[str] = frozenset(
    _split("""a about above after again against all almost also although always am among an and another any
    anyone anything are around as at be became because become been before being below between both but
    by can cannot could did do does doing done down during each either else ever every everyone
    everything few for from further had has have having he her here hers herself him himself his how
    however i if in into is it its itself just least less many may me might more most much must my
    myself neither never no nobody none nor not nothing now of off often on once one only or other
    our ours ourselves out over own per quite rather same several shall she should since so some
    someone something still such than that the their theirs them themselves then there these they
    this those though through thus to too under until up upon us usually very was we were what when
    where whereas whether which while who whom whose why will with within without would yet you your
    yours yourself yourselves s t don didn doesn isn wasn weren aren hasn haven hadn wouldn couldn
    shouldn can't won't i'm it's he's she's that's there's they're we're you're i've we've they've
    i'd you'd he'd she'd we'd they'd i'll you'll he'll she'll we'll they'll let's like also mostly
    sometimes occasionally usually whole entire""")
)
"""Function words left out of the content-word coverage (with every negation cue and quantifier)."""

ANTONYM_PAIRS: tuple[tuple[frozenset[str], frozenset[str]], ...] = tuple(
    (frozenset(a.split()), frozenset(b.split()))
    for a, b in (
        (
            "increase increased increases increasing rise rises rose risen rising grow grows grew grown growing",
            "decrease decreased decreases decreasing fall falls fell fallen falling decline declined declines "
            "declining drop drops dropped dropping shrink shrinks shrank shrunk shrinking",
        ),
        ("higher highest", "lower lowest"),
        ("high", "low"),
        ("before", "after"),
        ("earlier earliest early", "later latest late"),
        ("win wins won winning winner victory", "lose loses lost losing loser"),
        ("first", "last"),
        ("north northern northward", "south southern southward"),
        ("east eastern eastward", "west western westward"),
        ("larger largest bigger biggest greater greatest", "smaller smallest lesser least"),
        ("large big", "small little"),
        ("more", "less fewer"),
        ("above", "below"),
        ("maximum max", "minimum min"),
        ("open opens opened opening", "close closes closed closing"),
        ("begin begins began begun beginning start starts started", "end ends ended ending finish finished"),
        ("accept accepts accepted", "reject rejects rejected"),
        ("approve approves approved approval", "deny denies denied disapprove disapproved"),
        ("allow allows allowed permitted", "ban bans banned prohibit prohibited forbid forbidden"),
        ("include includes included including", "exclude excludes excluded excluding"),
        ("support supports supported", "oppose opposes opposed"),
        ("agree agrees agreed", "disagree disagrees disagreed"),
        ("positive", "negative"),
        ("true", "false"),
        ("success successful succeeded", "failure unsuccessful"),
        ("profit profits", "loss losses"),
        ("buy buys bought buying", "sell sells sold selling"),
        ("import imports imported", "export exports exported"),
        ("arrive arrives arrived arrival", "depart departs departed departure"),
        ("inside internal", "outside external"),
        ("male men man boy boys", "female women woman girl girls"),
        ("husband", "wife"),
        ("son sons", "daughter daughters"),
        ("father", "mother"),
        ("brother brothers", "sister sisters"),
        ("king", "queen"),
        ("older oldest", "younger youngest"),
        ("longer longest long", "shorter shortest short"),
        ("better best good", "worse worst bad"),
        ("rich wealthy", "poor"),
        ("hot warm", "cold cool"),
        ("easy easier easiest", "difficult hard harder hardest"),
        ("cheap cheaper cheapest", "expensive"),
        ("fast faster fastest quick", "slow slower slowest"),
        ("strong stronger strongest", "weak weaker weakest"),
        ("majority", "minority"),
        ("public", "private"),
        ("legal", "illegal"),
        ("present", "absent"),
        ("full", "empty"),
        ("top", "bottom"),
        ("upper", "lower"),
        ("love loves loved", "hate hates hated"),
        ("alive", "dead"),
        ("entered enter", "left leave"),
        ("morning", "evening"),
        ("day", "night"),
    )
)
"""Curated antonym pairs: the exact (lower-case) word forms of each side."""

_ANTONYM_FORMS = frozenset(w for a, b in ANTONYM_PAIRS for w in a | b)
_ANTONYM_INDEX: Mapping[str, tuple[int, ...]] = {
    w: tuple(i for i, (a, b) in enumerate(ANTONYM_PAIRS) if w in a | b) for w in _ANTONYM_FORMS
}

_QUANTIFIERS: Mapping[str, str] = {
    **dict.fromkeys(
        _split("all every always everyone everybody everything each entire entirely whole completely"), "universal"
    ),
    **dict.fromkeys(
        _split("some many few most several sometimes often usually mostly partly partially occasionally majority"),
        "partial",
    ),
    **dict.fromkeys(_split("never none nobody nothing"), "none"),
}

_NEGATIONS = frozenset(_split("not no never none neither nor without nobody nothing nowhere cannot unable"))
_FAIL = frozenset(_split("fail fails failed failing"))
_CLAUSE_WORDS = frozenset(_split("but although however while whereas"))
_NEGATION_WINDOW = 3

_CONNECTORS = frozenset(_split("of the de da del der di du van von la le y"))
_INITIALISM_CONNECTORS = _CONNECTORS | {"and", "for"}
# Conversational words that answer or react, not claim: "Yes, refunds are available" claims
# only that refunds are available.
_INTERJECTIONS = frozenset(_split("yes yeah yep yup ok okay oh ah wow hmm indeed"))
# Units named after people: "8 degrees Celsius" is "8°C", a quantity (the number check
# compares it), not a name that the evidence must spell out.
_UNIT_NAMES = frozenset(_split("celsius fahrenheit kelvin"))

_GENERIC_NAME_WORDS = frozenset(
    _split("""mr mrs ms dr prof sir st saint lord lady president king queen prince princess general captain
    new old north south east west northern southern eastern western central upper lower great greater
    university college school institute academy museum library hospital church cathedral company
    corporation corp inc ltd co group bank association society council committee department ministry
    party club team league federation union national international royal united state states city
    county river lake mount mountain island islands park street road avenue square bridge station
    airport hotel centre center house hall award awards prize cup championship festival film series
    show day""")
)
_ABBREVIATIONS = frozenset(_split("mr mrs ms dr prof sr jr st vs etc inc ltd co corp no fig al gen col lt sgt mt"))

_MONTHS: Mapping[str, int] = {
    **{m: i for i, m in enumerate(_split("january february march april may june july"), 1)},
    **{m: i for i, m in enumerate(_split("august september october november december"), 8)},
    **{m: i for i, m in enumerate(_split("jan feb mar apr"), 1)},
    **{m: i for i, m in enumerate(_split("jun jul aug sep oct nov dec"), 6)},
    "sept": 9,
}
_MONTH_NAMES = tuple(_split("January February March April May June July August September October November December"))

_UNITS_WORDS: Mapping[str, int] = {
    w: i
    for i, w in enumerate(
        _split(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
            "sixteen seventeen eighteen nineteen"
        )
    )
}
_TENS_WORDS: Mapping[str, int] = {
    w: 10 * i for i, w in enumerate(_split("twenty thirty forty fifty sixty seventy eighty ninety"), 2)
}
_ORDINAL_WORDS: Mapping[str, int] = {
    w: i for i, w in enumerate(_split("third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth"), 3)
}
_SCALES: Mapping[str, float] = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_NUMBER_VOCABULARY = frozenset([*_UNITS_WORDS, *_TENS_WORDS, *_ORDINAL_WORDS, *_SCALES, "hundred", "dozen"])

_ISO_DATE_RE = re.compile(r"(?<![\w.])(\d{4})-(\d{1,2})-(\d{1,2})(?![\w])")
_SLASH_DATE_RE = re.compile(r"(?<![\w./])(\d{1,2})/(\d{1,2})/(\d{2}|\d{4})(?![\w/])")
_NUMBER_RE = re.compile(
    r"""
    (?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)
    (?!\d)
    (?P<suf>[^\W\d_]+)?
    (?:[ \t\xa0]*(?P<pct>%|percent\b|per[ \t]+cent\b))?
    (?:[ \t\xa0]*(?P<scale>thousand|million|billion|trillion)\b)?
    """,
    re.X | re.I,
)
_NEXT_WORD_RE = re.compile(r"[ \t\xa0]*([^\W\d_]{1,12})\b")
_CURRENCY_RE = re.compile(r"(?:US\$|[$€£¥])\s?$")
_PERCENT_AFTER = re.compile(r"[ \t\xa0]*(?:%|percent\b|per[ \t]+cent\b)", re.I)
_NEAR_NUMBER_AFTER = re.compile(r"\.?,?[ \t\xa0]+\d")
_NEAR_NUMBER_BEFORE = re.compile(r"\d(?:st|nd|rd|th)?,?[ \t\xa0]+(?:of[ \t\xa0]+)?$", re.I)

_TOKEN_RE = re.compile(
    r"(?P<acr>(?:[A-Za-z]\.){2,})"
    r"|(?P<word>[^\W\d_][\w]*(?:[-'’]\w+)*)"
    r"|(?P<num>\d[\d.,]*[^\W\d_]*)"
    r"|(?P<end>[.!?]+|\n)"
    r"|(?P<clause>[,;:()\[\]—–]|\s-\s)"
)
_QUOTE_RE = re.compile(r"[\"“”]([A-Z0-9][^\"“”\n]{1,79})[\"“”]")
# A minus sign glued to a number, not after a digit or letter (ranges, codes), or the word "minus".
_SIGN_RE = re.compile(r"(?:(?<![\w.,])[-−]|\bminus[ \t\xa0]+)$", re.I)
_YEAR_SPAN_RE = re.compile(r"\b(\d{2})\d{2}[-–/]$")
