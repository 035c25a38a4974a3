"""punct.utils.atomic: atomic outputs and done markers."""

from __future__ import annotations

import os

import pytest

from punct.utils.atomic import atomic_path, atomic_write_text, clear_done, is_done, mark_done


def test_atomic_path_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("interrupted")
    assert list(tmp_path.iterdir()) == []
    atomic_write_text(target, "whole")
    assert target.read_text() == "whole" and len(list(tmp_path.iterdir())) == 1


def test_done_markers(tmp_path):
    target = tmp_path / "x.ark"
    assert not is_done(target)
    mark_done(target)
    assert is_done(target) and (tmp_path / "x.ark.done").exists()
    clear_done(target)
    assert not is_done(target)


def test_outputs_of_an_older_model_are_not_done(tmp_path):
    target, model = tmp_path / "x.ark", tmp_path / "model.pt"
    model.write_text("old model")
    os.utime(model, (1000, 1000))
    mark_done(target)
    assert is_done(target, newer_than=model)
    os.utime(model, None)  # the model was retrained after the output was finished
    os.utime(target.with_name("x.ark.done"), (2000, 2000))
    assert is_done(target) and not is_done(target, newer_than=model)
