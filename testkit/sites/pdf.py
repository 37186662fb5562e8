"""A tiny PDF writer for tests and the bench: pages of Helvetica text lines, a title and a creation date.

Hand-written (about forty lines of PDF syntax) so the project owns every byte of its PDF fixtures and
needs no PDF-writing dependency; pypdf reads these files like any other.
"""

from __future__ import annotations

from collections.abc import Sequence


def _escape(text: str) -> bytes:
    """A PDF literal string body (WinAnsi, so Latin-1 accents work)."""
    raw = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return raw.encode("cp1252", errors="replace")


def make_pdf(pages: Sequence[Sequence[str]], *, title: str = "", created: str = "20250305100000Z") -> bytes:
    """A valid PDF with one page per entry of ``pages``, each line drawn as a text line."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    contents = []
    for lines in pages:
        ops = [b"BT", b"/F1 11 Tf", b"14 TL", b"56 760 Td"]
        ops += [b"(" + _escape(line) + b") Tj T*" for line in lines]
        ops.append(b"ET")
        stream = b"\n".join(ops)
        contents.append(add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream"))
    parent = len(objects) + len(contents) + 1
    kids = [
        add(
            b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> "
            b"/Contents %d 0 R >>" % (parent, font, content)
        )
        for content in contents
    ]
    refs = b" ".join(b"%d 0 R" % kid for kid in kids)
    add(b"<< /Type /Pages /Kids [" + refs + b"] /Count %d >>" % len(kids))
    catalog = add(b"<< /Type /Catalog /Pages %d 0 R >>" % parent)
    info = add(b"<< /Title (" + _escape(title) + b") /CreationDate (D:" + created.encode("ascii") + b") >>")
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R >>\n" % (len(objects) + 1, catalog, info)
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)
