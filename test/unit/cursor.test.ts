/**
 * The trigger's cursor module, exhaustively: plain cases, then seeded randomized runs against a
 * model of the API (global id sequence, several accounts, out-of-order commits within the
 * contract's overlap, many versions per pack), checking exactly-once, order and size.
 */
import {
	DEFAULT_OVERLAP,
	MAX_OVERLAP,
	MAX_SEEN,
	PAGE_LIMIT,
	addPage,
	baselineSince,
	baselineState,
	dedupeKey,
	findNewest,
	finishPoll,
	freshRecords,
	hash53,
	initialState,
	readState,
	startPoll,
	type CursorState,
	type ListPage,
	type PublicationRecord,
} from '../../nodes/ImagePack/shared/cursor';
import { mulberry32 } from '../harness/polling';

function upperBound(list: PublicationRecord[], id: number): number {
	let lo = 0;
	let hi = list.length;
	while (lo < hi) {
		const mid = (lo + hi) >> 1;
		if (list[mid].id <= id) lo = mid + 1;
		else hi = mid;
	}
	return lo;
}

const rec = (id: number, pack = `pk_${id}`, version = 1): PublicationRecord => ({
	id,
	pack_id: pack,
	version,
});

/** An in-memory model of the publication list (§4.2), global ids, commits possibly out of order. */
class Model {
	nextId = 1;
	readonly pending = new Map<number, PublicationRecord & { account: string }>();
	readonly visible: Array<PublicationRecord & { account: string }> = [];
	readonly byAccount = new Map<string, PublicationRecord[]>();
	readonly versions = new Map<string, number>();
	maxVisible = 0;
	requests = 0;

	constructor(readonly overlap = DEFAULT_OVERLAP) {}

	allocate(account: string, pack?: string): number {
		const packId = pack ?? `pk_${account}_${this.nextId}`;
		const version = (this.versions.get(packId) ?? 0) + 1;
		this.versions.set(packId, version);
		const id = this.nextId++;
		this.pending.set(id, { id, pack_id: packId, version, account });
		return id;
	}

	/**
	 * Makes `id` visible. Keeps the contract: every id still pending stays within `overlap` of the
	 * newest visible id, so older pending ids that would fall out are committed first.
	 */
	commit(id: number): void {
		const limit = Math.max(this.maxVisible, id) - this.overlap;
		for (const other of [...this.pending.keys()]) {
			if (other !== id && other <= limit) this.reveal(other);
		}
		this.reveal(id);
	}

	private reveal(id: number): void {
		const record = this.pending.get(id);
		if (!record) return;
		this.pending.delete(id);
		this.visible.push(record);
		const { account, ...publication } = record;
		const list = this.byAccount.get(account) ?? [];
		this.byAccount.set(account, list);
		list.splice(upperBound(list, id), 0, publication);
		this.maxVisible = Math.max(this.maxVisible, id);
	}

	list(account: string, since: number, limit: number): ListPage {
		this.requests++;
		const list = this.byAccount.get(account) ?? [];
		const from = upperBound(list, since);
		const items = list.slice(from, from + limit);
		return {
			items,
			next_since_id: items.length ? items[items.length - 1].id : since,
			reread_overlap: this.overlap,
		};
	}

	visibleOf(account: string): PublicationRecord[] {
		return this.byAccount.get(account) ?? [];
	}

	/** Test-only: makes `id` visible without the contract's ordering (to show its limit). */
	forceVisible(id: number): void {
		this.reveal(id);
	}
}

interface Driver {
	state: CursorState;
	emitted: PublicationRecord[];
	batches: PublicationRecord[][];
}

/** One poll as the node runs it: page while full (bounded), then deliver `emitLimit` of them. */
function poll(
	model: Model,
	account: string,
	driver: Driver,
	maxPages = 50,
	emitLimit?: number,
	between?: () => void,
) {
	let run = startPoll(driver.state);
	for (let pages = 0; pages < maxPages; pages++) {
		if (pages > 0) between?.();
		const result = addPage(run, model.list(account, run.nextSince, PAGE_LIMIT));
		run = result.run;
		if (result.next === null) break;
	}
	const fresh = freshRecords(run);
	const count = emitLimit === undefined ? fresh.length : Math.min(emitLimit, fresh.length);
	driver.state = finishPoll(run, count);
	const batch = fresh.slice(0, count);
	if (batch.length) driver.batches.push(batch);
	driver.emitted.push(...batch);
	return batch;
}

function expectExactlyOnce(model: Model, account: string, driver: Driver) {
	const want = model.visibleOf(account).map((r) => r.id);
	const got = driver.emitted.map((r) => r.id);
	expect(new Set(got).size).toBe(got.length);
	expect([...got].sort((a, b) => a - b)).toEqual(want);
	for (const batch of driver.batches) {
		expect(batch.map((r) => r.id)).toEqual([...batch.map((r) => r.id)].sort((a, b) => a - b));
	}
}

const size = (state: CursorState) => Buffer.byteLength(JSON.stringify(state));

describe('dedupeKey and hashing', () => {
	it('is (pack_id, version)', () => {
		expect(dedupeKey('pk_1', 2)).toBe('pk_1@2');
		expect(dedupeKey('pk_1', 2)).not.toBe(dedupeKey('pk_1', 3));
		expect(dedupeKey('pk_12', 3)).not.toBe(dedupeKey('pk_1', 23));
	});

	it('hashes long keys to a short, stable form', () => {
		const long = 'pk_' + 'x'.repeat(200);
		expect(dedupeKey(long, 1)).toBe(dedupeKey(long, 1));
		expect(dedupeKey(long, 1)).not.toBe(dedupeKey(long, 2));
		expect(dedupeKey(long, 1).length).toBeLessThanOrEqual(13);
		expect(hash53('a')).not.toBe(hash53('b'));
	});
});

describe('readState', () => {
	const state: CursorState = { ...initialState('q', 10), seen: { 'pk_1@1': 11 }, cursor: 11 };

	it('round-trips through JSON', () => {
		expect(readState(JSON.parse(JSON.stringify(state)), 'q')).toEqual(state);
	});

	it('starts afresh for another query key, another version or damaged data', () => {
		expect(readState(state, 'other')).toBeUndefined();
		expect(readState({ ...state, v: 2 }, 'q')).toBeUndefined();
		expect(readState(undefined, 'q')).toBeUndefined();
		expect(readState({}, 'q')).toBeUndefined();
		expect(readState({ ...state, start: -1 }, 'q')).toBeUndefined();
		expect(readState({ ...state, cursor: 5 }, 'q')).toBeUndefined();
		expect(readState({ ...state, seen: [] }, 'q')).toBeUndefined();
		expect(readState({ ...state, seen: { a: 'x' } }, 'q')).toBeUndefined();
	});

	it('drops dedupe entries at or below start and caps the overlap', () => {
		const read = readState({ ...state, seen: { a: 10, b: 12 }, overlap: 5000 }, 'q')!;
		expect(read.seen).toEqual({ b: 12 });
		expect(read.overlap).toBe(MAX_OVERLAP);
	});
});

describe('one poll, plain inputs', () => {
	const page = (ids: number[], next?: number, overlap = 50): ListPage => ({
		items: ids.map((id) => rec(id)),
		next_since_id: next ?? (ids.length ? ids[ids.length - 1] : 0),
		reread_overlap: overlap,
	});

	it('delivers everything new, then starts the next poll at cursor - overlap', () => {
		const run = addPage(startPoll(initialState('q', 0)), page([3, 7, 9]), 200);
		expect(run.fresh.map((r) => r.id)).toEqual([3, 7, 9]);
		expect(run.next).toBeNull();
		const state = finishPoll(run.run);
		expect(state).toMatchObject({ start: 0, cursor: 9, rev: 1 });
		expect(Object.values(state.seen)).toEqual([3, 7, 9]);
	});

	it('dedupes re-read records and keeps only keys above start', () => {
		let state = initialState('q', 0);
		const ids = Array.from({ length: 100 }, (_, i) => i + 1);
		state = finishPoll(addPage(startPoll(state), page(ids)).run);
		expect(state.start).toBe(50);
		expect(Object.keys(state.seen)).toHaveLength(50);
		const again = addPage(startPoll(state), page(ids.filter((id) => id > 50)));
		expect(again.fresh).toEqual([]);
		expect(finishPoll(again.run)).toBe(state); // unchanged: same object, no revision bump
	});

	it('finds a late commit inside the window', () => {
		let state = finishPoll(addPage(startPoll(initialState('q', 0)), page([1, 2, 4])).run);
		const late = addPage(startPoll(state), page([1, 2, 3, 4]));
		expect(late.fresh.map((r) => r.id)).toEqual([3]);
		state = finishPoll(late.run);
		expect(state.seen['pk_3@1']).toBe(3);
	});

	it('follows next_since_id on a full page and re-reads the last boundary next poll', () => {
		const limit = 3;
		let run = startPoll(initialState('q', 0));
		let step = addPage(run, page([1, 2, 3]), limit);
		expect(step.next).toBe(3);
		run = step.run;
		expect(run.nextSince).toBe(3);
		step = addPage(run, page([4, 5], 5, 2), limit);
		expect(step.next).toBeNull();
		const state = finishPoll(step.run);
		// min(last next_since_id 5, last request's since 3) - overlap 2
		expect(state.start).toBe(1);
		expect(state.cursor).toBe(5);
	});

	it('an empty account keeps the state unchanged', () => {
		const state = initialState('q', 0);
		expect(finishPoll(addPage(startPoll(state), page([], 0)).run)).toBe(state);
		expect(finishPoll(startPoll(state))).toBe(state);
	});

	it('ignores malformed and out-of-range items, sorts items', () => {
		const state = initialState('q', 10);
		const step = addPage(startPoll(state), {
			items: [rec(13), rec(5), { id: 'x' } as never, rec(12), { id: 14, pack_id: 7 } as never],
			next_since_id: 13,
		});
		expect(step.fresh.map((r) => r.id)).toEqual([12, 13]);
	});

	it('a next_since_id that does not advance on a full page stops the poll', () => {
		const step = addPage(
			startPoll(initialState('q', 0)),
			{ items: [rec(1), rec(2)], next_since_id: 0 },
			2,
		);
		expect(step.next).toBe(2);
		const stuck = addPage(startPoll(initialState('q', 5)), { items: [], next_since_id: 1 }, 0);
		expect(stuck.next).toBeNull();
	});

	it('same (pack_id, version) under two ids is delivered once', () => {
		const step = addPage(startPoll(initialState('q', 0)), {
			items: [rec(1, 'pk_a', 1), rec(2, 'pk_a', 1), rec(3, 'pk_a', 2)],
			next_since_id: 3,
		});
		expect(step.fresh.map((r) => r.id)).toEqual([1, 3]);
	});

	it('uses the overlap the API announces, capped', () => {
		const ids = Array.from({ length: 150 }, (_, i) => i + 1);
		expect(finishPoll(addPage(startPoll(initialState('q', 0)), page(ids, 150, 10)).run).start).toBe(
			140,
		);
		expect(
			finishPoll(addPage(startPoll(initialState('q', 0)), page(ids, 150, 1e9)).run).start,
		).toBe(150 - MAX_OVERLAP);
		expect(finishPoll(addPage(startPoll(initialState('q', 0)), page(ids, 150, -3)).run).start).toBe(
			150 - DEFAULT_OVERLAP,
		);
	});

	it('partial delivery cuts the poll below the first record not delivered', () => {
		const run = addPage(startPoll(initialState('q', 0)), page([2, 4, 6, 8])).run;
		const state = finishPoll(run, 2);
		expect(state.cursor).toBe(5);
		expect(Object.values(state.seen)).toEqual([2, 4]);
		const next = addPage(startPoll(state), page([2, 4, 6, 8]));
		expect(next.fresh.map((r) => r.id)).toEqual([6, 8]);
		const none = finishPoll(run, 0);
		expect(none.seen).toEqual({});
		expect(addPage(startPoll(none), page([2, 4, 6, 8])).fresh.map((r) => r.id)).toEqual([
			2, 4, 6, 8,
		]);
	});

	it('startId: nothing at or below it is ever delivered', () => {
		let state = initialState('q', 100);
		const step = addPage(startPoll(state), page([101, 150]));
		state = finishPoll(step.run);
		expect(step.fresh.map((r) => r.id)).toEqual([101, 150]);
		expect(state.start).toBe(100); // never below the start id
	});
});

describe('baseline for "now"', () => {
	it('treats what is there as delivered and catches late commits inside the window', () => {
		const model = new Model();
		for (let i = 0; i < 120; i++) model.commit(model.allocate('a'));
		const late = model.allocate('a');
		model.commit(model.allocate('a'));
		const head = model.maxVisible;
		const since = baselineSince(head);
		const state = baselineState('now', since, model.list('a', since, PAGE_LIMIT));
		const driver: Driver = { state, emitted: [], batches: [] };
		expect(poll(model, 'a', driver)).toEqual([]);
		model.commit(late);
		model.commit(model.allocate('a'));
		expect(poll(model, 'a', driver).map((r) => r.id)).toEqual([late, head + 1]);
	});
});

describe('findNewest', () => {
	it('finds the newest with O(log max id) probes', async () => {
		for (const ids of [
			[1],
			[5],
			[1, 2, 3],
			[7, 100000],
			Array.from({ length: 1000 }, (_, i) => i * 97 + 3),
		]) {
			let probes = 0;
			const newest = await findNewest(async (since) => {
				probes++;
				const id = ids.find((x) => x > since);
				return id === undefined ? null : rec(id);
			});
			const max = ids[ids.length - 1];
			expect(newest?.id).toBe(max);
			expect(probes).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(max + 1)) + 3);
		}
	});

	it('returns null for an account without publications', async () => {
		expect(await findNewest(async () => null)).toBeNull();
	});

	it('randomized: always the newest, request count logarithmic', async () => {
		const random = mulberry32(7);
		for (let round = 0; round < 200; round++) {
			const count = 1 + Math.floor(random() * 50);
			const span = 1 + Math.floor(random() * 1_000_000);
			const ids = [
				...new Set(Array.from({ length: count }, () => 1 + Math.floor(random() * span))),
			].sort((a, b) => a - b);
			let probes = 0;
			const newest = await findNewest(async (since) => {
				probes++;
				const id = ids.find((x) => x > since);
				return id === undefined ? null : rec(id);
			});
			expect(newest?.id).toBe(ids[ids.length - 1]);
			expect(probes).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(ids[ids.length - 1] + 1)) + 3);
		}
	});
});

describe('randomized runs against the API model (seeded)', () => {
	const seeds = Array.from({ length: 16 }, (_, i) => 1000 + i);

	it.each(seeds)('seed %i: exactly once, ascending batches, bounded state', (seed) => {
		const random = mulberry32(seed);
		const model = new Model(DEFAULT_OVERLAP);
		const accounts = ['a', 'b', 'c'];
		const packs = Array.from({ length: 8 }, (_, i) => `pk_a_fixed_${i}`);
		const driver: Driver = { state: initialState('q', 0), emitted: [], batches: [] };
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
			}
		};
		for (let step = 0; step < 300; step++) {
			const actions = Math.floor(random() * 6);
			for (let i = 0; i < actions; i++) act();
			const maxPages = 1 + Math.floor(random() * 4);
			const emitLimit = random() < 0.2 ? Math.floor(random() * 50) : undefined;
			// A few commits between page requests (below the documented burst limit).
			poll(model, 'a', driver, maxPages, emitLimit, () => {
				for (let i = Math.floor(random() * 3); i > 0; i--) act(false);
			});
			if (random() < 0.1) driver.state = readState(JSON.parse(JSON.stringify(driver.state)), 'q')!;
			expect(size(driver.state)).toBeLessThan(16 * 1024);
			expect(Object.keys(driver.state.seen).length).toBeLessThanOrEqual(MAX_OVERLAP + PAGE_LIMIT);
		}
		// Drain: commit everything pending, then poll until quiet.
		for (const id of [...model.pending.keys()]) model.commit(id);
		for (let i = 0; i < 200 && poll(model, 'a', driver, 50).length; i++);
		poll(model, 'a', driver, 50);
		expectExactlyOnce(model, 'a', driver);
	});

	it('a 10,000-publication backlog drains at one list request per 200 records', () => {
		const model = new Model();
		for (let i = 0; i < 10_000; i++) model.commit(model.allocate('a'));
		const driver: Driver = { state: initialState('q', 0), emitted: [], batches: [] };
		poll(model, 'a', driver, 60);
		expect(driver.emitted).toHaveLength(10_000);
		expect(model.requests).toBeLessThanOrEqual(Math.ceil(10_000 / 200) + 2);
		expect(size(driver.state)).toBeLessThan(16 * 1024);
		// The next poll with nothing new costs one request.
		const before = model.requests;
		expect(poll(model, 'a', driver)).toEqual([]);
		expect(model.requests - before).toBe(1);
	});

	it('bounded polls drain a backlog over several polls, losing nothing', () => {
		const model = new Model();
		for (let i = 0; i < 3000; i++) model.commit(model.allocate(i % 3 ? 'a' : 'b'));
		const driver: Driver = { state: initialState('q', 0), emitted: [], batches: [] };
		for (let i = 0; i < 40; i++) poll(model, 'a', driver, 2, 150);
		expectExactlyOnce(model, 'a', driver);
	});

	it('static data stays under 16 KiB in the worst case (long pack ids, huge ids, max overlap)', () => {
		let state = initialState('x'.repeat(40), 2 ** 52);
		const base = 2 ** 52;
		const items = Array.from({ length: 2000 }, (_, i) =>
			rec(base + i + 1, `pk_${'y'.repeat(14)}${i}`, 1),
		);
		// A server that announces a huge overlap and returns a full page every time.
		let run = startPoll(state);
		for (let p = 0; p < 10; p++) {
			const chunk = items.filter((r) => r.id > run.nextSince).slice(0, PAGE_LIMIT);
			run = addPage(run, {
				items: chunk,
				next_since_id: chunk[chunk.length - 1].id,
				reread_overlap: 1e6,
			}).run;
		}
		state = finishPoll(run);
		expect(Object.keys(state.seen).length).toBeLessThanOrEqual(MAX_SEEN);
		expect(size(state)).toBeLessThan(16 * 1024);
	});

	it('regression: a late commit below the boundary followed inside one poll is found next poll', () => {
		const model = new Model(DEFAULT_OVERLAP);
		const ids = Array.from({ length: 201 }, () => model.allocate('a'));
		const late = ids[189];
		for (const id of ids) if (id !== late) model.commit(id);
		const driver: Driver = { state: initialState('q', 0), emitted: [], batches: [] };
		// Page 1 is full (200 records up to 201) and is followed directly; before page 2 the late
		// record commits, then 59 more (well under the documented burst limit).
		poll(model, 'a', driver, 50, undefined, () => {
			model.commit(late);
			for (let i = 0; i < 59; i++) model.commit(model.allocate('a'));
		});
		expect(driver.emitted.map((r) => r.id)).not.toContain(late);
		poll(model, 'a', driver);
		expectExactlyOnce(model, 'a', driver);
	});

	it('documented limit: a late commit further than the overlap below the head is lost', () => {
		const model = new Model(DEFAULT_OVERLAP);
		const driver: Driver = { state: initialState('q', 0), emitted: [], batches: [] };
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
