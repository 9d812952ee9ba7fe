/**
 * What the trigger, Get Many and the publication picker share about the publication list, as a pure
 * module (no n8n, no HTTP): the record, the page size, the documented overlap, the dedupe key, and
 * reading newest first over a list that only goes up from a `since_id`.
 */

/** Page size asked for: the API's maximum. */
export const PAGE_LIMIT = 200;
/** The API's documented reread_overlap, used until an answer announces one. */
export const DEFAULT_OVERLAP = 50;

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

/** A publication id: a whole number the API can hand out (0 up to 2^53 - 1). */
export function isSafeId(value: unknown): value is number {
	return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/**
 * The dedupe key of a publication, `(pack_id, version)` as the API's `dedupe_by` says: the API may
 * list one publication under more than one id. (The trigger stores a hash of this text.)
 */
export function dedupeKey(packId: string, version: number): string {
	return `${packId}@${version}`;
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

/*
 * Newest first. The API lists only ascending ids after a `since_id` (at most PAGE_LIMIT per request),
 * and an account's ids are sparse (one global sequence for all accounts). A page newest first is read
 * as a window below an upper bound: `since_id = before - span` returns the records in
 * (before - span, before) when they fit in one response. `span` adapts to how dense the account's ids
 * are, so a page costs one or two requests whatever the account's size; the first page finds the
 * newest id with `findNewest`. The paging token carries `before` and `span` ("before:span"), so the
 * next page goes on where the previous one ended without reading anything again.
 */

/** Requests one page may spend (a search reads up to this many × PAGE_LIMIT records per page). */
export const MAX_REQUESTS_PER_PAGE = 8;
/** Records a window aims at: half a response, so a window rarely overflows. */
const TARGET_PER_WINDOW = PAGE_LIMIT / 2;

export type ListFn = (since: number, limit: number) => Promise<ListPage>;

export interface NewestFirstPage {
	/** Newest first. */
	records: PublicationRecord[];
	/** Token for the next (older) page; undefined when the oldest record was reached. */
	next?: string;
}

interface Position {
	/** Exclusive upper bound: the page shows ids below it. */
	before: number;
	/** Id span expected to hold about TARGET_PER_WINDOW records. */
	span: number;
}

function readToken(token: unknown): Position | undefined {
	const match = /^(\d+):(\d+)$/.exec(String(token ?? ''));
	if (!match) return undefined;
	const before = Number(match[1]);
	const span = Number(match[2]);
	if (!Number.isSafeInteger(before) || !Number.isSafeInteger(span) || span < 1) return undefined;
	return { before, span };
}

/** The span that would have held TARGET_PER_WINDOW records at the density just seen. */
function adaptSpan(span: number, found: number): number {
	const scaled = found > 0 ? Math.round((span * TARGET_PER_WINDOW) / found) : span * 8;
	return Math.max(1, Math.min(scaled, span * 8, Number.MAX_SAFE_INTEGER));
}

/**
 * One page of `pageSize` records, newest first: the first page (no token) starts at the newest
 * publication, later pages continue below the previous one. Only records that `matches` are
 * returned, and the page ends after MAX_REQUESTS_PER_PAGE requests even if it holds fewer (the token
 * goes on from there), so a search over 100,000 publications never blocks the editor.
 */
export async function newestFirstPage(
	list: ListFn,
	options: { pageSize: number; token?: unknown; matches?: (record: PublicationRecord) => boolean },
): Promise<NewestFirstPage> {
	const { pageSize, matches = () => true } = options;
	let position = readToken(options.token);
	if (!position) {
		const newest = await findNewest(async (since) => (await list(since, 1)).items[0] ?? null);
		if (!newest) return { records: [] };
		position = { before: newest.id + 1, span: TARGET_PER_WINDOW };
	}

	const records: PublicationRecord[] = [];
	let { before, span } = position;
	let requests = 0; // finding the newest id is not counted
	while (before > 1 && records.length < pageSize && requests++ < MAX_REQUESTS_PER_PAGE) {
		const since = Math.max(0, before - 1 - span);
		const page = await list(since, PAGE_LIMIT);
		const raw = Array.isArray(page.items) ? page.items : [];
		const items = raw
			.filter((item) => Number.isSafeInteger(item?.id) && item.id > since && item.id < before)
			.sort((a, b) => b.id - a.id);
		const rawTop = raw.reduce((top, item) => Math.max(top, Number(item?.id) || 0), since);
		if (raw.length >= PAGE_LIMIT && rawTop < before - 1 && span > 1) {
			// More records in the window than one response holds, and the newest of them are missing:
			// narrow the window and read again.
			span = Math.max(1, Math.floor(span / 4));
			continue;
		}
		// Every record in (since, before) is known now, newest first.
		let taken = 0;
		for (const item of items) {
			if (records.length >= pageSize) break;
			taken++;
			if (matches(item)) records.push(item);
		}
		span = adaptSpan(span, items.length);
		// Continue below the last record taken, or below the whole window when all of it was taken.
		before = taken < items.length ? items[taken - 1].id : since + 1;
	}
	return { records, next: before > 1 ? `${before}:${span}` : undefined };
}
