"""Runs inside the clients' venv (tests/envoy/clients.py builds it): each job is one call made the way
a program makes it with the real SDK (openai, anthropic, google-genai, cohere, ollama, mistralai, groq), through Envoy
and toolfit. Prints, per job, one JSON line of what the SDK handed to the program: the tool calls as
(name, arguments) after the SDK parsed them, the structured-output text, or the SDK's error.
  python client_worker.py JOBS.json"""
import json, sys, traceback


def openai_chat(job):
    from openai import OpenAI
    return chat_calls(OpenAI(base_url=job["base"] + "/v1", api_key="test", max_retries=0), "gpt-4o", job)


def chat_calls(c, model, job):
    """Chat Completions tool calls through a Stainless client (openai, groq), plain or streamed."""
    tools = [{"type": "function", "function": {"name": t["name"], "description": t["description"], "parameters": t["schema"], "strict": job.get("strict", False)}} for t in job["tools"]]
    kw = dict(model=model, messages=[{"role": "user", "content": "use the tools"}], tools=tools)
    if not job["stream"]:
        m = c.chat.completions.create(**kw).choices[0].message
        return {"calls": [[tc.function.name, json.loads(tc.function.arguments)] for tc in m.tool_calls or []]}
    calls = {}
    for chunk in c.chat.completions.create(**kw, stream=True):
        for ch in chunk.choices:
            for tc in ch.delta.tool_calls or []:
                n, a = calls.get(tc.index, ("", ""))
                f = tc.function
                calls[tc.index] = (n + ((f.name if f else None) or ""), a + ((f.arguments if f else None) or ""))
    return {"calls": [[n, json.loads(a)] for _, (n, a) in sorted(calls.items())]}


def openai_format(job):
    """Chat Completions with response_format json_schema (strict), plain or streamed."""
    from openai import OpenAI
    c = OpenAI(base_url=job["base"] + "/v1", api_key="test", max_retries=0)
    rf = {"type": "json_schema", "json_schema": {"name": "answer", "schema": job["output"], "strict": True}}
    kw = dict(model="gpt-4o", messages=[{"role": "user", "content": "answer"}], response_format=rf)
    if not job["stream"]:
        return {"output": json.loads(c.chat.completions.create(**kw).choices[0].message.content)}
    text = "".join(ch.delta.content or "" for chunk in c.chat.completions.create(**kw, stream=True) for ch in chunk.choices)
    return {"output": json.loads(text)}


def openai_responses(job):
    from openai import OpenAI
    c = OpenAI(base_url=job["base"] + "/v1", api_key="test", max_retries=0)
    tools = [{"type": "function", "name": t["name"], "description": t["description"], "parameters": t["schema"], "strict": job.get("strict", False)} for t in job["tools"]]
    kw = dict(model="gpt-4o", input="use the tools", tools=tools)
    if not job["stream"]:
        out = c.responses.create(**kw).output
    else:
        out, deltas = None, {}
        for ev in c.responses.create(**kw, stream=True):
            if ev.type == "response.function_call_arguments.delta":
                deltas[ev.output_index] = deltas.get(ev.output_index, "") + ev.delta
            if ev.type == "response.completed":
                out = ev.response.output
        # what a program that reads the deltas assembles must agree with the closing summary
        summary = {i: o.arguments for i, o in enumerate(out or []) if o.type == "function_call"}
        if deltas and {json.dumps(json.loads(v)) for v in deltas.values()} != {json.dumps(json.loads(v)) for v in summary.values()}:
            return {"error": f"deltas {deltas} disagree with the summary {summary}"}
    return {"calls": [[o.name, json.loads(o.arguments)] for o in out or [] if o.type == "function_call"]}


def anthropic_messages(job):
    from anthropic import Anthropic
    c = Anthropic(base_url=job["base"], api_key="test", max_retries=0)
    tools = [{"name": t["name"], "description": t["description"], "input_schema": t["schema"], **({"strict": True} if job.get("strict") else {})} for t in job["tools"]]
    kw = dict(model="claude-sonnet-4-5", max_tokens=256, messages=[{"role": "user", "content": "use the tools"}], tools=tools)
    if not job["stream"]:
        m = c.messages.create(**kw)
    else:
        with c.messages.stream(**kw) as s:
            m = s.get_final_message()
    return {"calls": [[b.name, b.input] for b in m.content if b.type == "tool_use"]}


def gemini(job):
    from google import genai
    from google.genai import types
    c = genai.Client(api_key="test", http_options=types.HttpOptions(base_url=job["base"], api_version="v1beta"))
    field = job.get("field", "parameters_json_schema")
    decls = [types.FunctionDeclaration(name=t["name"], description=t["description"], **{field: t["schema"]}) for t in job["tools"]]
    cfg = types.GenerateContentConfig(tools=[types.Tool(function_declarations=decls)],
                                      automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True))
    if not job["stream"]:
        r = c.models.generate_content(model="gemini-2.5-flash", contents="use the tools", config=cfg)
        return {"calls": [[f.name, f.args] for f in r.function_calls or []]}
    calls = []
    for r in c.models.generate_content_stream(model="gemini-2.5-flash", contents="use the tools", config=cfg):
        calls += [[f.name, f.args] for f in r.function_calls or []]
    return {"calls": calls}


def cohere_chat(job):
    import cohere
    c = cohere.ClientV2(api_key="test", base_url=job["base"])
    tools = [{"type": "function", "function": {"name": t["name"], "description": t["description"], "parameters": t["schema"]}} for t in job["tools"]]
    kw = dict(model="command-a-03-2025", messages=[{"role": "user", "content": "use the tools"}], tools=tools)
    if not job["stream"]:
        m = c.chat(**kw).message
        return {"calls": [[tc.function.name, json.loads(tc.function.arguments)] for tc in m.tool_calls or []]}
    calls = {}
    for ev in c.chat_stream(**kw):
        if ev.type == "tool-call-start":
            f = ev.delta.message.tool_calls.function
            calls[ev.index] = [f.name, f.arguments or ""]
        elif ev.type == "tool-call-delta":
            calls[ev.index][1] += ev.delta.message.tool_calls.function.arguments or ""
    return {"calls": [[n, json.loads(a)] for _, (n, a) in sorted(calls.items())]}


def ollama_chat(job):
    import ollama
    c = ollama.Client(host=job["base"])
    tools = [{"type": "function", "function": {"name": t["name"], "description": t["description"], "parameters": t["schema"]}} for t in job["tools"]]
    kw = dict(model="qwen3", messages=[{"role": "user", "content": "use the tools"}], tools=tools)
    if not job["stream"]:
        m = c.chat(**kw).message
        return {"calls": [[tc.function.name, dict(tc.function.arguments)] for tc in m.tool_calls or []]}
    calls = []
    for part in c.chat(**kw, stream=True):
        calls += [[tc.function.name, dict(tc.function.arguments)] for tc in part.message.tool_calls or []]
    return {"calls": calls}


def mistral_chat(job):
    """mistralai (its own Speakeasy client, not OpenAI's): chat.complete and chat.stream."""
    from mistralai.client import Mistral
    c = Mistral(api_key="test", server_url=job["base"])
    tools = [{"type": "function", "function": {"name": t["name"], "description": t["description"], "parameters": t["schema"]}} for t in job["tools"]]
    kw = dict(model="mistral-large-latest", messages=[{"role": "user", "content": "use the tools"}], tools=tools)
    args = lambda a: a if isinstance(a, dict) else json.loads(a)
    if not job["stream"]:
        m = c.chat.complete(**kw).choices[0].message
        return {"calls": [[tc.function.name, args(tc.function.arguments)] for tc in m.tool_calls or []]}
    calls = []
    for ev in c.chat.stream(**kw):
        for ch in ev.data.choices:
            calls += [[tc.function.name, args(tc.function.arguments)] for tc in ch.delta.tool_calls or []]
    return {"calls": calls}


def groq_chat(job):
    """groq (Stainless, OpenAI's shape under /openai/v1)."""
    from groq import Groq
    return chat_calls(Groq(base_url=job["base"], api_key="test", max_retries=0), "openai/gpt-oss-120b", job)


def refused(job):
    """A request toolfit refuses in strict mode: what the SDK made of the 400 (its error class, and the
    status and message where that SDK reads them from its API's error body)."""
    try:
        out = RUN[job["sdk"]](job)
    except Exception as e:  # the SDK's own error is the result
        sdk, body = job["sdk"], getattr(e, "body", None)
        if sdk.startswith("openai"):  # the SDK keeps the body's `error` object
            status, message = e.status_code, body.get("message") if isinstance(body, dict) else None
        elif sdk == "groq":  # the SDK keeps the whole body
            status, message = e.status_code, body.get("error", {}).get("message") if isinstance(body, dict) else None
        elif sdk == "anthropic":
            status, message = e.status_code, (body or {}).get("error", {}).get("message") if isinstance(body, dict) else None
        elif sdk == "gemini":  # google-genai's APIError reads code, status and message from `error`
            status, message = e.code, f"{e.status}: {e.message}"
        elif sdk == "mistral":  # SDKError: the status and the body as text
            status, message = e.raw_response.status_code, json.loads(e.body).get("error", {}).get("message")
        elif sdk == "cohere":
            status, message = e.status_code, body.get("message") if isinstance(body, dict) else None
        else:  # ollama's ResponseError takes `error` as the message
            status, message = e.status_code, e.error
        return {"refused": {"class": type(e).__name__, "status": status, "message": message if isinstance(message, str) else repr(message)}}
    return {"error": f"not refused: the SDK returned {json.dumps(out)[:300]}"}


RUN = {"openai-chat": openai_chat, "openai-format": openai_format, "openai-responses": openai_responses,
       "anthropic": anthropic_messages, "gemini": gemini, "cohere": cohere_chat, "ollama": ollama_chat,
       "mistral": mistral_chat, "groq": groq_chat}

if __name__ == "__main__":
    for job in json.load(open(sys.argv[1])):
        try:
            out = refused(job) if job.get("refused") else RUN[job["sdk"]](job)
        except Exception as e:  # the SDK's own error is the result
            out = {"error": f"{type(e).__name__}: {e}"[:600], "trace": traceback.format_exc()[-800:]}
        print(json.dumps({"id": job["id"], **out}), flush=True)
