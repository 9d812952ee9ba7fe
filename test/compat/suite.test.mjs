/**
 * The compatibility suite: the packed package in one real n8n of the matrix (env COMPAT_PROFILE, a
 * profile of tools/n8n-install.mjs, default `default`), against the emulator and the scripted model.
 * `npm run test:compat` runs it once per profile; alone:
 *
 *   COMPAT_PROFILE=min node --import tsx --test test/compat/suite.test.mjs
 *
 * First headless runs (`n8n execute`, a CLI start each): Generate with a download, every operation
 * with its second item failing under both Continue settings, Retry On Fail under Continue On Fail, the
 * AI Agent tool. Then one running n8n: the node types the editor lists, the trigger's activation poll,
 * the publication picker's search and Fetch Test Event over the REST API, and a timed poll.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import { GENERATE, assertErrorTexts, errorsScenario, modelCredential } from '../e2e/agent-scenarios.mjs';
import { ERROR_CREDITS, OPERATIONS, emulatorCredential, exampleWorkflows, loadExample, startTestEmulator, waitFor } from '../e2e/fixtures.mjs';
import {
	executeWorkflow,
	importCredential,
	importWorkflow,
	installPaths,
	isFinished,
	packPackage,
	readExecutions,
	readBinary,
	readStaticData,
	startN8n,
	waitForFinishedExecutions,
} from '../e2e/n8n.mjs';
import { startScriptedModel } from '../e2e/scripted-model.mjs';
import { createActiveWorkflow, fetchTestEvent, ownerSession, searchList } from './n8n-rest.mjs';
import { prepareUserFolder } from './user-folder.mjs';
import {
	ERROR_SETTINGS,
	IMAGE_PACK,
	RETRY_BRANCHES,
	RETRY_PRICE,
	WORKFLOW_IDS,
	agentWorkflow,
	errorsWorkflow,
	generateWorkflow,
	knownVersions,
	retryPrompts,
	retryWorkflow,
	shippedAiNodes,
	triggerWorkflow,
	withCredential,
} from './workflows.mjs';

const profile = process.env.COMPAT_PROFILE || 'default';
const { n8n: version, node: nodeVersion } = installPaths(profile).profile;
const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');
/** The credential of the picker's account. */
const PICKER = { id: 'compatPickerCre1', name: 'Image Pack (picker account)', type: 'imagePackApi' };
const OWNER = { email: 'owner@example.com', password: 'Compat-Test-Password-1' };
/** The keys of a failed item's `error`, on every version and both Continue settings. */
const BATCH_EXAMPLE = 'scheduled-batch-generation.json';
const ERROR_KEYS = ['message', 'code', 'httpStatus', 'requestId', 'charge', 'sessionId', 'parameter', 'apiMessage'];
/** Seconds from the trigger's activation to its first timed poll: after the REST tests, before long. */
const FIRST_POLL_AFTER_S = Number(process.env.COMPAT_FIRST_POLL_AFTER_S ?? 20);
const log = (message) => process.env.E2E_QUIET || process.stderr.write(`[compat ${version}] ${message}\n`);

describe(`n8n ${version} (profile ${profile}, Node ${nodeVersion ?? process.versions.node})`, () => {
	let emulator;
	let model;
	let userFolder;
	let credential;
	let agent;
	const fixture = {};
	const options = { profile };

	before(async () => {
		emulator = await startTestEmulator();
		model = await startScriptedModel({ scenarios: { errors: errorsScenario } });
		fixture.mine = (await emulator.control.publish({ packId: 'pk_mine' })).id;
		const other = await emulator.control.createAccount({});
		fixture.theirs = (await emulator.control.publish({ accountId: other.accountId })).id;
		fixture.file = (await emulator.control.seedImages({ count: 1 })).images[0].url;
		// The picker's account: more publications than one page (50), the newest easy to find.
		const pickerAccount = await emulator.control.createAccount({});
		const { key } = await emulator.control.createKey({ accountId: pickerAccount.accountId });
		await emulator.control.publishBulk({ accountId: pickerAccount.accountId, count: 60 });
		fixture.totes = await emulator.control.publish({ accountId: pickerAccount.accountId, packId: 'pk_totes' });
		fixture.mugs = await emulator.control.publish({ packId: 'pk_mugs' });

		userFolder = await prepareUserFolder({ tarball: process.env.IMAGEPACK_TARBALL || (await packPackage()), profile });
		credential = emulatorCredential(emulator);
		agent = agentWorkflow({ credential, model, known: shippedAiNodes(installPaths(profile).dir) });
		const pickerCredential = { ...PICKER, data: { baseUrl: emulator.baseUrl, apiKey: key } };
		await importCredential(userFolder.dir, [credential, pickerCredential, modelCredential(model)], options);
		const workflows = [generateWorkflow(), ...ERROR_SETTINGS.map((setting) => errorsWorkflow(setting, fixture)), retryWorkflow(), loadExample(BATCH_EXAMPLE)]; // the example as shipped: it imports by CLI on every version
		if (!agent.missing.length) workflows.push(agent.workflow);
		await importWorkflow(userFolder.dir, workflows.map((workflow) => withCredential(workflow, credential)), options);
	});

	after(async () => {
		await model?.close();
		await emulator?.close();
		userFolder?.cleanup();
	});

	/** A clean emulator (credits, faults, logs) and one `n8n execute` of the workflow. */
	async function execute(workflowId, { credits = 100_000 } = {}) {
		await emulator.control.setCredits(emulator.accountId, credits);
		await emulator.control.clearGenerationBehaviour();
		await emulator.control.clearFaults();
		await emulator.control.clearRequests();
		return executeWorkflow(userFolder.dir, workflowId, options);
	}

	/** Each workflow runs once; the tests of its branches read the same run. */
	const runs = new Map();
	const runOnce = (key, start) => {
		if (!runs.has(key)) runs.set(key, start());
		return runs.get(key);
	};

	describe('headless runs (n8n execute)', () => {
		it('Generate with a download: the response, and binaries with the emulator’s bytes', async () => {
			const result = await execute(WORKFLOW_IDS.generate);
			assert.ok(result.ok, result.stdout + result.stderr);
			const [item] = result.nodeOutput('Generate');
			assert.equal(item.json.credits_charged, 10, 'gpt-image-2, low quality, 2 images');
			const stored = new Map((await emulator.control.images()).map((image) => [image.id, image]));
			assert.equal(item.json.images.length, 2);
			for (const [index, image] of item.json.images.entries()) {
				const binary = item.binary?.[`image_${index}`];
				assert.ok(binary, `image_${index}`);
				assert.equal(binary.fileName, image.filename);
				assert.equal(binary.mimeType, 'image/png');
				assert.equal(sha256(readBinary(userFolder.dir, binary)), stored.get(image.id).sha256);
			}
			const files = await emulator.control.requests({ listener: 'files' });
			assert.equal(files.length, 2);
			assert.ok(files.every((entry) => entry.headers.authorization === undefined), 'the key never goes to the signed links');
		});

		const errorRun = (setting) =>
			runOnce(setting, async () => {
				const result = await execute(WORKFLOW_IDS.errors(setting), { credits: ERROR_CREDITS });
				assert.ok(result.ok, result.stdout + result.stderr);
				assert.ok(!JSON.stringify(result.run).includes(emulator.apiKey), 'the key never in the run');
				return { result, generations: await emulator.control.requests({ route: 'generate' }), account: await emulator.control.getAccount(emulator.accountId) };
			});
		const paired = (items) => items.map((item) => item.pairedItem?.item);

		function assertFacts(error, facts) {
			assert.deepEqual(Object.keys(error).sort(), [...ERROR_KEYS].sort(), JSON.stringify(error));
			assert.match(error.message, /[a-z]{3}/i);
			assert.doesNotMatch(error.message, /[\u4e00-\u9fff]/, 'an English message');
			for (const [key, want] of Object.entries(facts)) {
				if (want instanceof RegExp) assert.match(String(error[key]), want, key);
				else assert.equal(error[key], want, key);
			}
		}

		for (const [operation, spec] of Object.entries(OPERATIONS)) {
			it(`${operation}, Continue (using error output): item 1 alone on the error output, paired, input merged in, with its facts`, async () => {
				const { result, generations, account } = await errorRun('continueErrorOutput');
				const success = result.nodeOutput(operation, 0);
				const failed = result.nodeOutput(operation, 1);
				assert.deepEqual([...new Set(paired(success))], [0, 2], `good items in input order: ${JSON.stringify(success).slice(0, 800)}`);
				assert.ok(success.every((item) => !('error' in item.json)), JSON.stringify(success).slice(0, 800));
				assert.equal(failed.length, 1, JSON.stringify(failed));
				const [item] = failed;
				assert.deepEqual(item.pairedItem, { item: 1 });
				assert.equal(item.json.sku, 'SKU-1', 'n8n merges the input item’s fields in');
				assertFacts(item.json.error, spec.facts);
				if (operation === 'generate') {
					assert.deepEqual(generations.map((entry) => entry.status), [200, 402, 200]);
					assert.equal(account.credits, ERROR_CREDITS - 12);
				}
				if (operation === 'get') assert.deepEqual(success.map((i) => [i.json.id, i.json.pack_id]), [[fixture.mine, 'pk_mine'], [fixture.mine, 'pk_mine']], 'Get Publication by id');
			});

			it(`${operation}, Continue (regular output): all three in order, item 1 is { error } and nothing else`, async () => {
				const { result } = await errorRun('continueRegularOutput');
				const items = result.nodeOutput(operation, 0);
				assert.deepEqual([...new Set(paired(items))], [0, 1, 2]);
				assert.deepEqual(result.nodeOutput(operation, 1), [], 'no second output');
				const failed = items.filter((item) => 'error' in item.json);
				assert.equal(failed.length, 1, JSON.stringify(items).slice(0, 800));
				assert.deepEqual(Object.keys(failed[0].json), ['error']);
				assert.deepEqual(failed[0].pairedItem, { item: 1 });
				assertFacts(failed[0].json.error, spec.facts);
			});
		}

		it('Retry On Fail under Continue On Fail: nothing paid twice, nothing paid and dropped', async () => {
			const result = await runOnce('retry', async () => {
				await emulator.control.setCredits(emulator.accountId, 100_000);
				await emulator.control.clearFaults();
				await emulator.control.clearRequests();
				for (const [branch, { fault }] of Object.entries(RETRY_BRANCHES)) {
					await emulator.control.injectFault({ route: 'generate', ...fault, promptIncludes: retryPrompts(branch)[0] });
				}
				return executeWorkflow(userFolder.dir, WORKFLOW_IDS.retry, options);
			});
			assert.ok(result.ok, result.stdout + result.stderr);
			const log = await emulator.control.requests({ route: 'generate' });
			const turns = await emulator.control.turns();
			for (const branch of Object.keys(RETRY_BRANCHES)) {
				const prompts = retryPrompts(branch);
				const requests = prompts.map((prompt) => log.filter((entry) => entry.prompt === prompt).length);
				const charged = prompts.map((prompt) => turns.filter((turn) => turn.prompt === prompt).reduce((sum, turn) => sum + turn.charged, 0));
				const paid = prompts.map((prompt) => turns.filter((turn) => turn.prompt === prompt && turn.status === 'succeeded').map((turn) => turn.id));
				const output = [...result.nodeOutput(branch, 0), ...result.nodeOutput(branch, 1)];
				const delivered = output.map((item) => item.json.turn_id ?? null).filter(Boolean);
				if (branch === 'dropped') {
					// Generated and charged, its answer lost: never sent again, reported as may have been charged.
					assert.deepEqual(requests, [1, 1, 1], `${branch}: requests per item`);
					assert.deepEqual(charged, [RETRY_PRICE, RETRY_PRICE, RETRY_PRICE], `${branch}: charged per item`);
					const failed = output.filter((item) => item.json.error);
					assert.equal(failed.length, 1, JSON.stringify(output).slice(0, 800));
					assert.equal(failed[0].json.error.charge, 'may_have_been_charged');
					assert.deepEqual(delivered, paid.slice(1).flat(), `${branch}: every paid answer is in the output`);
				} else {
					// Refused before any work: sent again by the next try, each item paid once and delivered.
					assert.deepEqual(requests, [2, 1, 1], `${branch}: requests per item`);
					assert.deepEqual(charged, [RETRY_PRICE, RETRY_PRICE, RETRY_PRICE], `${branch}: charged per item`);
					assert.deepEqual(result.nodeOutput(branch, 1), [], `${branch}: nothing on the error output`);
					assert.deepEqual(delivered, paid.flat(), `${branch}: every paid answer is in the output, in order`);
				}
			}
		});

		it('the batch example: a product the account cannot pay for goes to Retry later with its facts, not to the results', async () => {
			// Three products of 32 credits (two images each); 64 pays for two. Before the error item's shape
			// was { error: { … } }, n8n before 2.36 sent the failed product to Save results.
			const result = await execute('ipxBatchGenerate', { credits: 64 });
			assert.ok(result.ok, result.stdout + result.stderr);
			assert.deepEqual(result.nodeOutput('Save results').map((row) => row.json.sku), ['MUG-001', 'TOTE-002']);
			const failed = result.nodeOutput('Retry later').map((row) => row.json);
			assert.equal(failed.length, 1, JSON.stringify(failed));
			assert.equal(failed[0].sku, 'LAMP-003');
			assert.equal(failed[0].code, 'insufficient_credits');
			assert.equal(failed[0].charge, 'not_charged');
			assert.match(failed[0].request_id, /^req_/);
			assert.match(failed[0].reason, /credits/i);
		});

		it('the AI Agent tool: a failing tool call’s text reaches the model', async (t) => {
			if (agent.missing.length) return t.skip(`n8n ${version} lacks ${agent.missing.join(', ')}`);
			if (agent.changed.length) t.diagnostic(`node versions fitted to n8n ${version}: ${agent.changed.join(', ')}`);
			const result = await execute(WORKFLOW_IDS.agent, { credits: 5 });
			assert.ok(result.ok, result.stdout + result.stderr);
			const requests = model.forScenario('errors');
			const { TOOL_DESCRIPTIONS } = await import('../../nodes/ImagePack/actions/tool.ts');
			assert.equal(requests[0].tools.find((tool) => tool.name === GENERATE)?.description, TOOL_DESCRIPTIONS.generate);
			const generations = await emulator.control.requests({ route: 'generate' });
			await assertErrorTexts({ results: requests.at(-1).results, generations, emulator });
			assert.match(result.nodeOutput('AI Agent')[0].json.output, /insufficient_credits/);
		});
	});

	describe('a running n8n (REST API, trigger)', () => {
		let n8n;
		let session;
		let triggerId;

		before(async () => {
			n8n = await startN8n({ userFolder: userFolder.dir, profile, echo: !!process.env.E2E_ECHO, env: { N8N_SECURE_COOKIE: 'false' } });
			session = await ownerSession(n8n.url, OWNER);
			const second = (Math.floor(Date.now() / 1000) + FIRST_POLL_AFTER_S) % 60;
			triggerId = await createActiveWorkflow(session, version, withCredential(triggerWorkflow(second), credential));
			log(`trigger workflow ${triggerId} active; timed polls at second ${second}`);
		});

		after(async () => {
			await n8n?.stop();
		});

		const triggerIds = (execution) => execution.nodeOutput('Trigger').map((item) => item.json.id);

		it('the nodes load: the editor’s node list (GET /types/nodes.json) has both node types and the tool variant', async (t) => {
			// `n8n export:nodes` would tell the same without a start, but 1.100.1 does not have that command.
			const answer = await session.get('/types/nodes.json');
			assert.equal(answer.status, 200);
			const known = knownVersions(answer.body);
			for (const name of ['imagePack', 'imagePackTrigger', 'imagePackTool']) assert.ok(known.has(`n8n-nodes-imagepack.${name}`), name);
			// The examples' other nodes: reported, since a version may lack one (the README says which).
			const unknown = exampleWorkflows().flatMap(({ file, workflow }) =>
				workflow.nodes.filter((n) => !known.get(n.type)?.includes(n.typeVersion)).map((n) => `${file}: ${n.type} v${n.typeVersion}`),
			);
			if (unknown.length) t.diagnostic(`example nodes n8n ${version} lacks: ${unknown.join('; ')}`);
		});

		it('the trigger’s activation poll emits the account’s publications, oldest first, with manifests', async () => {
			const [first] = await waitForFinishedExecutions(userFolder.dir, triggerId, 1, options);
			assert.equal(first.mode, 'trigger');
			assert.equal(first.status, 'success', JSON.stringify(first.run?.resultData?.error));
			assert.deepEqual(triggerIds(first), [fixture.mine, fixture.mugs.id]);
			assert.equal(first.nodeOutput('Trigger')[0].json.manifest.schemaVersion, 3);
		});

		it('the publication picker: newest first, paged, searchable (POST /rest/dynamic-node-parameters/resource-locator-results)', async () => {
			const ask = (extra) =>
				searchList(session, {
					nodeType: IMAGE_PACK,
					path: 'parameters.publicationId',
					methodName: 'searchPublications',
					parameters: { resource: 'publication', operation: 'get', publicationId: { __rl: true, mode: 'list', value: '' } },
					credentials: { imagePackApi: { id: PICKER.id, name: PICKER.name } },
					...extra,
				});
			const first = await ask({});
			assert.equal(first.results.length, 50);
			assert.match(first.results[0].name, new RegExp(`^#${fixture.totes.id} · pk_totes v1 · `));
			assert.equal(first.results[0].value, String(fixture.totes.id));
			assert.equal(typeof first.paginationToken, 'string');
			const next = await ask({ paginationToken: first.paginationToken });
			assert.equal(next.results.length, 11, 'the rest of the 61');
			assert.equal(next.paginationToken, undefined);
			const found = await ask({ filter: 'totes' });
			assert.deepEqual(found.results.map((result) => result.value), [String(fixture.totes.id)]);
		});

		it('Fetch Test Event (POST /rest/workflows/:id/run): the newest publication, the cursor left alone', async () => {
			await waitForFinishedExecutions(userFolder.dir, triggerId, 1, options);
			const cursor = await readStaticData(userFolder.dir, triggerId, options);
			const executionId = await fetchTestEvent(session, version, triggerId, 'Trigger');
			const execution = await waitFor(
				async () => (await waitForFinishedExecutions(userFolder.dir, triggerId, 1, options)).find((e) => String(e.id) === executionId),
				{ timeoutMs: 60_000, what: `the manual execution ${executionId}` },
			);
			assert.equal(execution.mode, 'manual');
			assert.equal(execution.status, 'success', JSON.stringify(execution.run?.resultData?.error));
			assert.deepEqual(triggerIds(execution), [fixture.mugs.id]);
			assert.deepEqual(await readStaticData(userFolder.dir, triggerId, options), cursor);
		});

		it('a timed poll of the active workflow emits the new publication once; the cursor is saved', async () => {
			const late = await emulator.control.publish({ packId: 'pk_late' });
			const polls = async () => (await readExecutions(userFolder.dir, triggerId, options)).filter((e) => e.mode === 'trigger');
			const emitted = await waitFor(async () => {
				const list = await polls();
				return list.length >= 2 && list.every(isFinished) && list;
			}, { timeoutMs: 150_000, intervalMs: 1000, what: 'the timed poll' });
			assert.deepEqual(emitted.map(triggerIds), [[fixture.mine, fixture.mugs.id], [late.id]]);
			const state = (await readStaticData(userFolder.dir, triggerId, options))?.['node:Trigger'];
			assert.ok(state?.cursor >= late.id, JSON.stringify(state));
		});

		it('after a restart the trigger goes on from its saved cursor: the next publication once, nothing twice', async () => {
			await n8n.stop();
			const next = await emulator.control.publish({ packId: 'pk_after_restart' });
			n8n = await startN8n({ userFolder: userFolder.dir, profile, echo: !!process.env.E2E_ECHO, env: { N8N_SECURE_COOKIE: 'false' } });
			const delivered = await waitFor(async () => {
				const list = (await readExecutions(userFolder.dir, triggerId, options)).filter((e) => e.mode === 'trigger');
				const ids = list.every(isFinished) ? list.flatMap(triggerIds) : [];
				return ids.includes(next.id) && ids;
			}, { timeoutMs: 150_000, intervalMs: 1000, what: 'a poll after the restart' });
			assert.deepEqual([...delivered].sort((a, b) => a - b), [...new Set(delivered)].sort((a, b) => a - b), 'nothing delivered twice');
			assert.equal(delivered.at(-1), next.id);
		});
	});
});
