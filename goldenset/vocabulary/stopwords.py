"""Stopword lists. Plain Python: no Django import.

Two lists, on purpose: they serve different callers and differ in 18 words, so merging them would change
either the content terms (quality gate, heuristic judge, extractive answers, template questions) or the
starter set's questions.

- CONTENT_STOPWORDS: what goldenset.lexical drops from content terms. It keeps the words that change what a
  question asks (direction particles "up", "out", "before"; quantity words "more", "few"; numbers "one",
  "two") and drops more function words, contraction fragments and fillers.
- SAMPLE_STOPWORDS: the short list goldenset.sample skips when it picks a page's distinctive words for a
  starter question. It also skips direction and quantity words, "use"/"used" and "one" to "three", which
  make poor question terms.
"""

from __future__ import annotations

__all__ = ["CONTENT_STOPWORDS", "SAMPLE_STOPWORDS"]


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# English function words, question words, auxiliaries, pronouns, the fragments contractions leave after
# tokenizing ("don't" -> "don", "t"; "we'll" -> "we", "ll") and a few fillers ("basically", "approximately").
# Deliberately NOT here, because they change what a question asks: quantity and comparison words (many,
# much, more, most, less, least, few, first, last), adjectives of "how ..." questions (long, old, far, tall)
# and direction particles (up, down, out, off, over, under, above, below, before, after). Negations (not, no,
# never, without) ARE here: as terms they would make "not refundable" miss a page's "non-refundable";
# goldenset.quality tracks negation in questions itself. "won" (from "won't") also drops the verb "won".
CONTENT_STOPWORDS: frozenset[str] = _word_set(
    """
    a an the and or but nor if then else so than that this these those there here
    of in on at to from by for with about against between into onto through during within without across
    along among amongst around toward towards upon via as per like unlike
    is are was were be been being am do does did doing done have has had having
    can could should would will shall may might must ought
    what which who whom whose when where why how whatever whichever whoever whomever whenever wherever
    i me my mine myself we us our ours ourselves you your yours yourself yourselves
    he him his himself she her hers herself it its itself they them their theirs themselves
    not no never none non cannot
    only own same such too very just also each every all any both either neither some other others another
    again further once ever yet still already now
    while whereas whether although though because since until unless however therefore thus hence
    s t d ll m re ve don doesn didn isn aren wasn weren hasn haven hadn won wouldn shouldn couldn mustn
    needn shan ain
    yes yeah ok okay please etc eg ie vs
    actually basically generally typically usually simply really indeed certainly approximately roughly
    """
)

# Words too common to make a question distinctive (a short English list; the starter set skips digits-only
# tokens too).
SAMPLE_STOPWORDS: frozenset[str] = _word_set(
    """
    a about above after again against all am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her
    here hers him his how i if in into is it its itself just me more most my no nor not now of off on once
    only or other our out over own same she should so some such than that the their them then there these
    they this those through to too under until up very was we were what when where which while who whom why
    will with would you your also may used use one two three s t
    """
)
