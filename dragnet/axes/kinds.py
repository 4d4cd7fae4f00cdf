"""Every kind of bench axis, in one list: a new axis is its module (its `KIND`, dragnet.axes.model.AxisKind)
and one line here. The CLI builds their options from this list and the bench applies them through it.

PLANNED are the axes the plan keeps under keys of their own (storage outermost, then scenario), each a
factory of its dragnet.axes.model.PlanAxis for one bench; the bench calls their hooks in this order."""

from __future__ import annotations

from dragnet.axes import config, couchdb, cpus, ddoc, load, q, scenario_axis, storage

KINDS = (couchdb.KIND, cpus.KIND, config.KIND, q.KIND, ddoc.KIND, load.KIND)
PLANNED = (storage.plan_axis, scenario_axis.plan_axis)
PLANNED_OPTIONS = storage.OPTIONS + scenario_axis.OPTIONS   # their command-line options, in this order
