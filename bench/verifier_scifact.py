"""SciFact verifier benchmark: does the claims verifier tell a claim's source from others?

Claims-mode answers, each one claim citing one abstract as E1, go through the
real verifier (bot.answer.verify.claims.verify_claims); "supported" means the claim
verified. The sets, from the SciFact claims of one split:

  (a)  a SUPPORT claim citing its gold abstract (one pair per gold abstract);
  (b)  the same claim citing the best-ranked abstract that is not gold (citebot's
       own retriever over the whole corpus): related, but not the source - the
       misattribution a model really makes;
  (b') the same claim citing a random non-gold abstract (fixed seed);
  (c)  a SUPPORT claim that contains a number, citing its gold abstract, with
       one number changed to a value the abstract does not state;
  CONTRADICT: a CONTRADICT claim citing its gold abstract (a lexical verifier
       cannot see that the source says the opposite; reported as is).

Printed: precision/recall/F1 of "supported" over (a)+(b) and over (a)+(b'),
the share of (c) caught, the share of CONTRADICT accepted, and the set sizes.

With no word-support test left in the checks (whether a claim says what its
source says is the entailment judge's: bench/judge_scifact.py), the checks accept
every claim whose numbers its abstract states: (b), (b') and CONTRADICT measure
how little the checks alone can tell, and (c) what the number check catches.

Citations mode: the same claims as one answer sentence citing the abstract
("<claim> [d123].") through bot.answer.verify.citations.verify_citations: how many
correct sentences it rejects (false failures), how many changed numbers it
catches, how many contradictions get through.

    python bench/verifier_scifact.py [--data DIR] [--split dev|train]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bot.answer.prompt import evidence_id
from bot.answer.verify.citations import verify_citations
from bot.answer.verify.claims import verify_claims
from bot.answer.verify.numbers import source_values
from bot.models import Evidence
from kb_index import ChunkResult, Retriever, build_index

try:
    from bench.retrieval_scifact import DEFAULT_DATA, write_kb
except ImportError:  # run as a script: bench/ itself is on sys.path
    from retrieval_scifact import DEFAULT_DATA, write_kb  # type: ignore[no-redef]

SEED = 13
HARD_NEGATIVE_DEPTH = 20  # retrieved abstracts searched for the best non-gold one


@dataclass
class Case:
    claim: str
    doc: str  # corpus _id of the cited abstract


@dataclass
class Sets:
    gold: list[Case] = field(default_factory=list)  # (a)
    hard: list[Case] = field(default_factory=list)  # (b)
    random: list[Case] = field(default_factory=list)  # (b')
    changed: list[Case] = field(default_factory=list)  # (c)
    changed_from: list[int] = field(default_factory=list)  # (c): index of its unchanged pair in `gold`
    contradict: list[Case] = field(default_factory=list)
    numeric_claims: int = 0  # (a) pairs whose claim has a number
    unchangeable: int = 0  # of those, no change possible (should be 0)


def load_corpus(data: Path) -> dict[str, dict]:
    with open(data / "corpus.jsonl") as fh:
        return {d["_id"]: d for d in map(json.loads, fh)}


def load_claims(data: Path, split: str) -> list[dict]:
    with open(data / "claims" / f"claims_{split}.jsonl") as fh:
        return [json.loads(line) for line in fh]


def labelled_docs(claim: dict, label: str) -> list[str]:
    return [doc for doc, sets in claim["evidence"].items() if any(s["label"] == label for s in sets)]


# ----------------------------------------------------------------- (c): one number changed

# Numbers as the verifier reads them: not glued to a word ("CD4", "p53" are names).
_NUMBER = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)?(?![\w.,]*\w)")


def _bumped(raw: str, step: int) -> str:
    """raw with its last digit position raised by `step`: 12 -> 13, 0.45 -> 0.46, 2.5 -> 2.6."""
    if "." in raw or "," in raw:
        sep = "." if "." in raw else ","
        head, tail = raw.split(sep)
        scaled = int(head + tail) + step
        digits = str(scaled).rjust(len(tail) + 1, "0")
        return f"{digits[: -len(tail)]}{sep}{digits[-len(tail):]}"
    return str(int(raw) + step)


def change_number(claim: str, abstract: str) -> str | None:
    """The claim with its first number changed to a value the abstract does not state."""
    stated = source_values([abstract])
    for m in _NUMBER.finditer(claim):
        for step in range(1, 50):
            new = _bumped(m.group(0), step)
            changed = claim[: m.start()] + new + claim[m.end() :]
            if not source_values([new]) & stated:
                return changed
    return None


def has_number(claim: str) -> bool:
    return bool(_NUMBER.search(claim))


# ----------------------------------------------------------------- building the sets


def build_kb_index(data: Path, root: Path) -> Path:
    """The corpus as a citebot knowledge base, indexed as `citebot index` would."""
    kb_dir, index_dir = root / "kb", root / "index"
    kb_dir.mkdir()
    write_kb(data, kb_dir)
    build_index(kb_dir, index_dir, language="en")
    return index_dir


def hard_negatives(claims: list[dict], corpus: dict[str, dict], retriever: Retriever) -> dict[int, str]:
    """Claim id -> best-ranked abstract that is neither gold nor cited, by citebot's retriever."""
    out: dict[int, str] = {}
    for c in claims:
        exclude = set(c["evidence"]) | {str(d) for d in c.get("cited_doc_ids", [])}
        hits = retriever.search(c["claim"], k=HARD_NEGATIVE_DEPTH, expand=False)
        for hit in hits:
            doc = hit.entry_id.removeprefix("d")
            if doc not in exclude and doc in corpus:
                out[c["id"]] = doc
                break
    return out


def build_sets(claims: list[dict], corpus: dict[str, dict], retriever: Retriever) -> Sets:
    rng = random.Random(SEED)
    doc_ids = sorted(corpus)
    supporting = [c for c in claims if labelled_docs(c, "SUPPORT")]
    hard = hard_negatives(supporting, corpus, retriever)
    sets = Sets()
    for c in claims:
        for doc in labelled_docs(c, "CONTRADICT"):
            sets.contradict.append(Case(c["claim"], doc))
    for c in supporting:
        exclude = set(c["evidence"]) | {str(d) for d in c.get("cited_doc_ids", [])}
        for doc in labelled_docs(c, "SUPPORT"):
            sets.gold.append(Case(c["claim"], doc))
            if has_number(c["claim"]):
                sets.numeric_claims += 1
                changed = change_number(c["claim"], abstract_text(corpus[doc]))
                if changed is None:
                    sets.unchangeable += 1
                else:
                    sets.changed.append(Case(changed, doc))
                    sets.changed_from.append(len(sets.gold) - 1)
        if c["id"] in hard:
            sets.hard.append(Case(c["claim"], hard[c["id"]]))
        while True:
            doc = rng.choice(doc_ids)
            if doc not in exclude:
                sets.random.append(Case(c["claim"], doc))
                break
    return sets


def abstract_text(doc: dict) -> str:
    return doc["text"].replace("\n## ", "\n")


# ----------------------------------------------------------------- verifying


def evidence_for(doc: dict) -> list[Evidence]:
    chunk = ChunkResult(
        chunk_id=f"d{doc['_id']}#0", entry_id=f"d{doc['_id']}", section="Abstract",
        title=doc["title"] or f"Document {doc['_id']}", text=abstract_text(doc),
    )
    return [Evidence(block=1, pointer_id="E1", evidence_id=evidence_id(chunk), chunk=chunk)]


def accepted(case: Case, corpus: dict[str, dict]) -> bool:
    draft = json.dumps({"claims": [{"text": case.claim, "evidence_ids": ["E1"]}]})
    verdict = verify_claims(draft, evidence_for(corpus[case.doc]), "en")
    return bool(verdict.claims) and verdict.claims[0].verified


def accepted_as_sentence(case: Case, corpus: dict[str, dict]) -> bool:
    """Citations mode: the claim as one answer sentence citing the abstract's KB-ID."""
    evidence = evidence_for(corpus[case.doc])
    draft = f"{case.claim.rstrip('. ')} [{evidence[0].entry_id}]."
    return verify_citations(draft, evidence, "en").ok


def prf(pos: list[bool], neg: list[bool]) -> tuple[float, float, float]:
    tp, fp = sum(pos), sum(neg)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / len(pos) if pos else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


@dataclass
class Result:
    gold: list[bool]
    hard: list[bool]
    random: list[bool]
    changed: list[bool]
    contradict: list[bool]
    sentence_gold: list[bool] = field(default_factory=list)  # citations mode
    sentence_changed: list[bool] = field(default_factory=list)
    sentence_contradict: list[bool] = field(default_factory=list)

    @property
    def f1_hard(self) -> float:
        return prf(self.gold, self.hard)[2]

    @property
    def f1_random(self) -> float:
        return prf(self.gold, self.random)[2]


def run(sets: Sets, corpus: dict[str, dict]) -> Result:
    def judge(cases: list[Case]) -> list[bool]:
        return [accepted(c, corpus) for c in cases]

    def as_sentences(cases: list[Case]) -> list[bool]:
        return [accepted_as_sentence(c, corpus) for c in cases]

    return Result(
        judge(sets.gold), judge(sets.hard), judge(sets.random), judge(sets.changed), judge(sets.contradict),
        as_sentences(sets.gold), as_sentences(sets.changed), as_sentences(sets.contradict),
    )


def report(split: str, sets: Sets, result: Result) -> None:
    p, r, f = prf(result.gold, result.hard)
    p2, r2, f2 = prf(result.gold, result.random)
    caught = len(result.changed) - sum(result.changed)
    print(f"split {split}: (a) {len(sets.gold)} gold pairs, (b) {len(sets.hard)} hard negatives, "
          f"(b') {len(sets.random)} random negatives, (c) {len(sets.changed)} changed numbers "
          f"(of {sets.numeric_claims} gold pairs with a number; {sets.unchangeable} unchangeable), "
          f"{len(sets.contradict)} CONTRADICT pairs")
    print(f"  (a) gold accepted          {sum(result.gold):4d}/{len(result.gold)}  {_pct(result.gold)}")
    print(f"  (b) hard negative accepted {sum(result.hard):4d}/{len(result.hard)}  {_pct(result.hard)}")
    print(f"  (b') random accepted       {sum(result.random):4d}/{len(result.random)}  {_pct(result.random)}")
    print(f"  (a)+(b):  precision {p:.3f}  recall {r:.3f}  F1 {f:.3f}   (goal F1 >= 0.85)")
    print(f"  (a)+(b'): precision {p2:.3f}  recall {r2:.3f}  F1 {f2:.3f}   (goal F1 >= 0.97)")
    print(f"  (c) changed number caught  {caught:4d}/{len(result.changed)}  "
          f"{100 * caught / max(1, len(result.changed)):.1f} %   (goal 100 %)")
    live = [ok for ok, i in zip(result.changed, sets.changed_from, strict=False) if result.gold[i]]
    print(f"      of them with the unchanged claim accepted: {len(live) - sum(live)}/{len(live)} caught")
    print(f"  CONTRADICT accepted        {sum(result.contradict):4d}/{len(result.contradict)}  "
          f"{_pct(result.contradict)}   (a lexical verifier cannot see a contradiction)")
    rejected = len(result.sentence_gold) - sum(result.sentence_gold)
    caught = len(result.sentence_changed) - sum(result.sentence_changed)
    print("  citations mode (claim as one cited sentence):")
    print(f"    (a) gold rejected          {rejected:4d}/{len(result.sentence_gold)}  "
          f"{100 * rejected / max(1, len(result.sentence_gold)):.1f} %   (false failures; goal 0 %)")
    print(f"    (c) changed number caught  {caught:4d}/{len(result.sentence_changed)}  "
          f"{100 * caught / max(1, len(result.sentence_changed)):.1f} %")
    print(f"    CONTRADICT accepted        {sum(result.sentence_contradict):4d}/{len(result.sentence_contradict)}  "
          f"{_pct(result.sentence_contradict)}")


def _pct(values: list[bool]) -> str:
    return f"{100 * sum(values) / max(1, len(values)):.1f} %"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--split", default="dev", choices=("dev", "train"))
    args = ap.parse_args(argv)
    if not (args.data / "corpus.jsonl").exists():
        print(f"SciFact not found in {args.data} (give --data)", file=sys.stderr)
        return 2
    split = args.split
    t0 = time.perf_counter()
    corpus = load_corpus(args.data)
    claims = load_claims(args.data, split)
    with tempfile.TemporaryDirectory() as tmp, Retriever(build_kb_index(args.data, Path(tmp))) as retriever:
        sets = build_sets(claims, corpus, retriever)
    print(f"sets built in {time.perf_counter() - t0:.1f} s")
    t1 = time.perf_counter()
    result = run(sets, corpus)
    n = len(sets.gold) + len(sets.hard) + len(sets.random) + len(sets.changed) + len(sets.contradict)
    report(split, sets, result)
    print(f"  verify: {1000 * (time.perf_counter() - t1) / n:.2f} ms per claim")
    return 0


if __name__ == "__main__":
    sys.exit(main())
