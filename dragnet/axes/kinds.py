"""Every kind of bench axis, in one list: a new axis is its module (its `KIND`, dragnet.axes.model.AxisKind)
and one line here. The CLI builds their options from this list and the bench applies them through it."""

from __future__ import annotations

from dragnet.axes import config, couchdb, cpus, ddoc, load, q

KINDS = (couchdb.KIND, cpus.KIND, config.KIND, q.KIND, ddoc.KIND, load.KIND)
