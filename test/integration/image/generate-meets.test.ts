/**
 * Issue 49: where two features of the money path meet (keys × retries, keys × loops, agents ×
 * retries, accounts × retries, caps × runs at once). Each case is a history the model checker
 * (test/model) reaches, written out so that it reads as the promise it keeps: requests and charges
 * counted at the emulator, the `code` and `charge` of each item. Run in n8n's own engine, against
 * the stand-in of n8n's deduplication store and the emulator, as generate-cases.test.ts.
 */
import type {
	IDataObject,
	IExecuteFunctions,
	INodeExecutionData,
	INodeParameters,
} from 'n8n-workflow';
import { sleep } from 'n8n-workflow';

import { ImagePack } from '../../../nodes/ImagePack/ImagePack.node';
import * as output from '../../../nodes/ImagePack/actions/image/generate/output';
import {
	DurableRecord,
	RECORD_LIMITS,
	forgetProcessRecords,
} from '../../../nodes/ImagePack/actions/image/generate/durable';
import { deduplicationStandIn, recordedCount } from '../../harness/deduplication';
import { useEmulator } from '../../harness/emulator';
import { newRunExecutionData } from '../../harness/n8n';
import {
	type EngineOptions,
	type EngineRun,
	callAsLangChainTool,
	retryAfterKill,
	retryExecution,
	runInEngine,
} from '../../harness/engine';

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

const items = (skus: string[], extra: IDataObject = {}): INodeExecutionData[] =>
	skus.map((sku) => ({ json: { sku, ...extra } }));

function engine(overrides: Partial<EngineOptions> = {}): EngineOptions {
	return {
		nodeType: new ImagePack(),
		parameters: generate(),
		credentials: { baseUrl: emulator.baseUrl, apiKey: emulator.apiKey },
		runs: [items(['product'])],
		errorOutput: true,
		...overrides,
	};
}

/** Generations charged, per product (its prompt), on any account. */
async function paidPer(skus: string[], accountId?: string): Promise<number[]> {
	const turns = await emulator.control.turns(accountId);
	return skus.map((sku) => turns.filter((turn) => turn.prompt === sku && turn.charged > 0).length);
}

const errorOf = (item: INodeExecutionData) => item.json.error as IDataObject;
const codes = (run: EngineRun) => run.errorOutput.map((item) => errorOf(item).code);
/** The first task's items of the node's first run (Continue On Fail puts errors in the output). */
const outcomes = (run: EngineRun) =>
	run.output.map((item) => (item.json.error ? (item.json.error as IDataObject).code : 'ok'));

async function until(check: () => Promise<boolean>, what: string) {
	for (let tries = 0; tries < 2_000; tries++) {
		if (await check()) return;
		await sleep(5);
	}
	throw new Error(`timed out waiting for ${what}`);
}

describe('1. Twin keys across tries, batches and stops (saved with Clear Idempotency Key, cut in issue 56: ignored)', () => {
	// Workflows saved while the option existed still carry it; the key stays used all the same.
	const cleared = (key: string) => generate({ idempotencyKey: key, clearIdempotencyKey: true });

	it('twin rows under Retry On Fail: the next try does not clear again, the twin is not sent', async () => {
		// Row 0 is refused once (a refunded 500): n8n tries the node again (Continue On Fail, item 0).
		await emulator.control.injectFault({
			route: 'generate',
			kind: 'status',
			status: 500,
			promptIncludes: 'first',
		});
		const run = await runInEngine(
			engine({
				parameters: cleared('={{ $json.sku === "first" ? "k-first" : "twin-key" }}'),
				runs: [items(['first', 'twin a', 'twin b'])],
				errorOutput: false,
				continueOnFail: true,
				maxTries: 2,
			}),
		);
		expect(await paidPer(['twin a', 'twin b'])).toEqual([1, 0]);
		expect(outcomes(run)).toEqual(['ok', 'ok', 'idempotency_key_used']);
	});

	it('a row returned from memory on a later try keeps its key used: the next day pays nothing', async () => {
		await emulator.control.injectFault({
			route: 'generate',
			kind: 'status',
			status: 500,
			promptIncludes: 'first',
		});
		await runInEngine(
			engine({
				parameters: cleared('={{ $json.sku }}-day'),
				runs: [items(['first', 'kept'])],
				errorOutput: false,
				continueOnFail: true,
				maxTries: 2,
			}),
		);
		const nextDay = await runInEngine(
			engine({
				parameters: generate({ idempotencyKey: '={{ $json.sku }}-day' }),
				runs: [items(['kept'])],
			}),
		);
		expect(await paidPer(['kept'])).toEqual([1]);
		expect(codes(nextDay)).toEqual(['idempotency_key_used']);
	});

	it('inside Loop Over Items a later batch does not clear again: a twin there is not sent', async () => {
		const run = await runInEngine(
			engine({
				parameters: cleared('shared-key'),
				runs: [items(['loop a']), items(['loop b']), items(['loop c'])],
			}),
		);
		expect(await paidPer(['loop a', 'loop b', 'loop c'])).toEqual([1, 0, 0]);
		expect(codes(run)).toEqual(['idempotency_key_used']);
	});

	it('a retry after a stop does not clear again', async () => {
		const options = engine({
			parameters: cleared('stop-key'),
			runs: [items(['stop a', 'stop b'])],
		});
		const killed = await runInEngine(options);
		forgetProcessRecords();
		const retry = await retryAfterKill(killed);
		expect(await paidPer(['stop a', 'stop b'])).toEqual([1, 0]);
		expect(codes(retry)).toEqual(['interrupted_send', 'idempotency_key_used']);
	});
});

describe('2. A key another execution used meanwhile is checked on a try', () => {
	it('a refused item lets its key go; another execution uses it; the next try does not send', async () => {
		// Item 0 (key k) is refused once; item 1 is held at the service while another execution
		// sends a product with the same key; then Retry On Fail tries the node again.
		await emulator.control.injectFault({
			route: 'generate',
			kind: 'status',
			status: 500,
			promptIncludes: 'mine',
		});
		await emulator.control.injectFault({ route: 'generate', kind: 'hold', promptIncludes: 'slow' });
		const running = runInEngine(
			engine({
				parameters: generate({ idempotencyKey: '={{ $json.key }}' }),
				runs: [[{ json: { sku: 'mine', key: 'k' } }, { json: { sku: 'slow', key: 'other' } }]],
				errorOutput: false,
				continueOnFail: true,
				maxTries: 2,
			}),
		);
		await until(async () => (await emulator.control.held()).length === 1, 'the held request');
		const meanwhile = await runInEngine(
			engine({
				parameters: generate({ idempotencyKey: 'k' }),
				runs: [items(['theirs'])],
			}),
		);
		expect(meanwhile.output).toHaveLength(1);
		await emulator.control.releaseHeld();
		const run = await running;
		expect(await paidPer(['mine', 'theirs'])).toEqual([0, 1]);
		expect(outcomes(run)[0]).toBe('idempotency_key_used');
	});
});

describe('3. A retry whose asking could not be taken out again', () => {
	it('the store busy on taking it out: later tries still send what never left', async () => {
		const removeProcessed = deduplicationStandIn.removeProcessed;
		let busy = 0;
		deduplicationStandIn.removeProcessed = async (...args) => {
			if (busy > 0) {
				busy--;
				throw new Error('SQLITE_BUSY: database is locked');
			}
			return await removeProcessed(...args);
		};
		try {
			const options = engine({
				runs: [items(['ask x', 'ask y', 'ask z'])],
				errorOutput: false,
				maxTries: 3,
			});
			// An execution n8n stopped before anything left; then its retry, whose asking meets a busy
			// store twice (both tries of taking its values out), and whose first item is refused once.
			const killed = { ...(await runInEngine({ ...options, runs: [[]] })), options };
			killed.atStart.executionData!.nodeExecutionStack[0].data.main = [
				items(['ask x', 'ask y', 'ask z']),
			];
			await emulator.control.injectFault({
				route: 'generate',
				kind: 'status',
				status: 500,
				promptIncludes: 'ask x',
			});
			busy = 2;
			const retry = await retryAfterKill(killed);
			expect(retry.error).toBeUndefined();
			expect(retry.output.map((item) => item.json.ok)).toEqual([true, true, true]);
			expect(await paidPer(['ask x', 'ask y', 'ask z'])).toEqual([1, 1, 1]);
		} finally {
			deduplicationStandIn.removeProcessed = removeProcessed;
		}
	});
});

describe('4. An agent repeats a call after a retry', () => {
	const ask = 'agent: a teapot';
	const call = (toolCallId: string) => [{ json: { sku: ask, toolCallId } }];

	it('the call answered, n8n stopped, retried: the refused call repeated by the model is not paid again', async () => {
		const options = engine({ asTool: true, errorOutput: false, runs: [call('call_1')] });
		const killed = await runInEngine(options);
		forgetProcessRecords();
		const retry = await retryAfterKill(killed, { runs: [call('call_2'), call('call_3')] });
		expect(await paidPer([ask])).toEqual([1]);
		const answers = Object.values(retry.run.data.resultData.runData)[0].map(
			(task) => task.data?.main?.[0]?.[0]?.json,
		);
		expect(answers.map((answer) => [answer?.code, answer?.charged])).toEqual([
			['interrupted_send', 'may_have_been_charged'],
			['interrupted_send', 'may_have_been_charged'],
		]);
	});
});

describe('5. Runs at once at the caps', () => {
	const limits = { ...RECORD_LIMITS };
	afterEach(() => Object.assign(RECORD_LIMITS, limits));

	/** A node context over the stand-in, as n8n-core's helpers call it (scope context: workflow, node). */
	function contextOf(nodeId: string): IExecuteFunctions {
		const context = { workflow: { id: 'caps-workflow' }, node: { id: nodeId } };
		const helpers = {
			checkProcessedAndRecord: async (
				values: string[],
				scope: 'node' | 'workflow',
				options: object,
			) =>
				await deduplicationStandIn.checkProcessedAndRecord(
					values,
					scope,
					context as never,
					options as never,
				),
			removeProcessed: async (values: string[], scope: 'node' | 'workflow') =>
				await deduplicationStandIn.removeProcessed(values, scope, context as never),
			getProcessedDataCount: async (scope: 'node' | 'workflow') =>
				await deduplicationStandIn.getProcessedDataCount(scope, context as never),
		};
		return {
			helpers,
			getWorkflow: () => ({ id: 'caps-workflow' }),
			getNode: () => ({ id: nodeId }),
		} as unknown as IExecuteFunctions;
	}

	it("another run's group move never lands between a retry's asking and its taking out", async () => {
		Object.assign(RECORD_LIMITS, { sends: 30, moveAt: 5 });
		const ctx = contextOf('caps-node');
		// A stopped run's 20 paid sends in the node's row.
		const stopped = new DurableRecord(ctx);
		const sends = Array.from({ length: 20 }, (_unused, index) => `send stopped ${index}`);
		for (const send of sends) {
			const claimed = await stopped.claim({ sends: [send], windows: [] });
			if ('failed' in claimed) throw new Error(claimed.failed);
			await claimed.settle('generated');
		}
		expect(recordedCount('caps-workflow', 'caps-node')).toBe(20);
		// Its retry asks for them and 15 that never left; another run settles 5 paid sends meanwhile.
		const retry = new DurableRecord(ctx);
		const asking = retry.open(
			'run',
			'retry-1',
			[...sends, ...Array.from({ length: 15 }, (_u, i) => `send new ${i}`)],
			true,
		);
		const other = new DurableRecord(ctx);
		const beside = (async () => {
			for (let index = 0; index < 5; index++) {
				const claimed = await other.claim({ sends: [`send beside ${index}`], windows: [] });
				if ('failed' in claimed) throw new Error(claimed.failed);
				await claimed.settle('generated');
			}
		})();
		await Promise.all([asking, beside]);
		// Every paid send of the stopped run is still there for the next retry.
		const next = new DurableRecord(ctx);
		await next.open('run', 'retry-2', sends, true);
		expect(sends.filter((send) => next.sentBefore(send))).toHaveLength(20);
	});
});

describe('6. Identical asks of two accounts', () => {
	it("an agency's banner for two sellers, stopped after seller A's row, retried with B's row first", async () => {
		const { accountId: b } = await emulator.control.createAccount({ credits: 1_000 });
		const { key: keyB } = await emulator.control.createKey({ accountId: b });
		const a = emulator.accountId;
		const row = (apiKey: string) => ({ json: { sku: 'seasonal banner', apiKey } });
		const options = engine({
			credentials: { baseUrl: emulator.baseUrl, apiKey: '={{ $json.apiKey }}' },
			runs: [[row(emulator.apiKey)]],
		});
		const killed = await runInEngine(options);
		forgetProcessRecords();
		const retry = await retryAfterKill(killed, { runs: [[row(keyB), row(emulator.apiKey)]] });
		expect([await paidPer(['seasonal banner'], a), await paidPer(['seasonal banner'], b)]).toEqual([
			[1],
			[1],
		]);
		expect(retry.output.map((item) => item.pairedItem)).toEqual([{ item: 0 }]);
		expect(codes(retry)).toEqual(['interrupted_send']);
		expect(retry.errorOutput[0].pairedItem).toEqual({ item: 1 });
	});
});

describe('7. The credential switched before a retry', () => {
	it("a batch on the agency's key stopped at a 402, retried with the per-seller credential: each row on its own account", async () => {
		const { accountId: b } = await emulator.control.createAccount({ credits: 1_000 });
		const { key: keyB } = await emulator.control.createKey({ accountId: b });
		const a = emulator.accountId;
		const keys = [emulator.apiKey, keyB, emulator.apiKey, keyB];
		const rows = keys.map((apiKey, index) => ({ json: { sku: `row ${index}`, apiKey } }));
		await emulator.control.setCredits(a, 12 + 5); // the agency's key pays row 0, not row 1
		const failed = await runInEngine(engine({ runs: [rows], errorOutput: false }));
		expect(failed.error?.context).toMatchObject({ code: 'insufficient_credits' });
		await emulator.control.setCredits(a, 1_000);
		await retryExecution(failed, undefined, {
			credentials: { baseUrl: emulator.baseUrl, apiKey: '={{ $json.apiKey }}' },
			errorOutput: true,
		});
		const skus = rows.map((row) => String(row.json.sku));
		expect(await paidPer(skus, a)).toEqual([1, 0, 1, 0]);
		expect(await paidPer(skus, b)).toEqual([0, 1, 0, 1]);
	});
});

describe("8. A key's generation paid before a stop", () => {
	it('the next run reports it as may have been charged, with the session, never as free', async () => {
		const keyed = generate({ idempotencyKey: '={{ $json.sku }}-2026-11-29' });
		// Charged at the service, the answer held: n8n stops before it arrives.
		await emulator.control.injectFault({ route: 'generate', kind: 'hold', when: 'after' });
		const stopped = runInEngine(engine({ parameters: keyed, runs: [items(['keyed 8'])] }));
		await until(async () => (await emulator.control.held()).length === 1, 'the held answer');
		forgetProcessRecords(); // the stopped process is gone
		const next = await runInEngine(engine({ parameters: keyed, runs: [items(['keyed 8'])] }));
		expect(await paidPer(['keyed 8'])).toEqual([1]);
		expect(codes(next)).toEqual(['interrupted_send']);
		expect(errorOf(next.errorOutput[0]).charge).toBe('may_have_been_charged');
		await emulator.control.releaseHeld();
		await stopped;
		// Answered at last: the key is used, and a run after that is told so, as free.
		const after = await runInEngine(engine({ parameters: keyed, runs: [items(['keyed 8'])] }));
		expect(codes(after)).toEqual(['idempotency_key_used']);
		expect(errorOf(after.errorOutput[0]).charge).toBe('not_sent');
		// n8n may stop after the node finished, before it saved: the words say where the images are.
		expect(String(errorOf(after.errorOutput[0]).message)).toMatch(
			/if n8n stopped before saving it, in the account.s sessions titled "API generation"/,
		);
	});
});

describe('a loop in a plain execution', () => {
	it("reads the node's row of paid sends once, not once per batch", async () => {
		const read = deduplicationStandIn.checkProcessedAndRecord;
		const sizes: number[] = [];
		deduplicationStandIn.checkProcessedAndRecord = async (values, scope, context, options) => {
			if (scope === 'node') sizes.push(values.length);
			return await read(values, scope, context, options);
		};
		try {
			const batches = Array.from({ length: 5 }, (_unused, index) =>
				items([`batch ${index} a`, `batch ${index} b`]),
			);
			await runInEngine(engine({ runs: batches }));
			// One `began` value for the execution, and no asking of the batches' sends.
			expect(sizes).toEqual([1]);
		} finally {
			deduplicationStandIn.checkProcessedAndRecord = read;
		}
	});
});

describe('after a paid answer arrived', () => {
	afterEach(() => jest.restoreAllMocks());

	it('an error building the output says the generation may have been charged, with its session', async () => {
		jest.spyOn(output, 'outputOf').mockImplementationOnce(() => {
			throw new TypeError("Cannot read properties of null (reading 'images')");
		});
		const run = await runInEngine(engine({ runs: [items(['read me'])] }));
		expect(await paidPer(['read me'])).toEqual([1]);
		expect(errorOf(run.errorOutput[0])).toMatchObject({
			code: 'server_fault',
			charge: 'may_have_been_charged',
			sessionId: expect.stringMatching(/./),
		});
	});

	it("an agent's call (AI Agent 2.x) whose output failed: the same call again is not paid again", async () => {
		jest.spyOn(output, 'outputOf').mockImplementationOnce(() => {
			throw new TypeError('off contract');
		});
		const options = {
			nodeType: new ImagePack(),
			parameters: generate({}),
			credentials: { baseUrl: emulator.baseUrl, apiKey: emulator.apiKey },
		};
		const data = newRunExecutionData();
		const asked = { ...options, parameters: { ...options.parameters, prompt: 'agent 2 call' } };
		const first = await callAsLangChainTool(asked, data, 0);
		const second = await callAsLangChainTool(asked, data, 1);
		expect(await paidPer(['agent 2 call'])).toEqual([1]);
		// The repeat is told the first call's failure again, not sent (issue 56: the execution's
		// calls are counted in the process, so an earlier call that may have been charged is known).
		expect([first[0].json.code, second[0].json.code]).toEqual(['server_fault', 'server_fault']);
		expect(second[0].json.charged).toBe('may_have_been_charged');
		expect(String(second[0].json.error)).toMatch(/Not sent again: an earlier call of this execution/);
	});
});

describe('twin rows with one key, side by side', () => {
	it('the key is used, not left open, once the first is answered: the next day is told it is used', async () => {
		const keyed = generate({ idempotencyKey: 'twin-side-by-side', concurrency: 8 });
		await runInEngine(engine({ parameters: keyed, runs: [items(['side a', 'side b', 'side c'])] }));
		const nextDay = await runInEngine(engine({ parameters: keyed, runs: [items(['side a'])] }));
		expect(await paidPer(['side a', 'side b', 'side c'])).toEqual([1, 0, 0]);
		expect(errorOf(nextDay.errorOutput[0])).toMatchObject({
			code: 'idempotency_key_used',
			charge: 'not_sent',
		});
	});
});

describe('a retry that reports what left before the stop', () => {
	const limits = { ...RECORD_LIMITS };
	afterEach(() => Object.assign(RECORD_LIMITS, limits));

	it('claims only what never left (the rest costs no store call), and keeps the output in input order', async () => {
		Object.assign(RECORD_LIMITS, { moveAt: 1 }); // each paid send moved to the sends' row at once
		const skus = ['left 0', 'left 1', 'left 2', 'never 3', 'never 4', 'never 5'];
		const options = engine({ runs: [items(skus.slice(0, 3))] });
		const killed = await runInEngine(options);
		forgetProcessRecords();
		const sentAt: string[] = [];
		const read = deduplicationStandIn.checkProcessedAndRecord;
		deduplicationStandIn.checkProcessedAndRecord = async (values, scope, context, options) => {
			if (scope === 'workflow') sentAt.push(...values);
			return await read(values, scope, context, options);
		};
		try {
			const retry = await retryAfterKill(killed, { runs: [items(skus)] });
			expect(retry.output.map((item) => item.pairedItem)).toEqual([
				{ item: 3 },
				{ item: 4 },
				{ item: 5 },
			]);
			expect(retry.errorOutput.map((item) => [item.pairedItem, errorOf(item).code])).toEqual([
				[{ item: 0 }, 'interrupted_send'],
				[{ item: 1 }, 'interrupted_send'],
				[{ item: 2 }, 'interrupted_send'],
			]);
			// Only the three that never left were claimed: the others cost the retry no store call.
			const claimed = sentAt.filter((value) => value.startsWith('claim '));
			expect(claimed).toHaveLength(3);
			expect(await paidPer(skus)).toEqual([1, 1, 1, 1, 1, 1]);
		} finally {
			deduplicationStandIn.checkProcessedAndRecord = read;
		}
	});
});

describe('Resend Uncertain Generations: what the retried execution reported, once each (issue 56)', () => {
	const limits = { ...RECORD_LIMITS };
	afterEach(() => Object.assign(RECORD_LIMITS, limits));

	it.each([
		['in the claims row', limits.moveAt],
		["moved to the node's row", 1],
	])(
		'Stop Workflow: a retry reports all that left; its retry resends them once; a second retry of it resends nothing (%s)',
		async (_where, moveAt) => {
			Object.assign(RECORD_LIMITS, { moveAt });
			const skus = ['banner 0', 'banner 1', 'banner 2'];
			const stopWorkflow = { errorOutput: false, parameters: generate({ resendUncertain: true }) };
			// Stopped after banners 0 and 1 left; banner 2 never did.
			const killed = await runInEngine(
				engine({ ...stopWorkflow, runs: [items(skus.slice(0, 2))] }),
			);
			forgetProcessRecords();
			// Its retry reports both (the option on since the first run resends nothing the user was
			// not shown), generates banner 2, and fails at its end.
			const reported = await retryAfterKill(killed, { runs: [items(skus)] });
			expect(reported.error?.context).toMatchObject({ code: 'interrupted_send', itemIndex: 0 });
			expect(reported.error?.description).toMatch(/items 1 \(interrupted_send\)/);
			expect(await paidPer(skus)).toEqual([1, 1, 1]);
			// Its retry resends the two it reported, once each; banner 2 comes back.
			const resent = await retryExecution(reported);
			expect(resent.output.map((item) => item.json.ok)).toEqual([true, true, true]);
			expect(await paidPer(skus)).toEqual([2, 2, 1]);
			// A second retry of the same execution: resent by the first already.
			const twice = await retryExecution(reported);
			expect(twice.error?.context).toMatchObject({ code: 'interrupted_send' });
			expect(twice.error?.message).toMatch(/with Resend Uncertain Generations on, already sent/);
			expect(await paidPer(skus)).toEqual([2, 2, 1]);
		},
	);

	it('a new execution never resends, whatever its saved options say', async () => {
		const resend = generate({ resendUncertain: true, idempotencyKey: '={{ $json.sku }}-k' });
		// Charged at the service, the answer held: n8n stops before it arrives.
		await emulator.control.injectFault({ route: 'generate', kind: 'hold', when: 'after' });
		const stopped = runInEngine(engine({ parameters: resend, runs: [items(['poster'])] }));
		await until(async () => (await emulator.control.held()).length === 1, 'the held answer');
		forgetProcessRecords(); // the stopped process is gone
		const next = await runInEngine(engine({ parameters: resend, runs: [items(['poster'])] }));
		expect(codes(next)).toEqual(['interrupted_send']);
		expect(await paidPer(['poster'])).toEqual([1]);
		await emulator.control.releaseHeld();
		await stopped;
	});
});

describe('a keyed row answered, n8n stopped while Generate still runs (issue 56)', () => {
	it('the key stays open until its run ends: a new execution reports it maybe charged, never as used and free', async () => {
		const keyed = generate({ idempotencyKey: '={{ $json.sku }}-k' });
		// The first row is answered; the second is held at the service: n8n stops then.
		await emulator.control.injectFault({
			route: 'generate',
			kind: 'hold',
			when: 'before',
			promptIncludes: 'shelf 1',
		});
		const stopped = runInEngine(
			engine({ parameters: keyed, runs: [items(['shelf 0', 'shelf 1'])] }),
		);
		await until(async () => (await emulator.control.held()).length === 1, 'the held request');
		forgetProcessRecords();
		const next = await runInEngine(engine({ parameters: keyed, runs: [items(['shelf 0'])] }));
		expect(codes(next)).toEqual(['interrupted_send']);
		expect(errorOf(next.errorOutput[0]).charge).toBe('may_have_been_charged');
		expect(await paidPer(['shelf 0'])).toEqual([1]);
		await emulator.control.releaseHeld();
		await stopped;
	});
});

describe("a stopped execution's retry refused, that retry retried", () => {
	it('the stopped execution retried again after its descendant delivered pays nothing', async () => {
		// Stopped before the banner left (the execution ran only another row: n8n's data at its start
		// is all a retry has); its retry is refused (a refunded 500), a retry of that retry sends it
		// again and delivers, then the stopped execution is retried once more.
		const killed = await runInEngine(engine({ runs: [items(['other'])], errorOutput: false }));
		forgetProcessRecords();
		const banner = { runs: [items(['banner'])] };
		await emulator.control.injectFault({ route: 'generate', kind: 'status', status: 500 });
		const refused = await retryAfterKill(killed, banner);
		expect(refused.error?.context).toMatchObject({ code: 'internal_error' });
		const delivered = await retryExecution(refused);
		expect(delivered.output.map((item) => item.json.ok)).toEqual([true]);
		forgetProcessRecords();
		const again = await retryAfterKill(killed, banner);
		expect(again.error?.context).toMatchObject({ code: 'interrupted_send' });
		expect(await paidPer(['banner'])).toEqual([1]);
	});
});
