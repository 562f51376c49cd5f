"""Index time per format and per MB: each file indexed alone into a fresh index, median of a few runs.

    python bench/index_formats.py [--runs 3]

The files: the sample documents of tests/data/formats (made by real tools,
see make.sh there), and larger ones generated here from one Markdown text of
about 200 sections: the Markdown itself, a Confluence-like HTML page, a Word
file (pandoc) and a PDF of it (LibreOffice, from that Word file). A generated
format whose tool is not installed is left out, with a line saying so.

Indexing is BM25 only (no embedder): embedding costs the same per chunk
whatever the format and is measured by `citebot index` itself (docs/getting-started.md,
"The first answer"). "convert" is kb_index.formats.convert alone; "index" is the
whole build_index of a folder holding just that file (read, convert, chunk,
Whoosh, scoring arrays, chunk store).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from kb_index import build_index
from kb_index.formats import convert

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "tests" / "data" / "formats"
SECTIONS = 200


def generated_markdown() -> str:
    parts = ["# Generated handbook\n"]
    for i in range(SECTIONS):
        body = " ".join(
            f"Rule {i}.{j} says that a request of type {j} is answered within {j + 2} working days by team {i % 7}."
            for j in range(12)
        )
        parts.append(f"## Chapter {i}\n\n{body}\n\n- item one of {i}\n- item two of {i}\n")
    return "\n".join(parts)


def generated_html(markdown: str) -> str:
    body = []
    for block in markdown.split("\n## ")[1:]:
        heading, _, text = block.partition("\n\n")
        paragraph = text.split("\n\n")[0]
        body.append(f"<h2>{heading}</h2><p>{paragraph}</p><ul><li>item one</li><li>item two</li></ul>")
    return (
        "<html><head><title>Generated handbook</title></head><body><div id=\"header\">nav</div>"
        f"<div id=\"main-content\" class=\"wiki-content\">{''.join(body)}</div><div id=\"footer\">footer</div>"
        "</body></html>"
    )


def generate(folder: Path) -> list[Path]:
    md = folder / "generated.md"
    md.write_text(generated_markdown())
    html = folder / "generated.html"
    html.write_text(generated_html(md.read_text()))
    made = [md, html]
    if shutil.which("pandoc"):
        docx = folder / "generated.docx"
        subprocess.run(["pandoc", str(md), "-o", str(docx)], check=True)
        made.append(docx)
        if shutil.which("soffice"):
            profile = folder / "lo-profile"
            subprocess.run(
                ["soffice", f"-env:UserInstallation=file://{profile}", "--headless", "--convert-to", "pdf",
                 "--outdir", str(folder), str(docx)],
                check=True, capture_output=True,
            )
            made.append(folder / "generated.pdf")
        else:
            print("(no soffice: no generated PDF)")
    else:
        print("(no pandoc: no generated Word file or PDF)")
    return made


def median_seconds(run, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(path: Path, runs: int, work: Path) -> tuple[float, float, int]:
    data = path.read_bytes()
    convert_s = median_seconds(lambda: convert(data, path.suffix), runs) if path.suffix != ".md" else 0.0
    kb = work / f"kb-{path.name}"
    kb.mkdir()
    shutil.copy(path, kb / path.name)
    chunks = 0

    def index_once():
        nonlocal chunks
        target = Path(tempfile.mkdtemp(dir=work))
        chunks = build_index(kb, target, keep_going=True).chunks
        shutil.rmtree(target)

    return convert_s, median_seconds(index_once, runs), chunks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    samples = sorted(p for p in SAMPLES.iterdir() if p.suffix in (".pdf", ".docx", ".html") and
                     p.name not in ("scan.pdf", "encrypted.pdf"))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        files = samples + generate(work)
        print(f"{'file':<28} {'format':<6} {'KB':>8} {'chunks':>6} {'convert s':>10} {'index s':>8} {'index s/MB':>10}")
        per_format: dict[str, list[float]] = {}
        for path in files:
            convert_s, index_s, chunks = measure(path, args.runs, work)
            mb = path.stat().st_size / 1e6
            per_format.setdefault(path.suffix, []).append(index_s / mb)
            print(f"{path.name:<28} {path.suffix[1:]:<6} {path.stat().st_size / 1000:8.1f} {chunks:6d} "
                  f"{convert_s:10.3f} {index_s:8.3f} {index_s / mb:10.2f}")
        print("\nmedian index s/MB per format: " + ", ".join(
            f"{suffix[1:]} {statistics.median(values):.2f}" for suffix, values in sorted(per_format.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
