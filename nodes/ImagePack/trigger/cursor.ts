/**
 * How the trigger reads the publication list, as a pure module (no n8n, no HTTP); the stored state
 * is in state.ts. The API's pulling contract: remember `next_since_id`, start the next round at
 * `next_since_id - reread_overlap`, deduplicate by `(pack_id, version)`. Ids come from one sequence
 * for all accounts: a smaller id may become visible after a bigger one, but only above
 * `newest visible id - reread_overlap` when it commits. One publication may be listed under two ids.
 *
 *   run = startPoll(state)           first request: since_id = run.nextSince
 *   next = addPage(run, page)        repeat while `next` is a number (a full page) and wanted
 *   state' = finishPoll(run, count)  `count` = how many of run.fresh were delivered
 *
 * Pages of one poll follow `next_since_id` directly (a catch-up costs a request per 200 records);
 * the next poll starts below the first id that may still commit late (nextStart), so the whole
 * announced overlap is re-read, and skips by id what it already dealt with (`handled`). Details and
 * limits: docs/polling.md#the-cursor-in-detail.
 */
import {
	DEFAULT_OVERLAP,
	PAGE_LIMIT,
	isSafeId,
	type ListPage,
	type PublicationRecord,
} from '../shared/publications';
import {
	MAX_OVERLAP,
	MEMORY_KEYS,
	TOKEN_LENGTH,
	type CursorState,
	decodeRuns,
	encodeRuns,
	initialState,
	isPlainObject,
	keyToken,
	sameState,
} from './state';

/**
 * Publications of one account that may commit between two list requests of one poll (milliseconds
 * apart) without the cursor missing a late commit among them (docs/polling.md#limits).
 */
export const BURST = 150;

/** The server announced a re-read overlap above MAX_OVERLAP: nothing is delivered, nothing skipped. */
export class OverlapTooLargeError extends Error {
	constructor(readonly overlap: number) {
		super(
			`The Image Pack API announced reread_overlap ${overlap}, more than this trigger honours (${MAX_OVERLAP})`,
		);
	}
}

/** The overlap a list answer announces (or `fallback`); above MAX_OVERLAP it throws. */
function announcedOverlap(value: unknown, fallback: number): number {
	if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) return fallback;
	const overlap = Math.floor(value);
	if (overlap > MAX_OVERLAP) throw new OverlapTooLargeError(overlap);
	return overlap;
}

/** One list request of a poll, as finishPoll needs it. */
interface PageSpan {
	/** since_id of the request. */
	since: number;
	/** Where this page's coverage ends (next_since_id, never below its last item or since). */
	end: number;
	/** The highest id seen in this poll up to and including this page. */
	top: number;
	/** An id of this page that was visible before the previous request was answered (see BURST). */
	witness: number;
}

export interface PollRun {
	readonly base: CursorState;
	/** since_id for the next request of this poll. */
	nextSince: number;
	readonly pages: PageSpan[];
	/** Ids dealt with before this poll. */
	readonly handled: ReadonlySet<number>;
	/** Keys delivered before this poll or read earlier in it. */
	readonly seen: Set<string>;
	/** Ids read in this poll that list a publication delivered before or read earlier in it. */
	readonly repeats: number[];
	/** Records whose key was not delivered before, in read order (ascending id). */
	readonly fresh: PublicationRecord[];
	/** The largest overlap announced in this poll, if any answer announced one. */
	overlap?: number;
}

export function startPoll(state: CursorState): PollRun {
	const seen = new Set<string>();
	for (let at = 0; at < state.delivered.length; at += TOKEN_LENGTH)
		seen.add(state.delivered.slice(at, at + TOKEN_LENGTH));
	return {
		base: state,
		nextSince: state.start,
		pages: [],
		handled: new Set(decodeRuns(state.start, state.handled) ?? []),
		seen,
		repeats: [],
		fresh: [],
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
 * Adds the answer to the request `since_id = run.nextSince, limit` to the run (its records not
 * delivered before join `run.fresh`). Returns the since_id to follow when the page was full (also in
 * `run.nextSince`), else null. Throws OverlapTooLargeError before using an answer that announces an
 * overlap above MAX_OVERLAP.
 */
export function addPage(run: PollRun, page: ListPage, limit = PAGE_LIMIT): number | null {
	const overlap = announcedOverlap(page.reread_overlap, -1);
	if (overlap >= 0) run.overlap = Math.max(run.overlap ?? 0, overlap);
	const since = run.nextSince;
	const items = validItems(since, page);
	for (const item of items) {
		if (item.id <= run.base.start || run.handled.has(item.id)) continue;
		const key = keyToken(item.pack_id, item.version);
		if (run.seen.has(key)) {
			run.repeats.push(item.id);
			continue;
		}
		run.fresh.push(item);
		run.seen.add(key);
	}
	const lastId = items.length ? items[items.length - 1].id : since;
	const end = Math.max(since, lastId, isSafeId(page.next_since_id) ? page.next_since_id : lastId);
	const previousTop = run.pages.length ? run.pages[run.pages.length - 1].top : since;
	const witness = items.length > BURST ? items[items.length - 1 - BURST].id : since;
	run.pages.push({ since, end, top: Math.max(previousTop, lastId), witness });
	const full = Array.isArray(page.items) && page.items.length >= limit;
	run.nextSince = end;
	return full && end > since ? end : null;
}

/**
 * Where the next poll starts after reading the run's pages up to `readTo`: below the first id that
 * may still appear, never below the state's start. An id not in the answer covering it can still
 * commit late unless the newest id known when its page was read was more than `overlap` above it:
 * the highest id of earlier answers, of this page, or of the next page unless that one could have
 * committed in the milliseconds between the two requests (BURST).
 */
function nextStart(run: PollRun, kept: number, readTo: number, overlap: number): number {
	for (let at = 0; at < kept; at++) {
		const page = run.pages[at];
		const end = Math.min(page.end, readTo);
		// The server's newest id when this page was read was at least this: the ids of this page up
		// to `settled` can no longer appear.
		const known = Math.max(run.base.cursor, page.top, run.pages[at + 1]?.witness ?? 0);
		const settled = Math.max(page.since, Math.min(end, known - overlap));
		if (settled < end) return Math.max(settled, run.base.start); // pages ascend: the first one decides
	}
	return Math.max(readTo, run.base.start);
}

/**
 * The state after this poll when the first `emitted` fresh records were delivered (default: all).
 * Delivering fewer (a bound on the poll, or its time ran out) cuts the run just below the first
 * record not delivered, as if the poll had stopped reading there: nothing is skipped.
 */
export function finishPoll(run: PollRun, emitted?: number): CursorState {
	const { base, pages } = run;
	if (pages.length === 0) return base;
	const count = Math.max(0, Math.min(emitted ?? run.fresh.length, run.fresh.length));
	const cut = count < run.fresh.length ? run.fresh[count].id : Number.POSITIVE_INFINITY;
	let kept = pages.length;
	while (kept > 1 && pages[kept - 1].since >= cut) kept--; // pages cover ascending, disjoint ranges
	const readTo = Math.min(pages[kept - 1].end, cut - 1);
	const overlap = run.overlap ?? base.overlap;
	let start = nextStart(run, kept, readTo, overlap);

	const handled = new Set<number>();
	const keep = (id: number) => {
		if (id > start) handled.add(id);
	};
	run.handled.forEach(keep);
	run.fresh.slice(0, count).forEach((record) => keep(record.id));
	run.repeats.filter((id) => id < cut).forEach(keep);
	// Ids dealt with right above the start need no re-reading: move the start over them.
	while (handled.delete(start + 1)) start++;

	const keys = run.fresh.slice(0, count).map((record) => keyToken(record.pack_id, record.version));
	const memory = base.delivered + keys.join('');
	const next: CursorState = {
		...base,
		start,
		cursor: Math.max(base.cursor, pages[pages.length - 1].top, start),
		overlap,
		handled: encodeRuns(start, handled),
		delivered: memory.slice(-MEMORY_KEYS * TOKEN_LENGTH),
	};
	return sameState(next, base) ? base : { ...next, rev: base.rev + 1 };
}

/** Where the "now" baseline read starts for a newest id `head` (throws above MAX_OVERLAP). */
export function baselineSince(head: number, overlap: unknown = DEFAULT_OVERLAP): number {
	return Math.max(0, head - announcedOverlap(overlap, DEFAULT_OVERLAP));
}

/**
 * A trigger that starts "now": its baseline read covers `baselineSince(head)` up to the newest id
 * `head`, page after page (addPage); finishBaseline then treats everything read as delivered, so
 * only later publications are delivered, including late commits inside the overlap.
 */
export function startBaseline(queryKey: string, since: number, head: number): PollRun {
	return startPoll({ ...initialState(queryKey, since), cursor: Math.max(since, head) });
}

export function finishBaseline(run: PollRun): CursorState {
	return { ...finishPoll(run), rev: 0 };
}
