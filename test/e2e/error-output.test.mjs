/**
 * On Error in the pinned n8n (`n8n execute`, the packed package, the emulator): for every operation,
 * three items with the second one failing, under each of n8n's three On Error settings. Under
 * *Continue (using error output)* the failed item, and only it, leaves by the error output, paired with
 * its input item (whose fields n8n merges in) and with its facts; the others leave by the success
 * output in input order. A credential whose Base URL is not a URL fails every item the same way.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { ERROR_CREDITS as CREDITS, OPERATIONS, chain, emulatorCredential, node, startTestEmulator, withCredential } from './fixtures.mjs';
import { createUserFolder, executeWorkflow, importCredential, importWorkflow, packPackage } from './n8n.mjs';

const IMAGE_PACK = 'n8n-nodes-imagepack.imagePack';
const SETTINGS = ['stopWorkflow', 'continueRegularOutput', 'continueErrorOutput'];
const rows = (list) =>
	node('Rows', 'n8n-nodes-base.code', { jsCode: `return ${JSON.stringify(list)}.map((json) => ({ json }));` }, { typeVersion: 2 });

/** A 16-character workflow id per operation and setting (n8n's form). */
const id = (operation, setting) => `eo${setting.slice(8, 11) || 'Stp'}${operation}`.padEnd(16, '0');

describe('On Error settings in n8n 2.41.1: failed items and the error output', () => {
	let emulator;
	let userFolder;
	const fixture = {};
	const broken = { id: 'imagePackBroken1', name: 'Image Pack (broken URL)', type: 'imagePackApi' };

	before(async () => {
		emulator = await startTestEmulator();
		fixture.mine = (await emulator.control.publish({ packId: 'pk_mine' })).id;
		const other = await emulator.control.createAccount({});
		fixture.theirs = (await emulator.control.publish({ accountId: other.accountId })).id;
		fixture.file = (await emulator.control.seedImages({ count: 1 })).images[0].url;

		const credential = emulatorCredential(emulator);
		const workflows = [];
		for (const [operation, spec] of Object.entries(OPERATIONS)) {
			for (const setting of SETTINGS) {
				const workflow = chain(id(operation, setting), `e2e: ${operation} on error ${setting}`, [
					rows(spec.rows(fixture)),
					node('Image Pack', IMAGE_PACK, spec.parameters, { onError: setting }),
				]);
				workflows.push(withCredential(workflow, credential));
			}
		}
		for (const setting of SETTINGS.slice(1)) {
			const workflow = chain(id('brokenCred', setting), `e2e: broken credential ${setting}`, [
				rows(OPERATIONS.generate.rows()),
				node('Image Pack', IMAGE_PACK, OPERATIONS.generate.parameters, { onError: setting }),
			]);
			workflows.push(withCredential(workflow, broken));
		}
		const retry = chain('eoRetryOnFail001', 'e2e: retry on fail with the error output', [
			rows(['first', 'second', 'third'].map((prompt) => ({ prompt, n: 1 }))),
			node('Image Pack', IMAGE_PACK, OPERATIONS.generate.parameters, {
				onError: 'continueErrorOutput',
				retryOnFail: true,
				maxTries: 3,
				waitBetweenTries: 10,
			}),
		]);
		workflows.push(withCredential(retry, credential));

		userFolder = await createUserFolder({ tarball: process.env.IMAGEPACK_TARBALL || (await packPackage()) });
		await importCredential(userFolder.dir, [credential, { ...broken, data: { baseUrl: 'not a url', apiKey: emulator.apiKey } }]);
		await importWorkflow(userFolder.dir, workflows);
	});

	after(async () => {
		await emulator?.close();
		userFolder?.cleanup();
	});

	async function execute(workflowId) {
		await emulator.control.setCredits(emulator.accountId, CREDITS);
		await emulator.control.clearGenerationBehaviour();
		await emulator.control.clearRequests();
		return executeWorkflow(userFolder.dir, workflowId);
	}

	const skus = (items) => items.map((item) => item.json.sku ?? null);
	const paired = (items) => items.map((item) => item.pairedItem?.item);

	for (const [operation, spec] of Object.entries(OPERATIONS)) {
		it(`${operation}: Continue (using error output) sends item 1 alone to the error output, paired, with its facts`, async () => {
			const result = await execute(id(operation, 'continueErrorOutput'));
			assert.ok(result.ok, result.stdout + result.stderr);
			const success = result.nodeOutput('Image Pack', 0);
			const failed = result.nodeOutput('Image Pack', 1);
			assert.deepEqual([...new Set(paired(success))], [0, 2], 'good items in input order');
			assert.ok(success.every((item) => !('error' in item.json)), JSON.stringify(success));
			assert.equal(failed.length, 1, JSON.stringify(failed));
			const [item] = failed;
			assert.deepEqual(item.pairedItem, { item: 1 });
			assert.equal(item.json.sku, 'SKU-1', 'n8n merges the input item’s fields under the error');
			assert.match(item.json.error.message, /[a-z]/i);
			assert.doesNotMatch(item.json.error.message, /[\u4e00-\u9fff]/, 'English');
			assert.equal(item.json.error.code, spec.facts.code);
			if (operation === 'generate') {
				assert.equal(item.json.error.httpStatus, 402);
				assert.match(item.json.error.requestId, /^req_/);
				assert.equal(item.json.error.charge, 'not_charged');
				const log = await emulator.control.requests({ route: 'generate' });
				assert.deepEqual(log.map((entry) => entry.status), [200, 402, 200]);
				assert.equal((await emulator.control.getAccount(emulator.accountId)).credits, CREDITS - 12);
			}
			assert.ok(!JSON.stringify(result.run).includes(emulator.apiKey), 'the key never in the run');
		});

		it(`${operation}: Continue (regular output) keeps all three in order, item 1 as the same error item`, async () => {
			const result = await execute(id(operation, 'continueRegularOutput'));
			assert.ok(result.ok, result.stdout + result.stderr);
			const items = result.nodeOutput('Image Pack', 0);
			assert.deepEqual([...new Set(paired(items))], [0, 1, 2]);
			const failed = items.filter((item) => 'error' in item.json);
			assert.equal(failed.length, 1);
			assert.deepEqual(Object.keys(failed[0].json), ['error']);
			assert.equal(failed[0].json.error.code, spec.facts.code);
			assert.deepEqual(failed[0].pairedItem, { item: 1 });
		});

		it(`${operation}: Stop Workflow fails the execution on item 1`, async () => {
			const result = await execute(id(operation, 'stopWorkflow'));
			assert.equal(result.ok, false);
			const error = result.nodeError('Image Pack') ?? result.error;
			assert.ok(error, result.stdout + result.stderr);
			assert.ok(!JSON.stringify(error).includes(emulator.apiKey));
		});
	}

	it('a credential whose Base URL is not a URL: every item fails; none passes through the success output', async () => {
		const routed = await execute(id('brokenCred', 'continueErrorOutput'));
		assert.ok(routed.ok, routed.stdout + routed.stderr);
		assert.deepEqual(routed.nodeOutput('Image Pack', 0), []);
		const failed = routed.nodeOutput('Image Pack', 1);
		assert.deepEqual(paired(failed), [0, 1, 2]);
		assert.deepEqual(skus(failed), ['SKU-0', 'SKU-1', 'SKU-2']);
		assert.ok(failed.every((item) => item.json.error.charge === 'not_sent'));
		const regular = await execute(id('brokenCred', 'continueRegularOutput'));
		assert.ok(regular.ok, regular.stdout + regular.stderr);
		const items = regular.nodeOutput('Image Pack', 0);
		assert.deepEqual(paired(items), [0, 1, 2]);
		assert.ok(items.every((item) => Object.keys(item.json).join() === 'error'));
		assert.deepEqual(await emulator.control.requests(), [], 'nothing was sent');
	});

	it('Retry On Fail with the error output: item 0 refused and refunded once is sent again alone, nothing paid twice', async () => {
		await emulator.control.setCredits(emulator.accountId, CREDITS);
		await emulator.control.clearRequests();
		await emulator.control.setGenerationBehaviour({ fail: true, promptIncludes: 'first' });
		const result = await executeWorkflow(userFolder.dir, 'eoRetryOnFail001');
		assert.ok(result.ok, result.stdout + result.stderr);
		assert.deepEqual(result.nodeOutput('Image Pack', 1), []);
		assert.deepEqual(paired(result.nodeOutput('Image Pack', 0)), [0, 1, 2]);
		const log = await emulator.control.requests({ route: 'generate' });
		const per = ['first', 'second', 'third'].map((prompt) => log.filter((entry) => entry.prompt === prompt).length);
		assert.deepEqual(per, [2, 1, 1]);
		assert.equal((await emulator.control.getAccount(emulator.accountId)).credits, CREDITS - 18, 'three images paid once');
	});
});
