"""Export the whole results document (JSON, CSV) and import earlier ones for side-by-side comparison.

Works on whole results documents, so every panel can use it.  Imported documents go to
``lab.imported`` as (file name, doc); a bad file is reported and skipped, nothing already there is
touched.  ``window.dlImported`` mirrors lab.imported for tests and for the browser console.
"""
from __future__ import annotations

import json
import re

from app import report


class NothingToExport(ValueError):
    pass


def current_doc(lab) -> dict:
    if not lab.results or not any(s in lab.results for s in report.SECTIONS):
        raise NothingToExport("Nothing to export yet: run a benchmark first (or reload a page that has results).")
    return dict(lab.results)


def _stem(doc: dict) -> str:
    return "dispatchlab-" + re.sub(r"[^0-9A-Za-z]+", "", str(doc.get("created", "results")))


def export_json(lab) -> str:
    import js  # type: ignore
    doc = current_doc(lab)
    name = _stem(doc) + ".json"
    js.dl.download(name, json.dumps(doc, indent=1), "application/json")
    return name


def export_csv(lab) -> str:
    import js  # type: ignore
    doc = current_doc(lab)
    name = _stem(doc) + ".csv"
    js.dl.download(name, report.to_csv(doc), "text/csv")
    return name


def parse_files(files) -> tuple[list[tuple[str, dict]], list[str]]:
    """files: [(name, text)] → (valid docs, one message per bad file).  Pure: no page access."""
    good, bad = [], []
    for name, text in files:
        if not text.strip():
            bad.append(f"{name} is empty.")
            continue
        try:
            good.append((name, report.parse(text, name)))
        except report.ResultsError as e:
            bad.append(str(e))
    return good, bad


async def import_files(lab, input_id: str) -> tuple[list[tuple[str, dict]], list[str]]:
    """Read the files chosen in <input type=file id=input_id> and add the valid ones to lab.imported."""
    import js  # type: ignore
    from app.ui.dom import el
    inp = el(input_id)
    raw = await js.dl.readFiles(inp)
    files = [(str(pair[0]), str(pair[1])) for pair in raw]
    inp.value = ""                      # choosing the same file again fires "change" again
    return _add(lab, files) if files else ([], [])


def _add(lab, files) -> tuple[list[tuple[str, dict]], list[str]]:
    """parse_files, then the valid documents into lab.imported (and window.dlImported)."""
    good, bad = parse_files(files)
    lab.imported.extend(good)
    publish(lab)
    return good, bad


async def import_url(lab, url: str, name: str) -> tuple[list[tuple[str, dict]], list[str]]:
    """Fetch one results document shipped with the site (build.py REFERENCE) and add it to lab.imported as `name`,
    unless a document of that name is there already.  A failed fetch or an invalid file is one message."""
    import js  # type: ignore
    if any(n == name for n, _ in lab.imported):
        return [], []
    try:
        resp = await js.fetch(url)
        if not resp.ok:
            return [], [f"{name} could not be loaded (HTTP {resp.status}): {url}"]
        text = str(await resp.text())
    except Exception as e:  # noqa: BLE001 - a network failure is a message, not a traceback
        return [], [f"{name} could not be loaded ({e}): {url}"]
    return _add(lab, [(name, text)])


def clear_imports(lab) -> None:
    lab.imported.clear()
    publish(lab)


def publish(lab) -> None:
    import js  # type: ignore
    js.window.dlImported = js.JSON.parse(json.dumps([{"name": n, "doc": d} for n, d in lab.imported]))
