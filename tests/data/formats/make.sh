#!/bin/sh
# Makes the sample documents of tests/test_formats.py from the sources in src/.
# Run from this folder: sh make.sh
# Tools: LibreOffice 7.4 (soffice, with the hyphen-de dictionary), pandoc 2.17,
# ghostscript 10.0, qpdf 11.3 (Debian 12 packages: libreoffice-writer-nogui
# hyphen-de pandoc ghostscript qpdf).
# The two HTML pages are not made here: confluence-vpn.html is written by hand
# after the markup of a Confluence 7 space export page (HTML export), and
# intranet-parental-leave.html after a CMS page saved from a browser
# ("Save page as, HTML only"); no tool here makes either.
set -eu
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
lo() { soffice -env:UserInstallation="file://$work/profile" --headless "$@" >/dev/null 2>&1; }

# reisekosten.pdf: German, 3 pages, an outline (LibreOffice exports the headings
# as bookmarks), running header and footer "Seite N von M", hyphenated lines.
# LibreOffice stamps the export time as CreationDate and writes no ModDate, so
# both are set to fixed dates afterwards (qpdf's JSON update of the Info dictionary).
cp src/reisekosten.fodt "$work/"
lo --convert-to pdf --outdir "$work" "$work/reisekosten.fodt"
info=$(qpdf --show-object=trailer "$work/reisekosten.pdf" | sed -n 's/.*\/Info \([0-9]*\) 0 R.*/\1/p')
qpdf --json-output=2 --json-object="$info" "$work/reisekosten.pdf" - \
  | sed "s|\"/CreationDate\": \"[^\"]*\"|\"/CreationDate\": \"u:D:20260202090000+01'00'\", \"/ModDate\": \"u:D:20260315103000+01'00'\"|" \
  > "$work/info.json"
qpdf "$work/reisekosten.pdf" --update-from-json="$work/info.json" reisekosten.pdf

# security-handbook.pdf: English, 3 pages, no outline; headings only by font
# (Helvetica-Bold 15/12 pt over Times 11 pt), header, footer "Page N of 3".
gs -q -dSAFER -dNOPAUSE -dBATCH -sDEVICE=pdfwrite -sPAPERSIZE=a4 -o security-handbook.pdf src/security-handbook.ps

# hausordnung.pdf: 2 pages of plain text in one font and size: no outline, no headings.
cp src/hausordnung.txt "$work/"
lo --convert-to pdf --outdir "$work" "$work/hausordnung.txt"
cp "$work/hausordnung.pdf" hausordnung.pdf

# scan.pdf: page 1 of reisekosten.pdf as a grey JPEG at 50 dpi, wrapped into a
# PDF (ghostscript's viewjpeg.ps): an image only, no text layer, as a scanner makes it.
gs -q -dSAFER -dNOPAUSE -dBATCH -sDEVICE=jpeggray -r50 -dJPEGQ=40 -dFirstPage=1 -dLastPage=1 \
  -o "$work/scan.jpg" reisekosten.pdf
gs -q -dNOPAUSE -dBATCH -sDEVICE=pdfwrite -sPAPERSIZE=a4 --permit-file-read="$work/" -o scan.pdf \
  -c "(viewjpeg.ps) runlibfile ($work/scan.jpg) viewJPEG showpage"

# encrypted.pdf: AES-256, a user password is needed to open it.
qpdf --encrypt geheim owner-geheim 256 -- security-handbook.pdf encrypted.pdf
# restricted.pdf: AES-256 with an empty user password (opens without one; only
# printing and changes are restricted by the owner password): converts as usual.
qpdf --encrypt "" owner-geheim 256 --print=none --modify=none -- security-handbook.pdf restricted.pdf

# it-policy.docx: English, pandoc's Word styles (Title, Heading 1/2), lists, a
# table, links; core properties from the metadata, dates from SOURCE_DATE_EPOCH.
SOURCE_DATE_EPOCH=1772361000 pandoc src/it-policy.md -o it-policy.docx

# homeoffice.docx: German, LibreOffice's Word export of custom styles named
# "Überschrift 1/2" (style ids Berschrift1/2, no outline level), a numbered
# list, a table, a link; core properties from the document's metadata.
cp src/homeoffice.fodt "$work/"
lo --convert-to docx --outdir "$work" "$work/homeoffice.fodt"
cp "$work/homeoffice.docx" homeoffice.docx

# reisekosten.docx: the same source as reisekosten.pdf in Word format
# (LibreOffice's built-in Heading 1/2 styles, header and footer parts).
lo --convert-to docx --outdir "$work" "$work/reisekosten.fodt"
cp "$work/reisekosten.docx" reisekosten.docx
