"""What the GPU test files share: pytest's skip marks and raises, with
stand-ins for running a test file as a plain script (no pytest), and that
script mode's runner."""

import re
import sys
import traceback

try:
    import pytest

    def skip_unless(condition, reason):
        return pytest.mark.skipif(not condition, reason=reason)

    raises = pytest.raises
except ImportError:  # plain-script mode
    def skip_unless(condition, reason):
        return lambda f: f

    class raises:  # noqa: N801 - mimics pytest.raises
        def __init__(self, exc, match=None):
            self.exc, self.match = exc, match

        def __enter__(self):
            return self

        def __exit__(self, typ, value, tb):
            assert typ is not None and issubclass(typ, self.exc), \
                f"expected {self.exc.__name__}, got {typ}: {value}"
            assert self.match is None or re.search(self.match, str(value)), \
                f"{self.match!r} not in {str(value)!r}"
            return True


def run_as_script(namespace, available, why):
    """Runs the test_* functions of `namespace` (a module's globals()),
    reporting each; exits 0 with `why` where not `available`."""
    if not available:
        print("skipped:", why)
        sys.exit(0)
    failed = ran = 0
    for name, fn in list(namespace.items()):
        if name.startswith("test_") and callable(fn):
            ran += 1
            try:
                fn()
                print("PASS", name)
            except Exception as e:  # report every test
                failed += 1
                traceback.print_exc()
                print("FAIL", name, type(e).__name__, e)
    print(f"{ran - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
