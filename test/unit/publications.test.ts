/**
 * What both nodes share about publications: the dedupe key, the newest-publication search (Fetch
 * Test Event, the first "now" activation, the picker) and paging newest first (the picker): every
 * record exactly once, in descending id order, across densities, with a bounded number of requests
 * per page.
 */
import {
	MAX_REQUESTS_PER_PAGE,
	MAX_SEARCH_PROBES,
	NewestSearchError,
	PAGE_LIMIT,
	dedupeKey,
	findNewest,
	newestFirstPage,
	type ListPage,
	type PublicationRecord,
} from '../../nodes/ImagePack/shared/publications';
import { mulberry32 } from '../harness/polling';

const rec = (id: number): PublicationRecord => ({ id, pack_id: `pk_${id}`, version: 1 });

describe('dedupeKey', () => {
	it('is (pack_id, version): one publication under two ids has one key, another version another', () => {
		expect(dedupeKey('pk_1', 2)).toBe(dedupeKey('pk_1', 2));
		expect(dedupeKey('pk_1', 2)).not.toBe(dedupeKey('pk_1', 3));
		expect(dedupeKey('pk_12', 3)).not.toBe(dedupeKey('pk_1', 23));
		expect(dedupeKey('pk@1', 2)).not.toBe(dedupeKey('pk', 12));
	});
});

describe('findNewest', () => {
	it('finds the newest with O(log max id) probes', async () => {
		for (const ids of [
			[1],
			[5],
			[1, 2, 3],
			[7, 100000],
			Array.from({ length: 1000 }, (_, i) => i * 97 + 3),
		]) {
			let probes = 0;
			const newest = await findNewest(async (since) => {
				probes++;
				const id = ids.find((x) => x > since);
				return id === undefined ? null : rec(id);
			});
			const max = ids[ids.length - 1];
			expect(newest?.id).toBe(max);
			expect(probes).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(max + 1)) + 3);
		}
	});

	it('returns null for an account without publications', async () => {
		expect(await findNewest(async () => null)).toBeNull();
	});

	it('never loops: a server that ignores since_id is named as at fault, within the probe bound', async () => {
		const servers: Array<[string, (since: number) => PublicationRecord | null, RegExp]> = [
			[
				'always the same record',
				() => rec(5),
				/since_id=10 with publication id 5.*ignores since_id/,
			],
			['always since + 1', (since) => rec(since + 1), /ignores since_id/],
			['an id beyond 2^53', (since) => rec(since * 4 + 1), /ignores since_id/],
			['a fractional id', (since) => rec(since + 0.5), /not a whole number/],
			[
				'a record at since',
				(since) => (since < 100 ? rec(since + 100) : rec(since)),
				/ignores since_id/,
			],
		];
		for (const [name, answer, message] of servers) {
			let probes = 0;
			const search = findNewest(async (since) => {
				probes++;
				return answer(since);
			});
			await expect(search).rejects.toThrow(NewestSearchError);
			await expect(search).rejects.toThrow(message);
			expect([name, probes <= MAX_SEARCH_PROBES]).toEqual([name, true]);
		}
	});

	it('a server whose answers contradict each other stops at the probe bound', async () => {
		let probes = 0;
		// Claims records exist just above any since below 2^40, and none above: consistent enough
		// to pass every check, but a newest record that keeps moving up by one.
		let head = 1000;
		const search = findNewest(async (since) => {
			probes++;
			head++;
			return since < head ? rec(since + 1) : null;
		});
		const result = await search.catch((error: Error) => error);
		expect(probes).toBeLessThanOrEqual(MAX_SEARCH_PROBES);
		if (result instanceof Error) expect(result.message).toMatch(/server/);
	});

	it('stops when the poll time is up, with a clear message', async () => {
		let probes = 0;
		const search = findNewest(
			async (since) => {
				probes++;
				return since < 1_000_000 ? rec(since + 1) : null;
			},
			() => probes >= 3,
		);
		await expect(search).rejects.toThrow(/ran out of the poll's time after 3 requests/);
		expect(probes).toBe(3);
	});

	it('ids up to 2^53 - 1 are found', async () => {
		const max = Number.MAX_SAFE_INTEGER;
		const newest = await findNewest(async (since) => (since < max ? rec(max) : null));
		expect(newest?.id).toBe(max);
	});

	it('randomized: always the newest, request count logarithmic', async () => {
		const random = mulberry32(7);
		for (let round = 0; round < 200; round++) {
			const count = 1 + Math.floor(random() * 50);
			const span = 1 + Math.floor(random() * 1_000_000);
			const ids = [
				...new Set(Array.from({ length: count }, () => 1 + Math.floor(random() * span))),
			].sort((a, b) => a - b);
			let probes = 0;
			const newest = await findNewest(async (since) => {
				probes++;
				const id = ids.find((x) => x > since);
				return id === undefined ? null : rec(id);
			});
			expect(newest?.id).toBe(ids[ids.length - 1]);
			expect(probes).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(ids[ids.length - 1] + 1)) + 3);
		}
	});
});

/** The picker's page size. */
const PAGE_SIZE = 50;
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
		return {
			items,
			next_since_id: items.length ? items[items.length - 1].id : since,
			reread_overlap: 50,
		};
	};
	return { records, calls, list };
}

/** Reads every page; returns the records in the order shown and the requests of each page. */
async function readAll(
	{ list, calls }: ReturnType<typeof api>,
	matches?: (record: PublicationRecord) => boolean,
) {
	const shown: PublicationRecord[] = [];
	const requests: number[] = [];
	let token: string | undefined;
	for (let pages = 0; pages < 100_000; pages++) {
		const before = calls.length;
		const page = await newestFirstPage(list, { pageSize: PAGE_SIZE, token, matches });
		shown.push(...page.records);
		requests.push(calls.length - before);
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
		const server = api(ids);
		const { shown, requests } = await readAll(server);
		const { records } = server;
		expect(shown.map((r) => r.id)).toEqual(records.map((r) => r.id).reverse());
		// The first page pays for finding the newest id; every later page stays within the bound.
		for (const count of requests.slice(1)) expect(count).toBeLessThanOrEqual(MAX_REQUESTS_PER_PAGE);
	});

	it('an account with 100,000 publications costs O(log) for the first page, a few requests later', async () => {
		const ids = idsOf(100_000, () => 1 + Math.floor(random() * 3));
		const { calls, list } = api(ids);
		const first = await newestFirstPage(list, { pageSize: PAGE_SIZE });
		expect(first.records.map((r) => r.id)).toEqual(ids.slice(-PAGE_SIZE).reverse());
		expect(calls.length).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(ids[ids.length - 1] + 1)) + 3);
		calls.length = 0;
		let token = first.next;
		const seen = new Set(first.records.map((r) => r.id));
		for (let page = 0; page < 20; page++) {
			const next = await newestFirstPage(list, { pageSize: PAGE_SIZE, token });
			expect(next.records).toHaveLength(PAGE_SIZE);
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
		const server = api(ids);
		const { records } = server;
		const filters: Array<(record: PublicationRecord) => boolean> = [
			(r) => r.pack_id === 'pk_5',
			(r) => r.style_code === 'ST-1003',
			(r) => r.version === 7,
			(r) => String(r.id).includes('12'),
		];
		for (const matches of filters) {
			const { shown, requests } = await readAll(server, matches);
			const expected = records
				.filter(matches)
				.map((r) => r.id)
				.reverse();
			expect(expected.length).toBeGreaterThan(0);
			expect(shown.map((r) => r.id)).toEqual(expected);
			for (const count of requests.slice(1))
				expect(count).toBeLessThanOrEqual(MAX_REQUESTS_PER_PAGE);
		}
	});

	it('ignores a token it did not make and starts from the newest', async () => {
		const { list } = api([3, 9, 12]);
		const page = await newestFirstPage(list, { pageSize: PAGE_SIZE, token: 'nonsense' });
		expect(page.records.map((r) => r.id)).toEqual([12, 9, 3]);
		expect(page.next).toBeUndefined();
	});
});
