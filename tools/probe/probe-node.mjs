/**
 * A minimal community node package ("n8n-nodes-probe", plain CommonJS, no build) that tells what a
 * community node sees in a real n8n: its mode, execution id and `$execution.resumeUrl` (through
 * getWorkflowDataProxy, as a node would read it), and the deduplication helpers' answers. Installed into
 * a user folder the way n8n installs community packages. Used by the probes in this folder only.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { runCommand } from '../../test/e2e/n8n.mjs';

const NODE_SOURCE = String.raw`
'use strict';
class Probe {
	constructor() {
		this.description = {
			displayName: 'Probe',
			name: 'probe',
			group: ['transform'],
			version: 1,
			description: 'Tells what a community node sees',
			defaults: { name: 'Probe' },
			inputs: ['main'],
			outputs: ['main'],
			properties: [
				{
					displayName: 'Operation',
					name: 'operation',
					type: 'options',
					options: [
						{ name: 'Report', value: 'report' },
						{ name: 'Dedup', value: 'dedup' },
						{ name: 'Dump', value: 'dump' },
					],
					default: 'report',
				},
				{ displayName: 'Report URL', name: 'reportUrl', type: 'string', default: '' },
				{ displayName: 'Hold Unless Retry', name: 'hold', type: 'boolean', default: false },
				{ displayName: 'Script', name: 'script', type: 'string', default: '[]' },
				{ displayName: 'Hold While File Exists', name: 'holdFile', type: 'string', default: '' },
				{ displayName: 'Fail While File Exists', name: 'failFile', type: 'string', default: '' },
			],
		};
	}
	async execute() {
		const operation = this.getNodeParameter('operation', 0);
		const proxy = this.getWorkflowDataProxy(0);
		const seen = {
			mode: this.getMode(),
			executionId: this.getExecutionId(),
			resumeUrl: proxy.$execution.resumeUrl,
			executionMode: proxy.$execution.mode,
			workflowId: this.getWorkflow().id ?? null,
			nodeId: this.getNode().id,
			helpers: ['checkProcessedAndRecord', 'checkProcessedItemsAndRecord', 'removeProcessed', 'clearAllProcessedItems', 'getProcessedDataCount'].filter(
				(name) => typeof this.helpers[name] === 'function',
			),
		};
		if (operation === 'dedup') {
			const steps = JSON.parse(this.getNodeParameter('script', 0));
			const results = [];
			for (const step of steps) {
				try {
					const options = { mode: 'entries', ...(step.maxEntries ? { maxEntries: step.maxEntries } : {}) };
					if (step.op === 'check') results.push(await this.helpers.checkProcessedAndRecord(step.values, step.scope ?? 'node', options));
					else if (step.op === 'remove') results.push((await this.helpers.removeProcessed(step.values, step.scope ?? 'node', options)) ?? null);
					else if (step.op === 'count') results.push(await this.helpers.getProcessedDataCount(step.scope ?? 'node', options));
					else if (step.op === 'clear') results.push((await this.helpers.clearAllProcessedItems(step.scope ?? 'node', options)) ?? null);
				} catch (error) {
					results.push({ error: String(error && error.message), name: error && error.constructor && error.constructor.name });
				}
			}
			return [[{ json: { ...seen, results } }]];
		}
		if (operation === 'dump') return dump.call(this, seen);
		const reportUrl = this.getNodeParameter('reportUrl', 0);
		if (reportUrl) {
			await fetch(reportUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(seen) });
		}
		if (this.getNodeParameter('hold', 0) && seen.mode !== 'retry') await new Promise((resolve) => setTimeout(resolve, 3_600_000));
		return [this.getInputData().map((item) => ({ json: { ...item.json, probe: seen } }))];
	}
}

/** Everything a node can read about its execution's past, reported, then held or failed (not in a retry). */
async function dump(seen) {
	const fs = require('fs');
	const self = this.getNode().name;
	const proxy = this.getWorkflowDataProxy(0);
	const short = (value) => JSON.parse(JSON.stringify(value ?? null, (key, v) => (typeof v === 'string' && v.length > 200 ? v.slice(0, 200) + '…' : v)));
	const runsOf = (name) => {
		let executed;
		try { executed = proxy.$(name).isExecuted; } catch (error) { return { error: String(error.message) }; }
		if (executed !== true) return { executed };
		const runs = [];
		for (let run = 0; run < 8; run++) {
			try {
				runs.push(proxy.$(name).all(0, run).slice(0, 2).map((item) => short(item.json)));
			} catch (error) {
				if (/not found/.test(error.message)) break;
				runs.push('ERROR ' + error.message);
			}
		}
		return { executed, runs };
	};
	const parents = {};
	for (const parent of this.getParentNodes(self)) parents[parent.name] = { type: parent.type, root: this.getParentNodes(parent.name).length === 0, ...runsOf(parent.name) };
	const executeData = this.getExecuteData();
	const nodeContext = this.getContext('node');
	const report = {
		...seen,
		workflowName: this.getWorkflow().name,
		now: Date.now(),
		runIndex: proxy.$runIndex,
		executionCustomData: (() => { try { return short(proxy.$execution.customData.getAll()); } catch (error) { return 'ERROR ' + error.message; } })(),
		executeData: { node: executeData.node.name, source: short(executeData.source), inputItems: executeData.data.main[0]?.length ?? null, metadata: short(executeData.metadata ?? null) },
		inputSource: short(this.getInputSourceData()),
		self: runsOf(self),
		parents,
		executionContext: typeof this.getExecutionContext === 'function' ? short(this.getExecutionContext()) : 'no getExecutionContext',
		nodeContext: short(nodeContext),
		flowContext: short(this.getContext('flow')),
		firstInput: short(this.getInputData()[0]?.json),
	};
	nodeContext.seen = [...(nodeContext.seen ?? []), { executionId: seen.executionId, mode: seen.mode, runIndex: proxy.$runIndex, at: report.now }];
	const reportUrl = this.getNodeParameter('reportUrl', 0);
	if (reportUrl) await fetch(reportUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(report) });
	const holdFile = this.getNodeParameter('holdFile', 0);
	const failFile = this.getNodeParameter('failFile', 0);
	if (failFile && seen.mode !== 'retry' && fs.existsSync(failFile)) throw new Error('probe: failing as asked (' + failFile + ')');
	while (holdFile && seen.mode !== 'retry' && fs.existsSync(holdFile)) await new Promise((resolve) => setTimeout(resolve, 200));
	return [this.getInputData().map((item, index) => ({ json: { ...item.json, probe: { executionId: seen.executionId, mode: seen.mode } }, pairedItem: index }))];
}
module.exports = { Probe };
`;

export const PROBE_TYPE = 'n8n-nodes-probe.probe';

/** Writes the probe package (package.json, dist/Probe.node.js) into `dir`. */
export function writeProbePackage(dir) {
	fs.mkdirSync(path.join(dir, 'dist'), { recursive: true });
	fs.writeFileSync(path.join(dir, 'dist', 'Probe.node.js'), NODE_SOURCE);
	fs.writeFileSync(
		path.join(dir, 'package.json'),
		JSON.stringify({ name: 'n8n-nodes-probe', version: '0.0.1', keywords: ['n8n-community-node-package'], n8n: { n8nNodesApiVersion: 1, nodes: ['dist/Probe.node.js'] } }, null, 2),
	);
}

/** The probe package as an npm tarball (for createUserFolder({ tarball })); returns its path. */
export async function packProbe() {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'imagepack-probe-'));
	writeProbePackage(path.join(dir, 'package'));
	const tarball = path.join(dir, 'n8n-nodes-probe-0.0.1.tgz');
	const result = await runCommand('tar', ['-czf', tarball, '-C', dir, 'package']);
	if (result.code !== 0) throw new Error(`tar failed: ${result.stderr}`);
	return tarball;
}

/** Installs the probe package into `<userFolder>/.n8n/nodes` next to whatever is there. */
export function installProbeNode(userFolder) {
	const nodesDir = path.join(userFolder, '.n8n', 'nodes');
	writeProbePackage(path.join(nodesDir, 'node_modules', 'n8n-nodes-probe'));
	const manifestFile = path.join(nodesDir, 'package.json');
	const manifest = fs.existsSync(manifestFile) ? JSON.parse(fs.readFileSync(manifestFile, 'utf8')) : { name: 'installed-nodes', private: true, dependencies: {} };
	manifest.dependencies = { ...manifest.dependencies, 'n8n-nodes-probe': '0.0.1' };
	fs.writeFileSync(manifestFile, JSON.stringify(manifest, null, 2) + '\n');
}
