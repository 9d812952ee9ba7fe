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
