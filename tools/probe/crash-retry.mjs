#!/usr/bin/env node
/**
 * What a node in Generate's place sees when n8n was killed while it ran and the crashed execution is
 * retried, in a real n8n of a profile (regular mode, SQLite), beside a retry of a failed execution and a
 * new execution with identical items. One n8n start, one kill, one restart:
 *
 *   node tools/probe/crash-retry.mjs --profile=min     # n8n 1.100.1
 *   node tools/probe/crash-retry.mjs --profile=v2.11   # n8n 2.11.4
 *
 * Workflows (trigger → Code "Items" (2 items) → Probe "Generate", operation dump: it reports its mode,
 * ids, run index, execute data, the run data of itself and of every node upstream (through
 * `getWorkflowDataProxy(0).$(name)`), `getExecutionContext()` where it exists, its node and flow context,
 * then holds while a file exists unless its mode is retry, or fails while another exists):
 * webhook / manual / schedule (a cron at one exact second, in UTC), Save Execution Progress off and on;
 * a webhook one with Generate first in the workflow's node list; a webhook one failing in Generate; a
 * webhook one failing upstream (an HTTP Request to a closed gate). Prints one JSON report.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { startGate } from '../../test/e2e/crash-kit.mjs';
import { startCollector, waitFor } from '../../test/e2e/fixtures.mjs';
import { createUserFolder, installPaths, querySqlite, restSession, startN8n, withRunData } from '../../test/e2e/n8n.mjs';
import { atLeast, createActiveWorkflow, ok, ownerSession } from '../../test/compat/n8n-rest.mjs';
import { PROBE_TYPE, installProbeNode } from './probe-node.mjs';

const profile = (process.argv.find((arg) => arg.startsWith('--profile=')) ?? '--profile=default').slice('--profile='.length);
const version = installPaths(profile).profile.n8n;
const OWNER = { email: 'owner@example.com', password: 'Probe-Password-1' };
const say = (message) => process.stderr.write(`[probe ${version} ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
const ITEMS = [{ sku: 'SKU-1' }, { sku: 'SKU-2' }];

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'probe-crash-'));
const holdFile = path.join(scratch, 'hold');
const failFile = path.join(scratch, 'fail');

const connect = (pairs) => Object.fromEntries(pairs.map(([from, to]) => [from, { main: [[{ node: to, type: 'main', index: 0 }]] }]));

function workflow(name, { trigger, progress, generateFirst = false, fail = false, gate, reportUrl }) {
	const triggers = {
		webhook: { id: 'trigger', name: 'Trigger', type: 'n8n-nodes-base.webhook', typeVersion: 2, position: [0, 0], webhookId: `${name}-hook`, parameters: { httpMethod: 'POST', path: name, responseMode: 'onReceived', options: {} } },
		manual: { id: 'trigger', name: 'Trigger', type: 'n8n-nodes-base.manualTrigger', typeVersion: 1, position: [0, 0], parameters: {} },
		schedule: { id: 'trigger', name: 'Trigger', type: 'n8n-nodes-base.scheduleTrigger', typeVersion: 1.2, position: [0, 0], parameters: { rule: { interval: [{ field: 'cronExpression', expression: trigger.cron ?? '0 0 0 1 1 *' }] } } },
	};
	const items = { id: 'items', name: 'Items', type: 'n8n-nodes-base.code', typeVersion: 2, position: [440, 0], parameters: { jsCode: `return ${JSON.stringify(ITEMS.map((json) => ({ json })))};` } };
	const generate = {
		id: 'generate',
		name: 'Generate',
		type: PROBE_TYPE,
		typeVersion: 1,
		position: [660, 0],
		parameters: { operation: 'dump', reportUrl, holdFile: fail ? '' : holdFile, failFile: fail ? failFile : '' },
	};
	const check = gate && { id: 'gate', name: 'Gate', type: 'n8n-nodes-base.httpRequest', typeVersion: 4.2, position: [220, 0], executeOnce: true, parameters: { url: gate, options: {} } };
	const first = triggers[trigger.kind];
	const nodes = [first, ...(check ? [check] : []), items];
	return {
		name,
		settings: { executionOrder: 'v1', saveManualExecutions: true, timezone: 'UTC', ...(progress ? { saveExecutionProgress: true } : {}) },
		nodes: generateFirst ? [generate, ...nodes] : [...nodes, generate],
		connections: connect(check ? [['Trigger', 'Gate'], ['Gate', 'Items'], ['Items', 'Generate']] : [['Trigger', 'Items'], ['Items', 'Generate']]),
	};
}

const collector = await startCollector();
const gate = await startGate();
const userFolder = await createUserFolder({});
installProbeNode(userFolder.dir);
const report = { version, profile, cases: {} };
let n8n;
let session;
const start = async () => {
	const t0 = Date.now();
	n8n = await startN8n({ userFolder: userFolder.dir, profile, echo: !!process.env.E2E_ECHO, env: { N8N_SECURE_COOKIE: 'false' } });
	await waitFor(async () => (await fetch(`${n8n.url}/rest/settings`)).status === 200, { timeoutMs: 60_000, what: 'n8n’s REST API' });
	session = session ? await restSession(n8n.url, OWNER) : await ownerSession(n8n.url, OWNER);
	say(`n8n started in ${Date.now() - t0} ms`);
};
const reports = () => collector.requests.map((r) => r.json);
const reportsOf = (name) => reports().filter((r) => r.workflowName === name);
const stored = async (id) => {
	const rows = await querySqlite(
		userFolder.dir,
		'SELECT e.id, e.workflowId, e.mode, e.status, e.retryOf, e.retrySuccessId, e.startedAt, e.stoppedAt, d.data FROM execution_entity e LEFT JOIN execution_data d ON d.executionId = e.id WHERE e.id = ?',
		[id],
		{ profile },
	);
	const [row] = withRunData(rows, { profile });
	if (!row) return null;
	const runData = row.run?.resultData?.runData ?? {};
	return {
		id: row.id,
		mode: row.mode,
		status: row.status,
		retryOf: row.retryOf,
		startedAt: row.startedAt,
		stoppedAt: row.stoppedAt,
		lastNodeExecuted: row.run?.resultData?.lastNodeExecuted ?? null,
		hasExecutionData: !!row.run?.executionData,
		stack: (row.run?.executionData?.nodeExecutionStack ?? []).map((entry) => ({ node: entry.node.name, items: entry.data?.main?.[0]?.length, first: entry.data?.main?.[0]?.[0]?.json })),
		runData: Object.fromEntries(
			Object.entries(runData).map(([node, runs]) => [
				node,
				runs.map((run) => ({ status: run.executionStatus, startTime: run.startTime, error: run.error?.message ?? run.error?.name ?? null, first: run.data?.main?.[0]?.[0]?.json ?? null })),
			]),
		),
		contextData: row.run?.executionData?.contextData ?? null,
		runtimeData: row.run?.executionData?.runtimeData ?? null,
	};
};
const executionsOf = async (workflowId) =>
	querySqlite(userFolder.dir, 'SELECT id, mode, status, retryOf FROM execution_entity WHERE workflowId = ? ORDER BY id', [workflowId], { profile });
try {
	await start();
	const reportUrl = `${collector.url}/report`;
	const defs = {
		'hook-off': { trigger: { kind: 'webhook' }, progress: false },
		'hook-on': { trigger: { kind: 'webhook' }, progress: true },
		'hook-off-genfirst': { trigger: { kind: 'webhook' }, progress: false, generateFirst: true },
		'man-off': { trigger: { kind: 'manual' }, progress: false },
		'man-on': { trigger: { kind: 'manual' }, progress: true },
		'sched-off': { trigger: { kind: 'schedule' }, progress: false },
		'sched-on': { trigger: { kind: 'schedule' }, progress: true },
		'fail-gen-off': { trigger: { kind: 'webhook' }, progress: false, fail: true },
		'fail-up-off': { trigger: { kind: 'webhook' }, progress: false, gate: gate.url },
	};
	// The schedules fire once, at one second ~35 s from now (UTC).
	const fireAt = new Date(Date.now() + 35_000);
	const cron = `${fireAt.getUTCSeconds()} ${fireAt.getUTCMinutes()} ${fireAt.getUTCHours()} ${fireAt.getUTCDate()} ${fireAt.getUTCMonth() + 1} *`;
	for (const [name, def] of Object.entries(defs)) {
		if (def.trigger.kind === 'schedule') def.trigger.cron = cron;
		const wf = workflow(name, { ...def, reportUrl });
		def.id = def.trigger.kind === 'manual' ? String((await ok(session, 'POST', '/workflows', { ...wf, active: false })).id) : await createActiveWorkflow(session, version, wf);
	}
	const call = async (name, body = { ping: 1 }) => {
		const status = await waitFor(
			async () => {
				const response = await fetch(`${n8n.url}/webhook/${name}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
				await response.arrayBuffer();
				return response.status !== 404 && response.status;
			},
			{ timeoutMs: 60_000, what: `webhook ${name}` },
		);
		if (status !== 200) throw new Error(`webhook ${name}: ${status}`);
	};
	const runManually = async (id) => {
		if (atLeast(version, '2.0.0')) return ok(session, 'POST', `/workflows/${id}/run`, { triggerToStartFrom: { name: 'Trigger' } });
		const wf = await ok(session, 'GET', `/workflows/${id}`);
		return ok(session, 'POST', `/workflows/${id}/run`, { workflowData: wf });
	};
	fs.writeFileSync(holdFile, '');
	fs.writeFileSync(failFile, '');
	gate.open = false;
	for (const name of ['hook-off', 'hook-on', 'hook-off-genfirst', 'fail-gen-off', 'fail-up-off']) await call(name);
	for (const name of ['man-off', 'man-on']) report.cases[name] = { manualRun: await runManually(defs[name].id) };
	const heldNames = ['hook-off', 'hook-on', 'hook-off-genfirst', 'man-off', 'man-on', 'sched-off', 'sched-on'];
	await waitFor(() => heldNames.every((name) => reportsOf(name).length >= 1), { timeoutMs: 90_000, what: `all held (${heldNames.filter((n) => !reportsOf(n).length)})` });
	await waitFor(async () => (await executionsOf(defs['fail-gen-off'].id)).some((e) => e.status === 'error') && (await executionsOf(defs['fail-up-off'].id)).some((e) => e.status === 'error'), { timeoutMs: 30_000, what: 'the failing ones to fail' });
	await new Promise((resolve) => setTimeout(resolve, 1500));
	say('all held; SIGKILL');
	const killedAt = Date.now();
	await n8n.kill();
	await start();
	for (const [name, def] of Object.entries(defs)) {
		const list = await waitFor(
			async () => {
				const rows = await executionsOf(def.id);
				return rows.length && rows.every((e) => !['running', 'new'].includes(e.status)) && rows;
			},
			{ timeoutMs: 90_000, what: `${name}'s execution to be marked` },
		).catch((error) => ({ error: error.message }));
		const original = Array.isArray(list) ? list[0] : null;
		report.cases[name] = { ...report.cases[name], original: original && (await stored(original.id)), originalSeen: reportsOf(name)[0] ?? null };
	}
	fs.rmSync(holdFile, { force: true });
	fs.rmSync(failFile, { force: true });
	gate.open = true;
	report.killedAt = killedAt;
	for (const [name, def] of Object.entries(defs)) {
		const original = report.cases[name].original;
		if (!original) continue;
		const before = reportsOf(name).length;
		const t0 = Date.now();
		const answer = await session.request('POST', `/rest/executions/${original.id}/retry`, { loadWorkflow: false });
		const retries = (await executionsOf(def.id)).filter((e) => String(e.retryOf) === String(original.id));
		report.cases[name].retry = {
			http: answer.status,
			answer: JSON.stringify(answer.body).slice(0, 300),
			ms: Date.now() - t0,
			seen: reportsOf(name).length > before ? reportsOf(name).at(-1) : null,
			stored: retries.length ? await stored(retries.at(-1).id) : null,
		};
	}
	// New executions with identical items.
	for (const name of ['hook-off', 'man-off']) {
		const before = reportsOf(name).length;
		if (name === 'man-off') await runManually(defs[name].id);
		else await call(name);
		await waitFor(() => reportsOf(name).length > before, { timeoutMs: 60_000, what: `${name}'s new execution` });
		report.cases[name].fresh = { seen: reportsOf(name).at(-1) };
	}
} finally {
	await n8n?.kill();
	await collector.close();
	await gate.stop();
	if (!process.env.KEEP_E2E) userFolder.cleanup();
	fs.rmSync(scratch, { recursive: true, force: true });
}
console.log(JSON.stringify(report, null, 2));
