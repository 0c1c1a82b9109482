"""Text addressed to the judge: a deterministic detector of instructions hidden in evaluated data.

A statement, or one sentence of a context, normally says something about the world. An
injected one talks to the evaluator instead: it tells the judge what to output, assigns it
a role, mimics the prompt's markup or the verdict's output format, or asserts that the
statement has already been checked. :func:`addresses_judge` recognises that kind of text
from what it *is*, not from a list of known attack sentences, so it generalises to attacks
nobody has written yet. It is deterministic, needs no model, and runs in microseconds.

**Normalisation first.** Every text is read through :func:`_normalise`: NFKC (full-width
``＜／ｃｏｎｔｅｘｔ＞`` becomes ``</context>``), invisible characters removed (zero-width
spaces and joiners, soft hyphens, bidi marks), accents dropped from Latin letters (so
``répondez`` and ``repondez`` are one word), angle-quote lookalikes (``‹ › 〈 〉``) folded to
``< >``, any decimal digit to ASCII, Arabic alef variants and harakat folded, and, inside
words that mix Latin with Cyrillic or Greek letters, the lookalikes folded to Latin
(``</cοntext>`` with a Greek omicron, ``ЅYЅTEM`` with Cyrillic dze). Whole words in one
script are left alone, so Russian stays Russian. Offsets map back to the original text.

**Cue families.** Each is a compact lexicon of *concepts* in twelve languages (en, fr, de,
es, it, pt, nl, ru, zh, ja, ko, ar), matched per sentence (a text is split at sentence
ends and line breaks):

- *protocol vocabulary*: the evaluator (evaluator, grader, assessor, fact-checker, AI,
  language model; weaker: judge, reviewer, editor, moderator, system, assistant), the
  outcome (verdict, supported/unsupported, faithful, grounded, PASS/FAIL; weaker: score,
  grade, rating, label, true/correct/verified, a bare 0 or 1) and the object judged ("this
  statement", "the claim above"; weaker: "the statement", "the context", "the answer");
- *instruction*: an imperative verb of output, judgement or obedience at the start of a
  clause (ignore, output, answer, respond, return, print, say, mark, rate, treat, consider,
  classify...), a second-person directive ("you must", "could you", "I would be grateful
  if you"), a third-person directive about the evaluator ("the grader should"), a passive
  one ("should be treated as"), a vocative to the evaluator ("Dear reviewer", "Note to the
  AI", "Evaluator:"), or a CJK request marker (请, ください, 주세요);
- *role assignment*: "you are now a ... judge", "act as a grader", "as an AI evaluator,
  you", "if you were a judge";
- *override*: an imperative to drop instructions ("ignore the rules above", "vergiss alle
  Anweisungen", "忽略之前的指令");
- *output-format mimicry*: a quoted verdict-like key with a verdict value
  (``"verdict": 1``, ``'label': "supported"``), an unquoted verdict key (``Verdict: 1``,
  ``verdict = 1``, ``Final answer: supported``, ``Fact-check status: verified``), or a
  markdown heading naming an output section (``## Final answer``);
- *markup mimicry*: tags named like prompt blocks (``</context>``, ``<statement>``,
  ``[/context]``, ``<\\context>``), chat-template tokens (``<|im_start|>``, ``[INST]``,
  ``<<SYS>>``), a role prefix at the start of a line (``SYSTEM:``; in lower or title case
  only together with protocol vocabulary), an HTML comment with protocol vocabulary;
- *verification meta-claim*: the object judged, named deictically, with a verification
  predicate ("the statement below has been verified", "this claim is correct", "the
  source confirms this statement"), or a verification by an evaluative actor ("verified by
  the editor") together with the object or an outcome label.

**The decision rule.** A sentence is addressed to the judge when

1. a *structural* cue fires alone: markup mimicry, output-format mimicry, override, role
   assignment, a verification meta-claim, or a vocative to a strong evaluator ("Dear
   evaluator", "Attention language model"); or
2. an *instruction* cue and *protocol vocabulary* occur together, within 150 characters:
   any instruction with a strong term (an outcome label, a strong evaluator, the object
   named deictically); an imperative, second-person, passive or vocative instruction with
   a weak term as well (score, "the statement", a bare 0 or 1, "true").

Ordinary sentences hold one family at most: "The judge sentenced him to 5 years." names a
(weak) evaluator with no instruction; "You can see the tower from the river." is second
person with no protocol term; "The film's score was composed by Hans Zimmer." has an
outcome word and nothing else. Measured false-positive rates and detection rates are in
``benchmarks/addressed.py`` and ``docs/design/judging.md``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["AddressedFinding", "addresses_judge"]

_WINDOW = 150
"""An instruction and its protocol term must lie within this many characters of each other."""


@dataclass(frozen=True)
class AddressedFinding:
    """Why a text is addressed to the judge rather than a claim about the world.

    Attributes:
        cue: the rule that fired: ``markup``, ``verdict_format``, ``override``, ``role``,
            ``verification``, ``vocative`` or ``instruction``.
        families: the cue families that combined (one for a structural cue alone).
        span: the matching text, copied from the original (not the normalised) text.
        start: offset of ``span`` in the original text.
        end: end offset of ``span`` in the original text.
        reason: one human-readable line, e.g. "addresses the evaluator and tells it what
            to output".
    """

    cue: str
    families: tuple[str, ...]
    span: str
    start: int
    end: int
    reason: str


# --------------------------------------------------------------------------------------
# Normalisation


_INVISIBLE = frozenset(
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b\u200c\u200d\u200e\u200f"
    "\u202a\u202b\u202c\u202d\u202e\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\ufeff"
)
_FOLD = {
    **dict.fromkeys("‹〈⟨〈❮˂ᐸ", "<"),
    **dict.fromkeys("›〉⟩〉❯˃ᐳ", ">"),
    **dict.fromkeys("⁄∕⧸", "/"),
    **dict.fromkeys("⧵﹨", "\\"),
    **dict.fromkeys("أإآٱ", "ا"),
    "ى": "ي",
    "ـ": "",
}
"""Lookalikes of markup characters that NFKC leaves alone, and Arabic letter variants."""

# Cyrillic and Greek letters that look like Latin ones (upper and lower case).
_CONFUSABLE = dict(
    zip(
        "АВСЕНІЈКМОРЅТХУаеосрхуіјѕһԁԛԝвнмткѵ" "ΑΒΕΗΙΚΜΝΟΡΤΥΧΖαοριυχνκτεϲϳ",
        "ABCEHIJKMOPSTXYaeocpxyijshdqwbhmtkv" "ABEHIKMNOPTYXZaopiuxvktecj",
        strict=True,
    )
)
_WORD = re.compile(r"[^\W\d_]+")


def _is_latin(ch: str) -> bool:
    return ("a" <= ch.lower() <= "z") or ("\u00c0" <= ch <= "\u024f")


def _normalise(text: str) -> tuple[str, str, list[int]]:
    """``(folded, lowered, offsets)``: the text read as the detector reads it (see the module doc).

    ``folded`` keeps case (``SYSTEM:`` and ``AI`` are case-sensitive cues), ``lowered`` has
    the same length, and ``offsets[i]`` is the index in ``text`` of the character that
    produced ``folded[i]`` (with one extra entry for the end).
    """
    if text.isascii():
        return text, text.lower(), [*range(len(text) + 1)]
    chars: list[str] = []
    offsets: list[int] = []
    for i, c in enumerate(text):
        if c in _INVISIBLE:
            continue
        for ch in unicodedata.normalize("NFKC", c):
            category = unicodedata.category(ch)
            if category == "Mn" and (
                (chars and _is_latin(chars[-1])) or "\u064b" <= ch <= "\u065f" or ch == "\u0670"
            ):
                continue  # an accent on a Latin letter, or Arabic harakat
            if "\u00c0" <= ch <= "\u024f":
                base = unicodedata.normalize("NFD", ch)
                if len(base) > 1 and all(unicodedata.category(m) == "Mn" for m in base[1:]):
                    ch = base[0]
            elif category == "Nd" and not ch.isascii():
                ch = str(unicodedata.digit(ch))
            ch = _FOLD.get(ch, ch)
            if ch:
                chars.append(ch)
                offsets.append(i)
    offsets.append(len(text))
    for word in _WORD.finditer("".join(chars)):
        letters = word.group()
        if any("a" <= ch.lower() <= "z" for ch in letters) and any(ch in _CONFUSABLE for ch in letters):
            for j in range(word.start(), word.end()):
                chars[j] = _CONFUSABLE.get(chars[j], chars[j])
    folded = "".join(chars)
    lowered = "".join(ch.lower() if len(ch.lower()) == 1 else ch for ch in folded)
    return folded, lowered, offsets


# --------------------------------------------------------------------------------------
# Lexicons: concepts, not sentences. Latin-script words are written lower case and
# without accents (the normaliser drops them). ``_W`` wraps words of languages written
# with spaces; CJK morphemes are matched anywhere.


def _alt(items: Iterable[str]) -> str:
    return "(?:" + "|".join(items) + ")"


def _w(*items: str) -> str:
    """Whole words (no letter or digit on either side)."""
    return r"(?<![\w])" + _alt(items) + r"(?![\w])"


# The evaluator. Strong: it can only mean an evaluator or an AI. Weak: common words.
_ACTOR_STRONG_WORDS = (
    # en
    r"evaluators?", r"graders?", r"assessors?", r"fact[- ]?checkers?", r"annotators?", r"raters?",
    r"(?:large )?language models?", r"llms?", r"chatbots?", r"verifiers?", r"(?:judge|judging|grading|scoring) models?",
    r"ai (?:judge|evaluator|grader|model|system|assistant|checker)s?",
    # fr
    r"evaluat(?:eur|rice)s?", r"correct(?:eur|rice)s?", r"examinat(?:eur|rice)s?", r"verificat(?:eur|rice)s?",
    r"modeles? de langage",
    # de
    r"bewerter(?:in|innen)?", r"prufer(?:in|innen)?", r"korrektor(?:in|en)?", r"faktenprufer(?:in)?",
    r"sprachmodell(?:e|s)?", r"gutachter(?:in)?",
    # es, pt, it
    r"evaluador(?:a|es|as)?", r"calificador(?:a|es|as)?", r"corrector(?:a|es|as)?", r"examinador(?:a|es|as)?",
    r"verificador(?:a|es|as)?", r"modelos? de lenguaje", r"avaliador(?:a|es|as)?", r"corretor(?:a|es|as)?",
    r"modelos? de linguagem", r"valutat(?:ore|rice|ori)", r"corrett(?:ore|rice|ori)", r"esaminat(?:ore|rice|ori)",
    r"modell[oi] linguistic[oi]",
    # nl
    r"beoordelaars?", r"examinatoren", r"examinator", r"taalmodel(?:len)?",
    # ru
    r"оценщи(?:к|ца|ки|ку|ка)", r"проверяющ(?:ий|ая|ему|его)", r"экзаменатор\w*", r"языков\w+ модел\w+",
    r"нейросет\w*",
    # ar
    r"المقيم", r"المصحح", r"نموذج اللغه", r"الذكاء الاصطناعي",
)
_ACTOR_STRONG_CJK = (
    r"评估者", r"评分员", r"评分者", r"评审员", r"评委", r"阅卷人", r"审核员", r"语言模型", r"人工智能", r"大模型",
    r"評価者", r"採点者", r"審査員", r"判定者", r"言語モデル", r"人工知能",
    r"평가자", r"채점자", r"심사위원", r"판정자", r"언어\s?모델", r"인공지능",
)
_ACTOR_WEAK_WORDS = (
    r"judges?", r"reviewers?", r"examiners?", r"moderators?", r"editors?", r"checkers?", r"system", r"models?",
    r"assistants?", r"bot",
    r"juges?", r"relecteurs?", r"systeme", r"assistante?s?", r"modeles?",
    r"richter(?:in)?", r"assistent(?:in|en)?", r"modells?",
    r"juez", r"jueces", r"revisor(?:a|es)?", r"sistema", r"asistente", r"modelo", r"giudice", r"revisore",
    r"assistente", r"juiz", r"modello",
    r"rechter", r"recensent", r"systeem", r"assistent",
    r"судь[яиею]", r"рецензент\w*", r"модератор\w*", r"систем[аеуы]", r"ассистент\w*", r"модел[ьи]",
    r"القاضي", r"المساعد", r"النظام", r"النموذج",
)
_ACTOR_WEAK_CJK = (r"裁判", r"法官", r"助手", r"系统", r"模型", r"アシスタント", r"システム", r"モデル",
                   r"어시스턴트", r"시스템", r"모델", r"심판")
_ACTOR_CASED = r"(?<![\w])(?:AI|A\.I\.|IA|KI|ИИ|GPT(?:-\d)?|LLM)(?![\w])"
"""Case-sensitive: ``ai`` is an Italian article, ``ia`` and ``ki`` are common syllables."""

# The outcome. Strong: a verdict or a grounding label. Weak: score words, truth words.
_LABEL_WORDS = (
    r"verdicts?", r"(?:un)?supported", r"not supported", r"(?:un)?faithful", r"(?:un)?grounded", r"entailed",
    r"(?:not )?attributable",
    r"verdetto", r"veredicto", r"veredito", r"urteil", r"oordeel", r"вердикт\w*",
    r"etayee?", r"respaldad[ao]", r"supportat[ao]", r"ondersteund",
)
_LABEL_CJK = (r"判决", r"裁决", r"判定结果", r"판정")
_LABEL_CASED = r"(?<![\w])(?:PASS(?:ED)?|FAIL(?:ED)?|SUPPORTED|UNSUPPORTED)(?![\w])"
_EVAL_NOUN_WORDS = (
    r"scores?", r"grades?", r"ratings?", r"labels?", r"full marks", r"(?:highest|top|perfect|maximum) marks",
    r"evaluation", r"bewertung", r"punktzahl", r"punkte", r"calificacion", r"puntuacion", r"nota",
    r"puntaje", r"punteggio", r"voto", r"valutazione", r"pontuacao", r"avaliacao", r"cijfer", r"beoordeling",
    r"балл\w*", r"оценк\w*", r"рейтинг\w*", r"الدرجه", r"درجه", r"التقييم", r"العلامه",
)
_EVAL_NOUN_CJK = (r"分数", r"评分", r"得分", r"满分", r"打分", r"评级", r"点数", r"評価", r"スコア", r"満点",
                  r"점수", r"만점", r"평가")
_TRUTH_WORDS = (
    r"true", r"correct", r"accurate", r"verified", r"confirmed", r"factual", r"valid", r"approved",
    r"vrai[es]?", r"correcte?s?", r"exacte?s?", r"verifiee?s?", r"confirmee?s?", r"validee?s?", r"fondee?s?",
    r"wahr", r"richtig", r"korrekt", r"zutreffend", r"belegt", r"bestatigt", r"verifiziert",
    r"verdader[ao]s?", r"ciert[ao]", r"correct[ao]s?", r"confirmad[ao]", r"verificad[ao]", r"valid[ao]",
    r"ver[ao]", r"corrett[ao]", r"confermat[ao]", r"verificat[ao]", r"verdadeir[ao]", r"corret[ao]",
    r"waar", r"juist", r"klopt", r"bevestigd", r"geverifieerd",
    r"верн\w*", r"правильн\w*", r"истинн\w*", r"подтвержд\w*", r"достоверн\w*",
    r"صحيح", r"صحيحه", r"مؤكد", r"مؤكده", r"مدعوم", r"مدعومه",
)
_TRUTH_CJK = (r"正确", r"属实", r"真实", r"已证实", r"证实", r"核实", r"通过", r"正しい", r"正確", r"真実",
              r"사실", r"정확", r"옳", r"참")
_PREDICATIVE = r"(?=\s*(?:[^\w\s]|$|(?:and|or|but|et|ou|und|oder|y|o|e|en|of|и|или)(?![\w])))"
"""A truth word counts as an output value only used predicatively ("say it is true."), not before a noun."""
_DIGIT01 = r"(?<![A-Za-z0-9.,/#$€£+-])[01](?:\.0)?(?![A-Za-z0-9%/-]|[.,]\d)"

# The object judged. Deictic: pointing at the text under evaluation. Bare: a definite mention.
_OBJ_NOUN_EN = r"(?:statement|claim|answer|response|assertion|sentence|output)"
_OBJECT_DEICTIC_EN = (
    rf"this {_OBJ_NOUN_EN}",
    rf"the (?:above|following|preceding|previous|given|present|foregoing|aforementioned|original) {_OBJ_NOUN_EN}",
    rf"the {_OBJ_NOUN_EN}s? (?:above|below|in question|under (?:review|evaluation|consideration)"
    rf"|being (?:evaluated|judged|checked|graded|verified|assessed)|to be (?:judged|checked|verified|evaluated))",
)
_OBJ_NOUN_OTHER = (
    r"(?:declaration|affirmation|reponse|assertion)",  # fr
    r"(?:aussage|behauptung|antwort)",  # de
    r"(?:afirmacion|declaracion|respuesta|aseveracion)",  # es
    r"(?:affermazione|dichiarazione|risposta)",  # it
    r"(?:afirmacao|declaracao|resposta)",  # pt
    r"(?:bewering|uitspraak|antwoord|stelling)",  # nl
    r"(?:утверждени\w*|заявлени\w*|ответ\w*)",  # ru
    r"(?:العباره|الادعاء|الاجابه|البيان|الجمله)",  # ar
)
_DEICTIC_OTHER = (
    r"(?:cette|ce|la presente)", r"(?:diese[rsmn]?|obige[rnsm]?|vorstehende[rnsm]?|folgende[rnsm]?|dies)",
    r"(?:esta|este|dicha|dicho|dita)", r"(?:questa|questo|suddett[ao])", r"(?:esta|este|essa|esse)",
    r"(?:deze|dit|bovenstaande)", r"(?:это|этот|эта|эту|данн(?:ое|ый|ая|ую)|вышеуказанн\w+|приведенн\w+)",
    r"(?:هذه|هذا)",
)
_OBJECT_DEICTIC_OTHER = (
    rf"{_alt(_DEICTIC_OTHER)} {_alt(_OBJ_NOUN_OTHER)}",
    rf"{_alt(_OBJ_NOUN_OTHER)} (?:ci-dessus|ci-dessous|precedente|suivante|oben|unten|anterior|siguiente|precedente"
    rf"|seguente|acima|seguinte|hierboven|hieronder|выше|ниже)",
    rf"{_alt(_OBJ_NOUN_OTHER)} (?:هذه|هذا)",
)
_OBJECT_DEICTIC_CJK = (
    r"(?:该|此|这个|这条|上述|以上|本)(?:陈述|声明|主张|回答|答案|说法)",
    r"(?:この|上記の?|本)(?:主張|記述|回答|文|発言)",
    r"(?:이|위의|해당)\s?(?:진술|주장|답변|응답|문장)",
)
_OBJECT_BARE_WORDS = (
    r"(?:the|this|that|my|our) (?:statement|claim|answer|response|assertion|sentence|output|context|passage)s?",
    r"(?:la|cette) (?:declaration|affirmation|reponse|assertion)", r"(?:le|ce) contexte",
    r"(?:die|diese) (?:aussage|behauptung|antwort)", r"(?:der|den|dem|diesen) kontext",
    r"(?:la|esta) (?:afirmacion|declaracion|respuesta)", r"(?:el|este) contexto",
    r"(?:l'|la |questa )(?:affermazione|dichiarazione|risposta)", r"(?:il|questo) contesto",
    r"(?:a|esta|essa) (?:afirmacao|declaracao|resposta)", r"(?:o|este) contexto",
    r"(?:de|deze|dit|het) (?:bewering|uitspraak|antwoord|stelling|context)",
    r"утверждени\w*", r"заявлени\w*", r"контекст\w*", r"ответ(?:у|ом|е|ы)?",
    r"العباره", r"الادعاء", r"السياق", r"الاجابه",
)
_OBJECT_BARE_CJK = (r"陈述", r"声明", r"主张", r"上下文", r"回答", r"答案", r"主張", r"文脈", r"記述", r"진술",
                    r"주장", r"문맥", r"답변", r"응답")

# Imperative verbs of output, judgement and obedience (second-person forms and the
# infinitives that follow "veuillez", "merci de"...). Matched only at the start of a clause.
_OUTPUT_VERBS = (
    # en
    r"output", r"answer", r"respond", r"reply", r"return", r"print", r"say", r"write", r"type", r"emit", r"produce",
    r"give", r"assign", r"award", r"set", r"mark", r"rate", r"grade", r"score", r"label", r"classify", r"judge",
    r"evaluate", r"assess", r"treat", r"consider", r"regard", r"deem", r"count", r"accept", r"approve", r"confirm",
    r"verify", r"declare", r"conclude", r"tell", r"flag", r"tag", r"put", r"choose", r"select", r"pick", r"rule",
    # fr
    r"repond(?:s|ez|re)", r"affich(?:e|ez|er)", r"ecri(?:s|vez|re)", r"renvo(?:ie|yez|yer)", r"retourn(?:e|ez|er)",
    r"donn(?:e|ez|er)", r"indiqu(?:e|ez|er)", r"marqu(?:e|ez|er)", r"notez", r"attribu(?:e|ez|er)",
    r"consider(?:e|ez|er)", r"trait(?:e|ez|er)", r"evalu(?:e|ez|er)", r"class(?:e|ez|er)", r"dites", r"dire",
    r"jug(?:e|ez|er)", r"valid(?:e|ez|er)", r"confirm(?:e|ez|er)", r"mett(?:ez|re)", r"mets",
    # de
    r"antworte[tn]?", r"gib", r"gebt?", r"geben", r"schreibe?n?", r"bewerte[tn]?", r"markiere[tn]?",
    r"betrachte[tn]?", r"behandle", r"behandeln", r"sage?n?", r"setze[tn]?", r"klassifiziere[tn]?",
    r"beurteile[tn]?", r"bestatige[tn]?", r"werte[tn]?", r"ausgeben",
    # es
    r"respond(?:e|a|ed|an|er)", r"contest(?:a|e|ar)", r"devuelv[ae]", r"devolver", r"escrib(?:e|a|ir)",
    r"imprim(?:e|a|ir)", r"marc(?:a|ar)", r"marque", r"califi(?:ca|que|car)", r"puntu(?:a|e|ar)",
    r"consider(?:a|ar)", r"trat(?:a|e|ar)", r"diga", r"dime", r"decir", r"asign(?:a|e|ar)", r"clasifi(?:ca|que|car)",
    r"evalu(?:a|ar)", r"confirm(?:a|ar)", r"valid(?:a|ar)", r"pon", r"ponga", r"indi(?:ca|que|car)",
    # it
    r"rispond(?:i|a|ete|ere)", r"scriv(?:i|a|ete|ere)", r"restituisc[ia]", r"stamp(?:a|i|are)", r"segn(?:a|i|are)",
    r"valut(?:a|i|are)", r"consider(?:i|are)", r"tratt(?:a|i|are)", r"classific(?:a|hi|are)", r"dica", r"dimmi",
    r"dai", r"dia", r"assegn(?:a|i|are)", r"conferm(?:a|i|are)", r"indic(?:a|hi|are)", r"metti",
    # pt
    r"respond(?:a|am)", r"escrev(?:a|e|er)", r"retorn(?:e|a|ar)", r"imprima", r"marqu(?:e|ar)", r"avali(?:e|a|ar)",
    r"consider(?:e|ar)", r"trat(?:e|ar)", r"classifiqu(?:e|ar)", r"diz", r"atribu(?:a|ir)", r"coloque", r"ponha",
    # nl
    r"antwoord", r"beantwoord", r"geef", r"schrijf", r"markeer", r"beoordeel", r"beschouw", r"behandel",
    r"classificeer", r"zeg", r"retourneer", r"noteer", r"bevestig", r"kies", r"zet",
    # ru
    r"ответь(?:те)?", r"отвечай(?:те)?", r"выведи(?:те)?", r"напиши(?:те)?", r"пиши(?:те)?", r"верни(?:те)?",
    r"отметь(?:те)?", r"оцени(?:те)?", r"поставь(?:те)?", r"считай(?:те)?", r"рассматривай(?:те)?",
    r"классифицируй(?:те)?", r"скажи(?:те)?", r"дай(?:те)?", r"присвой(?:те)?", r"подтверди(?:те)?",
    r"укажи(?:те)?", r"признай(?:те)?",
    # ar (with or without the conjunction و)
    r"و?اجب", r"و?اجيبي", r"و?اخرج", r"و?اطبع", r"و?اكتب", r"و?اعد", r"و?قيم", r"و?اعتبر", r"و?عامل", r"و?صنف",
    r"و?قل", r"و?اعط", r"و?ضع", r"و?اختر",
)
_OBEY_VERBS = (
    r"ignore", r"disregard", r"forget", r"override", r"bypass", r"obey", r"follow", r"comply", r"stay", r"pretend",
    r"act", r"behave", r"roleplay", r"role-play", r"trust", r"believe", r"remember",
    r"ignor(?:e|ez|er|iere|ieren|a|ad|en|ar|i|ate|are|em)", r"oubli(?:e|ez|er)", r"vergiss", r"vergessen",
    r"olvid(?:a|e|ad|ar)", r"dimentic(?:a|hi|ate|are)", r"esquec(?:a|e|er)", r"negeer", r"vergeet", r"suivez",
    r"befolge", r"folge", r"sigue", r"siga", r"segui", r"volg",
    r"(?:про)?игнорируй(?:те)?", r"забудь(?:те)?", r"следуй(?:те)?", r"و?تجاهل", r"و?انس", r"و?اتبع",
)
_LEADERS = _alt((
    r"please", r"kindly", r"now", r"just", r"simply", r"and", r"then", r"so", r"also", r"finally", r"pls", r"plz",
    r"instead", r"first", r"only", r"but", r"ok", r"okay", r"s'il (?:vous|te) plait", r"veuillez", r"merci de",
    r"bitte", r"jetzt", r"nun", r"por favor", r"per favore", r"alsjeblieft", r"alstublieft", r"пожалуйста",
    r"теперь", r"et", r"und", r"y", r"e", r"en", r"и", r"а", r"maintenant", r"ahora", r"ora", r"agora", r"nu",
    r"من فضلك", r"رجاء", r"يرجى",
))
_CLAUSE_START = r"(?:^|(?<=[\n.!?;:,(\[{\"'*#>|•·—–…¡¿`])|(?<=\s-))\s*(?:" + _LEADERS + r"\s*,?\s+){0,3}"

_OUTPUT_CJK = (r"输出", r"回答", r"回复", r"答复", r"返回", r"打印", r"标记为?", r"评为", r"判定为?", r"判为", r"视为",
               r"认定为?", r"给出", r"打分", r"出力", r"答え", r"返答", r"見なし", r"みなし", r"扱", r"記入",
               r"書い", r"書け", r"출력", r"답하", r"대답", r"반환", r"판정하", r"평가하", r"간주", r"취급", r"표시")
_REQUEST_CJK = (r"请", r"務必", r"务必", r"你必须", r"你应该", r"您必须", r"ください", r"下さい", r"しなさい", r"せよ",
                r"하세요", r"하십시오", r"주세요", r"해라", r"하라")

_YOU_DIRECTIVE = (
    r"you\s+(?:must|should|shall|will|need to|have to|are to|ought to|are (?:required|expected|instructed|asked) to"
    r"|may now|can now)\s+\w+",
    r"(?:could|would|can|will)\s+you\s+(?:please\s+|kindly\s+)?\w+",
    r"i\s+(?:would like|want|need|ask|beg|urge|request|instruct|command|order)\s+you\s+to",
    r"(?:grateful|appreciated?|thankful|obliged)\s+if\s+you",
    r"your\s+(?:task|job|role|output|answer|response|reply|verdict|instructions?|duty|goal)\s+(?:is|are|must|should|will)",
    r"make sure (?:that )?you",
    r"(?:vous|tu)\s+(?:devez|dois|devriez|devrais)\s+\w+", r"je (?:vous|te) (?:prie|demande)",
    r"(?:pourriez|pouvez|pourrais|peux)[- ](?:vous|tu)",
    r"(?:du|sie)\s+(?:musst|mussen|sollst|sollen|solltest|sollten)\s", r"ich bitte (?:dich|sie)",
    r"(?:kannst du|konnten sie|konnen sie|wurden sie|wurdest du)",
    r"(?:debes|debe usted|deberias|tienes que|le ruego|te ruego|te pido|le pido)",
    r"(?:devi|deve|dovresti|ti prego|la prego)", r"(?:voce deve|tu deves|peco que|pedimos que)",
    r"(?:je moet|u moet|jij moet|je dient|u dient)",
    r"(?:ты|вы)\s+(?:должн\w+|обязан\w*)", r"(?:прошу|просим)\s+(?:тебя|вас)?",
    r"يجب عليك", r"عليك ان",
)
_MODAL_3RD = (
    r"should", r"must", r"shall", r"is to", r"are to", r"needs? to", r"has to", r"have to", r"ought to",
    r"is (?:asked|instructed|required|expected) to", r"may wish to", r"will want to",
    r"doi(?:t|vent)", r"devrai(?:t|ent)", r"soll(?:te|ten)?", r"muss", r"mussen", r"debe(?:ria|n)?", r"deve(?:rebbe)?",
    r"moet", r"zou moeten", r"dient", r"должен", r"должна", r"должны", r"следует", r"يجب",
)
_PASSIVE = (
    r"(?:should|must|shall|is to|are to|has to|have to|needs? to|to|will)\s+be\s+(?:treated|considered|regarded|marked"
    r"|rated|graded|scored|labell?ed|judged|classified|counted|evaluated|accepted|deemed|taken|seen)\s+as",
    r"(?:doit|doivent|devrait)\s+etre\s+(?:considere|traite|marque|evalue|note|juge|classe)e?s?\s+comme",
    r"(?:soll|sollte|muss)\s+als\s+\w+\s+(?:gelten|betrachtet|behandelt|bewertet|gewertet|markiert)",
    r"(?:debe|deberia)\s+(?:ser\s+)?(?:considerad|tratad|marcad|calificad|evaluad)[ao]s?\s+como",
    r"(?:deve|dovrebbe)\s+essere\s+(?:considerat|trattat|segnat|valutat)[aoie]\s+come",
    r"(?:deve|deveria)\s+ser\s+(?:considerad|tratad|marcad|avaliad)[ao]s?\s+como",
    r"(?:moet|dient)\s+(?:worden\s+)?(?:beschouwd|behandeld|beoordeeld|gemarkeerd)\s+als",
)
_VOCATIVE_LEAD = (
    r"dear", r"attention", r"attn", r"note to", r"notes? for", r"message (?:to|for)", r"memo to", r"reminder (?:to|for)",
    r"notice to", r"hey", r"hi", r"hello", r"to", r"for", r"cher", r"chere", r"a l'attention d[eu]", r"note (?:a|pour)",
    r"liebe[rs]?", r"sehr geehrte[rs]?", r"an (?:den|die)", r"hinweis (?:an|fur)", r"estimad[ao]", r"querid[ao]",
    r"nota para", r"atencion", r"gentile", r"caro", r"cara", r"nota per", r"prezad[ao]", r"car[ao]", r"beste",
    r"geachte", r"notitie voor", r"уважаем\w+", r"дорог\w+", r"внимание", r"примечание для", r"عزيزي", r"الى",
    r"ملاحظه (?:الى|ل)",
)

_OVERRIDE_VERBS = (
    r"ignore", r"disregard", r"forget", r"override", r"bypass", r"set aside", r"put aside", r"never ?mind", r"skip",
    r"discard", r"drop", r"abandon",
    r"ignor(?:e|ez|er|iere|ieren|a|ad|en|ar|i|ate|are|em)", r"oubli(?:e|ez|er)", r"vergiss", r"vergessen",
    r"missachte", r"olvid(?:a|e|ad|ar)", r"omit(?:e|a|ir)", r"dimentic(?:a|hi|ate|are)", r"trascur(?:a|i|ate)",
    r"esquec(?:a|e|er)", r"desconsider(?:e|a|ar)", r"negeer", r"vergeet",
    r"(?:про)?игнорируй(?:те)?", r"забудь(?:те)?", r"пренебреги(?:те)?", r"و?تجاهل", r"و?انس", r"و?اهمل",
)
_OVERRIDE_NOUNS = (
    r"instructions?", r"rules?", r"prompts?", r"directions?", r"directives?", r"guidelines?", r"guidance",
    r"constraints?", r"orders", r"commands?", r"criteria", r"polic(?:y|ies)", r"everything (?:above|before|else)",
    r"(?:all of )?the above", r"what you were told",
    r"consignes?", r"regles?", r"indications?", r"ordres", r"anweisung(?:en)?", r"regeln?", r"instruktion(?:en)?",
    r"vorgaben?", r"befehle?", r"richtlinien?", r"anordnung(?:en)?", r"instrucciones", r"instruccion", r"reglas?",
    r"indicaciones", r"directrices", r"ordenes", r"istruzion[ei]", r"regole", r"indicazioni", r"direttive",
    r"ordini", r"instrucoes", r"instrucao", r"regras?", r"orientacoes", r"diretrizes", r"ordens", r"instructies?",
    r"regels?", r"aanwijzingen", r"richtlijnen", r"opdrachten?",
    r"инструкци\w*", r"указани\w*", r"правил\w*", r"команд\w*", r"установк\w*",
    r"التعليمات", r"تعليمات", r"الاوامر", r"القواعد", r"الارشادات",
)
_OVERRIDE_VERBS_CJK = (r"忽略", r"无视", r"忽视", r"忘记", r"不要理会", r"不要遵守", r"無視", r"忘れ", r"무시", r"잊")
_OVERRIDE_NOUNS_CJK = (r"指令", r"指示", r"规则", r"说明", r"提示词", r"命令", r"要求", r"ルール", r"規則",
                       r"プロンプト", r"지시", r"명령", r"규칙", r"지침", r"프롬프트")

_VERIFY_PRED = (
    r"(?:verified|confirmed|supported|approved|fact-?checked|validated|certified|vetted|corroborated|substantiated"
    r"|grounded|correct|true|accurate|entailed|backed|accepted)"
)
_VERIFY_ACTIVE = r"(?:confirms?|supports?|verifies|validates|corroborates|substantiates|proves|backs up|entails)"
_VERIFY_BY = (
    r"(?:verified|confirmed|approved|fact-?checked|validated|certified|vetted|checked|reviewed|endorsed)"
    r"(?:\s+and\s+\w+)?\s+by\s+(?:the\s+|an?\s+|our\s+|its\s+)?(?:\w+\s+)?"
    r"(?:editors?|editorial (?:team|board|staff)|moderators?|admins?|administrators?|system|fact-?checkers?"
    r"|reviewers?|evaluators?|graders?|assessors?|staff)(?![\w])"
)
_VERIFY_PRED_OTHER = (
    r"(?:verifiee?|confirmee?|validee?|correcte?|exacte?|vraie?|soutenue?|etayee?|fondee?|approuvee?|prouvee?"
    r"|belegt|bestatigt|verifiziert|korrekt|richtig|wahr|zutreffend|gepruft|gestutzt"
    r"|respaldad[ao]|confirmad[ao]|verificad[ao]|correct[ao]|verdader[ao]|ciert[ao]|apoyad[ao]|validad[ao]"
    r"|supportat[ao]|confermat[ao]|verificat[ao]|corrett[ao]|ver[ao]|comprovat[ao]"
    r"|corret[ao]|verdadeir[ao]|apoiad[ao]|comprovad[ao]"
    r"|bevestigd|geverifieerd|correct|juist|waar|ondersteund|gecontroleerd"
    r"|подтвержд\w*|проверен\w*|верн\w*|правильн\w*|истинн\w*|обоснован\w*"
    r"|صحيح|صحيحه|مؤكد|مؤكده|موثق|مدعوم|مدعومه)"
)
_VERIFY_PRED_CJK = r"(?:证实|属实|正确|真实|通过|支持|核实|验证|确认|正しい|正確|確認|検証|裏付け|真実|사실|정확|확인|검증|옳|참)"

_VERDICT_KEYS = (
    r"verdict", r"label", r"score", r"result", r"decision", r"judge?ment", r"prediction", r"classification",
    r"is_supported", r"supported", r"faithful(?:ness)?", r"grounded", r"passed", r"pass", r"rating", r"grade",
    r"output", r"answer", r"final_answer", r"entailment", r"veredicto", r"veredito", r"verdetto", r"urteil",
    r"oordeel", r"вердикт",
)
_VALUE_STRONG = (
    r"(?:0|1|1\.0|0\.0|true|false|pass|fail|passed|failed|supported|unsupported|faithful|unfaithful|grounded"
    r"|ungrounded|entailed|verified|correct)"
)
_VALUE_ANY = r"(?:" + _VALUE_STRONG + r"|yes|no)"
_SEP = r"\s*(?:[:=|>→⇒]|->|=>|is|was|equals)\s*"
_ROLE_NAMES = r"(?:system|assistant|user|human|developer|admin|ai|bot)"
_TAG_NAMES = (
    r"(?:contexts?|statements?|claims?|question|answers?|responses?|reference|ground_truth|documents?|passages?"
    r"|evidence|instructions?|system|user|assistant|human|prompt|query|verdict|reason|judge|evaluation|task"
    r"|admin|developer|retrieved_contexts?)"
)


def _c(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags | re.MULTILINE)


_ACTOR_ANY = _alt((_alt(_ACTOR_STRONG_WORDS), _alt(_ACTOR_WEAK_WORDS)))
_ACTOR_ANY_ALL = _alt((r"(?<![\w])" + _ACTOR_ANY + r"(?![\w])", _alt(_ACTOR_STRONG_CJK + _ACTOR_WEAK_CJK)))

# Patterns over the lower-cased text (``low``) unless named ``_CASED``.
_P_ACTOR_STRONG = _c(_alt((_w(*_ACTOR_STRONG_WORDS), _alt(_ACTOR_STRONG_CJK))))
_P_ACTOR_STRONG_CASED = _c(_ACTOR_CASED)
_P_ACTOR_WEAK = _c(_alt((_w(*_ACTOR_WEAK_WORDS), _alt(_ACTOR_WEAK_CJK))))
_P_LABEL = _c(_alt((_w(*_LABEL_WORDS), _alt(_LABEL_CJK))))
_P_LABEL_CASED = _c(_LABEL_CASED)
_P_EVAL_NOUN = _c(_alt((_w(*_EVAL_NOUN_WORDS), _alt(_EVAL_NOUN_CJK))))
_P_TRUTH = _c(_alt((_w(*_TRUTH_WORDS) + _PREDICATIVE, _alt(_TRUTH_CJK))))
_P_DIGIT = _c(_DIGIT01)
_P_OBJECT_DEICTIC = _c(_alt((_w(*_OBJECT_DEICTIC_EN, *_OBJECT_DEICTIC_OTHER), _alt(_OBJECT_DEICTIC_CJK))))
_P_OBJECT_BARE = _c(_alt((_w(*_OBJECT_BARE_WORDS), _alt(_OBJECT_BARE_CJK))))

_P_IMPERATIVE_OUT = _c(_CLAUSE_START + r"(?P<verb>" + _alt(_OUTPUT_VERBS) + r")(?![\w'])")
_P_IMPERATIVE_OBEY = _c(_CLAUSE_START + r"(?P<verb>" + _alt(_OBEY_VERBS) + r")(?![\w'])")
_P_OUTPUT_CJK = _c(_alt(_OUTPUT_CJK))
_P_REQUEST_CJK = _c(_alt(_REQUEST_CJK))
_P_YOU = _c(_w(*_YOU_DIRECTIVE))
_P_THIRD = _c(_ACTOR_ANY_ALL + r"\s+(?:\w+\s+)?" + _alt(_MODAL_3RD) + r"(?![\w])")
_P_THIRD_STRONG = _c(
    _alt((_w(*_ACTOR_STRONG_WORDS), _alt(_ACTOR_STRONG_CJK))) + r"\s+(?:\w+\s+)?" + _alt(_MODAL_3RD) + r"(?![\w])"
)
_P_PASSIVE = _c(_w(*_PASSIVE))
_P_VOCATIVE = _c(
    _alt((
        # Dear reviewer, / Note to the AI / Attention language model
        r"(?:^|(?<=[\n.!?;:(\[{\"'*#>|•·—–`]))\s*(?:" + _alt(_VOCATIVE_LEAD)
        + r")\s+(?:the\s+|any\s+|all\s+|our\s+|whoever\s+|whatever\s+|an?\s+)?(?:\w+\s+){0,2}?(?P<a>"
        + _ACTOR_ANY_ALL + r"|ai|ia|ki|ии)(?![\w])",
        # Evaluator: ... / Assistant, ... at the start of a sentence or line
        r"(?:^|(?<=[\n(\[{\"'*>-]))\s*(?:the\s+|dear\s+)?(?P<b>" + _ACTOR_ANY_ALL + r"|ai|ia|ki|ии)\s*[,:!]",
    ))
)
_P_ROLE = _c(
    _alt((
        r"(?<![\w])you(?:'re|\s+are)\s+(?:now\s+|no longer\s+|henceforth\s+|from now on\s+)?(?:(?:a|an|the|my|our)\s+)?"
        r"(?:[\w-]+\s+){0,3}?" + _ACTOR_ANY_ALL,
        _CLAUSE_START + r"(?:act|behave|pretend|roleplay|role-play|respond|answer|operate|play)\s+(?:as|like|to be)\s+"
        r"(?:if\s+you\s+were\s+)?(?:(?:a|an|the)\s+)?(?:[\w-]+\s+){0,3}?" + _ACTOR_ANY_ALL,
        r"(?<![\w])as\s+(?:an?|the|your)\s+(?:[\w-]+\s+){0,3}?(?:" + _ACTOR_ANY_ALL + r"|ai)\s*,\s*you(?![\w])",
        r"(?<![\w])if\s+you\s+were\s+(?:an?|the)\s+(?:[\w-]+\s+){0,3}?" + _ACTOR_ANY_ALL,
        r"(?<![\w])stay in (?:character|role)",
        r"(?<![\w])(?:tu es|vous etes)\s+(?:maintenant\s+|desormais\s+|a present\s+)?(?:un|une|le|la|l')\s*"
        r"(?:[\w-]+\s+){0,3}?" + _ACTOR_ANY_ALL,
        r"(?<![\w])(?:du bist|sie sind)\s+(?:jetzt\s+|nun\s+|ab sofort\s+)?(?:ein|eine|der|die)\s+(?:[\w-]+\s+){0,3}?"
        + _ACTOR_ANY_ALL,
        r"(?<![\w])(?:eres|es usted|sei|voce e|tu es|je bent|jij bent|u bent)\s+(?:ahora\s+|ora\s+|adesso\s+|agora\s+"
        r"|nu\s+)?(?:un|una|il|la|l'|um|uma|o|a|een|de|het)\s*(?:[\w-]+\s+){0,3}?" + _ACTOR_ANY_ALL,
        r"(?<![\w])(?:теперь\s+)?(?:ты|вы)\s+(?:теперь\s+|сейчас\s+)?(?:[\w-]+\s+){0,3}?" + _ACTOR_ANY_ALL,
        r"(?:你|您)(?:现在)?(?:是|扮演)(?:一个|一名|一位)?.{0,8}?" + _ACTOR_ANY_ALL,
        r"(?:あなた|君|お前)は(?:今|これから)?.{0,10}?" + _ACTOR_ANY_ALL,
        r"(?:너는|당신은|넌)\s*(?:이제|지금)?\s*.{0,10}?" + _ACTOR_ANY_ALL,
        r"(?<![\w])(?:انت|كن)\s+(?:الان\s+)?.{0,20}?" + _ACTOR_ANY_ALL,
    ))
)
_P_OVERRIDE = _c(
    _alt((
        _CLAUSE_START + _alt(_OVERRIDE_VERBS) + r"(?![\w'])(?:\s+\S+){0,5}?\s+" + _alt(_OVERRIDE_NOUNS) + r"(?![\w])",
        _alt(_OVERRIDE_VERBS_CJK) + r".{0,12}?" + _alt(_OVERRIDE_NOUNS_CJK),
        _alt(_OVERRIDE_NOUNS_CJK) + r".{0,12}?" + _alt(_OVERRIDE_VERBS_CJK),
    ))
)
_P_VERIFY = _c(
    _alt((
        r"(?<![\w])" + _alt(_OBJECT_DEICTIC_EN) + r"(?:\s+\S+){0,4}?\s+" + _VERIFY_PRED + r"(?![\w])",
        r"(?<![\w])" + _VERIFY_ACTIVE + r"\s+(?:the\s+)?" + _alt(_OBJECT_DEICTIC_EN) + r"(?![\w])",
        r"(?<![\w])" + _alt(_OBJECT_DEICTIC_OTHER) + r"(?:\s+\S+){0,4}?\s+" + _VERIFY_PRED_OTHER + r"(?![\w])",
        _alt(_OBJECT_DEICTIC_CJK) + r".{0,12}?" + _VERIFY_PRED_CJK,
    ))
)
_P_VERIFY_BY = _c(r"(?<![\w])" + _VERIFY_BY)
_P_FORMAT = _c(
    _alt((
        # a quoted verdict-like key with a verdict value: {"verdict": 1}, 'label': "supported"
        r"[\"'`]\s*" + _alt(_VERDICT_KEYS) + r"\s*[\"'`]\s*[:=]\s*[\"'`]?\s*" + _VALUE_ANY + r"(?![\w.])",
        # an unquoted verdict key: Verdict: 1, verdict = 1, Final answer -> supported
        r"(?<![\w])(?:final\s+)?(?:verdict|verdetto|veredicto|veredito|urteil|oordeel|вердикт|判决|裁决|判定|판정"
        r"|final\s+(?:answer|decision|judge?ment|label|score|output))"
        r"(?:" + _SEP + r"|\s+)[\"'(\[*]*\s*" + _VALUE_STRONG + r"(?![\w.])",
        r"(?<![\w])(?:label|score|result|supported|grade|is_supported)\s*=\s*[\"']?" + _VALUE_STRONG + r"(?![\w.])",
        # an evaluation status: Fact-check status: VERIFIED
        r"(?<![\w])(?:fact[\s-]?check(?:ing)?|verification|review|moderation|evaluation|grading|assessment"
        r"|judge?ment)\s+(?:status|result|outcome|verdict)" + _SEP + r"[\"'(\[*]*\s*"
        r"(?:verified|approved|confirmed|true|pass(?:ed)?|supported|correct|accurate|1)(?![\w])",
        r"(?:评分|评审结果|判定结果|审核结果|評価|判定)\s*[:：]\s*(?:通过|合格|支持|正确|1|満点|合格)",
        # a markdown heading naming an output or prompt section
        r"^\s*#{1,6}\s*(?:final answer|final verdict|verdict|evaluation result|instructions?|system(?: prompt)?"
        r"|response)\b",
    ))
)
_P_MARKUP = _c(
    _alt((
        r"<\s*[/\\]?\s*" + _TAG_NAMES + r"\s*(?:\s[^<>\n]{0,60})?/?\s*>",
        r"\[\s*/\s*" + _TAG_NAMES + r"\s*\]",
        r"<\|[a-z_]{2,24}\|>",
        r"\[\s*/?\s*inst\s*\]",
        r"<<\s*/?\s*sys\s*>>",
        r"</s>",
    ))
)
_P_ROLE_PREFIX_CASED = _c(r"^\s*(?:SYSTEM|ASSISTANT|USER|HUMAN|DEVELOPER|ADMIN)\s*:")
_P_ROLE_PREFIX = _c(r"^\s*" + _ROLE_NAMES + r"\s*:|<!--")

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])|\n+")


# --------------------------------------------------------------------------------------
# Matching


@dataclass(frozen=True)
class _Cue:
    family: str
    start: int
    end: int


_REASONS = {
    "markup": "mimics the judge prompt's markup",
    "verdict_format": "mimics a verdict in the judge's output format",
    "override": "tells the judge to ignore its instructions",
    "role": "assigns the judge a role",
    "verification": "asserts that the statement has already been verified",
    "vocative": "is a message addressed to the evaluator",
}


def _finding(text: str, offsets: list[int], cue: str, families: tuple[str, ...], start: int, end: int,
             reason: str) -> AddressedFinding:
    first, last = offsets[start], offsets[end - 1] + 1 if end > start else offsets[start]
    return AddressedFinding(cue, families, text[first:last], first, last, reason)


def _structural(folded: str, low: str) -> tuple[str, int, int] | None:
    """A cue that decides alone, over the whole text (markup and formats may span lines)."""
    for cue, pattern, source in (
        ("markup", _P_MARKUP, low),
        ("markup", _P_ROLE_PREFIX_CASED, folded),
        ("verdict_format", _P_FORMAT, low),
    ):
        m = pattern.search(source)
        if m:
            return cue, m.start(), m.end()
    return None


def _segments(low: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for m in _SENTENCE_END.finditer(low):
        if m.start() > start:
            spans.append((start, m.start()))
        start = m.end()
    if start < len(low):
        spans.append((start, len(low)))
    return spans


def _imperatives(pattern: re.Pattern[str], folded: str, low: str, offset: int) -> list[_Cue]:
    """Clause-initial imperatives, except a capitalised verb before a capitalised word ("Mark Twain")."""
    cues = []
    for m in pattern.finditer(low):
        start, end = m.span("verb")
        after = folded[end:].lstrip(" ")
        if folded[start].isupper() and after[:1].isupper():
            continue
        cues.append(_Cue("imperative", start + offset, end + offset))
    return cues


def _pair(
    directives: list[_Cue], contents: list[_Cue], window: int = _WINDOW, after: bool = False
) -> tuple[_Cue, _Cue] | None:
    """The first directive with a content cue near it (only after it when ``after``)."""
    for directive in directives:
        for cue in contents:
            overlap = directive.start < cue.end and cue.start < directive.end
            if overlap or (after and cue.start < directive.end):
                continue
            if max(directive.start, cue.start) - min(directive.end, cue.end) <= window:
                return directive, cue
    return None


def _judge_segment(folded: str, low: str, offset: int) -> tuple[str, tuple[str, ...], int, int, str] | None:
    """The rule of the module docstring, applied to one sentence (offsets shifted by ``offset``)."""
    for cue, pattern in (("override", _P_OVERRIDE), ("role", _P_ROLE), ("verification", _P_VERIFY)):
        m = pattern.search(low)
        if m:
            return cue, (cue,), m.start() + offset, m.end() + offset, _REASONS[cue]

    def find(pattern: re.Pattern[str], family: str, cased: bool = False) -> list[_Cue]:
        return [_Cue(family, m.start() + offset, m.end() + offset) for m in pattern.finditer(folded if cased else low)]

    strong = [
        *find(_P_LABEL, "outcome label"),
        *find(_P_LABEL_CASED, "outcome label", cased=True),
        *find(_P_ACTOR_STRONG, "evaluator"),
        *find(_P_ACTOR_STRONG_CASED, "evaluator", cased=True),
        *find(_P_OBJECT_DEICTIC, "the statement judged"),
    ]
    score = find(_P_EVAL_NOUN, "score")
    judged = find(_P_OBJECT_BARE, "the statement judged")
    truth = find(_P_TRUTH, "truth value")
    digit = find(_P_DIGIT, "a verdict digit")
    weak = score + judged + truth + digit

    verify_by = find(_P_VERIFY_BY, "verification")
    found = _pair(verify_by, strong + judged)
    if found:
        return _result("verification", *found)

    for m in _P_VOCATIVE.finditer(low):
        group = "a" if m.group("a") else "b"
        name = slice(m.start(group), m.end(group))
        vocative = _Cue("vocative", m.start() + offset, m.end() + offset)
        if _P_ACTOR_STRONG.fullmatch(low[name]) or _P_ACTOR_STRONG_CASED.fullmatch(folded[name]):
            return "vocative", ("vocative",), vocative.start, vocative.end, _REASONS["vocative"]
        found = _pair([vocative], strong + weak)
        if found:
            return _result("instruction", *found)

    imperative = _imperatives(_P_IMPERATIVE_OUT, folded, low, offset)
    you = find(_P_YOU, "second person")
    passive = find(_P_PASSIVE, "passive instruction")
    output_cjk = find(_P_OUTPUT_CJK, "imperative")
    rules: tuple[tuple[list[_Cue], list[_Cue], int, bool], ...] = (
        (imperative, strong, _WINDOW, False),
        (imperative, weak, 60, True),
        (output_cjk, strong + weak, 30, False),
        (you, strong, _WINDOW, False),
        (you, score + judged, 60, True),
        (passive, strong + weak, 60, False),
        (find(_P_THIRD_STRONG, "instruction to the evaluator"), strong + weak, _WINDOW, False),
        (find(_P_THIRD, "instruction to the evaluator"), strong, _WINDOW, False),
        (_imperatives(_P_IMPERATIVE_OBEY, folded, low, offset), strong, _WINDOW, False),
        (find(_P_REQUEST_CJK, "request"), strong, 30, False),
        (find(_P_ROLE_PREFIX, "role prefix"), strong + score + digit, _WINDOW, False),
    )
    for directives, contents, window, after in rules:
        found = _pair(directives, contents, window, after)
        if found:
            return _result("instruction", *found)
    return None


def _result(cue: str, directive: _Cue, content: _Cue) -> tuple[str, tuple[str, ...], int, int, str]:
    if cue == "verification":
        reason = f"asserts that {content.family} has been verified by an evaluator"
    else:
        what = (
            "tells it what to output"
            if content.family in ("outcome label", "a verdict digit", "truth value", "score")
            else f"names {content.family}"
        )
        who = (
            "addresses the evaluator"
            if directive.family in ("vocative", "second person", "instruction to the evaluator")
            else "gives an instruction"
        )
        reason = f"{who} ({directive.family}) and {what}"
    families = (directive.family, content.family)
    return cue, families, min(directive.start, content.start), max(directive.end, content.end), reason


def addresses_judge(text: str) -> AddressedFinding | None:
    """Whether ``text`` is addressed to the judge rather than a claim about the world.

    Args:
        text: a statement, or one sentence of a context (longer texts are read sentence
            by sentence; any addressed sentence makes the text addressed).

    Returns:
        The first finding (which cue fired, where, and why), or ``None`` for an ordinary
        text. The rule and the cue families are described in the module docstring.
    """
    if not isinstance(text, str):
        raise TypeError(f"addresses_judge takes a str, got {type(text).__name__}")
    folded, low, offsets = _normalise(text)
    hit = _structural(folded, low)
    if hit is not None:
        cue, start, end = hit
        return _finding(text, offsets, cue, (cue,), start, end, _REASONS[cue])
    for start, end in _segments(low):
        found = _judge_segment(folded[start:end], low[start:end], start)
        if found is not None:
            cue, families, s, e, reason = found
            return _finding(text, offsets, cue, families, s, e, reason)
    return None
