"""From a data frame to a released table in a few lines: fit, calibrate a table of counts, release it.

The data are the 944 respondents of the 1996 American National Election Study that statsmodels
ships (``statsmodels.datasets.anes96``; install with ``pip install ".[examples]"``).  Five
discrete answers per respondent are the nodes of a Bayesian network that ``puffgm.fit_network``
learns from the frame (hill climbing, Bayesian CPDs, five bootstrap refits: Theta holds six fits).
One respondent's answers are one database, and each answer is a secret.

The table has three counts over the columns, calibrated jointly by their exact joint laws
(``puffgm.calibrate_workload``): the Democratic answers (strong Democrat, a vote for Clinton),
the Republican ones (strong Republican, a vote for Dole), and whether the respondent watches the TV
news every day.  ``puffgm.release`` computes the table from the respondent's row itself, never
from typed numbers, draws OpenDP's secure Laplace noise, and the accountant holds the release.

Run:  python3 examples/frame_to_table.py
"""

import statsmodels.api as sm

import puffgm
from puffgm.api.release import true_value

survey = sm.datasets.anes96.load_pandas().data
frame = survey[["PID", "selfLR", "educ", "TVnews", "vote"]].astype(int)

pc = puffgm.fit_network(frame, bootstrap=5, random_state=0)
table = [
    {"scores": {"PID": [1, 0, 0, 0, 0, 0, 0], "vote": [1, 0]}, "name": "Democratic answers"},
    {"scores": {"PID": [0, 0, 0, 0, 0, 0, 1], "vote": [0, 1]}, "name": "Republican answers"},
    {"scores": {"TVnews": [0, 0, 0, 0, 0, 0, 0, 1]}, "name": "TV news daily"},
]
cal = puffgm.calibrate_workload(pc, table, epsilon=1.0)
print(cal.explain())
print("comparison (total expected |error|):",
      {name: None if row is None else round(row["total"], 3) for name, row in cal.comparison().items()})

acc = puffgm.PrivacyAccountant(budget=1.0)
rel = puffgm.release(cal, frame.iloc[[0]], accountant=acc)  # one row is one database
print("\nrespondent 0:", frame.iloc[0].to_dict())
print("true table:", dict(zip(cal.names, true_value(cal, frame.iloc[[0]]), strict=True)))
print("released:", {name: round(v, 2) for name, v in rel.as_dict().items()})
print(acc.report())
