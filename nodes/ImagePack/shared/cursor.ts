/**
 * The Image Pack Trigger's polling state, as a pure module: no n8n, no HTTP.
 *
 * The API's incremental pulling contract (§4.2): remember `next_since_id`, start the next round at
 * `next_since_id - reread_overlap`, deduplicate by `(pack_id, version)`. Ids come from a global
 * database sequence, so a publication with a smaller id may become visible after a bigger one; the
 * overlap is the window in which such a late commit can still appear. One publication may also be
 * listed under more than one id (that is why the API says to dedupe by key, not by id).
 *
 * How a poll uses this module:
 *   run = startPoll(state)                first request: since_id = run.nextSince
 *   { fresh, next } = addPage(run, page)  repeat while `next` is a number (a full page)
 *   state' = finishPoll(run, emitted)     `emitted` = how many of the fresh records were delivered
 * A run is the poll's private accumulator: addPage updates it, finishPoll only reads it.
 *
 * The state holds:
 *   - `start`: the since_id of the next poll's first request. Every request asks for ids > start,
 *     so an id <= start is never returned again. `start` never decreases.
 *   - `window`: for every delivered key that was read under some id > start, the HIGHEST id it was
 *     read under. A key leaves the window only when no id it was read under can be returned again.
 *     At most `overlap + PAGE_LIMIT` keys under the contract (capped at MAX_WINDOW).
 *   - `delivered`: the last MEMORY_KEYS keys that left the window, as fixed-width hashes, so a key
 *     that comes back under an id far above the window is still recognised. Best effort: a key
 *     delivered longer ago than that is forgotten.
 *
 * Where the next poll starts: pages inside one poll follow `next_since_id` directly (a full page
 * means history, not the head), which keeps a catch-up at one request per 200 records. The next
 * poll then starts at `min(last next_since_id, since_id of the poll's last request) - overlap`:
 * the final window and the window of the last page boundary crossed are both read again.
 *
 * LIMITS (accepted, documented in the README):
 *   - A late commit must land within `overlap` ids of the newest id visible when it commits (the
 *     contract's promise). One landing further below is never returned by the API again.
 *   - Inside one poll, a late commit below a page boundary that was followed directly is found
 *     only if fewer than `PAGE_LIMIT - overlap` (150) newer publications of the same account were
 *     committed between the two page requests (milliseconds apart).
 *   - An overlap above MAX_OVERLAP announced by the API is capped (bounded state).
 *   - Keys are 53-bit hashes: two different publications with the same hash (about 1 in 10^13
 *     per publication with a full memory) would make the second look delivered.
 */

export const STATE_VERSION = 2;
/** Page size asked for: the API's maximum. */
export const PAGE_LIMIT = 200;
/** The documented reread_overlap; used until a response says otherwise. */
export const DEFAULT_OVERLAP = 50;
/** Upper bound on the overlap honoured, so the window (and static data) stays small. */
export const MAX_OVERLAP = 100;
/** The window never holds more keys than this; only a server breaking the contract reaches it. */
export const MAX_WINDOW = MAX_OVERLAP + PAGE_LIMIT;
/** Delivered keys remembered after they left the window (9 characters each in static data). */
export const MEMORY_KEYS = 700;
/** Characters of one key hash (53 bits, 6 bits per character). */
export const TOKEN_LENGTH = 9;

export interface PublicationRecord {
	id: number;
	pack_id: string;
	version: number;
	[field: string]: unknown;
}

export interface ListPage {
	items: PublicationRecord[];
	next_since_id: number;
	reread_overlap?: number;
}

export interface CursorState {
	v: typeof STATE_VERSION;
	/** What the state was built for (start option, start id, server); another key starts afresh. */
	queryKey: string;
	/** since_id of the next poll's first request; ids <= start are never returned again. */
	start: number;
	/** Highest id / next_since_id read so far. */
	cursor: number;
	/** The re-read overlap in effect (from the last response, capped). */
	overlap: number;
	/** Key hash -> highest id it was read under, for delivered keys read under an id > start. */
	window: Record<string, number>;
	/** Hashes of the last MEMORY_KEYS delivered keys that left the window, oldest first, joined. */
	delivered: string;
	/** Bumped on every change, so two overlapping polls can tell that the other one committed. */
	rev: number;
}

/** cyrb53: a fast 53-bit string hash (public domain), enough to tell keys apart. */
export function hash53Number(text: string, seed = 0): number {
	let h1 = 0xdeadbeef ^ seed;
	let h2 = 0x41c6ce57 ^ seed;
	for (let i = 0; i < text.length; i++) {
		const ch = text.charCodeAt(i);
		h1 = Math.imul(h1 ^ ch, 2654435761);
		h2 = Math.imul(h2 ^ ch, 1597334677);
	}
	h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
	h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
	return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

export function hash53(text: string, seed = 0): string {
	return hash53Number(text, seed).toString(36);
}

const DIGITS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** A 53-bit number as TOKEN_LENGTH characters that need no escaping in JSON. */
function token(hash: number): string {
	let text = '';
	for (let i = 0; i < TOKEN_LENGTH; i++) {
		text = DIGITS[hash % 64] + text;
		hash = Math.floor(hash / 64);
	}
	return text;
}

/** The dedupe key of a publication, `(pack_id, version)` as the API's `dedupe_by` says, hashed. */
export function dedupeKey(packId: string, version: number): string {
	return token(hash53Number(`${packId}@${version}`));
}

/** The state of a trigger that has not delivered anything yet and starts after `startId`. */
export function initialState(queryKey: string, startId: number): CursorState {
	const start = Math.max(0, Math.floor(startId));
	return {
		v: STATE_VERSION,
		queryKey,
		start,
		cursor: start,
		overlap: DEFAULT_OVERLAP,
		window: {},
		delivered: '',
		rev: 0,
	};
}

function isSafeId(value: unknown): value is number {
	return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
	return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A version 1 dedupe key (`pack@version`, or `#` + base36 hash53 of it when longer than 24
 * characters) as today's hash: the same hash function of the same text, so nothing is lost.
 */
function migrateKey(key: string): string {
	const hashed = key.startsWith('#') && !key.includes('@');
	return token(hashed ? parseInt(key.slice(1), 36) : hash53Number(key));
}

/**
 * Reads the state from static data. Returns undefined when there is none, when it was built for
 * another query (the start option changed), or when it is damaged, so the caller starts afresh.
 * A version 1 state (window keyed by plain text, no memory) is migrated: same start, same window.
 */
export function readState(raw: unknown, queryKey: string): CursorState | undefined {
	if (!isPlainObject(raw) || raw.queryKey !== queryKey) return undefined;
	const v1 = raw.v === 1;
	if (!v1 && raw.v !== STATE_VERSION) return undefined;
	const { start, cursor, overlap, rev } = raw;
	if (!isSafeId(start) || !isSafeId(cursor) || cursor < start) return undefined;
	if (!isSafeId(overlap) || !isSafeId(rev)) return undefined;
	const entries = v1 ? raw.seen : raw.window;
	if (!isPlainObject(entries)) return undefined;
	const delivered = v1 ? '' : raw.delivered;
	if (typeof delivered !== 'string' || delivered.length % TOKEN_LENGTH !== 0) return undefined;
	const window: Record<string, number> = {};
	for (const [key, id] of Object.entries(entries)) {
		if (!isSafeId(id)) return undefined;
		if (id > start) window[v1 ? migrateKey(key) : key] = id;
	}
	return {
		v: STATE_VERSION,
		queryKey,
		start,
		cursor,
		overlap: Math.min(overlap, MAX_OVERLAP),
		window,
		delivered: delivered.slice(-MEMORY_KEYS * TOKEN_LENGTH),
		rev,
	};
}

function clampOverlap(value: unknown, fallback: number): number {
	if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) return fallback;
	return Math.min(Math.floor(value), MAX_OVERLAP);
}

/** One list request of a poll, as finishPoll needs it. */
interface PageSpan {
	/** since_id of the request. */
	since: number;
	/** Where this page's coverage ends (next_since_id, never below its last item or since). */
	end: number;
	/** The re-read overlap in effect after this page (announced with it, capped). */
	overlap: number;
}

export interface PollRun {
	readonly base: CursorState;
	/** since_id for the next request of this poll. */
	nextSince: number;
	readonly pages: PageSpan[];
	/** Key -> highest id read: the base window, plus every key read in this poll. */
	readonly highest: Map<string, number>;
	/** The base state's memory of delivered keys. */
	readonly remembered: Set<string>;
	/** Records whose key was not delivered before, in read order (ascending id), and their keys. */
	readonly fresh: PublicationRecord[];
	readonly freshKeys: string[];
}

export function startPoll(state: CursorState): PollRun {
	const remembered = new Set<string>();
	for (let at = 0; at < state.delivered.length; at += TOKEN_LENGTH)
		remembered.add(state.delivered.slice(at, at + TOKEN_LENGTH));
	return {
		base: state,
		nextSince: state.start,
		pages: [],
		highest: new Map(Object.entries(state.window)),
		remembered,
		fresh: [],
		freshKeys: [],
	};
}

/** The valid records of a list answer above `since`, ascending id (bad entries are ignored). */
function validItems(since: number, page: ListPage): PublicationRecord[] {
	const rawItems: unknown[] = Array.isArray(page.items) ? page.items : [];
	return (rawItems as PublicationRecord[])
		.filter(
			(item) =>
				isPlainObject(item) &&
				isSafeId(item.id) &&
				item.id > since &&
				typeof item.pack_id === 'string' &&
				typeof item.version === 'number',
		)
		.sort((a, b) => a.id - b.id);
}

/**
 * Adds the answer to the request `since_id = run.nextSince, limit` to the run. Returns the records
 * of this page not delivered before (ascending id) and, when the page was full, the since_id to
 * follow (also in `run.nextSince`).
 */
export function addPage(
	run: PollRun,
	page: ListPage,
	limit = PAGE_LIMIT,
): { fresh: PublicationRecord[]; next: number | null } {
	const since = run.nextSince;
	const items = validItems(since, page);
	const fresh: PublicationRecord[] = [];
	for (const item of items) {
		if (item.id <= run.base.start) continue; // never returned by a correct server
		const key = dedupeKey(item.pack_id, item.version);
		const known = run.highest.get(key);
		run.highest.set(key, Math.max(known ?? 0, item.id));
		if (known !== undefined || run.remembered.has(key)) continue;
		fresh.push(item);
		run.fresh.push(item);
		run.freshKeys.push(key);
	}
	const lastId = items.length ? items[items.length - 1].id : since;
	const end = Math.max(since, lastId, isSafeId(page.next_since_id) ? page.next_since_id : lastId);
	const previous = run.pages.length ? run.pages[run.pages.length - 1].overlap : run.base.overlap;
	run.pages.push({ since, end, overlap: clampOverlap(page.reread_overlap, previous) });
	const full = Array.isArray(page.items) && page.items.length >= limit;
	const next = full && end > since ? end : null;
	run.nextSince = end;
	return { fresh, next };
}

/** All records of the run not delivered before, ascending id (what addPage returned, in order). */
export function freshRecords(run: PollRun): PublicationRecord[] {
	return [...run.fresh];
}

/**
 * The state after this poll when the first `emitted` fresh records were delivered (default: all).
 * Delivering fewer (budget ran out while fetching manifests) cuts the run just below the first
 * record not delivered, as if the poll had stopped reading there: nothing is skipped. Keys that
 * were delivered keep every id they were read under, also ids above the cut.
 */
export function finishPoll(run: PollRun, emitted?: number): CursorState {
	const { base, pages } = run;
	if (pages.length === 0) return base;
	const count = Math.max(0, Math.min(emitted ?? run.fresh.length, run.fresh.length));
	let kept = pages.length;
	let end = pages[kept - 1].end;
	if (count < run.fresh.length) {
		const cut = run.fresh[count].id; // the first record not delivered: read nothing from here on
		while (pages[kept - 1].since >= cut) kept--; // pages cover ascending, disjoint id ranges
		end = cut - 1;
	}
	const last = pages[kept - 1];
	// The last page boundary this poll followed directly (the since of its last request), if any.
	const followed = kept > 1 ? last.since : end;
	const start = Math.max(base.start, Math.min(end, followed) - last.overlap);
	const cursor = Math.max(base.cursor, end, start);

	const undelivered = new Set(run.freshKeys.slice(count));
	const inWindow: Array<[string, number]> = [];
	const leaving: Array<[string, number]> = [];
	for (const entry of run.highest) {
		if (undelivered.has(entry[0])) continue;
		(entry[1] > start ? inWindow : leaving).push(entry);
	}
	inWindow.sort((a, b) => a[1] - b[1]);
	leaving.push(...inWindow.splice(0, inWindow.length - MAX_WINDOW)); // only a broken server
	leaving.sort((a, b) => a[1] - b[1]);

	const window: Record<string, number> = {};
	for (const [key, id] of inWindow) window[key] = id;
	// Oldest first; a key appears once, in the window or in the memory.
	const memory = [...run.remembered].filter((key) => !run.highest.has(key));
	for (const [key] of leaving) memory.push(key);
	const next: CursorState = {
		v: STATE_VERSION,
		queryKey: base.queryKey,
		start,
		cursor,
		overlap: last.overlap,
		window,
		delivered: memory.slice(-MEMORY_KEYS).join(''),
		rev: base.rev,
	};
	return sameState(next, base) ? base : { ...next, rev: base.rev + 1 };
}

/**
 * The state of a trigger that starts "now": everything in `page` (the answer to
 * `since_id = baselineSince(head)`) is treated as already delivered, and only later
 * publications, including late commits inside the window, are delivered.
 */
export function baselineState(
	queryKey: string,
	since: number,
	page: ListPage,
	limit = PAGE_LIMIT,
): CursorState {
	const run = startPoll(initialState(queryKey, since));
	addPage(run, page, limit);
	return { ...finishPoll(run), rev: 0 };
}

/** Where the "now" baseline read starts for a newest id `head`. */
export function baselineSince(head: number, overlap = DEFAULT_OVERLAP): number {
	return Math.max(0, head - clampOverlap(overlap, DEFAULT_OVERLAP));
}

export function sameState(a: CursorState, b: CursorState): boolean {
	if (
		a.start !== b.start ||
		a.cursor !== b.cursor ||
		a.overlap !== b.overlap ||
		a.queryKey !== b.queryKey ||
		a.delivered !== b.delivered
	) {
		return false;
	}
	const aKeys = Object.keys(a.window);
	if (aKeys.length !== Object.keys(b.window).length) return false;
	return aKeys.every((key) => b.window[key] === a.window[key]);
}

/** Why a newest-id search stopped without an answer (a broken server, or the poll's time is up). */
export class NewestSearchError extends Error {}

/** Requests a newest-id search may make: 1 + 54 doublings + 54 halvings, then it is a server fault. */
export const MAX_SEARCH_PROBES = 110;

/**
 * Finds the newest record using `since_id` probes with `limit=1`: an exponential phase finds an
 * empty probe, a binary phase narrows down. `probe(since)` answers the first record above `since`,
 * or null. About 2 * log2(newest id) requests, never more than MAX_SEARCH_PROBES; every probe must
 * answer an id above the since_id it was asked with (else the server ignores since_id and the search
 * could never end), and the search stops once `expired()` says the poll's time is up. Every stop
 * goes through `fail` (default: throw a NewestSearchError).
 */
export async function findNewest(
	probe: (since: number) => Promise<PublicationRecord | null>,
	expired: () => boolean = () => false,
	fail: (message: string) => never = (message) => {
		throw new NewestSearchError(message);
	},
): Promise<PublicationRecord | null> {
	let probes = 0;
	const ask = async (since: number): Promise<PublicationRecord | null> => {
		if (++probes > MAX_SEARCH_PROBES) {
			fail(
				`The search for the newest publication did not end after ${MAX_SEARCH_PROBES} requests (last since_id=${since}): the server's answers contradict each other. This is a fault of the server, not of this node's settings.`,
			);
		}
		if (probes > 1 && expired()) {
			fail(
				`The search for the newest publication ran out of the poll's time after ${probes - 1} requests (the server answers too slowly).`,
			);
		}
		const found = await probe(since);
		if (found !== null && !(isSafeId(found.id) && found.id > since)) {
			fail(
				`The server answered since_id=${since} with publication id ${JSON.stringify(found.id)}, which is not a whole number above it (ids are at most 2^53 - 1): it ignores since_id. This is a fault of the server, not of this node's settings.`,
			);
		}
		return found;
	};
	let newest = await ask(0);
	if (!newest) return null;
	let lo = newest.id; // a record with this id exists
	let hi: number | undefined; // no record above this id (when last asked)
	let step = Math.max(1, lo);
	while (hi === undefined) {
		const since = Math.min(lo + step, Number.MAX_SAFE_INTEGER); // an id above it is a fault
		const found = await ask(since);
		if (found) {
			newest = found;
			lo = found.id;
			step *= 2;
		} else {
			hi = since;
		}
	}
	while (lo < hi) {
		const mid = Math.floor((lo + hi) / 2);
		const found = await ask(mid);
		if (found) {
			newest = found;
			lo = found.id;
			if (lo > hi) hi = lo;
		} else {
			hi = mid;
		}
	}
	return newest;
}
