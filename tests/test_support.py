"""The support test: word weights, names spelled out, codes, negation, titles."""

from __future__ import annotations

import json

from bot.answer.verify import support
from bot.answer.verify.claims import verify_claims
from bot.models import Evidence
from kb_index import ChunkResult
from kb_index.impacts import idf_table


def supported(claim: str, passage: str, **kwargs) -> bool:
    return support.assess(claim, [passage], **kwargs).supported


# ------------------------------------------------------------------ word weights


def test_a_rare_word_missing_outweighs_the_common_ones_found():
    claim = "Pyridostatin induces double-strand breaks in tumour cells"
    passage = "Camptothecin induces double-strand breaks in tumour cells."
    assert supported(claim, passage)  # uniform weights: six words of seven
    rare = {"pyridostatin": 30.0}
    assert not supported(claim, passage, idf=lambda t: rare.get(t, 1.0))
    assert supported(claim, passage.replace("Camptothecin", "Pyridostatin"), idf=lambda t: rare.get(t, 1.0))


def test_weigher_from_a_table_gives_unknown_words_the_highest_weight():
    weigh = support.weigher({"cell": 0.5, "pyridostatin": 7.0})
    assert weigh("cell") == 0.5 and weigh("neverseen") == 7.0
    assert support.weigher(None)("anything") == 1.0
    table = idf_table({"cell": 900, "rare": 1}, 1000)
    assert table["rare"] > table["cell"] > 0


def test_verify_claims_takes_the_table():
    ev = _evidence("Camptothecin induces double-strand breaks in tumour cells.")
    draft = json.dumps({"claims": [{"text": "Pyridostatin induces double-strand breaks in tumour cells",
                                    "evidence_ids": ["E1"]}]})
    assert verify_claims(draft, [ev]).ok
    assert not verify_claims(draft, [ev], idf={"pyridostatin": 30.0, "induc": 1.0, "doubl": 1.0, "strand": 1.0,
                                               "break": 1.0, "tumour": 1.0, "cell": 1.0}).ok


# ------------------------------------------------------------------ names and codes


def test_an_abbreviation_spelled_out_in_the_source_counts_as_named():
    passage = "Cholesterol loading induced KLF4 in vascular smooth muscle cells of mice."
    assert supported("Cholesterol loading induces KLF4 in VSMCs", passage)
    assert not supported("Cholesterol loading induces KLF4 in VECs", passage.replace("smooth muscle", "adipose"))


def test_an_abbreviation_the_claim_defines_itself_need_not_be_in_the_source():
    passage = "Increased diastolic blood pressure was associated with abdominal aortic aneurysm."
    assert supported("Increased diastolic blood pressure (DBP) is associated with aortic aneurysm", passage)


def test_a_name_may_begin_a_longer_word_but_not_a_longer_code():
    assert supported("GABA neurons degenerate in these mice", "GABAergic neurons degenerate in these mice.")
    assert not supported("CD4 cells expand in these mice", "CD40 cells expand in these mice.")


def test_codes_match_across_hyphens_and_with_their_decimals():
    assert supported("Ly6C high monocytes are more inflammatory", "Ly-6C high monocytes were more inflammatory.")
    assert supported("Kir7.1 modulates MC4R signalling", "MC4R signalling is modulated by Kir7.1 in neurons.")
    assert not supported("Kir7.1 modulates MC4R signalling", "MC4R signalling is modulated by Kir6.2 in neurons.")


# ------------------------------------------------------------------ negation


def test_a_negated_claim_needs_a_negation_in_its_supporting_sentences():
    claim = "Charcoal does not reduce mortality in paraquat poisoning"
    assert not supported(claim, "Charcoal reduced mortality in paraquat poisoning.")
    assert supported(claim, "Charcoal did not reduce mortality in paraquat poisoning.")
    assert supported(claim, "Mortality in paraquat poisoning was similar with and without charcoal.")


def test_negation_cues_are_per_language():
    assert support.negates("Bone marrow cells don't contribute", "en")
    assert not support.negates("Vasodilation is mediated by NO", "en")  # nitric oxide
    assert support.negates("Teilzeit ist nicht möglich", "de")
    assert not support.negates("Teilzeit ist möglich", "de")


# ------------------------------------------------------------------ titles


def _evidence(text: str, title: str = "Test Doc") -> Evidence:
    chunk = ChunkResult(chunk_id="x#0", entry_id="doc-1", section="Body", text=text, title=title)
    return Evidence(block=1, pointer_id="E1", evidence_id="e1f8e4c2a0001", chunk=chunk)


def test_the_block_title_counts_as_one_of_its_sentences():
    draft = json.dumps({"claims": [{"text": "Partial retirement is possible from the age of 55",
                                    "evidence_ids": ["E1"]}]})
    assert verify_claims(draft, [_evidence("It is possible from the age of 55.", title="Partial retirement")]).ok
