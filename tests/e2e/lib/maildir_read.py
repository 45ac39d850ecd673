#!/usr/bin/env python3
"""Print the messages of a Maildir as JSON (used by harness.mjs).

Usage: maildir_read.py MAILDIR

Output: a JSON array, oldest first, of
  {"key", "mtime", "subject", "rawSubject", "from", "to", "rcptTo",
   "headers": {lower-case name: [decoded values]},
   "rawHeaders": {lower-case name: [values as transmitted, RFC 2047 words intact]},
   "text": decoded text/plain body or null, "html": decoded text/html body or null}

Python's email package does the decoding: RFC 2047 encoded words in headers, and
quoted-printable / base64 transfer encodings with the part's charset in bodies.
"""

import json
import os
import sys
from email import policy
from email.parser import BytesParser


def decode_part(part):
    try:
        content = part.get_content()
    except Exception:  # unknown charset etc.: fall back to a lenient decode
        payload = part.get_payload(decode=True) or b""
        content = payload.decode(part.get_content_charset() or "utf-8", "replace")
    if isinstance(content, bytes):
        content = content.decode("utf-8", "replace")
    return content


def read_message(path):
    with open(path, "rb") as f:
        data = f.read()
    msg = BytesParser(policy=policy.default).parsebytes(data)
    raw = BytesParser(policy=policy.compat32).parsebytes(data, headersonly=True)

    headers = {}
    for name, value in msg.items():
        headers.setdefault(name.lower(), []).append(str(value))
    raw_headers = {}
    for name, value in raw.items():
        raw_headers.setdefault(name.lower(), []).append(str(value))

    text = html = None
    body = msg.get_body(preferencelist=("plain",))
    if body is not None:
        text = decode_part(body)
    body = msg.get_body(preferencelist=("html",))
    if body is not None:
        html = decode_part(body)
    if text is None and html is None and not msg.is_multipart():
        text = decode_part(msg)

    def first(name):
        values = headers.get(name)
        return values[0] if values else None

    rcpt = first("x-rcptto") or ""
    return {
        "subject": first("subject"),
        "rawSubject": (raw_headers.get("subject") or [None])[0],
        "from": first("from"),
        "to": first("to"),
        "rcptTo": [r.strip() for r in rcpt.split(",") if r.strip()],
        "headers": headers,
        "rawHeaders": raw_headers,
        "text": text,
        "html": html,
    }


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    maildir = sys.argv[1]
    entries = []
    for sub in ("new", "cur"):
        d = os.path.join(maildir, sub)
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            p = os.path.join(d, name)
            if os.path.isfile(p):
                entries.append((os.stat(p).st_mtime_ns, name, p))
    entries.sort()
    out = []
    for mtime, name, p in entries:
        m = read_message(p)
        m["key"] = name.split(":")[0]
        m["mtime"] = mtime / 1e9
        out.append(m)
    json.dump(out, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
