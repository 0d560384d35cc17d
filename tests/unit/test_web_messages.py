"""Every problem code the API can return has a human sentence for the pages."""

from onsale.kernel.problems import TITLES
from onsale.web.messages import FALLBACK, SENTENCES, sentence


def test_every_problem_code_has_a_sentence() -> None:
    assert set(TITLES) - set(SENTENCES) == set()
    assert set(SENTENCES) - set(TITLES) == set(), "sentences for codes the API never returns"


def test_sentences_are_sentences_not_codes() -> None:
    for code, text in SENTENCES.items():
        assert text[0].isupper() and text.endswith("."), code
        assert "_" not in text and "{" not in text, code
    assert sentence("no_such_code") == FALLBACK and sentence(None) == FALLBACK
