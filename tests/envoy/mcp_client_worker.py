"""An MCP client from the Python SDK (mcp 2.x), run in the agents venv by the MCP-leg suite: connects,
lists the tools (every page) and calls some, printing one JSON document:
{"session", "tools": [listed tools as received], "calls": [{"name", "ok", "structured", "text", "error"}]}.
The SDK validates each call's `structuredContent` against the listed `outputSchema` itself.
  python mcp_client_worker.py URL --client NAME [--sse] [--lists N] [--header K=V]... [--call NAME JSON]...
  python mcp_client_worker.py stdio --client NAME [--lists N] [--call NAME JSON]... -- COMMAND [ARGS...]"""
import asyncio, json, sys

from mcp import types
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client


# the server's command (stdio) comes after `--`: the options are read before it
COMMAND = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
ARGS = sys.argv[:sys.argv.index("--")] if "--" in sys.argv else sys.argv


def arg(name, default=None):
    return ARGS[ARGS.index(name) + 1] if name in ARGS else default


async def run():
    url, client = ARGS[1], arg("--client", "mcp")
    headers = dict(h.split("=", 1) for i, h in enumerate(ARGS) if i > 0 and ARGS[i - 1] == "--header")
    calls = [(ARGS[i + 1], json.loads(ARGS[i + 2])) for i, a in enumerate(ARGS) if a == "--call"]
    out = {"tools": [], "calls": [], "session": None}
    info = types.Implementation(name=client, version="1.0.0")
    if url == "stdio":
        streams = stdio_client(StdioServerParameters(command=COMMAND[0], args=COMMAND[1:]))
    elif "--sse" in ARGS:
        streams = sse_client(url, headers=headers, timeout=20)
    else:
        streams = streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
    async with streams as s:
        read, write = s[0], s[1]
        async with ClientSession(read, write, client_info=info, read_timeout_seconds=60) as session:
            await session.initialize()
            for _ in range(int(arg("--lists", "1"))):
                out["tools"], cursor = [], None
                while True:
                    page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
                    out["tools"] += [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in page.tools]
                    cursor = page.next_cursor
                    if not cursor:
                        break
            for name, arguments in calls:
                rec = {"name": name, "ok": False}
                try:
                    r = await session.call_tool(name, arguments)
                    rec["ok"] = not getattr(r, "is_error", False)
                    rec["structured"] = getattr(r, "structured_content", None)
                    rec["text"] = " ".join(c.text for c in getattr(r, "content", []) if getattr(c, "text", None))
                except Exception as e:  # the SDK's own refusal (an invalid structuredContent) is the finding
                    rec["error"] = f"{type(e).__name__}: {e}"
                out["calls"].append(rec)
    print(json.dumps(out))


def leaves(e):
    """The messages of an exception and of every exception it groups (anyio wraps the SDK's in groups)."""
    if isinstance(e, BaseExceptionGroup):
        return [m for x in e.exceptions for m in leaves(x)]
    return [f"{type(e).__name__}: {e}"]


try:
    asyncio.run(run())
except BaseException as e:  # the client failed as a whole: say how, as the one JSON document
    print(json.dumps({"tools": [], "calls": [], "error": " | ".join(leaves(e))}))
