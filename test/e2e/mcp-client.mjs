/**
 * The MCP side of the MCP suites and the bench: the shipped MCP server example (examples/mcp-server.json)
 * made into variants, and the official MCP TypeScript SDK client (@modelcontextprotocol/sdk, Streamable
 * HTTP, its defaults: 60 s per request) talking to n8n's MCP Server Trigger.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { loadExample, withCredential } from './fixtures.mjs';

export const MCP_EXAMPLE = 'mcp-server.json';
export const GENERATE_TOOL = 'Generate_product_images';
export const LOOKUP_TOOL = 'Look_up_a_publication';
export const BEARER = { id: 'mcpBearerCred001', name: 'MCP bearer (e2e)', type: 'httpBearerAuth', data: { token: 'e2e-mcp-token-0123456789abcdef' } };

/**
 * The example with the Image Pack credential and the bearer credential filled in, under its own id and
 * path (`path`), the Generate tool's options and node settings changed as given.
 */
export function mcpWorkflow(credential, { id, path, options = {}, generateSettings = {}, bearer = BEARER }) {
	const workflow = withCredential(loadExample(MCP_EXAMPLE), credential);
	const suffix = id.slice(-6);
	for (const node of workflow.nodes) node.id = `${suffix}${node.id.slice(suffix.length)}`;
	const trigger = workflow.nodes.find((n) => n.type === '@n8n/n8n-nodes-langchain.mcpTrigger');
	trigger.parameters.path = path;
	trigger.webhookId = `${suffix}${trigger.webhookId.slice(suffix.length)}`;
	trigger.credentials = { httpBearerAuth: { id: bearer.id, name: bearer.name } };
	const generate = workflow.nodes.find((n) => n.parameters.operation === 'generate');
	Object.assign(generate.parameters.options, options);
	Object.assign(generate, generateSettings);
	return { ...workflow, id, name: `e2e: MCP ${path}` };
}

/**
 * A connected MCP client (a new session); `close()` ends it. `fetch` replaces the transport's fetch
 * (to watch its requests and answers).
 */
export async function mcpClient(url, { token = BEARER.data.token, fetch } = {}) {
	const client = new Client({ name: 'imagepack-e2e', version: '1.0.0' });
	const transport = new StreamableHTTPClientTransport(new URL(url), {
		requestInit: { headers: { authorization: `Bearer ${token}` } },
		...(fetch ? { fetch } : {}),
	});
	await client.connect(transport);
	return client;
}

/** A tool call with the SDK's defaults: { result, ms, json (the parsed text, when JSON), text }. */
export async function callTool(client, name, args) {
	const started = Date.now();
	const result = await client.callTool({ name, arguments: args });
	const text = result.content?.[0]?.text ?? '';
	let json;
	try {
		json = JSON.parse(text);
	} catch {}
	return { result, ms: Date.now() - started, text, json, isError: result.isError === true };
}

/** The Generate tool's arguments (nano-banana-2, 1K: 12 credits). */
export const generateArgs = (prompt, extra = {}) => ({ prompt, ratio: '1:1', referenceImageIds: '', sessionId: '', ...extra });
