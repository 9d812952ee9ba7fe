/**
 * n8n stops in the middle of a paid batch (issue #40), as far as the harness can show it: n8n's own
 * engine runs the node against the emulator, and "killed" means what n8n's database then holds — the
 * execution's start (its resume token) and the deduplication store's records, no context data. The
 * store is the harness's stand-in for n8n's (test/harness/deduplication.ts), which races like it; the
 * kill itself, and n8n's own store, are exercised in a real n8n (test/e2e/crash.test.mjs).
 */
import type { IDataObject, INodeExecutionData, INodeParameters, INodeType } from 'n8n-workflow';
import { sleep } from 'n8n-workflow';

import { ImagePack } from '../../../nodes/ImagePack/ImagePack.node';
import {
	RECORD_LIMITS,
	forgetProcessRecords,
} from '../../../nodes/ImagePack/actions/image/generate/durable';
import {
	claimedCount,
	deduplicationStandIn,
	recordedCount,
	storeCalls,
} from '../../harness/deduplication';
import { useEmulator } from '../../harness/emulator';
import {
	type EngineOptions,
	type EngineRun,
	retryAfterKill,
	retryExecution,
	runInEngine,
} from '../../harness/engine';
import { runNode } from '../../harness/n8n';

const emulator = useEmulator();

const generate = (options: IDataObject = {}): INodeParameters => ({
	resource: 'image',
	operation: 'generate',
	prompt: '={{ $json.sku }}',
	model: 'nano-banana-2',
	ratio: '1:1',
	resolution: '1K',
	options: { downloadImages: false, ...options },
});

const SKUS = Array.from({ length: 8 }, (_unused, index) => `product ${index + 1}`);
const items = (skus = SKUS): INodeExecutionData[] => skus.map((sku) => ({ json: { sku } }));

function engine(overrides: Partial<EngineOptions> = {}): EngineOptions {
	return {
		nodeType: new ImagePack(),
		parameters: generate(),
		credentials: { baseUrl: emulator.baseUrl, apiKey: emulator.apiKey },
		runs: [items()],
		errorOutput: true,
		...overrides,
	};
}

async function requestsPer(skus = SKUS): Promise<number[]> {
	const log = await emulator.control.requests({ route: 'generate' });
	return skus.map((sku) => log.filter((entry) => entry.prompt === sku).length);
}

async function waitUntil(check: () => Promise<boolean>, timeoutMs = 10_000) {
	const deadline = Date.now() + timeoutMs;
	while (!(await check())) {
		if (Date.now() > deadline) throw new Error('timed out waiting');
		await sleep(10);
	}
}

const codes = (run: EngineRun) =>
	run.errorOutput.map((item) => (item.json.error as IDataObject).code);

/** n8n killed while product 5 was being generated: products 1–4 were sent and recorded. */
async function killedAtProductFive(options: Partial<EngineOptions> = {}) {
	const killed = await runInEngine(engine({ runs: [items(SKUS.slice(0, 4))], ...options }));
	expect(await requestsPer()).toEqual([1, 1, 1, 1, 0, 0, 0, 0]);
	return killed;
}

describe('Executions → Retry of an execution n8n was killed in', () => {
	it('sends only what never left: sent products are reported uncertain with their own code', async () => {
		const killed = await killedAtProductFive();
		const retry = await retryAfterKill(killed, { runs: [items()] });
		expect(await requestsPer()).toEqual([1, 1, 1, 1, 1, 1, 1, 1]);
		expect(retry.output.map((item) => item.pairedItem)).toEqual(
			[4, 5, 6, 7].map((item) => ({ item })),
		);
		expect(codes(retry)).toEqual(Array(4).fill('interrupted_send'));
		const [error] = retry.errorOutput.map((item) => item.json.error as IDataObject);
		expect(error).toMatchObject({ charge: 'may_have_been_charged', code: 'interrupted_send' });
		expect(String(error.message)).toMatch(
			/^Not sent again: an earlier attempt that n8n did not finish .+ may have been charged; look in the account's sessions titled "API generation"/,
		);
		expect(retry.errorOutput.map((item) => item.pairedItem)).toEqual(
			[0, 1, 2, 3].map((item) => ({ item })),
		);
	});

	it('with Resend Uncertain Generations a retry of the retry that reported them resends them, once', async () => {
		const killed = await killedAtProductFive({ errorOutput: false });
		const resend = generate({ resendUncertain: true });
		// Stop Workflow: the retry reports every product that left, generates the others, and fails
		// at its end. The option on the stopped execution's own retry resends nothing it was not shown.
		const reported = await retryAfterKill(killed, { runs: [items()], parameters: resend });
		expect(reported.error?.context).toMatchObject({ code: 'interrupted_send', itemIndex: 0 });
		expect(reported.error?.description).toMatch(
			/Also reported maybe charged: items 1 \(interrupted_send\), 2 \(interrupted_send\), 3 \(interrupted_send\)/,
		);
		expect(await requestsPer()).toEqual([1, 1, 1, 1, 1, 1, 1, 1]);
		// Its retry resends the four it reported, once; what it generated comes back.
		const resent = await retryExecution(reported, resend);
		expect(resent.run.status).toBe('success');
		expect(await requestsPer()).toEqual([2, 2, 2, 2, 1, 1, 1, 1]);
		expect(resent.output).toHaveLength(8);
		// Another retry of the same execution: resent by the first already.
		const twice = await retryExecution(reported, resend);
		expect(twice.error?.context).toMatchObject({ code: 'interrupted_send' });
		expect(await requestsPer()).toEqual([2, 2, 2, 2, 1, 1, 1, 1]);
	});

	it('two identical items are two sends, each recorded', async () => {
		const twice = items(['same', 'same', 'other']);
		const killed = await runInEngine(engine({ runs: [twice] }));
		expect(await requestsPer(['same', 'other'])).toEqual([2, 1]);
		const retry = await retryAfterKill(killed, {
			runs: [items(['same', 'same', 'other', 'same'])],
		});
		expect(await requestsPer(['same', 'other'])).toEqual([3, 1]);
		expect(codes(retry)).toEqual(Array(3).fill('interrupted_send'));
		expect(retry.output.map((item) => item.pairedItem)).toEqual([{ item: 3 }]);
	});
});

describe('Executions → Retry of the same failed execution twice', () => {
	// Reachable from the editor: the Executions list offers Retry on a failed execution until one of
	// its retries succeeds, so after a first retry that failed further on, the first one is offered
	// again. Its copy of the context data says item 3 was refused; the durable record says the first
	// retry sent it (same resume token, not let go: it was generated), so it is not sent again.
	it('the second retry does not pay again for what the first retry generated', async () => {
		const four = SKUS.slice(0, 4);
		await emulator.control.setCredits(emulator.accountId, 24); // 12 credits an image: two fit
		const failed = await runInEngine(engine({ runs: [items(four)], errorOutput: false }));
		expect(failed.run.status).toBe('error');
		await emulator.control.setCredits(emulator.accountId, 12 + 5); // one more fits
		const first = await retryExecution(failed);
		expect(first.run.status).toBe('error');
		expect(await requestsPer(four)).toEqual([1, 1, 2, 1]);
		await emulator.control.setCredits(emulator.accountId, 1_000);
		const second = await retryExecution(failed, undefined, { errorOutput: true });
		// Item 3 (generated by the first retry) is not generated again; item 4 (refused) is sent.
		expect(await requestsPer(four)).toEqual([1, 1, 2, 2]);
		expect(codes(second)).toEqual(['interrupted_send']);
	});

	it('an uncertain item resent by one retry is not resent by a second retry of the same execution', async () => {
		const two = SKUS.slice(0, 2);
		await emulator.control.injectFault({
			route: 'generate',
			kind: 'reset',
			when: 'after',
			promptIncludes: two[1],
		});
		const failed = await runInEngine(engine({ runs: [items(two)], errorOutput: false }));
		expect(failed.run.status).toBe('error');
		const resend = generate({ resendUncertain: true });
		const first = await retryExecution(failed, resend);
		expect(first.run.status).toBe('success');
		expect(await requestsPer(two)).toEqual([1, 2]);
		const second = await retryExecution(failed, resend, { errorOutput: true });
		expect(await requestsPer(two)).toEqual([1, 2]);
		expect(codes(second)).toEqual(['interrupted_send']);
		expect(String((second.errorOutput[0].json.error as IDataObject).message)).toMatch(
			/a retry of the same failed execution, with Resend Uncertain Generations on, already sent this generation/,
		);
		// The retry that resent it is what to retry: its record has the answer.
		const ofTheRetry = await retryExecution(first, resend);
		expect(ofTheRetry.run.status).toBe('success');
		expect(await requestsPer(two)).toEqual([1, 2]);
	});
});

describe('new work is never refused', () => {
	it('the same products in a new execution (a schedule, a webhook, Execute workflow) are generated', async () => {
		await runInEngine(engine());
		const again = await runInEngine(engine());
		expect(await requestsPer()).toEqual(Array(8).fill(2));
		expect(again.output).toHaveLength(8);
		expect(codes(again)).toEqual([]);
	});

	it('a retry after a failure before Generate, following an identical successful run, generates', async () => {
		await runInEngine(engine());
		// Fails before anything is sent (here: a bad model, as an upstream node failing would).
		const failed = await runInEngine(
			engine({ parameters: { ...generate(), model: 'no-such-model' }, errorOutput: false }),
		);
		expect(failed.run.status).toBe('error');
		const retry = await retryExecution(failed, generate());
		expect(await requestsPer()).toEqual(Array(8).fill(2));
		expect(retry.output).toHaveLength(8);
	});

	it('a loop running the node again in one execution (another run index) generates', async () => {
		const loop = await runInEngine(engine({ runs: [items(['a']), items(['a'])] }));
		expect(await requestsPer(['a'])).toEqual([2]);
		expect(codes(loop)).toEqual([]);
	});
});

describe('the record', () => {
	it('eight lanes and two executions at once lose no record', async () => {
		const skus = Array.from({ length: 16 }, (_unused, index) => `lane ${index}`);
		const options = engine({ parameters: generate({ concurrency: 8 }), runs: [items(skus)] });
		const [first, second] = await Promise.all([runInEngine(options), runInEngine(options)]);
		expect(await requestsPer(skus)).toEqual(Array(16).fill(2));
		// Claimed in the workflow's row (fewer than RECORD_LIMITS.moveAt: not moved yet).
		expect(claimedCount()).toBe(32);
		for (const killed of [first, second]) {
			const retry = await retryAfterKill(killed);
			expect(codes(retry)).toEqual(Array(16).fill('interrupted_send'));
		}
		expect(await requestsPer(skus)).toEqual(Array(16).fill(2));
	});

	it('paid sends move to the node’s row in groups: claims stay in a small row, a retry finds both', async () => {
		const many = Array.from({ length: 250 }, (_unused, index) => `bulk ${index}`);
		const killed = await runInEngine(
			engine({ parameters: generate({ concurrency: 8 }), runs: [items(many)] }),
		);
		expect(killed.output).toHaveLength(250);
		// One group of RECORD_LIMITS.moveAt moved (and the run's `began` value); the rest still claimed.
		expect(RECORD_LIMITS.moveAt).toBe(200);
		expect(recordedCount()).toBe(1 + 200);
		expect(claimedCount()).toBe(50);
		forgetProcessRecords(); // n8n killed: its process's queue is gone, its rows are not
		const more = [
			...many,
			...Array.from({ length: 10 }, (_unused, index) => `bulk ${250 + index}`),
		];
		const retry = await retryAfterKill(killed, { runs: [items(more)] });
		expect(codes(retry)).toEqual(Array(250).fill('interrupted_send'));
		expect(retry.output).toHaveLength(10);
		expect(await requestsPer(more)).toEqual(Array(260).fill(1));
	});

	it('(the stand-in races as n8n’s store does: unordered calls lose records)', async () => {
		const context = { workflow: { id: 'race' }, node: { id: 'n' } } as never;
		const values = Array.from({ length: 8 }, (_unused, index) => `v${index}`);
		await Promise.all(
			values.map(
				async (value) =>
					await deduplicationStandIn.checkProcessedAndRecord([value], 'node', context, {
						mode: 'entries',
					}),
			),
		);
		expect(recordedCount('race', 'n')).toBeLessThan(8);
	});

	it("has a hard cap: a full row drops its oldest records, never the run's own, and says it is full", async () => {
		const context = { workflow: { id: 'test-workflow' }, node: { id: 'node-under-test' } } as never;
		const older = Array.from({ length: RECORD_LIMITS.sends }, (_unused, index) => `older ${index}`);
		await deduplicationStandIn.checkProcessedAndRecord(older, 'node', context, { mode: 'entries' });
		const full = await runInEngine(engine({ runs: [items(['while full'])] }));
		expect(JSON.stringify(full.run.data.resultData.runData)).toMatch(
			/record of paid sends is full/,
		);
		const killed = await killedAtProductFive();
		expect(recordedCount()).toBe(RECORD_LIMITS.sends);
		const retry = await retryAfterKill(killed, { runs: [items()] });
		expect(codes(retry)).toEqual(Array(4).fill('interrupted_send'));
		expect(await requestsPer()).toEqual(Array(8).fill(1));
		// The retry asked the full row which of its sends it holds: asking dropped no older record.
		expect(recordedCount()).toBe(RECORD_LIMITS.sends);
	});

	it("the workflow's keys: a run with a key that finds their row full says so", async () => {
		const context = { workflow: { id: 'test-workflow' }, node: { id: 'node-under-test' } } as never;
		const cap = RECORD_LIMITS.keys + RECORD_LIMITS.claims;
		const older = Array.from({ length: cap }, (_unused, index) => `key older ${index}`);
		await deduplicationStandIn.checkProcessedAndRecord(older, 'workflow', context, {
			mode: 'entries',
		});
		const plain = await runInEngine(engine({ runs: [items(['no key'])] }));
		expect(JSON.stringify(plain.run.data.resultData.runData)).not.toMatch(
			/Idempotency Keys is full/,
		);
		const keyed = await runInEngine(
			engine({
				parameters: generate({ idempotencyKey: '={{ $json.sku }}-full' }),
				runs: [items(['keyed while full'])],
			}),
		);
		expect(JSON.stringify(keyed.run.data.resultData.runData)).toMatch(
			/The workflow's record of Idempotency Keys is full/,
		);
	});

	it('eight lanes share store calls (a group commit); twin keys in one call: the second is not sent', async () => {
		const many = Array.from({ length: 24 }, (_unused, index) => `lane product ${index}`);
		const calls = storeCalls.record;
		const run = await runInEngine(
			engine({
				runs: [items(many)],
				parameters: generate({ concurrency: 8, idempotencyKey: '={{ $json.sku.slice(0, 14) }}' }),
			}),
		);
		// 14-character keys: products 1 and 10–19 share one, 2 and 20–23 another; one of each is sent.
		expect(codes(run).filter((code) => code === 'idempotency_key_used')).toHaveLength(14);
		expect(run.output).toHaveLength(10);
		expect((await requestsPer(many)).reduce((sum, count) => sum + count, 0)).toBe(10);
		// Each claim writes the node's row and the keys' row; eight lanes wait together.
		expect(storeCalls.record - calls).toBeLessThan(2 * many.length);
	});

	it.each([
		['a small claims’ row', 0],
		['a claims’ row of 10,000 Idempotency Keys', RECORD_LIMITS.keys],
	])(
		'a claim is written just before its own send, never ahead (%s): n8n killed mid-send leaves the rest unclaimed',
		async (_row, keys) => {
			const context = {
				workflow: { id: 'test-workflow' },
				node: { id: 'node-under-test' },
			} as never;
			const older = Array.from({ length: keys }, (_unused, index) => `key older ${index}`);
			if (keys) {
				await deduplicationStandIn.checkProcessedAndRecord(older, 'workflow', context, {
					mode: 'entries',
				});
			}
			// Product 3's answer held: products 1–3 sent and claimed, products 4–8 neither, so a retry
			// after a kill generates them instead of reporting them interrupted_send.
			const calls = storeCalls.record;
			await emulator.control.injectFault({
				route: 'generate',
				kind: 'hold',
				when: 'after',
				promptIncludes: SKUS[2],
			});
			const running = runInEngine(engine());
			await waitUntil(async () => (await emulator.control.held()).length === 1);
			expect(claimedCount()).toBe(keys + 3);
			expect(await requestsPer()).toEqual([1, 1, 1, 0, 0, 0, 0, 0]);
			await emulator.control.releaseHeld();
			expect((await running).output).toHaveLength(8);
			// The run's `began` value, then one call per product.
			expect(storeCalls.record - calls).toBe(1 + 8);
		},
	);

	it('cannot be written: nothing is sent, the item fails as not_sent (a busy database is tried once more)', async () => {
		storeCalls.failNext = 1;
		const once = await runInEngine(engine({ runs: [items(['busy once'])] }));
		expect(once.output).toHaveLength(1);
		storeCalls.failNext = 2;
		const twice = await runInEngine(engine({ runs: [items(['busy twice'])] }));
		expect(await requestsPer(['busy once', 'busy twice'])).toEqual([1, 0]);
		expect(twice.errorOutput[0].json.error).toMatchObject({
			code: 'record_failed',
			charge: 'not_sent',
		});
		expect(String((twice.errorOutput[0].json.error as IDataObject).message)).toMatch(
			/^Not sent: the record that keeps this generation from being paid twice if n8n stops could not be written \(SQLITE_BUSY/,
		);
	});

	it('a refusal costs nothing, so its record is let go: a retry sends the item', async () => {
		await emulator.control.setCredits(emulator.accountId, 24);
		const killed = await runInEngine(engine({ runs: [items(SKUS.slice(0, 3))] }));
		expect(codes(killed)).toEqual(['insufficient_credits']);
		await emulator.control.setCredits(emulator.accountId, 1_000);
		const retry = await retryAfterKill(killed);
		expect(codes(retry)).toEqual(['interrupted_send', 'interrupted_send']);
		expect(await requestsPer(SKUS.slice(0, 3))).toEqual([1, 1, 2]);
	});
});

describe('Idempotency Key', () => {
	const keyed = (options: IDataObject = {}) =>
		generate({ idempotencyKey: '={{ $json.sku }}-2026-11-27', ...options });

	it('a key already used is never sent again, by any execution; a new key generates', async () => {
		await runInEngine(engine({ parameters: keyed(), runs: [items(SKUS.slice(0, 2))] }));
		const again = await runInEngine(
			engine({ parameters: keyed(), runs: [items(SKUS.slice(0, 3))] }),
		);
		expect(await requestsPer(SKUS.slice(0, 3))).toEqual([1, 1, 1]);
		expect(codes(again)).toEqual(['idempotency_key_used', 'idempotency_key_used']);
		expect(again.errorOutput[0].json.error).toMatchObject({ charge: 'not_sent' });
		expect(String((again.errorOutput[0].json.error as IDataObject).message)).toMatch(
			/^Not sent: the Idempotency Key "product 1-2026-11-27" was already used by this node/,
		);
		// A saved workflow that still carries Clear Idempotency Key (cut in issue 56) runs: the option
		// is ignored, the key stays used.
		const saved = await runInEngine(
			engine({ parameters: keyed({ clearIdempotencyKey: true }), runs: [items(SKUS.slice(0, 1))] }),
		);
		expect(codes(saved)).toEqual(['idempotency_key_used']);
		// A new key (a version added) generates, once.
		const versioned = generate({ idempotencyKey: '={{ $json.sku }}-2026-11-27-v2' });
		const v2 = await runInEngine(
			engine({ parameters: versioned, runs: [items(SKUS.slice(0, 1))] }),
		);
		expect(v2.output).toHaveLength(1);
		const after = await runInEngine(
			engine({ parameters: versioned, runs: [items(SKUS.slice(0, 1))] }),
		);
		expect(codes(after)).toEqual(['idempotency_key_used']);
		expect(await requestsPer(SKUS.slice(0, 3))).toEqual([2, 1, 1]);
	});

	it('two items of one batch with the same key: the second is not sent', async () => {
		const run = await runInEngine(
			engine({
				parameters: generate({ idempotencyKey: 'one per day' }),
				runs: [items(['a', 'b'])],
			}),
		);
		expect(await requestsPer(['a', 'b'])).toEqual([1, 0]);
		expect(codes(run)).toEqual(['idempotency_key_used']);
	});

	it('a refused generation does not use up its key', async () => {
		await emulator.control.setCredits(emulator.accountId, 5);
		const refused = await runInEngine(engine({ parameters: keyed(), runs: [items(['k'])] }));
		expect(codes(refused)).toEqual(['insufficient_credits']);
		await emulator.control.setCredits(emulator.accountId, 1_000);
		const sent = await runInEngine(engine({ parameters: keyed(), runs: [items(['k'])] }));
		expect(sent.output).toHaveLength(1);
	});

	it('must be text of at most 500 characters, checked before anything is sent', async () => {
		const run = await runInEngine(
			engine({
				parameters: generate({ idempotencyKey: '={{ "x".repeat(501) }}' }),
				runs: [items(['long'])],
			}),
		);
		expect(String((run.errorOutput[0].json.error as IDataObject).message)).toMatch(
			/Idempotency Key is 501 characters long; at most 500 are allowed/,
		);
		expect(await requestsPer(['long'])).toEqual([0]);
	});
});

describe('a tool call repeated after n8n restarted', () => {
	const MCP_TRIGGER = { name: 'MCP Server Trigger', type: '@n8n/n8n-nodes-langchain.mcpTrigger' };
	/** The node as a freshly started n8n process loads it: nothing held in memory. */
	async function freshProcess(): Promise<INodeType> {
		let Fresh: typeof ImagePack | undefined;
		await jest.isolateModulesAsync(async () => {
			({ ImagePack: Fresh } = await import('../../../nodes/ImagePack/ImagePack.node'));
		});
		const node = new Fresh!();
		return {
			description: { ...node.description, name: 'imagePackTool' },
			methods: node.methods,
			async execute(this: never) {
				Object.assign(this, { parentNode: MCP_TRIGGER });
				return await node.execute.call(this);
			},
		} as INodeType;
	}
	const call = async (nodeType: INodeType, prompt: string) =>
		await runNode({
			nodeType,
			parameters: { ...generate({ answerWithinSeconds: 0.3 }), prompt },
			credentials: { baseUrl: emulator.baseUrl, apiKey: emulator.apiKey },
			asTool: true,
		}).then(
			([output]) => output[0].json,
			(error: Error) => error,
		);

	it('is not paid again while the first one may still run; after an answer was collected it is new', async () => {
		await emulator.control.setLatency('generate', 1_000);
		const first = await call(await freshProcess(), 'tool: lamp');
		expect(first).toMatchObject({ status: 'running' });
		// n8n restarted: the held generation is gone, the record is not.
		const repeat = await call(await freshProcess(), 'tool: lamp');
		expect((repeat as Error).message).toMatch(
			/Not sent again: the same call sent this generation within the last 1 to 2 hours and this n8n process does not hold it .+Error code: interrupted_send/,
		);
		expect(await requestsPer(['tool: lamp'])).toEqual([1]);

		await emulator.control.setLatency('generate', 0);
		const restarted = await freshProcess();
		expect(await call(restarted, 'tool: desk')).toMatchObject({ credits_charged: 12 });
		expect(await call(await freshProcess(), 'tool: desk')).toMatchObject({ credits_charged: 12 });
		expect(await requestsPer(['tool: desk'])).toEqual([2]);
	});
});
