"""Performance model of T3 and of today's overlap schemes, built on the timing of the verified RTL blocks.

``t3-model --help`` (or ``python -m system_model``) runs it. The package reads top to
bottom, nothing importing upward: :mod:`.describe` (what is modelled) -> :mod:`.engine`
(the timeline and its resources) -> :mod:`.kernels` (GEMMs and collectives) ->
:mod:`.schemes` (who does what when) -> :mod:`.studies` (report, peers, crosscheck, sweep)
-> :mod:`.cli`.
"""
