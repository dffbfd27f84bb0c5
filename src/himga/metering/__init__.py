"""What a run spends on models, counted per phase: the loopback recording proxy every model
call of an evaluation goes through (:class:`RecordingProxy`, its :class:`ProxyCall`
records and their :class:`CostSummary`), the proxies and phase windows of one evaluating
process (:class:`RunMeter`), and the run directory's append-only call log
(:class:`CallLog`, :func:`read_calls`). ``docs/eval.md`` says what is counted where.
"""

from himga.metering._calls import CALLS_FILE, CallLog, read_calls
from himga.metering._meter import RunMeter
from himga.metering._proxy import (
    PHASES,
    CostSummary,
    MeteringConfigError,
    PhaseCost,
    ProxyCall,
    RecordingProxy,
)

__all__ = [
    "CALLS_FILE",
    "PHASES",
    "CallLog",
    "CostSummary",
    "MeteringConfigError",
    "PhaseCost",
    "ProxyCall",
    "RecordingProxy",
    "RunMeter",
    "read_calls",
]
