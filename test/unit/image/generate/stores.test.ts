/**
 * The two memories alone: the records of one run in the execution's context data (RunMemory), and the generations this process holds for tool callers (PendingGenerations: one
 * request per intent, handed out once, uncertain failures kept for retries, TTLs and the entry cap).
 */
import { HOUR_MS } from '../../../../nodes/ImagePack/actions/image/generate/credits';
import {
	MEMORY_KEY,
	type Outcome,
	PENDING_LIMITS,
	PendingGenerations,
	RunMemory,
} from '../../../../nodes/ImagePack/actions/image/generate/stores';

/** A promise settled from outside, and how many times the work was started. */
function work<A>() {
	let resolve!: (value: A) => void;
	let reject!: (error: unknown) => void;
	const promise = new Promise<A>((res, rej) => {
		resolve = res;
		reject = rej;
	});
	const start = jest.fn(async () => await promise);
	return { start, resolve, reject };
}

/** How the tests' errors are kept: `{ uncertain: true }` may have been charged. */
const uncertain = <A>(error: unknown): Outcome<A, unknown> =>
	(error as { uncertain?: boolean }).uncertain === true
		? { kind: 'uncertain', failure: error }
		: { kind: 'refused', failure: error };

describe('PendingGenerations', () => {
	let now = 0;
	const clock = () => now;
	beforeEach(() => {
		now = 1_000_000;
	});

	it('coalesces calls in the same instant and later repeats into one request until the answer is collected', async () => {
		const store = new PendingGenerations<string>(PENDING_LIMITS, clock);
		const first = work<string>();
		const a = store.join('k', first.start, uncertain);
		const b = store.join('k', first.start, uncertain); // no await in between: the same entry
		expect(a.joined).toBe(false);
		expect(b.joined).toBe(true);
		expect(b.held).toBe(a.held);
		expect(a.held.handle).toMatch(/^gen_[0-9a-f]{18}$/);
		expect(first.start).toHaveBeenCalledTimes(1);

		first.resolve('images');
		expect(await a.held.done).toEqual({ kind: 'generated', answer: 'images' });
		// Finished, not collected: a repeat (or the handle) gets it without a request.
		expect(store.join('k', first.start, uncertain).held).toBe(a.held);
		expect(store.find(a.held.handle, 'k')).toBe(a.held);
		expect(store.find(a.held.handle, 'another request')).toBe('other');
		void store.collected(a.held);
		// Collected: the same arguments are a new request; the handle is unknown.
		expect(store.find(a.held.handle, 'k')).toBeUndefined();
		const again = work<string>();
		expect(store.join('k', again.start, uncertain).joined).toBe(false);
		expect(again.start).toHaveBeenCalledTimes(1);
	});

	it('keeps an uncertain failure for retries (failedTtlMs), forgets a refusal at once', async () => {
		const store = new PendingGenerations<string>(PENDING_LIMITS, clock);
		const lost = work<string>();
		const held = store.join('lost', lost.start, uncertain).held;
		lost.reject({ uncertain: true });
		expect(await held.done).toMatchObject({ kind: 'uncertain' });
		void store.collected(held); // reported to a caller: still held for the next try
		expect(store.join('lost', jest.fn(), uncertain).held).toBe(held);
		now += PENDING_LIMITS.failedTtlMs + 1;
		expect(store.find(held.handle, 'lost')).toBeUndefined();

		const refused = work<string>();
		const refusal = store.join('refused', refused.start, uncertain).held;
		refused.reject({ uncertain: false });
		expect(await refusal.done).toMatchObject({ kind: 'refused' });
		expect(store.find(refusal.handle, 'refused')).toBeUndefined();
	});

	it('drops an uncollected answer after doneTtlMs; a running generation has no TTL', async () => {
		const store = new PendingGenerations<string>(PENDING_LIMITS, clock);
		const done = work<string>();
		const held = store.join('done', done.start, uncertain).held;
		const running = store.join('running', work<string>().start, uncertain).held;
		done.resolve('x');
		await held.done;
		now += PENDING_LIMITS.doneTtlMs - 1;
		expect(store.find(held.handle, 'done')).toBe(held);
		now += 2;
		expect(store.find(held.handle, 'done')).toBeUndefined();
		now += 10 * HOUR_MS;
		expect(store.find(running.handle, 'running')).toBe(running);
	});

	it('never holds more than maxEntries: settled entries go first, then the oldest running', async () => {
		const store = new PendingGenerations<string>({ ...PENDING_LIMITS, maxEntries: 3 }, clock);
		const settled = work<string>();
		const a = store.join('a', work<string>().start, uncertain).held;
		const b = store.join('b', settled.start, uncertain).held;
		settled.resolve('b');
		await b.done;
		store.join('c', work<string>().start, uncertain);
		store.join('d', work<string>().start, uncertain);
		expect(store.size).toBe(3);
		expect(store.find(b.handle, 'b')).toBeUndefined();
		expect(store.find(a.handle, 'a')).toBe(a);
		store.join('e', work<string>().start, uncertain);
		expect(store.size).toBe(3);
		expect(store.find(a.handle, 'a')).toBeUndefined();
	});

	it('finds by handle first, then by key, and never starts anything', () => {
		const store = new PendingGenerations<string>(PENDING_LIMITS, clock);
		const held = store.join('k', work<string>().start, uncertain).held;
		expect(store.find('gen_unknown', 'k')).toBe(held);
		expect(store.find('gen_unknown', 'other')).toBeUndefined();
		expect(store.size).toBe(1);
	});
});

describe('PendingGenerations when full', () => {
	it('a repeat of a held generation is answered even when the store is full', async () => {
		const store = new PendingGenerations<string>({ ...PENDING_LIMITS, maxEntries: 2 });
		const done = work<string>();
		const held = store.join('a', done.start, uncertain).held;
		done.resolve('a');
		await held.done;
		store.join('b', work<string>().start, uncertain);
		const again = jest.fn();
		expect(store.join('a', again, uncertain)).toEqual({ held, joined: true });
		expect(again).not.toHaveBeenCalled();
	});
});

const answer = { body: { ok: true, turn_id: 't_1' }, status: 200, requestId: 'req_1' };

describe('RunMemory', () => {
	it('keeps records per run and item in the store, and tells runs apart', () => {
		const store: Record<string, unknown> = {};
		const first = new RunMemory(store, 0, 'e1');
		first.remember(1, { digest: 'd1', fingerprint: 'f1' }, { kind: 'generated', answer });
		expect(first.recall(1)).toEqual({
			kind: 'generated',
			answer,
			digest: 'd1',
			fingerprint: 'f1',
			executionId: 'e1',
		});
		expect(first.recall(0)).toBeUndefined();
		expect(new RunMemory(store, 1, 'e1').recall(1)).toBeUndefined();
		// A retried execution reads the copy of the store under its own id.
		const copy = JSON.parse(JSON.stringify(store)) as Record<string, unknown>;
		expect(new RunMemory(copy, 0, 'e2').recall(1)?.executionId).toBe('e1');
		expect(Object.keys(store)).toEqual([MEMORY_KEY]);
	});

	it("counts identical asks across the node's runs: a try of a run counts from where it started", () => {
		const store: Record<string, unknown> = {};
		const first = new RunMemory(store, 0, 'e1');
		expect(first.askedBefore()).toEqual({});
		first.asked({}, { d1: 2 });
		// Retry On Fail (same run index): from where run 0 started; the next run: after it.
		expect(new RunMemory(store, 0, 'e1').askedBefore()).toEqual({});
		const second = new RunMemory(store, 1, 'e1');
		expect(second.askedBefore()).toEqual({ d1: 2 });
		second.asked({ d1: 2 }, { d1: 3 });
		// A loop re-run under a shifted run index after a crash (n8n's recovery) counts on too.
		expect(new RunMemory(store, 5, 'e1').askedBefore()).toEqual({ d1: 3 });
	});

	it("finds an earlier run's uncertain record of the same ask in this execution only", () => {
		const store: Record<string, unknown> = {};
		const failure = {
			code: 'timeout' as const,
			charge: 'may_have_been_charged' as const,
			reason: 'x',
		};
		new RunMemory(store, 0, 'e1').remember(
			0,
			{ digest: 'd1', fingerprint: 'f' },
			{ kind: 'uncertain', failure },
		);
		expect(new RunMemory(store, 1, 'e1').earlierUncertain('d1', 'f')?.kind).toBe('uncertain');
		expect(new RunMemory(store, 1, 'e1').earlierUncertain('d2', 'f')).toBeUndefined();
		expect(new RunMemory(store, 1, 'e1').earlierUncertain('d1', 'g')).toBeUndefined(); // another account
		expect(new RunMemory(store, 0, 'e1').earlierUncertain('d1', 'f')).toBeUndefined(); // its own run
		expect(new RunMemory(store, 1, 'e2').earlierUncertain('d1', 'f')).toBeUndefined();
	});

	it('forgets earlier runs, never the current or later ones', () => {
		const store: Record<string, unknown> = {};
		for (const run of [0, 1, 2])
			new RunMemory(store, run, 'e1').remember(
				0,
				{ digest: 'd', fingerprint: 'f' },
				{ kind: 'generated', answer },
			);
		new RunMemory(store, 1, 'e1').forgetEarlierRuns();
		expect(Object.keys(store[MEMORY_KEY] as object)).toEqual(['1', '2']);
	});

	it('starts afresh over a store value that is not its own', () => {
		const store: Record<string, unknown> = { [MEMORY_KEY]: 'garbage' };
		const memory = new RunMemory(store, 0, 'e1');
		expect(memory.recall(0)).toBeUndefined();
		memory.remember(
			0,
			{ digest: 'd', fingerprint: 'f' },
			{
				kind: 'refused',
				failure: { code: 'invalid_request', charge: 'not_charged', reason: 'what failed' },
			},
		);
		expect(memory.recall(0)?.kind).toBe('refused');
	});
});

describe('the count of identical asks, as saved', () => {
	it("keeps the counts after the run and only what this run changed: a try counts from the run's start", () => {
		const store: Record<string, unknown> = {};
		const earlier = Object.fromEntries(Array.from({ length: 1_000 }, (_u, i) => [`ask ${i}`, 1]));
		new RunMemory(store, 0, 'e1').asked({}, earlier);
		const run = new RunMemory(store, 1, 'e1');
		const before = run.askedBefore();
		run.asked(before, { ...before, 'ask 0': 2, 'ask new': 1 });
		const saved = store.imagePackAsked as { changed: Record<string, number> };
		expect(saved.changed).toEqual({ 'ask 0': 1, 'ask new': 0 });
		// Retry On Fail: the same run again counts from where it started.
		expect(new RunMemory(store, 1, 'e1').askedBefore()).toEqual(earlier);
		// The next run counts on.
		expect(new RunMemory(store, 2, 'e1').askedBefore()).toMatchObject({ 'ask 0': 2, 'ask new': 1 });
	});
});
