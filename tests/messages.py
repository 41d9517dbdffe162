"""Checking a DmlError's message: it names the argument or field, the value and the rule."""

import pytest


def raises(error, *words):
    """pytest.raises(error) whose message must contain every one of `words`."""
    class Check:
        def __enter__(self):
            self.context = pytest.raises(error)
            self.info = self.context.__enter__()
            return self.info

        def __exit__(self, *exc):
            handled = self.context.__exit__(*exc)
            message = str(self.info.value)
            missing = [w for w in words if w not in message]
            assert not missing, f"{missing} not in {message!r}"
            return handled
    return Check()


def check_level(device_at, level, desc, accepted: bool, *words):
    """A device capped at `level` accepts `desc`, or refuses it with UnsupportedError naming
    every one of `words`."""
    import dmlpy as dml
    if accepted:
        device_at(level).create_operator(desc)
        return
    with raises(dml.UnsupportedError, *words):
        device_at(level).create_operator(desc)
