/**
 * Issue 43: the cases where Generate's paid-send record breaks (an item paid twice, or refused though
 * it was never charged), each run in the harness — n8n's own engine (test/harness/engine.ts), the
 * stand-in of n8n's deduplication store that trims as n8n's does (test/harness/deduplication.ts),
 * the emulator. Each test asserts what the issue asks for, and only what is visible from outside:
 * requests per product counted at the emulator, credits charged per product, the `code` and
 * `charge` of each item, the items that come out. Until the money path is fixed they fail.
 *
 * "Killed" is what generate-durable.test.ts makes of it: the execution ran (its records are in the
 * store), n8n's database holds only its start, and *Executions → Retry* runs it again from there
 * (`retryAfterKill`). A kill also empties the n8n process: where the node's in-memory state would
 * answer for it, the retry runs a freshly loaded node (`freshProcess`).
 */
import type {
	IDataObject,
	INodeExecutionData,
	INodeParameters,
	INodeType,
	IRunExecutionData,
	ITaskData,
} from 'n8n-workflow';
import { sleep } from 'n8n-workflow';

import { ImagePack } from '../../../nodes/ImagePack/ImagePack.node';
import { deduplicationStandIn, storeCalls } from '../../harness/deduplication';
import { useEmulator } from '../../harness/emulator';
import {
	type EngineOptions,
	type EngineRun,
	retryAfterKill,
	retryExecution,
	runInEngine,
} from '../../harness/engine';

const emulator = useEmulator();

/** nano-banana-2 at 1K: 12 credits an image. */
const PRICE = 12;

const generate = (
	options: IDataObject = {},
	parameters: INodeParameters = {},
): INodeParameters => ({
	resource: 'image',
	operation: 'generate',
	prompt: '={{ $json.sku }}',
	model: 'nano-banana-2',
	ratio: '1:1',
	resolution: '1K',
	options: { downloadImages: false, ...options },
	...parameters,
});

const products = (count: number, name = 'product') =>
	Array.from({ length: count }, (_unused, index) => `${name} ${index}`);
const items = (skus: string[]): INodeExecutionData[] => skus.map((sku) => ({ json: { sku } }));
const batches = (skus: string[], size: number): string[][] =>
	Array.from({ length: Math.ceil(skus.length / size) }, (_unused, index) =>
		skus.slice(index * size, (index + 1) * size),
	);

function engine(overrides: Partial<EngineOptions> = {}): EngineOptions {
	return {
		nodeType: new ImagePack(),
		parameters: generate(),
		credentials: { baseUrl: emulator.baseUrl, apiKey: emulator.apiKey },
		runs: [items(products(1))],
		errorOutput: true,
		...overrides,
	};
}

/** Generate requests that reached the emulator, per product (its prompt). */
async function requestsPer(skus: string[]): Promise<number[]> {
	const counts = new Map<string, number>();
	for (const entry of await emulator.control.requests({ route: 'generate' })) {
		const prompt = String(entry.prompt);
		counts.set(prompt, (counts.get(prompt) ?? 0) + 1);
	}
	return skus.map((sku) => counts.get(sku) ?? 0);
}

/** Credits the emulator charged, per product. */
async function chargedPer(skus: string[]): Promise<number[]> {
	const turns = await emulator.control.turns();
	return skus.map((sku) =>
		turns.filter((turn) => turn.prompt === sku).reduce((sum, turn) => sum + turn.charged, 0),
	);
}

/** The figures a paid batch is judged by: products paid twice, and products never sent. */
async function tally(skus: string[]) {
	const counts = await requestsPer(skus);
	return {
		paidTwice: counts.filter((count) => count > 1).length,
		neverSent: counts.filter((count) => count === 0).length,
	};
}

const errorOf = (item: INodeExecutionData) => item.json.error as IDataObject;
const codes = (run: EngineRun) => run.errorOutput.map((item) => errorOf(item).code);

/**
 * What n8n's crash recovery makes of an execution killed with *Save Execution Progress* off (n8n
 * 2.41.1, ExecutionRecoveryService): from the event log, every node that had started gets one
 * recovered run — marked success for Generate, whose first batch had finished. A retry of it then
 * runs the loop from the start, and every batch runs under run index b + 1.
 */
function crashRecovered(killed: EngineRun): EngineRun {
	const atStart = JSON.parse(JSON.stringify(killed.atStart)) as IRunExecutionData;
	const name = atStart.executionData!.nodeExecutionStack[0].node.name;
	const recovered: ITaskData = {
		startTime: Date.now(),
		executionIndex: 0,
		executionTime: 0,
		executionStatus: 'success',
		source: [],
		data: { main: [[{ json: { isArtificialRecoveredEventItem: true } }]] },
	};
	atStart.resultData.runData[name] = [recovered];
	return { ...killed, atStart };
}

/** The node as a freshly started n8n process loads it: nothing held in memory. */
async function freshProcess(): Promise<INodeType> {
	let Fresh: typeof ImagePack | undefined;
	await jest.isolateModulesAsync(async () => {
		({ ImagePack: Fresh } = await import('../../../nodes/ImagePack/ImagePack.node'));
	});
	return new Fresh!();
}

async function until(check: () => Promise<boolean>, what: string) {
	for (let tries = 0; tries < 2_000; tries++) {
		if (await check()) return;
		await sleep(5);
	}
	throw new Error(`timed out waiting for ${what}`);
}

describe('1. Loop Over Items, Save Execution Progress off', () => {
	it('120 products in batches of 20 at Concurrency 8, killed twice, each crashed execution retried: nothing paid twice', async () => {
		const skus = products(120);
		const loop = batches(skus, 20).map(items);
		const options = engine({ parameters: generate({ concurrency: 8 }) });
		// Killed in batch 3: batches 1–2 and half of batch 3 were sent.
		const killed = await runInEngine({
			...options,
			runs: [...loop.slice(0, 2), loop[2].slice(0, 10)],
		});
		expect(await tally(skus)).toEqual({ paidTwice: 0, neverSent: 70 });
		// Its retry (every batch under run index b + 1), killed in batch 5.
		const first = await retryAfterKill(crashRecovered(killed), {
			runs: [...loop.slice(0, 4), loop[4].slice(0, 10)],
		});
		const afterFirst = await tally(skus);
		// The crashed retry retried, to the end.
		await retryAfterKill(crashRecovered(first), { runs: loop });
		expect({ afterFirstRetry: afterFirst, atTheEnd: await tally(skus) }).toEqual({
			afterFirstRetry: { paidTwice: 0, neverSent: 30 },
			atTheEnd: { paidTwice: 0, neverSent: 0 },
		});
	});

	it('2,050 products in batches of 10, killed at the end and retried: the loop never pushes out its own records', async () => {
		// 2,050 values against the bound of one batch of 10 (2,000 + 3 × 10 = 2,030): today each
		// iteration trims the row. The retry here runs the batches under their own run indexes, so
		// only the bound is tested (the shift of case 1 is the test above).
		const skus = products(2_050);
		const loop = batches(skus, 10).map(items);
		const options = engine({ parameters: generate({ concurrency: 8 }), runs: loop });
		const killed = await runInEngine(options);
		expect(await tally(skus)).toEqual({ paidTwice: 0, neverSent: 0 });
		const retry = await retryAfterKill(killed);
		expect(await tally(skus)).toEqual({ paidTwice: 0, neverSent: 0 });
		// The last batch's items come back as sent before the stop, nothing generated again.
		expect(retry.output).toHaveLength(0);
		expect(codes(retry)).toEqual(Array(10).fill('interrupted_send'));
	}, 120_000);
});

describe('2. A small run beside a large one', () => {
	it('a one-item execution while a 2,050-item one runs: the large one killed and retried pays nothing again', async () => {
		const large = products(2_050, 'large');
		// The large run's last product is held at the service: its record is written, it is in flight.
		await emulator.control.injectFault({
			route: 'generate',
			kind: 'hold',
			when: 'before',
			promptIncludes: large[2_049],
		});
		const running = runInEngine(
			engine({ parameters: generate({ concurrency: 8 }), runs: [items(large)] }),
		);
		await until(async () => (await emulator.control.held()).length === 1, 'the held request');
		const small = await runInEngine(engine({ runs: [items(['small'])] }));
		expect(small.output).toHaveLength(1);
		await emulator.control.releaseHeld();
		const killed = await running;
		expect(await tally(large)).toEqual({ paidTwice: 0, neverSent: 0 });
		const retry = await retryAfterKill(killed);
		expect(await tally(large)).toEqual({ paidTwice: 0, neverSent: 0 });
		expect(retry.output).toHaveLength(0);
	}, 120_000);
});

describe('3. Idempotency Key per product in a sub-workflow', () => {
	it('after 1,010 one-item executions, product 0’s key is still held: not generated again', async () => {
		// Each run of the sub-workflow is its own execution, with one item.
		const skus = products(1_010);
		const keyed = generate({ idempotencyKey: '={{ $json.sku }}-2026-11-27' });
		for (const sku of skus) await runInEngine(engine({ parameters: keyed, runs: [items([sku])] }));
		expect(await tally(skus)).toEqual({ paidTwice: 0, neverSent: 0 });
		const again = await runInEngine(engine({ parameters: keyed, runs: [items([skus[0]])] }));
		expect(await requestsPer([skus[0]])).toEqual([1]);
		expect(again.errorOutput.map(errorOf)).toEqual([
			expect.objectContaining({ code: 'idempotency_key_used', charge: 'not_sent' }),
		]);
	}, 120_000);
});

describe('AI Agent 3.x (the tool node as a step, its input item the call)', () => {
	const ask = 'agent: a lamp on a desk';
	const call = (toolCallId: string) => [{ json: { sku: ask, toolCallId } }];
	const asked = (overrides: Partial<EngineOptions> = {}) =>
		engine({ asTool: true, errorOutput: false, runs: [call('call_1')], ...overrides });

	it('4. a call answered, n8n killed before the agent replied, the execution retried: the same ask (a new call id) is not paid again', async () => {
		const killed = await runInEngine(asked());
		expect(killed.output[0].json).toMatchObject({ ok: true, credits_charged: PRICE });
		// n8n restarted: the retry runs in a new process; the model asks the same under a new call id.
		const restarted = { ...killed, options: { ...killed.options, nodeType: await freshProcess() } };
		const retry = await retryAfterKill(restarted, { runs: [call('call_2')] });
		expect(await requestsPer([ask])).toEqual([1]);
		expect(await chargedPer([ask])).toEqual([PRICE]);
		expect(retry.output[0].json).toMatchObject({
			code: 'interrupted_send',
			charged: 'may_have_been_charged',
		});
	});

	it('5. a call that reset after sending, then the same arguments again in the same execution: not paid again', async () => {
		await emulator.control.injectFault({
			route: 'generate',
			kind: 'reset',
			when: 'after',
			promptIncludes: ask,
		});
		const run = await runInEngine(asked({ runs: [call('call_1'), call('call_2')] }));
		const [tasks] = Object.values(run.run.data.resultData.runData);
		const [first] = tasks.map((task) => task.data?.main?.[0]?.[0]?.json);
		expect(first).toMatchObject({ code: 'network_error', charged: 'may_have_been_charged' });
		expect(await requestsPer([ask])).toEqual([1]);
		const second = run.output[0].json;
		expect(second.ok).not.toBe(true);
		expect(second.charged).toBe('may_have_been_charged');
		expect(['interrupted_send', 'network_error']).toContain(second.code);
	});
});

describe('6. Twin rows with one key (a saved Clear Idempotency Key, cut in issue 56, is ignored)', () => {
	it('two identical rows with the same key: only the first is sent in that run', async () => {
		const run = await runInEngine(
			engine({
				parameters: generate({ idempotencyKey: 'twin-2026-11-27', clearIdempotencyKey: true }),
				runs: [items(['twin', 'twin'])],
			}),
		);
		expect(await requestsPer(['twin'])).toEqual([1]);
		expect(run.output.map((item) => item.pairedItem)).toEqual([{ item: 0 }]);
		expect(run.errorOutput.map(errorOf)).toEqual([
			expect.objectContaining({ code: 'idempotency_key_used', charge: 'not_sent' }),
		]);
	});
});

describe('false refusals', () => {
	it('7. rows 1 and 2 identical, row 2 refused by 402, row 1’s prompt edited, retried with the saved workflow: both generated', async () => {
		await emulator.control.setCredits(emulator.accountId, PRICE + 5); // row 1 fits, row 2 does not
		const failed = await runInEngine(
			engine({ runs: [items(['vase', 'vase'])], errorOutput: false }),
		);
		expect(failed.run.status).toBe('error');
		expect(failed.error?.context).toMatchObject({ code: 'insufficient_credits' });
		await emulator.control.setCredits(emulator.accountId, 1_000);
		// "Retry with currently saved workflow" after row 1's prompt was fixed.
		const edited = generate(
			{},
			{ prompt: "={{ $itemIndex === 0 ? $json.sku + ' (fixed)' : $json.sku }}" },
		);
		const retry = await retryExecution(failed, edited, { errorOutput: true });
		expect(codes(retry)).toEqual([]);
		expect(retry.output.map((item) => [item.pairedItem, item.json.ok])).toEqual([
			[{ item: 0 }, true],
			[{ item: 1 }, true],
		]);
		// 'vase': row 1 first, row 2's refused request, row 2 again; 'vase (fixed)': row 1 again.
		expect(await requestsPer(['vase', 'vase (fixed)'])).toEqual([3, 1]);
		expect(await chargedPer(['vase', 'vase (fixed)'])).toEqual([2 * PRICE, PRICE]);
	});

	it('8. a 402 whose release met a busy store once, retried after a top-up: generated', async () => {
		// The stand-in's removeProcessed does not read `failNext`; for this test it does, as its
		// checkProcessedAndRecord does: whichever store call comes first after the armed moment (the
		// refused send's release today) throws as a busy database, once.
		const removeProcessed = deduplicationStandIn.removeProcessed;
		deduplicationStandIn.removeProcessed = async (...args) => {
			if (storeCalls.failNext > 0) {
				storeCalls.remove++;
				storeCalls.failNext--;
				throw new Error('SQLITE_BUSY: database is locked');
			}
			return await removeProcessed(...args);
		};
		try {
			await emulator.control.setCredits(emulator.accountId, 5);
			// Held at the service until its record is written; then the store is busy once.
			await emulator.control.injectFault({ route: 'generate', kind: 'hold', when: 'before' });
			const running = runInEngine(engine({ runs: [items(['mug'])], errorOutput: false }));
			await until(async () => (await emulator.control.held()).length === 1, 'the held request');
			storeCalls.failNext = 1;
			await emulator.control.releaseHeld();
			const failed = await running;
			expect(failed.error?.context).toMatchObject({
				code: 'insufficient_credits',
				charge: 'not_charged',
			});
			// The store call after the refusal (the release of its record) was the busy one.
			expect(storeCalls.failNext).toBe(0);
			await emulator.control.setCredits(emulator.accountId, 1_000);
			const retry = await retryExecution(failed, undefined, { errorOutput: true });
			expect(codes(retry)).toEqual([]);
			expect(retry.output.map((item) => item.json.ok)).toEqual([true]);
			expect(await requestsPer(['mug'])).toEqual([2]);
			expect(await chargedPer(['mug'])).toEqual([PRICE]);
		} finally {
			deduplicationStandIn.removeProcessed = removeProcessed;
		}
	});
});
