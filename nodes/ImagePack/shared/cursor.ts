/**
 * The Image Pack Trigger's polling state, as a pure module: no n8n, no HTTP.
 *
 * The API's incremental pulling contract (§4.2): remember `next_since_id`, start the next round at
 * `next_since_id - reread_overlap`, deduplicate by `(pack_id, version)`. Ids come from a global
 * database sequence, so a publication with a smaller id may become visible after a bigger one; the
 * overlap is the window in which such a late commit can still appear.
 *
 * How a poll uses this module:
 *   run = startPoll(state)                    first request: since_id = run.nextSince
 *   { run, fresh, next } = addPage(run, page) repeat while `next` is a number (a full page)
 *   state' = finishPoll(run, emitted)         `emitted` = how many of the fresh records were delivered
 *
 * The state holds:
 *   - `start`: the since_id of the next poll's first request. Every id <= start is settled: it was
 *     emitted, or was visible before the trigger's starting point, or (see LIMITS) was committed
 *     too late to be seen. `start` never decreases.
 *   - `cursor`: the highest id (or next_since_id) read so far.
 *   - `seen`: dedupe key -> id for every record read with id > start. Records with id <= start can
 *     never be returned again (every request asks for ids > start), so their keys are dropped: the
 *     set holds at most `overlap + PAGE_LIMIT` entries whatever the account's history.
 *
 * Where the next poll starts: pages inside one poll follow `next_since_id` directly (a full page
 * means history, not the head), which keeps a catch-up at one request per 200 records. The next
 * poll then starts at `min(last next_since_id, since_id of the poll's last request) - overlap`:
 * the final window and the window of the last page boundary crossed are both read again, so a late
 * commit in either is found and everything already delivered there is recognised by `seen`.
 *
 * LIMITS (accepted, documented in the README):
 *   - A late commit must land within `overlap` ids of the newest id visible when it commits (the
 *     contract's promise). One landing further below is never returned by the API again and
 *     cannot be delivered by any client that follows the contract.
 *   - Inside one poll, a late commit below a page boundary that was followed directly is found
 *     only if fewer than `PAGE_LIMIT - overlap` (150) newer publications of the same account were
 *     committed between the two page requests (milliseconds apart).
 *   - An overlap above MAX_OVERLAP announced by the API is capped (bounded state).
 *   - A re-publication of an already delivered (pack_id, version) under a new id is recognised only
 *     while the first one is inside the window.
 */

export const STATE_VERSION = 1;
/** Page size asked for: the API's maximum. */
export const PAGE_LIMIT = 200;
/** The documented reread_overlap; used until a response says otherwise. */
export const DEFAULT_OVERLAP = 50;
/** Upper bound on the overlap honoured, so the dedupe set (and static data) stays small. */
export const MAX_OVERLAP = 100;
/** Dedupe keys longer than this are stored as a hash, so one entry stays small. */
export const MAX_KEY_LENGTH = 24;
/**
 * Hard cap on dedupe entries. The window never holds more than MAX_OVERLAP + PAGE_LIMIT distinct ids,
 * so this only bites on a server that breaks the contract; the lowest ids are dropped first.
 */
export const MAX_SEEN = MAX_OVERLAP + PAGE_LIMIT + 20;

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
	/** since_id of the next poll's first request; ids <= start are settled. */
	start: number;
	/** Highest id / next_since_id read so far. */
	cursor: number;
	/** The re-read overlap in effect (from the last response, capped). */
	overlap: number;
	/** Dedupe key -> id of every record read with id > start. */
	seen: Record<string, number>;
	/** Bumped on every change, so two overlapping polls can tell that the other one committed. */
	rev: number;
}

/** cyrb53: a fast 53-bit string hash (public domain), enough to tell long keys apart. */
export function hash53(text: string, seed = 0): string {
	let h1 = 0xdeadbeef ^ seed;
	let h2 = 0x41c6ce57 ^ seed;
	for (let i = 0; i < text.length; i++) {
		const ch = text.charCodeAt(i);
		h1 = Math.imul(h1 ^ ch, 2654435761);
		h2 = Math.imul(h2 ^ ch, 1597334677);
	}
	h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
	h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
	return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36);
}

/** The dedupe key of a publication: `(pack_id, version)`, as the API's `dedupe_by` says. */
export function dedupeKey(packId: string, version: number): string {
	const key = `${packId}@${version}`;
	return key.length <= MAX_KEY_LENGTH ? key : `#${hash53(key)}`;
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
		seen: {},
		rev: 0,
	};
}

function isSafeId(value: unknown): value is number {
	return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/**
 * Reads the state from static data. Returns undefined when there is none, when it was built for
 * another query (the start option changed), or when it is not a state this version understands,
 * so the caller starts afresh. Future versions migrate older `v` values here.
 */
export function readState(raw: unknown, queryKey: string): CursorState | undefined {
	if (typeof raw !== 'object' || raw === null) return undefined;
	const data = raw as Record<string, unknown>;
	if (data.v !== STATE_VERSION || data.queryKey !== queryKey) return undefined;
	if (!isSafeId(data.start) || !isSafeId(data.cursor) || data.cursor < data.start) return undefined;
	if (!isSafeId(data.overlap) || !isSafeId(data.rev)) return undefined;
	if (typeof data.seen !== 'object' || data.seen === null || Array.isArray(data.seen))
		return undefined;
	const seen: Record<string, number> = {};
	for (const [key, id] of Object.entries(data.seen as Record<string, unknown>)) {
		if (!isSafeId(id)) return undefined;
		if (id > data.start) seen[key] = id;
	}
	return {
		v: STATE_VERSION,
		queryKey,
		start: data.start,
		cursor: data.cursor,
		overlap: Math.min(data.overlap, MAX_OVERLAP),
		seen,
		rev: data.rev,
	};
}

function clampOverlap(value: unknown, fallback: number): number {
	if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) return fallback;
	return Math.min(Math.floor(value), MAX_OVERLAP);
}

/** What finishPoll needs of a page once its records have been folded into the poll's log. */
interface PageSpan {
	/** since_id of the request. */
	since: number;
	/** Where this page's coverage ends (next_since_id, never below its last item or since). */
	end: number;
	/** The re-read overlap in effect after this page (announced with it, capped). */
	overlap: number;
}

interface ReadPage extends PageSpan {
	/** Valid records above `since`, ascending id. */
	items: PublicationRecord[];
	full: boolean;
}

/**
 * What one poll has read, folded page by page as it arrives, so a poll costs O(1) per record
 * (instead of copying the dedupe set per page and refolding every page at the end).
 *
 * Every request of a poll asks for ids above the previous page's end, so the pages cover disjoint,
 * ascending id ranges and the log is filled in ascending id order. That is what lets finishPoll cut
 * a partial delivery from the log alone (see there).
 *
 * The log is append-only and shared by the successive PollRun values of one poll; a run owns the
 * first `pageCount` spans and `freshCount` fresh records and added keys (the two grow together:
 * every fresh record adds its key). addPage appends in place only for the newest run of the log
 * and copies the run's prefix otherwise, so PollRun still behaves as an immutable value: a run's
 * results never depend on what was done with other runs.
 */
interface PollLog {
	readonly spans: PageSpan[];
	/** Records not delivered before, in read order (ascending id): what addPage returned. */
	readonly fresh: PublicationRecord[];
	/**
	 * Dedupe key -> id of the records read in this poll whose key the base state did not know, in
	 * read order (so ascending id; the first id read per key). The base state's set is looked up in
	 * place, never copied.
	 */
	readonly added: Map<string, number>;
}

export interface PollRun {
	readonly base: CursorState;
	/** since_id for the next request of this poll. */
	readonly nextSince: number;
	/** How much of `log` belongs to this run: pages read, fresh records (= new dedupe keys). */
	readonly pageCount: number;
	readonly freshCount: number;
	readonly log: PollLog;
}

export function startPoll(state: CursorState): PollRun {
	const log: PollLog = { spans: [], fresh: [], added: new Map() };
	return { base: state, nextSince: state.start, pageCount: 0, freshCount: 0, log };
}

/** Validates one list response against the request it answers (tolerant: bad entries are ignored). */
function readPage(since: number, page: ListPage, limit: number, overlap: number): ReadPage {
	const rawItems = Array.isArray(page.items) ? page.items : [];
	const items = rawItems
		.filter(
			(item) =>
				typeof item === 'object' &&
				item !== null &&
				isSafeId(item.id) &&
				item.id > since &&
				typeof item.pack_id === 'string' &&
				typeof item.version === 'number',
		)
		.sort((a, b) => a.id - b.id);
	const lastId = items.length ? items[items.length - 1].id : since;
	const next = isSafeId(page.next_since_id) ? page.next_since_id : lastId;
	return {
		since,
		items,
		end: Math.max(since, lastId, next),
		full: rawItems.length >= limit,
		overlap: clampOverlap(page.reread_overlap, overlap),
	};
}

/** The log of `run` alone, to append to: the shared one while `run` is its newest run, else a copy. */
function ownLog(run: PollRun): PollLog {
	const { log } = run;
	if (log.spans.length === run.pageCount) return log; // every addPage appends exactly one span
	const added = new Map<string, number>();
	for (const [key, id] of log.added) {
		if (added.size === run.freshCount) break;
		added.set(key, id);
	}
	return {
		spans: log.spans.slice(0, run.pageCount),
		fresh: log.fresh.slice(0, run.freshCount),
		added,
	};
}

/** Folds a page's records into `log`; returns those not delivered before (ascending id). */
function foldItems(
	base: CursorState,
	log: PollLog,
	items: PublicationRecord[],
): PublicationRecord[] {
	const fresh: PublicationRecord[] = [];
	for (const item of items) {
		if (item.id <= base.start) continue; // settled (never returned by a correct server)
		const key = dedupeKey(item.pack_id, item.version);
		if (key in base.seen || log.added.has(key)) continue;
		log.added.set(key, item.id);
		log.fresh.push(item);
		fresh.push(item);
	}
	return fresh;
}

/**
 * Adds the answer to the request `since_id = run.nextSince, limit`. Returns the records of this
 * page not delivered before (ascending id) and, when the page was full, the since_id to follow.
 */
export function addPage(
	run: PollRun,
	page: ListPage,
	limit = PAGE_LIMIT,
): { run: PollRun; fresh: PublicationRecord[]; next: number | null } {
	const log = ownLog(run);
	const previousOverlap = log.spans.length
		? log.spans[log.spans.length - 1].overlap
		: run.base.overlap;
	const read = readPage(run.nextSince, page, limit, previousOverlap);
	const fresh = foldItems(run.base, log, read.items);
	log.spans.push({ since: read.since, end: read.end, overlap: read.overlap });
	const next = read.full && read.end > read.since ? read.end : null;
	return {
		run: {
			base: run.base,
			nextSince: next ?? read.end,
			pageCount: log.spans.length,
			freshCount: log.fresh.length,
			log,
		},
		fresh,
		next,
	};
}

/** All records of the run not delivered before, ascending id (what addPage returned, in order). */
export function freshRecords(run: PollRun): PublicationRecord[] {
	return run.log.fresh.slice(0, run.freshCount);
}

/**
 * The state after this poll when the first `emitted` fresh records were delivered (default: all).
 * Delivering fewer (budget ran out while fetching manifests) cuts the run just below the first
 * record not delivered, as if the poll had stopped reading there: nothing is skipped.
 */
export function finishPoll(run: PollRun, emitted?: number): CursorState {
	const { base, log } = run;
	if (run.pageCount === 0) return base;
	const count =
		emitted === undefined ? run.freshCount : Math.max(0, Math.min(emitted, run.freshCount));
	let pageCount = run.pageCount;
	let last = log.spans[pageCount - 1];
	// Records read with this id or above are treated as not read (the cut).
	let cut = Number.POSITIVE_INFINITY;
	if (count < run.freshCount) {
		cut = log.fresh[count].id; // first record not delivered: read nothing from here on
		// Its page is the last one whose request started below it (pages cover ascending ranges).
		let index = pageCount - 1;
		while (log.spans[index].since >= cut) index--;
		pageCount = index + 1;
		last = { ...log.spans[index], end: cut - 1 };
	}
	const overlap = last.overlap;
	const end = last.end;
	// The last page boundary this poll followed directly (the since of its last request), if any.
	const followed = pageCount > 1 ? last.since : end;
	const start = Math.max(base.start, Math.min(end, followed) - overlap);
	const cursor = Math.max(base.cursor, end, start);
	// The dedupe set read up to the cut: the base state's plus this run's new keys first read below
	// it (the log is in ascending id order, so those are exactly the keys of the pages kept), in
	// that order; then only the keys above `start` are kept.
	const window = Object.entries(base.seen).filter(([, id]) => id > start);
	let taken = 0;
	for (const entry of log.added) {
		if (taken++ === run.freshCount) break;
		if (entry[1] > start && entry[1] < cut) window.push(entry);
	}
	if (window.length > MAX_SEEN) window.sort((a, b) => b[1] - a[1]).splice(MAX_SEEN);
	const kept: Record<string, number> = {};
	for (const [key, id] of window.sort((a, b) => a[1] - b[1])) kept[key] = id;
	const next: CursorState = {
		v: STATE_VERSION,
		queryKey: base.queryKey,
		start,
		cursor,
		overlap,
		seen: kept,
		rev: base.rev,
	};
	return sameState(next, base) ? base : { ...next, rev: base.rev + 1 };
}

/**
 * The state of a trigger that starts "now": everything in `page` (the answer to
 * `since_id = baselineSince(head)`) is treated as already there, and only later publications,
 * including late commits inside the window, are delivered.
 */
export function baselineState(
	queryKey: string,
	since: number,
	page: ListPage,
	limit = PAGE_LIMIT,
): CursorState {
	const run = addPage(startPoll(initialState(queryKey, since)), page, limit).run;
	const state = finishPoll(run);
	return { ...state, rev: 0 };
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
		a.queryKey !== b.queryKey
	) {
		return false;
	}
	const aKeys = Object.keys(a.seen);
	if (aKeys.length !== Object.keys(b.seen).length) return false;
	return aKeys.every((key) => b.seen[key] === a.seen[key]);
}

/**
 * Search steps for the newest id using `since_id` probes with `limit=1`: an exponential phase
 * finds an empty probe, a binary phase narrows down. `probe(since)` answers the first record above
 * `since`, or null. Requests: about 2 * log2(newest id).
 */
export async function findNewest(
	probe: (since: number) => Promise<PublicationRecord | null>,
): Promise<PublicationRecord | null> {
	let newest = await probe(0);
	if (!newest) return null;
	let lo = newest.id; // a record with this id exists
	let hi: number | undefined; // no record above this id (when last asked)
	let step = Math.max(1, lo);
	while (hi === undefined) {
		const since = lo + step;
		const found = await probe(since);
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
		const found = await probe(mid);
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
