"""Results: scores -> RESULTS.md, results.json, README tables and plots, per recipe.

Shared markdown helpers (:mod:`~punct.results.tables`), the README regions generated from committed results.json
(:mod:`~punct.results.regions`; a study's tables live beside its benchmark, ``benchmarks/<study>/``), plots
(:mod:`~punct.results.plots`), what a run's other files say (the AM's WER, parameter counts:
:mod:`~punct.results.facts`), the host's speed a run records (:mod:`~punct.results.machine_speed`), and one renderer
per kind of scoring a recipe runs: the punctuation systems' (:mod:`~punct.results.punct_systems`; conditions
compared: :mod:`~punct.results.curve`) and the speech-informed ITN systems' (:mod:`~punct.results.itn_systems`), and
the model card of an exported model folder, made from either's results.json (:mod:`~punct.results.model_card`).  The
numbers come from :mod:`punct.scoring`.
"""
