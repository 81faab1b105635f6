"""Run the code snippets of the documentation's Markdown pages (a maintenance tool, not part of the build).

    python docs/check_snippets.py [PAGE.md ...]        # default: every docs/**/*.md

The ```python blocks of one page run one after the other in one namespace (as a reader would
type them into one session); the ```bash blocks run each command line (``mpc-tracking ...``,
``python ...``; ``\\`` continues a line). Everything runs in a fresh temporary folder holding links
to ``demos/`` and ``reference_paths/``, so relative paths such as ``demos/quickstart.yaml`` work
and written files (``out/...``) are thrown away. A block preceded by the MyST comment line
``% snippet: skip`` is not run (a Dask cluster, a ``pip install``); ``% snippet: exit N`` lets the
commands of the next bash block end with exit code N. Prints one line per block and exits 1 if
any failed.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
FENCE = re.compile(r"^```(\w+)\s*$")


def blocks(page: Path) -> list[tuple[int, str, str, str]]:
    """(line, language, code, directive) of every fenced python/bash block of ``page``."""
    out, lines, i, directive = [], page.read_text().splitlines(), 0, ""
    while i < len(lines):
        m = FENCE.match(lines[i])
        if lines[i].startswith("% snippet:"):
            directive = lines[i].split(":", 1)[1].strip()
        elif m:
            start, body = i + 1, []
            i += 1
            while not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            if m.group(1) in ("python", "bash"):
                out.append((start, m.group(1), "\n".join(body), directive))
            directive = ""
        elif lines[i].strip():
            directive = directive if lines[i].startswith("%") else ""
        i += 1
    return out


def commands(code: str) -> list[str]:
    joined = re.sub(r"\\\n\s*", " ", code)
    return [line.split(" #")[0].strip() for line in joined.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def run_page(page: Path) -> int:
    failed = 0
    with tempfile.TemporaryDirectory(prefix="mpc_tracking_snippets_") as tmp:
        for name in ("demos", "reference_paths"):
            os.symlink(ROOT / name, Path(tmp) / name)
        namespace: dict = {"__name__": "__main__"}
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            for line, lang, code, directive in blocks(page):
                where = f"{page.relative_to(DOCS)}:{line}"
                if directive == "skip":
                    print(f"skip  {where}")
                    continue
                t0 = time.perf_counter()
                try:
                    if lang == "python":
                        exec(compile(code, where, "exec"), namespace)
                    else:
                        expected = int(directive.split()[1]) if directive.startswith("exit") else 0
                        for cmd in commands(code):
                            argv = shlex.split(cmd)
                            if argv[0] == "python":
                                argv[0] = sys.executable
                            rc = subprocess.run(argv, capture_output=True, text=True, timeout=600)
                            if rc.returncode != expected:
                                output = rc.stdout[-800:] + rc.stderr[-800:]
                                raise RuntimeError(f"{cmd!r} exited {rc.returncode}:\n{output}")
                    print(f"ok    {where} ({time.perf_counter() - t0:.1f} s)")
                except Exception:
                    failed += 1
                    print(f"FAIL  {where}")
                    traceback.print_exc()
        finally:
            os.chdir(cwd)
    return failed


def main() -> int:
    os.environ.setdefault("MPLBACKEND", "Agg")
    pages = [Path(p).resolve() for p in sys.argv[1:]] or sorted(
        p for p in DOCS.rglob("*.md") if "_build" not in p.parts and not p.parts[-2].startswith("auto_"))
    failed = sum(run_page(p) for p in pages)
    print(f"{failed} block(s) failed" if failed else "all snippets ran")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
