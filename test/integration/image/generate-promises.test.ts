/**
 * Issue 56: where the money path broke its promises in a fourth review, each a history a user meets,
 * run in n8n's own engine against the stand-in of n8n's deduplication store and the emulator (as
 * generate-meets.test.ts). Each failed before its fix: requests and charges are counted at the
 * emulator, per account; `code` and `charge` are read off each item.
 */
import type { IDataObject, INodeExecutionData, INodeParameters } from 'n8n-workflow';
import { sleep } from 'n8n-workflow';

import { ImagePack } from '../../../nodes/ImagePack/ImagePack.node';
import { forgetProcessRecords } from '../../../nodes/ImagePack/actions/image/generate/durable';
import { useEmulator } from '../../harness/emulator';
import { newRunExecutionData } from '../../harness/n8n';
import {
	type EngineOptions,
	type EngineRun,
	callAsLangChainTool,
	retryAfterKill,
	retryExecution,
	runInEngine,
	startInEngine,
} from '../../harness/engine';

const emulator = useEmulator();

const generate = (options: IDataObject = {}, prompt = '={{ $json.sku }}'): INodeParameters => ({
	resource: 'image',
	operation: 'generate',
	prompt,
	model: 'nano-banana-2',
	ratio: '1:1',
	resolution: '1K',
	options: { downloadImages: false, ...options },
});

const rows = (skus: string[], extra: IDataObject = {}): INodeExecutionData[] =>
	skus.map((sku) => ({ json: { sku, ...extra } }));

function engine(overrides: Partial<EngineOptions> = {}): EngineOptions {
	return {
		nodeType: new ImagePack(),
		parameters: generate(),
		credentials: { baseUrl: emulator.baseUrl, apiKey: emulator.apiKey },
		runs: [rows(['product'])],
		errorOutput: true,
		...overrides,
	};
}

const perSeller = { baseUrl: '', apiKey: '={{ $json.apiKey }}' };

/** Generations charged per product (its prompt), on one account or any. */
async function paidPer(skus: string[], accountId?: string): Promise<number[]> {
	const turns = await emulator.control.turns(accountId);
	return skus.map((sku) => turns.filter((turn) => turn.prompt === sku && turn.charged > 0).length);
}

const errorOf = (item: INodeExecutionData) => item.json.error as IDataObject;
const outcomes = (run: EngineRun) =>
	[...run.output, ...run.errorOutput]
		.sort(
			(a, b) => (a.pairedItem as { item: number }).item - (b.pairedItem as { item: number }).item,
		)
		.map((item) => (item.json.error ? `${errorOf(item).code} ${errorOf(item).charge}` : 'ok'));

async function until(check: () => Promise<boolean>, what: string) {
	for (let tries = 0; tries < 2_000; tries++) {
		if (await check()) return;
		await sleep(5);
	}
	throw new Error(`timed out waiting for ${what}`);
}

async function seller(credits = 1_000) {
	const { accountId } = await emulator.control.createAccount({ credits });
	const { key } = await emulator.control.createKey({ accountId });
	return { accountId, key };
}

describe('a result goes only to a row of the account that paid for it', () => {
	it("a retry with a per-seller credential: seller A's proof is no proof for seller B's row", async () => {
		// The agency ran the batch on its own key (account A) and it failed at the last row.
		const a = emulator.accountId;
		const b = await seller();
		const { key: a2 } = await emulator.control.createKey({ accountId: a }); // a new key of A
		await emulator.control.setCredits(a, 24); // two of three fit
		const batch = rows(['mug of a', 'lamp of b', 'vase of a']);
		const failed = await runInEngine(engine({ runs: [batch], errorOutput: false }));
		expect(failed.error?.context).toMatchObject({ code: 'insufficient_credits' });
		await emulator.control.setCredits(a, 1_000);
		// Retried with the credential per row: A's rows on A's new key, B's row on B's key.
		const keys = [a2, b.key, a2];
		const perRow = batch.map((row, index) => ({ json: { ...row.json, apiKey: keys[index] } }));
		const retry = await retryExecution(
			{ ...failed, run: withInput(failed.run, perRow) },
			undefined,
			{ credentials: { ...perSeller, baseUrl: emulator.baseUrl }, errorOutput: true },
		);
		// Row 0 proves account A and is returned; row 1 is B's: never given A's image.
		expect(outcomes(retry)).toEqual(['ok', 'other_key may_have_been_charged', 'ok']);
		const given = retry.output.map((item) => item.json.turn_id);
		const turnsOfA = (await emulator.control.turns(a)).map((turn) => turn.id);
		expect(retry.output.map((item) => (item.pairedItem as { item: number }).item)).toEqual([0, 2]);
		expect(given.every((turn) => turnsOfA.includes(turn as string))).toBe(true);
		expect(await paidPer(['lamp of b'], b.accountId)).toEqual([0]);
	});
});

/** The failed run's saved input, as a retry with upstream nodes run again would bring it. */
function withInput(run: EngineRun['run'], items: INodeExecutionData[]): EngineRun['run'] {
	const copy = JSON.parse(JSON.stringify(run)) as EngineRun['run'];
	for (const entry of copy.data.executionData!.nodeExecutionStack) entry.data = { main: [items] };
	return copy;
}

describe('a key is the account’s', () => {
	it("two sellers, one SKU, the README's key under a per-seller credential: each generated once", async () => {
		const a = await seller();
		const b = await seller();
		const keyed = generate({ idempotencyKey: '={{ $json.sku }}-2026-12-07' });
		const credentials = { ...perSeller, baseUrl: emulator.baseUrl };
		const night = [
			{ json: { sku: 'SKU-1', apiKey: a.key } },
			{ json: { sku: 'SKU-1', apiKey: b.key } },
		];
		const first = await runInEngine(engine({ parameters: keyed, credentials, runs: [night] }));
		expect(outcomes(first)).toEqual(['ok', 'ok']);
		const again = await runInEngine(engine({ parameters: keyed, credentials, runs: [night] }));
		expect(outcomes(again)).toEqual([
			'idempotency_key_used not_sent',
			'idempotency_key_used not_sent',
		]);
		expect(await paidPer(['SKU-1'], a.accountId)).toEqual([1]);
		expect(await paidPer(['SKU-1'], b.accountId)).toEqual([1]);
	});
});

describe('Stop after items were paid', () => {
	it('during the downloads (Concurrency 1): every generated item keeps its result, none is reported not sent', async () => {
		await emulator.control.setLatency('signedFile', 1_500);
		try {
			const skus = ['stop 0', 'stop 1', 'stop 2'];
			const started = startInEngine(
				engine({ parameters: generate({ downloadImages: true }), runs: [rows(skus)] }),
			);
			await until(
				async () => (await emulator.control.requests({ route: 'signedFile' })).length > 0,
				'the first download',
			);
			started.stop!();
			const stopped = await started.done;
			expect(await paidPer(skus)).toEqual([1, 1, 1]);
			const items = [...stopped.output, ...stopped.errorOutput];
			const charges = items.map((item) => (item.json.error ? errorOf(item).charge : 'paid'));
			expect(charges).not.toContain('not_sent');
			const error = stopped.error as { context?: IDataObject } | undefined;
			expect(error?.context?.charge).not.toBe('not_sent');
			expect(stopped.output.map((item) => item.json.turn_id)).toHaveLength(3);
		} finally {
			await emulator.control.setLatency('signedFile', 0);
		}
	});
});

describe('caps hold across kills and retries', () => {
	it('Max Credits per Execution: what a stopped attempt sent counts on its retry', async () => {
		// 12 credits an image: a cap of 36 is three products.
		const capped = generate({ maxCreditsPerExecution: 36 });
		const skus = ['cap 0', 'cap 1', 'cap 2', 'cap 3', 'cap 4', 'cap 5'];
		// n8n killed after three products were sent (nothing saved but the execution's start).
		const killed = await runInEngine(
			engine({ parameters: capped, runs: [rows(skus.slice(0, 3))] }),
		);
		forgetProcessRecords();
		const retry = await retryAfterKill(killed, { runs: [rows(skus)] });
		expect(outcomes(retry)).toEqual([
			...Array(3).fill('interrupted_send may_have_been_charged'),
			...Array(3).fill('credit_cap_reached not_sent'),
		]);
		expect(await paidPer(skus)).toEqual([1, 1, 1, 0, 0, 0]);
	});
});

describe('Stop between generations (Concurrency 1)', () => {
	it('the items paid before the Stop are returned, the ones never started are not sent', async () => {
		await emulator.control.setLatency('generate', 400);
		try {
			const skus = ['between 0', 'between 1', 'between 2', 'between 3'];
			const started = startInEngine(engine({ runs: [rows(skus)], errorOutput: false }));
			await until(
				async () => (await paidPer(skus)).reduce((sum, paid) => sum + paid, 0) >= 2,
				'two paid generations',
			);
			started.stop!();
			const stopped = await started.done;
			const paid = await paidPer(skus);
			const paidCount = paid.reduce((sum, n) => sum + n, 0);
			const cut = stopped.error as { description?: string; context?: IDataObject } | undefined;
			if (!cut) {
				// The Stop fell between two items: the paid ones are returned.
				expect(stopped.output).toHaveLength(paidCount);
			} else {
				// It cut a request: that one may have been charged, and the error names what was paid.
				expect(cut.context?.charge).toBe('may_have_been_charged');
				const named = /Generated and charged before this error, not in the output: ([^.]+)\./.exec(
					cut.description ?? '',
				);
				expect(named?.[1].split(', ')).toHaveLength(paidCount);
			}
			expect(paid.slice(-1)).toEqual([0]);
		} finally {
			await emulator.control.setLatency('generate', 0);
		}
	});
});

describe('the same failed execution retried twice, each retry going on past what it reports', () => {
	it('a refusal one retry sent is not paid again by a retry of the other retry', async () => {
		const a = emulator.accountId;
		const skus = ['twice 0', 'twice 1', 'twice 2', 'twice 3'];
		const stopWorkflow = { errorOutput: false, runs: [rows(skus)] };
		await emulator.control.setCredits(a, 2 * 12 + 5); // 12 credits an image: two fit
		const failed = await runInEngine(engine(stopWorkflow));
		expect(failed.error?.context).toMatchObject({ code: 'insufficient_credits', itemIndex: 2 });
		await emulator.control.setCredits(a, 12 + 5); // one more fits: row 2, not row 3
		const first = await retryExecution(failed);
		expect(first.error?.context).toMatchObject({ code: 'insufficient_credits', itemIndex: 3 });
		await emulator.control.setCredits(a, 1_000);
		// The Executions list still offers Retry on the failed execution: row 2 was sent by the first
		// retry (reported), row 3, never reached by the failed execution, is sent.
		const second = await retryExecution(failed);
		expect(second.error?.context).toMatchObject({ code: 'interrupted_send', itemIndex: 2 });
		expect(await paidPer(skus)).toEqual([1, 1, 1, 1]);
		// The first retry retried: row 2 comes back from its record; row 3, refused there, was sent
		// by the second retry since: reported, not paid again.
		const third = await retryExecution(first);
		expect(third.error?.context).toMatchObject({ code: 'interrupted_send', itemIndex: 3 });
		expect(await paidPer(skus)).toEqual([1, 1, 1, 1]);
	});
});

describe('AI Agent 2.x (each call in a context of its own)', () => {
	const tool = () => ({
		nodeType: new ImagePack(),
		parameters: generate({}, 'a banner for the agent'),
		credentials: { baseUrl: emulator.baseUrl, apiKey: emulator.apiKey },
	});

	it('a call answered before n8n stopped is not paid again when the execution is retried', async () => {
		const data = newRunExecutionData();
		const atStart = JSON.parse(JSON.stringify(data)) as typeof data;
		const answered = await callAsLangChainTool(tool(), data, 0);
		expect(answered[0].json.turn_id).toBeDefined();
		forgetProcessRecords(); // n8n killed: the retry runs in a new process, from the saved start
		const retried = await callAsLangChainTool(tool(), atStart, 0);
		expect(retried[0].json.code).toBe('interrupted_send');
		expect(await paidPer(['a banner for the agent'])).toEqual([1]);
	});

	it('the same call twice in one execution is two generations', async () => {
		const data = newRunExecutionData();
		const first = await callAsLangChainTool(tool(), data, 0);
		const second = await callAsLangChainTool(tool(), data, 1);
		expect(first[0].json.turn_id).not.toBe(second[0].json.turn_id);
		expect(await paidPer(['a banner for the agent'])).toEqual([2]);
	});
});

describe('Stop Workflow: the failure that stops the run names what was reported before it', () => {
	it('an item reported maybe charged, then a refusal: the error shows both, so a Resend resends only what was shown', async () => {
		const skus = ['shown 0', 'shown 1', 'shown 2'];
		const stopWorkflow = { errorOutput: false };
		const killed = await runInEngine(engine({ ...stopWorkflow, runs: [rows(skus.slice(0, 1))] }));
		forgetProcessRecords();
		await emulator.control.setCredits(emulator.accountId, 5); // row 1 refused: 402
		const retry = await retryAfterKill(killed, { runs: [rows(skus)] });
		expect(retry.error?.context).toMatchObject({ code: 'insufficient_credits', itemIndex: 1 });
		expect(retry.error?.description).toMatch(
			/Also reported maybe charged: items 0 \(interrupted_send\)/,
		);
		await emulator.control.setCredits(emulator.accountId, 1_000);
		const resent = await retryExecution(retry, generate({ resendUncertain: true }));
		expect(resent.output.map((item) => item.json.ok)).toEqual([true, true, true]);
		expect(await paidPer(skus)).toEqual([2, 1, 1]);
	});
});
