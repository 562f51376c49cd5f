#!/bin/sh
# Makes the PDF and Word documents of the bundled sample KB (kb_index/sample/)
# from the sources in this folder. They live here, not in the KB folder, so
# that the indexer never reads them. Run from anywhere: sh kb_index/sample_src/make.sh
# Tools: pandoc 2.17, LibreOffice 7.4 (soffice), qpdf 11.3 (Debian 12 packages:
# pandoc libreoffice-writer-nogui qpdf). Afterwards regenerate the shipped
# vectors: python bench/sample_vectors.py
set -eu
cd "$(dirname "$0")"
out=../sample/handbook
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# fire-safety.pdf: English, 3 pages (page breaks in the source), Word heading
# styles that LibreOffice exports as the PDF outline. LibreOffice stamps the
# export time as CreationDate and writes no ModDate, so both are set to fixed
# dates afterwards (qpdf's JSON update of the Info dictionary): the file, and
# the "Stand" its footnotes show, do not change with every run.
SOURCE_DATE_EPOCH=1769932800 pandoc fire-safety.md -o "$work/fire-safety.docx"
soffice -env:UserInstallation="file://$work/profile" --headless --convert-to pdf --outdir "$work" \
  "$work/fire-safety.docx" >/dev/null 2>&1
info=$(qpdf --show-object=trailer "$work/fire-safety.pdf" | sed -n 's/.*\/Info \([0-9]*\) 0 R.*/\1/p')
qpdf --json-output=2 --json-object="$info" "$work/fire-safety.pdf" - \
  | sed "s|\"/CreationDate\": \"[^\"]*\"|\"/CreationDate\": \"u:D:20260201090000+01'00'\", \"/ModDate\": \"u:D:20260201090000+01'00'\"|" \
  > "$work/info.json"
qpdf --deterministic-id "$work/fire-safety.pdf" --update-from-json="$work/info.json" "$out/fire-safety.pdf"

# buerohunde.docx: German, pandoc's Word styles (Title, Heading 1), a list, a
# table; core properties from the metadata, dates from SOURCE_DATE_EPOCH.
SOURCE_DATE_EPOCH=1772442000 pandoc buerohunde.md -o "$out/buerohunde.docx"
