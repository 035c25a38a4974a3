"""Corpora -> lhotse manifests, one module per corpus (lhotse-recipe style ``prepare_<corpus>()``).

* ``mustc``        MuST-C v1/v2 English side and the UniPunc split
* ``mini_english`` the embedded English mini corpus (Jane Austen read by espeak-ng), MuST-C layout
* ``parczech``     ParCzech 3.0 original data (long recordings + gold verticals; ``parczech_vertical``)
* ``mini_czech``   the embedded Czech mini corpus (fortunes-cs read by espeak-ng), ParCzech layout

Words and labels live on each supervision's ``custom`` (:class:`punct.labels.WordLabels`).
No module outside this package names a corpus.  The mini corpora are built with :mod:`punct.synthesis`.
"""
