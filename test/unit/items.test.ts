/**
 * mapWithConcurrency (order kept, at most `limit` in flight, stop starting work after the first
 * failure, let in-flight work finish, throw the first failure) and the Continue On Fail item helpers.
 * Concurrency is measured with counters, never with wall-clock assertions.
 */
import { NodeOperationError, sleep } from 'n8n-workflow';

import type { Code } from '../../nodes/ImagePack/shared/codes';
import { imagePackError } from '../../nodes/ImagePack/shared/errors';

import { errorItem, mapWithConcurrency } from '../../nodes/ImagePack/actions/items';
import { testNode as node } from '../harness/n8n';

/** A worker that records how many calls overlap; every call sleeps, so overlaps are certain. */
function probe(delay: (index: number) => number = () => 5) {
	const state = { inFlight: 0, maxInFlight: 0, started: [] as number[], finished: [] as number[] };
	const worker = async (input: string, index: number) => {
		state.started.push(index);
		state.inFlight++;
		state.maxInFlight = Math.max(state.maxInFlight, state.inFlight);
		await sleep(delay(index));
		state.inFlight--;
		state.finished.push(index);
		return `${input}:${index}`;
	};
	return { state, worker };
}

const inputs = (count: number) => Array.from({ length: count }, (_, i) => `item${i}`);

describe('mapWithConcurrency: order and bounds', () => {
	it.each([1, 2, 3, 5, 10])(
		'keeps at most %i in flight, reaches that bound, and keeps input order',
		async (limit) => {
			const { state, worker } = probe((index) => 2 + ((index * 7) % 5));
			const results = await mapWithConcurrency(inputs(10), limit, worker);
			expect(results).toEqual(inputs(10).map((input, index) => `${input}:${index}`));
			expect(state.maxInFlight).toBe(limit);
			expect(state.inFlight).toBe(0);
			// Work is started in input order.
			expect(state.started).toEqual([...Array(10).keys()]);
		},
	);

	it('keeps input order even when later items finish first', async () => {
		// Each item finishes when the test says so (not after a timer, which a loaded machine reorders).
		const release: Record<number, () => void> = {};
		const finished: number[] = [];
		const worker = async (input: string, index: number) => {
			await new Promise<void>((resolve) => (release[index] = resolve));
			finished.push(index);
			return `${input}:${index}`;
		};
		const running = mapWithConcurrency(inputs(6), 6, worker);
		while (Object.keys(release).length < 6) await sleep(1);
		for (let index = 5; index >= 0; index--) {
			release[index]();
			while (!finished.includes(index)) await sleep(1);
		}
		expect(await running).toEqual(inputs(6).map((input, index) => `${input}:${index}`));
		expect(finished).toEqual([5, 4, 3, 2, 1, 0]);
	});

	it('never starts more workers than there are inputs', async () => {
		const { state, worker } = probe();
		await mapWithConcurrency(inputs(3), 50, worker);
		expect(state.maxInFlight).toBe(3);
		expect(state.started).toHaveLength(3);
	});

	it('runs sequentially with limit 1 (n8n’s default behaviour)', async () => {
		const order: string[] = [];
		await mapWithConcurrency(inputs(4), 1, async (input) => {
			order.push(`start ${input}`);
			await sleep(1);
			order.push(`end ${input}`);
		});
		expect(order).toEqual([
			'start item0',
			'end item0',
			'start item1',
			'end item1',
			'start item2',
			'end item2',
			'start item3',
			'end item3',
		]);
	});

	it.each([0, -3, Number.NaN])(
		'treats the limit %p as 1 and still does all the work',
		async (limit) => {
			const { state, worker } = probe(() => 1);
			const results = await mapWithConcurrency(inputs(4), limit, worker);
			expect(results).toEqual(['item0:0', 'item1:1', 'item2:2', 'item3:3']);
			expect(state.maxInFlight).toBe(1);
		},
	);

	it('accepts an unbounded limit', async () => {
		const { state, worker } = probe();
		await mapWithConcurrency(inputs(5), Number.POSITIVE_INFINITY, worker);
		expect(state.maxInFlight).toBe(5);
	});

	it('returns an empty list for no inputs without calling the worker', async () => {
		const worker = jest.fn(async () => 1);
		await expect(mapWithConcurrency([], 4, worker)).resolves.toEqual([]);
		expect(worker).not.toHaveBeenCalled();
	});

	it('passes each input with its own index, exactly once', async () => {
		const seen: Array<[string, number]> = [];
		await mapWithConcurrency(['a', 'b', 'c', 'd', 'e'], 2, async (input, index) => {
			seen.push([input, index]);
			await sleep(1);
		});
		expect(seen.sort((x, y) => x[1] - y[1])).toEqual([
			['a', 0],
			['b', 1],
			['c', 2],
			['d', 3],
			['e', 4],
		]);
	});

	it('keeps undefined and falsy results in place', async () => {
		const results = await mapWithConcurrency(
			[0, 1, 2, 3],
			2,
			async (value) => [undefined, 0, '', null][value],
		);
		expect(results).toEqual([undefined, 0, '', null]);
		expect(results).toHaveLength(4);
	});
});

describe('mapWithConcurrency: failures', () => {
	it('starts no new work after the first failure, lets in-flight work finish, then throws that failure', async () => {
		const failure = new Error('item 1 failed');
		const state = { started: [] as number[], finished: [] as number[] };
		const run = mapWithConcurrency(inputs(10), 3, async (_input, index) => {
			state.started.push(index);
			if (index === 1) {
				await sleep(5);
				throw failure;
			}
			await sleep(40);
			state.finished.push(index);
			return index;
		});
		await expect(run).rejects.toBe(failure);
		// Items 0 and 2 were in flight when item 1 failed: they finished before the promise settled.
		expect(state.started).toEqual([0, 1, 2]);
		expect(state.finished.sort()).toEqual([0, 2]);
	});

	it('throws the failure that happened first in time, not the one with the lowest index', async () => {
		const early = new Error('item 2 failed first');
		const late = new Error('item 0 failed later');
		const run = mapWithConcurrency(inputs(6), 3, async (_input, index) => {
			if (index === 0) {
				await sleep(30);
				throw late;
			}
			if (index === 2) {
				await sleep(2);
				throw early;
			}
			await sleep(10);
			return index;
		});
		await expect(run).rejects.toBe(early);
	});

	it('with limit 1, a failing first item means no other item starts', async () => {
		const started: number[] = [];
		const run = mapWithConcurrency(inputs(5), 1, async (_input, index) => {
			started.push(index);
			await sleep(1);
			if (index === 0) throw new Error('first failed');
		});
		await expect(run).rejects.toThrow('first failed');
		expect(started).toEqual([0]);
	});

	it('counts in-flight work down to zero before it rejects', async () => {
		const { state, worker } = probe(() => 20);
		const run = mapWithConcurrency(inputs(8), 4, async (input, index) => {
			if (index === 3) {
				await sleep(1);
				throw new Error('boom');
			}
			return await worker(input, index);
		});
		await expect(run).rejects.toThrow('boom');
		expect(state.inFlight).toBe(0);
		expect(state.started).toEqual([0, 1, 2]);
		expect(state.finished.sort()).toEqual([0, 1, 2]);
	});

	it('catches a worker that throws synchronously', async () => {
		const run = mapWithConcurrency(inputs(3), 2, ((_input: string, index: number) => {
			if (index === 0) throw new Error('sync');
			return Promise.resolve(index);
		}) as (input: string, index: number) => Promise<number>);
		await expect(run).rejects.toThrow('sync');
	});

	it('rethrows non-Error failures unchanged', async () => {
		const run = mapWithConcurrency([1], 1, async () => {
			throw 'plain string';
		});
		await expect(run).rejects.toBe('plain string');
	});
});

function apiError(code: Code, httpStatus: number, requestId?: string) {
	return imagePackError(
		node,
		{ code, httpStatus, requestId, charge: 'not_charged' },
		{ message: 'Not enough credits for this generation' },
	);
}

describe('errorItem: the shape n8n routes to the error output', () => {
	const nulls = {
		code: null,
		httpStatus: null,
		requestId: null,
		charge: 'not_sent',
		sessionId: null,
		parameter: null,
		apiMessage: null,
	};

	it('holds only error: the message and every fact of an API error', () => {
		const item = errorItem(apiError('insufficient_credits', 402, 'req_9'), 3);
		expect(item).toEqual({
			json: {
				error: {
					message: 'Not enough credits for this generation',
					...nulls,
					code: 'insufficient_credits',
					httpStatus: 402,
					requestId: 'req_9',
					charge: 'not_charged',
				},
			},
			pairedItem: { item: 3 },
		});
		// n8n's handleNodeErrorOutput before 2.36 routes a json of exactly {error} (or {error, message}).
		expect(Object.keys(item.json)).toEqual(['error']);
	});

	it('a generation that may have been charged names its session', () => {
		const error = imagePackError(
			node,
			{ code: 'timeout', httpStatus: 0, charge: 'may_have_been_charged', sessionId: 's_42' },
			{ message: 'No answer in time' },
		);
		expect(errorItem(error, 0).json.error).toEqual({
			message: expect.stringMatching(/^No answer in time/),
			...nulls,
			code: 'timeout',
			charge: 'may_have_been_charged',
			sessionId: 's_42',
		});
	});

	it('keeps a validation error’s code and parameter, nulls for the rest', () => {
		const error = new NodeOperationError(
			node,
			'Item 0: Ratio "4:5" is not allowed for qwen-image-3.0-pro',
		);
		Object.assign(error.context, { code: 'invalid_parameter', parameter: 'ratio' });
		expect(errorItem(error, 0)).toEqual({
			json: {
				error: {
					message: 'Item 0: Ratio "4:5" is not allowed for qwen-image-3.0-pro',
					...nulls,
					code: 'invalid_parameter',
					parameter: 'ratio',
				},
			},
			pairedItem: { item: 0 },
		});
	});

	it('handles plain errors and values that are not errors', () => {
		expect(errorItem(new Error('boom'), 1)).toEqual({
			json: { error: { message: 'boom', ...nulls } },
			pairedItem: { item: 1 },
		});
		expect(errorItem('plain string', 2)).toEqual({
			json: { error: { message: 'plain string', ...nulls } },
			pairedItem: { item: 2 },
		});
		expect(errorItem(undefined, 4).pairedItem).toEqual({ item: 4 });
		expect(typeof (errorItem(null, 5).json.error as { message: unknown }).message).toBe('string');
	});
});
