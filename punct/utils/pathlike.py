"""``Pathlike``: lhotse's alias (a ``Path`` or a ``str``) without importing lhotse, which imports torch (~3 s of a
2-core machine's time): for the modules that a shell step runs on their own, such as the shard merge of
``steps/dump_bert.sh`` (:func:`punct.io.shards.merge_scps`)."""

from __future__ import annotations

from pathlib import Path

Pathlike = Path | str
