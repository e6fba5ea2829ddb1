"""A wired service's objects are out of the collector's reach (docs/adr/0165)."""

from __future__ import annotations

import gc

from chips_common.service.runner import freeze_the_wiring


def test_what_was_made_before_is_frozen_and_what_comes_after_is_not() -> None:
    wiring = [object() for _ in range(10)] + [{"engine": []}]
    try:
        freeze_the_wiring()
        assert gc.get_freeze_count() > 0
        frozen = {id(o) for o in gc.get_objects()}
        assert id(wiring[-1]) not in frozen  # frozen: no collection walks it again
        later = [["made after"]]
        assert id(later) in {id(o) for o in gc.get_objects()}
    finally:
        gc.unfreeze()
