"""From a data frame to a Pufferfish release: fit a prior class, calibrate one query, release it.

The data are the 944 respondents of the 1996 American National Election Study that statsmodels
ships (``statsmodels.datasets.anes96``; install with ``pip install ".[examples]"``).  Five
discrete answers per respondent -- party identification (PID, 0..6), left-right self-placement
(selfLR, 1..7), education, days of TV news, vote -- are the nodes.  ``puffgm.fit_network``
learns the DAG by hill climbing, fits the CPDs with pgmpy's Bayesian estimator, and adds five
bootstrap refits, so Theta holds six plausible fits.  The query is one respondent's ideology
index, selfLR + PID (1..13); each answer is a secret.

Run:  python3 examples/fit_and_release.py
"""

import statsmodels.api as sm

import puffgm
from puffgm.mechanisms.query import release_query

survey = sm.datasets.anes96.load_pandas().data
frame = survey[["PID", "selfLR", "educ", "TVnews", "vote"]].astype(int)

theta = puffgm.fit_network(frame, bootstrap=5, random_state=0)
print(theta, *theta.notes, sep="\n  ")

index = {"scores": {n: [int(s) for s in theta.states[n]] for n in ("selfLR", "PID")}}
cal = puffgm.calibrate_query(theta, index, epsilon=1.0, method="optimal-laplace")
print(cal.explain())

record = frame.iloc[0]
answer = float(record["selfLR"] + record["PID"])
acc = puffgm.PrivacyAccountant(budget=1.0)
rel = release_query(answer, cal, accountant=acc)
print(f"\nrespondent 0: ideology index {answer:g}, released {rel.value:.2f} (Laplace scale {cal.scale:.3f})")
print(acc.report())
