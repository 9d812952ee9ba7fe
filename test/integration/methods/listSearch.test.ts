/**
 * Get Publication's picker ("From list"), in a real n8n LoadOptionsContext against the emulator. Its
 * values running in Get Publication: publication/get.test.ts.
 */
import type { INodeParameters } from 'n8n-workflow';

import { ImagePack } from '../../../nodes/ImagePack/ImagePack.node';
import { PICKER_PAGE_SIZE } from '../../../nodes/ImagePack/methods/listSearch';
import { type Emulator, startEmulator } from '../../emulator';
import { runListSearch } from '../../harness/n8n';

let emulator: Emulator;

beforeAll(async () => {
	emulator = await startEmulator();
});

afterAll(async () => {
	await emulator.close();
});

beforeEach(async () => {
	await emulator.control.reset();
});

const credentials = () => ({ baseUrl: emulator.baseUrl, apiKey: emulator.apiKey });
const getParameters = (publicationId: INodeParameters[string]): INodeParameters => ({
	resource: 'publication',
	operation: 'get',
	publicationId,
});

async function search(filter?: string, paginationToken?: string) {
	return await runListSearch({
		nodeType: new ImagePack(),
		method: 'searchPublications',
		parameters: getParameters({ __rl: true, mode: 'list', value: '' }),
		credentials: credentials(),
		filter,
		paginationToken,
	});
}

describe('Publication picker (From list)', () => {
	it('lists the newest first, named by id, pack, version, style code and date; only the account’s own', async () => {
		const other = await emulator.control.createAccount({});
		await emulator.control.publish({
			packId: 'pk_mugs',
			styleCode: 'MUG-RED',
			publishedAt: Date.UTC(2026, 10, 1, 8, 30),
		});
		await emulator.control.publish({ accountId: other.accountId, packId: 'pk_foreign' });
		const newest = await emulator.control.publish({
			packId: 'pk_mugs',
			styleCode: 'MUG-BLUE',
			publishedAt: Date.UTC(2026, 10, 2, 9, 45),
		});
		const { results, paginationToken } = await search();
		expect(results.map((r) => r.value)).toEqual([String(newest.id), String(newest.id - 2)]);
		expect(results[0].name).toBe(`#${newest.id} · pk_mugs v2 · MUG-BLUE · 2026-11-02 09:45 UTC`);
		const plain = await emulator.control.publish({ packId: 'pk_plain', styleCode: '' });
		expect((await search()).results[0].name).toMatch(
			new RegExp(`^#${plain.id} · pk_plain v1 · \\d{4}-`),
		);
		expect(paginationToken).toBeUndefined();
	});

	it('searches by style code, pack and version, date, and finds an exact id', async () => {
		await emulator.control.publishBulk({ count: 120 });
		const tote = await emulator.control.publish({
			packId: 'pk_tote',
			styleCode: 'TOTE-GREEN',
			publishedAt: Date.UTC(2026, 5, 7),
		});
		await emulator.control.publishBulk({ count: 120 });
		expect((await search('tote-green')).results.map((r) => r.value)).toEqual([String(tote.id)]);
		expect((await search('PK_TOTE v1')).results.map((r) => r.value)).toEqual([String(tote.id)]);
		expect((await search('pk_tote v2')).results).toEqual([]); // every word must match
		expect((await search('2026-06-07')).results.map((r) => r.value)).toContain(String(tote.id));
		const exact = await search(`#${tote.id}`);
		expect(exact.results[0].value).toBe(String(tote.id));
	});

	it('an account with 100,000 publications: pages of 50, newest first, few requests per page', async () => {
		await emulator.control.publishBulk({ count: 100_000 });
		await emulator.control.clearRequests();
		const first = await search();
		expect(first.results).toHaveLength(PICKER_PAGE_SIZE);
		const ids = first.results.map((r) => Number(r.value));
		expect(ids).toEqual([...ids].sort((a, b) => b - a));
		const firstRequests = (await emulator.control.requests({ route: 'listPublications' })).length;
		expect(firstRequests).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(ids[0] + 1)) + 3);
		await emulator.control.clearRequests();
		const second = await search(undefined, first.paginationToken as string);
		expect(Number(second.results[0].value)).toBeLessThan(ids[ids.length - 1]);
		expect(
			(await emulator.control.requests({ route: 'listPublications' })).length,
		).toBeLessThanOrEqual(3);
	});
});
