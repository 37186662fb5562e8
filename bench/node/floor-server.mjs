// The Node SDK's floor for bench.overhead: one trivial async tool on @modelcontextprotocol/sdk over stdio.
//
// The SDK and zod are the very copies the official server installed (BENCH_NODE_MODULES: its node_modules),
// so the floor is that of the SDK the official server runs on. The tool answers BENCH_FLOOR_BYTES of text
// without any work, as bench/overhead.py's Python floor does on the Python SDK.
import { pathToFileURL } from 'node:url';

const root = process.env.BENCH_NODE_MODULES ?? '';
const load = (path) => import(pathToFileURL(`${root}/${path}`).href);
const { McpServer } = await load('@modelcontextprotocol/sdk/dist/esm/server/mcp.js');
const { StdioServerTransport } = await load('@modelcontextprotocol/sdk/dist/esm/server/stdio.js');
const { z } = await load('zod/index.js');

const text = 'x'.repeat(Number(process.env.BENCH_FLOOR_BYTES ?? '4000'));
const server = new McpServer({ name: 'floor', version: '0' });
server.tool('echo', 'Echo.', { query: z.string() }, async () => ({ content: [{ type: 'text', text }] }));
await server.connect(new StdioServerTransport());
