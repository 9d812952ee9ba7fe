/**
 * "n8n stopping mid-run never pays twice" (the product's promise), in a running n8n 2.41.1 (regular mode,
 * SQLite): Webhook → 8 products → Generate (Concurrency 1, Download Images on, On Error: Continue
 * (using error output)). The emulator holds the 4th generation until n8n has been SIGKILLed; n8n is
 * restarted on the same user folder and each crashed execution is retried over REST as the editor's
 * Executions list does. One kill serves every path (a workflow each, all in flight at once):
 *
 * - Save Execution Progress off / on × "with original workflow" / "with currently saved workflow": at
 *   most one generate request per product across the crashed run and its retry; products 5–8 generated
 *   by the retry; products 1–4 on the error output as `interrupted_send` / `may_have_been_charged`.
 * - the kill before the service processed the request (held in front of it): never charged; the retry
 *   refuses it the same way (On Error: stop, so the retry fails and the editor offers a retry of the
 *   retry); a retry of that with Resend Uncertain Generations on sends it, charged once.
 *
 * Then new work that must generate (no false refusal): the same webhook called again after a successful
 * run, a second manual run from the editor, a retry of an execution that failed upstream of Generate
 * after an identical successful one; and the Idempotency Key: a new execution with recorded SKUs sends
 * nothing (`idempotency_key_used`, `not_sent`). Two n8n starts in all.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { startTestEmulator, waitFor } from './fixtures.mjs';
import {
	GENERATE,
	HELD,
	PRODUCTS,
	crashableN8n,
	heldRequests,
	manualWorkflow,
	outputsLine,
	perProduct,
	products,
	skusOf,
	startGate,
	webhookWorkflow,
} from './crash-kit.mjs';
import { createUserFolder, packPackage, startN8n } from './n8n.mjs';

const OWNER = { email: 'owner@example.com', password: 'Crash-Test-Password-1' };
const SKUS = (from, to) => Array.from({ length: to - from + 1 }, (_, i) => `SKU-${from + i}`);

/** The four stop-and-retry paths: a workflow each, killed together. */
const PATHS = [
	{ key: 'progress-off-original', settings: {}, loadWorkflow: false },
	{ key: 'progress-off-saved', settings: {}, loadWorkflow: true },
	{ key: 'progress-on-original', settings: { saveExecutionProgress: true }, loadWorkflow: false },
	{ key: 'progress-on-saved', settings: { saveExecutionProgress: true }, loadWorkflow: true },
];
/** Killed before the service processed its one product. */
const UNSENT = { key: 'unsent', list: products('unsent', 1) };

describe('n8n 2.41.1 killed mid-Generate, then Executions → Retry', () => {
	let emulator;
	let gate;
	let userFolder;
	let n8n;
	let credential;
	let packed;
	const ids = {};

	before(async () => {
		emulator = await startTestEmulator();
		gate = await startGate();
		const tarball = process.env.IMAGEPACK_TARBALL ?? (packed = await packPackage());
		userFolder = await createUserFolder({ tarball });
		n8n = crashableN8n({ userFolder: userFolder.dir, profile: 'default', owner: OWNER, startN8n });
		await n8n.start();
		credential = await n8n.createCredential({ name: 'Image Pack (emulator)', type: 'imagePackApi', data: { baseUrl: emulator.baseUrl, apiKey: emulator.apiKey } });
		for (const scenario of PATHS) {
			scenario.list = products(scenario.key);
			ids[scenario.key] = await n8n.publish(webhookWorkflow({ name: `crash: ${scenario.key}`, path: scenario.key, credential, settings: scenario.settings }));
		}
		ids.unsent = await n8n.publish(webhookWorkflow({ name: 'crash: unsent', path: 'unsent', credential, onError: null }));
		ids.again = await n8n.publish(webhookWorkflow({ name: 'new work: again', path: 'again', credential }));
		ids.upstream = await n8n.publish(webhookWorkflow({ name: 'new work: upstream failure', path: 'upstream', credential, gate: gate.url }));
		ids.keyed = await n8n.publish(webhookWorkflow({ name: 'idempotency key', path: 'keyed', credential, options: { idempotencyKey: '={{ $json.sku }}' } }));
		ids.manual = await n8n.create(manualWorkflow({ name: 'new work: manual', credential, list: products('manual') }));
	});

	after(async () => {
		await n8n?.stop();
		await gate?.stop();
		await emulator?.close();
		userFolder?.cleanup();
		if (packed) fs.rmSync(path.dirname(packed), { recursive: true, force: true });
	});

	describe('the 4th generation in flight when n8n is killed', () => {
		const crashed = {};

		before(async () => {
			for (const scenario of PATHS) {
				// Held once generated and charged: the answer never reaches n8n.
				await emulator.control.injectFault({ route: 'generate', kind: 'hold', when: 'after', promptIncludes: scenario.list[HELD - 1].prompt });
				await n8n.call(scenario.key, { products: scenario.list });
			}
			// Held in front of the service: never processed.
			await emulator.control.injectFault({ route: 'generate', kind: 'hold', when: 'before', promptIncludes: UNSENT.list[0].prompt });
			await n8n.call('unsent', { products: UNSENT.list });
			await heldRequests(emulator, PATHS.length + 1);
			await n8n.kill();
			// The emulator saw every held client go.
			await waitFor(async () => (await emulator.control.held()).length === 0, { timeoutMs: 30_000, what: 'the held connections to close' });
			await n8n.start();
			for (const key of [...PATHS.map((p) => p.key), 'unsent']) crashed[key] = await n8n.crashed(ids[key]);
		});

		for (const scenario of PATHS) {
			it(`${scenario.key}: Retry ${scenario.loadWorkflow ? 'with currently saved workflow' : 'with original workflow'} pays for nothing twice and generates products 5–8`, async () => {
				const before = await perProduct(emulator, scenario.list);
				assert.deepEqual(before.requests, [1, 1, 1, 1, 0, 0, 0, 0], `the crashed run sent products 1–4: ${before.line}`);
				const retried = await n8n.retry(crashed[scenario.key], { loadWorkflow: scenario.loadWorkflow });
				const seen = await perProduct(emulator, scenario.list);
				const facts = `${scenario.key}: ${seen.line}; retry ${retried.id}: ${outputsLine(retried)}`;
				assert.equal(retried.mode, 'retry', facts);
				assert.ok(seen.requests.every((count) => count <= 1), `at most one generate request per product across the crashed run and its retry — ${facts}`);
				assert.deepEqual(seen.requests, Array(PRODUCTS).fill(1), `products 5–8 sent by the retry — ${facts}`);
				assert.equal(retried.status, 'success', facts);
				assert.deepEqual(skusOf(retried, 0), SKUS(HELD + 1, PRODUCTS), `products 5–8 generated — ${facts}`);
				assert.ok(retried.nodeOutput(GENERATE, 0).every((item) => item.json.turn_id && item.binary?.image_0), `generated with their images — ${facts}`);
				const refused = retried.nodeOutput(GENERATE, 1);
				assert.deepEqual(skusOf(retried, 1), SKUS(1, HELD), `products 1–4 on the error output — ${facts}`);
				for (const item of refused) {
					assert.equal(item.json.error?.charge, 'may_have_been_charged', `${item.json.sku} — ${facts}`);
					assert.equal(item.json.error?.code, 'interrupted_send', `${item.json.sku} — ${facts}`);
				}
			});
		}

		it('killed before the service processed it: never charged, refused by the retry, sent by a retry with Resend Uncertain Generations', async () => {
			const [product] = UNSENT.list;
			const log = (await emulator.control.requests({ route: 'generate' })).filter((entry) => entry.prompt === product.prompt);
			assert.deepEqual(log.map((entry) => [entry.status, entry.held]), [[null, { when: 'before', outcome: 'clientClosed' }]], 'the request arrived and was never processed');
			const retried = await n8n.retry(crashed.unsent);
			let seen = await perProduct(emulator, UNSENT.list);
			const error = retried.run?.resultData?.runData?.[GENERATE]?.at(-1)?.error ?? retried.run?.resultData?.error;
			const facts = `${seen.line}; retry ${retried.id}: ${outputsLine(retried)}; error ${JSON.stringify(error)?.slice(0, 600)}`;
			assert.deepEqual(seen.requests, [1], `the retry sent nothing — ${facts}`);
			assert.deepEqual(seen.turns, [0], `never charged — ${facts}`);
			assert.equal(retried.status, 'error', `refused: the retry fails at Generate — ${facts}`);
			assert.match(JSON.stringify(error), /interrupted_send/, facts);
			assert.match(JSON.stringify(error), /may[ _]have[ _]been[ _]charged/i, facts);

			// The user checked the session, found nothing, turned the option on, and retried the failed retry.
			const saved = await n8n.rest('GET', `/workflows/${ids.unsent}`);
			const nodes = saved.nodes.map((node) =>
				node.name === GENERATE ? { ...node, parameters: { ...node.parameters, options: { ...node.parameters.options, resendUncertain: true } } } : node,
			);
			await n8n.rest('PATCH', `/workflows/${ids.unsent}`, { nodes, connections: saved.connections, versionId: saved.versionId });
			const resent = await n8n.retry(retried, { loadWorkflow: true });
			seen = await perProduct(emulator, UNSENT.list);
			const after = `${seen.line}; retry ${resent.id}: ${outputsLine(resent)}`;
			assert.equal(resent.status, 'success', after);
			assert.deepEqual(seen.requests, [2], after);
			assert.deepEqual(seen.turns, [1], `charged once — ${after}`);
			assert.deepEqual(skusOf(resent, 0), ['SKU-1'], after);
		});
	});

	describe('new work is never refused', () => {
		it('the same webhook called again with the same products after a successful run generates them again', async () => {
			const list = products('again');
			await n8n.call('again', { products: list });
			const first = await n8n.finished(ids.again, (all) => all[0], 'the first call');
			await n8n.call('again', { products: list });
			const second = await n8n.finished(ids.again, (all) => all[1], 'the second call');
			const seen = await perProduct(emulator, list);
			const facts = `${seen.line}; first: ${outputsLine(first)}; second: ${outputsLine(second)}`;
			assert.deepEqual(seen.requests, Array(PRODUCTS).fill(2), facts);
			assert.deepEqual(skusOf(second, 0), SKUS(1, PRODUCTS), facts);
		});

		it('a second manual run from the editor generates again', async () => {
			const list = products('manual');
			const first = await n8n.finished(ids.manual, await n8n.runManually(ids.manual, 'Run'), 'the first manual run');
			const second = await n8n.finished(ids.manual, await n8n.runManually(ids.manual, 'Run'), 'the second manual run');
			const seen = await perProduct(emulator, list);
			const facts = `${seen.line}; first: ${outputsLine(first)}; second: ${outputsLine(second)}`;
			assert.deepEqual([first.mode, second.mode], ['manual', 'manual'], facts);
			assert.deepEqual(seen.requests, Array(PRODUCTS).fill(2), facts);
			assert.deepEqual(skusOf(second, 0), SKUS(1, PRODUCTS), facts);
		});

		it('a retry of an execution that failed upstream of Generate, after an identical successful one, generates', async () => {
			const list = products('upstream');
			await n8n.call('upstream', { products: list });
			const done = await n8n.finished(ids.upstream, (all) => all[0], 'the successful run');
			assert.equal(done.status, 'success', outputsLine(done));
			gate.open = false;
			await n8n.call('upstream', { products: list });
			const failed = await n8n.finished(ids.upstream, (all) => all[1], 'the run failing at the gate');
			assert.equal(failed.status, 'error', 'the gate failed the second run');
			gate.open = true;
			const retried = await n8n.retry(failed);
			const seen = await perProduct(emulator, list);
			const facts = `${seen.line}; retry: ${outputsLine(retried)}`;
			assert.equal(retried.status, 'success', facts);
			assert.deepEqual(seen.requests, Array(PRODUCTS).fill(2), facts);
			assert.deepEqual(skusOf(retried, 0), SKUS(1, PRODUCTS), facts);
		});

		it('Idempotency Key = {{ $json.sku }}: a new execution sends nothing for recorded SKUs', async () => {
			const first = products('keyed');
			const again = products('keyed again');
			await n8n.call('keyed', { products: first });
			const done = await n8n.finished(ids.keyed, (all) => all[0], 'the first keyed run');
			await n8n.call('keyed', { products: again });
			const second = await n8n.finished(ids.keyed, (all) => all[1], 'the second keyed run');
			const seen = { first: await perProduct(emulator, first), again: await perProduct(emulator, again) };
			const facts = `first ${seen.first.line}; again ${seen.again.line}; first: ${outputsLine(done)}; second: ${outputsLine(second)}`;
			assert.deepEqual(seen.first.requests, Array(PRODUCTS).fill(1), facts);
			assert.deepEqual(seen.again.requests, Array(PRODUCTS).fill(0), `nothing sent for recorded keys — ${facts}`);
			const refused = second.nodeOutput(GENERATE, 1);
			assert.deepEqual(skusOf(second, 1), SKUS(1, PRODUCTS), facts);
			for (const item of refused) {
				assert.equal(item.json.error?.code, 'idempotency_key_used', `${item.json.sku} — ${facts}`);
				assert.equal(item.json.error?.charge, 'not_sent', `${item.json.sku} — ${facts}`);
			}
		});
	});
});
