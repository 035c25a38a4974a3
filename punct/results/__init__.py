"""Results: scores -> RESULTS.md, results.json, README tables and plots, per recipe.

Shared markdown helpers (:mod:`~punct.results.tables`), the README regions generated from committed results.json
(:mod:`~punct.results.regions`), plots (:mod:`~punct.results.plots`), what a run's other files say (the AM's
WER, parameter counts: :mod:`~punct.results.facts`), the host's speed a run records
(:mod:`~punct.results.machine_speed`), and one renderer per recipe: egs/mustc's stage 8
(:mod:`~punct.results.mustc`) and egs/parczech's stage 6 (:mod:`~punct.results.itn`), and the model card of an
exported model folder, made from either's results.json (:mod:`~punct.results.model_card`).  The numbers come from
:mod:`punct.scoring`.
"""
