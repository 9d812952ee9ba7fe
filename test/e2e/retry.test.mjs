/**
 * Generate's Retry On Fail and *Executions → Retry* in a running n8n 2.41.1 (one start for every
 * scenario): webhook → Split Out → Generate, with faults aimed at one item by its prompt. Requests
 * and credits are counted at the emulator, per item; retries of failed executions go through n8n's
 * REST API (`POST /rest/executions/:id/retry`), as the Executions list's Retry button does. About
 * 25 s, most of it n8n's start.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { emulatorCredential, node, startTestEmulator, waitFor } from './fixtures.mjs';
import {
	createUserFolder,
	importCredential,
	importWorkflow,
	ownerEnv,
	packPackage,
	restSession,
	startN8n,
	waitForFinishedExecutions,
} from './n8n.mjs';

const OWNER = { email: 'owner@example.com', password: 'Retry-Test-Password-1' };
/** nano-banana-2 at 1K: 12 credits an image. */
const PRICE = 12;
const GENERATE = 'Generate';

/** The scenarios: a workflow each (webhook path = id), Retry On Fail with 3 tries unless said. */
const SCENARIOS = {
	refunded: { id: 'e2eRetryRefund01' },
	drop: { id: 'e2eRetryDrop0001' },
	continueOnFail: { id: 'e2eRetryCof00001', onError: 'continueRegularOutput' },
	allTries: { id: 'e2eRetryAllFail1' },
	resend: { id: 'e2eRetryResend01' },
	topUp: { id: 'e2eRetryTopUp001' },
	twice: { id: 'e2eRetryTwice001' },
	crashPlain: { id: 'e2eRetryCrash001' },
	/** Loop Over Items (2 at a time) with the workflow setting Save Execution Progress: the README's advice. */
	crashBatched: { id: 'e2eRetryCrash002', batchSize: 2 },
};

/** The prompts of a scenario's items: unique, so the emulator's log tells items and scenarios apart. */
const prompts = (scenario, count = 3) =>
	Array.from({ length: count }, (_, i) => `${scenario} item ${i + 1}`);

function workflow({ id, onError, batchSize }, credential) {
	const generate = {
		resource: 'image',
		operation: 'generate',
		prompt: '={{ $json.prompt }}',
		model: 'nano-banana-2',
		ratio: '1:1',
		resolution: '1K',
		options: { downloadImages: true },
	};
	const nodes = [
		node(
			'Webhook',
			'n8n-nodes-base.webhook',
			{ httpMethod: 'POST', path: id, responseMode: 'onReceived', options: {} },
			{ typeVersion: 2, webhookId: `${id}-hook` },
		),
		node('Split Out', 'n8n-nodes-base.splitOut', { fieldToSplitOut: 'body.prompts', options: {} }),
		node(GENERATE, 'n8n-nodes-imagepack.imagePack', generate, {
			credentials: { imagePackApi: { id: credential.id, name: credential.name } },
			retryOnFail: true,
			maxTries: 3,
			// n8n reads 0 as "not set" (1 s): 10 ms keeps the suite short.
			waitBetweenTries: 10,
			...(onError ? { onError } : {}),
		}),
	];
	const to = (name) => [{ node: name, type: 'main', index: 0 }];
	const connections = {
		Webhook: { main: [to('Split Out')] },
		'Split Out': { main: [to(GENERATE)] },
	};
	if (!batchSize)
		return { id, name: `e2e: retry ${id}`, nodes, connections, settings: { executionOrder: 'v1' } };
	nodes.push(
		node(
			'Loop Over Items',
			'n8n-nodes-base.splitInBatches',
			{ batchSize, options: {} },
			{ typeVersion: 3 },
		),
	);
	connections['Split Out'] = { main: [to('Loop Over Items')] };
	connections['Loop Over Items'] = { main: [[], to(GENERATE)] };
	connections[GENERATE] = { main: [to('Loop Over Items')] };
	return {
		id,
		name: `e2e: retry ${id}`,
		nodes,
		connections,
		settings: { executionOrder: 'v1', saveExecutionProgress: true },
	};
}

describe('Generate with Retry On Fail and Executions → Retry in a running n8n 2.41.1', () => {
	let emulator;
	let userFolder;
	let n8n;
	let session;
	let credential;

	const rest = async (method, route, body) => {
		const answer = await session.request(method, `/rest${route}`, body);
		assert.ok(
			answer.status < 300,
			`${method} ${route}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`,
		);
		return answer.body.data;
	};

	async function start() {
		n8n = await startN8n({
			userFolder: userFolder.dir,
			echo: !!process.env.E2E_ECHO,
			env: {
				N8N_SECURE_COOKIE: 'false',
				...ownerEnv({ ...OWNER, firstName: 'Retry', lastName: 'Test' }),
			},
		});
		session = await restSession(n8n.url, OWNER);
	}

	/** Requests that reached the emulator and credits it charged, per item (prompt). */
	async function perItem(list) {
		const log = await emulator.control.requests({ route: 'generate' });
		const turns = await emulator.control.turns();
		return {
			requests: list.map((prompt) => log.filter((entry) => entry.prompt === prompt).length),
			charged: list.map((prompt) =>
				turns.filter((t) => t.prompt === prompt).reduce((sum, t) => sum + t.charged, 0),
			),
			turns: list.map((prompt) =>
				turns.filter((t) => t.prompt === prompt && t.status === 'succeeded').map((t) => t.id),
			),
		};
	}

	/** Posts the prompts to the scenario's webhook (n8n answers at once; the execution runs on). */
	async function post({ id }, list) {
		const response = await waitFor(
			async () => {
				const answer = await fetch(`${n8n.url}/webhook/${id}`, {
					method: 'POST',
					headers: { 'content-type': 'application/json' },
					body: JSON.stringify({ prompts: list.map((prompt) => ({ prompt })) }),
				});
				return answer.status !== 404 && answer;
			},
			{ timeoutMs: 60_000, intervalMs: 500, what: `the webhook ${id} to be registered` },
		);
		assert.equal(response.status, 200, await response.text());
	}

	/** Posts the prompts and returns the finished execution (as stored). */
	async function run(scenario, list) {
		await post(scenario, list);
		return (await waitForFinishedExecutions(userFolder.dir, scenario.id, 1)).at(-1);
	}

	/** Executions → Retry: a new execution from the failed one (with the saved workflow if asked). */
	async function retry({ id }, execution, { loadWorkflow = false } = {}) {
		const retried = await rest('POST', `/executions/${execution.id}/retry`, { loadWorkflow });
		return await waitFor(
			async () =>
				(await waitForFinishedExecutions(userFolder.dir, id, 1)).find(
					(e) => String(e.id) === String(retried.id),
				),
			{ timeoutMs: 60_000, what: `the retried execution ${retried.id} to be stored` },
		);
	}

	/** Changes the Generate node and saves the workflow, as the editor's Save does. */
	async function updateGenerate({ id }, change) {
		const saved = await rest('GET', `/workflows/${id}`);
		const nodes = saved.nodes.map((n) => (n.name === GENERATE ? change(n) : n));
		await rest('PATCH', `/workflows/${id}`, { nodes, connections: saved.connections });
	}

	const generateError = (execution) => execution.run.resultData.runData[GENERATE]?.at(-1)?.error;
	const outputTurns = (execution) =>
		execution.nodeOutput(GENERATE).map((item) => item.json.turn_id ?? item.json.code);

	before(async () => {
		emulator = await startTestEmulator();
		credential = emulatorCredential(emulator);
		const tarball = process.env.IMAGEPACK_TARBALL ?? (await packPackage());
		userFolder = await createUserFolder({ tarball });
		await importCredential(userFolder.dir, credential);
		const workflows = Object.values(SCENARIOS).map((scenario) => workflow(scenario, credential));
		await importWorkflow(userFolder.dir, workflows);
		await start();
		// Published over REST (the editor's Publish), not with one n8n CLI start per workflow.
		for (const { id } of workflows) {
			const { versionId } = await rest('GET', `/workflows/${id}`);
			await rest('POST', `/workflows/${id}/activate`, { versionId });
		}
	});

	after(async () => {
		await n8n?.stop();
		await emulator?.close();
		userFolder?.cleanup();
	});

	it('item 2 fails once with a refunded 500: requests 1/2/1, each item charged once, output complete', async () => {
		const list = prompts('refunded');
		await emulator.control.setGenerationBehaviour({ fail: true, promptIncludes: list[1] });
		const execution = await run(SCENARIOS.refunded, list);
		assert.equal(execution.status, 'success');
		const seen = await perItem(list);
		assert.deepEqual(seen.requests, [1, 2, 1]);
		assert.deepEqual(seen.charged, [PRICE, PRICE, PRICE]);
		assert.deepEqual(outputTurns(execution), seen.turns.flat());
		// Item 1 came back from the first try with its image downloaded again.
		assert.ok(execution.nodeOutput(GENERATE)[0].binary?.image_0, 'item 1 has its image');
	});

	it('a drop after sending: item 2 is never sent again, by the tries nor by Executions → Retry', async () => {
		const list = prompts('drop');
		await emulator.control.injectFault({
			route: 'generate',
			kind: 'reset',
			when: 'after',
			promptIncludes: list[1],
		});
		const failed = await run(SCENARIOS.drop, list);
		assert.equal(failed.status, 'error');
		assert.match(
			generateError(failed).message,
			/^Not sent again: an earlier try of this execution sent this generation/,
		);
		assert.match(
			generateError(failed).message,
			/may have been charged: check the newest "API generation" session/,
		);
		// The next try reports item 2 without sending it and goes on: item 3 leaves once.
		assert.deepEqual((await perItem(list)).requests, [1, 1, 1]);

		const retried = await retry(SCENARIOS.drop, failed);
		assert.equal(retried.mode, 'retry');
		assert.equal(retried.status, 'error');
		assert.match(
			generateError(retried).message,
			/^Not sent again: the failed execution this one retries sent/,
		);
		const seen = await perItem(list);
		assert.deepEqual(seen.requests, [1, 1, 1]);
		// The drop came after the work: item 2 was charged, once.
		assert.deepEqual(seen.charged, [PRICE, PRICE, PRICE]);
	});

	it('Continue On Fail + Retry On Fail, item 1 failing once: requests 2/1/1, all three generated once', async () => {
		const list = prompts('cof');
		await emulator.control.setGenerationBehaviour({ fail: true, promptIncludes: list[0] });
		const execution = await run(SCENARIOS.continueOnFail, list);
		assert.equal(execution.status, 'success');
		const seen = await perItem(list);
		assert.deepEqual(seen.requests, [2, 1, 1]);
		assert.deepEqual(seen.charged, [PRICE, PRICE, PRICE]);
		assert.deepEqual(outputTurns(execution), seen.turns.flat());
	});

	it('all tries failing: item 2 sent once per try, item 1 once, item 3 never; nothing charged twice', async () => {
		const list = prompts('all');
		await emulator.control.setGenerationBehaviour({
			fail: true,
			promptIncludes: list[1],
			persist: true,
		});
		const execution = await run(SCENARIOS.allTries, list);
		await emulator.control.clearGenerationBehaviour();
		assert.equal(execution.status, 'error');
		assert.match(generateError(execution).message, /refunded/);
		const seen = await perItem(list);
		assert.deepEqual(seen.requests, [1, 3, 0]);
		assert.deepEqual(seen.charged, [PRICE, 0, 0]);
		assert.match(
			generateError(execution).description,
			new RegExp(`not in the output: ${seen.turns[0][0]}`),
		);
	});

	it('an uncertain item is sent again only after the user turns on Resend Uncertain Generations', async () => {
		const list = prompts('resend');
		// Dropped before the service did any work: checking the session shows nothing ran.
		await emulator.control.injectFault({
			route: 'generate',
			kind: 'reset',
			promptIncludes: list[1],
		});
		const failed = await run(SCENARIOS.resend, list);
		assert.equal(failed.status, 'error');
		const again = await retry(SCENARIOS.resend, failed);
		assert.equal(again.status, 'error');
		// Retry On Fail's next try reported item 2 and went on: item 3 was generated, once.
		assert.deepEqual((await perItem(list)).requests, [1, 1, 1]);

		await updateGenerate(SCENARIOS.resend, (n) => ({
			...n,
			parameters: { ...n.parameters, options: { ...n.parameters.options, resendUncertain: true } },
		}));
		const resumed = await retry(SCENARIOS.resend, again, { loadWorkflow: true });
		assert.equal(resumed.status, 'success');
		const seen = await perItem(list);
		assert.deepEqual(seen.requests, [1, 2, 1]);
		assert.deepEqual(seen.charged, [PRICE, PRICE, PRICE]);
		assert.deepEqual(outputTurns(resumed), seen.turns.flat());
	});

	it('a batch stopped by 402, retried from Executions after a top-up: nothing charged twice, output complete', async () => {
		const list = prompts('topup', 5);
		await emulator.control.setCredits(emulator.accountId, 3 * PRICE + 5);
		const failed = await run(SCENARIOS.topUp, list);
		assert.equal(failed.status, 'error');
		assert.match(generateError(failed).message, /Not enough credits/);
		// Retry On Fail's tries did not send the 402 item again.
		assert.deepEqual((await perItem(list)).requests, [1, 1, 1, 1, 0]);

		await emulator.control.setCredits(emulator.accountId, 100_000);
		const retried = await retry(SCENARIOS.topUp, failed);
		assert.equal(retried.mode, 'retry');
		assert.equal(retried.status, 'success');
		const seen = await perItem(list);
		assert.deepEqual(seen.requests, [1, 1, 1, 2, 1]);
		assert.deepEqual(
			seen.charged,
			list.map(() => PRICE),
		);
		assert.deepEqual(outputTurns(retried), seen.turns.flat());
		assert.equal(retried.nodeOutput(GENERATE).filter((item) => item.binary?.image_0).length, 5);
	});

	it(
		'the failed execution retried again after its first retry failed further on: what the first retry generated is not paid again',
		async () => {
			const list = prompts('twice', 4);
			try {
				await emulator.control.setCredits(emulator.accountId, 2 * PRICE + 5);
				const failed = await run(SCENARIOS.twice, list);
				assert.equal(failed.status, 'error');
				assert.deepEqual((await perItem(list)).requests, [1, 1, 1, 0]);
				// A top-up of one image: the retry generates item 3 and is refused item 4.
				await emulator.control.setCredits(emulator.accountId, PRICE + 5);
				const first = await retry(SCENARIOS.twice, failed);
				assert.equal(first.status, 'error');
				assert.match(generateError(first).message, /Not enough credits/);
				assert.deepEqual((await perItem(list)).requests, [1, 1, 2, 1]);
				assert.deepEqual((await perItem(list)).charged, [PRICE, PRICE, PRICE, 0]);
				// The Executions list still offers Retry on the first execution (failed, no successful
				// retry): the user retries it after topping up. Its saved record says item 3 was refused; the
				// durable record says the first retry sent it: not sent, and the error says to retry that one.
				await emulator.control.setCredits(emulator.accountId, 100_000);
				const second = await retry(SCENARIOS.twice, failed);
				assert.equal(second.status, 'error');
				assert.match(generateError(second).message, /a retry of the same failed execution already sent this generation/);
				// Item 3 reported; item 4, which the failed execution never reached, sent.
				assert.deepEqual((await perItem(list)).requests, [1, 1, 2, 2]);
				// Retrying the first retry: item 3 comes from its record; item 4, refused there, was sent
				// by the second retry since: reported, not paid again.
				const third = await retry(SCENARIOS.twice, first);
				assert.equal(third.status, 'error');
				assert.match(generateError(third).message, /a retry of the same failed execution already sent this generation/);
				const seen = await perItem(list);
				assert.deepEqual(seen.charged, [PRICE, PRICE, PRICE, PRICE], 'each item paid once');
				assert.deepEqual(seen.requests, [1, 1, 2, 2]);
			} finally {
				await emulator.control.setCredits(emulator.accountId, 100_000);
			}
		},
	);

	it('a crash mid-Generate: the retry sends only what never left; what left before the kill is reported interrupted_send, not paid again', async () => {
		// n8n saves an execution's data (the node's memory with it) only when a node finishes; what left
		// before the kill is known from the durable record (n8n's deduplication store), by the resume
		// token the retry copies from the crashed execution. Items 1 and 2 were generated and charged,
		// item 3 is in flight (the emulator holds it), items 4 and 5 never left.
		const plain = prompts('crash plain', 5);
		const batched = prompts('crash batched', 5);
		await emulator.control.setGenerationBehaviour({
			durationMs: 600_000,
			promptIncludes: 'item 3',
			count: 2,
		});
		await post(SCENARIOS.crashPlain, plain);
		await post(SCENARIOS.crashBatched, batched);
		await waitFor(
			async () => (await perItem([plain[2], batched[2]])).requests.every((count) => count === 1),
			{
				what: 'item 3 of both batches in flight',
			},
		);
		await n8n.kill();
		await start();
		const crashed = async ({ id }) =>
			await waitFor(
				async () =>
					(await waitForFinishedExecutions(userFolder.dir, id, 1)).find(
						(e) => e.status === 'crashed',
					),
				{
					what: `n8n to mark the ${id} execution crashed`,
				},
			);
		const interrupted = /^Not sent again: an earlier attempt that n8n did not finish/;

		// Retry (original workflow, On Error: Stop Workflow): what left before the kill is reported, what
		// never left in the node's run is generated, and the node fails at its end on the first item
		// that left; nothing is sent again. Plain: one Generate run for the whole batch (run index 0
		// again), so item 1. Batched: progress was saved after items 1–2 (that run is not run again),
		// the retry resumes with the run of items 3–4 (run index 1), so item 3.
		const plainRetry = await retry(SCENARIOS.crashPlain, await crashed(SCENARIOS.crashPlain));
		const batchedRetry = await retry(SCENARIOS.crashBatched, await crashed(SCENARIOS.crashBatched));
		for (const execution of [plainRetry, batchedRetry]) {
			assert.equal(execution.mode, 'retry');
			assert.equal(execution.status, 'error');
			const error = generateError(execution);
			assert.match(error.message, interrupted);
			assert.match(error.message, /may have been charged/);
			assert.equal(error.context?.code, 'interrupted_send', JSON.stringify(error.context));
			assert.equal(error.context?.charge, 'may_have_been_charged');
			// The first item of the node's run: item 1 (plain), item 3 (batched: the run of items 3–4).
			assert.equal(error.context?.itemIndex, 0);
		}
		// Plain: items 4 and 5 generated by the retry. Batched: item 4 (its run's other item); the loop
		// stops there, item 5 waits for the next retry.
		assert.deepEqual((await perItem(plain)).requests, [1, 1, 1, 1, 1]);
		assert.deepEqual((await perItem(batched)).requests, [1, 1, 1, 1, 0]);
		// Batched: the saved run of items 1–2 is kept, the retry did not run it again.
		assert.equal(batchedRetry.run.resultData.runData[GENERATE].length, 2);

		// The user routes failed items to the error output, saves, and retries the failed retry with the
		// saved workflow: what never left (items 4 and 5) is generated, what left is reported.
		for (const scenario of [SCENARIOS.crashPlain, SCENARIOS.crashBatched])
			await updateGenerate(scenario, (n) => ({ ...n, onError: 'continueErrorOutput' }));
		const plainDone = await retry(SCENARIOS.crashPlain, plainRetry, { loadWorkflow: true });
		const batchedDone = await retry(SCENARIOS.crashBatched, batchedRetry, { loadWorkflow: true });
		assert.equal(plainDone.status, 'success');
		assert.equal(batchedDone.status, 'success');
		const failedItems = (execution) =>
			Object.values(execution.run.resultData.runData[GENERATE])
				.flatMap((task) => task.data?.main?.[1] ?? [])
				.map((item) => ({ prompt: item.json.prompt, ...item.json.error }));
		const generatedItems = (execution) =>
			Object.values(execution.run.resultData.runData[GENERATE])
				.flatMap((task) => task.data?.main?.[0] ?? [])
				.map((item) => item.json.turn_id);
		// Plain: the whole batch runs again, items 1–3 are reported. Batched: the saved run of items 1–2
		// stays as it was, only item 3 of the interrupted run is reported.
		for (const [execution, list, left] of [
			[plainDone, plain, plain.slice(0, 3)],
			[batchedDone, batched, batched.slice(2, 3)],
		]) {
			const reported = failedItems(execution);
			assert.deepEqual(
				reported.map(({ prompt, code, charge }) => [prompt, code, charge]),
				left.map((prompt) => [prompt, 'interrupted_send', 'may_have_been_charged']),
			);
			assert.match(reported[0].message, interrupted);
			const seen = await perItem(list);
			assert.deepEqual(seen.requests, [1, 1, 1, 1, 1], 'nothing that left is sent again');
			// Items 1 and 2 charged once (before the kill), item 3 still running at the emulator (reserved,
			// not charged yet), items 4 and 5 charged once by the retry.
			assert.deepEqual(seen.charged, [PRICE, PRICE, 0, PRICE, PRICE]);
			assert.ok(
				generatedItems(execution).some((turn) => seen.turns[3].includes(turn)) &&
					generatedItems(execution).some((turn) => seen.turns[4].includes(turn)),
				'items 4 and 5 in the success output',
			);
		}
	});
});
