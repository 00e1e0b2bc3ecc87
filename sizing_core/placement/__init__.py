"""Where a model goes on GPUs.

``stages`` counts the greedy stage split, ``fewest`` searches the fewest GPUs from those counts, ``search`` lays a
model out per stage and rank on one GPU kind with one engine, ``limits`` names the term that binds and
``deployment`` answers a whole deployment (engine start-up included). What a plan is (:class:`Plan`,
:class:`Placement`, :class:`StageMemory`) lives in ``sizing_core.plan``, records that import nothing that runs, so
the engines, which the search imports, can name them.
"""
