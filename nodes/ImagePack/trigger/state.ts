/**
 * The trigger's stored state and its encoding, as a pure module (no n8n, no HTTP): how a poll uses
 * and advances it is in cursor.ts. It lives in the workflow's static data, so it is small and dense:
 * at the documented overlap (50) about 9.5 KiB at most, the key memory (9 KB when full) plus a few
 * hundred characters of runs. Only this form (version 3) is read; anything else starts afresh. A
 * state also names who read it: the fingerprint of the API key (never the key) and one publication
 * id it read, which the API can be asked about when the key changes (trigger/account.ts), or, until
 * it read one, when it last found the account empty.
 */
import { DEFAULT_OVERLAP, dedupeKey, isSafeId } from '../shared/publications';

export const STATE_VERSION = 3;
/**
 * The largest reread_overlap honoured (100× the documented 50). A poll re-reads about that many ids,
 * which costs a request per 200 of the account's publications among them, and the state holds their
 * runs. A larger announced overlap makes the poll fail with an error saying so: nothing is delivered
 * or skipped until the server announces an overlap this trigger can honour.
 */
export const MAX_OVERLAP = 5_000;
/** Delivered keys remembered (9 characters each in static data). */
export const MEMORY_KEYS = 1_000;
/** Characters of one key hash (53 bits, 6 bits per character). */
export const TOKEN_LENGTH = 9;

export interface CursorState {
	v: typeof STATE_VERSION;
	/** What the state was built for (start option, start id, server); another key starts afresh. */
	queryKey: string;
	/** Ids at or below it are never read again. */
	start: number;
	/** The highest id any answer held: the server's newest visible id is at least this. */
	cursor: number;
	/** The re-read overlap in effect (the last one announced). */
	overlap: number;
	/**
	 * Ids above `start` read and dealt with (delivered, or recognised as a publication delivered
	 * before), as runs (see encodeRuns): a re-read id found here is skipped without looking at its key.
	 */
	handled: string;
	/** keyToken of the last MEMORY_KEYS delivered publications, oldest first, joined. */
	delivered: string;
	/**
	 * The fingerprint of the API key this state was last read with (`keyFingerprint`: 16 hex digits,
	 * never the key). Absent in states saved before fingerprints: the key that meets one adopts it.
	 */
	fp?: string;
	/**
	 * The id of a publication this state read (the newest delivered): the API says whether it is the
	 * account's of another key (detail 200) or not (404). Absent until the state reads one.
	 */
	witness?: number;
	/**
	 * Until the state has a witness: when (ms, n8n's clock) a poll with the key `fp` last found the
	 * account without any publication. Another key's account is told apart by it (trigger/noWitness.ts).
	 */
	emptyAt?: number;
	/** Bumped on every change, so two overlapping polls can tell that the other one committed. */
	rev: number;
}

/** cyrb53: a fast 53-bit string hash (public domain), enough to tell keys apart. */
function hash53(text: string): number {
	let h1 = 0xdeadbeef;
	let h2 = 0x41c6ce57;
	for (let i = 0; i < text.length; i++) {
		const ch = text.charCodeAt(i);
		h1 = Math.imul(h1 ^ ch, 2654435761);
		h2 = Math.imul(h2 ^ ch, 1597334677);
	}
	h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
	h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
	return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

/**
 * What a state is built for: the start option (and id) and the server. A state built for another
 * key is not read, so changing Start From, Start ID or the credential's server starts afresh.
 */
export function queryKey(startFrom: string, startId: number, baseUrl: string): string {
	const from = startFrom === 'id' ? `id:${startId}` : startFrom;
	return `${from}|${hash53(baseUrl.toLowerCase()).toString(36)}`;
}

/** 64 characters that need no escaping in JSON. */
const DIGITS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const DIGIT_VALUE = new Map([...DIGITS].map((ch, value) => [ch, value]));

/** A 53-bit number as TOKEN_LENGTH characters. */
function token(hash: number): string {
	let text = '';
	for (let i = 0; i < TOKEN_LENGTH; i++) {
		text = DIGITS[hash % 64] + text;
		hash = Math.floor(hash / 64);
	}
	return text;
}

/** How the state remembers a publication: its dedupe key `(pack_id, version)`, hashed. */
export function keyToken(packId: string, version: number): string {
	return token(hash53(dedupeKey(packId, version)));
}

/**
 * Sorted ids above `base` as runs: the count of ids skipped, then the count taken, and so on, each a
 * variable-length number (5 bits per character; characters from 32 up mean "more follows"). A run of
 * the account's own consecutive ids costs one or two characters; an id between other accounts' ids
 * about two.
 */
export function encodeRuns(base: number, ids: Iterable<number>): string {
	const sorted = [...ids].filter((id) => id > base).sort((a, b) => a - b);
	let text = '';
	const put = (value: number) => {
		while (value >= 32) {
			text += DIGITS[32 + (value % 32)];
			value = Math.floor(value / 32);
		}
		text += DIGITS[value];
	};
	let at = base; // the last id covered so far
	for (let i = 0; i < sorted.length; ) {
		let j = i + 1;
		while (j < sorted.length && sorted[j] === sorted[j - 1] + 1) j++;
		put(sorted[i] - at - 1);
		put(j - i);
		at = sorted[j - 1];
		i = j;
	}
	return text;
}

/** More handled ids than any poll can leave behind: a state claiming more is damaged. */
const MAX_HANDLED = 100_000;

/** The ids encodeRuns wrote, or undefined when the text is damaged. */
export function decodeRuns(base: number, text: string): number[] | undefined {
	const numbers: number[] = [];
	let value = 0;
	let scale = 1;
	for (const ch of text) {
		const digit = DIGIT_VALUE.get(ch);
		if (digit === undefined) return undefined;
		value += (digit % 32) * scale;
		if (digit >= 32) {
			scale *= 32;
			if (scale > 2 ** 55) return undefined;
			continue;
		}
		numbers.push(value);
		value = 0;
		scale = 1;
	}
	if (scale !== 1 || numbers.length % 2 !== 0) return undefined;
	const ids: number[] = [];
	let at = base;
	for (let i = 0; i < numbers.length; i += 2) {
		const first = at + numbers[i] + 1;
		const count = numbers[i + 1];
		if (count < 1 || ids.length + count > MAX_HANDLED || !Number.isSafeInteger(first + count - 1)) {
			return undefined;
		}
		for (let id = first; id < first + count; id++) ids.push(id);
		at = first + count - 1;
	}
	return ids;
}

/**
 * The state of a trigger that has not delivered anything yet and starts after `startId`, read with
 * the key of fingerprint `fp`; `rev` above that of a state it replaces (see CursorState.rev).
 */
export function initialState(queryKey: string, startId: number, fp?: string, rev = 0): CursorState {
	const start = Math.max(0, Math.floor(startId));
	return {
		v: STATE_VERSION,
		queryKey,
		start,
		cursor: start,
		overlap: DEFAULT_OVERLAP,
		handled: '',
		delivered: '',
		...(fp === undefined ? {} : { fp }),
		rev,
	};
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
	return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const isTokens = (text: unknown): text is string =>
	typeof text === 'string' && text.length % TOKEN_LENGTH === 0 && /^[\w-]*$/.test(text);

const isFingerprint = (text: unknown): text is string =>
	typeof text === 'string' && /^[0-9a-f]{16}$/.test(text);

/**
 * Reads the state from static data. Returns undefined when there is none, when it was built for
 * another query (the start option changed), or when it is not this version or damaged, so the caller
 * starts afresh. A state saved before fingerprints has no `fp` (the caller lets the key adopt it) and
 * takes the highest id it handled as its witness.
 */
export function readState(raw: unknown, queryKey: string): CursorState | undefined {
	if (!isPlainObject(raw) || raw.queryKey !== queryKey || raw.v !== STATE_VERSION) return undefined;
	const { start, cursor, overlap, rev, handled, delivered, fp, witness, emptyAt } = raw;
	if (!isSafeId(start) || !isSafeId(cursor) || cursor < start) return undefined;
	if (!isSafeId(overlap) || !isSafeId(rev)) return undefined;
	const handledIds = typeof handled === 'string' ? decodeRuns(start, handled) : undefined;
	if (typeof handled !== 'string' || !handledIds) return undefined;
	if (!isTokens(delivered)) return undefined;
	if (fp !== undefined && !isFingerprint(fp)) return undefined;
	if (witness !== undefined && !(isSafeId(witness) && witness > 0)) return undefined;
	if (emptyAt !== undefined && !(isSafeId(emptyAt) && emptyAt > 0)) return undefined;
	const seen = isSafeId(witness) ? witness : handledIds[handledIds.length - 1];
	return {
		v: STATE_VERSION,
		queryKey,
		start,
		cursor,
		overlap: Math.min(overlap, MAX_OVERLAP),
		handled,
		delivered: delivered.slice(-MEMORY_KEYS * TOKEN_LENGTH),
		...(fp === undefined ? {} : { fp }),
		...(seen === undefined ? {} : { witness: seen }),
		...(seen !== undefined || emptyAt === undefined ? {} : { emptyAt }),
		rev,
	};
}

/**
 * The state after a poll that found the account without any publication at `at` (ms): a state that
 * has no witness yet remembers it (see CursorState.emptyAt).
 */
export function seenEmpty(state: CursorState, at: number): CursorState {
	if (state.witness !== undefined || state.emptyAt === at) return state;
	return { ...state, emptyAt: at, rev: state.rev + 1 };
}

/** Whether two states hold the same cursor for the same key (`rev` aside). */
export function sameState(a: CursorState, b: CursorState): boolean {
	const fields = [
		'start',
		'cursor',
		'overlap',
		'queryKey',
		'handled',
		'delivered',
		'fp',
		'witness',
		'emptyAt',
	] as const;
	return fields.every((field) => a[field] === b[field]);
}
