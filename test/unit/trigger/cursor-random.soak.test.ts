/**
 * The trigger's cursor in seeded randomized runs against the model of the API (global id sequence,
 * several accounts, out-of-order commits within the announced overlap, publications listed twice),
 * catch-up costs and the size of the stored state.
 */
import { DEFAULT_OVERLAP, PAGE_LIMIT } from '../../../nodes/ImagePack/shared/publications';
import { addPage, finishPoll, startPoll } from '../../../nodes/ImagePack/trigger/cursor';
import {
	MAX_OVERLAP,
	MEMORY_KEYS,
	TOKEN_LENGTH,
	type CursorState,
	initialState,
	queryKey,
} from '../../../nodes/ImagePack/trigger/state';
import { mulberry32 } from '../../harness/polling';
import { Model, expectExactlyOnce, newDriver, poll, rec, restart, size } from './cursorModel';

describe('randomized runs against the API model (seeded)', () => {
	/** Seeds, each with the overlap its server announces, and the most its state may take. */
	const runs = [
		...Array.from({ length: 12 }, (_, i) => [1000 + i, DEFAULT_OVERLAP, 16 * 1024] as const),
		...Array.from({ length: 3 }, (_, i) => [2000 + i, 400, 16 * 1024] as const),
		...Array.from({ length: 3 }, (_, i) => [3000 + i, 1000, 20 * 1024] as const),
	];

	it.each(runs)(
		'seed %i, overlap %i: exactly once (also publications listed twice), ascending batches, state < %i bytes',
		(seed, overlap, maxBytes) => {
			const random = mulberry32(seed);
			const model = new Model(overlap);
			const accounts = ['a', 'b', 'c'];
			const packs = Array.from({ length: 8 }, (_, i) => `pk_a_fixed_${i}`);
			const driver = newDriver();
			const act = (burst = true) => {
				const roll = random();
				if (roll < 0.45) {
					const account = accounts[Math.floor(random() * accounts.length)];
					const pack =
						account === 'a' && random() < 0.4
							? packs[Math.floor(random() * packs.length)]
							: undefined;
					const id = model.allocate(account, pack);
					if (random() < 0.7) model.commit(id);
				} else if (roll < 0.7 && model.pending.size) {
					const ids = [...model.pending.keys()];
					model.commit(ids[Math.floor(random() * ids.length)]);
				} else if (roll < 0.75 && burst) {
					const count = Math.floor(random() * 400);
					for (let i = 0; i < count; i++) model.commit(model.allocate(random() < 0.8 ? 'a' : 'b'));
				} else if (roll < 0.85) {
					// The same publication again under a new id, 1 to 400 ids after the first one.
					const span = [1, 3, 20, 50, 51, 120, 400][Math.floor(random() * 7)];
					const near: number[] = [];
					for (let id = Math.max(1, model.nextId - span); id < model.nextId; id++)
						if (model.all.get(id)!.account === 'a') near.push(id);
					if (!near.length) return;
					const copy = model.duplicate(near[Math.floor(random() * near.length)]);
					if (random() < 0.6) model.commit(copy);
				}
			};
			for (let step = 0; step < 300; step++) {
				const actions = Math.floor(random() * 6);
				for (let i = 0; i < actions; i++) act();
				const maxPages = 1 + Math.floor(random() * 4);
				const emitLimit = random() < 0.2 ? Math.floor(random() * 50) : undefined;
				// Commits between page requests, bulk publishes of up to 400 included.
				poll(model, 'a', driver, maxPages, emitLimit, () => {
					for (let i = Math.floor(random() * 3); i > 0; i--) act(random() < 0.3);
				});
				if (random() < 0.1) restart(driver);
				expect(size(driver.state)).toBeLessThan(maxBytes);
			}
			// Drain: commit everything pending, then poll until quiet (a poll that re-reads a large
			// overlap may deliver nothing and still move the cursor on).
			model.commitAll();
			for (let i = 0; i < 200; i++) {
				const before = driver.state;
				if (!poll(model, 'a', driver, 50).length && driver.state === before) break;
			}
			expectExactlyOnce(model, 'a', driver);
		},
	);

	it('a 10,000-publication backlog drains at one list request per 200 records', () => {
		const model = new Model();
		for (let i = 0; i < 10_000; i++) model.commit(model.allocate('a'));
		const driver = newDriver();
		poll(model, 'a', driver, 60);
		expect(driver.emitted).toHaveLength(10_000);
		expect(model.requests).toBeLessThanOrEqual(Math.ceil(10_000 / 200) + 2);
		expect(size(driver.state)).toBeLessThan(16 * 1024);
		// The next poll with nothing new costs one request.
		const before = model.requests;
		expect(poll(model, 'a', driver)).toEqual([]);
		expect(model.requests - before).toBe(1);
	});

	it('Max Publications per Poll 100: a 10,000-publication backlog at one list request per poll', () => {
		const model = new Model();
		for (let i = 0; i < 10_000; i++) model.commit(model.allocate(i % 4 ? 'a' : 'b'));
		const driver = newDriver();
		let polls = 0;
		while (poll(model, 'a', driver, 50, 100).length) polls++;
		expect(polls).toBe(75);
		expect(driver.batches.every((batch) => batch.length === 100)).toBe(true);
		expect(model.requests).toBeLessThanOrEqual(polls + 2);
		expectExactlyOnce(model, 'a', driver);
	});

	it.each([400, 1000])(
		'overlap %i: a poll re-reads about the overlap; a catch-up costs about overlap / 200 + 1 requests per poll',
		(overlap) => {
			const model = new Model(overlap);
			for (let i = 0; i < 10_000; i++) model.commit(model.allocate(i % 4 ? 'a' : 'b'));
			const driver = newDriver();
			let polls = 0;
			while (poll(model, 'a', driver, 50, 100).length) polls++;
			expect(polls).toBe(75);
			expect(model.requests / polls).toBeLessThanOrEqual(Math.ceil(overlap / PAGE_LIMIT) + 2);
			expectExactlyOnce(model, 'a', driver);
			const before = model.requests;
			poll(model, 'a', driver); // nothing new: the overlap is read again
			expect(model.requests - before).toBeLessThanOrEqual(
				Math.ceil((overlap * 3) / 4 / PAGE_LIMIT) + 1,
			);
		},
	);

	it('bounded polls drain a backlog over several polls, losing nothing', () => {
		const model = new Model();
		for (let i = 0; i < 3000; i++) model.commit(model.allocate(i % 3 ? 'a' : 'b'));
		const driver = newDriver();
		for (let i = 0; i < 40; i++) poll(model, 'a', driver, 2, 150);
		expectExactlyOnce(model, 'a', driver);
	});

	/**
	 * The state after polls over a server where this account owns every `stride`-th id (the densest
	 * runs of handled ids), with a full memory, long pack ids and ids near 2^53.
	 */
	function worstState(overlap: number, stride: number, maxPerPoll?: number): CursorState {
		const base = Number.MAX_SAFE_INTEGER - 100_000_000;
		let state = initialState(queryKey('id', base, 'https://api.example.com'), base);
		for (let polls = 0; polls < 10; polls++) {
			const run = startPoll(state);
			for (let pages = 0; pages < 6; pages++) {
				const since = run.nextSince;
				const first = since + stride - ((since - base) % stride);
				const items = Array.from({ length: PAGE_LIMIT }, (_, i) =>
					rec(first + stride * i, `pk_${'y'.repeat(40)}${first + stride * i}`),
				);
				addPage(run, { items, next_since_id: items[items.length - 1].id, reread_overlap: overlap });
				if (maxPerPoll && run.fresh.length >= maxPerPoll) break;
			}
			state = finishPoll(run, maxPerPoll && Math.min(maxPerPoll, run.fresh.length));
		}
		return state;
	}

	it.each([DEFAULT_OVERLAP, 400, 1000, MAX_OVERLAP])(
		'static data at overlap %i stays under 16 KiB in the worst case (full memory, dense runs, ids near 2^53)',
		(overlap) => {
			for (const stride of [2, 3]) // 1: the account's ids alone leave no runs
				for (const maxPerPoll of [undefined, 100, 1000]) {
					const state = worstState(overlap, stride, maxPerPoll);
					expect(state.delivered.length).toBe(MEMORY_KEYS * TOKEN_LENGTH);
					const stored = JSON.stringify({ 'node:Image Pack Trigger': state });
					// over 12 polls of 10 pages at most 9.0 KiB at 50, 11.3 at 400, 11.9 at 1,000, 12.9 at 5,000
					expect(Buffer.byteLength(stored)).toBeLessThan(overlap <= 50 ? 9.5 * 1024 : 16 * 1024);
				}
		},
	);

	it('regression: a late commit below the boundary followed inside one poll is found next poll', () => {
		const model = new Model(DEFAULT_OVERLAP);
		const ids = Array.from({ length: 201 }, () => model.allocate('a'));
		const late = ids[189];
		for (const id of ids) if (id !== late) model.commit(id);
		const driver = newDriver();
		// Page 1 is full (200 records up to 201) and is followed directly; before page 2 the late
		// record commits, then 59 more.
		poll(model, 'a', driver, 50, undefined, () => {
			model.commit(late);
			for (let i = 0; i < 59; i++) model.commit(model.allocate('a'));
		});
		expect(driver.emitted.map((r) => r.id)).not.toContain(late);
		poll(model, 'a', driver);
		expectExactlyOnce(model, 'a', driver);
	});

	it.each([151, 300, 1000])(
		'a late commit below page 1 and then a bulk publish of %i before page 2: delivered once',
		(bulk) => {
			const model = new Model(DEFAULT_OVERLAP);
			const ids = Array.from({ length: 201 }, () => model.allocate('a'));
			const late = ids[170]; // within the overlap of the newest visible id (201)
			for (const id of ids) if (id !== late) model.commit(id);
			const driver = newDriver();
			poll(model, 'a', driver, 50, undefined, () => {
				if (model.pending.has(late)) {
					model.commit(late);
					for (let i = 0; i < bulk; i++) model.commit(model.allocate('a'));
				}
			});
			for (let i = 0; i < 10; i++) poll(model, 'a', driver);
			expect(driver.emitted.map((r) => r.id)).toContain(late);
			expectExactlyOnce(model, 'a', driver);
		},
	);

	it('documented limit: a late commit further than the overlap below the head is lost', () => {
		const model = new Model(DEFAULT_OVERLAP);
		const driver = newDriver();
		const late = model.allocate('a');
		for (let i = 0; i < 200; i++) model.allocate('a');
		// Break the contract on purpose: make the newer ones visible without committing `late`.
		for (const id of [...model.pending.keys()].filter((id) => id !== late)) model.forceVisible(id);
		poll(model, 'a', driver);
		model.commit(late);
		poll(model, 'a', driver);
		expect(driver.emitted.map((r) => r.id)).not.toContain(late);
	});
});
