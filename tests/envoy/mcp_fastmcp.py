"""An MCP server from the Python SDK (mcp 2.x `MCPServer`, FastMCP before 2.0) for the MCP-leg suite:
typed returns (an `outputSchema`, `structuredContent` the client validates), names with `.` and `/`,
and `\\p{..}` patterns in an input and an output schema (pydantic reads them; Python's `re` cannot).
With --props, a fourth tool whose argument's properties are named `issue-key` and `page.size` (names
Gemini's API refuses, which the inference leg renames): pydantic refuses a call under any other keys.
  python mcp_fastmcp.py PORT [--json] [--stateless] [--sse] [--props]
  python mcp_fastmcp.py stdio [--props]          (newline-delimited JSON-RPC on stdin and stdout)"""
import sys
from typing import Annotated

from pydantic import BaseModel, Field
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations


class Weather(BaseModel):
    city: Annotated[str, Field(pattern=r"^\p{Lu}")]
    celsius: float
    conditions: list[str]


app = MCPServer("toolfit-weather")
# read-only: the coding agents run such tools without asking (Codex in `exec` asks for any other)
READ = ToolAnnotations(readOnlyHint=True)


@app.tool(name="get.weather", description="The weather in a city.", annotations=READ)
def get_weather(city: Annotated[str, Field(pattern=r"^\p{Lu}\p{Ll}+$", description="A city's name")]) -> Weather:
    return Weather(city=city, celsius=21.5, conditions=["sunny", "windy"])


@app.tool(name="stats/mean", description="The mean of some numbers.", annotations=READ)
def mean(values: Annotated[list[float], Field(min_length=1)]) -> dict[str, float]:
    return {"mean": sum(values) / len(values), "n": float(len(values))}


@app.tool(name="shout", description="The text in capitals.", annotations=READ)
def shout(text: str) -> str:
    return text.upper()


class Issue(BaseModel):
    key: str = Field(alias="issue-key", pattern=r"^[A-Z]+-\d+$")
    size: int = Field(alias="page.size", ge=1)


def issue(issue: Issue) -> str:
    return f"{issue.key} {issue.size}"


if "--props" in sys.argv:
    app.tool(name="jira", description="An issue, one page of its comments.", annotations=READ)(issue)


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        app.run("stdio")
        sys.exit(0)
    port = int(sys.argv[1])
    if "--sse" in sys.argv:
        app.run("sse", host="127.0.0.1", port=port)
    else:
        app.run("streamable-http", host="127.0.0.1", port=port, json_response="--json" in sys.argv, stateless_http="--stateless" in sys.argv)
