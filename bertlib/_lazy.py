"""Lazy names for bertlib's packages: `bertlib.model.BertBackbone` imports `bertlib.model.backbone` (and so Keras)
when it is first asked for, so `import bertlib.text.tokenizer` or `bertlib download` never load Keras."""

import importlib


def attach(package, exports):
    """(`__getattr__`, `__dir__`, `__all__`) for `package` whose `exports` map a public name to its submodule."""

    def __getattr__(name):
        if name in exports:
            return getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
        try:  # a submodule: bertlib.model.layers, bertlib.text.masking, ...
            return importlib.import_module(f"{package}.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"{package}.{name}":
                raise
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None

    def __dir__():
        return sorted(exports)

    return __getattr__, __dir__, sorted(exports)
