#!/usr/bin/env node
/**
 * Measures, in a real n8n of a profile (tools/n8n-install.mjs), what a retry of a crashed execution
 * shares with the execution it retries, and what n8n's deduplication helpers answer a community node.
 *
 *   node tools/probe/resume-token.mjs                 # n8n 2.41.1
 *   node tools/probe/resume-token.mjs --profile=min   # n8n 1.100.1
 *
 * Two published workflows, Webhook → Code "Record" ($execution.resumeUrl, .id, .mode) → Probe "Hold"
 * (a community node: reports getMode(), getExecutionId() and getWorkflowDataProxy(0).$execution.resumeUrl
 * to a local collector, then waits an hour unless its mode is retry), one with the workflow setting
 * Save Execution Progress on. Each is called once; once both are held, n8n is SIGKILLed and restarted
 * on the same user folder; each crashed execution is retried over REST as the editor does, first
 * `{loadWorkflow:false}` then `{loadWorkflow:true}`; then a brand-new execution of each. Then, n8n
 * stopped, `n8n execute` runs a Probe "Dedup" script twice, and once inside an inline sub-workflow
 * (Execute Workflow, source "parameter": a workflow without an id). Prints one JSON report.
 */
import { createRequire } from 'node:module';
import path from 'node:path';

import { startCollector, waitFor } from '../../test/e2e/fixtures.mjs';
import { createUserFolder, executeWorkflow, importWorkflow, installPaths, querySqlite, startN8n } from '../../test/e2e/n8n.mjs';
import { createActiveWorkflow, ok, ownerSession } from '../../test/compat/n8n-rest.mjs';
import { PROBE_TYPE, installProbeNode } from './probe-node.mjs';

const profile = (process.argv.find((arg) => arg.startsWith('--profile=')) ?? '--profile=default').slice('--profile='.length);
const version = installPaths(profile).profile.n8n;
const OWNER = { email: 'owner@example.com', password: 'Probe-Password-1' };
const say = (message) => process.stderr.write(`[probe ${version}] ${message}\n`);

const tokenOf = (url) => (url ? new URL(url).searchParams.get('signature') : null);

function probeWorkflow(name, hookPath, reportUrl, settings) {
	return {
		name,
		settings: { executionOrder: 'v1', ...settings },
		nodes: [
			{ id: 'hook', name: 'Webhook', type: 'n8n-nodes-base.webhook', typeVersion: 2, position: [0, 0], webhookId: `${hookPath}-id`, parameters: { httpMethod: 'POST', path: hookPath, responseMode: 'onReceived', options: {} } },
			{
				id: 'record',
				name: 'Record',
				type: 'n8n-nodes-base.code',
				typeVersion: 2,
				position: [220, 0],
				parameters: { jsCode: 'return [{ json: { resumeUrl: $execution.resumeUrl, id: $execution.id, mode: $execution.mode } }];' },
			},
			{
				id: 'hold',
				name: 'Hold',
				type: PROBE_TYPE,
				typeVersion: 1,
				position: [440, 0],
				parameters: { operation: 'report', reportUrl, hold: "={{ $('Webhook').first().json.body.hold === true }}" },
			},
		],
		connections: {
			Webhook: { main: [[{ node: 'Record', type: 'main', index: 0 }]] },
			Record: { main: [[{ node: 'Hold', type: 'main', index: 0 }]] },
		},
	};
}

const DEDUP_SCRIPT = [
	{ op: 'count' },
	{ op: 'check', values: ['a', 'b'] },
	{ op: 'check', values: ['b', 'c'] },
	{ op: 'count' },
	{ op: 'check', values: ['d', 'e'], maxEntries: 3 },
	{ op: 'count' },
	{ op: 'check', values: ['a'], maxEntries: 3 },
	{ op: 'remove', values: ['a'] },
	{ op: 'check', values: ['a', 'a'] },
	{ op: 'count' },
	{ op: 'check', values: [1] },
	{ op: 'check', values: ['1'] },
	{ op: 'check', values: ['w'], scope: 'workflow' },
];

function dedupWorkflow(id) {
	const probe = { id: 'dedup-node', name: 'Dedup', type: PROBE_TYPE, typeVersion: 1, position: [220, 0], parameters: { operation: 'dedup', script: JSON.stringify(DEDUP_SCRIPT) } };
	const trigger = { id: 'run', name: 'Run', type: 'n8n-nodes-base.manualTrigger', typeVersion: 1, position: [0, 0], parameters: {} };
	const connect = (from, to) => ({ [from]: { main: [[{ node: to, type: 'main', index: 0 }]] } });
	const inline = { nodes: [{ ...trigger, id: 'sub-start', name: 'Start', type: 'n8n-nodes-base.executeWorkflowTrigger', typeVersion: 1, parameters: {} }, probe], connections: connect('Start', 'Dedup') };
	return [
		{ id, name: 'probe: dedup', active: false, nodes: [trigger, probe], connections: connect('Run', 'Dedup'), settings: { executionOrder: 'v1' } },
		{
			id: `${id}Sub`,
			name: 'probe: dedup in an inline sub-workflow',
			active: false,
			nodes: [
				trigger,
				{ id: 'call', name: 'Call', type: 'n8n-nodes-base.executeWorkflow', typeVersion: 1, position: [220, 0], parameters: { source: 'parameter', workflowJson: JSON.stringify(inline), options: {} } },
			],
			connections: connect('Run', 'Call'),
			settings: { executionOrder: 'v1' },
		},
	];
}

const collector = await startCollector();
const userFolder = await createUserFolder({});
installProbeNode(userFolder.dir);
const report = { version, profile, workflows: {} };
let n8n;
const start = async () =>
	(n8n = await startN8n({ userFolder: userFolder.dir, profile, echo: !!process.env.E2E_ECHO, env: { N8N_SECURE_COOKIE: 'false' } }));
try {
	await start();
	let session = await ownerSession(n8n.url, OWNER);
	const reportUrl = `${collector.url}/report`;
	const defs = { off: { settings: {} }, on: { settings: { saveExecutionProgress: true } } };
	for (const [key, def] of Object.entries(defs)) {
		def.path = `probe-${key}`;
		def.id = await createActiveWorkflow(session, version, probeWorkflow(`probe ${key}`, def.path, reportUrl, def.settings));
	}
	const call = async (hookPath, body) =>
		waitFor(
			async () => {
				const response = await fetch(`${n8n.url}/webhook/${hookPath}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
				return response.status !== 404 && response.status;
			},
			{ timeoutMs: 60_000, what: `webhook ${hookPath}` },
		);
	const reports = () => collector.requests.map((r) => r.json);
	for (const def of Object.values(defs)) await call(def.path, { hold: true });
	await waitFor(() => reports().length >= 2, { timeoutMs: 60_000, what: 'both executions held' });
	const held = reports().slice();
	say(`held: ${held.map((r) => `${r.executionId}:${r.mode}`).join(', ')}; SIGKILL`);
	await n8n.kill();
	await start();
	session = await ownerSession(n8n.url, OWNER).catch(async () => {
		const { restSession } = await import('../../test/e2e/n8n.mjs');
		return restSession(n8n.url, OWNER);
	});
	const { parse } = createRequire(path.join(installPaths(profile).dir, 'package.json'))('flatted');
	const stored = async (id) => {
		const [row] = await querySqlite(userFolder.dir, 'SELECT e.status, e.mode, e.retryOf, e.retrySuccessId, d.data FROM execution_entity e LEFT JOIN execution_data d ON d.executionId = e.id WHERE e.id = ?', [id], { profile });
		const data = row?.data ? parse(row.data) : null;
		return {
			status: row?.status,
			mode: row?.mode,
			retryOf: row?.retryOf ?? null,
			retrySuccessId: row?.retrySuccessId ?? null,
			resumeToken: data?.resumeToken ?? null,
			ranNodes: Object.keys(data?.resultData?.runData ?? {}),
			stack: (data?.executionData?.nodeExecutionStack ?? []).map((entry) => entry.node.name),
			recordOutput: data?.resultData?.runData?.Record?.at(-1)?.data?.main?.[0]?.[0]?.json ?? null,
		};
	};
	for (const [key, def] of Object.entries(defs)) {
		const list = await ok(session, 'GET', `/executions?filter=${encodeURIComponent(JSON.stringify({ workflowId: def.id }))}`);
		const crashed = await waitFor(
			async () => {
				const results = (await ok(session, 'GET', `/executions?filter=${encodeURIComponent(JSON.stringify({ workflowId: def.id }))}`)).results;
				return results.find((e) => e.status === 'crashed');
			},
			{ timeoutMs: 60_000, what: `the ${key} execution marked crashed (listed: ${JSON.stringify(list.results?.map((e) => [e.id, e.status]))})` },
		);
		const original = { id: crashed.id, seen: held.find((r) => String(r.executionId) === String(crashed.id)), stored: await stored(crashed.id) };
		const retries = [];
		for (const loadWorkflow of [false, true]) {
			const before = reports().length;
			const answer = await session.request('POST', `/rest/executions/${crashed.id}/retry`, { loadWorkflow });
			const retryId = answer.body?.data?.id ?? answer.body?.data;
			await waitFor(() => reports().length > before, { timeoutMs: 60_000, what: `the retry (loadWorkflow ${loadWorkflow}) to report` });
			const seen = reports().at(-1);
			retries.push({ loadWorkflow, http: answer.status, answer: typeof answer.body?.data === 'object' ? { id: answer.body.data.id, status: answer.body.data.status, mode: answer.body.data.mode } : answer.body, seen, stored: await stored(seen.executionId), retryId });
		}
		const before = reports().length;
		await call(def.path, { hold: false });
		await waitFor(() => reports().length > before, { timeoutMs: 60_000, what: 'the new execution to report' });
		const fresh = { seen: reports().at(-1) };
		fresh.stored = await stored(fresh.seen.executionId);
		const originalToken = original.stored.resumeToken ?? tokenOf(original.seen?.resumeUrl);
		report.workflows[key] = {
			settings: def.settings,
			original,
			retries,
			fresh,
			verdict: {
				originalToken,
				retryTokens: retries.map((r) => tokenOf(r.seen.resumeUrl)),
				retryModes: retries.map((r) => r.seen.mode),
				freshToken: tokenOf(fresh.seen.resumeUrl),
				retriesShareTheToken: retries.every((r) => originalToken !== null && tokenOf(r.seen.resumeUrl) === originalToken),
				freshDiffers: tokenOf(fresh.seen.resumeUrl) !== originalToken,
			},
		};
		report.workflows[key].original.afterRetries = await stored(crashed.id);
	}
	await n8n.stop();
	n8n = undefined;

	const [dedup, sub] = dedupWorkflow('probeDedup000001');
	await importWorkflow(userFolder.dir, [dedup, sub], { profile });
	report.dedup = [];
	for (const id of [dedup.id, dedup.id, sub.id]) {
		const result = await executeWorkflow(userFolder.dir, id, { profile });
		const output = result.nodeOutput(id === sub.id ? 'Call' : 'Dedup')[0]?.json ?? null;
		report.dedup.push({ workflow: id, ok: result.ok, error: result.error?.message ?? null, output });
	}
	report.processedData = await querySqlite(userFolder.dir, 'SELECT workflowId, context, value FROM processed_data', [], { profile });
} finally {
	await n8n?.kill();
	await collector.close();
	userFolder.cleanup();
}
console.log(JSON.stringify(report, null, 2));
