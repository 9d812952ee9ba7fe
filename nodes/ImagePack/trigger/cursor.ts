/**
 * How the trigger reads the publication list, as a pure module (no n8n, no HTTP); the stored state
 * is in state.ts. The API's pulling contract: remember `next_since_id`, start the next round at
 * `next_since_id - reread_overlap`, deduplicate by `(pack_id, version)`. Ids come from one sequence
 * for all accounts: a smaller id may become visible after a bigger one, but only above
 * `newest visible id - reread_overlap` when it commits. One publication may be listed under two ids.
 *
 *   run = startPoll(state)           first request: since_id = run.nextSince
 *   next = addPage(run, page)        repeat while `next` is a number (a full page) and wanted
 *   count = deliverable(run, max)    how many of run.fresh may be delivered (at most `max`)
 *   state' = finishPoll(run, count)  `count` = how many of run.fresh were delivered
 *
 * Every conclusion rests on one answer at a time: what an answer lists was visible when it was
 * read, and an id it does not list can still appear only if it lies within the overlap of the
 * newest id known then. Nothing is assumed about what commits between two requests. So the next
 * page of a poll starts at the first id of this page that may still appear (a "gap" near its end;
 * a catch-up of the account's own consecutive ids has none and costs a request per 200 records),
 * and the next poll starts below the first id no answer has settled, skipping by id what it already
 * dealt with (`handled`). Details and limits: docs/polling.md#the-cursor-in-detail.
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
 * The most records a page may read again from the end of the previous page of the same poll (the
 * ids there that may still appear): at most half a page, so every page makes progress. Above it (a
 * large overlap with other accounts' ids in between), the next page follows `next_since_id` and the
 * next poll reads the rest of that overlap again.
 */
export const MAX_REREAD = PAGE_LIMIT / 2;

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
	/**
	 * Ids up to here can no longer appear after this answer: at most `overlap` below the newest id
	 * known when it was read, or listed in it without a gap up to here.
	 */
	solid: number;
	/** The overlap `solid` was computed with. */
	overlap: number;
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
	/** Records whose key was not delivered before, ascending id. */
	readonly fresh: PublicationRecord[];
	/** Ids read in this poll (a page may read the end of the previous one again). */
	readonly read: Set<number>;
	/**
	 * The lowest id that turned up below a fresh record read earlier in this poll (it committed
	 * between two requests): only the fresh records below it may be delivered by this poll.
	 */
	late?: number;
	/** The highest id of a record any answer of this poll held. */
	newest?: number;
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
		read: new Set(),
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

/** Index at which `record` keeps `fresh` ascending by id. */
function insertionPoint(fresh: PublicationRecord[], id: number): number {
	let lo = 0;
	let hi = fresh.length;
	while (lo < hi) {
		const mid = (lo + hi) >> 1;
		if (fresh[mid].id < id) lo = mid + 1;
		else hi = mid;
	}
	return lo;
}

/**
 * Adds the answer to the request `since_id = run.nextSince, limit` to the run (its records not
 * delivered before join `run.fresh`). Returns the since_id of the next request when the page was
 * full (also in `run.nextSince`), else null: the first id of this page that may still appear, when
 * re-reading from there costs at most MAX_REREAD records, else where the page ends. Throws
 * OverlapTooLargeError before using an answer that announces an overlap above MAX_OVERLAP.
 */
export function addPage(run: PollRun, page: ListPage, limit = PAGE_LIMIT): number | null {
	const announced = announcedOverlap(page.reread_overlap, -1);
	if (announced >= 0) run.overlap = Math.max(run.overlap ?? 0, announced);
	const overlap = run.overlap ?? run.base.overlap;
	const since = run.nextSince;
	const items = validItems(since, page);
	for (const item of items) {
		run.newest = Math.max(run.newest ?? 0, item.id);
		if (item.id <= run.base.start || run.handled.has(item.id) || run.read.has(item.id)) continue;
		run.read.add(item.id);
		const key = keyToken(item.pack_id, item.version);
		if (run.seen.has(key)) {
			run.repeats.push(item.id);
			continue;
		}
		const at = insertionPoint(run.fresh, item.id);
		if (at < run.fresh.length) run.late = Math.min(run.late ?? item.id, item.id);
		run.fresh.splice(at, 0, item);
		run.seen.add(key);
	}
	const lastId = items.length ? items[items.length - 1].id : since;
	const end = Math.max(since, lastId, isSafeId(page.next_since_id) ? page.next_since_id : lastId);
	const previousTop = run.pages.length ? run.pages[run.pages.length - 1].top : since;
	const top = Math.max(previousTop, lastId);
	// Settled by this answer: up to `overlap` below the newest id known when it was read, then every
	// id it lists without a gap (a listed id is visible; an id in a gap may be one still pending).
	let solid = Math.max(since, Math.min(end, Math.max(run.base.cursor, top) - overlap));
	let at = items.findIndex((item) => item.id > solid);
	while (at >= 0 && at < items.length && solid < end && items[at].id === solid + 1) {
		solid++;
		at++;
	}
	run.pages.push({ since, end, top, solid, overlap });
	const full = Array.isArray(page.items) && page.items.length >= limit;
	const reread = at < 0 ? 0 : items.length - at;
	const next = solid > since && solid < end && reread <= MAX_REREAD ? solid : end;
	run.nextSince = next;
	return full && next > since ? next : null;
}

/** How many of `run.fresh` this poll may deliver: at most `max`, and only those below a late one. */
export function deliverable(run: PollRun, max = Number.POSITIVE_INFINITY): number {
	const late = run.late;
	const below = late === undefined ? run.fresh.length : insertionPoint(run.fresh, late);
	return Math.max(0, Math.min(below, max));
}

/**
 * Where the next poll starts after reading the run's pages up to `readTo`: below the first id that
 * may still appear, never below the state's start. A page is done when the next page (kept) read
 * again everything of it above its `solid` id; otherwise its ids up to `overlap` below the newest
 * id known when it was read are settled, and the next poll starts there (then moves over what it
 * dealt with).
 */
function nextStart(run: PollRun, kept: number, readTo: number, overlap: number): number {
	for (let at = 0; at < kept; at++) {
		const page = run.pages[at];
		const following = at + 1 < kept ? run.pages[at + 1] : undefined;
		if (following && following.since <= page.solid && page.overlap >= overlap) continue;
		const end = Math.min(page.end, readTo);
		const known = Math.max(run.base.cursor, page.top);
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
	const count = deliverable(run, emitted ?? run.fresh.length);
	const cut = count < run.fresh.length ? run.fresh[count].id : Number.POSITIVE_INFINITY;
	let kept = pages.length;
	while (kept > 1 && pages[kept - 1].since >= cut) kept--; // pages start ascending
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
	// The account's evidence: the newest publication delivered, else what the state had, else any.
	const witness = count > 0 ? run.fresh[count - 1].id : (base.witness ?? run.newest);
	const next: CursorState = {
		...base,
		start,
		cursor: Math.max(base.cursor, pages[pages.length - 1].top, start),
		overlap,
		handled: encodeRuns(start, handled),
		delivered: memory.slice(-MEMORY_KEYS * TOKEN_LENGTH),
		...(witness === undefined ? {} : { witness }),
	};
	if (witness !== undefined) delete next.emptyAt; // the witness answers for the account now
	return sameState(next, base) ? base : { ...next, rev: base.rev + 1 };
}

/** Where the "now" baseline read starts for a newest id `head` (throws above MAX_OVERLAP). */
export function baselineSince(head: number, overlap: unknown = DEFAULT_OVERLAP): number {
	return Math.max(0, head - announcedOverlap(overlap, DEFAULT_OVERLAP));
}

/**
 * A trigger that starts "now": its baseline read covers `baselineSince(head)` up to the newest id
 * `head`, page after page (addPage), until `baselineRead` says it is complete; finishBaseline then
 * treats everything read as delivered, so only later publications are delivered, including late
 * commits inside the overlap. A baseline that stopped short must not be finished: the ids it did not
 * read were visible before "now" or may commit after it, and no later read can tell which.
 */
export function startBaseline(
	queryKey: string,
	since: number,
	head: number,
	fp?: string,
	rev = 0,
): PollRun {
	return startPoll({ ...initialState(queryKey, since, fp, rev), cursor: Math.max(since, head) });
}

/** Whether the baseline's pages reached its newest id `head` (or the end of the list). */
export function baselineRead(run: PollRun, head: number, next: number | null): boolean {
	const last = run.pages[run.pages.length - 1];
	return last !== undefined && (next === null || last.end >= head);
}

export function finishBaseline(run: PollRun): CursorState {
	return { ...finishPoll(run), rev: run.base.rev };
}
