"""ParCzech 3.0 original data (long recordings + gold verticals) -> lhotse manifests.

About the corpus
  ParCzech 3.0 (Kopp et al. 2021) holds recordings of the Czech Chamber of Deputies (2013-2021)
  with their stenographic transcripts; the thesis builds its dataset from the *original*,
  unsegmented part: one audio file of ~13 min per sitting piece and its official transcript as
  a vertical (``punct.corpora.parczech_vertical``).  The embedded Czech mini corpus (``punct.corpora.mini_czech``)
  has the same layout with wav audio.

Output (``output_dir``)::

    parczech_recordings_all.jsonl.gz    one Recording per long audio file (id = audio stem)
    parczech_supervisions_all.jsonl.gz  one SupervisionSegment per recording spanning all of it:
        text   = the official transcript (tokens joined by spaces),
        custom = {"words": [cased words], "punct": [...], "case": [...], "speakers": [per word],
                  "sentence_idx": [...], "word_ids": [TEI ids]}   (labels: punct.text.token_labels)
    parczech_speakers.tsv               id, gender (copied from the corpus' speakers.tsv if any)

The supervision's ``speaker`` is the recording's most frequent speaker; per-word speakers are in
custom["speakers"].  Recordings whose audio cannot be opened are skipped and counted (logged).
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

from lhotse import Recording, RecordingSet, SupervisionSegment, SupervisionSet
from lhotse.utils import Pathlike

from punct.corpora.parczech_vertical import find_recordings, read_speakers, read_vertical, write_speakers
from punct.labels import WordLabels
from punct.text.token_labels import ExtractionStats
from punct.utils.atomic import atomic_path

logger = logging.getLogger(__name__)


def official_supervision(
    recording: Recording, vert_path: Path, stats: ExtractionStats, numbers: str = "spoken"
) -> SupervisionSegment | None:
    vertical = read_vertical(vert_path)
    words = vertical.words(stats, numbers)
    if not words:
        logger.warning("%s: no words; recording %s skipped", vert_path, recording.id)
        return None
    speaker = Counter(w.speaker for w in words).most_common(1)[0][0]
    return SupervisionSegment(
        id=recording.id,
        recording_id=recording.id,
        start=0.0,
        duration=recording.duration,
        channel=0,
        text=" ".join(t.token for t in vertical.tokens),
        language="Czech",
        speaker=speaker,
        custom={
            **WordLabels(
                recording.id, tuple(w.word for w in words), tuple(w.punct for w in words), tuple(w.case for w in words)
            ).to_custom(),
            "speakers": [w.speaker for w in words],
            "sentence_idx": [w.sentence_idx for w in words],
            "word_ids": [w.word_id for w in words],
        },
    )


def prepare_parczech(
    corpus_dir: Pathlike,
    output_dir: Pathlike | None = None,
    numbers: str = "spoken",
) -> tuple[RecordingSet, SupervisionSet, dict[str, int]]:
    """Reads a ParCzech-layout corpus; writes the manifests when ``output_dir`` is given.  ``numbers``:
    "spoken" (numbers said as words) or "keep" (as written), see ``punct.text.token_labels`` rule 5; the
    counts hold ``tokens_spoken_numbers`` and ``tokens_unspeakable`` (kept as written, logged)."""
    corpus_dir = Path(corpus_dir)
    pairs = find_recordings(corpus_dir)
    if not pairs:
        raise ValueError(f"{corpus_dir}: no pair of audio file and .vert found")
    recordings, supervisions = [], []
    stats = ExtractionStats()
    counts = {"recordings": 0, "unreadable_audio": 0, "empty_transcripts": 0}
    for rec_id, paths in pairs.items():
        try:
            rec = Recording.from_file(paths["audio"], recording_id=rec_id)
        except Exception as e:  # noqa: BLE001 - any decoder error: count, log, skip
            logger.warning("%s: cannot open audio (%s); skipped", paths["audio"], e)
            counts["unreadable_audio"] += 1
            continue
        sup = official_supervision(rec, paths["vert"], stats, numbers)
        if sup is None:
            counts["empty_transcripts"] += 1
            continue
        recordings.append(rec)
        supervisions.append(sup)
        counts["recordings"] += 1
    counts.update({f"tokens_{k}": v for k, v in vars(stats).items()})
    rset = RecordingSet.from_recordings(recordings)
    sset = SupervisionSet.from_segments(supervisions)
    if output_dir is not None:
        output_dir = Path(output_dir)
        output_dir.mkdir(parents=True, exist_ok=True)
        with atomic_path(output_dir / "parczech_recordings_all.jsonl.gz", suffix=".jsonl.gz") as tmp:
            rset.to_file(tmp)
        with atomic_path(output_dir / "parczech_supervisions_all.jsonl.gz", suffix=".jsonl.gz") as tmp:
            sset.to_file(tmp)
        speakers_file = corpus_dir / "speakers.tsv"
        if speakers_file.exists():
            write_speakers(output_dir / "parczech_speakers.tsv", read_speakers(speakers_file).values())
    logger.info("prepared %s", counts)
    return rset, sset, counts
