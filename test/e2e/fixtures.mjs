/**
 * What the end-to-end suites and the sandbox need besides n8n itself: the API emulator (in-process),
 * a credential pointing at it, the example workflows with that credential filled in, a local "listing"
 * server that records what n8n sends it, and a polling wait.
 *
 * Needs `node --import tsx` (the emulator is TypeScript); gulp e2e / gulp sandbox run it that way.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

import { EXAMPLES_DIR } from './n8n.mjs';

export const PACKAGE_NODE_PREFIX = 'n8n-nodes-imagepack.';
/** The URL prefix the listing example posts to; tests and the sandbox point it at a local collector. */
export const LISTING_PLACEHOLDER = 'https://listing.example.com';

/** Starts the Image Pack API emulator in this process (see test/emulator/README.md). */
export async function startTestEmulator(options = {}) {
	const { startEmulator } = await import('../emulator/index.ts');
	return startEmulator({ port: 0, ...options });
}

/** An n8n credential export (plain-text data, n8n encrypts it on import) for the emulator. */
export function emulatorCredential(emulator, { id = 'imagePackEmuCred', name = 'Image Pack (emulator)' } = {}) {
	return { id, name, type: 'imagePackApi', data: { baseUrl: emulator.baseUrl, apiKey: emulator.apiKey } };
}

/** A deep copy of the workflow with every Image Pack node (action, trigger, tool) using the credential. */
export function withCredential(workflow, credential) {
	const copy = structuredClone(workflow);
	for (const node of copy.nodes) {
		if (node.type.startsWith(PACKAGE_NODE_PREFIX)) {
			node.credentials = { imagePackApi: { id: credential.id, name: credential.name } };
		}
	}
	return copy;
}

/** The example workflows in examples/*.json: { file, workflow }[]. */
export function exampleWorkflows() {
	return fs
		.readdirSync(EXAMPLES_DIR)
		.filter((name) => name.endsWith('.json'))
		.sort()
		.map((file) => ({ file, workflow: JSON.parse(fs.readFileSync(path.join(EXAMPLES_DIR, file), 'utf8')) }));
}

export function loadExample(file) {
	return JSON.parse(fs.readFileSync(path.join(EXAMPLES_DIR, file), 'utf8'));
}

/** Replaces `https://listing.example.com` in every string parameter with the given origin. */
export function pointListingAt(workflow, origin) {
	const replace = (value) => {
		if (typeof value === 'string') return value.split(LISTING_PLACEHOLDER).join(origin);
		if (Array.isArray(value)) return value.map(replace);
		if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, replace(v)]));
		return value;
	};
	const copy = structuredClone(workflow);
	for (const node of copy.nodes) node.parameters = replace(node.parameters);
	return copy;
}

/** A workflow node, positioned in a row. */
export function node(name, type, parameters = {}, extra = {}) {
	return { id: extra.id ?? `${name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`, name, type, typeVersion: 1, position: [0, 0], parameters, ...extra };
}

/** Manual Trigger → nodes[0] → nodes[1] …, with an explicit id (for `n8n execute --id`). */
export function chain(id, name, nodes) {
	const all = [node('Run', 'n8n-nodes-base.manualTrigger'), ...nodes].map((n, index) => ({ ...n, position: [index * 220, 0] }));
	const connections = {};
	for (let i = 0; i < all.length - 1; i++) connections[all[i].name] = { main: [[{ node: all[i + 1].name, type: 'main', index: 0 }]] };
	return { id, name, nodes: all, connections, settings: { executionOrder: 'v1' } };
}

/**
 * A local HTTP server standing in for a listing service: records every request (multipart bodies parsed
 * into fields and files) and answers 201 with a small JSON. Returns { url, requests, close() }.
 */
export async function startCollector({ port = 0, host = '127.0.0.1', onRequest } = {}) {
	const requests = [];
	const server = http.createServer((req, res) => {
		const chunks = [];
		req.on('data', (chunk) => chunks.push(chunk));
		req.on('end', async () => {
			const body = Buffer.concat(chunks);
			const url = new URL(req.url, `http://${req.headers.host}`);
			const entry = {
				method: req.method,
				path: url.pathname,
				query: Object.fromEntries(url.searchParams),
				headers: req.headers,
				body,
				fields: {},
				files: {},
			};
			try {
				if (String(req.headers['content-type'] ?? '').startsWith('multipart/form-data')) {
					const form = await new Response(body, { headers: { 'content-type': req.headers['content-type'] } }).formData();
					for (const [key, value] of form.entries()) {
						if (typeof value === 'string') entry.fields[key] = value;
						else entry.files[key] = { name: value.name, type: value.type, bytes: Buffer.from(await value.arrayBuffer()) };
					}
				} else if (String(req.headers['content-type'] ?? '').includes('json') && body.length) {
					entry.json = JSON.parse(body.toString('utf8'));
				}
			} catch (error) {
				entry.parseError = error.message;
			}
			requests.push(entry);
			onRequest?.(entry);
			res.writeHead(201, { 'content-type': 'application/json' });
			res.end(JSON.stringify({ ok: true, received: requests.length }));
		});
	});
	await new Promise((resolve, reject) => {
		server.once('error', reject);
		server.listen(port, host, resolve);
	});
	return {
		url: `http://${host}:${server.address().port}`,
		requests,
		close: () => new Promise((resolve) => server.close(() => resolve())),
	};
}

/** Polls `check` (sync or async) until it returns a truthy value; throws with `what` after the timeout. */
export async function waitFor(check, { timeoutMs = 60_000, intervalMs = 500, what = 'condition' } = {}) {
	const started = Date.now();
	let last;
	for (;;) {
		try {
			last = await check();
			if (last) return last;
		} catch (error) {
			last = error;
		}
		if (Date.now() - started > timeoutMs) {
			throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
		}
		await new Promise((resolve) => setTimeout(resolve, intervalMs));
	}
}

/**
 * The chat example made runnable by `n8n execute`, which starts only from a Manual Trigger: the Chat
 * Trigger becomes a Code node of the same name that emits the chat message a chat window would send
 * ({ sessionId, action, chatInput }), behind a Manual Trigger. Everything downstream stays as shipped.
 * `agentVersion` swaps the AI Agent's version, `id`/`name` make a distinct workflow.
 */
export function chatAsManualRun(workflow, { id, name, chatInput, agentVersion }) {
	const copy = structuredClone(workflow);
	const trigger = copy.nodes.find((n) => n.type === '@n8n/n8n-nodes-langchain.chatTrigger');
	const message = { sessionId: `e2e-${id}`, action: 'sendMessage', chatInput };
	Object.assign(trigger, {
		type: 'n8n-nodes-base.code',
		typeVersion: 2,
		parameters: { jsCode: `return [{ json: ${JSON.stringify(message)} }];` },
	});
	delete trigger.webhookId;
	copy.nodes.push(node('Run', 'n8n-nodes-base.manualTrigger', {}, { position: [trigger.position[0] - 220, trigger.position[1]] }));
	copy.connections.Run = { main: [[{ node: trigger.name, type: 'main', index: 0 }]] };
	if (agentVersion) copy.nodes.find((n) => n.type === '@n8n/n8n-nodes-langchain.agent').typeVersion = agentVersion;
	return { ...copy, id, name };
}

/** Points every OpenAI chat model node of the workflow at the given openAiApi credential. */
export function withModelCredential(workflow, credential) {
	const copy = structuredClone(workflow);
	for (const n of copy.nodes) {
		if (n.type === '@n8n/n8n-nodes-langchain.lmChatOpenAi') n.credentials = { openAiApi: { id: credential.id, name: credential.name } };
	}
	return copy;
}

/** seedream-5-0-pro at 1K costs 6 credits an image: with 20 credits, 1 + 4 + 1 images refuse the second. */
export const ERROR_CREDITS = 20;

/**
 * Three items per operation, the second failing; `facts` are the failed item's error facts. The On Error
 * suites use them: error-output.test.mjs in n8n 2.41.1, test/compat on every version.
 */
export const OPERATIONS = {
	generate: {
		parameters: {
			resource: 'image',
			operation: 'generate',
			prompt: '={{ $json.prompt }}',
			model: 'seedream-5-0-pro',
			ratio: '1:1',
			n: '={{ $json.n }}',
			options: { downloadImages: false },
		},
		rows: () => [1, 4, 1].map((n, index) => ({ sku: `SKU-${index}`, prompt: `product ${index}`, n })),
		facts: { code: 'insufficient_credits', httpStatus: 402, requestId: /^req_/, charge: 'not_charged' },
	},
	get: {
		parameters: { resource: 'publication', operation: 'get', publicationId: { __rl: true, mode: 'id', value: '={{ $json.id }}' } },
		rows: (fixture) => [fixture.mine, fixture.theirs, fixture.mine].map((id, index) => ({ sku: `SKU-${index}`, id })),
		facts: { code: 'not_found', httpStatus: 404, requestId: /^req_/, charge: 'not_charged' },
	},
	getMany: {
		parameters: { resource: 'publication', operation: 'getMany', sinceId: '={{ $json.since }}', limit: 1 },
		rows: () => [0, 'yesterday', 0].map((since, index) => ({ sku: `SKU-${index}`, since })),
		facts: { code: 'invalid_parameter', httpStatus: null, requestId: null, charge: 'not_sent' },
	},
	download: {
		parameters: { resource: 'file', operation: 'download', fileUrl: '={{ $json.file }}' },
		rows: (fixture) => [fixture.file, '/api/file/missing.png', fixture.file].map((file, index) => ({ sku: `SKU-${index}`, file })),
		facts: { code: 'not_found', httpStatus: 404, requestId: /^req_/, charge: 'not_charged' },
	},
};
