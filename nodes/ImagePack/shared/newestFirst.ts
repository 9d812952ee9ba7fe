/**
 * Publications newest first, for the publication picker — a pure module: no n8n, no HTTP.
 *
 * The API lists only ascending ids after a `since_id` (at most 200 per request), and an account's ids
 * are sparse (one global sequence for all accounts). A page newest first is read as a window below an
 * upper bound: `since_id = before - span` returns the records in (before - span, before) when they fit
 * in one response. `span` adapts to how dense the account's ids are, so a page costs one or two requests
 * whatever the account's size; the first page finds the newest id with `findNewest` (O(log max id)).
 *
 * The paging token carries `before` and `span` ("before:span"), so "load more" goes on where the
 * previous page ended without reading anything again.
 */
import { PAGE_LIMIT, type ListPage, type PublicationRecord, findNewest } from './cursor';

/** Records one picker page shows when nothing is searched. */
export const PICKER_PAGE_SIZE = 50;
/** Requests one picker page may spend (a search reads up to this many × 200 records per page). */
export const MAX_REQUESTS_PER_PAGE = 8;
/** Records a window aims at: half a response, so a window rarely overflows. */
const TARGET_PER_WINDOW = PAGE_LIMIT / 2;

export type ListFn = (since: number, limit: number) => Promise<ListPage>;

export interface NewestFirstPage {
	/** Newest first. */
	records: PublicationRecord[];
	/** Token for the next (older) page; undefined when the oldest record was reached. */
	next?: string;
	/** Requests this page spent. */
	requests: number;
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

/** Lower-case words a record can be found by: id, pack, version, style code, date. */
export function searchText(record: PublicationRecord): string {
	return [
		`#${record.id}`,
		record.pack_id,
		`v${record.version}`,
		typeof record.style_code === 'string' ? record.style_code : '',
		publishedAt(record),
	]
		.join(' ')
		.toLowerCase();
}

/** `YYYY-MM-DD HH:MM UTC`, or '' when the record has no valid time. */
export function publishedAt(record: PublicationRecord): string {
	const ms = record.published_at;
	if (typeof ms !== 'number' || !Number.isFinite(ms)) return '';
	const iso = new Date(ms).toISOString();
	return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

/** How the picker names a record: everything a person may recognise it by. */
export function pickerLabel(record: PublicationRecord): string {
	const parts = [`#${record.id}`, `${record.pack_id} v${record.version}`];
	if (typeof record.style_code === 'string' && record.style_code) parts.push(record.style_code);
	const date = publishedAt(record);
	if (date) parts.push(date);
	return parts.join(' · ');
}

/** A filter matches when every word of it occurs in the record's search text (case-insensitive). */
export function matcher(filter: string | undefined): (record: PublicationRecord) => boolean {
	const words = (filter ?? '').toLowerCase().split(/\s+/).filter(Boolean);
	if (!words.length) return () => true;
	return (record) => {
		const text = searchText(record);
		return words.every((word) => text.includes(word));
	};
}

/**
 * One page of the picker, newest first: the first page (no token) starts at the newest publication,
 * later pages continue below the previous one. With a filter, only matching records are returned and
 * the page ends after MAX_REQUESTS_PER_PAGE requests even if it holds fewer matches (the token goes on
 * from there), so a search over 100,000 publications never blocks the editor.
 */
export async function newestFirstPage(
	list: ListFn,
	options: { token?: unknown; filter?: string; pageSize?: number } = {},
): Promise<NewestFirstPage> {
	const pageSize = options.pageSize ?? PICKER_PAGE_SIZE;
	const matches = matcher(options.filter);
	let requests = 0;
	const counted: ListFn = async (since, limit) => {
		requests++;
		return await list(since, limit);
	};

	let position = readToken(options.token);
	if (!position) {
		const newest = await findNewest(async (since) => (await counted(since, 1)).items[0] ?? null);
		if (!newest) return { records: [], requests };
		position = { before: newest.id + 1, span: TARGET_PER_WINDOW };
	}

	const records: PublicationRecord[] = [];
	let { before, span } = position;
	const budget = requests + MAX_REQUESTS_PER_PAGE; // finding the newest id is not counted
	while (before > 1 && records.length < pageSize && requests < budget) {
		const since = Math.max(0, before - 1 - span);
		const page = await counted(since, PAGE_LIMIT);
		const items = (Array.isArray(page.items) ? page.items : [])
			.filter((item) => Number.isSafeInteger(item?.id) && item.id > since && item.id < before)
			.sort((a, b) => b.id - a.id);
		const raw = Array.isArray(page.items) ? page.items : [];
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
	return { records, next: before > 1 ? `${before}:${span}` : undefined, requests };
}
