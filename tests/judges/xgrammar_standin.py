"""xgrammar without torch, for the judges' workers (tests/judges/vllm_worker.py, sglang_worker.py).

xgrammar's package imports torch for its GPU bitmask helpers, which compiling and matching strings do not
use: a stand-in module named torch is installed after tvm_ffi and transformers have looked for the real one
and found none."""
import sys, types


def load_xgrammar():
    import tvm_ffi  # noqa: F401  (looks for torch itself; must find none)
    from transformers.utils import is_torch_available
    is_torch_available()
    stand_in = types.ModuleType("torch")
    stand_in.Tensor = type("Tensor", (), {})
    stand_in.int32 = "int32"
    stand_in.tensor = lambda *a, **k: None
    stand_in.__getattr__ = lambda name: type(name, (), {})
    sys.modules["torch"] = stand_in
    import xgrammar
    return xgrammar
