"""What `dragnet sample` and `dragnet import` print at the end; the summaries are data/'s."""

from __future__ import annotations

from dragnet.data.importer import ImportSummary
from dragnet.data.sample import SampleSummary


def sample_text(summary: SampleSummary) -> str:
    lines = [f"sampled {summary.sampled:,} of {summary.source_docs:,} documents: {summary.method}",
             f"written {summary.written:,}, already in the target {summary.already_present:,}; "
             f"design docs skipped {summary.design_docs_skipped:,} (deleted ones are never listed); "
             f"attachments left out {summary.attachments_dropped:,} (on {summary.docs_with_attachments:,} docs)",
             f"{'bytes/doc':<9} {'docs':>10} {'mean':>10} {'p50':>9} {'p90':>9} {'p99':>9} {'max':>10} "
             f"{'total bytes':>15}"]
    for name, dist in (("source", summary.source_sizes), ("sample", summary.sample_sizes)):
        d = dist.as_dict()
        if not d["docs"]:
            lines.append(f"{name:<9} {0:>10}")
            continue
        lines.append(f"{name:<9} {d['docs']:>10,} {d['mean']:>10,.1f} {d['p50']:>9,} {d['p90']:>9,} "
                     f"{d['p99']:>9,} {d['max']:>10,} {d['bytes']:>15,}")
    lines.append("(sizes: compact JSON as stored, _id and _rev included, attachments not; percentiles within 1 %)")
    return "\n".join(lines)


def import_text(summary: ImportSummary) -> str:
    text = (f"read {summary.read:,}: imported {summary.imported:,}, existing {summary.existing:,}, "
            f"rejected {summary.rejected:,} in {summary.seconds:.1f} s "
            f"({summary.docs_per_sec:,.0f} docs/s, {summary.bytes_per_sec / 1e6:.1f} MB/s)")
    if summary.rejected and summary.rejects_file:
        text += f"; rejects in {summary.rejects_file}"
    return text
