"""Runs inside the LiteLLM venv (~/.cache/toolfit/litellm): each stdin line is {"file": ..., "tools": [...]}
(a catalog as OpenAI chat tools); each stdout line is {"file", "seconds", "declarations"}: LiteLLM's own
transform of those tools for Gemini (VertexGeminiConfig._map_function, what its Gemini and Vertex paths
call on a request's `tools`), timed as the best of repeated runs (at least 0.3 s), and what it produced."""
import copy, json, os, sys, time

# no network here: LiteLLM reads its bundled model cost map instead of fetching one at import
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
from litellm.llms.vertex_ai.gemini.vertex_and_google_ai_studio_gemini import VertexGeminiConfig  # noqa: E402

config = VertexGeminiConfig()


def transform(tools):
    return config._map_function(copy.deepcopy(tools), {})


def best_of(f, arg):
    best, spent, runs = float("inf"), 0.0, 0
    while spent < 0.3 or runs < 3:
        start = time.perf_counter()
        f(arg)
        took = time.perf_counter() - start
        best, spent, runs = min(best, took), spent + took, runs + 1
    return best


for line in sys.stdin:
    job = json.loads(line)
    try:
        out = transform(job["tools"])
        decls = [d for t in out for d in (t.get("function_declarations") or t.get("functionDeclarations") or [])]
        print(json.dumps({"file": job["file"], "seconds": best_of(transform, job["tools"]), "declarations": decls}), flush=True)
    except Exception as e:  # noqa: BLE001  (a catalog LiteLLM cannot transform is a result too)
        print(json.dumps({"file": job["file"], "error": f"{type(e).__name__}: {str(e)[:200]}"}), flush=True)
