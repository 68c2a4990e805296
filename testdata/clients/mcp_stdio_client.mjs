// The official TypeScript MCP client over stdio, started from an MCP
// client configuration entry as docs/mcp.md gives it: argv[2] is the
// entry's JSON ({"command": ..., "args": [...]}); the command is found on
// PATH, as a client application would find it.
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const entry = JSON.parse(readFileSync(process.argv[2], "utf8"));
const transport = new StdioClientTransport({ command: entry.command, args: entry.args, env: process.env, stderr: "ignore" });
const client = new Client({ name: "node-stdio-test", version: "0.0.1" });
await client.connect(transport);
const tools = await client.listTools();
const res = await client.callTool({ name: "execute_code", arguments: { code: "import sys\nprint(6 * 7, sys.version_info[:2])" } });
await client.close();
console.log(JSON.stringify({ tools: tools.tools.map((t) => t.name), text: res.content[0].text, status: res.structuredContent?.status }));
