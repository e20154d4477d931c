"""The Asia network in every file format puffgm reads, calibrated from each file.

Writes pgmpy's bundled Asia network with pgmpy's own writers (BIF, XMLBIF, Hugin
NET, UAI, GeNIe XDSL, XBN) and copies the GeNIe-style file of the tests, all into
a temporary directory, gzips one of them and misnames another, then calibrates
each file and prints sigma_max, the worst node and the reader's notes.  The
format is recognised by content, so the gzipped and misnamed files read the same.
UAI files carry no names: their nodes are var_0, var_1, ... (see docs/foundation.md,
"Network file formats").

Run:  python3 examples/network_formats.py
Same from the shell:  puffgm calibrate asia.xdsl --epsilon 1
"""

import gzip
import pathlib
import shutil
import tempfile

import pgmpy.readwrite as readwrite

import puffgm
from puffgm.networks.priors import load_network

HERE = pathlib.Path(__file__).resolve().parent
GENIE = HERE.parent / "tests" / "data" / "asia_genie.xdsl"  # the layout GeNIe saves

model = load_network("example:asia").to_pgmpy()
with tempfile.TemporaryDirectory() as tmp:
    d = pathlib.Path(tmp)
    for name, writer in [("asia.bif", "BIFWriter"), ("asia.xmlbif", "XMLBIFWriter"), ("asia.net", "NETWriter"),
                         ("asia.uai", "UAIWriter"), ("asia_pgmpy.xdsl", "XDSLWriter"), ("asia.xbn", "XBNWriter")]:
        getattr(readwrite, writer)(model).write(str(d / name))
    files = sorted(p.name for p in d.iterdir())
    if GENIE.is_file():
        shutil.copy(GENIE, d / "asia_genie.xdsl")
        files.append("asia_genie.xdsl")
    (d / "asia.net.gz").write_bytes(gzip.compress((d / "asia.net").read_bytes()))
    shutil.copy(d / "asia.xbn", d / "asia_really_xbn.bif")  # a misleading extension
    files += ["asia.net.gz", "asia_really_xbn.bif"]

    print(f"{'file':<22} {'sigma_max at eps 1':>18} {'at eps 4':>10}  worst node")
    for name in files:
        at1 = puffgm.calibrate(str(d / name), epsilon=1.0)
        at4 = puffgm.calibrate(str(d / name), epsilon=4.0)
        print(f"{name:<22} {at1.sigma_max:>18.6g} {at4.sigma_max:>10.6g}  {at4.worst_node}")
        for note in load_network(str(d / name)).notes:
            print(f"{'':<22} note: {note}")
