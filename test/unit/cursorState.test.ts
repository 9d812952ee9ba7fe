/** The trigger's stored state: key hashes, the runs of handled ids, reading and migrating it. */
import {
	MAX_OVERLAP,
	MEMORY_KEYS,
	STATE_VERSION,
	TOKEN_LENGTH,
	type CursorState,
	decodeRuns,
	dedupeKey,
	encodeRuns,
	hash53,
	initialState,
	readState,
} from '../../nodes/ImagePack/shared/cursorState';
import { mulberry32 } from '../harness/polling';
import { Model, expectExactlyOnce, keyOf, newDriver, poll } from './cursorModel';

describe('dedupeKey and hashing', () => {
	it('is (pack_id, version), hashed to a fixed width', () => {
		expect(dedupeKey('pk_1', 2)).toBe(dedupeKey('pk_1', 2));
		expect(dedupeKey('pk_1', 2)).not.toBe(dedupeKey('pk_1', 3));
		expect(dedupeKey('pk_12', 3)).not.toBe(dedupeKey('pk_1', 23));
		const long = 'pk_' + 'x'.repeat(200);
		expect(dedupeKey(long, 1)).not.toBe(dedupeKey(long, 2));
		for (const key of [dedupeKey('', 0), dedupeKey(long, 1), dedupeKey('pk_1', 1)]) {
			expect(key).toMatch(new RegExp(`^[A-Za-z0-9_-]{${TOKEN_LENGTH}}$`));
		}
		expect(hash53('a')).not.toBe(hash53('b'));
	});

	it('no collisions among 40,000 realistic keys', () => {
		const keys = new Set<string>();
		for (let i = 0; i < 10_000; i++) for (let v = 1; v <= 4; v++) keys.add(dedupeKey(`pk_${i}`, v));
		expect(keys.size).toBe(40_000);
	});
});

describe('runs of handled ids', () => {
	it('round-trips, dropping ids at or below the base', () => {
		expect(encodeRuns(10, [])).toBe('');
		expect(decodeRuns(10, '')).toEqual([]);
		const ids = [11, 12, 13, 20, 21, 1_000_000, Number.MAX_SAFE_INTEGER];
		expect(decodeRuns(10, encodeRuns(10, [5, 10, ...ids].reverse()))).toEqual(ids);
	});

	it('random sets round-trip', () => {
		const random = mulberry32(3);
		for (let round = 0; round < 300; round++) {
			const base = Math.floor(random() * 2 ** 40);
			const ids = new Set<number>();
			for (let i = Math.floor(random() * 300); i > 0; i--)
				ids.add(base + 1 + Math.floor(random() * (random() < 0.5 ? 400 : 2 ** 30)));
			const sorted = [...ids].sort((a, b) => a - b);
			expect(decodeRuns(base, encodeRuns(base, ids))).toEqual(sorted);
		}
	});

	it('a run of consecutive ids costs a few characters; an isolated id about two', () => {
		expect(
			encodeRuns(
				0,
				Array.from({ length: 1000 }, (_, i) => i + 1),
			),
		).toHaveLength(3);
		const alternate = Array.from({ length: 500 }, (_, i) => 2 * i + 2);
		expect(encodeRuns(0, alternate)).toHaveLength(1000);
	});

	it('damaged text is refused', () => {
		expect(decodeRuns(0, 'A')).toBeUndefined(); // a gap without its run
		expect(decodeRuns(0, 'AA')).toBeUndefined(); // a run of nothing
		expect(decodeRuns(0, 'A!')).toBeUndefined();
		expect(decodeRuns(0, 'Ag')).toBeUndefined(); // unfinished number
		expect(decodeRuns(0, `A${'_'.repeat(12)}B`)).toBeUndefined(); // too large
		expect(decodeRuns(0, encodeRuns(0, [1]).repeat(2))).toBeDefined();
	});
});

describe('readState', () => {
	const state: CursorState = {
		...initialState('q', 10),
		cursor: 30,
		handled: encodeRuns(10, [12, 13, 30]),
		delivered: dedupeKey('pk_0', 1),
	};

	it('round-trips through JSON', () => {
		expect(readState(JSON.parse(JSON.stringify(state)), 'q')).toEqual(state);
	});

	it('starts afresh for another query key, an unknown version or damaged data', () => {
		expect(readState(state, 'other')).toBeUndefined();
		expect(readState({ ...state, v: STATE_VERSION + 1 }, 'q')).toBeUndefined();
		expect(readState(undefined, 'q')).toBeUndefined();
		expect(readState({}, 'q')).toBeUndefined();
		expect(readState({ ...state, start: -1 }, 'q')).toBeUndefined();
		expect(readState({ ...state, cursor: 5 }, 'q')).toBeUndefined();
		expect(readState({ ...state, handled: 7 }, 'q')).toBeUndefined();
		expect(readState({ ...state, handled: 'A' }, 'q')).toBeUndefined();
		expect(readState({ ...state, delivered: 'abc' }, 'q')).toBeUndefined();
		expect(readState({ ...state, delivered: '"'.repeat(TOKEN_LENGTH) }, 'q')).toBeUndefined();
		expect(readState({ ...state, delivered: 7 }, 'q')).toBeUndefined();
	});

	it('caps the overlap and the memory', () => {
		const full = 'A'.repeat(TOKEN_LENGTH * (MEMORY_KEYS + 5));
		const read = readState({ ...state, overlap: MAX_OVERLAP + 1, delivered: full }, 'q')!;
		expect(read.overlap).toBe(MAX_OVERLAP);
		expect(read.delivered).toHaveLength(TOKEN_LENGTH * MEMORY_KEYS);
	});
});

describe('states saved by earlier releases', () => {
	it('version 1: same start; the window ids count as handled, its keys (plain and hashed) are remembered', () => {
		const longPack = 'pk_' + 'z'.repeat(30);
		const v1 = {
			v: 1,
			queryKey: 'q',
			start: 50,
			cursor: 100,
			overlap: 50,
			// version 1 keys: `pack@version`, or `#` + hash53 of it when longer than 24 characters
			seen: { 'pk_60@1': 60, [`#${hash53(`${longPack}@2`)}`]: 70, 'pk_40@1': 40 },
			rev: 9,
		};
		expect(readState(v1, 'q')).toEqual({
			v: STATE_VERSION,
			queryKey: 'q',
			start: 50,
			cursor: 100,
			overlap: 50,
			handled: encodeRuns(50, [60, 70]),
			delivered: dedupeKey('pk_40', 1) + dedupeKey('pk_60', 1) + dedupeKey(longPack, 2),
			rev: 9,
		});
		expect(readState({ ...v1, seen: { a: -1 } }, 'q')).toBeUndefined();
		expect(readState({ ...v1, queryKey: 'other' }, 'q')).toBeUndefined();
	});

	it('version 2: the window ids count as handled, memory then window keys are remembered', () => {
		const v2 = {
			v: 2,
			queryKey: 'q',
			start: 50,
			cursor: 100,
			overlap: 50,
			window: { [dedupeKey('pk_90', 1)]: 90, [dedupeKey('pk_60', 1)]: 60 },
			delivered: dedupeKey('pk_1', 1),
			rev: 4,
		};
		expect(readState(v2, 'q')).toMatchObject({
			v: STATE_VERSION,
			start: 50,
			handled: encodeRuns(50, [60, 90]),
			delivered: dedupeKey('pk_1', 1) + dedupeKey('pk_60', 1) + dedupeKey('pk_90', 1),
			rev: 4,
		});
		expect(readState({ ...v2, window: [] }, 'q')).toBeUndefined();
		expect(readState({ ...v2, window: { a: 'x' } }, 'q')).toBeUndefined();
		expect(readState({ ...v2, delivered: 'abc' }, 'q')).toBeUndefined();
	});

	it.each([1, 2])(
		'a version %i state saved by an earlier release continues without loss or redelivery',
		(version) => {
			// Saved after delivering ids 1..120 of account a (overlap 50): ids 71..120 in its window
			// (a repeat of id 80 at id 110); 121 commits late below 125, then more arrive.
			const model = new Model();
			for (let i = 0; i < 120; i++)
				model.commit(i === 109 ? model.duplicate(80) : model.allocate('a'));
			const window: Record<string, number> = {};
			for (const r of model.visibleOf('a'))
				if (r.id > 70) window[version === 1 ? keyOf(r) : dedupeKey(r.pack_id, r.version)] = r.id;
			const saved =
				version === 1
					? { v: 1, queryKey: 'q', start: 70, cursor: 120, overlap: 50, seen: window, rev: 3 }
					: {
							v: 2,
							queryKey: 'q',
							start: 70,
							cursor: 120,
							overlap: 50,
							window,
							delivered: '',
							rev: 3,
						};
			const late = model.allocate('a');
			for (let i = 0; i < 4; i++) model.commit(model.allocate('a'));
			const driver = newDriver(readState(JSON.parse(JSON.stringify(saved)), 'q'));
			expect(poll(model, 'a', driver).map((r) => r.id)).toEqual([122, 123, 124, 125]);
			model.commit(late);
			expect(poll(model, 'a', driver).map((r) => r.id)).toEqual([late]);
			// delivered before the upgrade: 1..120 but the repeat
			driver.emitted.unshift(...model.visibleOf('a').filter((r) => r.id <= 120 && r.id !== 110));
			expectExactlyOnce(model, 'a', driver);
		},
	);
});
