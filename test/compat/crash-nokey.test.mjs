/**
 * Issue 50: n8n killed mid-Generate and the crashed execution retried, **without an Idempotency Key**,
 * in one n8n of the matrix (env COMPAT_PROFILE), regular mode, SQLite. Alone:
 *
 *   COMPAT_PROFILE=min IMAGEPACK_TARBALL=/path/to/n8n-nodes-imagepack-x.y.z.tgz \
 *     node --import tsx --test test/compat/crash-nokey.test.mjs
 *
 * (without IMAGEPACK_TARBALL the worktree is built and packed first). One n8n start, one SIGKILL while
 * the emulator holds the 4th generation of every crash case (generated and charged, the answer lost),
 * one restart; every case is a workflow of its own, 8 products with prompts unique to it, Generate under
 * On Error: Continue (using error output), Concurrency 1:
 *
 * - crash cases, Executions → Retry with original workflow: a Webhook (Save Execution Progress off, on),
 *   the same with Generate first in the workflow's node list (progress off: its crashed run is kept, the
 *   retry runs it under run index 1), a Schedule Trigger (a cron at one exact second: it fires once, ~40 s after the workflows are
 *   published; progress off, on), a Manual Trigger run as the editor does (progress on; off: n8n 1.100 to
 *   2.13 store no execution data for a manual run before its end, so it refuses the retry), and a webhook
 *   called with the same body as an earlier, successful call (progress off: the retry shares nothing
 *   with the crashed run that the earlier run lacks: the node may only fail closed);
 *   all: at most one generate request per product across the crashed run and its retry; products 1–4
 *   (sent before the kill) on the error output as `interrupted_send`, never generated again; products 5–8
 *   (never sent) generated, where the node can tell the retry is of that run (every case here but the
 *   repeated webhook, where they may come back `interrupted_send` instead);
 * - no false refusal: a new execution with identical items (the webhook again, the manual run again)
 *   generates all eight; a retry of an execution that *failed* upstream of Generate (an HTTP Request to a
 *   closed gate) generates all eight; a retry of one that failed *in* Generate (On Error: Stop Workflow,
 *   product 4 refused with a 402, nothing charged) returns 1–3 from its memory and generates 4–8.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { GENERATE, HELD, PRODUCTS, crashableN8n, generateNode, heldRequests, outputsLine, perProduct, products, skusOf, startGate, webhookWorkflow } from '../e2e/crash-kit.mjs';
import { startTestEmulator, waitFor } from '../e2e/fixtures.mjs';
import { createUserFolder, installPaths, packPackage, startN8n } from '../e2e/n8n.mjs';
import { atLeast } from './n8n-rest.mjs';

const profile = process.env.COMPAT_PROFILE || 'default';
const { n8n: version } = installPaths(profile).profile;
const OWNER = { email: 'owner@example.com', password: 'Compat-Crash-Password-1' };
const SKUS = (from, to) => Array.from({ length: to - from + 1 }, (_, i) => `SKU-${from + i}`);
const ALL = SKUS(1, PRODUCTS);
const SENT = SKUS(1, HELD);
const UNSENT = SKUS(HELD + 1, PRODUCTS);
const say = (message) => process.stderr.write(`[crash-nokey ${version}] ${message}\n`);

/** Trigger → Code "Products" (the list, fixed) → Generate. */
function fixedWorkflow({ name, trigger, credential, list, progress, onError }) {
	const connect = (from, to) => ({ [from]: { main: [[{ node: to, type: 'main', index: 0 }]] } });
	return {
		name,
		settings: { executionOrder: 'v1', saveManualExecutions: true, timezone: 'UTC', ...(progress ? { saveExecutionProgress: true } : {}) },
		nodes: [
			{ id: 'trigger', name: 'Trigger', position: [0, 0], ...trigger },
			{ id: 'products', name: 'Products', type: 'n8n-nodes-base.code', typeVersion: 2, position: [220, 0], parameters: { jsCode: `return ${JSON.stringify(list.map((json) => ({ json })))};` } },
			generateNode(credential, { onError }),
		],
		connections: { ...connect('Trigger', 'Products'), ...connect('Products', GENERATE) },
	};
}
const MANUAL = { type: 'n8n-nodes-base.manualTrigger', typeVersion: 1, parameters: {} };
const schedule = (cron) => ({ type: 'n8n-nodes-base.scheduleTrigger', typeVersion: 1.2, parameters: { rule: { interval: [{ field: 'cronExpression', expression: cron } ] } } });

/** The crash cases: how each starts, and whether the node can tell its retry from new work. */
const CRASHES = {
	'webhook, progress off': { kind: 'webhook', progress: false, tells: true },
	'webhook, progress on': { kind: 'webhook', progress: true, tells: true },
	// n8n's crash recovery marks the last started node of the workflow's node list as the one that
	// failed: Generate listed first keeps its crashed run, and the retry runs it under run index 1.
	'webhook, progress off, Generate first in the node list': { kind: 'webhook', progress: false, tells: true, generateFirst: true },
	'schedule, progress off': { kind: 'schedule', progress: false, tells: true },
	'schedule, progress on': { kind: 'schedule', progress: true, tells: true },
	'manual, progress on': { kind: 'manual', progress: true, tells: true },
	'manual, progress off': { kind: 'manual', progress: false, tells: true },
	'webhook called twice with one body, progress off': { kind: 'webhook', progress: false, tells: false, earlier: true },
};

describe(`n8n ${version} (profile ${profile}) killed mid-Generate without an Idempotency Key, then Executions → Retry`, () => {
	let emulator;
	let userFolder;
	let n8n;
	let packed;
	let gate;
	const cases = {};
	const timings = {};

	const manualRun = async (id) => {
		if (atLeast(version, '2.0.0')) return n8n.runManually(id, 'Trigger');
		const workflowData = await n8n.rest('GET', `/workflows/${id}`);
		const data = await n8n.rest('POST', `/workflows/${id}/run`, { workflowData });
		assert.ok(data?.executionId, `the manual run started no execution: ${JSON.stringify(data)}`);
		return String(data.executionId);
	};
	/** Requests per product since `from` (a perProduct() snapshot). */
	const since = (now, from) => now.requests.map((count, i) => count - from.requests[i]);

	before(async () => {
		let t0 = Date.now();
		emulator = await startTestEmulator();
		gate = await startGate();
		userFolder = await createUserFolder({ tarball: process.env.IMAGEPACK_TARBALL || (packed = await packPackage()) });
		n8n = crashableN8n({ userFolder: userFolder.dir, profile, owner: OWNER, startN8n });
		await n8n.start();
		timings.firstStart = Date.now() - t0;
		const credential = await n8n.createCredential({ name: 'Image Pack (emulator)', type: 'imagePackApi', data: { baseUrl: emulator.baseUrl, apiKey: emulator.apiKey } });

		// The schedules fire once, at one second far enough ahead for every workflow to be published.
		const fireAt = new Date(Date.now() + 40_000);
		const cron = `${fireAt.getUTCSeconds()} ${fireAt.getUTCMinutes()} ${fireAt.getUTCHours()} ${fireAt.getUTCDate()} ${fireAt.getUTCMonth() + 1} *`;
		let n = 0;
		for (const [name, crash] of Object.entries(CRASHES)) {
			const c = (cases[name] = { ...crash, list: products(`nokey ${++n}`), path: `nokey-${n}` });
			const settings = crash.progress ? { saveExecutionProgress: true } : {};
			if (crash.kind === 'webhook') {
				const wf = webhookWorkflow({ name, path: c.path, credential, settings });
				if (crash.generateFirst) wf.nodes = [wf.nodes.at(-1), ...wf.nodes.slice(0, -1)];
				c.id = await n8n.publish(wf);
			}
			else if (crash.kind === 'schedule') c.id = await n8n.publish(fixedWorkflow({ name, trigger: schedule(cron), credential, list: c.list, progress: crash.progress }));
			else c.id = await n8n.create(fixedWorkflow({ name, trigger: MANUAL, credential, list: c.list, progress: crash.progress }));
		}
		const fresh = (cases.fresh = { list: products('nokey fresh-up'), path: 'nokey-up' });
		fresh.id = await n8n.publish(webhookWorkflow({ name: 'failed upstream', path: fresh.path, credential, gate: gate.url }));
		const inGenerate = (cases.inGenerate = { list: products('nokey in-generate'), path: 'nokey-in' });
		inGenerate.id = await n8n.publish(webhookWorkflow({ name: 'failed in Generate', path: inGenerate.path, credential, onError: null }));

		// The repeated webhook: one call that ends, before the crash.
		const twice = cases['webhook called twice with one body, progress off'];
		await n8n.call(twice.path, { products: twice.list });
		await n8n.finished(twice.id, (list) => list[0], 'the earlier call');
		twice.before = await perProduct(emulator, twice.list);

		// The failed executions.
		gate.open = false;
		await n8n.call(fresh.path, { products: fresh.list });
		await emulator.control.injectFault({ route: 'generate', kind: 'status', status: 402, promptIncludes: inGenerate.list[HELD - 1].prompt });
		await n8n.call(inGenerate.path, { products: inGenerate.list });

		// The crashes.
		for (const c of Object.values(cases).filter((c) => c.kind)) {
			await emulator.control.injectFault({ route: 'generate', kind: 'hold', when: 'after', promptIncludes: c.list[HELD - 1].prompt });
		}
		for (const c of Object.values(cases).filter((c) => c.kind === 'webhook')) await n8n.call(c.path, { products: c.list });
		for (const c of Object.values(cases).filter((c) => c.kind === 'manual')) c.manualExecution = await manualRun(c.id);
		await heldRequests(emulator, Object.keys(CRASHES).length);
		for (const c of [fresh, inGenerate]) c.failed = await n8n.finished(c.id, (list) => list[0], 'the failing execution');
		await n8n.kill();
		await waitFor(async () => (await emulator.control.held()).length === 0, { timeoutMs: 30_000, what: 'the held connections to close' });
		t0 = Date.now();
		await n8n.start();
		timings.restart = Date.now() - t0;
		for (const c of Object.values(cases).filter((c) => c.kind)) c.crashed = await n8n.crashed(c.id);
		gate.open = true;
		say(`n8n first start ${timings.firstStart} ms, restart ${timings.restart} ms, set-up and crash ${(Date.now() - t0 + timings.firstStart) / 1000} s`);
	});

	after(async () => {
		await n8n?.stop();
		await emulator?.close();
		await gate?.stop();
		userFolder?.cleanup();
		if (packed) fs.rmSync(path.dirname(packed), { recursive: true, force: true });
	});

	for (const name of Object.keys(CRASHES)) {
		it(`${name}: at most one generate request per product; 1–4 interrupted_send${CRASHES[name].tells ? ', 5–8 generated' : ', 5–8 generated or interrupted_send'}`, async () => {
			const c = cases[name];
			const t0 = Date.now();
			const answer = await n8n.session.request('POST', `/rest/executions/${c.crashed.id}/retry`, { loadWorkflow: false });
			if (c.kind === 'manual' && !c.progress && answer.status !== 200) {
				// n8n 1.100 – 2.13 keep no execution data for a manual run until it ends: nothing to retry.
				const seen = await perProduct(emulator, c.list);
				assert.ok(seen.requests.every((count) => count <= 1), seen.line);
				assert.match(JSON.stringify(answer.body), /aborted|cannot be retried/i, `retry refused: ${answer.status} ${JSON.stringify(answer.body)}`);
				return;
			}
			assert.equal(answer.status, 200, `retry of ${c.crashed.id}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 400)}`);
			const retried = await n8n.finished(c.id, (list) => list.filter((e) => String(e.retryOf) === String(c.crashed.id)).at(-1), `the retry of ${c.crashed.id}`);
			const seen = await perProduct(emulator, c.list);
			const requests = c.before ? since(seen, c.before) : seen.requests;
			const facts = `requests per product since the crashed run began ${JSON.stringify(requests)} (${seen.line}); retry ${retried.id} (${Date.now() - t0} ms): ${outputsLine(retried)}`;
			say(`${name}: ${facts}`);
			assert.equal(retried.mode, 'retry', facts);
			assert.ok(requests.every((count) => count <= 1), `at most one generate request per product across the crashed run and its retry — ${facts}`);
			const refused = skusOf(retried, 1);
			for (const sku of SENT) assert.ok(refused.includes(sku), `${sku} left before the kill: reported, not generated again — ${facts}`);
			for (const item of retried.nodeOutput(GENERATE, 1)) {
				assert.equal(item.json.error?.code, 'interrupted_send', `${item.json.sku}: ${JSON.stringify(item.json.error)}`);
				assert.notEqual(item.json.error?.charge, 'charged', facts);
			}
			if (c.tells) assert.deepEqual(skusOf(retried, 0), UNSENT, `never sent before the kill: generated by the retry — ${facts}`);
			else assert.deepEqual([...skusOf(retried, 0), ...refused].sort(), [...ALL].sort(), facts);
		});
	}

	it('no false refusal: a new execution with the same items generates all eight (webhook again, manual run again)', async () => {
		for (const name of ['webhook, progress off', 'manual, progress on']) {
			const c = cases[name];
			const from = await perProduct(emulator, c.list);
			const count = (await n8n.executions(c.id)).length;
			if (c.kind === 'webhook') await n8n.call(c.path, { products: c.list });
			else await manualRun(c.id);
			const run = await n8n.finished(c.id, (list) => (list.length > count ? list.at(-1) : null), 'the new execution');
			const seen = await perProduct(emulator, c.list);
			const facts = `${name}: ${JSON.stringify(since(seen, from))} new requests; ${outputsLine(run)}`;
			say(facts);
			assert.notEqual(run.mode, 'retry', facts);
			assert.deepEqual(skusOf(run, 0), ALL, facts);
			assert.deepEqual(since(seen, from), Array(PRODUCTS).fill(1), facts);
		}
	});

	it('no false refusal: a retry of an execution that failed upstream of Generate generates all eight', async () => {
		const c = cases.fresh;
		assert.equal(c.failed.status, 'error', outputsLine(c.failed));
		const retried = await n8n.retry(c.failed);
		const seen = await perProduct(emulator, c.list);
		const facts = `${seen.line}; retry ${retried.id}: ${outputsLine(retried)}`;
		say(`failed upstream: ${facts}`);
		assert.deepEqual(skusOf(retried, 0), ALL, facts);
		assert.deepEqual(seen.requests, Array(PRODUCTS).fill(1), facts);
	});

	it('no false refusal: a retry of an execution that failed in Generate returns 1–3 from its memory and generates 4–8', async () => {
		const c = cases.inGenerate;
		assert.equal(c.failed.status, 'error', outputsLine(c.failed));
		const retried = await n8n.retry(c.failed);
		const seen = await perProduct(emulator, c.list);
		const facts = `${seen.line}; retry ${retried.id}: ${outputsLine(retried)}`;
		say(`failed in Generate: ${facts}`);
		assert.equal(retried.status, 'success', facts);
		assert.deepEqual(seen.charged.map((credits) => credits > 0), Array(PRODUCTS).fill(true), `each product charged: ${facts}`);
		assert.deepEqual(seen.turns, Array(PRODUCTS).fill(1), `each product generated once: ${facts}`);
		assert.deepEqual(seen.requests.slice(0, HELD - 1), [1, 1, 1], `1–3 not sent again: ${facts}`);
		assert.deepEqual(seen.requests.slice(HELD), [1, 1, 1, 1], `5–8 sent once: ${facts}`);
	});
});
