// The official TypeScript MCP client over Streamable HTTP, as an agent
// would connect: argv[2] the endpoint, $HERMES_SERVE_TOKEN the bearer.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = new URL(process.argv[2]);
const headers = { Authorization: `Bearer ${process.env.HERMES_SERVE_TOKEN}` };
const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers } });
const client = new Client({ name: "node-test", version: "0.0.1" });
await client.connect(transport);
const tools = await client.listTools();
const out = { tools: tools.tools.map((t) => t.name), session: transport.sessionId, calls: [] };
for (const code of ["from hermes_tools import read_file\nn = read_file('notes.txt')['total_lines']\nprint(n)", "print(n * 21)"]) {
  const res = await client.callTool({ name: "execute_code", arguments: { code } });
  out.calls.push({ text: res.content[0].text, isError: !!res.isError, status: res.structuredContent?.status });
}
await transport.terminateSession();
await client.close();
console.log(JSON.stringify(out));
