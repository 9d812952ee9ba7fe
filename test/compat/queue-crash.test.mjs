/**
 * n8n 1.x queue mode: the worker running Generate SIGKILLed mid-batch, and Bull's own re-run of the
 * stalled job on the other worker, in one n8n of the matrix (env COMPAT_PROFILE; `npm run test:compat`
 * runs it after crash.test.mjs). Alone:
 *
 *   COMPAT_PROFILE=min node --import tsx --test test/compat/queue-crash.test.mjs
 *
 * One cluster: PostgreSQL, Redis (test/e2e/services.mjs), a main and two workers, each with the packed
 * package in its own user folder. A webhook-started workflow (Webhook → 8 products → Generate,
 * Concurrency 1, On Error: Continue (using error output), no Idempotency Key); the emulator holds the
 * 4th generation after it was generated and charged; the worker that runs the execution (its log says
 * "Worker started execution <id> (job <job>)") is SIGKILLed; nothing else is done.
 *
 * What n8n 1.x does then (read in 1.100.1 and 1.123.81): Bull's stalled-job check, which runs in every
 * worker, finds the job active without its lock once the dead worker's lock expired
 * (QUEUE_WORKER_LOCK_DURATION, 30 s in 1.100.1, 60 s in 1.123.81) and moves it back to wait once
 * (QUEUE_WORKER_MAX_STALLED_COUNT, default 1); the surviving worker runs the same job again: the same
 * execution id, its mode and the data the main saved when it enqueued it. Generate's durable record
 * names the run by the execution id on n8n before 2.14, so the re-run finds what the killed worker
 * recorded: products 1–4 (sent before the kill) fail with `interrupted_send`, products 5–8 are
 * generated, and no product is sent twice.
 *
 * QUEUE_WORKER_STALLED_INTERVAL is lowered from 30 s to 5 s (how often a worker looks; the lock is left
 * at n8n's default). n8n 2.x forces maxStalledCount to 0 (2.41.1 scaling.service.js:120, n8n pull
 * request 22286): no re-run there, the execution fails (tools/probe/queue-crash.mjs measures it);
 * this file is skipped on 2.x.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { GENERATE, HELD, PRODUCTS, heldRequests, outputsLine, perProduct, products, skusOf, webhookWorkflow } from '../e2e/crash-kit.mjs';
import { startTestEmulator, waitFor } from '../e2e/fixtures.mjs';
import { createUserFolder, installPaths, isFinished, packPackage, startN8n, startN8nWorker, withRunData } from '../e2e/n8n.mjs';
import { ensureQueueServices, startPostgres, startRedis } from '../e2e/services.mjs';
import { atLeast, createActiveWorkflow, ok, ownerSession } from './n8n-rest.mjs';

const profile = process.env.COMPAT_PROFILE || 'default';
const { n8n: version } = installPaths(profile).profile;
const OWNER = { email: 'owner@example.com', password: 'Compat-Queue-Crash-Password-1' };
const HOOK = 'compat-queue-crash';
const STALLED_INTERVAL_MS = 5_000;
/** Three n8n processes on a shared 2-core machine: minutes, not seconds. */
const READY_TIMEOUT_MS = 300_000;
const LIST = products('compat queue');
const SKUS = (from, to) => Array.from({ length: to - from + 1 }, (_, i) => `SKU-${from + i}`);
const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

function skipReason() {
	if (atLeast(version, '2.0.0')) return `n8n ${version} does not re-run a stalled job (maxStalledCount 0 from 2.0)`;
	if (process.env.COMPAT_QUEUE === '0') return 'COMPAT_QUEUE=0';
	const services = ensureQueueServices();
	return services.ok ? false : services.reason;
}

const skip = skipReason();

describe(`n8n ${version} (profile ${profile}) queue mode: the worker SIGKILLed mid-Generate, Bull re-runs the job`, { skip }, () => {
	let emulator;
	let postgres;
	let redis;
	let main;
	const workers = [];
	const folders = [];
	let packed;
	let workflowId;
	/** What happened, for the tests: { executionId, jobId, killed, survivor, held, timings }. */
	const run = {};

	const executions = async () =>
		withRunData(
			await postgres.query(
				`SELECT e.id, e.mode, e.status, e."retryOf", e."startedAt", e."stoppedAt", d.data
				   FROM execution_entity e LEFT JOIN execution_data d ON d."executionId" = e.id
				  WHERE e."workflowId" = $1 ORDER BY e.id`,
				[workflowId],
			),
			{ profile },
		);
	const started = (worker) => worker.logs().match(new RegExp(`Worker started execution ${run.executionId} \\(job (\\w+)\\)`))?.[1];

	before(async () => {
		const begun = Date.now();
		emulator = await startTestEmulator();
		[postgres, redis] = await Promise.all([startPostgres(), startRedis()]);
		const tarball = process.env.IMAGEPACK_TARBALL || (packed = await packPackage());
		for (let i = 0; i < 3; i++) folders.push(await createUserFolder({ tarball }));
		const shared = {
			EXECUTIONS_MODE: 'queue',
			N8N_ENCRYPTION_KEY: randomBytes(24).toString('hex'),
			QUEUE_WORKER_STALLED_INTERVAL: String(STALLED_INTERVAL_MS),
			N8N_SECURE_COOKIE: 'false',
			...postgres.env,
			...redis.env,
		};
		const echo = !!process.env.E2E_ECHO;
		// The main first: n8n 1.x runs its schema migrations without a lock.
		main = await startN8n({ userFolder: folders[0].dir, profile, env: shared, echo, readyTimeoutMs: READY_TIMEOUT_MS });
		const session = await ownerSession(main.url, OWNER);
		workers.push(
			...(await Promise.all(
				[1, 2].map((i) => startN8nWorker({ userFolder: folders[i].dir, profile, env: shared, echo, concurrency: 5, readyTimeoutMs: READY_TIMEOUT_MS })),
			)),
		);
		const created = await ok(session, 'POST', '/credentials', { name: 'Image Pack (emulator)', type: 'imagePackApi', data: { baseUrl: emulator.baseUrl, apiKey: emulator.apiKey } });
		const credential = { id: String(created.id), name: created.name };
		workflowId = await createActiveWorkflow(session, version, webhookWorkflow({ name: 'compat: queue crash', path: HOOK, credential }));
		run.timings = { clusterMs: Date.now() - begun };

		await emulator.control.injectFault({ route: 'generate', kind: 'hold', when: 'after', promptIncludes: LIST[HELD - 1].prompt });
		const status = await waitFor(
			async () => {
				const response = await fetch(`${main.url}/webhook/${HOOK}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ products: LIST }) });
				await response.arrayBuffer();
				return response.status !== 404 && response.status;
			},
			{ timeoutMs: 90_000, intervalMs: 500, what: `the webhook ${HOOK} to be registered` },
		);
		assert.equal(status, 200, `webhook ${HOOK} answered ${status}`);
		const calledAt = Date.now();
		[run.held] = await heldRequests(emulator, 1);
		run.timings.toHeldMs = Date.now() - calledAt;
		const [execution] = await executions();
		run.executionId = String(execution.id);
		const index = await waitFor(() => workers.findIndex((worker) => started(worker)) + 1, { timeoutMs: 30_000, what: `the worker of execution ${run.executionId}` }) - 1;
		run.killed = workers[index];
		run.survivor = workers[1 - index];
		run.jobId = started(run.killed);

		const killedAt = Date.now();
		await run.killed.kill();
		await waitFor(async () => (await emulator.control.held()).length === 0, { timeoutMs: 30_000, what: 'the held connection to close' });
		await waitFor(() => started(run.survivor), { timeoutMs: 180_000, intervalMs: 250, what: `the surviving worker to run execution ${run.executionId} again` });
		run.timings.toRerunMs = Date.now() - killedAt;
		run.execution = await waitFor(async () => (await executions()).find((e) => String(e.id) === run.executionId && isFinished(e)), {
			timeoutMs: 180_000,
			what: `execution ${run.executionId} to finish`,
		});
		run.timings.toFinishedMs = Date.now() - killedAt;
		run.executions = await executions();
	});

	after(async () => {
		if (process.env.E2E_LOG_DIR) {
			fs.mkdirSync(process.env.E2E_LOG_DIR, { recursive: true });
			const write = (name, text) => text && fs.writeFileSync(path.join(process.env.E2E_LOG_DIR, `queue-crash-${name}.log`), text);
			write('main', main?.logs());
			workers.forEach((worker, i) => write(`worker-${i + 1}${worker === run.killed ? '-killed' : ''}`, worker.logs()));
		}
		for (const process of [main, ...workers]) await process?.stop().catch(() => {});
		await redis?.stop().catch(() => {});
		await postgres?.stop().catch(() => {});
		await emulator?.close();
		for (const folder of folders) folder.cleanup();
		if (packed) fs.rmSync(path.dirname(packed), { recursive: true, force: true });
	});

	it('Bull re-runs the stalled job once, on the surviving worker: the same job, the same execution id, no new execution', async (t) => {
		const { clusterMs, toHeldMs, toRerunMs, toFinishedMs } = run.timings;
		t.diagnostic(
			`queue crash on n8n ${version}: cluster up in ${seconds(clusterMs)}; 4th generation held ${seconds(toHeldMs)} after the call; ` +
				`after the SIGKILL, job ${run.jobId} re-run in ${seconds(toRerunMs)}, execution ${run.executionId} finished in ${seconds(toFinishedMs)}`,
		);
		assert.deepEqual(run.executions.map((e) => String(e.id)), [run.executionId], 'one execution: the re-run is the same execution, not a new one');
		assert.equal(started(run.survivor), run.jobId, 'the surviving worker ran the same Bull job');
		assert.equal(run.execution.mode, 'webhook', 'the original mode');
		assert.equal(run.execution.retryOf, null);
		assert.equal(run.execution.status, 'success', outputsLine(run.execution));
		// The main, which enqueued the job and still waits for it, hears the re-run finish (1.100.1 scaling.service.js:276-283).
		const heard = `Execution ${run.executionId} (job ${run.jobId}) finished successfully`;
		await waitFor(() => main.logs().includes(heard), { timeoutMs: 30_000, what: `the main to log "${heard}"` });
	});

	it('at most one generate request per product: products 1–4 reported interrupted_send (may have been charged), 5–8 generated', async (t) => {
		const seen = await perProduct(emulator, LIST);
		const facts = `${seen.line}; execution ${run.executionId}: ${outputsLine(run.execution)}`;
		t.diagnostic(`queue crash on n8n ${version}: ${facts}`);
		assert.ok(seen.requests.every((count) => count <= 1), `at most one generate request per product across the killed run and its re-run — ${facts}`);
		assert.deepEqual(seen.requests, Array(PRODUCTS).fill(1), facts);
		assert.deepEqual(seen.turns, Array(PRODUCTS).fill(1), `each product generated and charged once — ${facts}`);
		assert.equal(run.held.prompt, LIST[HELD - 1].prompt);
		assert.deepEqual(skusOf(run.execution, 0), SKUS(HELD + 1, PRODUCTS), facts);
		assert.ok(run.execution.nodeOutput(GENERATE, 0).every((item) => typeof item.json.turn_id === 'string'), facts);
		assert.deepEqual(skusOf(run.execution, 1), SKUS(1, HELD), facts);
		for (const item of run.execution.nodeOutput(GENERATE, 1)) {
			assert.equal(item.json.error?.code, 'interrupted_send', `${item.json.sku}: ${JSON.stringify(item.json.error)}`);
			assert.equal(item.json.error?.charge, 'may_have_been_charged', `${item.json.sku}: ${JSON.stringify(item.json.error)}`);
		}
	});
});
