/**
 * Generate's durable record in n8n's OWN deduplication store loses nothing under concurrency, in a
 * running n8n 2.41.1 (regular mode, SQLite).
 *
 * n8n keeps one `processed_data` row per (workflowId, context: `n:<node id>` for the node's scope, ''
 * for the workflow's) whose `value` is
 * `{"mode":"entries","data":[<base64 MD5>, …]}`, and `checkProcessedAndRecord` reads that row and
 * rewrites it whole, with no lock or transaction around the two (n8n's deduplication-helper.js): two
 * calls at once can each add their entry to the same old list, and the later write drops the other's
 * entry. The node lines its calls up per node in the process (`inTurn` in generate/durable.ts). This
 * test lets n8n itself write the row and reads it back from the database.
 *
 * Webhook (POST, "Respond: when last node finishes", all entries) → Split Out (body.products, 16
 * distinct products) → Generate (Concurrency 8, Download Images off). The webhook is called twice at
 * once with the same 16 products: two executions, each with its own resume token, so 32 sends and 32
 * different records. The emulator holds the first 16 generate requests (8 lanes of each execution:
 * both executions are inside Generate at the same moment) and lets them all go together, so both
 * executions' lanes claim their next products at the same moment. Then the workflow's row, where
 * claims go (fewer than 200: none moved to the node's row yet), must hold exactly 32 distinct entries,
 * the node's row one `began` value per execution, and the emulator must have seen 32 generate
 * requests, two per product.
 *
 * The database is read with the sqlite3 driver of the pinned n8n install, under n8n's own Node
 * (`querySqlite` in n8n.mjs): nothing to install beyond what every e2e test needs. One n8n start.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { startTestEmulator, waitFor } from './fixtures.mjs';
import { crashableN8n, isFinished } from './crash-kit.mjs';
import { createUserFolder, packPackage, querySqlite, startN8n } from './n8n.mjs';

const OWNER = { email: 'owner@example.com', password: 'Store-Test-Password-1' };
const PATH = 'durable-store';
const PRODUCTS = 16;
const CONCURRENCY = 8;
const CALLS = 2;
const GENERATE = { id: 'generate', name: 'Generate' };
const products = Array.from({ length: PRODUCTS }, (_, i) => ({ sku: `SKU-${i + 1}`, prompt: `durable store product ${i + 1}` }));

function workflow(credential) {
	return {
		name: 'durable store: two executions at once, Concurrency 8',
		settings: { executionOrder: 'v1' },
		nodes: [
			{
				id: 'webhook',
				name: 'Webhook',
				type: 'n8n-nodes-base.webhook',
				typeVersion: 2,
				position: [0, 0],
				webhookId: `${PATH}-hook`,
				parameters: { httpMethod: 'POST', path: PATH, responseMode: 'lastNode', responseData: 'allEntries', options: {} },
			},
			{
				id: 'split',
				name: 'Split Out',
				type: 'n8n-nodes-base.splitOut',
				typeVersion: 1,
				position: [220, 0],
				parameters: { fieldToSplitOut: 'body.products', options: {} },
			},
			{
				...GENERATE,
				type: 'n8n-nodes-imagepack.imagePack',
				typeVersion: 1,
				position: [440, 0],
				parameters: {
					resource: 'image',
					operation: 'generate',
					prompt: '={{ $json.prompt }}',
					model: 'nano-banana-2',
					ratio: '1:1',
					resolution: '1K',
					options: { concurrency: CONCURRENCY, downloadImages: false },
				},
				credentials: { imagePackApi: { id: credential.id, name: credential.name } },
			},
		],
		connections: {
			Webhook: { main: [[{ node: 'Split Out', type: 'main', index: 0 }]] },
			'Split Out': { main: [[{ node: GENERATE.name, type: 'main', index: 0 }]] },
		},
	};
}

describe('n8n 2.41.1: Generate’s records in n8n’s own deduplication store, two executions × Concurrency 8', () => {
	let emulator;
	let userFolder;
	let n8n;
	let packed;
	let workflowId;

	before(async () => {
		emulator = await startTestEmulator();
		const tarball = process.env.IMAGEPACK_TARBALL ?? (packed = await packPackage());
		userFolder = await createUserFolder({ tarball });
		n8n = crashableN8n({ userFolder: userFolder.dir, profile: 'default', owner: OWNER, startN8n });
		await n8n.start();
		const credential = await n8n.createCredential({ name: 'Image Pack (emulator)', type: 'imagePackApi', data: { baseUrl: emulator.baseUrl, apiKey: emulator.apiKey } });
		workflowId = await n8n.publish(workflow(credential));
		// Registered for POST: a GET is refused with "…Did you mean to make a POST request?" (starts nothing).
		await waitFor(
			async () => {
				const response = await fetch(`${n8n.n8n.url}/webhook/${PATH}`);
				return response.status === 404 && /POST/.test(await response.text());
			},
			{ timeoutMs: 60_000, intervalMs: 250, what: `the webhook ${PATH} to be registered for POST` },
		);
	});

	after(async () => {
		await emulator?.control.releaseHeld().catch(() => {});
		await n8n?.stop();
		await emulator?.close();
		userFolder?.cleanup();
		if (packed) fs.rmSync(path.dirname(packed), { recursive: true, force: true });
	});

	it('the webhook called twice at once: 32 sends, 32 distinct claims in the workflow’s processed_data row', async () => {
		// Both executions' first 8 lanes held in front of the service (never processed until released).
		await emulator.control.injectFault({ route: 'generate', kind: 'hold', when: 'before', count: CALLS * CONCURRENCY });
		const calls = Array.from({ length: CALLS }, () =>
			fetch(`${n8n.n8n.url}/webhook/${PATH}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ products }) }).then(
				async (response) => ({ status: response.status, body: await response.text() }),
				(error) => ({ status: 'failed', body: String(error) }),
			),
		);
		const settled = [];
		calls.forEach((call, i) => call.then((answer) => (settled[i] = answer)));
		await waitFor(async () => settled.some(Boolean) || (await emulator.control.held()).length >= CALLS * CONCURRENCY, {
			timeoutMs: 120_000,
			intervalMs: 250,
			what: `${CALLS * CONCURRENCY} generate requests held (8 lanes of each execution)`,
		});
		assert.ok(!settled.some(Boolean), `a call ended before both executions were in Generate: ${JSON.stringify(settled).slice(0, 600)}`);
		await emulator.control.releaseHeld();
		const answers = await Promise.all(calls);

		const executions = await waitFor(
			async () => {
				const list = await n8n.executions(workflowId);
				return list.length >= CALLS && list.every(isFinished) && list;
			},
			{ timeoutMs: 180_000, intervalMs: 500, what: 'both executions to finish' },
		);
		const log = await emulator.control.requests({ route: 'generate' });
		const perProduct = products.map((product) => log.filter((entry) => entry.prompt === product.prompt).length);
		const rows = await querySqlite(userFolder.dir, 'SELECT workflowId, context, value FROM processed_data WHERE workflowId = ?', [workflowId]);
		const claims = rows.find((row) => row.context === '');
		const sends = rows.find((row) => row.context === `n:${GENERATE.id}`);
		const value = claims ? JSON.parse(claims.value) : null;
		const began = sends ? JSON.parse(sends.value) : null;
		const facts = [
			`answers ${answers.map((a) => `${a.status}:${a.body.slice(0, 200)}`).join(' | ')}`,
			`executions ${executions.map((e) => `${e.id}:${e.mode}/${e.status} ${e.startedAt}→${e.stoppedAt}`).join(', ')}`,
			`generate requests ${log.length}, per product ${JSON.stringify(perProduct)}`,
			`processed_data rows ${JSON.stringify(rows.map((r) => ({ ...r, value: `${String(r.value).length} chars` })))}`,
			`claims ${value?.data?.length} (${new Set(value?.data ?? []).size} distinct), node's row ${began?.data?.length}`,
		].join('; ');
		process.stderr.write(`[durable-store] ${facts}\n`);

		// Both calls answered with all 16 products generated.
		for (const answer of answers) {
			assert.equal(answer.status, 200, facts);
			const items = JSON.parse(answer.body);
			assert.equal(items.length, PRODUCTS, facts);
			assert.ok(items.every((item) => item.turn_id), `every product generated — ${facts}`);
		}
		assert.equal(executions.length, CALLS, facts);
		assert.deepEqual(executions.map((e) => [e.mode, e.status]), Array(CALLS).fill(['webhook', 'success']), facts);
		const [a, b] = executions.map((e) => [Date.parse(e.startedAt), Date.parse(e.stoppedAt)]);
		assert.ok(a[0] < b[1] && b[0] < a[1], `the two executions ran at the same time — ${facts}`);

		// The emulator: 32 sends, each product twice (once per execution).
		assert.equal(log.length, CALLS * PRODUCTS, facts);
		assert.deepEqual(perProduct, Array(PRODUCTS).fill(CALLS), facts);

		// n8n's own rows: the claims in the workflow's, every send recorded, none lost, none twice; the
		// node's holds each execution's `began` value.
		assert.equal(rows.length, 2, `two processed_data rows for the workflow — ${facts}`);
		assert.ok(claims && sends, facts);
		assert.equal(value.mode, 'entries', facts);
		assert.ok(value.data.every((entry) => /^[A-Za-z0-9+/]{22}==$/.test(entry)), `base64 MD5 entries — ${facts}`);
		assert.equal(new Set(value.data).size, CALLS * PRODUCTS, `32 distinct entries: no record lost — ${facts}`);
		assert.equal(value.data.length, CALLS * PRODUCTS, facts);
		assert.equal(new Set(began.data).size, CALLS, `one began value per execution — ${facts}`);
	});
});
