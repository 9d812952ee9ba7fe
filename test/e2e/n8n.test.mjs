/**
 * The pinned n8n itself, and the packed package loaded in it the way n8n installs community packages.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { createUserFolder, executeWorkflow, importWorkflow, n8nCli, packPackage } from './n8n.mjs';

describe('pinned n8n', () => {
	let userFolder;
	before(async () => {
		userFolder = await createUserFolder({
			tarball: process.env.IMAGEPACK_TARBALL || (await packPackage()),
		});
	});
	after(() => userFolder?.cleanup());

	it('runs a plain workflow headless (Manual Trigger → Set → Code)', async () => {
		await importWorkflow(userFolder.dir, {
			id: 'e2eSmokeSetCode1',
			name: 'Smoke: Set and Code',
			nodes: [
				{ id: 'm', name: 'Manual', type: 'n8n-nodes-base.manualTrigger', typeVersion: 1, position: [0, 0], parameters: {} },
				{
					id: 's',
					name: 'Set',
					type: 'n8n-nodes-base.set',
					typeVersion: 3.4,
					position: [200, 0],
					parameters: { assignments: { assignments: [{ id: 'a', name: 'hello', value: 'world', type: 'string' }] }, options: {} },
				},
				{
					id: 'c',
					name: 'Code',
					type: 'n8n-nodes-base.code',
					typeVersion: 2,
					position: [400, 0],
					parameters: { jsCode: 'return $input.all().map((item) => ({ json: { ...item.json, answer: 6 * 7 } }));' },
				},
			],
			connections: {
				Manual: { main: [[{ node: 'Set', type: 'main', index: 0 }]] },
				Set: { main: [[{ node: 'Code', type: 'main', index: 0 }]] },
			},
			settings: {},
		});
		const result = await executeWorkflow(userFolder.dir, 'e2eSmokeSetCode1');
		assert.ok(result.ok, result.stdout + result.stderr);
		assert.deepEqual(result.nodeOutput('Code').map((item) => item.json), [{ hello: 'world', answer: 42 }]);
	});

	it('loads the package: both nodes, the credential and the AI tool variant', async () => {
		const output = path.join(userFolder.dir, 'nodes.json');
		const result = await n8nCli(['export:nodes', `--output=${output}`], { userFolder: userFolder.dir, env: { N8N_LOG_LEVEL: 'error' } });
		assert.equal(result.code, 0, result.stdout + result.stderr);
		assert.doesNotMatch(result.stdout, /Failed to load package "n8n-nodes-imagepack"/);
		const types = new Map(JSON.parse(fs.readFileSync(output, 'utf8')).map((type) => [type.name, type]));
		for (const name of ['imagePack', 'imagePackTrigger', 'imagePackTool']) {
			assert.ok(types.has(`n8n-nodes-imagepack.${name}`), `n8n-nodes-imagepack.${name} not loaded`);
		}
		assert.equal(types.get('n8n-nodes-imagepack.imagePack').displayName, 'Image Pack');
		assert.ok(types.get('n8n-nodes-imagepack.imagePackTrigger').polling, 'the trigger polls');
		assert.deepEqual(
			types.get('n8n-nodes-imagepack.imagePack').credentials.map((c) => c.name),
			['imagePackApi'],
		);
	});
});
