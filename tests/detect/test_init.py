"""The public surface of loopfix.detect and its import boundary."""

import subprocess
import sys

import loopfix.detect as detect


def test_all_lists_exactly_the_public_names():
    public = {name for name in vars(detect) if not name.startswith("_")}
    modules = {name for name in public if type(getattr(detect, name)).__name__ == "module"}
    assert set(detect.__all__) == public - modules
    assert len(detect.__all__) == len(set(detect.__all__))


def test_importing_detect_pulls_in_no_torch_and_nothing_else_of_loopfix():
    code = (
        "import sys, loopfix.detect, loopfix.detect.clean, loopfix.detect.inputs\n"
        "assert 'torch' not in sys.modules, 'torch'\n"
        # loopfix.lazy, loopfix._version: the package root's own imports (no torch)
        "others = {m for m in sys.modules if m.startswith('loopfix.')"
        " and not m.startswith(('loopfix.detect', 'loopfix.lazy', 'loopfix._version'))}\n"
        "assert not others, others\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
