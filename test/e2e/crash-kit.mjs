/**
 * The crash kit: n8n SIGKILLed while Generate's request is in flight, restarted on the same user
 * folder, and the crashed execution retried as the editor's Executions list does. Shared by
 * test/e2e/crash.test.mjs (n8n 2.41.1) and test/compat/crash.test.mjs (every profile).
 *
 * The emulator holds the chosen generation (`hold` fault, test/emulator/README.md) until n8n is gone:
 * `when: 'after'` once the generation ran and was charged (the answer is lost), `when: 'before'` before
 * the service saw it (never processed, never charged). Everything is counted at the emulator, per
 * product: every prompt is unique to its scenario.
 */
import assert from 'node:assert/strict';
import http from 'node:http';

import { waitFor } from './fixtures.mjs';
import { installPaths, isFinished, querySqlite, readExecutions, restSession, withRunData } from './n8n.mjs';
import { createActiveWorkflow, ok, ownerSession } from '../compat/n8n-rest.mjs';

export const GENERATE = 'Generate';
export const PRODUCTS = 8;
/** Which product's generation the emulator holds while n8n is killed (1-based). */
export const HELD = 4;

/** The products of a scenario: `SKU-1` … with prompts unique to the scenario (`<label> product <n>`). */
export const products = (label, count = PRODUCTS) =>
	Array.from({ length: count }, (_, i) => ({ sku: `SKU-${i + 1}`, prompt: `${label} product ${i + 1}` }));

const connect = (from, to, output = 0) => {
	const main = [];
	main[output] = [{ node: to, type: 'main', index: 0 }];
	for (let i = 0; i < output; i++) main[i] ??= [];
	return { [from]: { main } };
};

export function generateNode(credential, { onError = 'continueErrorOutput', options = {} } = {}) {
	return {
		id: 'generate',
		name: GENERATE,
		type: 'n8n-nodes-imagepack.imagePack',
		typeVersion: 1,
		position: [660, 0],
		parameters: {
			resource: 'image',
			operation: 'generate',
			prompt: '={{ $json.prompt }}',
			model: 'nano-banana-2',
			ratio: '1:1',
			resolution: '1K',
			options: { downloadImages: true, concurrency: 1, ...options },
		},
		credentials: { imagePackApi: { id: credential.id, name: credential.name } },
		...(onError ? { onError } : {}),
	};
}

/**
 * Webhook (POST /webhook/<path>, answers at once) → Split Out (body.products) → Generate. With `gate`,
 * an HTTP Request to that URL (once per execution) stands before the products: a node upstream of
 * Generate that fails while the gate is closed.
 */
export function webhookWorkflow({ name, path, credential, settings = {}, onError, options, gate }) {
	const webhook = {
		id: 'webhook',
		name: 'Webhook',
		type: 'n8n-nodes-base.webhook',
		typeVersion: 2,
		position: [0, 0],
		webhookId: `${path}-hook`,
		parameters: { httpMethod: 'POST', path, responseMode: 'onReceived', options: {} },
	};
	const generate = generateNode(credential, { onError, options });
	const base = { name, settings: { executionOrder: 'v1', saveManualExecutions: true, ...settings } };
	if (!gate) {
		const split = { id: 'split', name: 'Split Out', type: 'n8n-nodes-base.splitOut', typeVersion: 1, position: [220, 0], parameters: { fieldToSplitOut: 'body.products', options: {} } };
		return { ...base, nodes: [webhook, split, generate], connections: { ...connect('Webhook', 'Split Out'), ...connect('Split Out', GENERATE) } };
	}
	const check = { id: 'gate', name: 'Gate', type: 'n8n-nodes-base.httpRequest', typeVersion: 4.2, position: [220, 0], executeOnce: true, parameters: { url: gate, options: {} } };
	const list = { id: 'products', name: 'Products', type: 'n8n-nodes-base.code', typeVersion: 2, position: [440, 0], parameters: { jsCode: "return $('Webhook').first().json.body.products.map((product) => ({ json: product }));" } };
	return {
		...base,
		nodes: [webhook, check, list, generate],
		connections: { ...connect('Webhook', 'Gate'), ...connect('Gate', 'Products'), ...connect('Products', GENERATE) },
	};
}

/** Manual Trigger "Run" → Code "Products" (the given products, fixed) → Generate: run from the editor. */
export function manualWorkflow({ name, credential, list }) {
	return {
		name,
		settings: { executionOrder: 'v1', saveManualExecutions: true },
		nodes: [
			{ id: 'run', name: 'Run', type: 'n8n-nodes-base.manualTrigger', typeVersion: 1, position: [0, 0], parameters: {} },
			{ id: 'products', name: 'Products', type: 'n8n-nodes-base.code', typeVersion: 2, position: [220, 0], parameters: { jsCode: `return ${JSON.stringify(list.map((json) => ({ json })))};` } },
			generateNode(credential),
		],
		connections: { ...connect('Run', 'Products'), ...connect('Products', GENERATE) },
	};
}

/** A local URL that answers 200 while open and 503 while closed: { url, open, close(), stop() }. */
export async function startGate() {
	const gate = { open: true, calls: 0 };
	const server = http.createServer((req, res) => {
		gate.calls++;
		res.writeHead(gate.open ? 200 : 503, { 'content-type': 'application/json' });
		res.end(JSON.stringify({ open: gate.open }));
	});
	await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
	gate.url = `http://127.0.0.1:${server.address().port}/gate`;
	gate.stop = () => new Promise((resolve) => server.close(() => resolve()));
	return gate;
}

/**
 * One n8n (a profile) on one user folder, started, SIGKILLed and restarted; a REST session as the owner
 * (created through the owner setup on the first start). `start` is test/e2e/n8n.mjs's startN8n.
 */
export function crashableN8n({ userFolder, profile, owner, startN8n, env = {} }) {
	const version = installPaths(profile).profile.n8n;
	const self = { version, profile, n8n: null, session: null };
	self.start = async () => {
		self.n8n = await startN8n({ userFolder, profile, echo: !!process.env.E2E_ECHO, env: { N8N_SECURE_COOKIE: 'false', ...env } });
		await waitFor(async () => (await fetch(`${self.n8n.url}/rest/settings`)).status === 200, { timeoutMs: 60_000, what: 'n8n’s REST API' });
		self.session = self.ownerReady ? await restSession(self.n8n.url, owner) : await ownerSession(self.n8n.url, owner);
		self.ownerReady = true;
		return self;
	};
	self.kill = async () => self.n8n?.kill();
	self.stop = async () => self.n8n?.stop();
	self.rest = (method, route, body) => ok(self.session, method, route, body);
	/** Creates a credential ({ name, type, data }) as the editor does; returns { id, name }. */
	self.createCredential = async ({ name, type, data }) => {
		const created = await self.rest('POST', '/credentials', { name, type, data });
		return { id: String(created.id), name: created.name };
	};
	/** Creates and publishes (1.x: activates) a workflow as the editor does; returns its id. */
	self.publish = (workflow) => createActiveWorkflow(self.session, version, workflow);
	/** Creates a workflow without publishing it (runs from the editor only); returns its id. */
	self.create = async (workflow) => String((await self.rest('POST', '/workflows', { ...workflow, active: false })).id);
	/** POSTs to a production webhook, waiting while n8n has not registered it (404). */
	self.call = async (path, body) => {
		const status = await waitFor(
			async () => {
				const response = await fetch(`${self.n8n.url}/webhook/${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
				await response.arrayBuffer();
				return response.status !== 404 && response.status;
			},
			{ timeoutMs: 90_000, intervalMs: 500, what: `the webhook ${path} to be registered` },
		);
		assert.equal(status, 200, `webhook ${path} answered ${status}`);
	};
	/** A manual run of the whole workflow from its trigger, as the editor's "Execute workflow" (2.x body). */
	self.runManually = async (workflowId, triggerName) => {
		const data = await self.rest('POST', `/workflows/${workflowId}/run`, { triggerToStartFrom: { name: triggerName } });
		assert.ok(data?.executionId, `the manual run started no execution: ${JSON.stringify(data)}`);
		return String(data.executionId);
	};
	/** The workflow's executions (SQLite), oldest first, each with its run data and `retryOf`. */
	self.executions = async (workflowId) => {
		const rows = await querySqlite(
			userFolder,
			`SELECT e.id, e.workflowId, e.mode, e.status, e.retryOf, e.retrySuccessId, e.startedAt, e.stoppedAt, d.data
			   FROM execution_entity e LEFT JOIN execution_data d ON d.executionId = e.id
			  WHERE e.workflowId = ? ORDER BY e.id`,
			[workflowId],
			{ profile },
		);
		return withRunData(rows, { profile });
	};
	/** Waits until the workflow has an execution with this id (or the n-th) and n8n is done with it. */
	self.finished = async (workflowId, pick, what = 'execution') =>
		waitFor(
			async () => {
				const list = await self.executions(workflowId);
				const found = typeof pick === 'function' ? pick(list) : list.find((e) => String(e.id) === String(pick));
				return found && isFinished(found) && found;
			},
			{ timeoutMs: 180_000, intervalMs: 500, what: `${what} of workflow ${workflowId} to finish` },
		);
	/** Waits until n8n, restarted, has marked the workflow's interrupted execution `crashed`. */
	self.crashed = async (workflowId) =>
		waitFor(async () => (await self.executions(workflowId)).find((e) => e.status === 'crashed'), {
			timeoutMs: 120_000,
			what: `n8n to mark the execution of ${workflowId} crashed`,
		});
	/**
	 * Executions → Retry, as the editor sends it (`POST /rest/executions/:id/retry`, "with original
	 * workflow" = loadWorkflow false, "with currently saved workflow" = true). n8n answers once the retry
	 * ended (2.x with the execution, 1.100 with its status only): the retry is found by its `retryOf`.
	 */
	self.retry = async (execution, { loadWorkflow = false } = {}) => {
		const answer = await self.session.request('POST', `/rest/executions/${execution.id}/retry`, { loadWorkflow });
		assert.equal(answer.status, 200, `retry of ${execution.id}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 400)}`);
		const workflowId = execution.workflowId;
		return self.finished(
			workflowId,
			(list) => list.filter((e) => String(e.retryOf) === String(execution.id)).at(-1),
			`the retry of ${execution.id}`,
		);
	};
	return self;
}

/**
 * The emulator's view of a list of products: generate requests, credits charged and successful turns,
 * per product (prompt). `line` prints it for assertion messages.
 */
export async function perProduct(emulator, list) {
	const log = await emulator.control.requests({ route: 'generate' });
	const turns = await emulator.control.turns();
	const of = (product) => ({
		requests: log.filter((e) => e.prompt === product.prompt).length,
		charged: turns.filter((t) => t.prompt === product.prompt).reduce((sum, t) => sum + t.charged, 0),
		turns: turns.filter((t) => t.prompt === product.prompt).length,
	});
	const rows = list.map(of);
	return {
		requests: rows.map((r) => r.requests),
		charged: rows.map((r) => r.charged),
		turns: rows.map((r) => r.turns),
		line: `generate requests per product ${JSON.stringify(rows.map((r) => r.requests))}, credits charged ${JSON.stringify(rows.map((r) => r.charged))}`,
	};
}

/** The input item an output item is paired with (Generate's success items carry no input field). */
function pairedIndex(item) {
	const paired = Array.isArray(item.pairedItem) ? item.pairedItem[0] : item.pairedItem;
	return typeof paired === 'number' ? paired : paired?.item;
}

/**
 * The SKUs of a Generate output (0 = success, 1 = error output) of an execution, from each item's
 * pairing with its input (products are SKU-1… in input order); an error item's own `sku` (n8n merges
 * the input in) must agree.
 */
export const skusOf = (execution, output) =>
	execution.nodeOutput(GENERATE, output).map((item) => {
		const sku = pairedIndex(item) === undefined ? `unpaired` : `SKU-${pairedIndex(item) + 1}`;
		if (item.json.sku !== undefined && item.json.sku !== sku) return `${item.json.sku} (paired with ${sku})`;
		return sku;
	});

/** A short description of Generate's outputs of an execution, for assertion messages. */
export function outputsLine(execution) {
	const [generated, refused] = [0, 1].map((output) => skusOf(execution, output));
	const ok = execution.nodeOutput(GENERATE, 0).map((item, i) => `${generated[i]}:${item.json.turn_id ? 'generated' : JSON.stringify(item.json).slice(0, 80)}`);
	const failed = execution.nodeOutput(GENERATE, 1).map((item, i) => `${refused[i]}:${item.json.error?.code}/${item.json.error?.charge}`);
	const error = execution.run?.resultData?.error;
	return `status ${execution.status}; success output [${ok.join(', ')}]; error output [${failed.join(', ')}]${error ? `; error: ${error.message}` : ''}`;
}

/** Waits until the emulator holds `count` requests; returns them. */
export async function heldRequests(emulator, count) {
	return waitFor(async () => {
		const held = await emulator.control.held();
		return held.length >= count && held;
	}, { timeoutMs: 120_000, intervalMs: 250, what: `${count} generate requests held by the emulator` });
}

export { isFinished, readExecutions };
