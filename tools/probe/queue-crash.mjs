#!/usr/bin/env node
/**
 * Measures, in n8n 2.41.1's queue mode (PostgreSQL, Redis, one main, one worker: test/e2e/queue.mjs),
 * what becomes of an execution whose worker is SIGKILLed mid-node, and what Executions → Retry of it
 * runs:
 *
 *   node tools/probe/queue-crash.mjs
 *
 * A. the main still up and waiting for the job (Webhook "When last node finishes"); a new worker is
 *    started right after the kill (Bull's stalled-job check runs in workers);
 * B. the main killed too, then restarted, then a worker.
 *
 * With --other-worker: two workers, A's worker killed and not restarted (B skipped).
 *
 * The workflow: Webhook → Probe "Hold" (a community node: reports getMode(), the execution id and
 * $execution.resumeUrl to a local collector, then waits an hour unless its mode is retry). Every status
 * change of the execution is logged with its time. Prints one JSON report.
 */
import fs from 'node:fs';
import path from 'node:path';

import { startCollector, waitFor } from '../../test/e2e/fixtures.mjs';
import { startQueueCluster } from '../../test/e2e/queue.mjs';
import { ensureQueueServices } from '../../test/e2e/services.mjs';
import { PROBE_TYPE, packProbe } from './probe-node.mjs';

const say = (message) => process.stderr.write(`[queue probe] ${message}\n`);
const services = ensureQueueServices();
if (!services.ok) throw new Error(services.reason);
const collector = await startCollector();
const tarball = await packProbe();
const report = {};
let cluster;

function workflow(id, hookPath, responseMode) {
	return {
		id,
		name: `queue probe ${hookPath}`,
		settings: { executionOrder: 'v1' },
		nodes: [
			{ id: 'hook', name: 'Webhook', type: 'n8n-nodes-base.webhook', typeVersion: 2, position: [0, 0], webhookId: `${hookPath}-id`, parameters: { httpMethod: 'POST', path: hookPath, responseMode, options: {} } },
			{ id: 'hold', name: 'Hold', type: PROBE_TYPE, typeVersion: 1, position: [220, 0], parameters: { operation: 'report', reportUrl: `${collector.url}/report`, hold: true } },
		],
		connections: { Webhook: { main: [[{ node: 'Hold', type: 'main', index: 0 }]] } },
	};
}

/** Polls the execution's row until `until(row)` or the timeout; returns the status changes with their times. */
async function watch(workflowId, executionId, until, timeoutMs) {
	const started = Date.now();
	const changes = [];
	let last;
	for (;;) {
		const row = (await cluster.executions(workflowId)).find((e) => String(e.id) === String(executionId));
		const state = row ? `${row.status}${row.stoppedAt ? ' (stopped)' : ''}` : 'missing';
		if (state !== last) {
			changes.push({ afterMs: Date.now() - started, state, runNodes: Object.keys(row?.run?.resultData?.runData ?? {}), error: row?.run?.resultData?.error?.message ?? null });
			say(`${executionId}: ${state} after ${Date.now() - started} ms`);
			last = state;
		}
		if ((row && until(row)) || Date.now() - started > timeoutMs) return { changes, row };
		await new Promise((resolve) => setTimeout(resolve, 1000));
	}
}

async function retry(executionId) {
	const before = collector.requests.length;
	const session = await cluster.rest();
	const answer = await session.request('POST', `/rest/executions/${executionId}/retry`, { loadWorkflow: false });
	const reported = await waitFor(() => collector.requests.length > before && collector.requests.at(-1).json, { timeoutMs: 60_000, what: 'the retry to reach Hold' }).catch(() => null);
	return {
		http: answer.status,
		answer: typeof answer.body?.data === 'object' ? { id: answer.body.data.id, status: answer.body.data.status, mode: answer.body.data.mode, runNodes: Object.keys(answer.body.data.data?.resultData?.runData ?? {}) } : answer.body,
		holdRanAs: reported,
	};
}

/**
 * --other-worker: two workers; the one running execution A is killed and not restarted, so the job's
 * fate is left to the other worker (Bull's stalled check) and to the waiting main; B is skipped.
 */
const otherWorker = process.argv.includes('--other-worker');

try {
	cluster = await startQueueCluster({ tarball, workers: otherWorker ? 2 : 1 });
	const a = await cluster.createWorkflow(workflow('queueProbeWaitA1', 'probe-a', 'lastNode'), { activate: true });
	const b = await cluster.createWorkflow(workflow('queueProbeGoneB1', 'probe-b', 'onReceived'), { activate: true });

	// A: the main waits for the job.
	// The call hangs while the execution runs; a quick 404 means the webhook is not registered yet.
	let hook;
	for (;;) {
		hook = fetch(`${cluster.main.url}/webhook/probe-a`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
			.then(async (response) => ({ status: response.status, body: (await response.text()).slice(0, 300), at: Date.now() }))
			.catch((error) => ({ error: error.message, at: Date.now() }));
		const quick = await Promise.race([hook, new Promise((resolve) => setTimeout(() => resolve(null), 3000))]);
		if (quick?.status !== 404) break;
		await new Promise((resolve) => setTimeout(resolve, 500));
	}
	const heldA = await waitFor(() => collector.requests[0]?.json, { timeoutMs: 120_000, what: 'execution A held' });
	const running = await waitFor(() => cluster.workerOf(heldA.executionId) + 1, { timeoutMs: 30_000, what: 'the worker of A' }) - 1;
	say(`A held on worker ${running}: ${JSON.stringify(heldA)}; SIGKILL it${otherWorker ? '' : ', start a new one on its folder'}`);
	const killedAt = Date.now();
	await cluster.workers[running].kill();
	if (!otherWorker) await cluster.startWorker(running);
	const watchedA = await watch(a.id, heldA.executionId, (row) => ['error', 'crashed', 'success', 'canceled'].includes(row.status) && row.stoppedAt, 240_000);
	const caller = await Promise.race([hook, new Promise((resolve) => setTimeout(() => resolve({ pending: true }), 1000))]);
	report.mainWaiting = { otherWorker, held: heldA, statusChanges: watchedA.changes, webhookCaller: { ...caller, afterKillMs: caller.at ? caller.at - killedAt : null }, retry: await retry(heldA.executionId) };
	if (otherWorker) throw Object.assign(new Error('done'), { done: true });

	// B: no main waiting: main and worker killed, main restarted first.
	await waitFor(async () => (await fetch(`${cluster.main.url}/webhook/probe-b`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status !== 404, { timeoutMs: 60_000, what: 'webhook probe-b' });
	const count = collector.requests.length;
	const heldB = await waitFor(() => collector.requests.length > count - 1 && collector.requests.map((r) => r.json).find((r) => r.workflowId === b.id && r.mode !== 'retry'), { timeoutMs: 120_000, what: 'execution B held' });
	say(`B held: ${JSON.stringify(heldB)}; SIGKILL worker and main`);
	await cluster.workers[0].kill();
	await cluster.main.kill();
	await cluster.startMain();
	await cluster.startWorker(0);
	const watchedB = await watch(b.id, heldB.executionId, (row) => ['error', 'crashed', 'success', 'canceled'].includes(row.status) && row.stoppedAt, 240_000);
	report.noMain = { held: heldB, statusChanges: watchedB.changes, retry: await retry(heldB.executionId) };
	report.executions = { b: (await cluster.executions(b.id)).map((e) => ({ id: e.id, mode: e.mode, status: e.status, retryOf: e.retryOf })) };
} catch (error) {
	if (!error.done) throw error;
} finally {
	if (process.env.E2E_LOG_DIR) cluster?.saveLogs(process.env.E2E_LOG_DIR);
	await cluster?.stop();
	await collector.close();
	fs.rmSync(path.dirname(tarball), { recursive: true, force: true });
}
console.log(JSON.stringify(report, null, 2));
