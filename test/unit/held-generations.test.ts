/**
 * The process-level stores of Generate as an MCP tool, alone: held generations (pending.ts: one
 * request per intent, handed out once, uncertain failures kept for retries, TTLs and the entry cap)
 * and Max Credits per Hour (hourlyCap.ts: synchronous reservation, settlement, the sliding hour).
 */
import { HOUR_MS, HourlyCaps } from '../../nodes/ImagePack/actions/image/generate/hourlyCap';
import {
	PENDING_LIMITS,
	PendingGenerations,
	generationKey,
} from '../../nodes/ImagePack/actions/image/generate/pending';

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

const uncertain = (error: unknown) => (error as { uncertain?: boolean }).uncertain === true;

describe('generationKey', () => {
	it('depends on the base URL, the API key and the body (any key order), and holds neither in clear', () => {
		const key = generationKey('https://a.example', 'sk_secret', { prompt: 'p', n: 1 });
		expect(key).toMatch(/^[0-9a-f]{16}$/);
		expect(generationKey('https://a.example', 'sk_secret', { n: 1, prompt: 'p' })).toBe(key);
		expect(generationKey('https://b.example', 'sk_secret', { prompt: 'p', n: 1 })).not.toBe(key);
		expect(generationKey('https://a.example', 'sk_other', { prompt: 'p', n: 1 })).not.toBe(key);
		expect(generationKey('https://a.example', 'sk_secret', { prompt: 'q', n: 1 })).not.toBe(key);
		expect(key).not.toContain('secret');
	});
});

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
		expect(await a.held.done).toEqual({ ok: true, answer: 'images' });
		// Finished, not collected: a repeat (or the handle) gets it without a request.
		expect(store.join('k', first.start, uncertain).held).toBe(a.held);
		expect(store.find(a.held.handle)).toBe(a.held);
		store.collected(a.held);
		// Collected: the same arguments are a new request; the handle is unknown.
		expect(store.find(a.held.handle)).toBeUndefined();
		const again = work<string>();
		expect(store.join('k', again.start, uncertain).joined).toBe(false);
		expect(again.start).toHaveBeenCalledTimes(1);
	});

	it('keeps an uncertain failure for retries (failedTtlMs), forgets a refusal at once', async () => {
		const store = new PendingGenerations<string>(PENDING_LIMITS, clock);
		const lost = work<string>();
		const held = store.join('lost', lost.start, uncertain).held;
		lost.reject({ uncertain: true });
		expect(await held.done).toMatchObject({ ok: false, uncertain: true });
		store.collected(held); // reported to a caller: still held for the next try
		expect(store.join('lost', jest.fn(), uncertain).held).toBe(held);
		now += PENDING_LIMITS.failedTtlMs + 1;
		expect(store.find(held.handle, 'lost')).toBeUndefined();

		const refused = work<string>();
		const refusal = store.join('refused', refused.start, uncertain).held;
		refused.reject({ uncertain: false });
		expect(await refusal.done).toMatchObject({ ok: false, uncertain: false });
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
		expect(store.find(held.handle)).toBe(held);
		now += 2;
		expect(store.find(held.handle)).toBeUndefined();
		now += 10 * HOUR_MS;
		expect(store.find(running.handle)).toBe(running);
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
		expect(store.find(b.handle)).toBeUndefined();
		expect(store.find(a.handle)).toBe(a);
		store.join('e', work<string>().start, uncertain);
		expect(store.size).toBe(3);
		expect(store.find(a.handle)).toBeUndefined();
	});

	it('finds by handle first, then by key, and never starts anything', () => {
		const store = new PendingGenerations<string>(PENDING_LIMITS, clock);
		const held = store.join('k', work<string>().start, uncertain).held;
		expect(store.find('gen_unknown', 'k')).toBe(held);
		expect(store.find('gen_unknown', 'other')).toBeUndefined();
		expect(store.size).toBe(1);
	});
});

describe('HourlyCaps', () => {
	let now = 0;
	const caps = () => new HourlyCaps(() => now);
	beforeEach(() => {
		now = 5 * HOUR_MS;
	});

	it('reserves synchronously up to the cap, per node, and refuses what would pass it', () => {
		const cap = caps();
		expect(cap.reserve('wf node', 12, 36).ok).toBe(true);
		expect(cap.reserve('wf node', 12, 36).ok).toBe(true);
		expect(cap.reserve('wf node', 12, 36).ok).toBe(true);
		const refused = cap.reserve('wf node', 12, 36);
		expect(refused).toEqual({ ok: false, spent: 36, freesInMs: HOUR_MS });
		expect(cap.reserve('wf other', 12, 36).ok).toBe(true);
	});

	it('settles with what was charged: a refund frees the reservation', () => {
		const cap = caps();
		const first = cap.reserve('n', 30, 40);
		if (!first.ok) throw new Error('reserved');
		expect(cap.reserve('n', 30, 40).ok).toBe(false);
		cap.settle(first.spend, 0);
		expect(cap.reserve('n', 30, 40).ok).toBe(true);
	});

	it('slides: credits come back an hour after they were spent, and the refusal says when', () => {
		const cap = caps();
		cap.reserve('n', 20, 40);
		now += 10 * 60_000;
		cap.reserve('n', 20, 40);
		const refused = cap.reserve('n', 20, 40);
		expect(refused).toEqual({ ok: false, spent: 40, freesInMs: 50 * 60_000 });
		now += 50 * 60_000 + 1;
		expect(cap.reserve('n', 20, 40).ok).toBe(true);
	});

	it('tracks at most maxNodes nodes (the least recently used is forgotten)', () => {
		const cap = new HourlyCaps(() => now, 2);
		cap.reserve('a', 10, 10);
		cap.reserve('b', 10, 10);
		cap.reserve('c', 10, 10);
		expect(cap.reserve('a', 10, 10).ok).toBe(true);
		expect(cap.reserve('c', 10, 10).ok).toBe(false);
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
