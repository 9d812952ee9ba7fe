/** The newest-publication search (Fetch Test Event, the first "now" activation, the picker). */
import {
	MAX_SEARCH_PROBES,
	NewestSearchError,
	findNewest,
	type PublicationRecord,
} from '../../nodes/ImagePack/shared/cursor';
import { mulberry32 } from '../harness/polling';
import { rec } from './cursorModel';

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
