"""The README's ``mt.sweep`` snippet in a plain script: without the ``__main__`` guard it fails at once
with one message saying to add it (never a pool of broken workers); with the guard it runs."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

HEAD = """\
import mpc_tracking as mt
from mpc_tracking.scenario.core import default_scenario

def run():
    base = default_scenario().with_overrides({"simulation.t_max": 0.5})
    res = mt.sweep(base, {"controller.horizon": [5, 10]}, executor="processes", workers=2, progress=False)
    print("ROWS", len(res.rows), sorted(r["status"] for r in res.rows))
"""

UNGUARDED = {
    "top-level call": HEAD + "run()\n",
    "inline": HEAD + textwrap.dedent("""\
        base = default_scenario().with_overrides({"simulation.t_max": 0.5})
        res = mt.sweep(base, {"controller.horizon": [5, 10]},
                       executor="processes", workers=2, progress=False)
        print(res.rows)
        """),
}


def _run_script(tmp_path: Path, source: str) -> subprocess.CompletedProcess:
    script = tmp_path / "my_sweep.py"
    script.write_text(source)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("case", sorted(UNGUARDED))
def test_unguarded_script_fails_at_once_with_one_message(tmp_path, case):
    proc = _run_script(tmp_path, UNGUARDED[case])
    assert proc.returncode != 0
    assert "ROWS" not in proc.stdout
    assert 'if __name__ == "__main__":' in proc.stderr and "my_sweep.py:" in proc.stderr
    assert "BrokenProcessPool" not in proc.stderr and "bootstrapping phase" not in proc.stderr
    # one error, raised in this process before any worker started
    assert proc.stderr.count("Traceback") == 1 and proc.stderr.count("errors.InputError: ") == 1


def test_guarded_script_runs_the_grid(tmp_path):
    proc = _run_script(tmp_path, HEAD + 'if __name__ == "__main__":\n    run()\n')
    assert proc.returncode == 0, proc.stderr
    assert "ROWS 2 ['ok', 'ok']" in proc.stdout
    assert "BrokenProcessPool" not in proc.stderr


@pytest.mark.parametrize("source, line, guarded", [
    ('if __name__ == "__main__":\n    main()\n', 2, True),
    ("if '__main__' == __name__:\n    x = 1\n    main()\n", 3, True),
    ('if __name__ != "__main__":\n    pass\nelse:\n    main()\n', 4, True),
    ('if __name__ != "__main__":\n    main()\n', 2, False),
    ('main()\nif __name__ == "__main__":\n    pass\n', 1, False),
    ('if True:\n    main()\n', 2, False),
    ('def f():\n    if __name__ == "__main__":\n        pass\nmain()\n', 4, False),
])
def test_guard_detection(source, line, guarded):
    from mpc_tracking.tuning.executors import _under_main_guard

    assert _under_main_guard(ast.parse(source), line) is guarded
