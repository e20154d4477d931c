"""Every module's ``__all__`` names objects the module defines, or, in a package, its submodules
(``from module import *`` works)."""

import dataclasses
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


# ----------------------------------------------------------------- one name per idea
#: Synonyms of a parameter's one name: a public function may take them only as deprecated aliases
#: (through ``**kwargs``), never as a named parameter.  Result records (dataclasses) are not
#: functions asked for a guarantee: ``Translation.epsilon_puffer`` and ``epsilon_dp`` are the two
#: ends of one translation, and their field names are those of ``to_dict()``.
SYNONYMS = {"epsilon_puffer": "epsilon", "target": "epsilon", "protect": "protected"}
#: ``target`` names a different idea here: what an attack reveals (``"database"`` or ``"secret"``).
OTHER_IDEAS = {("puffgm.framework.cautionary", "target")}


def _public_callables():
    import inspect

    for info in pkgutil.walk_packages(puffgm.__path__, "puffgm."):
        if info.name.endswith("__main__") or any(p.startswith("_") for p in info.name.split(".")):
            continue
        mod = importlib.import_module(info.name)
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name, None)
            if inspect.isfunction(obj):
                yield info.name, name, obj
            elif inspect.isclass(obj) and not dataclasses.is_dataclass(obj):
                for attr, fn in vars(obj).items():
                    fn = getattr(fn, "__func__", fn)
                    if inspect.isfunction(fn) and (attr == "__init__" or not attr.startswith("_")):
                        yield info.name, f"{name}.{attr}", fn


def test_no_public_function_takes_a_synonym_of_a_parameter_name():
    import inspect

    bad = sorted({f"{mod}.{name}({p}): use {SYNONYMS[p]!r}"
                  for mod, name, fn in _public_callables()
                  for p in inspect.signature(fn).parameters
                  if p in SYNONYMS and (mod, p) not in OTHER_IDEAS})
    assert bad == []


def test_the_cli_uses_the_python_names():
    from puffgm.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    bad = []
    for command, p in sub.choices.items():
        for action in p._actions:
            first = action.option_strings[:1]
            bad += [f"puffgm {command} {first[0]}" for old in ("--protect", "--epsilon-puffer")
                    if first == [old]]
    assert bad == []
