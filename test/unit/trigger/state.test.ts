/** The trigger's stored state: its query key, key hashes, the runs of handled ids, reading it. */
import {
	MAX_OVERLAP,
	MEMORY_KEYS,
	STATE_VERSION,
	TOKEN_LENGTH,
	type CursorState,
	decodeRuns,
	encodeRuns,
	initialState,
	keyToken,
	queryKey,
	readState,
	seenEmpty,
} from '../../../nodes/ImagePack/trigger/state';
import { finishPoll, addPage, startPoll } from '../../../nodes/ImagePack/trigger/cursor';
import { mulberry32 } from '../../harness/polling';

describe('queryKey', () => {
	it('names the start option, the start id and the server (case-insensitive)', () => {
		expect(queryKey('now', 0, 'https://A.example')).toBe(queryKey('now', 0, 'https://a.example'));
		expect(queryKey('now', 0, 'https://a.example')).not.toBe(
			queryKey('now', 0, 'https://b.example'),
		);
		expect(queryKey('id', 7, 'https://a.example')).not.toBe(queryKey('id', 8, 'https://a.example'));
		expect(queryKey('beginning', 7, 'x')).toBe(queryKey('beginning', 8, 'x'));
	});
});

describe('keyToken: a publication as the state remembers it', () => {
	it('is (pack_id, version), hashed to a fixed width', () => {
		expect(keyToken('pk_1', 2)).toBe(keyToken('pk_1', 2));
		expect(keyToken('pk_1', 2)).not.toBe(keyToken('pk_1', 3));
		expect(keyToken('pk_12', 3)).not.toBe(keyToken('pk_1', 23));
		const long = 'pk_' + 'x'.repeat(200);
		expect(keyToken(long, 1)).not.toBe(keyToken(long, 2));
		for (const key of [keyToken('', 0), keyToken(long, 1), keyToken('pk_1', 1)]) {
			expect(key).toMatch(new RegExp(`^[A-Za-z0-9_-]{${TOKEN_LENGTH}}$`));
		}
	});

	it('no collisions among 40,000 realistic keys', () => {
		const keys = new Set<string>();
		for (let i = 0; i < 10_000; i++) for (let v = 1; v <= 4; v++) keys.add(keyToken(`pk_${i}`, v));
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
		delivered: keyToken('pk_0', 1),
	};

	it('round-trips through JSON', () => {
		const read = { ...state, fp: '0123456789abcdef', witness: 30 };
		expect(readState(JSON.parse(JSON.stringify(read)), 'q')).toEqual(read);
	});

	it('a state saved before fingerprints is read as it was, without fp, its highest handled id as witness', () => {
		expect(state).not.toHaveProperty('fp');
		expect(readState(JSON.parse(JSON.stringify(state)), 'q')).toEqual({ ...state, witness: 30 });
		const nothingHandled = { ...state, handled: '' };
		expect(readState(nothingHandled, 'q')).toEqual(nothingHandled);
	});

	it('refuses a malformed fingerprint or witness (damaged: the trigger starts afresh)', () => {
		for (const fp of ['0123456789ABCDEF', '0123', 7, null, 'sk_live_0123456789'])
			expect(readState({ ...state, fp }, 'q')).toBeUndefined();
		for (const witness of [0, -1, 1.5, '30', null])
			expect(readState({ ...state, witness }, 'q')).toBeUndefined();
	});

	it('"seen empty" is kept until the state has a witness (#44), and refused when malformed', () => {
		const empty = { ...initialState('q', 0, '0123456789abcdef'), emptyAt: 1_700_000_000_000 };
		expect(readState(JSON.parse(JSON.stringify(empty)), 'q')).toEqual(empty);
		for (const emptyAt of [0, -1, 1.5, '1700000000000', null])
			expect(readState({ ...empty, emptyAt }, 'q')).toBeUndefined();
		expect(readState({ ...state, emptyAt: 5 }, 'q')).not.toHaveProperty('emptyAt'); // has a witness
		expect(seenEmpty(empty, 1_700_000_060_000)).toEqual({
			...empty,
			emptyAt: 1_700_000_060_000,
			rev: 1,
		});
		expect(seenEmpty({ ...state, witness: 30 }, 5)).toEqual({ ...state, witness: 30 });
		const run = startPoll(empty);
		addPage(run, { items: [{ id: 7, pack_id: 'pk_1', version: 1 }], next_since_id: 7 } as never);
		const next = finishPoll(run);
		expect(next).toMatchObject({ witness: 7 });
		expect(next).not.toHaveProperty('emptyAt');
	});

	it('starts afresh for another query key, another version or damaged data', () => {
		expect(readState(state, 'other')).toBeUndefined();
		expect(readState({ ...state, v: STATE_VERSION + 1 }, 'q')).toBeUndefined();
		expect(readState({ ...state, v: STATE_VERSION - 1 }, 'q')).toBeUndefined();
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
