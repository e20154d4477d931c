"""From a panel data frame to a published table: many units, one aggregate release and one release per unit.

The panel is statsmodels' Grunfeld investment data (``statsmodels.datasets.grunfeld``; install with
``pip install ".[examples]"``): 11 firms, one row per firm and year 1935-1954.  Each firm's
yearly change of investment is discretised into "down" or "up", so a firm is one trace of 19
states; the firms are the units.  A Markov chain class is fitted to the panel (``puffgm.fit_chain``
on the long frame), the state histogram of ONE firm's trace is calibrated by its exact joint laws
(``puffgm.calibrate_workload``), and ``puffgm.release(cal, frame, unit="firm", time="year")``
releases

* the aggregate: the relative frequency of each state over all firms (the sum over firms of each
  firm's histogram, divided by the public number of firm-years), with the noise of one firm;
* one histogram per firm (``each=True``), all under one charge (parallel composition).

Then a survey: the 944 respondents of statsmodels' ``anes96`` are the units of a Bayesian network
fitted to their answers; the count of strong Democrats over all respondents is released with the
noise of one respondent's count.

The guarantee: every state of every firm-year (every answer of every respondent) is protected, given
the correlations the class describes; units are independent only under the prior (firms, or
respondents, that influence each other must be modelled jointly).  A respondent's participation is
not protected.

Run:  python3 examples/panel_release.py
"""

import numpy as np
import statsmodels.api as sm

import puffgm
from puffgm.api.units import comparison_text

# ---------------------------------------------------------------- a panel of traces
grunfeld = sm.datasets.grunfeld.load_pandas().data
grunfeld["firm"] = grunfeld["firm"].astype(str)
grunfeld = grunfeld.sort_values(["firm", "year"])
grunfeld["move"] = np.where(grunfeld.groupby("firm")["invest"].diff() > 0, "up", "down")
panel = grunfeld[grunfeld.groupby("firm").cumcount() > 0][["firm", "year", "move"]]  # 19 changes per firm

chains = puffgm.fit_chain(panel, id_column="firm", value_column="move", order_column="year", initial="stationary")
cal = puffgm.calibrate_workload(chains, {"histogram": {}}, epsilon=1.0)

acc = puffgm.PrivacyAccountant(budget=1.0)
agg = puffgm.release(cal, panel, unit="firm", time="year", state="move", relative=True, accountant=acc)
print(f"{len(agg.units)} firms, {agg.details['entries']:g} firm-years; epsilon {agg.epsilon:g}")
print("published table (relative frequency of each yearly move, all firms):")
for name, value in agg.as_dict().items():
    print(f"  {name:>5}: {value:.3f}")
print(comparison_text(agg))

acc_each = puffgm.PrivacyAccountant(budget=1.0)
each = puffgm.release(cal, panel, unit="firm", time="year", state="move", relative=True, each=True,
                      accountant=acc_each)
print("\nper firm (one release each, one charge of epsilon):")
for r in each.releases:
    print(f"  {r['unit']:<18} " + ", ".join(f"{k} {v:.2f}" for k, v in r["values"].items()))
print("guarantee:", acc_each.report().explain() + ";", agg.details["independence"])

# ---------------------------------------------------------------- a table of respondents
survey = sm.datasets.anes96.load_pandas().data[["PID", "selfLR", "educ", "TVnews", "vote"]].astype(int)
network = puffgm.fit_network(survey, random_state=0)
count = puffgm.calibrate_query(network, {"scores": {"PID": [1, 0, 0, 0, 0, 0, 0]}}, epsilon=1.0,
                               method="optimal-laplace")
strong = puffgm.release(count, survey, unit=True)
print(f"\nstrong Democrats among {len(strong.units)} respondents: {strong.value:.1f} "
      f"(Laplace scale {strong.scales[0]:.3g}, the noise of one respondent's count)")
print(comparison_text(strong))
