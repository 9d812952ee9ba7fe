/**
 * The workflows of the compatibility suite, built for any n8n of the matrix: each gets an explicit id,
 * a `versionId` (n8n 2.x's import:workflow wants one) and `active: false` (1.100.1's import:workflow
 * fails without it: NOT NULL constraint on workflow_entity.active), AI node versions fitted to the n8n.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { agentExample } from '../e2e/agent-scenarios.mjs';
import { OPERATIONS, node, withCredential } from '../e2e/fixtures.mjs';

export const IMAGE_PACK = 'n8n-nodes-imagepack.imagePack';
export const TRIGGER = 'n8n-nodes-imagepack.imagePackTrigger';
export const ERROR_SETTINGS = ['continueErrorOutput', 'continueRegularOutput'];

/** nano-banana-2 at 1K: 12 credits an image. */
export const RETRY_PRICE = 12;
/**
 * Retry On Fail (3 tries) under Continue On Fail, one branch per case, items told apart by prompt:
 * `refused` fails its first item once with a 500 before any work (nothing charged), `dropped` loses the
 * answer of its first item after the service generated (and charged) it.
 */
export const RETRY_BRANCHES = {
	regular: { onError: 'continueRegularOutput', fault: { kind: 'status', status: 500 } },
	errorOutput: { onError: 'continueErrorOutput', fault: { kind: 'status', status: 500 } },
	dropped: { onError: 'continueRegularOutput', fault: { kind: 'reset', when: 'after' } },
};
export const retryPrompts = (branch) => ['first', 'second', 'third'].map((word) => `${branch} ${word}`);

export const WORKFLOW_IDS = {
	generate: 'compatGenerate01',
	errors: (setting) => `compatErr${setting === 'continueErrorOutput' ? 'Out' : 'Reg'}`.padEnd(16, '0'),
	retry: 'compatRetryCof01',
	agent: 'compatAgentErr01',
	trigger: 'compatTrigger001',
};

const rows = (name, list) =>
	node(name, 'n8n-nodes-base.code', { jsCode: `return ${JSON.stringify(list)}.map((json) => ({ json }));` }, { typeVersion: 2 });

/**
 * A Manual Trigger feeding several branches, each a row of nodes: { branchName: [node, …] }. Node
 * names must be unique across branches.
 */
export function fanOut(id, name, branches) {
	const nodes = [node('Run', 'n8n-nodes-base.manualTrigger')];
	const connections = { Run: { main: [[]] } };
	Object.values(branches).forEach((list, row) => {
		list.forEach((n, column) => nodes.push({ ...n, position: [(column + 1) * 220, row * 200] }));
		connections.Run.main[0].push({ node: list[0].name, type: 'main', index: 0 });
		for (let i = 0; i < list.length - 1; i++) connections[list[i].name] = { main: [[{ node: list[i + 1].name, type: 'main', index: 0 }]] };
	});
	return { id, name, versionId: randomUUID(), active: false, nodes, connections, settings: { executionOrder: 'v1' } };
}

export function generateWorkflow() {
	return fanOut(WORKFLOW_IDS.generate, 'compat: generate with a download', {
		generate: [
			node('Generate', IMAGE_PACK, {
				resource: 'image',
				operation: 'generate',
				prompt: 'A white ceramic mug on an oak table',
				model: 'gpt-image-2',
				quality: 'low',
				ratio: '4:5',
				n: 2,
			}),
		],
	});
}

/** Every operation in one workflow (a branch each) under one On Error setting; nodes named by operation. */
export function errorsWorkflow(setting, fixture) {
	const branches = {};
	for (const [operation, spec] of Object.entries(OPERATIONS)) {
		branches[operation] = [rows(`Rows ${operation}`, spec.rows(fixture)), node(operation, IMAGE_PACK, spec.parameters, { onError: setting })];
	}
	return fanOut(WORKFLOW_IDS.errors(setting), `compat: every operation under ${setting}`, branches);
}

export function retryWorkflow() {
	const branches = {};
	for (const [branch, { onError }] of Object.entries(RETRY_BRANCHES)) {
		const generate = {
			resource: 'image',
			operation: 'generate',
			prompt: '={{ $json.prompt }}',
			model: 'nano-banana-2',
			ratio: '1:1',
			resolution: '1K',
			options: { downloadImages: false },
		};
		branches[branch] = [
			rows(`Rows ${branch}`, retryPrompts(branch).map((prompt) => ({ prompt }))),
			// n8n reads a wait of 0 as "not set" (1 s): 10 ms keeps the run short.
			node(branch, IMAGE_PACK, generate, { onError, retryOnFail: true, maxTries: 3, waitBetweenTries: 10 }),
		];
	}
	return fanOut(WORKFLOW_IDS.retry, 'compat: Retry On Fail under Continue On Fail', branches);
}

/** The trigger from the beginning (with manifests), polling once a minute at second `second`. */
export function triggerWorkflow(second) {
	const trigger = node('Trigger', TRIGGER, {
		pollTimes: { item: [{ mode: 'custom', cronExpression: `${second} * * * * *` }] },
		includeManifest: true,
		startFrom: 'beginning',
	});
	return {
		id: WORKFLOW_IDS.trigger,
		name: 'compat: trigger',
		versionId: randomUUID(),
		active: false,
		nodes: [trigger, node('Received', 'n8n-nodes-base.noOp', {}, { position: [220, 0] })],
		connections: { Trigger: { main: [[{ node: 'Received', type: 'main', index: 0 }]] } },
		settings: { executionOrder: 'v1' },
	};
}

/** The node types n8n knows (a list as n8n's types/nodes.json has it): Map of name → versions. */
export function knownVersions(types, prefix = '') {
	const known = new Map();
	for (const type of types) {
		const name = `${prefix}${type.name}`;
		known.set(name, [...(known.get(name) ?? []), ...[type.version].flat()]);
	}
	return known;
}

export const LANGCHAIN = '@n8n/n8n-nodes-langchain.';

/** The AI nodes an n8n install ships (its n8n-nodes-langchain's types/nodes.json), without starting it. */
export function shippedAiNodes(installDir) {
	const file = path.join(installDir, 'node_modules', '@n8n', 'n8n-nodes-langchain', 'dist', 'types', 'nodes.json');
	return knownVersions(JSON.parse(fs.readFileSync(file, 'utf8')), LANGCHAIN);
}

/**
 * The workflow with every AI node version this n8n lacks replaced by the highest one it has below it
 * (1.100.1 has AI Agent 2 and OpenAI Chat Model 1.2 at most). Returns { workflow, changed: ['type a →
 * b'], missing: [types] }.
 */
export function fitAiNodeVersions(workflow, known) {
	const copy = structuredClone(workflow);
	const changed = [];
	const missing = [];
	for (const n of copy.nodes.filter((one) => one.type.startsWith(LANGCHAIN))) {
		const versions = known.get(n.type) ?? [];
		if (versions.includes(n.typeVersion)) continue;
		const below = versions.filter((version) => version < n.typeVersion).sort((a, b) => b - a)[0];
		if (below === undefined) {
			missing.push(`${n.type} v${n.typeVersion}`);
			continue;
		}
		changed.push(`${n.type.slice(LANGCHAIN.length)} ${n.typeVersion} → ${below}`);
		n.typeVersion = below;
	}
	return { workflow: copy, changed, missing };
}

/** The chat example on the scripted model's errors scenario, fitted to this n8n's AI nodes. */
export function agentWorkflow({ credential, model, known }) {
	const example = agentExample({ id: WORKFLOW_IDS.agent, scenario: 'errors', credential, model });
	return fitAiNodeVersions({ ...example, versionId: randomUUID(), active: false }, known);
}

export { withCredential };
