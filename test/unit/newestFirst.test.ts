/**
 * The publication picker's paging, newest first over an ascending `since_id` list: every record
 * exactly once, in descending id order, across densities (dense, sparse, clustered, 100,000 records),
 * with a bounded number of requests per page; search over id, pack, version, style code and date.
 */
import { PAGE_LIMIT, type ListPage, type PublicationRecord } from '../../nodes/ImagePack/shared/cursor';
import {
	MAX_REQUESTS_PER_PAGE,
	PICKER_PAGE_SIZE,
	matcher,
	newestFirstPage,
	pickerLabel,
} from '../../nodes/ImagePack/shared/newestFirst';
import { mulberry32 } from '../harness/polling';

const DAY = 24 * 3600 * 1000;

function record(id: number, index: number): PublicationRecord {
	return {
		id,
		pack_id: `pk_${index % 37}`,
		version: 1 + Math.floor(index / 37),
		style_code: `ST-${1000 + (index % 9)}`,
		source_revision: 1,
		published_at: Date.UTC(2026, 0, 1) + index * DAY,
	};
}

/** The API's list endpoint over a fixed account: records above since_id, ascending, at most 200. */
function api(ids: number[]) {
	const records = ids.map(record);
	const calls: Array<{ since: number; limit: number }> = [];
	const list = async (since: number, limit: number): Promise<ListPage> => {
		calls.push({ since, limit });
		const above = records.findIndex((r) => r.id > since);
		const lo = above < 0 ? records.length : above;
		const items = records.slice(lo, lo + Math.min(limit, PAGE_LIMIT));
		return { items, next_since_id: items.length ? items[items.length - 1].id : since, reread_overlap: 50 };
	};
	return { records, calls, list };
}

/** Reads every page; returns the records in the order shown and the requests of each page. */
async function readAll(list: (since: number, limit: number) => Promise<ListPage>, filter?: string) {
	const shown: PublicationRecord[] = [];
	const requests: number[] = [];
	let token: string | undefined;
	for (let pages = 0; pages < 100_000; pages++) {
		const page = await newestFirstPage(list, { token, filter });
		shown.push(...page.records);
		requests.push(page.requests);
		if (!page.next) return { shown, requests };
		token = page.next;
	}
	throw new Error('paging did not end');
}

function idsOf(count: number, gap: () => number): number[] {
	const ids: number[] = [];
	let id = 0;
	for (let i = 0; i < count; i++) ids.push((id += gap()));
	return ids;
}

describe('newestFirstPage', () => {
	const random = mulberry32(18);
	const cases: Array<[string, number[]]> = [
		['no publications', []],
		['one publication', [7]],
		['dense ids', idsOf(1234, () => 1)],
		['sparse ids (other accounts in between)', idsOf(900, () => 1 + Math.floor(random() * 500))],
		[
			'clusters and long gaps',
			idsOf(1500, () => (random() < 0.02 ? 50_000 + Math.floor(random() * 1e6) : 1)),
		],
		['ids near the top of the id space', idsOf(300, () => 1).map((id) => id + 2 ** 40)],
	];

	it.each(cases)('shows every record once, newest first: %s', async (_name, ids) => {
		const { records, list } = api(ids);
		const { shown, requests } = await readAll(list);
		expect(shown.map((r) => r.id)).toEqual(records.map((r) => r.id).reverse());
		// The first page pays for finding the newest id; every later page stays within the bound.
		for (const count of requests.slice(1)) expect(count).toBeLessThanOrEqual(MAX_REQUESTS_PER_PAGE);
	});

	it('pages of 50; an account with 100,000 publications costs O(log) for the first page, a few requests later', async () => {
		const ids = idsOf(100_000, () => 1 + Math.floor(random() * 3));
		const { calls, list } = api(ids);
		const first = await newestFirstPage(list);
		expect(first.records.map((r) => r.id)).toEqual(ids.slice(-PICKER_PAGE_SIZE).reverse());
		expect(first.requests).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(ids[ids.length - 1] + 1)) + 3);
		calls.length = 0;
		let token = first.next;
		const seen = new Set(first.records.map((r) => r.id));
		for (let page = 0; page < 20; page++) {
			const next = await newestFirstPage(list, { token });
			expect(next.records).toHaveLength(PICKER_PAGE_SIZE);
			for (const r of next.records) {
				expect(seen.has(r.id)).toBe(false);
				seen.add(r.id);
			}
			token = next.next;
		}
		// Once the density is learnt, a page is about one request.
		expect(calls.length).toBeLessThanOrEqual(20 * 2);
		expect(calls.every((call) => call.limit <= PAGE_LIMIT)).toBe(true);
	});

	it('search finds every match, newest first, with bounded requests per page', async () => {
		const ids = idsOf(3000, () => 1 + Math.floor(random() * 4));
		const { records, list } = api(ids);
		for (const filter of ['pk_5 ', 'ST-1003', 'v7', '2026-03', 'pk_12 v3', '#12']) {
			const { shown, requests } = await readAll(list, filter);
			const expected = records.filter(matcher(filter)).map((r) => r.id).reverse();
			expect(expected.length).toBeGreaterThan(0);
			expect(shown.map((r) => r.id)).toEqual(expected);
			for (const count of requests.slice(1)) expect(count).toBeLessThanOrEqual(MAX_REQUESTS_PER_PAGE);
		}
	});

	it('ignores a token it did not make and starts from the newest', async () => {
		const { list } = api([3, 9, 12]);
		const page = await newestFirstPage(list, { token: 'nonsense' });
		expect(page.records.map((r) => r.id)).toEqual([12, 9, 3]);
		expect(page.next).toBeUndefined();
	});
});

describe('pickerLabel and matcher', () => {
	const r: PublicationRecord = {
		id: 4711,
		pack_id: 'pk_mugs',
		version: 3,
		style_code: 'MUG-RED',
		published_at: Date.UTC(2026, 10, 20, 9, 5),
	};

	it('names a record by id, pack, version, style code and date', () => {
		expect(pickerLabel(r)).toBe('#4711 · pk_mugs v3 · MUG-RED · 2026-11-20 09:05 UTC');
		expect(pickerLabel({ id: 1, pack_id: 'pk_x', version: 1 })).toBe('#1 · pk_x v1');
	});

	it('matches every word, case-insensitively, anywhere a person would look', () => {
		for (const hit of ['mug-red', 'PK_MUGS v3', '4711', '2026-11-20', 'red mugs', '', '   '])
			expect(matcher(hit)(r)).toBe(true);
		for (const miss of ['pk_totes', 'v4', '2026-11-21', 'mugs blue']) expect(matcher(miss)(r)).toBe(false);
	});
});
