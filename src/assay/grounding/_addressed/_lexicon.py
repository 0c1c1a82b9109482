"""The cue lexicons, as concepts in twelve languages, and the patterns compiled from them."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, cast

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
    r"evaluators?|graders?|assessors?|fact[- ]?checkers?|annotators?|raters?",
    r"(?:large )?language models?|llms?|chatbots?|verifiers?|(?:judge|judging|grading|scoring) models?",
    r"ai (?:judge|evaluator|grader|model|system|assistant|checker)s?",
    # fr
    r"evaluat(?:eur|rice)s?|correct(?:eur|rice)s?|examinat(?:eur|rice)s?|verificat(?:eur|rice)s?",
    r"modeles? de langage",
    # de
    r"bewerter(?:in|innen)?|prufer(?:in|innen)?|korrektor(?:in|en)?|faktenprufer(?:in)?",
    r"sprachmodell(?:e|s)?|gutachter(?:in)?",
    # es, pt, it
    r"evaluador(?:a|es|as)?|calificador(?:a|es|as)?|corrector(?:a|es|as)?|examinador(?:a|es|as)?",
    r"verificador(?:a|es|as)?|modelos? de lenguaje|avaliador(?:a|es|as)?|corretor(?:a|es|as)?",
    r"modelos? de linguagem|valutat(?:ore|rice|ori)|corrett(?:ore|rice|ori)|esaminat(?:ore|rice|ori)",
    r"modell[oi] linguistic[oi]",
    # nl
    r"beoordelaars?|examinatoren|examinator|taalmodel(?:len)?",
    # ru
    r"оценщи(?:к|ца|ки|ку|ка)|проверяющ(?:ий|ая|ему|его)|экзаменатор\w*|языков\w+ модел\w+",
    r"нейросет\w*",
    # ar
    r"المقيم|المصحح|نموذج اللغه|الذكاء الاصطناعي",
)
_ACTOR_STRONG_CJK = (
    r"评估者|评分员|评分者|评审员|评委|阅卷人|审核员|语言模型|人工智能|大模型",
    r"評価者|採点者|審査員|判定者|言語モデル|人工知能",
    r"평가자|채점자|심사위원|판정자|언어\s?모델|인공지능",
)
_ACTOR_WEAK_WORDS = (
    r"judges?|reviewers?|examiners?|moderators?|editors?|checkers?|system|models?",
    r"assistants?|bot",
    r"juges?|relecteurs?|systeme|assistante?s?|modeles?",
    r"richter(?:in)?|assistent(?:in|en)?|modells?",
    r"juez|jueces|revisor(?:a|es)?|sistema|asistente|modelo|giudice|revisore",
    r"assistente|juiz|modello",
    r"rechter|recensent|systeem|assistent",
    r"судь[яиею]|рецензент\w*|модератор\w*|систем[аеуы]|ассистент\w*|модел[ьи]",
    r"القاضي|المساعد|النظام|النموذج",
)
_ACTOR_WEAK_CJK = (r"裁判|法官|助手|系统|模型|アシスタント|システム|モデル", r"어시스턴트", r"시스템", r"모델", r"심판")
_ACTOR_CASED = r"(?<![\w])(?:AI|A\.I\.|IA|KI|ИИ|GPT(?:-\d)?|LLM)(?![\w])"
"""Case-sensitive: ``ai`` is an Italian article, ``ia`` and ``ki`` are common syllables."""

# The outcome. Strong: a verdict or a grounding label. Weak: score words, truth words.
_LABEL_WORDS = (
    r"verdicts?|(?:un)?supported|not supported|(?:un)?faithful|(?:un)?grounded|entailed",
    r"(?:not )?attributable",
    r"verdetto|veredicto|veredito|urteil|oordeel|вердикт\w*",
    r"etayee?|respaldad[ao]|supportat[ao]|ondersteund",
)
_LABEL_CJK = (r"判决", r"裁决", r"判定结果", r"판정")
_LABEL_CASED = r"(?<![\w])(?:PASS(?:ED)?|FAIL(?:ED)?|SUPPORTED|UNSUPPORTED)(?![\w])"
_EVAL_NOUN_WORDS = (
    r"scores?|grades?|ratings?|labels?|full marks|(?:highest|top|perfect|maximum) marks",
    r"evaluation|bewertung|punktzahl|punkte|calificacion|puntuacion|nota",
    r"puntaje|punteggio|voto|valutazione|pontuacao|avaliacao|cijfer|beoordeling",
    r"балл\w*|оценк\w*|рейтинг\w*|الدرجه|درجه|التقييم|العلامه",
)
_EVAL_NOUN_CJK = (r"分数|评分|得分|满分|打分|评级|点数|評価|スコア|満点", r"점수", r"만점", r"평가")
_TRUTH_WORDS = (
    r"true|correct|accurate|verified|confirmed|factual|valid|approved",
    r"vrai[es]?|correcte?s?|exacte?s?|verifiee?s?|confirmee?s?|validee?s?|fondee?s?",
    r"wahr|richtig|korrekt|zutreffend|belegt|bestatigt|verifiziert",
    r"verdader[ao]s?|ciert[ao]|correct[ao]s?|confirmad[ao]|verificad[ao]|valid[ao]",
    r"ver[ao]|corrett[ao]|confermat[ao]|verificat[ao]|verdadeir[ao]|corret[ao]",
    r"waar|juist|klopt|bevestigd|geverifieerd",
    r"верн\w*|правильн\w*|истинн\w*|подтвержд\w*|достоверн\w*",
    r"صحيح|صحيحه|مؤكد|مؤكده|مدعوم|مدعومه",
)
_TRUTH_CJK = (r"正确|属实|真实|已证实|证实|核实|通过|正しい|正確|真実", r"사실", r"정확", r"옳", r"참")
_PREDICATIVE = r"(?=\s*(?:[^\w\s]|$|(?:and|or|but|et|ou|und|oder|y|o|e|en|of|и|или)(?![\w])))"
"""A truth word counts as an output value only used predicatively ("say it is true."), not before a noun."""
_INDIRECT = re.compile(r"(?<![\w])(?:if|whether|si|ob|se|ли)(?![\w])")
"""An indirect question: a truth word after it is asked about, not asserted."""
_DIGIT01 = r"(?<![A-Za-z0-9.,/#$€£+-])[01](?:\.0)?(?![A-Za-z0-9%/-]|[.,]\d)"

# The object judged. Deictic: pointing at the text under evaluation. Bare: a definite mention.
_OBJ_NOUN_EN = r"(?:statement|claim|answer|response|assertion|sentence|output)"
_OBJECT_NEAR_EN = r"this (?:statement|claim|assertion|sentence)"
"""Near deixis: in news "this statement" is often a quote, so only an evaluation predicate counts with it."""
_OBJECT_POSITIONAL_EN = (
    r"this (?:answer|response|output)",
    rf"the (?:above|following|preceding|previous|given|present|foregoing|aforementioned|original) {_OBJ_NOUN_EN}",
    rf"the {_OBJ_NOUN_EN}s? (?:above|below|in question|under (?:review|evaluation|consideration)"
    rf"|being (?:evaluated|judged|checked|graded|verified|assessed)|to be (?:judged|checked|verified|evaluated))",
)
_OBJECT_DEICTIC_EN = (_OBJECT_NEAR_EN, *_OBJECT_POSITIONAL_EN)
_OBJ_NOUN_OTHER = (
    r"(?:declaration|affirmation|reponse|assertion|phrase)",  # fr
    r"(?:aussage|behauptung|antwort|satz)",  # de
    r"(?:afirmacion|declaracion|respuesta|aseveracion|frase|oracion)",  # es
    r"(?:affermazione|dichiarazione|risposta|frase)",  # it
    r"(?:afirmacao|declaracao|resposta|frase)",  # pt
    r"(?:bewering|uitspraak|antwoord|stelling|zin)",  # nl
    r"(?:утверждени\w*|заявлени\w*|ответ\w*|предложени\w*)",  # ru
    r"(?:العباره|الادعاء|الاجابه|البيان|الجمله)",  # ar
)
_NEAR_OTHER = r"(?:cette|ce|diese[rsmn]?|dies|esta|este|questa|questo|essa|esse|deze|dit|это|этот|эта|эту|هذه|هذا)"
_POSITIONAL_OTHER = (
    r"(?:la presente|obige[rnsm]?|vorstehende[rnsm]?|folgende[rnsm]?|dicha|dicho|dita|suddett[ao]|bovenstaande"
    r"|данн(?:ое|ый|ая|ую)|вышеуказанн\w+|приведенн\w+)"
)
_OBJECT_NEAR_OTHER = (
    rf"{_NEAR_OTHER} {_alt(_OBJ_NOUN_OTHER)}",
    rf"{_alt(_OBJ_NOUN_OTHER)} (?:هذه|هذا)",
)
_OBJECT_POSITIONAL_OTHER = (
    rf"{_POSITIONAL_OTHER} {_alt(_OBJ_NOUN_OTHER)}",
    rf"{_alt(_OBJ_NOUN_OTHER)} (?:ci-dessus|ci-dessous|precedente|suivante|oben|unten|anterior|siguiente|precedente"
    rf"|seguente|acima|seguinte|hierboven|hieronder|выше|ниже)",
)
_OBJECT_DEICTIC_OTHER = (*_OBJECT_NEAR_OTHER, *_OBJECT_POSITIONAL_OTHER)
_OBJECT_DEICTIC_CJK = (
    r"(?:该|此|这个|这条|上述|以上|本)(?:陈述|声明|主张|回答|答案|说法)",
    r"(?:この|上記の?|本)(?:主張|記述|回答|文|発言)",
    r"(?:이|위의|해당)\s?(?:진술|주장|답변|응답|문장)",
)
_OBJECT_BARE_WORDS = (
    r"(?:the|this|that|my|our) (?:statement|claim|answer|response|assertion|sentence|output|context|passage)s?",
    r"(?:la|cette) (?:declaration|affirmation|reponse|assertion)|(?:le|ce) contexte",
    r"(?:die|diese) (?:aussage|behauptung|antwort)|(?:der|den|dem|diesen) kontext",
    r"(?:la|esta) (?:afirmacion|declaracion|respuesta)|(?:el|este) contexto",
    r"(?:l'|la |questa )(?:affermazione|dichiarazione|risposta)|(?:il|questo) contesto",
    r"(?:a|esta|essa) (?:afirmacao|declaracao|resposta)|(?:o|este) contexto",
    r"(?:de|deze|dit|het) (?:bewering|uitspraak|antwoord|stelling|context)",
    r"утверждени\w*|заявлени\w*|контекст\w*|ответ(?:у|ом|е|ы)?",
    r"العباره|الادعاء|السياق|الاجابه",
)
_OBJECT_BARE_CJK = (r"陈述|声明|主张|上下文|回答|答案|主張|文脈|記述|진술", r"주장", r"문맥", r"답변", r"응답")

# Imperative verbs of output, judgement and obedience (second-person forms and the
# infinitives that follow "veuillez", "merci de"...). Matched only at the start of a clause.
_OUTPUT_VERBS = (
    # en
    r"output|answer|respond|reply|return|print|say|write|type|emit|produce",
    r"give|assign|award|set|mark|rate|grade|score|label|classify|judge",
    r"evaluate|assess|treat|consider|regard|deem|count|accept|approve|confirm",
    r"verify|declare|conclude|tell|flag|tag|put|choose|select|pick|rule",
    # fr
    r"repond(?:s|ez|re)|affich(?:e|ez|er)|ecri(?:s|vez|re)|renvo(?:ie|yez|yer)|retourn(?:e|ez|er)",
    r"donn(?:e|ez|er)|indiqu(?:e|ez|er)|marqu(?:e|ez|er)|notez|attribu(?:e|ez|er)",
    r"consider(?:e|ez|er)|trait(?:e|ez|er)|evalu(?:e|ez|er)|class(?:e|ez|er)|dites|dire",
    r"jug(?:e|ez|er)|valid(?:e|ez|er)|confirm(?:e|ez|er)|mett(?:ez|re)|mets",
    # de
    r"antworte[tn]?|gib|gebt?|geben|schreibe?n?|bewerte[tn]?|markiere[tn]?",
    r"betrachte[tn]?|behandle|behandeln|sage?n?|setze[tn]?|klassifiziere[tn]?",
    r"beurteile[tn]?|bestatige[tn]?|werte[tn]?|ausgeben",
    # es
    r"respond(?:e|a|ed|an|er)|contest(?:a|e|ar)|devuelv[ae]|devolver|escrib(?:e|a|ir)",
    r"imprim(?:e|a|ir)|marc(?:a|ar)|marque|califi(?:ca|que|car)|puntu(?:a|e|ar)",
    r"consider(?:a|ar)|trat(?:a|e|ar)|diga|dime|decir|asign(?:a|e|ar)|clasifi(?:ca|que|car)",
    r"evalu(?:a|ar)|confirm(?:a|ar)|valid(?:a|ar)|pon|ponga|indi(?:ca|que|car)",
    # it
    r"rispond(?:i|a|ete|ere)|scriv(?:i|a|ete|ere)|restituisc[ia]|stamp(?:a|i|are)|segn(?:a|i|are)",
    r"valut(?:a|i|are)|consider(?:i|are)|tratt(?:a|i|are)|classific(?:a|hi|are)|dica|dimmi",
    r"dai|dia|assegn(?:a|i|are)|conferm(?:a|i|are)|indic(?:a|hi|are)|metti",
    # pt
    r"respond(?:a|am)|escrev(?:a|e|er)|retorn(?:e|a|ar)|imprima|marqu(?:e|ar)|avali(?:e|a|ar)",
    r"consider(?:e|ar)|trat(?:e|ar)|classifiqu(?:e|ar)|diz|atribu(?:a|ir)|coloque|ponha",
    # nl
    r"antwoord|beantwoord|geef|schrijf|markeer|beoordeel|beschouw|behandel",
    r"classificeer|zeg|retourneer|noteer|bevestig|kies|zet",
    # ru
    r"ответь(?:те)?|отвечай(?:те)?|выведи(?:те)?|напиши(?:те)?|пиши(?:те)?|верни(?:те)?",
    r"отметь(?:те)?|оцени(?:те)?|поставь(?:те)?|считай(?:те)?|рассматривай(?:те)?",
    r"классифицируй(?:те)?|скажи(?:те)?|дай(?:те)?|присвой(?:те)?|подтверди(?:те)?",
    r"укажи(?:те)?|признай(?:те)?",
    # ar (with or without the conjunction و)
    r"و?اجب|و?اجيبي|و?اخرج|و?اطبع|و?اكتب|و?اعد|و?قيم|و?اعتبر|و?عامل|و?صنف",
    r"و?قل|و?اعط|و?ضع|و?اختر",
)
_OBEY_VERBS = (
    r"ignore|disregard|forget|override|bypass|obey|follow|comply|stay|pretend",
    r"act|behave|roleplay|role-play|trust|believe|remember",
    r"ignor(?:e|ez|er|iere|ieren|a|ad|en|ar|i|ate|are|em)|oubli(?:e|ez|er)|vergiss|vergessen",
    r"olvid(?:a|e|ad|ar)|dimentic(?:a|hi|ate|are)|esquec(?:a|e|er)|negeer|vergeet|suivez",
    r"befolge|folge|sigue|siga|segui|volg",
    r"(?:про)?игнорируй(?:те)?|забудь(?:те)?|следуй(?:те)?|و?تجاهل|و?انس|و?اتبع",
)
_LEADERS = _alt(
    (
        r"please|kindly|now|just|simply|and|then|so|also|finally|pls|plz",
        r"instead|first|only|but|ok|okay|s'il (?:vous|te) plait|veuillez|merci de",
        r"bitte|jetzt|nun|por favor|per favore|alsjeblieft|alstublieft|пожалуйста",
        r"теперь|et|und|y|e|en|и|а|maintenant|ahora|ora|agora|nu",
        r"من فضلك|رجاء|يرجى",
    )
)
_CLAUSE_START = r"(?:^|(?<=[\n.!?;:,(\[{\"'*#>|•·—–…¡¿`])|(?<=\s-))\s*(?:" + _LEADERS + r"\s*,?\s+){0,3}"

_OUTPUT_CJK = (
    r"输出|回答|回复|答复|返回|打印|标记为?|评为|判定为?|判为|视为",
    r"认定为?|给出|打分|出力|答え|返答|見なし|みなし|扱|記入",
    r"書い",
    r"書け",
    r"출력",
    r"답하",
    r"대답",
    r"반환",
    r"판정하",
    r"평가하",
    r"간주",
    r"취급",
    r"표시",
)
_REQUEST_CJK = (
    r"请|務必|务必|你必须|你应该|您必须|ください|下さい|しなさい|せよ",
    r"하세요",
    r"하십시오",
    r"주세요",
    r"해라",
    r"하라",
)

_YOU_DIRECTIVE = (
    r"you\s+(?:must|should|shall|will|need to|have to|are to|ought to|are (?:required|expected|instructed|asked) to"
    r"|may now|can now)\s+\w+",
    r"(?:could|would|can|will)\s+you\s+(?:please\s+|kindly\s+)?\w+",
    r"i\s+(?:would like|want|need|ask|beg|urge|request|instruct|command|order)\s+you\s+to",
    r"(?:grateful|appreciated?|thankful|obliged)\s+if\s+you",
    r"your\s+(?:task|job|role|output|answer|response|reply|verdict|instructions?|duty|goal)\s+(?:is|are|must|should|will)",
    r"make sure (?:that )?you",
    r"(?:vous|tu)\s+(?:devez|dois|devriez|devrais)\s+\w+|je (?:vous|te) (?:prie|demande)",
    r"(?:pourriez|pouvez|pourrais|peux)[- ](?:vous|tu)",
    r"(?:du|sie)\s+(?:musst|mussen|sollst|sollen|solltest|sollten)\s|ich bitte (?:dich|sie)",
    r"(?:kannst du|konnten sie|konnen sie|wurden sie|wurdest du)",
    r"(?:debes|debe usted|deberias|tienes que|le ruego|te ruego|te pido|le pido)",
    r"(?:devi|deve|dovresti|ti prego|la prego)|(?:voce deve|tu deves|peco que|pedimos que)",
    r"(?:je moet|u moet|jij moet|je dient|u dient)",
    r"(?:ты|вы)\s+(?:должн\w+|обязан\w*)|(?:прошу|просим)\s+(?:тебя|вас)?",
    r"يجب عليك|عليك ان",
)
_MODAL_3RD = (
    r"should|must|shall|is to|are to|needs? to|has to|have to|ought to",
    r"is (?:asked|instructed|required|expected) to|may wish to|will want to",
    r"doi(?:t|vent)|devrai(?:t|ent)|soll(?:te|ten)?|muss|mussen|debe(?:ria|n)?|deve(?:rebbe)?",
    r"moet|zou moeten|dient|должен|должна|должны|следует|يجب",
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
    r"dear|attention|attn|note to|notes? for|message (?:to|for)|memo to|reminder (?:to|for)",
    r"notice to|hey|hi|hello|to|for|cher|chere|a l'attention d[eu]|note (?:a|pour)",
    r"liebe[rs]?|sehr geehrte[rs]?|an (?:den|die)|hinweis (?:an|fur)|estimad[ao]|querid[ao]",
    r"nota para|atencion|gentile|caro|cara|nota per|prezad[ao]|car[ao]|beste",
    r"geachte|notitie voor|уважаем\w+|дорог\w+|внимание|примечание для|عزيزي|الي",
    r"ملاحظه (?:الي|ل)",
)

_OVERRIDE_VERBS = (
    r"ignore|disregard|forget|override|bypass|set aside|put aside|never ?mind|skip",
    r"discard|drop|abandon",
    r"ignor(?:e|ez|er|iere|ieren|a|ad|en|ar|i|ate|are|em)|oubli(?:e|ez|er)|vergiss|vergessen",
    r"missachte|olvid(?:a|e|ad|ar)|omit(?:e|a|ir)|dimentic(?:a|hi|ate|are)|trascur(?:a|i|ate)",
    r"esquec(?:a|e|er)|desconsider(?:e|a|ar)|negeer|vergeet",
    r"(?:про)?игнорируй(?:те)?|забудь(?:те)?|пренебреги(?:те)?|و?تجاهل|و?انس|و?اهمل",
)
_OVERRIDE_NOUNS = (
    r"instructions?|rules?|prompts?|directions?|directives?|guidelines?|guidance",
    r"constraints?|orders|commands?|criteria|polic(?:y|ies)|everything (?:above|before|else)",
    r"(?:all of )?the above|what you were told",
    r"consignes?|regles?|indications?|ordres|anweisung(?:en)?|regeln?|instruktion(?:en)?",
    r"vorgaben?|befehle?|richtlinien?|anordnung(?:en)?|instrucciones|instruccion|reglas?",
    r"indicaciones|directrices|ordenes|istruzion[ei]|regole|indicazioni|direttive",
    r"ordini|instrucoes|instrucao|regras?|orientacoes|diretrizes|ordens|instructies?",
    r"regels?|aanwijzingen|richtlijnen|opdrachten?",
    r"инструкци\w*|указани\w*|правил\w*|команд\w*|установк\w*",
    r"التعليمات|تعليمات|الاوامر|القواعد|الارشادات",
)
_OVERRIDE_VERBS_CJK = (r"忽略", r"无视", r"忽视", r"忘记", r"不要理会", r"不要遵守", r"無視", r"忘れ", r"무시", r"잊")
_OVERRIDE_NOUNS_CJK = (
    r"指令|指示|规则|说明|提示词|命令|要求|ルール|規則",
    r"プロンプト",
    r"지시",
    r"명령",
    r"규칙",
    r"지침",
    r"프롬프트",
)

_VERIFY_PRED_EVAL = r"(?:verified|supported|fact-?checked|validated|grounded|correct|true|accurate|entailed)"
"""Predicates of an evaluation's outcome."""
_VERIFY_PRED_NEWS = r"(?:confirmed|approved|certified|vetted|corroborated|substantiated|backed|accepted)"
"""Predicates that news also uses of a quoted statement ("this statement was confirmed by the ministry")."""
_VERIFY_ACTIVE = r"(?:confirms?|supports?|verifies|validates|corroborates|substantiates|proves|backs up|entails)"
_VERIFY_BY = (
    r"(?:verified|confirmed|approved|fact-?checked|validated|certified|vetted|checked|reviewed|endorsed)"
    r"(?:\s+and\s+\w+)?\s+by\s+(?:the\s+|an?\s+|our\s+|its\s+)?(?:\w+\s+)?"
    r"(?:editors?|editorial (?:team|board|staff)|moderators?|admins?|administrators?|system|fact-?checkers?"
    r"|reviewers?|evaluators?|graders?|assessors?|staff)(?![\w])"
)
_VERIFY_PRED_EVAL_OTHER = (
    r"(?:verifiee?|correcte?|exacte?|vraie?|soutenue?|etayee?|fondee?|prouvee?"
    r"|belegt|verifiziert|korrekt|richtig|wahr|zutreffend|gepruft|gestutzt"
    r"|respaldad[ao]|verificad[ao]|correct[ao]|verdader[ao]|ciert[ao]|apoyad[ao]"
    r"|supportat[ao]|verificat[ao]|corrett[ao]|ver[ao]|comprovat[ao]"
    r"|corret[ao]|verdadeir[ao]|apoiad[ao]|comprovad[ao]"
    r"|geverifieerd|correct|juist|waar|ondersteund|gecontroleerd"
    r"|проверен\w*|верн\w*|правильн\w*|истинн\w*|обоснован\w*"
    r"|صحيح|صحيحه|موثق|مدعوم|مدعومه)"
)
_VERIFY_PRED_NEWS_OTHER = (
    r"(?:confirmee?|validee?|approuvee?|bestatigt|confirmad[ao]|validad[ao]|confermat[ao]|bevestigd"
    r"|подтвержд\w*|مؤكد|مؤكده)"
)
_VERIFY_PRED_CJK = (
    r"(?:证实|属实|正确|真实|通过|支持|核实|验证|确认"
    r"|正しい|正確|確認|検証|裏付け|真実|사실|정확|확인|검증|옳|참)"
)

_VERDICT_KEYS = (
    r"verdict|label|score|result|decision|judge?ment|prediction|classification",
    r"is_supported|supported|faithful(?:ness)?|grounded|passed|pass|rating|grade",
    r"output|answer|final_answer|entailment|veredicto|veredito|verdetto|urteil",
    r"oordeel|вердикт",
)
_VALUE_STRONG = (
    r"(?:0|1|1\.0|0\.0|true|false|pass|fail|passed|failed|supported|unsupported|faithful|unfaithful|grounded"
    r"|ungrounded|entailed|verified|correct)"
)
_VALUE_ANY = r"(?:" + _VALUE_STRONG + r"|yes|no)"
_SEP = r"\s*(?:[:=|>→⇒]|->|=>)\s*"
_SEP_WORD = r"(?:\s+(?:is|was|equals|=)\s+|\s+)"
"""After "is", "was" or a bare space only a digit is a verdict ("the verdict is 1", not "was supported by")."""
_VALUE_DIGIT = r"(?:0|1|1\.0|0\.0)"
_ROLE_NAMES = r"(?:system|assistant|user|human|developer|admin|ai|bot)"
_TAG_NAMES = (
    r"(?:contexts?|statements?|claims?|question|answers?|responses?|reference|ground_truth|documents?|passages?"
    r"|evidence|instructions?|system|user|assistant|human|prompt|query|verdict|reason|judge|evaluation|task"
    r"|admin|developer|retrieved_contexts?)"
)


class _Compiled:
    """A pattern compiled at its first use rather than at import.

    Compiling these lexicons took 0.2-0.3 s of every process that imports assay (a Zen 1),
    a CLI call that judges nothing included. The first use binds the compiled pattern's
    methods to the object, so later calls cost what the pattern's own do.
    """

    def __init__(self, pattern: str, flags: int) -> None:
        self._source = (pattern, flags)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_source":  # copy and pickle probe a bare object: no recursion
            raise AttributeError(name)
        compiled = re.compile(*self._source)
        for method in ("search", "match", "fullmatch", "finditer", "findall", "sub"):
            setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)


def _c(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return cast("re.Pattern[str]", _Compiled(pattern, flags | re.MULTILINE))


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
_P_THIRD = _c(_ACTOR_ANY_ALL + r"\s+(?:\w+\s+){0,3}?" + _alt(_MODAL_3RD) + r"(?![\w])")
_P_THIRD_STRONG = _c(
    _alt((_w(*_ACTOR_STRONG_WORDS), _alt(_ACTOR_STRONG_CJK))) + r"\s+(?:\w+\s+){0,3}?" + _alt(_MODAL_3RD) + r"(?![\w])"
)
_P_PASSIVE = _c(_w(*_PASSIVE))
_P_VOCATIVE = _c(
    _alt(
        (
            # Dear reviewer, / Note to the AI / Attention language model
            r"(?:^|(?<=[\n.!?;:(\[{\"'*#>|•·—–`]))\s*(?:"
            + _alt(_VOCATIVE_LEAD)
            + r")\s+(?:the\s+|any\s+|all\s+|our\s+|whoever\s+|whatever\s+|an?\s+)?(?:\w+\s+){0,2}?(?P<a>"
            + _ACTOR_ANY_ALL
            + r"|ai|ia|ki|ии)(?![\w])",
            # Evaluator: ... / Assistant, ... at the start of a sentence or line
            r"(?:^|(?<=[\n(\[{\"'*>-]))\s*(?:the\s+|dear\s+)?(?P<b>" + _ACTOR_ANY_ALL + r"|ai|ia|ki|ии)\s*[,:!]",
        )
    )
)
_FEW = r"(?:[\w-]+\s+){0,3}?"
"""Up to three words (adjectives: "a lenient, fair judge")."""
_ROLE_FORMS = (
    r"(?<![\w])you(?:'re|\s+are)\s+(?:now\s+|no longer\s+|henceforth\s+|from now on\s+)?"
    r"(?:(?:a|an|the|my|our)\s+)?" + _FEW + _ACTOR_ANY_ALL,
    _CLAUSE_START + r"(?:act|behave|pretend|roleplay|role-play|respond|answer|operate|play)\s+(?:as|like|to be)\s+"
    r"(?:if\s+you\s+were\s+)?(?:(?:a|an|the)\s+)?" + _FEW + _ACTOR_ANY_ALL,
    r"(?<![\w])as\s+(?:an?|the|your)\s+" + _FEW + r"(?:" + _ACTOR_ANY_ALL + r"|ai)\s*,\s*you(?![\w])",
    r"(?<![\w])if\s+you\s+were\s+(?:an?|the)\s+" + _FEW + _ACTOR_ANY_ALL,
    r"(?<![\w])stay in (?:character|role)",
    r"(?<![\w])(?:tu es|vous etes)\s+(?:maintenant\s+|desormais\s+|a present\s+)?(?:un|une|le|la|l')\s*"
    + _FEW
    + _ACTOR_ANY_ALL,
    r"(?<![\w])(?:du bist|sie sind)\s+(?:jetzt\s+|nun\s+|ab sofort\s+)?(?:ein|eine|der|die)\s+" + _FEW + _ACTOR_ANY_ALL,
    r"(?<![\w])(?:eres|es usted|sei|voce e|tu es|je bent|jij bent|u bent)\s+"
    r"(?:ahora\s+|ora\s+|adesso\s+|agora\s+|nu\s+)?(?:un|una|il|la|l'|um|uma|o|a|een|de|het)\s*"
    + _FEW
    + _ACTOR_ANY_ALL,
    r"(?<![\w])(?:теперь\s+)?(?:ты|вы)\s+(?:теперь\s+|сейчас\s+)?" + _FEW + _ACTOR_ANY_ALL,
    r"(?:你|您)(?:现在)?(?:是|扮演)(?:一个|一名|一位)?.{0,8}?" + _ACTOR_ANY_ALL,
    r"(?:あなた|君|お前)は(?:今|これから)?.{0,10}?" + _ACTOR_ANY_ALL,
    r"(?:너는|당신은|넌)\s*(?:이제|지금)?\s*.{0,10}?" + _ACTOR_ANY_ALL,
    r"(?<![\w])(?:انت|كن)\s+(?:الان\s+)?.{0,20}?" + _ACTOR_ANY_ALL,
)
_P_ROLE = _c(_alt(_ROLE_FORMS))
_P_OVERRIDE = _c(
    _alt(
        (
            _CLAUSE_START
            + _alt(_OVERRIDE_VERBS)
            + r"(?![\w'])(?:\s+\S+){0,5}?\s+"
            + _alt(_OVERRIDE_NOUNS)
            + r"(?![\w])",
            _alt(_OVERRIDE_VERBS_CJK) + r".{0,12}?" + _alt(_OVERRIDE_NOUNS_CJK),
            _alt(_OVERRIDE_NOUNS_CJK) + r".{0,12}?" + _alt(_OVERRIDE_VERBS_CJK),
        )
    )
)
_THEN = r"(?:\s+\S+){0,4}?\s+[\"'“”‘’*_]*"
"""Up to four words, then the predicate, possibly quoted or emphasised ("is 'supported'", "is **true**")."""
_P_VERIFY = _c(
    _alt(
        (
            r"(?<![\w])" + _OBJECT_NEAR_EN + _THEN + _VERIFY_PRED_EVAL + r"(?![\w])",
            r"(?<![\w])"
            + _alt(_OBJECT_POSITIONAL_EN)
            + _THEN
            + _alt((_VERIFY_PRED_EVAL, _VERIFY_PRED_NEWS))
            + r"(?![\w])",
            r"(?<![\w])" + _VERIFY_ACTIVE + r"\s+(?:the\s+)?" + _alt(_OBJECT_DEICTIC_EN) + r"(?![\w])",
            # "The statement is supported." A grounding label, said of the object, ending the clause
            r"(?<![\w])(?:the|this) (?:statement|claim|answer|response|assertion)s? (?:is|are|was|has been|seems"
            r"|appears)(?: (?:fully|clearly|entirely|well))? (?:un)?(?:supported|grounded|faithful|entailed)"
            r"(?=\s*(?:[.!;:)\"'\]]|$))",
            r"(?<![\w])" + _alt(_OBJECT_NEAR_OTHER) + _THEN + _VERIFY_PRED_EVAL_OTHER + r"(?![\w])",
            r"(?<![\w])"
            + _alt(_OBJECT_POSITIONAL_OTHER)
            + _THEN
            + _alt((_VERIFY_PRED_EVAL_OTHER, _VERIFY_PRED_NEWS_OTHER))
            + r"(?![\w])",
            _alt(_OBJECT_DEICTIC_CJK) + r".{0,12}?" + _VERIFY_PRED_CJK,
        )
    )
)
_P_VERIFY_BY = _c(r"(?<![\w])" + _VERIFY_BY)
_P_FORMAT = _c(
    _alt(
        (
            # a quoted verdict-like key with a verdict value: {"verdict": 1}, 'label': "supported"
            r"[\"'`]\s*" + _alt(_VERDICT_KEYS) + r"\s*[\"'`]\s*[:=]\s*[\"'`]?\s*" + _VALUE_ANY + r"(?![\w]|\.\d)",
            # an unquoted verdict key: Verdict: 1, verdict = 1, Final answer -> supported
            r"(?<![\w])(?:final\s+)?(?:verdict|verdetto|veredicto|veredito|urteil|oordeel|вердикт|判决|裁决|判定|판정"
            r"|final\s+(?:answer|decision|judge?ment|label|score|output))"
            r"(?:"
            + _SEP
            + r"[\"'(\[*]*\s*"
            + _VALUE_STRONG
            + r"|"
            + _SEP_WORD
            + r"[\"'(\[*]*"
            + _VALUE_DIGIT
            + r")(?![\w]|\.\d)",
            r"(?<![\w])(?:label|score|result|supported|grade|is_supported)\s*=\s*[\"']?"
            + _VALUE_STRONG
            + r"(?![\w]|\.\d)",
            # an evaluation status: Fact-check status: VERIFIED
            r"(?<![\w])(?:fact[\s-]?check(?:ing)?|verification|review|moderation|evaluation|grading|assessment"
            r"|judge?ment)\s+(?:status|result|outcome|verdict)" + _SEP + r"[\"'(\[*]*\s*"
            r"(?:verified|approved|confirmed|true|pass(?:ed)?|supported|correct|accurate|1)(?![\w])",
            r"(?:评分|评审结果|判定结果|审核结果|評価|判定)\s*[:：]\s*(?:通过|合格|支持|正确|1|満点|合格)",
            # a markdown heading naming an output or prompt section
            r"^\s*#{1,6}\s*(?:final answer|final verdict|verdict|evaluation result|instructions?|system(?: prompt)?"
            r"|response)\b",
        )
    )
)
_P_MARKUP = _c(
    _alt(
        (
            r"<\s*[/\\]?\s*" + _TAG_NAMES + r"\s*(?:\s[^<>\n]{0,60})?/?\s*>",
            r"\[\s*/\s*" + _TAG_NAMES + r"\s*\]",
            r"<\|[a-z_]{2,24}\|>",
            r"\[\s*/?\s*inst\s*\]",
            r"<<\s*/?\s*sys\s*>>",
            r"</s>",
        )
    )
)
_P_ROLE_PREFIX_CASED = _c(r"^\s*(?:SYSTEM|ASSISTANT|USER|HUMAN|DEVELOPER|ADMIN)\s*:")
_P_ROLE_PREFIX = _c(r"^\s*" + _ROLE_NAMES + r"\s*:|<!--")

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])|\n+")
