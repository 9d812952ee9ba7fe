/**
 * Publication → Get Many: one item per record, ascending id, Return All.
 * The node runs in a real n8n execution context against the emulator over real HTTP.
 */
import { useActionNode } from '../../harness/action-node';

const { emulator, run } = useActionNode();

describe('Get Many Publications', () => {
	it('Get Many returns one item per record in ascending id; Return All follows next_since_id', async () => {
		const other = await emulator.control.createAccount({});
		await emulator.control.publishBulk({ count: 450 });
		await emulator.control.publishBulk({ accountId: other.accountId, count: 10 });
		const limited = await run({ resource: 'publication', operation: 'getMany', limit: 7 });
		expect(limited).toHaveLength(7);
		await emulator.control.clearRequests();
		const all = await run({ resource: 'publication', operation: 'getMany', returnAll: true });
		expect(all).toHaveLength(450);
		const ids = all.map((item) => item.json.id as number);
		expect([...ids].sort((a, b) => a - b)).toEqual(ids);
		expect(new Set(ids).size).toBe(450);
		// 3 pages of 200 and one empty page that ends the walk.
		expect(await emulator.control.requests({ route: 'listPublications' })).toHaveLength(4);
		const since = await run({
			resource: 'publication',
			operation: 'getMany',
			sinceId: ids[444],
			returnAll: true,
		});
		expect(since.map((item) => item.json.id)).toEqual(ids.slice(445));
	});
});

describe('Get Many: one item per publication (the API’s dedupe_by key)', () => {
	it('a publication listed under two ids comes out once, under the id it was first listed with', async () => {
		const first = await emulator.control.publish({ packId: 'pk_twice' });
		await emulator.control.publishBulk({ count: 250 });
		const again = await emulator.control.repeatPublication(first.id); // same (pack_id, version)
		const second = await emulator.control.publish({ packId: 'pk_twice' }); // version 2: another one
		const all = await run({ resource: 'publication', operation: 'getMany', returnAll: true });
		const ids = all.map((item) => item.json.id as number);
		expect(ids).not.toContain(again.id);
		expect(ids).toContain(first.id);
		expect(ids).toContain(second.id);
		expect(ids).toHaveLength(252);
		const keys = all.map((item) => `${item.json.pack_id as string}@${item.json.version as number}`);
		expect(new Set(keys).size).toBe(252);
	});

	it('within one page too (one item fewer than Limit); a part that lacks the first listing keeps the later one', async () => {
		const first = await emulator.control.publish();
		await emulator.control.publishBulk({ count: 3 });
		const again = await emulator.control.repeatPublication(first.id);
		const next = await emulator.control.publish();
		const page = await run({ resource: 'publication', operation: 'getMany', limit: 6 });
		expect(page.map((item) => item.json.id)).toEqual([1, 2, 3, 4, next.id]);
		// A part that starts above the first listing cannot know it: the repeat comes out there,
		// which is why parts must skip what the workflow already has (see the next test).
		const part = await run({ resource: 'publication', operation: 'getMany', sinceId: first.id });
		expect(part.map((item) => item.json.id)).toEqual([2, 3, 4, again.id, next.id]);
	});

	it('reading in parts as the help text says misses no late commit and repeats nothing', async () => {
		await emulator.control.publishBulk({ count: 120 });
		const late = await emulator.control.publish({ commit: false });
		await emulator.control.publishBulk({ count: 10 });
		const got = new Map<string, number>();
		const readPart = async (sinceId: number) => {
			const items = await run({
				resource: 'publication',
				operation: 'getMany',
				sinceId,
				limit: 200,
			});
			for (const item of items) {
				const key = `${item.json.pack_id as string}@${item.json.version as number}`;
				if (!got.has(key)) got.set(key, item.json.id as number); // skip what we already have
			}
			return Math.max(sinceId, ...items.map((item) => item.json.id as number));
		};
		const last = await readPart(0);
		expect([...got.values()]).not.toContain(late.id);
		await emulator.control.commitPublication(late.id); // visible now, below the last id read
		await readPart(Math.max(0, last - 50)); // 50: the API's reread_overlap
		expect([...got.values()].sort((a, b) => a - b)).toEqual(
			Array.from({ length: 131 }, (_, i) => i + 1),
		);
	});
});
