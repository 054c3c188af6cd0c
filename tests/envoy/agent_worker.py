"""Runs inside the agents' venv (tests/envoy/agents.py builds it): an agent loop as users run it, with a
real MCP server over stdio (through mcp_tap.py, which records what the server answered) and a Chat
Completions model at BASE (Envoy with toolfit in front of llama-server).

  python agent_worker.py FRAMEWORK BASE RUNS TAPLOG BLOCKED_JSON -- SERVER_COMMAND...

FRAMEWORK: openai-agents (MCPServerStdio, OpenAIChatCompletionsModel) or pydantic-ai (MCPToolset over
stdio, OpenAIChatModel). Each run is one agent turn that must call a tool: the model request goes
out with tool_choice required; the client's HTTP transport adds an assistant turn opening a tool call
(what makes a tiny random-weight model call a tool, as the llama-server tests do) and a seed. The
framework executes the call on the MCP server and the run stops there. Prints one JSON line: model
requests made, the ones that failed (status, body), and agent errors."""
import asyncio, json, os, sys

import httpx
from openai import AsyncOpenAI

FRAMEWORK, BASE, RUNS, TAPLOG, BLOCKED = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], json.loads(sys.argv[5])
SERVER = sys.argv[sys.argv.index("--") + 1:]
TAP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mcp_tap.py")
OPENER = "<tool_call>\n"
seen = {"requests": 0, "failed": [], "errors": []}
seed = [0]


class Opener(httpx.AsyncBaseTransport):
    """Adds the opening of a tool call as the last assistant turn, and a seed; records every status."""

    def __init__(self):
        self.inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request):
        body = json.loads(request.content or b"{}")
        body["messages"] = body.get("messages", []) + [{"role": "assistant", "content": OPENER}]
        body["seed"] = seed[0]
        content = json.dumps(body).encode()
        headers = [(k, v) for k, v in request.headers.raw if k.lower() != b"content-length"] + [(b"content-length", str(len(content)).encode())]
        r = await self.inner.handle_async_request(httpx.Request(request.method, request.url, headers=headers, content=content))
        seen["requests"] += 1
        if r.status_code != 200:
            await r.aread()
            seen["failed"].append([r.status_code, r.content[:300].decode(errors="replace")])
        return r


def client():
    return AsyncOpenAI(base_url=BASE, api_key="test", max_retries=0, http_client=httpx.AsyncClient(transport=Opener(), timeout=120))


async def openai_agents():
    from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
    from agents.mcp import MCPServerStdio, create_static_tool_filter
    set_tracing_disabled(True)
    server = MCPServerStdio(params={"command": sys.executable, "args": [TAP, TAPLOG, "--", *SERVER]}, client_session_timeout_seconds=20,
                            cache_tools_list=True, tool_filter=create_static_tool_filter(blocked_tool_names=BLOCKED))
    async with server:
        model = OpenAIChatCompletionsModel(model="tiny", openai_client=client())
        settings = ModelSettings(tool_choice="required", temperature=1.0, max_tokens=256, parallel_tool_calls=False)
        agent = Agent(name="agent", instructions="Use a tool.", model=model, mcp_servers=[server], model_settings=settings, tool_use_behavior="stop_on_first_tool")
        for n in range(RUNS):
            seed[0] = n + 1
            try:
                await Runner.run(agent, "Use a tool.", max_turns=2)
            except Exception as e:  # noqa: BLE001  (the agent's own error is a result)
                seen["errors"].append(f"{type(e).__name__}: {str(e)[:200]}")


async def pydantic_ai():
    from pydantic_ai import Agent
    from pydantic_ai.exceptions import UsageLimitExceeded
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.usage import UsageLimits
    server = MCPToolset(StdioTransport(command=sys.executable, args=[TAP, TAPLOG, "--", *SERVER]), read_timeout=20, tool_error_behavior="error")
    tools = server.filtered(lambda ctx, tool: tool.name not in BLOCKED)
    model = OpenAIChatModel("tiny", provider=OpenAIProvider(openai_client=client()))
    settings = {"temperature": 1.0, "max_tokens": 256, "parallel_tool_calls": False, "extra_body": {"tool_choice": "required"}}
    agent = Agent(model, toolsets=[tools], model_settings=settings, instructions="Use a tool.")
    async with agent:
        for n in range(RUNS):
            seed[0] = n + 1
            try:
                # one model request: the call it makes is executed, then the limit stops the loop
                await agent.run("Use a tool.", usage_limits=UsageLimits(request_limit=1))
            except UsageLimitExceeded:
                pass
            except Exception as e:  # noqa: BLE001
                seen["errors"].append(f"{type(e).__name__}: {str(e)[:200]}")


if __name__ == "__main__":
    asyncio.run(openai_agents() if FRAMEWORK == "openai-agents" else pydantic_ai())
    print(json.dumps(seen), flush=True)
