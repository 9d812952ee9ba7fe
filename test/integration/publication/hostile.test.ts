/**
 * The publication reads against scripted servers: Get Many's Return All bounded and ordered whatever
 * the server does; a read keeps n8n's Retry On Fail (Generate's: image/generate-retry.test.ts).
 */
import { ImagePack } from '../../../nodes/ImagePack/ImagePack.node';
import { runNode } from '../../harness/n8n';
import { KEY, twoServers } from '../../harness/two-servers';

const LIST = 'GET /api/v1/image-pack-publications';
const DETAIL = 'GET /api/v1/image-pack-publications/7';

const { api, run, runError } = twoServers();

describe('Get Many with Return All is bounded and ordered', () => {
	const getMany = { resource: 'publication', operation: 'getMany', returnAll: true };
	const record = (id: number) => ({ id, pack_id: `pk_${id}`, version: 1 });

	it('a server that ignores since_id is an error naming the fault, after one page', async () => {
		api.script(LIST, (_request, reply) =>
			reply.send({ items: [record(1), record(2)], next_since_id: 2 }),
		);
		const error = await runError(getMany);
		expect(error.message).toMatch(/returned a record with id 1 for since_id=2/);
		expect(api.seen).toHaveLength(2);
	});

	it('a server that keeps sending full pages stops at the bound', async () => {
		let next = 0;
		api.script(LIST, (_request, reply) => {
			const items = Array.from({ length: 200 }, (_unused, index) => record(next + index + 1));
			next += 200;
			return reply.send({ items, next_since_id: next });
		});
		const error = await runError(getMany);
		expect(error.message).toMatch(/Return All stops at 100000 publications/);
		expect(error.description).toMatch(/Since ID/);
		expect(api.seen).toHaveLength(500);
	}, 60_000);

	it('short pages that creep forward stop at the page bound', async () => {
		let cursor = 0;
		api.script(LIST, (_request, reply) => {
			cursor += 1;
			return reply.send({ items: [record(cursor)], next_since_id: cursor });
		});
		const error = await runError(getMany);
		expect(error.message).toMatch(/or 1000 pages/);
		expect(api.seen).toHaveLength(1000);
	}, 60_000);

	it('records come out by ascending id, each once, whatever the server’s order', async () => {
		api.script(
			LIST,
			(_request, reply) =>
				reply.send({ items: [record(5), record(3), record(5), record(4)], next_since_id: 5 }),
			(_request, reply) => reply.send({ items: [record(7), record(6)], next_since_id: 7 }),
			(_request, reply) => reply.send({ items: [], next_since_id: 7 }),
		);
		const output = await run(getMany);
		expect(output.map((item) => item.json.id)).toEqual([3, 4, 5, 6, 7]);
	});
});

describe('Retry On Fail', () => {
	it('the read operations keep it (a read can be repeated)', async () => {
		api.script(DETAIL, (_request, reply) => reply.send({ id: 7 }));
		const [[item]] = await runNode({
			nodeType: new ImagePack(),
			parameters: { resource: 'publication', operation: 'get', publicationId: '7' },
			credentials: { baseUrl: api.url, apiKey: KEY },
			retryOnFail: true,
		});
		expect(item.json.id).toBe(7);
	});
});
