/**
 * The same tarball in the newest n8n 1.x that installs here (1.123.81, on this machine's Node 20; see
 * the `v1` profile in n8n-install.mjs): the package loads, a generate workflow with binaries and the
 * scheduled batch example run with `n8n execute` against the emulator, and the trigger's activation
 * poll emits in a running n8n 1.x and keeps its state across a restart.
 *
 * Skipped with E2E_SKIP_N8N_V1=1 (gulp e2e then does not install that n8n either).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { GENERATE, agentExample, assertErrorTexts, errorsScenario, modelCredential } from './agent-scenarios.mjs';
import { chain, emulatorCredential, exampleWorkflows, loadExample, node, startTestEmulator, withCredential } from './fixtures.mjs';
import {
	createUserFolder,
	executeWorkflow,
	importCredential,
	importWorkflow,
	installPaths,
	n8nCli,
	packPackage,
	publishWorkflow,
	readBinary,
	readStaticData,
	startN8n,
	waitForFinishedExecutions,
} from './n8n.mjs';
import { startScriptedModel } from './scripted-model.mjs';

const profile = 'v1';
const { n8n: version } = installPaths(profile).profile;
const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');
const TRIGGER = 'e2eV1Trigger0001';
const AGENT = 'e2eV1AgentError1';

describe(`n8n ${version} (1.x) on Node ${process.versions.node}`, { skip: process.env.E2E_SKIP_N8N_V1 === '1' && 'E2E_SKIP_N8N_V1=1' }, () => {
	let emulator;
	let userFolder;
	let n8n;
	let model;

	before(async () => {
		emulator = await startTestEmulator();
		model = await startScriptedModel({ scenarios: { errors: errorsScenario } });
		userFolder = await createUserFolder({ tarball: process.env.IMAGEPACK_TARBALL || (await packPackage()) });
		const credential = emulatorCredential(emulator);
		await importCredential(userFolder.dir, [credential, modelCredential(model)], { profile });
		await importWorkflow(
			userFolder.dir,
			[
				chain('e2eV1Generate001', 'e2e (1.x): generate with binaries', [
					node('Generate', 'n8n-nodes-imagepack.imagePack', {
						resource: 'image',
						operation: 'generate',
						prompt: 'A white ceramic mug on an oak table',
						model: 'gpt-image-2',
						quality: 'low',
						ratio: '4:5',
						n: 2,
					}),
				]),
				loadExample('scheduled-batch-generation.json'),
				agentExample({ id: AGENT, scenario: 'errors', credential, model }),
				{
					id: TRIGGER,
					name: 'e2e (1.x): trigger from the beginning',
					nodes: [
						node('Trigger', 'n8n-nodes-imagepack.imagePackTrigger', {
							pollTimes: { item: [{ mode: 'everyHour' }] },
							includeManifest: true,
							startFrom: 'beginning',
						}),
					],
					connections: {},
					settings: { executionOrder: 'v1' },
				},
			].map((workflow) => withCredential(workflow, credential)),
			{ profile },
		);
		await publishWorkflow(userFolder.dir, TRIGGER, { profile });
	});

	after(async () => {
		await n8n?.stop();
		await model?.close();
		await emulator?.close();
		userFolder?.cleanup();
	});

	it('loads the package (action node, trigger, tool variant); the examples’ node versions exist', async () => {
		const output = path.join(userFolder.dir, 'nodes.json');
		const result = await n8nCli(['export:nodes', `--output=${output}`], { userFolder: userFolder.dir, profile, env: { N8N_LOG_LEVEL: 'error' } });
		assert.equal(result.code, 0, result.stdout + result.stderr);
		const types = JSON.parse(fs.readFileSync(output, 'utf8'));
		const names = new Set(types.map((type) => type.name));
		for (const name of ['imagePack', 'imagePackTrigger', 'imagePackTool']) assert.ok(names.has(`n8n-nodes-imagepack.${name}`), name);
		// The example workflows use node versions that 1.x has too.
		for (const { file, workflow } of exampleWorkflows()) {
			for (const n of workflow.nodes) {
				const known = types.some((type) => type.name === n.type && [type.version].flat().includes(n.typeVersion));
				assert.ok(known, `${file}: ${n.type} v${n.typeVersion} is not known to n8n ${version}`);
			}
		}
	});

	it('runs a generate workflow: response and binaries', async () => {
		const result = await executeWorkflow(userFolder.dir, 'e2eV1Generate001', { profile });
		assert.ok(result.ok, result.stdout + result.stderr);
		const [item] = result.nodeOutput('Generate');
		assert.equal(item.json.credits_charged, 10, 'gpt-image-2, low quality, 2 images');
		const stored = new Map((await emulator.control.images()).map((image) => [image.id, image]));
		for (const [index, image] of item.json.images.entries()) {
			const binary = item.binary[`image_${index}`];
			assert.equal(binary.fileName, image.filename);
			assert.equal(binary.mimeType, 'image/png');
			assert.equal(sha256(readBinary(userFolder.dir, binary)), stored.get(image.id).sha256);
		}
		const files = await emulator.control.requests({ listener: 'files' });
		assert.ok(files.length === 2 && files.every((entry) => entry.headers.authorization === undefined));
	});

	it('runs the scheduled batch example from its manual trigger', async () => {
		const result = await executeWorkflow(userFolder.dir, 'ipxBatchGenerate', { profile });
		assert.ok(result.ok, result.stdout + result.stderr);
		const saved = result.nodeOutput('Save results').map((item) => item.json);
		assert.deepEqual(saved.map((row) => [row.sku, row.credits_charged]), [
			['MUG-001', 32],
			['TOTE-002', 32],
			['LAMP-003', 32],
		]);
		assert.deepEqual(result.nodeOutput('Retry later'), [], 'nothing failed');
	});

	it('runs the trigger: the activation poll emits, the state survives a restart, nothing is emitted twice', async () => {
		const first = await emulator.control.publish({ packId: 'pk_v1_first' });
		const emitted = (count) => waitForFinishedExecutions(userFolder.dir, TRIGGER, count, { profile });
		const ids = (execution) => execution.nodeOutput('Trigger').map((item) => item.json.id);

		n8n = await startN8n({ userFolder: userFolder.dir, profile });
		const [run] = await emitted(1);
		assert.deepEqual(ids(run), [first.id]);
		assert.equal(run.nodeOutput('Trigger')[0].json.manifest.schemaVersion, 3);
		await n8n.stop();
		const saved = await readStaticData(userFolder.dir, TRIGGER, { profile });
		assert.ok(saved?.['node:Trigger']?.cursor >= first.id, JSON.stringify(saved));

		const second = await emulator.control.publish({ packId: 'pk_v1_second' });
		n8n = await startN8n({ userFolder: userFolder.dir, profile });
		const executions = await emitted(2);
		await n8n.stop();
		n8n = null;
		assert.deepEqual(executions.map(ids), [[first.id], [second.id]]);
	});

	it('the AI agent example (AI Agent 3): the model gets the tool description, and a validation error and a 402 as actionable text', async () => {
		const { TOOL_DESCRIPTIONS } = await import('../../nodes/ImagePack/actions/tool.ts');
		await emulator.control.clearRequests();
		await emulator.control.setCredits(emulator.accountId, 5);
		const result = await executeWorkflow(userFolder.dir, AGENT, { profile });
		assert.ok(result.ok, result.stdout + result.stderr);
		const requests = model.forScenario('errors');
		assert.equal(requests[0].tools.find((tool) => tool.name === GENERATE).description, TOOL_DESCRIPTIONS.generate);
		const generations = await emulator.control.requests({ route: 'generate' });
		await assertErrorTexts({ results: requests.at(-1).results, generations, emulator });
		assert.match(result.nodeOutput('AI Agent')[0].json.output, /insufficient_credits/);
	});
});
