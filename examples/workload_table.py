"""Release a table of two counts on the bundled `alarm` network, calibrated by their exact joint laws.

The database is one record of the network's 37 variables (here sampled from the network itself),
and the value of each variable is a secret.  The table has two statistics: the number of variables
in their first state among the first and among the second half of the network's node order
(examples/alarm_halves.json).  `puffgm.calibrate_workload` finds the least Laplace scale, the same on
both statistics, whose exact joint Pufferfish loss is at most epsilon = 1, and shows it beside MQM,
group DP and each count's own scale (which is not a valid release of the table: see docs/workloads.md).
The release draws OpenDP's secure Laplace noise, and the accountant holds it alone.

Run:  python3 examples/workload_table.py
"""

import pathlib

import numpy as np

import puffgm
from puffgm.api import as_prior

HERE = pathlib.Path(__file__).resolve().parent
workload = str(HERE / "alarm_halves.json")

alarm = as_prior("example:alarm")
cal = puffgm.calibrate_workload(alarm, workload, epsilon=1.0)
print(cal.explain())
print("comparison (total expected |error|):",
      {name: None if row is None else round(row["total"], 4) for name, row in cal.comparison().items()})

# One record: every variable of alarm, drawn from the network by ancestral sampling (a seeded draw
# of the *data*; the noise below comes from the secure sampler).
net = puffgm.load_prior_class("example:alarm").priors[0]
rng = np.random.default_rng(7)
record: dict = {}
while len(record) < len(net.nodes):
    for node in net.nodes:
        if node not in record and all(p in record for p in net.parents[node]):
            column = net.cpts[node][(slice(None),) + tuple(net.states[p].index(record[p]) for p in net.parents[node])]
            record[node] = net.states[node][rng.choice(len(column), p=column)]
acc = puffgm.PrivacyAccountant(budget=1.0)
rel = puffgm.release(cal, record, accountant=acc)  # the table is computed from the record, never typed
print("released:", {name: round(v, 3) for name, v in rel.as_dict().items()})
print(rel.explain())
print(acc.report())
