"""Every module's ``__all__`` names objects the module defines, or, in a package, its submodules
(``from module import *`` works)."""

import importlib
import importlib.util
import pkgutil

import puffgm


def test_every_all_name_exists():
    missing = []
    for info in pkgutil.walk_packages(puffgm.__path__, "puffgm."):
        if info.name.endswith("__main__"):
            continue
        mod = importlib.import_module(info.name)
        missing += [f"{info.name}.{n}" for n in getattr(mod, "__all__", ())
                    if not hasattr(mod, n)
                    and not (info.ispkg and importlib.util.find_spec(f"{info.name}.{n}") is not None)]
    assert missing == []
